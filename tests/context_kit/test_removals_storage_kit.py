"""The second round-18 held-out example kit (examples/removals_storage_kit, kit
``removals_storage``, written blind to the pipeline and scored only after the round-18 freeze): it
loads against its own layout (DITA XML topics as help pages and crew procedures, one Semantic
Kernel C# function per tool, SOAP 1.1 faults), every template holds, the set it generates is
labelled, verified and deterministic, and the freeze record is well formed. Its figures are in
docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "removals_storage_kit" / "kit.yaml"
PLUGINS = "src/Kestrel.Assistant/Plugins/Halyard"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "removals_storage" and kit.written and "blind" in kit.written
    assert r.ws.system_prompt_path == "src/Kestrel.Assistant/Prompts/system-prompt.txt"
    assert len(r.kb_facts) == 16 and len(r.facts) == 19 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    assert all(f.path.endswith(".dita") for f in r.kb_facts)
    # a DITA prolog gives the change date and author; [KernelFunction("...")] names the tool
    entry = r.ws.kb_entry("content/en-GB/help/surveys-and-quotes/quote-validity.dita")
    assert (entry.title, entry.modified, entry.author) == (
        "How long your quote is valid",
        "2026-10-06",
        "Customer Services Content",
    )
    assert r.ws.tool_names() == [
        "accept_quote",
        "book_storage_access",
        "book_survey",
        "cancel_move",
    ]
    assert r.ws.tool_prompt_path("book_survey") == f"{PLUGINS}/BookSurvey.cs"
    assert r.ws.component_type("content/en-GB/crew/pre-move-confirmation-call.dita") == "skill"
    assert not any(p.endswith((".ditamap", ".csproj", ".json")) for p in r.ws.files)


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

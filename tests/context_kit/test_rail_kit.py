"""The second round-14 held-out example kit (examples/rail_kit, kit ``northvale_rail``, written
blind to the pipeline and scored only after the round-14 freeze): it loads against its own layout
(Hugo pages with TOML front matter between ``+++`` lines, GitHub-wiki procedures, one Python module
of a LangChain ``@tool`` per tool, errors as pydantic ValidationError text), every template holds,
the set it generates is labelled, verified and deterministic, and the freeze record is well formed.
Its figures are in docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "rail_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "northvale_rail" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "bot/system_prompt.md"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 15 and len(r.facts) == 18 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    # one Python module per tool, declared by a glob that leaves the package's __init__.py out
    path = r.ws.tool_prompt_path("book_assistance")
    assert path == "bot/tools/book_assistance.py" and r.ws.component_type(path) == "tool"
    assert not r.ws.exists("bot/tools/__init__.py")
    assert not any(p.endswith("/_index.md") for p in (e.path for e in r.ws.kb_entries()))


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

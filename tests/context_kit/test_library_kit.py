"""The first round-14 held-out example kit (examples/library_kit, kit ``fernhill_libraries``,
written blind to the pipeline and scored only after the round-14 freeze): it loads against its own
layout (help-desk articles exported as one JSON file each, Org-mode staff procedures, the MCP
``tools/list`` result as the tool catalogue, JSON-RPC 2.0 errors), every template holds, the set it
generates is labelled, verified and deterministic, and the freeze record is well formed. Its figures
are in docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "library_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "fernhill_libraries" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "bot/system-prompt.txt"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 15 and len(r.facts) == 18 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    assert all(f.path.endswith(".json") for f in r.kb_facts)  # one exported article per JSON file
    assert r.ws.component_type("staff/procedures/home-library-referral.org") == "skill"
    assert {r.ws.tool_prompt_path(t) for t in ("renew_loans", "book_room")} == {"mcp/tools.json"}


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

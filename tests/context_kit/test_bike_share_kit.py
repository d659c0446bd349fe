"""The first round-17 held-out example kit (examples/bike_share_kit, kit ``bike_share``, written
blind to the pipeline and scored only after the round-17 freeze): it loads against its own layout
(MediaWiki wikitext help pages, plain-text SOPs, one Pydantic JSON Schema file per tool, a Jinja2
system prompt, Laravel validation errors), every template holds, the set it generates is labelled,
verified and deterministic, and the freeze record is well formed. Its figures are in
docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "bike_share_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "bike_share" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "agent/prompts/system.j2"
    assert len(r.kb_facts) == 16 and len(r.facts) == 19 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    assert all(f.path.endswith(".wiki") for f in r.kb_facts)
    # a JSON Schema per tool is one tool named by its file, and wiki pages are titled by DISPLAYTITLE
    assert r.ws.tool_names() == ["buy_pass", "end_ride", "issue_refund", "report_bike_issue"]
    assert r.ws.tool_prompt_path("end_ride") == "agent/schemas/tools/end_ride.json"
    titles = {e.path: e.title for e in r.ws.kb_entries()}
    assert titles["help-wiki/pages/Account/App_login_problems.wiki"] == "App login problems"
    assert r.ws.component_type("ops/sop/SOP-CS-011_open_ride.txt") == "skill"
    assert not any(p.startswith("help-wiki/templates/") or p.endswith(".py") for p in r.ws.files)


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

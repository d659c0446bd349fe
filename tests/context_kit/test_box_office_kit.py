"""The round-11 held-out example kit (examples/box_office_kit, written blind to the pipeline and
scored only after the round-11 freeze): it loads against its own layout (a Zendesk Guide export,
numbered runbooks, one YAML tool catalogue whose errors are Stripe / Django REST / Salesforce /
FastAPI style), every template holds, the set it generates is labelled, verified and deterministic,
and the freeze record is well formed. Its figures are reported in docs/context.md, not asserted here."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "box_office_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "box_office" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "agent/house_rules.txt"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 18 and len(r.tools) == 4 and len(r.rules) == 4
    assert set(kit_categories(r)) == set(FaultCategory)
    # every tool is described in one catalogue file, a tool component of the layout
    assert r.ws.component_type("agent/tool_catalogue.yaml") == "tool"


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 52)

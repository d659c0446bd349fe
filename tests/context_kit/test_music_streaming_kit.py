"""The first round-15 held-out example kit (examples/music_streaming_kit, kit ``tidewave_music``,
written blind to the pipeline and scored only after the round-15 freeze): it loads against its own
layout (Docusaurus MDX pages, YAML runbooks, an OpenAI-style function list generated from the team's
OpenAPI document, Google-style JSON errors), every template holds, the set it generates is
labelled, verified and deterministic, and the freeze record is well formed. Its figures are in
docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "music_streaming_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "tidewave_music" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "bot/system-prompt.md"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 15 and len(r.facts) == 18 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    assert all(f.path.endswith(".mdx") for f in r.kb_facts)
    assert r.ws.component_type("runbooks/refund-request.yaml") == "skill"
    assert {r.ws.tool_prompt_path(t) for t in ("change_plan", "issue_refund")} == {"bot/tools.json"}
    assert not r.ws.exists("api/support-api.openapi.yaml")  # the source document, not declared


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

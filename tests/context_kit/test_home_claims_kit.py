"""The held-out example kit (examples/home_claims_kit, written after the pipeline was frozen):
it loads against its own layout, every template holds, and the set it generates is labelled,
verified and deterministic. Its figures are reported in docs/context.md, not asserted here."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_generated_set

KIT = Path(__file__).resolve().parents[2] / "examples" / "home_claims_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "home_claims" and kit.written and "frozen" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "bot/persona.md"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 14 and len(r.tools) == 3 and len(r.rules) == 4
    assert set(kit_categories(r)) == set(FaultCategory)
    # the tools live in one JSON file; each is described there
    assert {r.ws.component_type("bot/tools.json")} == {"tool"}
    excess = next(f for f in r.facts if f.path.endswith("standard-excess.md"))
    assert excess.claim == "The standard excess on a buildings or contents claim is £250."


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)

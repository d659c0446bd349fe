"""The round-3 held-out example kit (examples/mobile_plans_kit, written after the pipeline was
frozen): it loads against its own layout, every template holds, the set it generates is labelled,
verified and deterministic, and the pipeline hashes recorded at the freeze are well formed. Its
figures are reported in docs/context.md, not asserted here."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "mobile_plans_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "mobile_plans" and kit.written and "frozen" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "agent/brief.txt"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 14 and len(r.tools) == 3 and len(r.rules) == 4
    assert set(kit_categories(r)) == set(FaultCategory)
    # one connector file per tool, each a tool component of the layout
    assert {r.ws.component_type(f"connectors/{t}.md") for t in r.ws.tool_names()} == {"tool"}
    fee = next(f for f in r.facts if f.path.endswith("late-payment.md"))
    assert fee.claim == "An unpaid bill adds a late fee of $7 to the next statement."


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_every_pipeline_module() -> None:
    lines = (KIT.parent / "frozen_pipeline.sha256").read_text(encoding="utf-8").splitlines()
    recorded = {line.split("  ", 1)[1] for line in lines if re.fullmatch(r"[0-9a-f]{64}  \S+", line)}
    assert len(recorded) == len(lines)
    # the pipeline's modules at the freeze (a module added later is not in the record)
    assert {"causal_middleware/context/detector.py", "causal_middleware/context/recommender.py"} <= recorded
    assert all(path.startswith("causal_middleware/context/") for path in recorded)

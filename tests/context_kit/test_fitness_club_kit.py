"""The first round-18 held-out example kit (examples/fitness_club_kit, kit ``ember_fitness``,
written blind to the pipeline and scored only after the round-18 freeze): it loads against its own
layout (Emacs Org-mode help pages, n8n workflow exports as procedures, one Anthropic tool-use JSON
list, Stripe-style errors), every template holds, the set it generates is labelled, verified and
deterministic, and the freeze record is well formed. Its figures are in docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "fitness_club_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "ember_fitness" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "concierge/system-prompt.md"
    assert len(r.kb_facts) == 15 and len(r.facts) == 18 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    assert all(f.path.endswith(".org") for f in r.kb_facts)
    # Org-mode keyword lines are the page's header
    entry = r.ws.kb_entry("help-centre/pages/membership/freezing-your-membership.org")
    assert (entry.title, entry.modified, entry.author) == (
        "Freezing your membership",
        "2026-09-18",
        "Member Services",
    )
    assert r.ws.tool_names() == [
        "book_class",
        "freeze_membership",
        "issue_guest_pass",
        "reissue_door_access",
    ]
    assert {r.ws.tool_prompt_path(t) for t in r.ws.tool_names()} == {"concierge/tools.json"}
    assert r.ws.component_type("automations/exports/sop-medical-freeze.json") == "skill"
    assert not any(p.endswith((".el", ".toml", "sitemap.org")) for p in r.ws.files)


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

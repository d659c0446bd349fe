"""The second round-17 held-out example kit (examples/solar_installer_kit, kit ``solar_installer``,
written blind to the pipeline and scored only after the round-17 freeze): it loads against its own
layout (Google Docs exported as plain text with a byte-order mark and a ``Last updated:`` header,
YAML checklists as procedures, one Spring AI ``@Tool`` Java class per tool, Spring Boot validation
errors), every template holds, the set it generates is labelled, verified and deterministic, and
the freeze record is well formed. Its figures are in docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "solar_installer_kit" / "kit.yaml"
TOOLS = "agent/src/main/java/uk/co/sunmoor/assist/tools"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "solar_installer" and kit.written and "blind" in kit.written
    assert r.ws.system_prompt_path == "agent/src/main/resources/prompts/customer-support-system.st"
    assert len(r.kb_facts) == 16 and len(r.facts) == 19 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    assert all(f.path.endswith(".txt") for f in r.kb_facts)
    # Spring AI's @Tool(name = ...) names the tool; the file is where it is described
    assert r.ws.tool_names() == [
        "book_home_survey",
        "get_system_status",
        "raise_service_ticket",
        "update_export_details",
    ]
    assert r.ws.tool_prompt_path("book_home_survey") == f"{TOOLS}/BookHomeSurveyTool.java"
    assert f"{TOOLS}/ToolsConfig.java" not in r.ws.files
    entry = r.ws.kb_entry("help-centre/Contact and complaints/Contact us.txt")
    assert (entry.title, entry.modified, entry.owner) == ("CONTACT US", "2026-12-01", "Customer Experience")
    assert not entry.text.startswith("\ufeff")
    assert not any("_templates" in p or p.endswith("_template.yaml") for p in r.ws.files)


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)

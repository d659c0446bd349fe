"""The recommender: exploration, the four dimensions, authority, CREATE/UPDATE/DELETE/NO_ACTION, diffs."""

from __future__ import annotations

import pytest

from causal_middleware.context.recommendation import Classification, Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.workspace import Workspace


def run(session, ws: Workspace, mode: str = "explore"):
    conv = session.build()
    return recommend(conv, diagnose(conv), ws, mode=mode)  # type: ignore[arg-type]


def test_stale_entry_updated_from_a_newer_announcement(files, session_for, make_kb) -> None:
    files["kb/announcements/fees-update.md"] = make_kb(
        "ann-1",
        "Fees update, March 2025",
        "Effective March 1, 2025: the overdraft fee is $35 per item.",
        modified="2025-03-01",
        status="official",
        level="department",
    )
    ws = Workspace.from_files(files)
    s = session_for(files)
    s.system()
    s.user("What is the overdraft fee?")
    s.read("kb/fees/overdraft-fee.md")
    s.agent("The overdraft fee is $25 per item.")
    s.user("That's outdated, it's $35 now.")
    rec = run(s, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/fees/overdraft-fee.md"
    assert rec.authoritative_source == "kb/announcements/fees-update.md" and rec.authority_rule == "recency"
    assert rec.classification == Classification.SYSTEMIC
    assert rec.dimensions.correctness.ok is False and rec.dimensions.consistency.ok is False
    assert rec.dimensions.existence.ok is True
    assert "The overdraft fee is $35 per item." in (rec.new_text or "") and "$25" not in (rec.new_text or "")
    assert rec.diff.startswith("--- a/kb/fees/overdraft-fee.md\n+++ b/kb/fees/overdraft-fee.md\n")
    assert (
        "-The overdraft fee is $25 per item." in rec.diff
        and "+The overdraft fee is $35 per item." in rec.diff
    )
    assert 2 <= rec.calls <= 5 and rec.calls == len(rec.exploration)
    assert rec.exploration[0].tool == "read_kb_entry"


def test_stale_duplicate_is_deleted_in_favour_of_the_official_entry(files, session_for, make_kb) -> None:
    files["kb/fees/overdraft-fee.md"] = files["kb/fees/overdraft-fee.md"].replace("$25", "$35")
    files["kb/archive/overdraft-fee.md"] = make_kb(
        "kb-overdraft-fee-2023",
        "Overdraft fee (2023)",
        "The overdraft fee is $25 per item.",
        modified="2025-01-01",
        status="deprecated",
        level="department",
    )
    ws = Workspace.from_files(files)
    s = session_for(files)
    s.system()
    s.user("What is the overdraft fee?")
    s.read("kb/archive/overdraft-fee.md")
    s.agent("The overdraft fee is $25 per item.")
    s.user("No, that's wrong. It's $35 now.")
    rec = run(s, ws)
    assert rec.operation == Operation.DELETE and rec.target_path == "kb/archive/overdraft-fee.md"
    assert rec.authoritative_source == "kb/fees/overdraft-fee.md" and rec.authority_rule == "status"
    assert rec.new_text is None and "+++ /dev/null" in rec.diff
    passive = run(s, ws, mode="passive")  # cannot see the official entry it never retrieved
    assert passive.operation == Operation.UPDATE and passive.calls == 0


def test_retrieval_failure_makes_the_right_entry_findable(files, session_for) -> None:
    files["kb/fees/overdraft-fee.md"] = files["kb/fees/overdraft-fee.md"].replace("$25", "$35")
    ws = Workspace.from_files(files)
    s = session_for(files)
    s.system()
    s.user("What do you charge when a check bounces?")
    s.search("What do you charge when a check bounces")
    s.agent("The returned check fee is $12 when a deposited check bounces.")
    s.user("No, that's not it. The overdraft fee is $35.")
    conv = s.build()
    assert conv.node("n3").source == "kb/fees/returned-check-fee.md"
    rec = recommend(conv, diagnose(conv), ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/fees/overdraft-fee.md"
    assert rec.dimensions.accessibility.ok is False and rec.dimensions.existence.ok is True
    assert 'Related question: "What do you charge when a check bounces?"' in rec.change_text
    fixed = ws.with_changes({rec.target_path: rec.new_text})
    assert (
        fixed.search_kb("What do you charge when a check bounces", k=1)[0].path == "kb/fees/overdraft-fee.md"
    )


def test_missing_entry_is_created_in_the_neighbours_folder(session, workspace) -> None:
    session.system()
    session.user("What is the monthly maintenance fee?")
    session.search("monthly maintenance fee")
    session.agent("I couldn't find anything about the monthly maintenance fee.")
    session.user("It's $12. That should be in your documentation.")
    rec = run(session, workspace)
    assert rec.operation == Operation.CREATE and rec.target_path == "kb/fees/monthly-maintenance-fee.md"
    assert rec.base_text is None and rec.diff.startswith(
        "--- /dev/null\n+++ b/kb/fees/monthly-maintenance-fee.md"
    )
    assert "status: draft" in (rec.new_text or "") and "$12" in (rec.new_text or "")
    assert rec.dimensions.existence.ok is False


def test_tool_description_fixed_from_the_error(session, workspace) -> None:
    session.system()
    session.user("Move $200 to savings today.")
    session.tool(
        "transfer_funds",
        {"speed": "instant"},
        "Error 422: invalid value 'instant' for parameter 'speed'; expected 'same_day'.",
        error=True,
    )
    session.agent("Sorry, that failed.")
    session.user("Why does it keep failing?")
    rec = run(session, workspace)
    assert rec.operation == Operation.UPDATE and rec.target_path == "tools/transfer_funds.md"
    assert "`same_day`" in (rec.new_text or "") and "`instant`" not in (rec.new_text or "")
    assert [c.tool for c in rec.exploration][0] == "read_tool_prompt"


def test_missing_rule_added_to_the_system_prompt_once(session, workspace) -> None:
    session.system()
    session.user("Should I move my savings into tech stocks?")
    session.agent("Tech stocks have done well, so yes.")
    session.user("You're not supposed to give investment advice.")
    conv = session.build()
    rec = recommend(conv, diagnose(conv), workspace)
    assert rec.operation == Operation.UPDATE and rec.target_path == "system_prompt.md"
    assert rec.change_text == "- Do not give investment advice."
    assert (rec.new_text or "").endswith("- Do not give investment advice.\n")
    fixed = workspace.with_changes({"system_prompt.md": rec.new_text})
    again = recommend(conv, diagnose(conv), fixed)
    assert again.operation == Operation.NO_ACTION and again.classification == Classification.INCIDENTAL


def test_right_content_misread_is_incidental(session, workspace) -> None:
    session.system()
    session.user("What is the overdraft fee?")
    session.search("overdraft fee")
    session.agent("The overdraft fee is $30 per item.")
    session.user("No, that's wrong, it's $25.")
    rec = run(session, workspace)
    assert rec.operation == Operation.NO_ACTION and rec.classification == Classification.INCIDENTAL
    assert rec.diff == "" and rec.target_path is None


def test_skill_updated_with_the_policy_entry_as_authority(files, session_for, make_kb) -> None:
    files["kb/policies/disputes.md"] = make_kb(
        "policy-disputes",
        "Dispute a charge policy",
        "Disputes must be filed within 120 days of the statement date.",
        modified="2025-02-01",
        status="official",
        level="organization",
    )
    ws = Workspace.from_files(files)
    s = session_for(files)
    s.system()
    s.user("How long do I have to dispute a charge?")
    s.skill("skills/dispute-a-charge/SKILL.md")
    s.agent("Disputes must be filed within 60 days of the statement date.")
    s.user("That's outdated, it's 120 days now.")
    rec = run(s, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "skills/dispute-a-charge/SKILL.md"
    assert rec.authoritative_source == "kb/policies/disputes.md" and rec.authority_rule == "hierarchy"
    assert "within 120 days" in (rec.new_text or "")


def test_ids_are_stable_and_mode_is_checked(session, workspace) -> None:
    session.system()
    session.user("What is the overdraft fee?")
    session.search("overdraft fee")
    session.agent("The overdraft fee is $25 per item.")
    session.user("That's outdated, it's $35 now.")
    conv = session.build()
    a, b = recommend(conv, diagnose(conv), workspace), recommend(conv, diagnose(conv), workspace)
    assert a.id == b.id and a.id.startswith("rec-")
    with pytest.raises(ValueError, match="unknown recommender mode"):
        recommend(conv, diagnose(conv), workspace, mode="lazy")  # type: ignore[arg-type]

"""Issue 19 item 2: ``causal-mw context`` on a user's own ``create_agent`` agent and workspace.

The agent (``support_agent.py``) is not one of ours: its tools are named the user's way, print
plain text (no paths, no JSON), and its workspace is laid out the user's way and declared by
``causal-context.yaml``. Recorded with ``instrument()``, three sessions, two where the user says the
refunds page's 14-day window is wrong; then detect, diagnose, recommend, review the diff, apply
with a backup, and a re-run answers right.
"""

from __future__ import annotations

import json
from pathlib import Path

from causal_middleware.cli.main import main
from causal_middleware.context import NodeType, load_conversation
from causal_middleware.context.apply import restore_backup
from causal_middleware.context.conversation import align_to_workspace
from causal_middleware.context.workspace import BACKUP_DIR, Workspace
from causal_middleware.store.sqlite import SqliteSpanStore

from .conftest import record
from .support_agent import FILES, SESSIONS, STALE_PAGE


def run_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sessions_are_tied_to_the_users_files(recorded) -> None:
    root, db = recorded
    ws = Workspace.from_dir(root)  # finds causal-context.yaml
    assert ws.layout.default is False
    assert sorted(ws.files) == sorted(p for p in FILES if p not in ("causal-context.yaml", "README.md"))
    conv = align_to_workspace(load_conversation(SqliteSpanStore(db), "acme-refund-1"), ws)
    system, retrieval = conv.nodes[0], conv.nodes[2]
    assert system.type == NodeType.SYSTEM_PROMPT and system.source == "agent/system.txt"
    assert retrieval.type == NodeType.KB_RETRIEVAL and retrieval.name == "search_help_center"
    assert [d.path for d in retrieval.documents][0] == STALE_PAGE  # by content: the tool prints no paths
    cancel = align_to_workspace(load_conversation(SqliteSpanStore(db), "acme-cancel"), ws)
    lookup = next(n for n in cancel.nodes if n.name == "open_playbook")
    assert lookup.type == NodeType.SKILL_LOOKUP and lookup.source == "playbooks/cancel-subscription.md"


def test_detect_diagnose_recommend_review_apply_rerun(recorded, tmp_path: Path, capsys) -> None:
    root, db = recorded
    store, ws = str(db), str(root)
    for sid in ("acme-refund-1", "acme-refund-2"):
        det = run_json(capsys, "context", "detect", sid, "--store", store, "--workspace", ws)
        assert det["escalate"], sid
    assert not run_json(capsys, "context", "detect", "acme-cancel", "--store", store, "--workspace", ws)[
        "escalate"
    ]

    diag = run_json(capsys, "context", "diagnose", "acme-refund-1", "--store", store, "--workspace", ws)
    assert diag["status"] == "ok" and diag["component_path"] == STALE_PAGE and diag["component_type"] == "kb"
    assert diag["delta"]["got"] == "14 days" and diag["delta"]["expected"] == "30 days"

    rec = run_json(capsys, "context", "recommend", "acme-refund-1", "--store", store, "--workspace", ws)
    assert rec["operation"] == "UPDATE" and rec["target_path"] == STALE_PAGE
    assert rec["diff"].startswith(f"--- a/{STALE_PAGE}")
    assert "+Refunds can be requested within 30 days of purchase." in rec["diff"]

    # Review: a dry run prints the diff and changes nothing.
    before = (root / STALE_PAGE).read_text()
    assert main(["context", "apply", rec["id"], "--store", store, "--workspace", ws]) == 0
    out = capsys.readouterr().out
    assert "-Refunds can be requested within 14 days" in out and "dry run" in out
    assert (root / STALE_PAGE).read_text() == before and not (root / BACKUP_DIR).exists()

    done = run_json(capsys, "context", "apply", rec["id"], "--store", store, "--workspace", ws, "--confirm")
    assert done["applied"] and "30 days" in (root / STALE_PAGE).read_text()
    backup = Path(done["backup_dir"])
    assert (backup / STALE_PAGE).read_text() == before
    assert json.loads((backup / "manifest.json").read_text())["target_path"] == STALE_PAGE

    # The same question on a new thread now gets the right answer.
    rerun = record(root, tmp_path / "rerun.db", {"acme-rerun": [SESSIONS["acme-refund-1"][0]]})
    conv = load_conversation(rerun, "acme-rerun")
    assert conv.nodes[-1].content == "Refunds can be requested within 30 days of purchase."

    # And the backup undoes it.
    assert restore_backup(root, backup) == STALE_PAGE and (root / STALE_PAGE).read_text() == before


def test_human_output_and_a_config_passed_from_elsewhere(recorded, tmp_path: Path, capsys) -> None:
    root, db = recorded
    config = tmp_path / "settings" / "acme.yaml"
    config.parent.mkdir()
    config.write_text("root: ../acme-support\n" + FILES["causal-context.yaml"])
    (root / "causal-context.yaml").unlink()  # only the passed config declares the layout
    argv = ["--store", str(db), "--config", str(config)]
    assert main(["context", "recommend", "acme-refund-2", *argv]) == 0
    out = capsys.readouterr().out
    assert f"UPDATE {STALE_PAGE}" in out and f"--config {config}" in out and "nothing applied" in out
    rid = out.split()[1].rstrip(":")
    assert main(["context", "apply", rid, *argv, "--confirm"]) == 0
    assert "30 days" in (root / STALE_PAGE).read_text() and any((root / BACKUP_DIR).iterdir())


JUDGE = """
import json
from causal_middleware.testing.models import RecordingChatModel

REPLIES = json.loads({replies!r})
JUDGE = RecordingChatModel(replies=REPLIES)
"""


def test_recommend_with_an_llm_spec_runs_the_llm_forms(recorded, tmp_path: Path, capsys) -> None:
    """``--llm SPEC``: detector, root cause and recommender use that chat model (here a scripted
    one, loaded by ``file.py:attr``); the fix is the model's, checked against the workspace."""
    root, db = recorded
    store, ws = str(db), str(root)
    offline = run_json(capsys, "context", "diagnose", "acme-refund-1", "--store", store, "--workspace", ws)
    found = run_json(capsys, "context", "detect", "acme-refund-1", "--store", store, "--workspace", ws)
    first = found["signals"][0]
    signal = {k: first[k] for k in ("type", "turn", "node_id", "evidence", "confidence")}
    root_cause = {
        "expected": "30 days",
        "got": "14 days",
        "root_node_id": offline["root_node_id"],
        "category": "KB_CONTENT_STALE",
        "component_path": STALE_PAGE,
        "attributions": {offline["root_node_id"]: 1.0},
    }
    fix = {
        "operation": "UPDATE",
        "target_path": STALE_PAGE,
        "new_path": None,
        "old_text": "within 14 days",
        "new_text": "within 30 days",
        "confidence": 0.7,
        "rationale": "the page states the old window",
    }
    replies = json.dumps([json.dumps({"signals": [signal]}), json.dumps(root_cause), json.dumps(fix)])
    (tmp_path / "judge_update.py").write_text(JUDGE.format(replies=replies))
    spec = f"{tmp_path / 'judge_update.py'}:JUDGE"
    rec = run_json(
        capsys, "context", "recommend", "acme-refund-1", "--store", store, "--workspace", ws, "--llm", spec
    )
    assert rec["rationale"].startswith("LLM recommender:") and rec["mode"] == "llm"
    assert rec["operation"] == "UPDATE" and rec["target_path"] == STALE_PAGE
    assert "+Refunds can be requested within 30 days of purchase." in rec["diff"]
    # a reply naming a file it was not shown is refused with one line, nothing stored
    fix["target_path"] = "agent/system.txt"
    fix["operation"] = "DELETE"
    replies = json.dumps([json.dumps({"signals": [signal]}), json.dumps(root_cause), json.dumps(fix)])
    (tmp_path / "judge_delete.py").write_text(JUDGE.format(replies=replies))
    spec = f"{tmp_path / 'judge_delete.py'}:JUDGE"
    argv = ["context", "recommend", "acme-refund-1", "--store", store, "--workspace", ws, "--llm", spec]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("causal-mw: error: recommender:") and "\n" not in err
    assert "agent/system.txt" in err
    assert (
        main(
            [
                "context",
                "recommend",
                "acme-refund-1",
                "--store",
                store,
                "--workspace",
                ws,
                "--llm",
                spec,
                "--passive",
            ]
        )
        == 2
    )
    assert "--passive" in capsys.readouterr().err

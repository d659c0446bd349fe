"""``causal-mw context``: simulate -> detect -> diagnose -> recommend -> apply, against a SQLite store."""

from __future__ import annotations

import json

from causal_middleware.cli.main import main


def run_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_whole_flow_on_a_simulated_session(tmp_path, capsys) -> None:
    store, wsroot = str(tmp_path / "runs.db"), tmp_path / "ws"
    out = run_json(
        capsys,
        "context",
        "simulate",
        "--n-dissatisfied",
        "6",
        "--n-control",
        "1",
        "--store",
        store,
        "--workspaces",
        str(wsroot),
    )
    assert out["verification_ok"] and len(out["sessions"]) == 7
    sid = "finance-s0-000"  # a stale knowledge-base entry (see the generator's category order)

    det = run_json(capsys, "context", "detect", sid, "--store", store)
    assert det["escalate"] and det["signals"][0]["type"] == "CORRECTION"

    diag = run_json(capsys, "context", "diagnose", sid, "--store", store)
    assert diag["status"] == "ok" and diag["category"] == "KB_CONTENT_STALE" and diag["root_node_id"]

    rec = run_json(capsys, "context", "recommend", sid, "--store", store)  # workspace from the session record
    assert rec["operation"] in ("UPDATE", "DELETE") and rec["diff"].startswith("--- a/kb/")
    target = wsroot / sid / rec["target_path"]
    before = target.read_text()

    assert main(["context", "apply", rec["id"][:10], "--workspace", str(wsroot / sid), "--store", store]) == 0
    printed = capsys.readouterr().out
    assert "dry run" in printed and target.read_text() == before

    applied = run_json(
        capsys, "context", "apply", rec["id"], "--workspace", str(wsroot / sid), "--store", store, "--confirm"
    )
    assert applied["applied"] and (wsroot / sid / ".causal-backup").is_dir()
    assert (not target.exists()) if rec["operation"] == "DELETE" else target.read_text() != before


def test_human_output_and_errors(tmp_path, capsys) -> None:
    store = str(tmp_path / "runs.db")
    assert main(["context", "simulate", "--n-dissatisfied", "6", "--n-control", "1", "--store", store]) == 0
    capsys.readouterr()
    assert main(["context", "detect", "finance-s0-c00", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("finance-s0-c00: ok")
    assert main(["context", "diagnose", "finance-s0-004", "--store", store]) == 0
    assert "TOOL_PROMPT_ERROR" in capsys.readouterr().out
    assert main(["context", "detect", "finance-s0-000", "--store", store, "--llm"]) == 0
    assert "not run" in capsys.readouterr().out
    assert main(["context", "recommend", "finance-s0-000", "--store", store]) == 2  # no workspace anywhere
    assert "pass --workspace" in capsys.readouterr().err
    assert main(["context", "detect", "no-such-session", "--store", store]) == 2
    assert "unknown session 'no-such-session'" in capsys.readouterr().err
    assert main(["context", "apply", "rec-nope", "--workspace", str(tmp_path), "--store", store]) == 2
    assert main(["context", "detect", "x", "--store", str(tmp_path / "missing.db")]) == 2


def test_simulate_names_the_checks_a_set_fails(tmp_path, capsys, monkeypatch) -> None:
    """A kit author sees which check failed and on which session, not only 'FAILED'."""
    from benchmarks.context.simulation import verification

    real = verification.verify_benchmark

    def failing(bench):
        report = real(bench)
        check = report.checks["tool_output_equals_source"]
        check.failed, check.failures = 1, ["finance-s0-000: n3 output differs from kb/fees/x.md"]
        return report

    monkeypatch.setattr(verification, "verify_benchmark", failing)
    argv = [
        "context",
        "simulate",
        "--n-dissatisfied",
        "2",
        "--n-control",
        "0",
        "--store",
        str(tmp_path / "r.db"),
    ]
    out = run_json(capsys, *argv)
    assert not out["verification_ok"]
    assert out["verification_failures"] == {
        "tool_output_equals_source": ["finance-s0-000: n3 output differs from kb/fees/x.md"]
    }
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "verification FAILED" in printed
    assert "tool_output_equals_source failed (1): finance-s0-000: n3 output differs" in printed

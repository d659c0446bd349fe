"""``causal-mw health``: the store's persisted counters and this process's, text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.reliability.harness import tiny_graph
from causal_middleware import instrument
from causal_middleware.cli.main import main
from causal_middleware.spans.health import health


def test_health_json_reports_persisted_drops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    ig = instrument(tiny_graph(), store=path)
    ig.invoke({"question": "q"})
    health.record_drop("otlp.queue_full", 7)  # a drop in the agent's process...
    ig.invoke({"question": "q2"})  # ...persisted with the next store write
    ig.shutdown()
    health.reset()  # the CLI runs in a fresh process: nothing in memory
    assert main(["health", "--store", str(path), "--json", "--check"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["store"]["runs"] == 2 and report["store"]["integrity"] == "ok"
    assert report["store"]["open_mode"] == "rw" and report["store"]["error"] is None
    assert report["persisted"]["otlp.queue_full"] == 7
    assert report["persisted"]["store.runs_written"] == 2
    assert report["persisted_dropped"] == 7 and report["ok"] is False
    assert set(report["process"]) >= {"pid", "errors", "dropped", "counts", "total_dropped"}


def test_health_text_for_a_clean_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    ig = instrument(tiny_graph(), store=path)
    ig.invoke({"question": "q"})
    ig.shutdown()
    assert main(["health", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 runs" in out and "0 spans dropped" in out and out.strip().endswith("ok")


def test_health_of_a_corrupted_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"not a database" * 500)
    assert main(["health", "--store", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert "corrupted" in report["store"]["error"]


def test_health_help_documents_the_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["health", "--help"])
    text = capsys.readouterr().out
    for key in (
        "persisted_dropped",
        "open_mode",
        "store.retries_exhausted",
        "otlp.queue_full",
        "total_dropped",
    ):
        assert key in text

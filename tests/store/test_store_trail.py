"""TRAIL trace import (../shared/data/trail/traces/gaia): foreign OpenInference traces into runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from causal_middleware.spans.model import Status
from causal_middleware.store.base import SpanStore, StoreError

SAMPLE = "0035f455b3ff2295167a844f04d85d34.json"


def _walk(spans: list[dict[str, Any]]):
    for span in spans:
        yield span
        yield from _walk(span.get("child_spans") or [])


def test_a_trail_trace_becomes_a_run(store: SpanStore, trail_dir: Path) -> None:
    path = trail_dir / SAMPLE
    raw = json.loads(path.read_text())
    spans = list(_walk(raw["spans"]))
    run_id = store.import_trail_trace(path)
    assert run_id == raw["trace_id"]
    stored = store.get_spans(run_id)
    assert len(stored) == len(spans)
    root = next(s for s in stored if s.parent_span_id is None)
    assert (root.name, root.scope, root.resource["service.name"]) == (
        "main",
        "patronus.sdk",
        "gaia-annotations/app:GAIA-Samples",
    )
    assert root.end_time_ns - root.start_time_ns == 108_755_330_000  # duration PT1M48.75533S
    assert [e.name for e in root.events] == ["log"]  # TRAIL logs are kept as span events

    t = store.get_trajectory(run_id)
    kinds = Counter(s["span_attributes"].get("openinference.span.kind") for s in spans)
    assert t.cost.llm_calls == kinds["LLM"] and t.cost.tool_calls == kinds["TOOL"]
    assert len(t.steps_of("node")) == kinds["CHAIN"] + kinds["AGENT"]
    assert len(t.hops) == kinds["TOOL"]  # no hop spans: each tool span starts a hop
    llm_spans = [s for s in spans if s["span_attributes"].get("openinference.span.kind") == "LLM"]
    # only LLM spans count: the AGENT span repeats the total, which must not be counted twice
    assert t.cost.input_tokens == sum(int(s["span_attributes"]["llm.token_count.prompt"]) for s in llm_spans)
    final = t.steps_of("tool")[0]
    assert final.tool_name == "final_answer" and final.args["args"] == ["33149"]


def test_errors_in_trail_traces_reach_the_steps(store: SpanStore, trail_dir: Path) -> None:
    errors_seen = 0
    for path in sorted(trail_dir.glob("*.json")):
        raw = json.loads(path.read_text())
        failing = {s["span_id"] for s in _walk(raw["spans"]) if s["status_code"] == "Error"}
        if not failing:
            continue
        t = store.get_trajectory(store.import_trail_trace(path))
        failed_steps = [s for s in t.steps if s.status is Status.ERROR]
        assert {s.step_id for s in failed_steps} == failing
        assert all(s.error for s in failed_steps)
        errors_seen += len(failing)
        if errors_seen >= 3:
            break
    assert errors_seen >= 3


def test_every_shipped_trail_trace_imports(store: SpanStore, trail_dir: Path) -> None:
    paths = sorted(trail_dir.glob("*.json"))
    run_ids = [store.import_trail_trace(p) for p in paths]
    assert len(set(run_ids)) == len(paths) == len(store.list_runs(limit=None))
    for run_id in run_ids[::9]:
        assert store.get_trajectory(run_id).run_id == run_id


def test_invalid_trail_files_write_nothing(store: SpanStore, trail_dir: Path, tmp_path: Path) -> None:
    raw = json.loads((trail_dir / SAMPLE).read_text())
    raw["spans"][0]["child_spans"][1]["timestamp"] = "yesterday"
    bad = tmp_path / "bad_time.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(
        StoreError, match=r"bad_time.json is not a valid TRAIL trace: spans\[0\]\.child_spans\[1\]: bad ISO"
    ):
        store.import_trail_trace(bad)
    raw = json.loads((trail_dir / SAMPLE).read_text())
    raw["spans"][0]["child_spans"][0]["span_id"] = "nothex"
    bad.write_text(json.dumps(raw))
    with pytest.raises(StoreError, match=r"child_spans\[0\]: span_id"):
        store.import_trail_trace(bad)
    bad.write_text(json.dumps({"resourceSpans": []}))
    with pytest.raises(StoreError, match="not a TRAIL trace"):
        store.import_trail_trace(bad)
    assert store.list_runs() == []

"""Items 8 and 9 of issue 13 for imports: deeply nested JSON gave a ``RecursionError`` traceback
(now a one-line error, exit 2, nothing written), and a 200 MB import took 2.09 GB of memory (now
the file streams: validated in one pass that keeps nothing, written batch by batch in a second)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from causal_middleware.cli.main import main
from causal_middleware.store import otlp_json, trail
from causal_middleware.store.base import StoreError
from causal_middleware.store.sqlite import SqliteSpanStore


def _span(trace: int, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "traceId": f"{trace + 1:032x}",
        "spanId": f"{n + 1:016x}",
        "name": f"step{n}",
        "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
        "endTimeUnixNano": str(1_700_000_000_000_000_100 + n),
        "attributes": [{"key": "payload", "value": {"stringValue": "x" * 400}}],
        **extra,
    }


def _request(spans: list[dict[str, Any]], *, resource_last: bool = False) -> dict[str, Any]:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
    scope_spans = [{"spans": spans, "scope": {"name": "lib"}}]  # scope after its spans, too
    if resource_last:
        return {"resourceSpans": [{"scopeSpans": scope_spans, "resource": resource}]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": scope_spans}]}


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


@pytest.mark.parametrize("depth", [150, 100_000])
def test_deeply_nested_otlp_is_a_one_line_error(tmp_path: Path, capsys: Any, depth: int) -> None:
    path = tmp_path / "deep.json"
    if depth > 1000:  # far past the decoder's recursion limit: the old RecursionError
        text = json.dumps(_request([_span(0, 0)]))
        text = text.replace('{"stringValue": "' + "x" * 400 + '"}', "[" * depth + "]" * depth)
        path.write_text(text)
    else:  # within the decoder's limit, past the import's
        path.write_text(
            json.dumps(_request([_span(0, 0, attributes=[{"key": "k", "value": _nested(depth)}])]))
        )
    db = tmp_path / "runs.db"
    assert main(["runs", "import", str(path), "--store", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nested deeper than" in err and str(path) in err
    with SqliteSpanStore(db) as store:
        assert store.list_runs() == []


def test_deeply_nested_trail_is_a_one_line_error(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "deep_trail.json"
    path.write_text(
        '{"trace_id": "'
        + "a" * 32
        + '", "spans": [{"span_attributes": '
        + "[" * 50_000
        + "]" * 50_000
        + "}]}"
    )
    with pytest.raises(StoreError, match="not a valid TRAIL trace: .*nested deeper than"):
        trail.read_trail_trace(path)
    db = tmp_path / "runs.db"
    assert main(["runs", "import", str(path), "--format", "trail", "--store", str(db)]) == 2
    assert "nested deeper than" in capsys.readouterr().err


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp_json, "BATCH_SPANS", 50)
    monkeypatch.setattr(otlp_json, "BATCH_CHARS", 40_000)
    monkeypatch.setattr(trail, "BATCH_SPANS", 50)
    monkeypatch.setattr(trail, "BATCH_CHARS", 40_000)


def test_a_large_file_streams_in_batches_and_keeps_every_span(tmp_path: Path, small_batches: None) -> None:
    spans = [_span(t, t * 100 + n) for t in range(6) for n in range(60)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_request(spans, resource_last=True)))
    with SqliteSpanStore(tmp_path / "runs.db") as store:
        writes: list[int] = []
        real = store.write_spans
        store.write_spans = lambda records: (writes.append(len(records)), real(records))[1]  # type: ignore[method-assign]
        run_ids = store.import_otlp_json(path)
        assert run_ids == [f"{t + 1:032x}" for t in range(6)]
        assert len(writes) > 1 and sum(writes) == 360 and max(writes) <= 50
        stored = store.get_spans(run_ids[3])
        assert len(stored) == 60
        # the resource and scope written after their spans still reach every span
        assert {(s.resource["service.name"], s.scope) for s in stored} == {("svc", "lib")}


def test_an_invalid_span_at_the_end_of_a_large_file_writes_nothing(
    tmp_path: Path, small_batches: None
) -> None:
    spans = [_span(0, n) for n in range(400)] + [_span(0, 400, spanId="nothex")]
    path = tmp_path / "bad_tail.json"
    path.write_text(json.dumps(_request(spans)))
    with SqliteSpanStore(tmp_path / "runs.db") as store:
        with pytest.raises(StoreError, match=r"spans\[400\]\.spanId must be a hex string"):
            store.import_otlp_json(path)
        assert store.list_runs() == []


def test_a_large_trail_trace_streams_in_batches(tmp_path: Path, small_batches: None) -> None:
    def span(n: int, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "span_id": f"{n + 1:016x}",
            "span_name": f"s{n}",
            "timestamp": "2025-03-19T16:32:08.062589Z",
            "duration": "PT1S",
            "span_attributes": {"payload": "y" * 300},
            "child_spans": children,
        }

    root = span(0, [span(n, [span(1000 + n, [])]) for n in range(1, 150)])
    path = tmp_path / "trail.json"
    path.write_text(json.dumps({"trace_id": "b" * 32, "spans": [root]}))
    records = trail.read_trail_trace(path)
    assert records[0].span_id == f"{1:016x}" and len(records) == 299  # parents first, as in the file
    with SqliteSpanStore(tmp_path / "runs.db") as store:
        assert store.import_trail_trace(path) == "b" * 32
        assert len(store.get_spans("b" * 32)) == 299


def _peak_import(tmp_path: Path, n_traces: int) -> tuple[int, int]:
    spans = [_span(t, t * 1000 + n) for t in range(n_traces) for n in range(400)]
    path = tmp_path / f"grow{n_traces}.json"
    path.write_text(json.dumps(_request(spans)))
    with SqliteSpanStore(tmp_path / f"runs{n_traces}.db") as store:
        tracemalloc.start()
        try:
            store.import_otlp_json(path)
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(store.list_runs(limit=None)) == n_traces
    return peak, path.stat().st_size


def test_import_memory_does_not_grow_with_the_file(tmp_path: Path, small_batches: None) -> None:
    small_peak, small_size = _peak_import(tmp_path, 4)  # ~1.4 MB
    big_peak, big_size = _peak_import(tmp_path, 16)  # ~5.6 MB
    assert big_size > 3.5 * small_size
    # the old import held the text, the parsed document, the protobuf request and every record:
    # its peak grew with the file; a streamed import's is its buffers and one batch
    assert big_peak < 1.3 * small_peak, (small_peak, big_peak)
    assert big_peak < big_size / 2, (big_peak, big_size)

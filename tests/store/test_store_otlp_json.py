"""OTLP/JSON export and import: the wire format, round trips, the SDK's own encoding, bad files."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from span_factory import BASE_NS, emit_run, fabricate_run

from causal_middleware.spans.builder import build_trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import SpanStore, StoreError
from causal_middleware.store.otlp_json import import_otlp_json, read_otlp_json
from causal_middleware.store.sqlite import SqliteSpanStore

HOUR = 3600 * 10**9


@pytest.fixture
def filled(tmp_path: Path) -> tuple[SqliteSpanStore, list[str]]:
    store = SqliteSpanStore(tmp_path / "source.db")
    ids = []
    for n in range(3):
        run_id, records = fabricate_run(
            thread_id=f"t{n}", base_ns=BASE_NS + n * HOUR, fail_hop=2 if n == 1 else None
        )
        for r in records:  # two services; the last run's answer span comes from another library
            r.resource = {"service.name": f"svc{n % 2}", "deployment": n % 2}
            if n == 2 and r.name == "answer" and r.parent_span_id is not None:
                r.scope = "other.lib"
        store.write_spans(records)
        ids.append(run_id)
    store.annotate(ids[0], outcome="success")
    yield store, ids
    store.close()


def test_export_writes_the_otlp_json_encoding(filled, tmp_path: Path) -> None:
    store, ids = filled
    out = tmp_path / "out" / "runs.json"
    assert store.export_otlp_json(out) == ids[::-1]
    doc = json.loads(out.read_text())
    assert list(doc) == ["resourceSpans"]
    resource_spans = doc["resourceSpans"]
    # grouped by resource, then by scope
    resources = [{a["key"]: a["value"] for a in rs["resource"]["attributes"]} for rs in resource_spans]
    assert resources == [
        {"service.name": {"stringValue": "svc0"}, "deployment": {"intValue": "0"}},
        {"service.name": {"stringValue": "svc1"}, "deployment": {"intValue": "1"}},
    ]
    assert [[ss["scope"] for ss in rs["scopeSpans"]] for rs in resource_spans] == [
        [{"name": "tests.store"}, {"name": "other.lib"}],
        [{"name": "tests.store"}],
    ]
    spans = [s for rs in resource_spans for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == 3 * 28
    assert {s["traceId"] for s in spans} == set(ids)  # lowercase hex, not base64
    root = next(s for s in spans if "parentSpanId" not in s and s["traceId"] == ids[1])
    assert len(root["spanId"]) == 16 and root["spanId"] == root["spanId"].lower()
    assert root["kind"] == 1 and root["status"] == {"code": 2, "message": "hop 2 failed"}  # integer enums
    assert root["startTimeUnixNano"] == str(BASE_NS + HOUR)  # lowerCamelCase keys
    child = next(s for s in spans if s.get("parentSpanId") == root["spanId"])
    assert len(child["parentSpanId"]) == 16
    values = {a["key"]: a["value"] for s in spans for a in s["attributes"]}
    assert values["causal.hop.index"] == {"intValue": "3"}
    assert values["causal.hop.sub_query"] == {"stringValue": "Tessaly country"}
    assert {
        a["value"]["doubleValue"]
        for s in spans
        for a in s["attributes"]
        if a["key"].endswith("document.score")
    } == {
        12.5,
        3.25,
        9.0,
        7.75,
        1.5,
    }
    assert values["causal.node.side_effecting"] == {"boolValue": False}
    failed = next(s for s in spans if s.get("events"))
    assert failed["events"][0]["name"] == "exception"


def test_round_trip_keeps_spans_trajectories_and_summaries(
    filled, make_store: Callable[[], SpanStore], tmp_path: Path
) -> None:
    store, ids = filled
    path = tmp_path / "runs.json"
    store.export_otlp_json(path)
    fresh = make_store()
    assert sorted(fresh.import_otlp_json(path)) == sorted(ids)
    for run_id in ids:
        # JSON-list attributes travel as OTLP arrays and read back as lists; the annotation of
        # ids[0] (store state) travels on its root span
        assert fresh.get_spans(run_id) == sorted(
            (r for r in read_otlp_json(path) if r.trace_id == run_id),
            key=lambda r: (r.start_time_ns, r.span_id),
        )
        assert fresh.get_trajectory(run_id) == store.get_trajectory(run_id)
    assert [r.run_id for r in fresh.list_runs()] == [r.run_id for r in store.list_runs()]


def test_export_a_chosen_subset_by_prefix(filled, tmp_path: Path) -> None:
    store, ids = filled
    path = tmp_path / "one.json"
    assert store.export_otlp_json(path, [ids[1][:8]]) == [ids[1]]
    assert {r.trace_id for r in read_otlp_json(path)} == {ids[1]}
    with pytest.raises(KeyError, match="ffffffff"):
        store.export_otlp_json(tmp_path / "none.json", ["ffffffff"])
    assert not (tmp_path / "none.json").exists()


def _sdk_encoded_file(path: Path) -> tuple[str, list[SpanRecord]]:
    """A file made from the OTel SDK's own OTLP encoder (what OTLPSpanExporter sends)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_id = emit_run(provider.get_tracer("sdk.tracer", "1.2.3"))
    spans = exporter.get_finished_spans()
    doc = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64decode(s[key]).hex()
    path.write_text(json.dumps(doc))
    return run_id, [SpanRecord.from_readable(s) for s in spans]


def test_import_reads_what_the_sdk_encoder_writes(store: SpanStore, tmp_path: Path) -> None:
    path = tmp_path / "sdk.json"
    run_id, records = _sdk_encoded_file(path)
    assert import_otlp_json(store, path) == [run_id]
    stored = {s.span_id: s for s in store.get_spans(run_id)}
    assert stored == {r.span_id: r for r in records}
    assert stored[records[-1].span_id].resource["service.name"] == "agent-svc"
    assert store.get_trajectory(run_id) == build_trajectory(records)


def test_import_accepts_json_lines(filled, store: SpanStore, tmp_path: Path) -> None:
    source, ids = filled
    lines = []
    for run_id in ids:
        single = tmp_path / f"{run_id}.json"
        source.export_otlp_json(single, [run_id])
        lines.append(json.dumps(json.loads(single.read_text())))
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n\n")
    assert store.import_otlp_json(path) == ids
    assert len(store.list_runs()) == 3


def _bad_files(tmp_path: Path, good: Path) -> dict[str, tuple[str, str]]:
    text = good.read_text()
    doc = json.loads(text)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]

    def variant(change) -> str:
        copy = json.loads(text)
        change(copy["resourceSpans"][0]["scopeSpans"][0]["spans"])
        return json.dumps(copy)

    assert spans
    return {
        "truncated": (text[: len(text) // 2], "malformed or truncated JSON"),
        "empty": ("  \n", "the file is empty"),
        "not_otlp": (json.dumps({"data": [1, 2]}), "expected an object with a 'resourceSpans' list"),
        "a_list": (json.dumps([doc]), "got list"),
        "bad_span_id": (
            variant(lambda s: s[3].update(spanId="xyz")),
            r"spans\[3\]\.spanId must be a hex string of 16 digits",
        ),
        "base64_trace_id": (  # base64 ids are accepted (tests/foreign); of the wrong size, not
            variant(lambda s: s[0].update(traceId=base64.b64encode(b"\x01" * 15).decode())),
            r"spans\[0\]\.traceId must be a hex string of 32 digits, .* \(read as base64 it is 15 bytes",
        ),
        "zero_trace_id": (variant(lambda s: s[1].update(traceId="0" * 32)), "all zeros"),
        "wrong_type": (variant(lambda s: s[2].update(name=5)), "Failed to parse name field"),
        "bad_lines": (text.strip() + "\n" + "{not json}\n", "neither one JSON document"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "truncated",
        "empty",
        "not_otlp",
        "a_list",
        "bad_span_id",
        "base64_trace_id",
        "zero_trace_id",
        "wrong_type",
        "bad_lines",
    ],
)
def test_an_invalid_file_writes_nothing(filled, store: SpanStore, tmp_path: Path, case: str) -> None:
    source, ids = filled
    good = tmp_path / "good.json"
    source.export_otlp_json(good, ids[:2])
    existing_id, records = fabricate_run(base_ns=BASE_NS - HOUR)
    store.write_spans(records)
    content, message = _bad_files(tmp_path, good)[case]
    bad = tmp_path / f"{case}.json"
    bad.write_text(content)
    with pytest.raises(StoreError, match=message) as info:
        store.import_otlp_json(bad)
    assert str(bad) in str(info.value)
    assert [r.run_id for r in store.list_runs()] == [existing_id]


def test_a_missing_file_is_file_not_found(store: SpanStore, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        store.import_otlp_json(tmp_path / "nowhere.json")


def test_import_accepts_snake_case_keys_and_numeric_integers(store: SpanStore, tmp_path: Path) -> None:
    trace, span = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    doc = {
        "resource_spans": [
            {
                "scope_spans": [
                    {
                        "spans": [
                            {
                                "trace_id": trace,
                                "span_id": span,
                                "parent_span_id": "",
                                "name": "agent",
                                "kind": "SPAN_KIND_SERVER",
                                "start_time_unix_nano": 1700000000000000000,
                                "end_time_unix_nano": "1700000001000000000",
                                "attributes": [{"key": "n", "value": {"int_value": 3}}],
                                "status": {"code": "STATUS_CODE_OK"},
                            }
                        ]
                    }
                ]
            }
        ]
    }
    path = tmp_path / "snake.json"
    path.write_text(json.dumps(doc))
    assert store.import_otlp_json(path) == [trace]
    (record,) = store.get_spans(trace)
    assert (record.kind, record.status_code, record.parent_span_id, record.attributes) == (
        "SERVER",
        "OK",
        None,
        {"n": 3},
    )
    assert record.end_time_ns - record.start_time_ns == 10**9

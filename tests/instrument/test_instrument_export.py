"""OTLP export: settings from arguments / environment, and real HTTP and gRPC receivers on loopback
(the content policy and redaction apply to what leaves; the local store keeps everything)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import pytest
from instrument_graphs import build_loop_graph, loop_input
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from causal_middleware import instrument
from causal_middleware.spans import attributes as A
from causal_middleware.spans.content import is_content_attribute
from causal_middleware.spans.export import build_otlp_exporter, resolve_otlp_settings
from causal_middleware.store.memory import InMemorySpanStore

SECRET = "sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210"


def _attrs(proto_span: Any) -> dict[str, Any]:
    out = {}
    for kv in proto_span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        out[kv.key] = getattr(value, kind) if kind else None
    return out


def _spans(requests: list[bytes]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for body in requests:
        req = trace_service_pb2.ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                found += [(s.name, _attrs(s)) for s in ss.spans]
    return found


class _HttpReceiver:
    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append(self.path)
                receiver.requests.append(body)
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def http_receiver() -> Iterator[_HttpReceiver]:
    receiver = _HttpReceiver()
    yield receiver
    receiver.close()


def _secret_question_run(ig) -> dict[str, Any]:
    inp = loop_input()
    inp["query"] = f"Zorvex Labs founded (key {SECRET}, mail ilka@zorvex.example.com)"
    return ig.invoke(inp, {"metadata": {"causal_reference": "Quarn"}})


# --- settings ---------------------------------------------------------------------------------
def test_no_endpoint_anywhere_means_no_otlp():
    assert resolve_otlp_settings(environ={}) is None


def test_argument_endpoint_gets_the_traces_path_for_http():
    s = resolve_otlp_settings("http://collector:4318", environ={})
    assert (s.endpoint, s.protocol, s.source) == (
        "http://collector:4318/v1/traces",
        "http/protobuf",
        "argument",
    )
    assert resolve_otlp_settings("http://c:6006/v1/traces", environ={}).endpoint == "http://c:6006/v1/traces"
    g = resolve_otlp_settings("http://collector:4317", "grpc", environ={})
    assert (g.endpoint, g.protocol) == ("http://collector:4317", "grpc")


def test_environment_variables_pick_endpoint_and_protocol():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318/"}
    assert resolve_otlp_settings(environ=env).endpoint == "http://base:4318/v1/traces"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://traces:9999/custom"
    s = resolve_otlp_settings(environ=env)
    assert (s.endpoint, s.source) == ("http://traces:9999/custom", "environment")
    grpc_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert resolve_otlp_settings(environ=grpc_env).model_dump(exclude={"headers"}) == {
        "endpoint": "http://base:4317",
        "protocol": "grpc",
        "source": "environment",
    }
    grpc_env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    assert resolve_otlp_settings(environ=grpc_env).protocol == "http/protobuf"
    # the argument beats the environment
    assert resolve_otlp_settings("http://arg:1", "grpc", environ=env).endpoint == "http://arg:1"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("http://x:1", "http/json"), {}, "otlp_protocol must be one of"),
        (
            (None, None),
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
        (("collector:4318", None), {}, "must be a URL"),
        (("  ", None), {}, "non-empty URL"),
    ],
)
def test_bad_otlp_settings_are_named(args, env, message):
    with pytest.raises(ValueError, match=message):
        resolve_otlp_settings(*args, environ=env)


def test_exporter_classes_follow_the_protocol():
    http = build_otlp_exporter(resolve_otlp_settings("http://127.0.0.1:1", environ={}))
    assert isinstance(http, HttpExporter)
    g = build_otlp_exporter(resolve_otlp_settings("http://127.0.0.1:1", "grpc", environ={}))
    assert isinstance(g, GrpcExporter)
    g.shutdown()
    http.shutdown()


# --- real receivers ---------------------------------------------------------------------------
def test_http_export_redacts_secrets_that_the_store_keeps(http_receiver):
    store = InMemorySpanStore()
    ig = instrument(build_loop_graph(), store=store, otlp_endpoint=http_receiver.base_url)
    try:
        assert isinstance(ig._processors[-1], BatchSpanProcessor)
        assert _secret_question_run(ig)["answer"] == "Quarn"
        assert ig.force_flush()
    finally:
        ig.shutdown()
    assert set(http_receiver.paths) == {"/v1/traces"}
    exported = _spans(http_receiver.requests)
    stored = store.get_spans(ig.last_run_id)
    assert sorted(n for n, _ in exported) == sorted(s.name for s in stored)
    exported_text = json.dumps([a for _, a in exported])
    stored_text = json.dumps([s.attributes for s in stored])
    assert SECRET in stored_text  # the local store keeps the full content
    assert SECRET not in exported_text and "[REDACTED_API_KEY]" in exported_text
    assert "ilka@zorvex.example.com" in stored_text and "ilka@zorvex.example.com" not in exported_text
    run = next(a for _, a in exported if a.get(A.CAUSAL_SPAN_TYPE) == "run")
    assert run[A.CAUSAL_RUN_REFERENCE] == "Quarn"
    assert ig.health.total_errors == 0


@pytest.mark.parametrize("mode", ["none", "truncated", "full"])
def test_capture_content_modes_over_http(http_receiver, mode):
    store = InMemorySpanStore()
    ig = instrument(
        build_loop_graph(),
        store=store,
        otlp_endpoint=f"{http_receiver.base_url}/v1/traces",
        capture_content=mode,
        max_attribute_length=16,
    )
    ig.invoke(loop_input())
    ig.shutdown()
    exported = {
        (n, a.get(A.CAUSAL_LANGGRAPH_STEP), a.get(A.CAUSAL_SPAN_TYPE)): a
        for n, a in _spans(http_receiver.requests)
    }
    retrieval = next(a for (_, step, kind), a in exported.items() if kind == "retrieval" and step == 1)
    llm = next(a for (_, step, kind), a in exported.items() if kind == "llm" and step == 2)
    assert retrieval["retrieval.documents.0.document.id"] == "p1"  # ids and scores always leave
    assert retrieval["retrieval.documents.0.document.score"] == 1.0
    assert llm["llm.input_messages.0.message.role"] == "user"
    content = "retrieval.documents.0.document.content"
    if mode == "none":
        assert content not in retrieval and "llm.input_messages.0.message.content" not in llm
        assert all(A.INPUT_VALUE not in a and A.OUTPUT_VALUE not in a for a in exported.values())
    elif mode == "truncated":
        assert retrieval[content] == "Zorvex Labs was "
        assert retrieval[A.CAUSAL_CONTENT_TRUNCATED] is True
        for a in exported.values():
            for key, value in a.items():
                if is_content_attribute(key) and isinstance(value, str):
                    assert len(value) <= 16, key
        assert llm[A.CAUSAL_CHECKPOINT_NS].startswith("read:") and len(llm[A.CAUSAL_CHECKPOINT_NS]) > 16
    else:
        assert retrieval[content] == "Zorvex Labs was founded by Ilka Morrow in 1999."
        assert A.CAUSAL_CONTENT_TRUNCATED not in retrieval
    # the store is never filtered
    stored = store.get_trajectory(ig.last_run_id)
    assert stored.hops[0].documents[0].text == "Zorvex Labs was founded by Ilka Morrow in 1999."


def test_environment_endpoint_is_used_when_no_argument(http_receiver, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", http_receiver.base_url)
    ig = instrument(build_loop_graph(), store=None)
    assert ig.otlp is not None and ig.otlp.source == "environment"
    ig.invoke(loop_input())
    ig.shutdown()
    assert len({n for n, _ in _spans(http_receiver.requests)}) >= 6


def test_a_user_provider_ignores_the_environment(http_receiver, monkeypatch, tracer_provider):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", http_receiver.base_url)
    ig = instrument(build_loop_graph(), store=None, tracer_provider=tracer_provider)
    assert ig.otlp is None
    ig.invoke(loop_input())
    ig.shutdown()
    assert http_receiver.requests == []


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.requests: list[bytes] = []

    def Export(self, request, context):  # noqa: N802 - gRPC service method name
        self.requests.append(request.SerializeToString())
        return trace_service_pb2.ExportTraceServiceResponse()


def test_grpc_export_reaches_a_real_grpc_receiver():
    service = _TraceService()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        ig = instrument(
            build_loop_graph(), store=None, otlp_endpoint=f"http://127.0.0.1:{port}", otlp_protocol="grpc"
        )
        assert ig.otlp.protocol == "grpc"
        ig.invoke(loop_input())
        ig.shutdown()
    finally:
        server.stop(grace=None)
    exported = _spans(service.requests)
    types = sorted({a.get(A.CAUSAL_SPAN_TYPE) for _, a in exported})
    assert types == ["answer", "decision", "hop", "llm", "node", "retrieval", "run"]
    assert sum(1 for _, a in exported if a.get(A.CAUSAL_SPAN_TYPE) == "hop") == 3

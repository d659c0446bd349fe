"""Loopback fixtures and measurements shared by ``python -m benchmarks.reliability`` and the
regression tests in ``tests/reliability_store``: a black-hole TCP server, a slow OTLP/HTTP
collector, a process holding a store's write lock, concurrent fresh-store opens, and exit-time
and invoke-latency measurements in child processes. Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"


# --- servers -------------------------------------------------------------------------------------
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def black_hole() -> Iterator[int]:
    """A loopback port that accepts connections and never answers; yields the port."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((LOOPBACK, 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(1)
        for conn in held:
            conn.close()
        server.close()


class SlowCollector:
    """An OTLP/HTTP receiver on 127.0.0.1 that waits ``delay_s`` before answering each request
    and counts the spans it received."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.spans = 0
        self.requests = 0
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceRequest,
                    ExportTraceServiceResponse,
                )

                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                n = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
                time.sleep(collector.delay_s)
                with collector._lock:
                    collector.spans += n
                    collector.requests += 1
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.url = f"http://{LOOPBACK}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> SlowCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# --- a tiny graph ----------------------------------------------------------------------------------
def tiny_graph() -> Any:
    """A three-node LangGraph graph (retrieve -> read -> answer), no model calls."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        question: str
        docs: list[str]
        answer: str

    def retrieve(state: State) -> dict[str, Any]:
        return {"docs": [f"doc about {state.get('question', '')}"]}

    def read(state: State) -> dict[str, Any]:
        return {"docs": [*state.get("docs", []), "note"]}

    def answer(state: State) -> dict[str, Any]:
        return {"answer": "Quarn"}

    g = StateGraph(State)
    g.add_node("retrieve", retrieve)
    g.add_node("read", read)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "read")
    g.add_edge("read", "answer")
    g.add_edge("answer", END)
    return g.compile()


# --- concurrent start-up -------------------------------------------------------------------------
def _open_worker(args: tuple[str, int, Any, Any]) -> list[str]:
    folder, rounds, barrier, _ = args
    from causal_middleware.store.sqlite import SqliteSpanStore

    errors = []
    for i in range(rounds):
        barrier.wait()
        try:
            SqliteSpanStore(os.path.join(folder, f"fresh{i}.db")).close()
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    return errors


def concurrent_fresh_opens(n_procs: int = 4, n_rounds: int = 30) -> dict[str, Any]:
    """``n_procs`` processes open the same new store path at the same moment, ``n_rounds`` times."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder, ctx.Manager() as manager:
        barrier = manager.Barrier(n_procs)
        with ctx.Pool(n_procs) as pool:
            results = pool.map(_open_worker, [(folder, n_rounds, barrier, i) for i in range(n_procs)])
    errors = [e for r in results for e in r]
    return {
        "processes": n_procs,
        "opens_each": n_rounds,
        "opens": n_procs * n_rounds,
        "failures": len(errors),
        "first_error": errors[0] if errors else None,
    }


# --- bounded exit ----------------------------------------------------------------------------------
_EXIT_CHILD = r"""
import atexit, json, os, sys, time
marks = {}
def report():
    from causal_middleware.spans.health import health
    marks["exited_at"] = time.time()
    marks["dropped"] = health.dropped
    sys.stdout.write(json.dumps(marks) + "\n"); sys.stdout.flush()
atexit.register(report)  # registered first, so it runs after the tracer provider's shutdown
sys.path.insert(0, os.environ["HARNESS_ROOT"])
from benchmarks.reliability.harness import tiny_graph
from causal_middleware import instrument
kwargs = json.loads(os.environ["HARNESS_KWARGS"])
ig = instrument(tiny_graph(), **kwargs)
for i in range(int(os.environ["HARNESS_RUNS"])):
    ig.invoke({"question": f"q{i}"})
marks["runs_done_at"] = time.time()
"""


def measure_exit(
    endpoint: str, *, runs: int = 20, protocol: str = "http/protobuf", **kwargs: Any
) -> dict[str, Any]:
    """Run ``runs`` invokes in a child process exporting to ``endpoint``, then let it exit; how
    long the exit took (from the last invoke to the end of the process) and what was counted."""
    env = {
        **os.environ,
        "HARNESS_ROOT": str(ROOT),
        "HARNESS_RUNS": str(runs),
        "HARNESS_KWARGS": json.dumps(
            {"store": None, "otlp_endpoint": endpoint, "otlp_protocol": protocol, **kwargs}
        ),
    }
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        env.pop(var, None)
    started = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT_CHILD], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    ended = time.time()
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"exit child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    marks = json.loads(lines[-1])
    return {
        "exit_s": round(ended - marks["runs_done_at"], 3),
        "shutdown_s": round(marks["exited_at"] - marks["runs_done_at"], 3),
        "total_s": round(ended - started, 3),
        "dropped": marks["dropped"],
    }


# --- span loss under a slow collector ---------------------------------------------------------------
def slow_collector_loss(
    n_spans: int = 3000, delay_s: float = 0.5, *, queue: int = 512, batch: int = 128
) -> dict[str, Any]:
    """Emit ``n_spans`` spans as fast as possible into a ``BoundedBatchSpanProcessor`` exporting to a
    collector that answers after ``delay_s``; spans received vs spans counted as dropped."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider

    from causal_middleware.spans.export import BoundedBatchSpanProcessor, FailOpenExporter
    from causal_middleware.spans.health import health

    before = health.dropped
    with SlowCollector(delay_s) as collector:
        exporter = FailOpenExporter(
            OTLPSpanExporter(endpoint=collector.url + "/v1/traces", timeout=30), "export.otlp"
        )
        processor = BoundedBatchSpanProcessor(
            exporter,
            max_queue_size=queue,
            max_export_batch_size=batch,
            schedule_delay_millis=20,
            shutdown_timeout=60,
        )
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("reliability")
        t0 = time.perf_counter()
        for i in range(n_spans):
            with tracer.start_as_current_span(f"s{i}"):
                pass
        emit_s = time.perf_counter() - t0
        provider.shutdown()
        received = collector.spans
    after = health.dropped
    counted = {
        k: v - before.get(k, 0) for k, v in after.items() if k.startswith("otlp.") and v - before.get(k, 0)
    }
    lost = n_spans - received
    return {
        "spans": n_spans,
        "collector_delay_s": delay_s,
        "received": received,
        "lost": lost,
        "counted_dropped": sum(counted.values()),
        "counted_by_reason": counted,
        "uncounted": max(0, lost - sum(counted.values())),
        "emit_s": round(emit_s, 3),
    }


# --- a locked store --------------------------------------------------------------------------------
_LOCK_CHILD = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
sys.stdout.write("locked\n"); sys.stdout.flush()
sys.stdin.read()  # hold the write lock until the parent closes stdin
conn.execute("ROLLBACK")
"""


@contextlib.contextmanager
def write_lock_held(path: str | os.PathLike[str]) -> Iterator[None]:
    """Another process holds the SQLite write lock of ``path`` while the block runs."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOCK_CHILD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "locked":
            raise RuntimeError("the lock-holding process did not take the lock")
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def invoke_latency(*, runs: int = 60, locked: bool) -> dict[str, Any]:
    """p50/p99 of ``invoke`` with the default SQLite store, with another process holding its
    write lock (``locked``) or not; then whether every run was written once the lock went away."""
    from causal_middleware import instrument

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "runs.db")
        ig = instrument(tiny_graph(), store=path, otlp_endpoint=None, tracer_provider=None)
        try:
            for i in range(5):  # warm up
                ig.invoke({"question": f"warm{i}"})
            assert ig.flush(10)
            times: list[float] = []
            ids: list[str] = []
            lock = write_lock_held(path) if locked else contextlib.nullcontext()
            with lock:
                for i in range(runs):
                    t0 = time.perf_counter()
                    ig.invoke({"question": f"q{i}"})
                    times.append(time.perf_counter() - t0)
                    ids.append(str(ig.last_run_id))
            flushed = ig.flush(30)
            stored = sum(1 for run_id in ids if _has_run(path, run_id))
        finally:
            ig.shutdown()
    return {
        "runs": runs,
        "p50_ms": round(statistics.median(times) * 1000, 3),
        "p99_ms": round(_percentile(times, 0.99) * 1000, 3),
        "max_ms": round(max(times) * 1000, 3),
        "written_after_unlock": stored,
        "flushed": flushed,
    }


def _has_run(path: str, run_id: str) -> bool:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

"""``instrument(graph)``: one call that turns a compiled LangGraph graph into a traced one.

Each ``invoke``/``ainvoke``/``stream``/``astream`` call is one run = one OTel trace, sent to the
local span store (written by a background writer, readable as soon as the call returns: the
store's reads wait for the runs still queued) and, when configured, to an OTLP endpoint (content
policy + redaction applied there only). The user's global tracer provider is never touched.
Shutting down (``shutdown()``, the ``with`` block's end, or process exit) takes at most
``shutdown_timeout`` seconds; what is still pending then is dropped and counted in ``health``.
"""

from __future__ import annotations

import contextvars
import copy
import os
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.utils.uuid import uuid7
from langgraph.pregel import Pregel
from opentelemetry.sdk.environment_variables import OTEL_TRACES_SAMPLER
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Sampler

from causal_middleware.protocols import FailureSink
from causal_middleware.spans.content import (
    CaptureContent,
    Redactor,
    default_redactor,
    validate_content_settings,
)
from causal_middleware.spans.export import (
    DEFAULT_SHUTDOWN_TIMEOUT_S,
    OtlpSettings,
    RunSpanProcessor,
    ShutdownBudget,
    build_otlp_exporter,
    build_otlp_processor,
    check_shutdown_timeout,
    resolve_otlp_settings,
)
from causal_middleware.spans.health import Health, health
from causal_middleware.store.base import SpanStore

from .graph_info import analyze_graph
from .handler import CausalCallbackHandler, RunRef
from .node_wrapper import wrap_graph

DEFAULT_SERVICE_NAME = "causal-middleware"
# Our own provider keeps whole prompts and long retrieval lists: the SDK defaults (128 attributes,
# no length limit) would silently drop documents past the ~30th. Content limits apply on export.
SPAN_LIMITS = SpanLimits(max_span_attributes=100_000, max_event_attributes=1_000, max_attribute_length=None)


def _open_store(store: Any) -> tuple[SpanStore | None, bool]:
    """(store, whether we opened it and so close it on shutdown)."""
    if store is None:
        return None, False
    if isinstance(store, SpanStore):
        return store, False
    if isinstance(store, str | os.PathLike):
        from causal_middleware.store.open import open_store  # a postgresql:// URL or a SQLite path

        return open_store(store), True
    raise TypeError(f"store must be a path, a SpanStore or None, got {type(store).__name__}")


def _resource() -> Resource:
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "unknown_service")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))
    return resource


def _own_sampler() -> Sampler | None:
    """Our provider's sampler: ``ALWAYS_ON``, which samples our spans exactly as the SDK's default
    ``ParentBased(ALWAYS_ON)`` does (run spans start new traces, every other span has a sampled
    parent of ours) for half its cost; None (the SDK reads it) when ``OTEL_TRACES_SAMPLER`` names one."""
    return None if os.environ.get(OTEL_TRACES_SAMPLER) else ALWAYS_ON


class InstrumentedGraph:
    """A compiled graph whose runs are traced. Same ``invoke``/``ainvoke``/``stream``/``astream``
    signatures and results as the graph; every other attribute (``get_state``,
    ``get_state_history``, ``update_state``, ...) is the wrapped graph's.

    Pass ``config={"metadata": {"causal_reference": "gold answer", "causal_labels": {...}}}`` to
    record a run's reference answer and labels on its run span.
    """

    def __init__(
        self,
        original: Pregel[Any, Any, Any, Any],
        wrapped: Pregel[Any, Any, Any, Any],
        handler: CausalCallbackHandler,
        tracer_provider: TracerProvider,
        *,
        owns_provider: bool,
        store: SpanStore | None,
        processors: list[SpanProcessor],
        otlp: OtlpSettings | None,
        shutdown_budget: ShutdownBudget | None = None,
    ) -> None:
        self._original = original
        self._graph: Any = wrapped  # Any: Pregel's overloads do not type a plain pass-through
        self._handler = handler
        self._provider = tracer_provider
        self._owns_provider = owns_provider
        self._store = store
        self._processors = processors
        self._otlp = otlp
        self._budget = shutdown_budget or ShutdownBudget()
        self._current: contextvars.ContextVar[RunRef | None] = contextvars.ContextVar(
            f"causal_run_{id(self)}", default=None
        )
        self._last: RunRef | None = None
        self._closed = False
        self._close_lock = threading.Lock()
        self._on_failure: FailureSink | None = None
        # node -> state key holding its retrieved documents (instrument(state_keys=...))
        self.state_keys: dict[str, str] = {}

    # --- the graph's run methods ---------------------------------------------------------
    def _prepare(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict (RunnableConfig) or None, got {type(config).__name__}")
        cfg: dict[str, Any] = dict(config or {})
        metadata = cfg.get("metadata") or {}
        labels = metadata.get("causal_labels")
        if labels is not None and not isinstance(labels, Mapping):
            raise ValueError(
                f"config['metadata']['causal_labels'] must be a dict, got {type(labels).__name__}"
            )
        run_id = cfg.get("run_id")
        if run_id is None:
            run_id = uuid7()  # what LangChain gives its own runs: no os.urandom call (it releases the GIL)
        elif not isinstance(run_id, uuid.UUID):
            raise ValueError(f"config['run_id'] must be a uuid.UUID, got {run_id!r}")
        cfg["run_id"] = run_id
        callbacks = cfg.get("callbacks")
        if callbacks is None:
            cfg["callbacks"] = [self._handler]
        elif isinstance(callbacks, list):
            cfg["callbacks"] = callbacks if self._handler in callbacks else [*callbacks, self._handler]
        elif isinstance(callbacks, BaseCallbackManager):
            manager = callbacks.copy()
            if self._handler not in manager.handlers:
                manager.add_handler(self._handler, inherit=True)
            cfg["callbacks"] = manager
        else:
            raise TypeError(
                f"config['callbacks'] must be a list or a callback manager, got {type(callbacks).__name__}"
            )
        ref = RunRef()
        self._handler.expect_run(run_id, ref)
        self._current.set(ref)
        self._last = ref
        return cfg

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        cfg = self._prepare(config)
        ref = self._watched(cfg)
        try:
            return self._graph.invoke(input, cfg, **kwargs)
        finally:
            self._after_run(ref)

    async def ainvoke(self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        cfg = self._prepare(config)
        ref = self._watched(cfg)
        try:
            return await self._graph.ainvoke(input, cfg, **kwargs)
        finally:
            self._after_run(ref)

    def stream(self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Iterator[Any]:
        cfg = self._prepare(config)
        chunks = self._graph.stream(input, cfg, **kwargs)
        return chunks if self._on_failure is None else self._stream_then_submit(chunks, self._watched(cfg))

    def astream(
        self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        cfg = self._prepare(config)
        chunks = self._graph.astream(input, cfg, **kwargs)
        return chunks if self._on_failure is None else self._astream_then_submit(chunks, self._watched(cfg))

    # --- on_failure: hand finished runs to a background judge/repair queue ------------------
    @property
    def on_failure(self) -> FailureSink | None:
        """Where finished runs go to be judged and repaired (a
        :class:`~causal_middleware.protocols.FailureSink`, e.g.
        ``causal_middleware.repair.trigger.RepairQueue``), or None."""
        return self._on_failure

    @on_failure.setter
    def on_failure(self, target: FailureSink | None) -> None:
        if target is not None and not _is_sink(target):
            raise TypeError(f"on_failure needs an object with submit(run_id), got {type(target).__name__}")
        self._on_failure = target

    def _watched(self, cfg: Mapping[str, Any]) -> RunRef | None:
        """The run to hand to ``on_failure`` when it ends: the user's own runs, not forks (a fork
        carries ``causal_lineage``; repairs fork the graph and must not judge their own forks)."""
        if self._on_failure is None or (cfg.get("metadata") or {}).get("causal_lineage") is not None:
            return None
        return self._current.get()

    def _after_run(self, ref: RunRef | None) -> None:
        # Only enqueue here: judging and repair run in the queue's worker, never in this thread.
        target = self._on_failure
        if target is None or ref is None or ref.run_id is None:
            return
        try:
            target.submit(ref.run_id)
        except Exception as exc:  # fail-open: the user's run has already finished
            health.record_error("instrument.on_failure", exc)

    def _stream_then_submit(self, chunks: Iterator[Any], ref: RunRef | None) -> Iterator[Any]:
        try:
            yield from chunks
        finally:
            self._after_run(ref)

    async def _astream_then_submit(
        self, chunks: AsyncIterator[Any], ref: RunRef | None
    ) -> AsyncIterator[Any]:
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            self._after_run(ref)

    def with_config(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> InstrumentedGraph:
        """The graph with default config bound (``Pregel.with_config``), still traced: the copy
        shares this one's handler, provider, store and ``last_run_id``."""
        clone = copy.copy(self)
        clone._graph = self._graph.with_config(config, **kwargs)
        return clone

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["_graph"], name)

    def __repr__(self) -> str:
        return f"InstrumentedGraph({self._handler.info.name!r}, store={type(self._store).__name__ if self._store else None})"

    # --- what the instrumentation adds ---------------------------------------------------
    @property
    def last_run_id(self) -> str | None:
        """Run id (trace id, 32 hex) of the last run started by a call in this thread / task;
        falls back to the last run started by this graph anywhere when this context started none."""
        ref = self._current.get() or self._last
        return ref.run_id if ref is not None else None

    @property
    def store(self) -> SpanStore | None:
        return self._store

    @property
    def tracer_provider(self) -> TracerProvider:
        return self._provider

    @property
    def handler(self) -> CausalCallbackHandler:
        return self._handler

    @property
    def graph(self) -> Pregel[Any, Any, Any, Any]:
        """The wrapped compiled graph (shares the original's checkpointer)."""
        graph: Pregel[Any, Any, Any, Any] = self._graph
        return graph

    @property
    def original_graph(self) -> Pregel[Any, Any, Any, Any]:
        return self._original

    @property
    def otlp(self) -> OtlpSettings | None:
        """Where spans are exported over OTLP, or None."""
        return self._otlp

    @property
    def health(self) -> Health:
        """The process-wide fail-open counters (errors swallowed by instrumentation, export, store)."""
        return health

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` seconds) until the runs finished so far are in the store.
        Not needed to read them back (the store's reads wait for their own run); useful before
        another process reads the file."""
        ok = True
        for processor in self._processors:
            if isinstance(processor, RunSpanProcessor):
                ok = processor.flush(timeout) and ok
        return ok

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Push buffered spans to the store and the OTLP endpoint now."""
        ok = True
        for processor in self._processors:
            try:
                ok = bool(processor.force_flush(timeout_millis)) and ok
            except Exception as exc:
                health.record_error("instrument.force_flush", exc)
                ok = False
        return ok

    @property
    def shutdown_timeout(self) -> float:
        return self._budget.seconds

    def shutdown(self) -> None:
        """Flush and stop exporting, within ``shutdown_timeout`` seconds in all (what is left then
        is dropped and counted in ``health.dropped``); closes a store opened from a path. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        drain = getattr(self._on_failure, "drain", None)  # a durable enqueuer: runs still to enqueue
        if callable(drain):
            try:
                drain(self._budget.remaining())
            except Exception as exc:
                health.record_error("instrument.shutdown", exc)
        try:
            if self._owns_provider:
                self._provider.shutdown()
            else:
                for processor in self._processors:
                    processor.shutdown()
        except Exception as exc:
            health.record_error("instrument.shutdown", exc)

    def __enter__(self) -> InstrumentedGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def instrument(
    graph: Pregel[Any, Any, Any, Any],
    *,
    store: SpanStore | str | os.PathLike[str] | None = "causal_runs.db",
    hop_nodes: Iterable[str] | None = None,
    side_effecting: Iterable[str] = (),
    otlp_endpoint: str | None = None,
    otlp_protocol: str | None = None,
    tracer_provider: TracerProvider | None = None,
    capture_content: CaptureContent = "full",
    max_attribute_length: int = 4096,
    redact: Redactor | None = default_redactor,
    answer_nodes: Iterable[str] | None = None,
    graph_name: str | None = None,
    on_failure: FailureSink | Callable[[InstrumentedGraph], FailureSink] | Literal["enqueue"] | None = None,
    state_keys: Mapping[str, str] | None = None,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT_S,
) -> InstrumentedGraph:
    """Trace every run of a compiled LangGraph graph.

    Args:
        graph: a compiled graph (``StateGraph(...).compile()``, ``create_agent(...)``).
        store: where runs are kept: a SQLite path (default ``causal_runs.db``), a ``postgresql://``
            URL (the shared Postgres store, ``[postgres]`` extra), a ``SpanStore``, or None.
        hop_nodes: nodes whose every execution starts a hop; default: inferred (docs/instrumentation.md).
        side_effecting: node or tool names that act on the world.
        otlp_endpoint, otlp_protocol: OTLP destination (``"http/protobuf"`` or ``"grpc"``); default
            from the ``OTEL_EXPORTER_OTLP_*`` environment variables; none when nothing names one.
        tracer_provider: an SDK ``TracerProvider`` to add our processors to (its own exporters keep
            working, the OTLP environment variables are then ignored); default: our own provider.
        capture_content: ``"full"``, ``"truncated"`` (to ``max_attribute_length``) or ``"none"``: what
            OTLP export carries; the local store always keeps everything.
        redact: ``str -> str`` applied to every exported string attribute; None disables.
        answer_nodes: nodes whose update is the graph's answer; default: inferred.
        graph_name: run span name; default the graph's name.
        on_failure: where finished runs are handed to be judged and, when failed, repaired in the
            background: a :class:`~causal_middleware.protocols.FailureSink` (``submit(run_id)``,
            never blocking: a ``causal_middleware.repair.trigger.RepairQueue``), or a callable taking the instrumented graph
            and returning one (so the queue's repairs can fork this very graph), or ``"enqueue"``:
            only enqueue finished runs in the store's durable queue for ``causal-mw worker``
            processes (needs a ``postgresql://`` store). Also settable later as
            ``instrumented.on_failure``.
        state_keys: node -> the state key that holds the node's retrieved documents, for nodes
            whose update holds them under several keys (diagnosis says when it needs one).
        shutdown_timeout: the most seconds ``shutdown()`` (and so process exit) spends writing
            pending runs to the store and exporting pending spans, all processors together
            (default 1.5); what is left then is dropped and counted in ``health.dropped``. Each OTLP
            export waits at most ``OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT`` (default 10 s) in the
            background, never in the agent's thread.
    """
    if isinstance(graph, InstrumentedGraph):
        raise ValueError("graph is already instrumented; pass the original compiled graph")
    if not isinstance(graph, Pregel):
        hint = " (call .compile() first)" if hasattr(graph, "compile") else ""
        raise TypeError(f"instrument() needs a compiled LangGraph graph, got {type(graph).__name__}{hint}")
    if tracer_provider is not None and not isinstance(tracer_provider, TracerProvider):
        raise TypeError(
            "tracer_provider must be an opentelemetry.sdk.trace.TracerProvider (processors are added to it), "
            f"got {type(tracer_provider).__name__}"
        )
    validate_content_settings(capture_content, max_attribute_length, redact)
    budget = ShutdownBudget(check_shutdown_timeout(shutdown_timeout))
    keys = _check_state_keys(state_keys, graph)
    info = analyze_graph(
        graph,
        hop_nodes=hop_nodes,
        answer_nodes=answer_nodes,
        side_effecting=side_effecting,
        graph_name=graph_name,
    )
    if tracer_provider is None:
        otlp = resolve_otlp_settings(otlp_endpoint, otlp_protocol)
    else:
        otlp = resolve_otlp_settings(otlp_endpoint, otlp_protocol, environ={}) if otlp_endpoint else None

    span_store, owns_store = _open_store(store)
    owns_provider = tracer_provider is None
    provider = tracer_provider or TracerProvider(
        resource=_resource(), span_limits=SPAN_LIMITS, sampler=_own_sampler()
    )
    processors: list[SpanProcessor] = []
    if span_store is not None:
        processors.append(RunSpanProcessor(span_store, shutdown_exporter=owns_store, shutdown_timeout=budget))
    if otlp is not None:
        processors.append(
            build_otlp_processor(
                build_otlp_exporter(otlp),
                capture_content=capture_content,
                max_attribute_length=max_attribute_length,
                redact=redact,
                shutdown_timeout=budget,
            )
        )
    for processor in processors:
        provider.add_span_processor(processor)

    handler = CausalCallbackHandler(provider, graph_info=info, own_provider=owns_provider)
    wrapped = wrap_graph(graph, handler.node_span)
    instrumented = InstrumentedGraph(
        graph,
        wrapped,
        handler,
        provider,
        owns_provider=owns_provider,
        store=span_store,
        processors=processors,
        otlp=otlp,
        shutdown_budget=budget,
    )
    instrumented.state_keys = keys
    instrumented.on_failure = _failure_sink(on_failure, instrumented, span_store)
    return instrumented


def _is_sink(target: object) -> bool:
    return isinstance(target, FailureSink) and callable(target.submit)


def _failure_sink(
    on_failure: FailureSink | Callable[[InstrumentedGraph], FailureSink] | str | None,
    instrumented: InstrumentedGraph,
    store: SpanStore | None,
) -> FailureSink | None:
    """The sink ``instrument(on_failure=...)`` names: itself, what a factory builds for this graph,
    or for ``"enqueue"`` the store's durable queue (repaired by ``causal-mw worker``)."""
    if on_failure is None:
        return None
    if isinstance(on_failure, FailureSink) and callable(on_failure.submit):
        return on_failure
    if on_failure == "enqueue":
        from causal_middleware.repair.enqueue import DurableEnqueuer

        return DurableEnqueuer(store)
    if callable(on_failure):
        return on_failure(instrumented)
    raise TypeError(f"on_failure needs an object with submit(run_id), got {type(on_failure).__name__}")


def _check_state_keys(
    state_keys: Mapping[str, str] | None, graph: Pregel[Any, Any, Any, Any]
) -> dict[str, str]:
    if state_keys is None:
        return {}
    if not isinstance(state_keys, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in state_keys.items()
    ):
        raise TypeError("state_keys must map node names to state key names (both strings)")
    nodes = set(getattr(graph, "nodes", {}) or {})
    unknown = sorted(set(state_keys) - nodes)
    if nodes and unknown:
        raise ValueError(f"state_keys names unknown node(s) {unknown}; the graph's nodes are {sorted(nodes)}")
    return dict(state_keys)

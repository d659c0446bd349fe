"""A frozen fork's leading frozen supersteps written without LangGraph's loop (``Replayer.frozen_direct``).

A ``frozen`` fork runs LangGraph's loop over every suffix node, frozen ones included: each frozen
superstep pays the loop's task preparation and its checkpoint writes on background threads, only
for the node override to return the recorded output. Here, as long as the next superstep is one
root-graph task that the fork's :class:`SuffixOverride` would freeze, its recorded output is
written with ``update_state(..., as_node=..., task_id=...)`` instead (a real checkpoint, the
channels' reducers, the node's writers and routers run as in the loop, the task id the loop would
have used), and the instrumentation's handler is given the callbacks the loop would have given it
(the node's start with its input and metadata as LangGraph prepares them, the routers' runs
captured from ``update_state``, the node's end), so the fork's trace holds the same spans. From the
first superstep that is not such a task (a live node, a parallel or ``Send`` superstep, a node with
no record at its step, pending writes) the rest runs in LangGraph's loop under the same run span.

Measured on the perf benchmark's chain graph, a frozen superstep written this way costs slightly
more CPU than one run in the loop (0.48-0.52 ms against 0.43-0.45): the path saves the loop's
thread hand-offs (wall time under load), not work, which is why it is opt-in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.utils.uuid import uuid7

try:  # langgraph internals (how the loop prepares a task); without them frozen forks use the loop
    from langgraph.pregel._algo import prepare_next_tasks
    from langgraph.pregel._checkpoint import channels_from_checkpoint
except ImportError:  # pragma: no cover - private names in langgraph
    prepare_next_tasks = channels_from_checkpoint = None  # type: ignore[assignment]

from causal_middleware.spans import attributes as A

from ..handler import CausalCallbackHandler, RunRef
from .frozen import SuffixOverride

__all__ = ["AVAILABLE", "FrozenRun", "arun_frozen", "run_frozen"]

AVAILABLE = prepare_next_tasks is not None and channels_from_checkpoint is not None

_PULL = "__pregel_pull"


class _Capture(BaseCallbackHandler):
    """Records the chain callbacks of ``update_state``'s writer run (the node's routers)."""

    run_inline = True
    raise_error = True

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, dict[str, Any]]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.events.append(("start", {"serialized": serialized, "inputs": inputs, **kwargs}))

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.events.append(("end", {"outputs": outputs, **kwargs}))

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        self.events.append(("error", {"error": error, **kwargs}))


class FrozenRun:
    """What :func:`run_frozen` did: the run id (None when the config named it), the supersteps it
    applied, the error it ended on."""

    def __init__(self, run_id: str | None, applied: int, error: Exception | None) -> None:
        self.run_id = run_id
        self.applied = applied
        self.error = error


def _prepare(graph: Any, saved: Any) -> tuple[Any, dict[str, Any]]:
    """``saved`` (a checkpoint tuple) and the tasks LangGraph runs next from it, as the loop
    prepares them (input, triggers, path, task id)."""
    if saved is None:
        return None, {}
    step = _step(saved)
    channels, managed = channels_from_checkpoint(
        graph.channels, saved.checkpoint, saver=graph.checkpointer, config=saved.config
    )
    tasks = prepare_next_tasks(
        saved.checkpoint,
        saved.pending_writes or [],
        graph.nodes,
        channels,
        managed,
        saved.config,
        step,
        step + 1,
        for_execution=True,
        store=graph.store,
        checkpointer=graph.checkpointer,
        manager=None,
    )
    return saved, tasks


def _next_tasks(graph: Any, config: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    return _prepare(graph, graph.checkpointer.get_tuple(config))


async def _anext_tasks(graph: Any, config: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    return _prepare(graph, await graph.checkpointer.aget_tuple(config))


def _single_pull(saved: Any, tasks: Mapping[str, Any]) -> Any | None:
    """The superstep's one task when it is a plain pulled root-graph task with nothing pending."""
    if saved is None or saved.pending_writes or len(tasks) != 1:
        return None
    task = next(iter(tasks.values()))
    return task if task.path and task.path[0] == _PULL else None


def _node_metadata(base: Mapping[str, Any], task: Any, step: int) -> dict[str, Any]:
    ns = f"{task.name}:{task.id}"
    return {
        **base,
        "langgraph_step": step,
        "langgraph_node": task.name,
        "langgraph_triggers": tuple(task.triggers),
        "langgraph_path": tuple(task.path[:2]),
        "langgraph_checkpoint_ns": ns,
        "checkpoint_ns": ns,
    }


def _replay_routers(
    handler: CausalCallbackHandler, capture: _Capture, node_run: UUID, metadata: Mapping[str, Any]
) -> None:
    """Give the handler the writer run's chain callbacks as the loop nests them: the writers'
    sequence itself is LangGraph's node run (``node_run``), its children hang under it."""
    roots = {
        kw["run_id"] for kind, kw in capture.events if kind == "start" and kw.get("parent_run_id") is None
    }
    for kind, kw in capture.events:
        run_id = kw["run_id"]
        if run_id in roots:
            continue
        parent = kw.get("parent_run_id")
        parent = node_run if parent in roots else parent
        if kind == "start":
            handler.on_chain_start(
                kw["serialized"],
                kw["inputs"],
                run_id=run_id,
                parent_run_id=parent,
                tags=kw.get("tags"),
                metadata={**(kw.get("metadata") or {}), **metadata},
                name=kw.get("name"),
            )
        elif kind == "end":
            handler.on_chain_end(kw["outputs"], run_id=run_id, parent_run_id=parent)
        else:
            handler.on_chain_error(kw["error"], run_id=run_id, parent_run_id=parent)


class _Prelude:
    """One frozen fork's run span and the frozen supersteps written under it (shared by the sync
    and async drivers below, which differ only in how they call LangGraph)."""

    def __init__(
        self,
        handler: CausalCallbackHandler,
        hook: SuffixOverride,
        config: Mapping[str, Any],
        graph_name: str,
        on_update: Callable[[str, str, Any], None],
    ) -> None:
        self.handler, self.hook, self.on_update = handler, hook, on_update
        self.configurable = dict(config["configurable"])
        self.config = config
        self.metadata: dict[str, Any] = {
            **config.get("metadata", {}),
            **{k: v for k, v in self.configurable.items() if k in ("thread_id", "checkpoint_id")},
            "ls_integration": "langgraph",
        }
        self.point: dict[str, Any] = {
            "configurable": {k: self.configurable[k] for k in _ADDRESS if k in self.configurable}
        }
        self.applied = 0
        # a config the instrumented graph prepared (``InstrumentedGraph._prepare``) names the run
        # and has the handler expect it, so ``last_run_id`` names the fork as after ``invoke``
        prepared = config.get("run_id")
        self.root: UUID = prepared if isinstance(prepared, UUID) else uuid7()
        self.ref: RunRef | None = None if isinstance(prepared, UUID) else RunRef()
        routers = handler.info.routers
        self._routed = None if routers is None else frozenset(n for n, _ in routers)
        if self.ref is not None:
            handler.expect_run(self.root, self.ref)
        handler.on_chain_start(
            None, None, run_id=self.root, parent_run_id=None, tags=[], metadata=self.metadata, name=graph_name
        )

    def frozen_task(self, saved: Any, tasks: Mapping[str, Any]) -> Any | None:
        """The next superstep's task when it is one the override freezes; None: run the loop."""
        task = _single_pull(saved, tasks)
        if task is None or not self.hook.would_freeze(task.name, _step(saved)):
            return None
        return task

    def begin(self, saved: Any, task: Any) -> tuple[UUID, dict[str, Any], Any, _Capture | None]:
        """The node's start as the loop reports it, and the recorded output the override returns."""
        step = _step(saved)
        node_md = _node_metadata(self.metadata, task, step)
        node_run = uuid7()
        self.handler.on_chain_start(
            None,
            task.input,
            run_id=node_run,
            parent_run_id=self.root,
            tags=[f"graph:step:{step}"],
            metadata=node_md,
            name=task.name,
        )
        span = self.handler.node_span(node_run)
        if span is not None:
            span.set_attribute(A.CAUSAL_CHECKPOINT_ID, str(saved.config["configurable"]["checkpoint_id"]))
        _, output = self.hook(task.name, task.input, {"metadata": node_md})
        if span is not None:
            span.set_attribute(A.CAUSAL_NODE_FROZEN, True)
        routed = self._routed is None or task.name in self._routed
        return node_run, node_md, output, _Capture() if routed else None

    def end(
        self,
        node: str,
        node_run: UUID,
        node_md: Mapping[str, Any],
        output: Any,
        capture: _Capture | None,
        written: Any,
    ) -> dict[str, Any]:
        if capture is not None:
            _replay_routers(self.handler, capture, node_run, node_md)
        self.handler.on_chain_end(output, run_id=node_run, parent_run_id=self.root)
        self.point = dict(written)
        self.on_update(str(self.point["configurable"]["checkpoint_id"]), node, output)
        self.applied += 1
        return self.point

    def failed(self, node_run: UUID, exc: BaseException) -> None:
        self.handler.on_chain_error(exc, run_id=node_run, parent_run_id=self.root)

    def live_config(self) -> dict[str, Any]:
        """The loop's config for the rest: the fork's, from the checkpoint reached, under the run span."""
        return {
            **{k: v for k, v in self.config.items() if k not in ("run_id", "callbacks")},
            "configurable": {**self.configurable, **self.point["configurable"]},
            "callbacks": CallbackManager(
                handlers=[self.handler], inheritable_handlers=[self.handler], parent_run_id=self.root
            ),
        }

    def finish(self, output: Any, error: Exception | None) -> FrozenRun:
        if error is None:
            self.handler.on_chain_end(output, run_id=self.root)
        else:
            self.handler.on_chain_error(error, run_id=self.root)
        return FrozenRun(self.ref.run_id if self.ref is not None else None, self.applied, error)


def _step(saved: Any) -> int:
    return int(saved.metadata.get("step", -1)) + 1


def _with_capture(config: Mapping[str, Any], capture: _Capture | None) -> dict[str, Any]:
    return {**config, "callbacks": [capture]} if capture is not None else dict(config)


def run_frozen(
    graph: Any,
    handler: CausalCallbackHandler,
    hook: SuffixOverride,
    config: Mapping[str, Any],
    *,
    graph_name: str,
    on_update: Callable[[str, str, Any], None],
) -> FrozenRun:
    """Run a frozen fork from ``config`` (the fork checkpoint's run config: its ``configurable``
    holds the override, its ``metadata`` the fork's run metadata) under one run span: the leading
    frozen supersteps written directly, the rest in LangGraph's loop. An exception of the loop (or
    of a write) ends the run span with the error, as the loop's own run does, and is returned."""
    run = _Prelude(handler, hook, config, graph_name, on_update)
    try:
        while True:
            saved, tasks = _next_tasks(graph, run.point)
            task = run.frozen_task(saved, tasks) if tasks else None
            if task is None:
                break
            node_run, node_md, output, capture = run.begin(saved, task)
            try:
                written = graph.update_state(
                    _with_capture(saved.config, capture), output, as_node=task.name, task_id=task.id
                )
            except BaseException as exc:
                run.failed(node_run, exc)
                raise
            run.end(task.name, node_run, node_md, output, capture, written)
        output = graph.invoke(None, run.live_config()) if tasks else graph.get_state(run.point).values
    except Exception as exc:
        return run.finish(None, exc)
    return run.finish(output, None)


async def arun_frozen(
    graph: Any,
    handler: CausalCallbackHandler,
    hook: SuffixOverride,
    config: Mapping[str, Any],
    *,
    graph_name: str,
    on_update: Callable[[str, str, Any], None],
) -> FrozenRun:
    """Async twin of :func:`run_frozen` (``aget_tuple``, ``aupdate_state``, ``ainvoke``)."""
    run = _Prelude(handler, hook, config, graph_name, on_update)
    try:
        while True:
            saved, tasks = await _anext_tasks(graph, run.point)
            task = run.frozen_task(saved, tasks) if tasks else None
            if task is None:
                break
            node_run, node_md, output, capture = run.begin(saved, task)
            try:
                written = await graph.aupdate_state(
                    _with_capture(saved.config, capture), output, as_node=task.name, task_id=task.id
                )
            except BaseException as exc:
                run.failed(node_run, exc)
                raise
            run.end(task.name, node_run, node_md, output, capture, written)
        if tasks:
            output = await graph.ainvoke(None, run.live_config())
        else:
            output = (await graph.aget_state(run.point)).values
    except Exception as exc:
        return run.finish(None, exc)
    return run.finish(output, None)


_ADDRESS = ("thread_id", "checkpoint_ns", "checkpoint_id")

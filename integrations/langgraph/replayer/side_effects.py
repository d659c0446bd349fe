"""Guards that keep side-effecting tools from running inside a fork.

:func:`install_tool_guard` wraps a LangChain tool in place so that each call goes through
:func:`causal_middleware.replay.policy.guard_side_effect`: outside a fork nothing changes (one
context-variable read per call); inside a fork that forbids side effects the tool returns the
parent's recorded output of the same call, matched by tool name and arguments (its callbacks still
fire, so the fork's trace shows the call with that output), or raises ``SideEffectBlockedError``
when the parent made no such call: a call whose arguments changed is refused, never served another
call's output. :func:`guard_graph_tools` finds the tools a graph
references (``ToolNode`` tools, tools closed over by node functions, subgraphs included) and
guards those marked ``@side_effecting`` or named side-effecting.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.tools import BaseTool

from causal_middleware.replay.policy import aguard_side_effect, guard_side_effect

from ..graph_info import _tools_of, _walk
from ..markers import is_side_effecting_marked

__all__ = ["guard_graph_tools", "install_tool_guard", "is_guarded"]

_GUARD_ATTR = "__causal_side_effect_guard__"
# Arguments LangChain injects into tool functions: not part of the call's identity.
_INJECTED = frozenset({"config", "callbacks", "run_manager"})


def is_guarded(tool: BaseTool) -> bool:
    return bool(getattr(tool, "__dict__", {}).get(_GUARD_ATTR))


def _model_args(tool: BaseTool) -> frozenset[str]:
    """The argument names the model fills in (``tool_call_schema``): injected arguments
    (``InjectedState``, ``InjectedToolCallId``, the runtime) are not part of a call's identity, and
    the trace records the call without them."""
    try:
        schema = tool.tool_call_schema
    except Exception:  # a tool whose schema cannot be built: compare every argument
        return frozenset()
    if isinstance(schema, dict):
        return frozenset((schema.get("properties") or {}).keys())
    fields = getattr(schema, "model_fields", None)
    return frozenset(fields) if isinstance(fields, dict) else frozenset()


def _call_args(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    visible: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
        named = dict(bound.arguments)
    except (TypeError, ValueError):
        named = {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
        visible = frozenset()  # positional fallback names: nothing to filter by
    if len(named) == 1:  # ``**kwargs``-style functions bind everything to one name
        (only,) = named
        param = _param(fn, only)
        if (
            param is not None
            and param.kind is inspect.Parameter.VAR_KEYWORD
            and isinstance(named[only], dict)
        ):
            named = dict(named[only])
    named = {k: v for k, v in named.items() if k not in _INJECTED}
    if visible:
        named = {k: v for k, v in named.items() if k in visible}
    return named


def _param(fn: Callable[..., Any], name: str) -> inspect.Parameter | None:
    try:
        return inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):
        return None


def _guard_sync(name: str, fn: Callable[..., Any], visible: frozenset[str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return guard_side_effect(name, _call_args(fn, args, kwargs, visible), lambda: fn(*args, **kwargs))

    return guarded


def _guard_async(name: str, fn: Callable[..., Any], visible: frozenset[str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def guarded(*args: Any, **kwargs: Any) -> Any:
        return await aguard_side_effect(
            name, _call_args(fn, args, kwargs, visible), lambda: fn(*args, **kwargs)
        )

    return guarded


def install_tool_guard(tool: BaseTool) -> BaseTool:
    """Guard ``tool`` in place (idempotent); returns it.

    Function-backed tools (``@tool``, ``StructuredTool``, ``Tool``) get their ``func`` /
    ``coroutine`` wrapped; other ``BaseTool`` subclasses get instance-level ``_run`` / ``_arun``.
    """
    if not isinstance(tool, BaseTool):
        raise TypeError(f"install_tool_guard needs a LangChain BaseTool, got {type(tool).__name__}")
    if is_guarded(tool):
        return tool
    name = tool.name
    visible = _model_args(tool)
    func = getattr(tool, "func", None)
    coroutine = getattr(tool, "coroutine", None)
    if func is not None or coroutine is not None:
        if func is not None:
            tool.func = _guard_sync(name, func, visible)  # type: ignore[attr-defined]
        if coroutine is not None:
            tool.coroutine = _guard_async(name, coroutine, visible)  # type: ignore[attr-defined]
    else:
        # Instance attributes shadow the class's methods; pydantic leaves __dict__ writable.
        object.__setattr__(tool, "_run", _guard_sync(name, tool._run, visible))
        object.__setattr__(tool, "_arun", _guard_async(name, tool._arun, visible))
    object.__setattr__(tool, _GUARD_ATTR, True)
    return tool


def guard_graph_tools(graph: Any, side_effecting: Iterable[str] = ()) -> list[str]:
    """Guard every tool of ``graph`` that is marked ``@side_effecting`` or named in ``side_effecting``.

    Returns the names of the guarded tools (sorted).
    """
    names = frozenset(side_effecting)
    guarded: set[str] = set()
    for _node, bound, _depth in _walk(graph):
        for tool in _tools_of(bound):
            if tool.name in names or is_side_effecting_marked(tool):
                install_tool_guard(tool)
                guarded.add(tool.name)
    return sorted(guarded)

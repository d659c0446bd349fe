"""Decorators that mark node functions and tools for the instrumentation.

``@hop_node`` marks a node function whose every execution starts a new hop (or a tool whose every
call does); ``@side_effecting`` marks a node or tool that acts on the world (sends e-mail, writes a
file), so replay and repair never re-run it by accident. Both work on plain functions (before or
after ``@tool``) and on LangChain ``BaseTool`` objects; they return what they were given.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from langchain_core.tools import BaseTool

HOP_ATTR = "__causal_hop_node__"
SIDE_EFFECTING_ATTR = "__causal_side_effecting__"
# keys in BaseTool.metadata (LangChain passes tool metadata to every callback of the call)
HOP_METADATA_KEY = "causal_hop"
SIDE_EFFECTING_METADATA_KEY = "causal_side_effecting"

T = TypeVar("T")


def _mark(obj: T, attr: str, metadata_key: str, decorator: str) -> T:
    if isinstance(obj, BaseTool):
        obj.metadata = {**(obj.metadata or {}), metadata_key: True}
        return obj
    if not callable(obj):
        raise TypeError(f"@{decorator} applies to node functions and tools, got {type(obj).__name__}")
    try:
        setattr(obj, attr, True)
    except (AttributeError, TypeError, ValueError) as exc:
        raise TypeError(
            f"@{decorator} cannot mark {type(obj).__name__} objects; decorate the function instead"
        ) from exc
    return obj


def hop_node(fn: T) -> T:
    """Mark a node function (every execution starts a hop) or a tool (every call starts a hop)."""
    return _mark(fn, HOP_ATTR, HOP_METADATA_KEY, "hop_node")


def side_effecting(fn: T) -> T:
    """Mark a node function or tool as side-effecting (``causal.node/tool.side_effecting=true``).

    On a LangChain tool this also installs the replayer's fork guard (in place): inside a fork
    the tool returns the parent run's recorded output instead of running (see ``replayer/side_effects.py``).
    """
    marked = _mark(fn, SIDE_EFFECTING_ATTR, SIDE_EFFECTING_METADATA_KEY, "side_effecting")
    # --- replayer (issue #4): guard side-effecting tools against re-firing in forks ---
    if isinstance(marked, BaseTool):
        from .replayer.side_effects import install_tool_guard

        install_tool_guard(marked)
    return marked


def _candidates(obj: Any) -> list[Any]:
    """The object and the callables it wraps (RunnableCallable.func/afunc, tool.func/coroutine,
    functools.partial.func, ``__wrapped__`` chains)."""
    out: list[Any] = []
    todo = [obj]
    while todo and len(out) < 16:
        cur = todo.pop()
        if cur is None or any(cur is seen for seen in out):
            continue
        out.append(cur)
        for name in ("func", "afunc", "coroutine", "__wrapped__"):
            inner = getattr(cur, name, None)
            if inner is not None and callable(inner):
                todo.append(inner)
        if isinstance(cur, functools.partial):
            todo.append(cur.func)
    return out


def is_marked(obj: Any, attr: str, metadata_key: str) -> bool:
    """Whether ``obj`` (a node runnable, function or tool) carries the mark."""
    for cand in _candidates(obj):
        if isinstance(cand, BaseTool) and (cand.metadata or {}).get(metadata_key):
            return True
        try:
            if getattr(cand, attr, False) is True:
                return True
        except Exception:  # exotic objects with failing __getattr__
            continue
    return False


def is_hop_marked(obj: Any) -> bool:
    return is_marked(obj, HOP_ATTR, HOP_METADATA_KEY)


def is_side_effecting_marked(obj: Any) -> bool:
    return is_marked(obj, SIDE_EFFECTING_ATTR, SIDE_EFFECTING_METADATA_KEY)

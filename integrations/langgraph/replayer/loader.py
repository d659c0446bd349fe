"""Load a graph the way ``langgraph.json`` names graphs: ``path/to/file.py:graph`` or ``package.module:graph``.

The attribute may be dotted (``module:agents.research``) and may name a factory: a callable that
is not itself a graph is called with no arguments and must return one. A file is imported with its
own folder on ``sys.path``, so its sibling modules import; a file (or module, or factory) that
raises gives a one-line ``ValueError`` naming it and the exception
(:func:`causal_middleware.loading.load_object`).
"""

from __future__ import annotations

from typing import Any

from langgraph.pregel import Pregel

from causal_middleware.loading import load_object, one_line

from ..instrument import InstrumentedGraph

__all__ = ["load_graph"]


def load_graph(spec: str) -> Pregel[Any, Any, Any, Any] | InstrumentedGraph:
    """The compiled (or instrumented) graph ``spec`` names. Raises ``ValueError`` naming what was wrong."""
    obj: Any = load_object(spec, what="graph", example="graph")
    if not isinstance(obj, Pregel | InstrumentedGraph) and callable(obj):
        try:
            obj = obj()
        except (Exception, SystemExit) as exc:
            raise ValueError(f"graph factory {spec!r} failed: {one_line(exc)}") from exc
    if not isinstance(obj, Pregel | InstrumentedGraph):
        hint = " (call .compile() first)" if hasattr(obj, "compile") else ""
        raise ValueError(f"{spec!r} is a {type(obj).__name__}, not a compiled LangGraph graph{hint}")
    return obj

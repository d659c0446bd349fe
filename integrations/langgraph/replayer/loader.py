"""Load a graph the way ``langgraph.json`` names graphs: ``path/to/file.py:graph`` or ``package.module:graph``.

The attribute may be dotted (``module:agents.research``) and may name a factory: a callable that
is not itself a graph is called with no arguments and must return one.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from langgraph.pregel import Pregel

from ..instrument import InstrumentedGraph

__all__ = ["load_graph"]


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"graph file {str(path)!r} does not exist")
    name = f"_causal_graph_{path.stem}_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_graph(spec: str) -> Pregel | InstrumentedGraph:
    """The compiled (or instrumented) graph ``spec`` names. Raises ``ValueError`` naming what was wrong."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(
            f"graph spec {spec!r} must look like 'path/to/file.py:graph' or 'package.module:graph'"
        )
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ValueError(f"graph spec {spec!r} names no module or no attribute")
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _load_file(Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise ValueError(f"cannot import module {where!r} of graph spec {spec!r}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{where!r} has no attribute {attr!r} (graph spec {spec!r})")
        obj = getattr(obj, part)
    if not isinstance(obj, Pregel | InstrumentedGraph) and callable(obj):
        obj = obj()
    if not isinstance(obj, Pregel | InstrumentedGraph):
        hint = " (call .compile() first)" if hasattr(obj, "compile") else ""
        raise ValueError(f"{spec!r} is a {type(obj).__name__}, not a compiled LangGraph graph{hint}")
    return obj

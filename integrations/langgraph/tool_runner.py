"""Re-running a graph's tools live, for the generic intervention space (``rerun_tool``).

The tools are the ``BaseTool``s the graph's nodes reference (``ToolNode``'s own, and those found
by the same walk hop inference uses). A tool marked side-effecting (``@side_effecting`` or
``instrument(side_effecting=...)``) is never re-run: the runner answers None for it. Calls run
with no callbacks, so a re-run records nothing in the user's traces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.tools import BaseTool

from .extract import tool_output_text
from .graph_info import references
from .markers import is_side_effecting_marked

ToolRunner = Callable[[str, dict[str, Any]], str | None]


def graph_tools(graph: Any) -> dict[str, BaseTool]:
    """Name -> tool for every ``BaseTool`` the graph's nodes hold (an ``InstrumentedGraph`` or a
    compiled graph; subgraphs included)."""
    compiled = getattr(graph, "original_graph", None) or graph
    found: dict[str, BaseTool] = {}
    todo = [compiled]
    seen: set[int] = set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for node in (getattr(current, "nodes", None) or {}).values():
            bound = getattr(node, "bound", node)
            by_name = getattr(bound, "tools_by_name", None)
            if isinstance(by_name, dict):
                found.update({n: t for n, t in by_name.items() if isinstance(t, BaseTool)})
            for ref in references(bound):
                if isinstance(ref, BaseTool):
                    found.setdefault(ref.name, ref)
                elif hasattr(ref, "nodes") and hasattr(ref, "get_graph"):
                    todo.append(ref)  # a compiled subgraph
    return found


def tool_runner(graph: Any, *, side_effecting: Iterable[str] = ()) -> ToolRunner | None:
    """A ``(tool name, args) -> output text`` runner over the graph's tools; None when it has none."""
    tools = graph_tools(graph)
    if not tools:
        return None
    blocked = set(side_effecting)
    info = getattr(getattr(graph, "handler", None), "info", None)
    if info is not None:
        blocked |= set(getattr(info, "side_effecting", ()) or ())

    def run(name: str, args: dict[str, Any]) -> str | None:
        tool = tools.get(name)
        if tool is None or name in blocked or is_side_effecting_marked(tool):
            return None
        result = tool.invoke(dict(args), config={"callbacks": []})
        return tool_output_text(result)

    return run

"""Static facts about a compiled LangGraph graph, read once at ``instrument()`` time.

Hop nodes, when the user names none (``hop_nodes=None`` and no ``@hop_node``), are inferred by this
deterministic rule, applied to every node at any depth (subgraphs included):

1. a ``ToolNode`` (``create_agent``'s ``tools`` node) is a hop node;
2. a node whose runnable or function references a LangChain ``BaseRetriever`` is a hop node;
3. a node that references a ``BaseTool`` but no language model is a hop node (a node holding a model
   *and* tools binds the tools to the model: it decides, it does not act);
4. a node that is a compiled subgraph is not itself a hop node; its inner nodes follow rules 1-3.

"References" means: the runnable itself, the steps of runnable sequences, the bound object of a
``RunnableBinding``, and for functions their closure variables, the globals they name, their
default arguments and ``functools.partial`` arguments, and one level into helper functions they
call; lists, tuples and dicts of such objects count. Retrievals and tool calls in other nodes open
hops at run time (see ``hops.py``).

Answer nodes (``answer_nodes=None``): the top-level nodes whose only outgoing edge is a plain edge
to ``END`` ("tail" nodes). They run outside any hop, under the run span.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableBinding, RunnableLambda, RunnableSequence
from langchain_core.tools import BaseTool
from langgraph.constants import END, START
from langgraph.pregel import Pregel

from .markers import is_hop_marked, is_side_effecting_marked

try:  # ToolNode moved between packages over time; tolerate either location
    from langgraph.prebuilt import ToolNode as ToolNode
except ImportError:  # pragma: no cover - langgraph-prebuilt is a langgraph dependency
    ToolNode = ()  # type: ignore[assignment,misc]


@dataclass(frozen=True)
class GraphInfo:
    """What the handler needs to know about the graph it traces."""

    name: str = "LangGraph"
    is_agent: bool = False
    hop_nodes: frozenset[str] = frozenset()
    hops_explicit: bool = False
    answer_nodes: frozenset[str] = frozenset()
    answers_explicit: bool = False
    side_effecting: frozenset[str] = frozenset()
    # (source node, router name) -> {router return value: destination node}
    router_ends: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    # every conditional edge's (source node, router name); None when the graph is unknown
    routers: frozenset[tuple[str, str]] | None = None
    node_names: frozenset[str] = frozenset()
    # source node -> the name a router without one of its own reports from sync code
    # (``get_name()``): LangGraph's async path reports ``self.name``, i.e. None, for the same router
    unnamed_routers: dict[str, str] = field(default_factory=dict)


def _functions_refs(fn: Any, depth: int) -> Iterator[Any]:
    if isinstance(fn, functools.partial):
        yield fn.func
        yield from fn.args
        yield from fn.keywords.values()
        yield from _functions_refs(fn.func, depth)
        return
    if inspect.ismethod(fn):
        owner = fn.__self__
        yield owner
        yield from list(getattr(owner, "__dict__", {}).values())
        fn = fn.__func__
    if not inspect.isfunction(fn):
        return
    try:
        cv = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return
    values = [
        *cv.nonlocals.values(),
        *cv.globals.values(),
        *(fn.__defaults__ or ()),
        *(fn.__kwdefaults__ or {}).values(),
    ]
    for value in values:
        yield value
        if depth > 0 and inspect.isfunction(value) and not _is_library(value):
            yield from _functions_refs(value, depth - 1)


def _is_library(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.startswith(("langchain", "langgraph", "pydantic", "opentelemetry", "typing"))


# Looked at, never into: a tool wrapping a retriever does not make the node holding it a retriever.
_LEAVES = (BaseTool, BaseRetriever, BaseLanguageModel, Pregel)


def references(obj: Any) -> list[Any]:
    """Objects a node's runnable references (see the module docstring), shallow and bounded."""
    found: list[Any] = []
    todo: list[tuple[Any, int]] = [(obj, 0)]
    seen: set[int] = set()
    while todo and len(found) < 500:
        cur, level = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        found.append(cur)
        if level > 3 or isinstance(cur, _LEAVES):
            continue
        nxt: Iterable[Any] = ()
        if isinstance(cur, list | tuple | set | frozenset):
            nxt = list(cur)[:100]
        elif isinstance(cur, dict):
            nxt = list(cur.values())[:100]
        elif isinstance(cur, RunnableSequence):
            nxt = cur.steps
        elif isinstance(cur, RunnableBinding):
            nxt = [cur.bound]
        elif isinstance(cur, RunnableLambda):
            nxt = [getattr(cur, "func", None), getattr(cur, "afunc", None)]
        elif isinstance(cur, Runnable) and hasattr(cur, "steps"):
            nxt = list(cur.steps)
        elif isinstance(cur, Runnable) and (hasattr(cur, "func") or hasattr(cur, "afunc")):
            # langgraph's RunnableCallable wraps the node function
            nxt = [getattr(cur, "func", None), getattr(cur, "afunc", None)]
        elif callable(cur) and not isinstance(cur, type | Runnable):
            nxt = list(_functions_refs(cur, depth=1))
        todo.extend((n, level + 1) for n in nxt if n is not None)
    return found


def _is_hop_like(bound: Any) -> bool:
    if isinstance(bound, ToolNode):
        return True
    refs = references(bound)
    if any(isinstance(r, BaseRetriever) for r in refs):
        return True
    has_tool = any(isinstance(r, BaseTool) for r in refs)
    has_model = any(isinstance(r, BaseLanguageModel) for r in refs)
    return has_tool and not has_model


def _walk(graph: Pregel[Any, Any, Any, Any], depth: int = 0) -> Iterator[tuple[str, Any, int]]:
    """(node name, node runnable, depth) for every node, subgraphs included."""
    for name, node in graph.nodes.items():
        if name == START:
            continue
        yield name, node.bound, depth
        if isinstance(node.bound, Pregel):
            yield from _walk(node.bound, depth + 1)


def _tools_of(bound: Any) -> list[BaseTool]:
    if isinstance(bound, ToolNode):
        return list(getattr(bound, "tools_by_name", {}).values())
    return [r for r in references(bound) if isinstance(r, BaseTool)]


def _tail_nodes(graph: Pregel[Any, Any, Any, Any]) -> frozenset[str]:
    builder = getattr(graph, "builder", None)
    if builder is None:
        return frozenset()
    outgoing: dict[str, set[str]] = {}
    for src, dst in getattr(builder, "edges", set()):
        outgoing.setdefault(src, set()).add(dst)
    branches = getattr(builder, "branches", {}) or {}
    tails = set()
    for name in graph.nodes:
        if name == START or branches.get(name):
            continue
        if outgoing.get(name) == {END}:
            tails.add(name)
    return frozenset(tails)


def _branch_names(bname: str, spec: Any) -> set[str]:
    """The names a router's chain may report: its key in the builder (``condition`` for lambdas)
    and the path runnable's name (``RunnableCallable`` for lambdas, the function name otherwise)."""
    names = {bname}
    path = getattr(spec, "path", None)
    for name in (getattr(path, "name", None), path.get_name() if isinstance(path, Runnable) else None):
        if name:
            names.add(str(name))
    return names


def _branches(graph: Pregel[Any, Any, Any, Any]) -> Iterator[tuple[str, str, Any]]:
    """Every conditional edge as (source node, its key in the builder, its BranchSpec), the graph's
    own first, then its compiled subgraphs' (depth first)."""
    for src, branches in (getattr(getattr(graph, "builder", None), "branches", None) or {}).items():
        for bname, spec in branches.items():
            yield src, bname, spec
    for node in graph.nodes.values():
        if isinstance(node.bound, Pregel):
            yield from _branches(node.bound)


def _routers(graph: Pregel[Any, Any, Any, Any]) -> frozenset[tuple[str, str]]:
    return frozenset(
        (src, name) for src, bname, spec in _branches(graph) for name in _branch_names(bname, spec)
    )


def _unnamed_routers(graph: Pregel[Any, Any, Any, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for src, _, spec in _branches(graph):
        path = getattr(spec, "path", None)
        if isinstance(path, Runnable) and not getattr(path, "name", None):
            out.setdefault(src, str(path.get_name()))
    return out


def _router_ends(graph: Pregel[Any, Any, Any, Any]) -> dict[tuple[str, str], dict[str, str]]:
    out: dict[tuple[str, str], dict[str, str]] = {}
    for src, bname, spec in _branches(graph):
        ends = getattr(spec, "ends", None)
        if ends:
            for name in _branch_names(bname, spec):
                out[(src, name)] = {str(k): str(v) for k, v in ends.items()}
    return out


def analyze_graph(
    graph: Pregel[Any, Any, Any, Any],
    *,
    hop_nodes: Iterable[str] | None = None,
    answer_nodes: Iterable[str] | None = None,
    side_effecting: Iterable[str] = (),
    graph_name: str | None = None,
) -> GraphInfo:
    """Read hop nodes, answer nodes, side-effecting nodes/tools and router options from ``graph``.

    Raises ``ValueError`` naming unknown nodes in ``hop_nodes`` / ``answer_nodes``.
    """
    nodes = list(_walk(graph))
    names = frozenset(n for n, _, _ in nodes)

    def _check(kind: str, given: Iterable[str] | None) -> frozenset[str] | None:
        if given is None:
            return None
        if isinstance(given, str):
            given = (given,)
        chosen = frozenset(given)
        unknown = sorted(chosen - names)
        if unknown:
            raise ValueError(f"{kind} names unknown node(s) {unknown}; the graph's nodes are {sorted(names)}")
        return chosen

    explicit_hops = _check("hop_nodes", hop_nodes)
    explicit_answers = _check("answer_nodes", answer_nodes)
    if isinstance(side_effecting, str):
        side_effecting = (side_effecting,)

    marked_hops = frozenset(n for n, bound, _ in nodes if is_hop_marked(bound))
    hops_explicit = bool(explicit_hops) or bool(marked_hops)
    if hops_explicit:
        hop_set = (explicit_hops or frozenset()) | marked_hops
    else:
        hop_set = frozenset(
            n for n, bound, _ in nodes if not isinstance(bound, Pregel) and _is_hop_like(bound)
        )

    side = set(side_effecting)
    for name, bound, _ in nodes:
        if is_side_effecting_marked(bound):
            side.add(name)
        for tool in _tools_of(bound):
            if is_side_effecting_marked(tool):
                side.add(tool.name)

    is_agent = any(isinstance(bound, ToolNode) for _, bound, depth in nodes if depth == 0)
    return GraphInfo(
        name=graph_name or graph.get_name() or "LangGraph",
        is_agent=is_agent,
        hop_nodes=hop_set,
        hops_explicit=hops_explicit,
        answer_nodes=explicit_answers if explicit_answers is not None else _tail_nodes(graph),
        answers_explicit=explicit_answers is not None,
        side_effecting=frozenset(side),
        router_ends=_router_ends(graph),
        routers=_routers(graph) if getattr(graph, "builder", None) is not None else None,
        node_names=names,
        unnamed_routers=_unnamed_routers(graph),
    )

"""The user's own retriever, found in their graph, as the core's ``Index``.

:func:`find_retrievers` walks every node (subgraphs included) with the reference rule hop inference
uses (``graph_info.references``: the runnable, sequence steps, bindings, closures, globals,
defaults, partials, one level into helpers) and collects each ``BaseRetriever`` and ``VectorStore``
it reaches. It also looks inside the tools a node holds (a ``ToolNode``'s tools, a ``BaseTool``
referenced by a node): ``create_retriever_tool`` and any tool whose function closes over or names a
retriever count, under the node's name (and under the tool's name for :func:`lookup_index`).

:func:`lookup_index` picks one: the named node's (or tool's) retriever, else the only one in the
graph, else none, with a ``reason`` a caller can show the user ("name one of ...").
A vector store and a ``VectorStoreRetriever`` over it count as one (the retriever is kept: it carries
the user's ``search_type`` and ``search_kwargs``); two retrievers over one store count as two.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from langgraph.pregel import Pregel

from causal_middleware.retrieval.langchain import RetrieverIndex, Searchable

from .graph_info import ToolNode, _walk, references


class RetrieverNotFound(LookupError):
    """No retriever could be chosen; the message says why and what to name."""


@dataclass(frozen=True)
class RetrieverLookup:
    """The outcome of :func:`lookup_index`.

    ``index`` is None when no retriever was found, when the named node holds none, or when several
    distinct ones exist and no node was named (``ambiguous``); ``reason`` says which, in one line.
    ``candidates`` maps each node (and each tool) holding a retriever to short descriptions of them.
    """

    index: RetrieverIndex | None
    reason: str
    node: str | None = None
    ambiguous: bool = False
    candidates: dict[str, list[str]] = field(default_factory=dict)

    def require(self) -> RetrieverIndex:
        """The index, or :class:`RetrieverNotFound` carrying ``reason``."""
        if self.index is None:
            raise RetrieverNotFound(self.reason)
        return self.index


def _compiled(graph: Any) -> Pregel[Any, Any, Any, Any]:
    """The compiled graph behind ``graph``: a ``Pregel``, or an ``InstrumentedGraph``'s original."""
    if isinstance(graph, Pregel):
        return graph
    for attr in ("original_graph", "graph"):
        inner = getattr(graph, attr, None)
        if isinstance(inner, Pregel):
            return inner
    raise TypeError(
        f"expected a compiled LangGraph graph or an InstrumentedGraph, got {type(graph).__name__}"
    )


def _tool_refs(tool: BaseTool) -> list[Any]:
    roots: list[Any] = [getattr(tool, "func", None), getattr(tool, "coroutine", None)]
    roots.extend(v for k, v in vars(tool).items() if k not in ("func", "coroutine"))
    return references([r for r in roots if r is not None])


def _unique(items: Iterable[Any]) -> list[Any]:
    seen: set[int] = set()
    out = []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            out.append(item)
    return out


def _sources(refs: Iterable[Any]) -> list[Searchable]:
    return _unique(r for r in refs if isinstance(r, BaseRetriever | VectorStore))


def _scan(graph: Any) -> tuple[dict[str, list[Searchable]], dict[str, list[Searchable]]]:
    by_node: dict[str, list[Searchable]] = {}
    by_tool: dict[str, list[Searchable]] = {}
    for name, bound, _ in _walk(_compiled(graph)):
        if isinstance(bound, Pregel):
            continue
        refs = references(bound)
        tools = [r for r in refs if isinstance(r, BaseTool)]
        if isinstance(bound, ToolNode):
            tools.extend(getattr(bound, "tools_by_name", {}).values())
        found = _sources(refs)
        for tool in _unique(tools):
            inner = _sources(_tool_refs(tool))
            if inner:
                by_tool.setdefault(tool.name, [])
                by_tool[tool.name] = _unique([*by_tool[tool.name], *inner])
                found = _unique([*found, *inner])
        if found:
            by_node[name] = _unique([*by_node.get(name, []), *found])
    return by_node, by_tool


def find_retrievers(graph: Any) -> dict[str, list[BaseRetriever | VectorStore]]:
    """Each node (any depth) that holds a retriever or vector store -> those objects, in the order
    found. ``graph``: a compiled graph or an ``InstrumentedGraph``. Nodes holding none are absent."""
    return _scan(graph)[0]


def _covers(source: Searchable, other: Searchable) -> bool:
    """``source`` is ``other``, or a ``VectorStoreRetriever`` over the vector store ``other``."""
    return source is other or (isinstance(source, VectorStoreRetriever) and source.vectorstore is other)


def _choose(sources: list[Searchable]) -> list[Searchable]:
    """Distinct sources, a bare vector store dropped when a ``VectorStoreRetriever`` over it is
    present (two retrievers over one store stay distinct: their filters and ``k`` may differ)."""
    sources = _unique(sources)
    return [
        s
        for s in sources
        if not (isinstance(s, VectorStore) and any(o is not s and _covers(o, s) for o in sources))
    ]


def _describe(source: Searchable) -> str:
    return f"{type(source).__name__}@{id(source):x}"


def lookup_index(graph: Any, node: str | None = None) -> RetrieverLookup:
    """The retriever of ``node`` (a node name, or a tool's name), else the graph's only retriever,
    as a :class:`RetrieverIndex`; see :class:`RetrieverLookup` for when there is none."""
    by_node, by_tool = _scan(graph)
    candidates = {n: [_describe(s) for s in ss] for n, ss in {**by_tool, **by_node}.items()}
    if node is not None:
        if node in by_node:
            sources, where = by_node[node], f"node {node!r}"
        elif node in by_tool:
            sources, where = by_tool[node], f"tool {node!r}"
        else:
            names = sorted(by_node) + sorted(set(by_tool) - set(by_node))
            return RetrieverLookup(
                None,
                f"{node!r} holds no retriever or vector store; the ones holding one are {names or 'none'}",
                node=node,
                candidates=candidates,
            )
        distinct = _choose(sources)
        if len(distinct) == 1:
            return RetrieverLookup(
                RetrieverIndex(distinct[0]), f"the retriever of {where}", node, False, candidates
            )
        return RetrieverLookup(
            None,
            f"{where} holds {len(distinct)} distinct retrievers ({', '.join(map(_describe, distinct))}); "
            "pass a RetrieverIndex over the one to use",
            node=node,
            ambiguous=True,
            candidates=candidates,
        )
    everything = _choose(_unique(s for ss in by_node.values() for s in ss))
    if not everything:
        return RetrieverLookup(
            None, "the graph holds no LangChain retriever or vector store", candidates=candidates
        )
    if len(everything) == 1:
        source = everything[0]
        holders = sorted(n for n, ss in by_node.items() if any(_covers(source, s) for s in ss))
        return RetrieverLookup(
            RetrieverIndex(source),
            f"the graph's only retriever ({_describe(source)}, in {holders})",
            node=holders[0] if len(holders) == 1 else None,
            candidates=candidates,
        )
    return RetrieverLookup(
        None,
        f"the graph holds {len(everything)} distinct retrievers (in nodes {sorted(by_node)}); "
        "name the node whose retriever to use",
        ambiguous=True,
        candidates=candidates,
    )


def index_for_graph(graph: Any, node: str | None = None) -> RetrieverIndex | None:
    """:func:`lookup_index`'s index, or None (call :func:`lookup_index` for the reason)."""
    return lookup_index(graph, node).index

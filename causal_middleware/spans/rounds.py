"""Hop inference for foreign traces (no hop spans, no hop indices): where each round starts.

A round is started by (:func:`round_starters`):

* a retriever step (further retrievers inside the same node step belong to its round); with any
  retriever in the run a tool call starts no round (a calculator inside a reading step is part
  of that round);
* without retrievers, an *agent step*: at the outermost level where two or more sibling node
  steps exist and every one of them holds an LLM step (smolagents' ``Step N`` spans, which a code
  agent's steps are even when its code runs without a tool span), each of those nodes; tool calls
  inside one are part of its round;
* else (and for tool calls outside every agent step) a tool call; further tool calls inside the
  same node step belong to its round (agents that search through tools; chat logs whose tool
  messages answer the message before them).

A round's hop then begins (:func:`infer_hops`) at its starter, or (for a retriever or tool) at the
starter's enclosing node when that node started after the previous round's starter, and takes in
the round's *planner*:
the step just before that begin at the same level, when it comes after the previous round's
begin and is an LLM step (the message or model call that issued the call), or a node step named
as the one before the first round (``plan`` in a plan -> retrieve -> read loop), so a planner of
round k+1 is not counted in round k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["infer_hops", "round_starters"]


def _agent_steps(
    positions: Sequence[str], parent_step: Mapping[str, str | None], types: Mapping[str, str]
) -> set[str]:
    """The node steps of the outermost level whose >= 2 sibling nodes all hold an LLM step."""
    holds_llm: set[str] = set()
    for span_id in positions:
        if types.get(span_id) != "llm":
            continue
        parent = parent_step.get(span_id)
        seen: set[str] = set()
        while parent is not None and parent not in seen:
            seen.add(parent)
            holds_llm.add(parent)
            parent = parent_step.get(parent)
    levels: dict[str | None, list[str]] = {}
    for span_id in positions:
        if types.get(span_id) == "node":
            levels.setdefault(parent_step.get(span_id), []).append(span_id)
    candidates = {
        parent: nodes
        for parent, nodes in levels.items()
        if len(nodes) >= 2 and all(n in holds_llm for n in nodes)
    }

    def depth(parent: str | None) -> int:
        d, seen = 0, set()
        while parent is not None and parent not in seen:
            seen.add(parent)
            parent, d = parent_step.get(parent), d + 1
        return d

    if not candidates:
        return set()
    outermost = min(candidates, key=depth)
    return set(candidates[outermost])


def _inside(span_id: str, containers: set[str], parent_step: Mapping[str, str | None]) -> str | None:
    parent, seen = parent_step.get(span_id), set()
    while parent is not None and parent not in seen:
        if parent in containers:
            return parent
        seen.add(parent)
        parent = parent_step.get(parent)
    return None


def round_starters(
    positions: Sequence[str], parent_step: Mapping[str, str | None], types: Mapping[str, str]
) -> list[str]:
    """The steps that start a round, in order (see the module docstring)."""
    retrievals = [s for s in positions if types.get(s) == "retrieval"]
    if retrievals:
        grouped = retrievals
    else:
        agents = _agent_steps(positions, parent_step, types)
        grouped = [
            s
            for s in positions
            if s in agents or (types.get(s) == "tool" and _inside(s, agents, parent_step) is None)
        ]
    starters: list[str] = []
    previous: str | None = None
    for span_id in grouped:
        parent = parent_step.get(span_id)
        same_node = parent is not None and parent == previous and types.get(parent) == "node"
        if starters and same_node and types.get(span_id) != "node":
            continue
        starters.append(span_id)
        previous = parent
    return starters


def _sibling_before(
    position: int, positions: Sequence[str], parent_step: Mapping[str, str | None]
) -> int | None:
    level = parent_step.get(positions[position])
    for i in range(position - 1, -1, -1):
        if parent_step.get(positions[i]) == level:
            return i
    return None


def infer_hops(
    positions: Sequence[str],
    parent_step: Mapping[str, str | None],
    types: Mapping[str, str],
    names: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Step id -> 1-based hop index for the steps in ``positions`` (steps in start order) that lie
    in a round; steps before the first round are in none."""
    names = names or {}
    pos = {span_id: i for i, span_id in enumerate(positions)}
    boundaries: list[int] = []
    previous_starter = -1
    planner_name: str | None = None
    for starter in round_starters(positions, parent_step, types):
        begin = pos[starter]
        parent = parent_step.get(starter)
        enclosing = parent is not None and types.get(parent) == "node" and types.get(starter) != "node"
        if enclosing and parent is not None and pos[parent] > previous_starter:
            begin = pos[parent]
        before = _sibling_before(begin, positions, parent_step)
        floor = boundaries[-1] if boundaries else -1
        if before is not None and before > floor:
            kind, name = types.get(positions[before]), names.get(positions[before])
            if not boundaries and kind == "node":
                planner_name = name
            if kind == "llm" or (kind == "node" and name is not None and name == planner_name):
                begin = before
        if boundaries:
            begin = max(begin, boundaries[-1] + 1)
        boundaries.append(begin)
        previous_starter = pos[starter]
    hop_of: dict[str, int] = {}
    for span_id, position in pos.items():
        index = sum(1 for b in boundaries if b <= position)
        if index:
            hop_of[span_id] = index
    return hop_of

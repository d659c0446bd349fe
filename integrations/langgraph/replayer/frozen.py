"""The node override a fork installs: frozen suffix nodes and side-effecting nodes.

The instrumentation's node wrapper calls ``config["configurable"]["causal_node_override"]`` as
``override(node_name, state, config) -> (handled, output)``; ``(True, output)`` makes the node
return ``output`` without running (its span gets ``causal.node.frozen=true``).

* ``frozen`` mode: every root-graph node outside the re-run set returns the output the parent
  recorded for the same ``(node, langgraph_step)`` (the set names nodes, every execution of them,
  or ``"node@step"``: that execution only, so a loop's later hops stay frozen); when the fork's path has diverged and there
  is no such record, the node runs live and the divergence is reported.
* every mode: a side-effecting node returns the output the parent recorded for the same
  ``(node, langgraph_step)``, or raises ``SideEffectBlockedError`` (never another execution's
  output, which would claim an effect that did not happen), unless the fork allows side effects.

Nodes inside a subgraph are never overridden on their own: freezing the subgraph's node in the
parent graph already covers them.

Step numbers: if anything wrote to the fork's thread between the fork's ``update_state`` and the
start of its run, LangGraph would save one more "fork" checkpoint before running, and every
``langgraph_step`` of the fork would be one higher than the parent's for the same position. The
first node call tells the offset (the fork's first superstep is ``fork_step + 1`` in the parent's
numbering), and recorded outputs are looked up with it. Since every fork runs on a fresh thread of
its own (``fork_thread``), nothing else writes there and the offset is 0 (concurrent forks of one
run used to share its thread and hit this); the check stays as a safeguard, reported in the
``replay.suffix.step_offset`` label.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from causal_middleware.replay.errors import SideEffectBlockedError
from causal_middleware.replay.request import SuffixMode

from .branch import RecordedTask

__all__ = ["SuffixOverride"]


class SuffixOverride:
    """``causal_node_override`` for one fork run. Thread-safe (parallel branches share it)."""

    def __init__(
        self,
        *,
        mode: SuffixMode,
        recorded: Sequence[RecordedTask],
        first_step: int,
        rerun: Iterable[str] = (),
        side_effecting: Iterable[str] = (),
        allow_side_effects: bool = False,
    ) -> None:
        self.mode = mode
        self.rerun = frozenset(rerun)
        self.side_effecting = frozenset(side_effecting)
        self.allow_side_effects = allow_side_effects
        self._recorded = list(recorded)
        self.first_step = first_step
        self.step_offset: int | None = None
        self._used: set[int] = set()
        self._lock = threading.Lock()
        self.frozen: list[tuple[str, int | None]] = []
        self.live: list[tuple[str, int | None]] = []
        self.diverged: list[tuple[str, int | None]] = []
        self.served_side_effects: list[tuple[str, int | None]] = []
        self.refused_side_effects: list[tuple[str, int | None]] = []

    def _take(self, node: str, step: int | None, *, by_order: bool) -> tuple[bool, Any]:
        with self._lock:
            index = next(
                (
                    i
                    for i, t in enumerate(self._recorded)
                    if i not in self._used and t.node == node and t.langgraph_step == step
                ),
                None,
            )
            if index is None and by_order:
                index = next(
                    (i for i, t in enumerate(self._recorded) if i not in self._used and t.node == node), None
                )
            if index is None:
                return False, None
            self._used.add(index)
            return True, copy.deepcopy(self._recorded[index].output)

    def _parent_step(self, seen: Any) -> int | None:
        if not isinstance(seen, int):
            return None
        with self._lock:
            if self.step_offset is None:
                self.step_offset = max(0, seen - self.first_step)
            return seen - self.step_offset

    def would_freeze(self, node: str, seen_step: int) -> bool:
        """Whether a root-graph call of ``node`` at ``seen_step`` (the fork's ``langgraph_step``)
        would return a recorded output, changing nothing (the direct application of frozen
        supersteps asks before it emits the node's span)."""
        with self._lock:
            offset = self.step_offset if self.step_offset is not None else max(0, seen_step - self.first_step)
            step = seen_step - offset
            blocked = node in self.side_effecting and not self.allow_side_effects
            frozen = self.mode == "frozen" and node not in self.rerun and f"{node}@{step}" not in self.rerun
            return (blocked or frozen) and any(
                i not in self._used and t.node == node and t.langgraph_step == step
                for i, t in enumerate(self._recorded)
            )

    def __call__(self, node: str, state: Any, config: Mapping[str, Any]) -> tuple[bool, Any]:
        metadata = config.get("metadata") or {}
        if "|" in str(metadata.get("langgraph_checkpoint_ns") or ""):
            return False, None
        step = self._parent_step(metadata.get("langgraph_step"))
        blocked_side_effect = node in self.side_effecting and not self.allow_side_effects
        if blocked_side_effect:
            # only the execution at the same step: serving another execution's output "by order"
            # would claim an effect that never happened (see ForkPolicy for tools)
            found, output = self._take(node, step, by_order=False)
            if not found:
                with self._lock:
                    self.refused_side_effects.append((node, step))
                    others = sorted(
                        {
                            t.langgraph_step
                            for i, t in enumerate(self._recorded)
                            if t.node == node and i not in self._used
                        }
                    )
                detail = f" at step {step}" + (
                    f" (it ran at step(s) {others}; a fork never serves one execution's output for another)"
                    if others
                    else ""
                )
                raise SideEffectBlockedError(node, kind="node", detail=detail)
            with self._lock:
                self.served_side_effects.append((node, step))
                self.frozen.append((node, step))
            return True, output
        if self.mode == "frozen" and node not in self.rerun and f"{node}@{step}" not in self.rerun:
            found, output = self._take(node, step, by_order=False)
            with self._lock:
                (self.frozen if found else self.diverged).append((node, step))
                if not found:
                    self.live.append((node, step))
            return found, output
        with self._lock:
            self.live.append((node, step))
        return False, None

    def summary(self) -> dict[str, Any]:
        """JSON-ready account for the fork's labels."""
        with self._lock:
            return {
                "frozen": [list(x) for x in self.frozen],
                "live": [list(x) for x in self.live],
                "diverged": [list(x) for x in self.diverged],
                "side_effecting_served": [list(x) for x in self.served_side_effects],
                "side_effecting_refused": [list(x) for x in self.refused_side_effects],
                "step_offset": self.step_offset or 0,
            }

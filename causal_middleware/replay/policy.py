"""The fork policy: what a side-effecting call does while a fork runs.

The replayer sets a :class:`ForkPolicy` in a context variable for the duration of a fork run.
LangGraph copies context variables into the worker threads and tasks that run nodes and tools,
so a side-effecting tool called anywhere inside the fork sees it; outside a fork there is no
policy and the tool runs normally. Tools opt in through the ``side_effecting`` decorator, which
calls :func:`guard_side_effect` (or :func:`aguard_side_effect`) around the real call.

Inside a fork, unless the caller allowed side effects, the call does not run: it returns the
output the parent run recorded for the same tool, matched first by tool name and arguments,
then by call order among that tool's remaining recorded calls, and raises
:class:`~causal_middleware.replay.errors.SideEffectBlockedError` when nothing is left.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from causal_middleware.replay.errors import SideEffectBlockedError

T = TypeVar("T")

__all__ = [
    "ForkPolicy",
    "RecordedCall",
    "ServedCall",
    "aguard_side_effect",
    "current_fork_policy",
    "fork_policy",
    "guard_side_effect",
]


class RecordedCall(BaseModel):
    """One side-effecting call of the parent run: what was called with what, and what it returned."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    langgraph_step: int | None = None


class ServedCall(BaseModel):
    """One call a fork answered from the parent's record instead of running it."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    matched_by: str = Field(description="'args' (same name and arguments) or 'order' (next unused call)")
    recorded_step: int | None = None


def _canonical(args: Mapping[str, Any] | None) -> str:
    # Recorded args went through span JSON; compare both sides in that same form.
    return json.dumps(dict(args or {}), sort_keys=True, default=str, ensure_ascii=False)


class ForkPolicy:
    """Side-effect rules of one fork run. Thread-safe: parallel branches of a fork share it."""

    def __init__(
        self,
        *,
        allow_side_effects: bool = False,
        recorded: Sequence[RecordedCall] = (),
        side_effecting: Iterable[str] = (),
    ) -> None:
        self.allow_side_effects = allow_side_effects
        self.side_effecting = frozenset(side_effecting)
        self._recorded = list(recorded)
        self._used: set[int] = set()
        self._lock = threading.Lock()
        self.served: list[ServedCall] = []
        self.blocked: list[str] = []
        self.executed: list[str] = []

    def is_side_effecting(self, name: str) -> bool:
        """Whether ``name`` was declared side-effecting by name (decorated tools always are)."""
        return name in self.side_effecting

    def recorded_output(self, name: str, args: Mapping[str, Any] | None = None) -> Any:
        """The parent's recorded output for this call; raises ``SideEffectBlockedError`` when none is left."""
        wanted = _canonical(args)
        with self._lock:
            candidates = [i for i, c in enumerate(self._recorded) if c.name == name and i not in self._used]
            chosen = next((i for i in candidates if _canonical(self._recorded[i].args) == wanted), None)
            matched_by = "args"
            if chosen is None and candidates:
                chosen, matched_by = candidates[0], "order"
            if chosen is None:
                self.blocked.append(name)
                raise SideEffectBlockedError(name, args=dict(args or {}))
            self._used.add(chosen)
            call = self._recorded[chosen]
            self.served.append(
                ServedCall(
                    name=name, args=dict(args or {}), matched_by=matched_by, recorded_step=call.langgraph_step
                )
            )
            return call.output

    def note_executed(self, name: str) -> None:
        """Record that a side-effecting call really ran (``allow_side_effects=True``)."""
        with self._lock:
            self.executed.append(name)

    def summary(self) -> dict[str, Any]:
        """JSON-ready account of what the policy did, for the fork's labels."""
        with self._lock:
            return {
                "allowed": self.allow_side_effects,
                "served": [s.model_dump(mode="json") for s in self.served],
                "blocked": list(self.blocked),
                "executed": list(self.executed),
            }


_current: contextvars.ContextVar[ForkPolicy | None] = contextvars.ContextVar(
    "causal_middleware_fork_policy", default=None
)


def current_fork_policy() -> ForkPolicy | None:
    """The policy of the fork running in this context, or None outside any fork."""
    return _current.get()


@contextmanager
def fork_policy(policy: ForkPolicy) -> Iterator[ForkPolicy]:
    """Make ``policy`` current for the enclosed code (and the threads/tasks LangGraph starts from it)."""
    token = _current.set(policy)
    try:
        yield policy
    finally:
        _current.reset(token)


def guard_side_effect(name: str, args: Mapping[str, Any] | None, call: Callable[[], T]) -> T | Any:
    """Run ``call`` unless a fork is running that forbids side effects; then return the recorded output."""
    policy = _current.get()
    if policy is None:
        return call()
    if policy.allow_side_effects:
        policy.note_executed(name)
        return call()
    return policy.recorded_output(name, args)


async def aguard_side_effect(
    name: str, args: Mapping[str, Any] | None, call: Callable[[], Awaitable[T]]
) -> T | Any:
    """Async twin of :func:`guard_side_effect`."""
    policy = _current.get()
    if policy is None:
        return await call()
    if policy.allow_side_effects:
        policy.note_executed(name)
        return await call()
    return policy.recorded_output(name, args)

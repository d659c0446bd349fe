"""The fork policy: what a side-effecting call does while a fork runs.

The replayer sets a :class:`ForkPolicy` in a context variable for the duration of a fork run.
LangGraph copies context variables into the worker threads and tasks that run nodes and tools,
so a side-effecting tool called anywhere inside the fork sees it; outside a fork there is no
policy and the tool runs normally. Tools opt in through the ``side_effecting`` decorator, which
calls :func:`guard_side_effect` (or :func:`aguard_side_effect`) around the real call.

Inside a fork, unless the caller allowed side effects, the call does not run: it returns the
output the parent run recorded for the same call, matched by tool name *and* arguments (each
recorded call serves once), and raises
:class:`~causal_middleware.replay.errors.SideEffectBlockedError` otherwise. A call whose arguments
changed (the fork pages "bob" where the parent paged "alice") is refused, never served another
call's output: that output would claim an effect that did not happen. Arguments are compared in
their JSON form, lenient only about how a scalar is spelled (``3`` and ``"3"``: a tool's schema
coerces one into the other); a recorded call of a one-argument tool whose input was a plain string
(``{"input": ...}``) matches that argument's value. With ``allow_side_effects`` the call runs.
"""

from __future__ import annotations

import contextvars
import copy
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
    "RefusedCall",
    "ServedCall",
    "aguard_side_effect",
    "current_fork_policy",
    "fork_policy",
    "guard_side_effect",
    "same_call",
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
    matched_by: str = Field(
        default="args", description="'args': same tool name and arguments (the only match there is)"
    )
    recorded_step: int | None = None


class RefusedCall(BaseModel):
    """One side-effecting call a fork refused (``SideEffectBlockedError``), and why."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    reason: str = Field(
        description="'changed_args' (the parent called it with other arguments) or 'unrecorded'"
    )
    recorded_args: list[dict[str, Any]] = Field(
        default_factory=list, description="the unused recorded calls of the tool (changed_args)"
    )


def _plain(value: Any) -> Any:
    """``value`` in the JSON form the recorded side went through, scalars as text."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return str(value)


def _canonical(args: Mapping[str, Any] | None) -> str:
    # Recorded args went through span JSON; compare both sides in that same form.
    return json.dumps(_plain(dict(args or {})), sort_keys=True, ensure_ascii=False)


def same_call(recorded: Mapping[str, Any] | None, live: Mapping[str, Any] | None) -> bool:
    """Whether a live call's arguments are the recorded call's (see the module docstring)."""
    if _canonical(recorded) == _canonical(live):
        return True
    recorded, live = dict(recorded or {}), dict(live or {})
    if set(recorded) == {"input"} and len(live) == 1:  # a string-input tool, recorded as {"input": s}
        return _canonical({"input": next(iter(live.values()))}) == _canonical(recorded)
    return False


class ForkPolicy:
    """Side-effect rules of one fork run. Thread-safe: parallel branches of a fork share it."""

    def __init__(
        self,
        *,
        allow_side_effects: bool = False,
        recorded: Sequence[RecordedCall] = (),
        side_effecting: Iterable[str] = (),
        withhold: bool = False,
    ) -> None:
        self.allow_side_effects = allow_side_effects
        # refused calls answer the agent with a notice instead of ending the fork (probing forks)
        self.withhold = withhold
        self.side_effecting = frozenset(side_effecting)
        self._recorded = list(recorded)
        self._used: set[int] = set()
        self._lock = threading.Lock()
        self.served: list[ServedCall] = []
        self.blocked: list[str] = []  # names of refused calls (``refused`` says why)
        self.refused: list[RefusedCall] = []
        self.executed: list[str] = []

    def is_side_effecting(self, name: str) -> bool:
        """Whether ``name`` was declared side-effecting by name (decorated tools always are)."""
        return name in self.side_effecting

    def recorded_output(self, name: str, args: Mapping[str, Any] | None = None) -> Any:
        """The parent's recorded output for this exact call (same tool, same arguments); raises
        ``SideEffectBlockedError`` when there is none left: the arguments changed, or the parent
        never made the call."""
        live = dict(args or {})
        with self._lock:
            candidates = [i for i, c in enumerate(self._recorded) if c.name == name and i not in self._used]
            chosen = next((i for i in candidates if same_call(self._recorded[i].args, live)), None)
            if chosen is None:
                others = [dict(self._recorded[i].args) for i in candidates]
                reason = "changed_args" if others else "unrecorded"
                self.blocked.append(name)
                self.refused.append(RefusedCall(name=name, args=live, reason=reason, recorded_args=others))
                if self.withhold:
                    return withheld_notice(name, live, reason)
                if others:
                    shown = ", ".join(repr(o) for o in others[:3]) + (" ..." if len(others) > 3 else "")
                    raise SideEffectBlockedError(
                        name,
                        args=live,
                        detail=(
                            f" with these arguments: it called the tool with {shown}, and a fork never "
                            "serves one call's output for another (the effect would not have happened)"
                        ),
                    )
                raise SideEffectBlockedError(name, args=live)
            self._used.add(chosen)
            call = self._recorded[chosen]
            self.served.append(
                ServedCall(name=name, args=live, matched_by="args", recorded_step=call.langgraph_step)
            )
        # the agent gets its own copy: the recorded output belongs to the parent's trajectory
        return copy.deepcopy(call.output)

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
                "refused": [r.model_dump(mode="json") for r in self.refused],
                "executed": list(self.executed),
            }


def withheld_notice(name: str, args: Mapping[str, Any], reason: str) -> str:
    """What a withheld side-effecting call returns to the agent in a probing fork: the effect did
    not happen, and the agent is told so rather than handed another call's result."""
    why = (
        "its arguments differ from the recorded call's"
        if reason == "changed_args"
        else "the run never made it"
    )
    return (
        f"[not executed: {name}({json.dumps(dict(args), default=str, sort_keys=True)}) is side-effecting and "
        f"this is a counterfactual replay ({why}); assume it was not carried out]"
    )


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

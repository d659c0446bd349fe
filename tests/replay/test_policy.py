"""The fork policy: recorded outputs for side-effecting calls, and its scope (threads, tasks)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from causal_middleware.replay.errors import ReplayError, SideEffectBlockedError
from causal_middleware.replay.policy import (
    ForkPolicy,
    RecordedCall,
    aguard_side_effect,
    current_fork_policy,
    fork_policy,
    guard_side_effect,
)

RECORDED = [
    RecordedCall(name="send", args={"to": "a"}, output="sent-a", langgraph_step=4),
    RecordedCall(name="send", args={"to": "b"}, output="sent-b", langgraph_step=6),
    RecordedCall(name="log", args={"line": "x"}, output="ok", langgraph_step=5),
]


def test_recorded_output_matches_by_name_and_args_only() -> None:
    policy = ForkPolicy(recorded=RECORDED)
    assert policy.recorded_output("send", {"to": "b"}) == "sent-b"  # same args, out of order
    with pytest.raises(SideEffectBlockedError, match="'send'") as info:
        policy.recorded_output("send", {"to": "zzz"})  # changed args: never another call's output
    assert isinstance(info.value, ReplayError) and info.value.name == "send"
    assert "{'to': 'a'}" in str(info.value)  # names the recorded call it did not match
    assert policy.recorded_output("send", {"to": "a"}) == "sent-a"
    with pytest.raises(SideEffectBlockedError):
        policy.recorded_output("send", {"to": "a"})  # each recorded call serves once
    summary = policy.summary()
    assert [(s["args"], s["matched_by"], s["recorded_step"]) for s in summary["served"]] == [
        ({"to": "b"}, "args", 6),
        ({"to": "a"}, "args", 4),
    ]
    assert summary["blocked"] == ["send", "send"]
    assert [(r["args"], r["reason"]) for r in summary["refused"]] == [
        ({"to": "zzz"}, "changed_args"),
        ({"to": "a"}, "unrecorded"),
    ]


def test_guard_calls_through_outside_forks_and_when_allowed() -> None:
    calls: list[str] = []

    def real() -> str:
        calls.append("ran")
        return "real"

    assert current_fork_policy() is None
    assert guard_side_effect("send", {"to": "a"}, real) == "real"
    with fork_policy(ForkPolicy(recorded=RECORDED)):
        assert guard_side_effect("send", {"to": "a"}, real) == "sent-a"
    allowed = ForkPolicy(allow_side_effects=True, recorded=RECORDED)
    with fork_policy(allowed):
        assert guard_side_effect("send", {"to": "a"}, real) == "real"
    assert current_fork_policy() is None
    assert calls == ["ran", "ran"]
    assert allowed.summary()["executed"] == ["send"]


def test_an_unrecorded_call_is_blocked_with_a_clear_error() -> None:
    with fork_policy(ForkPolicy(recorded=RECORDED)), pytest.raises(SideEffectBlockedError) as info:
        guard_side_effect("wire_money", {"amount": 5}, lambda: "paid")
    message = str(info.value)
    assert "wire_money" in message and "allow_side_effects=True" in message and "'amount': 5" in message


def test_policies_are_scoped_to_their_thread() -> None:
    seen: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        with fork_policy(ForkPolicy(recorded=[RecordedCall(name="send", output=f"from-{name}")])):
            barrier.wait(timeout=10)
            seen[name] = guard_side_effect("send", {}, lambda: "real")

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("t1", "t2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"t1": "from-t1", "t2": "from-t2"}
    assert guard_side_effect("send", {}, lambda: "real") == "real"


def test_policies_are_scoped_to_their_task() -> None:
    async def fork_task(name: str) -> object:
        with fork_policy(ForkPolicy(recorded=[RecordedCall(name="send", output=f"from-{name}")])):
            await asyncio.sleep(0)

            async def real() -> str:
                return "real"

            return await aguard_side_effect("send", {}, real)

    async def main() -> list[object]:
        return list(await asyncio.gather(fork_task("a"), fork_task("b")))

    assert asyncio.run(main()) == ["from-a", "from-b"]

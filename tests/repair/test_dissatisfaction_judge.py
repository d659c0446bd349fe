"""The dissatisfaction detector as a failure judge: which run of a chat thread failed, judged from
runs recorded by the real ``instrument(...)`` on a ``create_agent`` chat graph, and repair on failure
end to end with a ``RepairQueue``."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel, FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from causal_middleware import instrument
from causal_middleware.context.judges import DissatisfactionVerifier
from causal_middleware.counterfactual.models import CRSResult
from causal_middleware.protocols import Verdict
from causal_middleware.repair import RepairQueue
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.trigger import root_span_id
from causal_middleware.spans import attributes as A
from causal_middleware.spans.model import Outcome, Trajectory
from causal_middleware.store.memory import InMemorySpanStore

GUARD = 10.0  # upper bound so a broken worker fails the test instead of hanging it
QUESTION = "What is the capital of Australia?"
WRONG = AIMessage(content="The capital of Australia is Sydney.")
THREAD = "chat-1"


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replays scripted AI messages; ``bind_tools`` returns itself so create_agent accepts it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


@tool
def weather(city: str) -> str:
    """The current weather in a city."""
    raise ToolException(f"weather service timed out for {city}")


weather.handle_tool_error = True  # the agent gets the error text and answers anyway


def _agent(replies: list[AIMessage], store: InMemorySpanStore, **kw: Any) -> Any:
    model = ScriptedChatModel(responses=replies)
    graph = create_agent(
        model, tools=[weather], system_prompt="You answer travel questions.", checkpointer=InMemorySaver()
    )
    return instrument(graph, store=store, **kw)


def _say(agent: Any, text: str, thread: str = THREAD, **config: Any) -> str:
    agent.invoke(
        {"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread}, **config}
    )
    assert agent.last_run_id is not None
    return agent.last_run_id


def _chat(turns: list[str], replies: list[AIMessage]) -> tuple[InMemorySpanStore, list[Trajectory]]:
    store = InMemorySpanStore()
    agent = _agent(replies, store)
    run_ids = [_say(agent, text) for text in turns]
    agent.force_flush()
    return store, [store.get_trajectory(r) for r in run_ids]


def test_a_correction_fails_the_previous_run() -> None:
    store, (first, second) = _chat(
        [QUESTION, "No, that's wrong, it's Canberra."],
        [WRONG, AIMessage(content="You are right, the capital of Australia is Canberra.")],
    )
    judge = DissatisfactionVerifier(store)
    verdict = judge.verify(second)
    assert verdict.failed is True and verdict.run_id == first.run_id
    assert (
        "CORRECTION in turn 2" in verdict.feedback and "No, that's wrong, it's Canberra." in verdict.feedback
    )
    assert verdict.expected == "Canberra"  # the value the correction states
    alone = judge.verify(first)  # turn 1 on its own: a plain question, nothing to blame
    assert alone.failed is False and alone.run_id is None and alone.expected is None
    assert "no dissatisfaction signal in turn 1" in alone.feedback


@pytest.mark.parametrize(
    ("reaction", "signal"),
    [
        ("Thumbs down.", "EXPLICIT_FEEDBACK"),
        ("That's not what I asked.", "CONVERSATIONAL_REPAIR"),
        ("What is the capital city of Australia?", "REPETITION"),
    ],
)
def test_other_user_reactions_also_fail_the_previous_run(reaction: str, signal: str) -> None:
    store, (first, second) = _chat([QUESTION, reaction], [WRONG, AIMessage(content="Canberra.")])
    verdict = DissatisfactionVerifier(store).verify(second)
    assert verdict.failed is True and verdict.run_id == first.run_id
    assert f"{signal} in turn 2" in verdict.feedback
    assert verdict.expected is None  # the reaction states no right answer


def test_a_neutral_follow_up_is_not_a_failure() -> None:
    store, (_, second) = _chat(
        [QUESTION, "Thanks. And how many people live in Canberra?"],
        [WRONG, AIMessage(content="About 470,000 people live in Canberra.")],
    )
    verdict = DissatisfactionVerifier(store).verify(second)
    assert verdict.failed is False and verdict.run_id is None
    assert verdict.feedback == "no dissatisfaction signal in turn 2"


def test_a_weak_signal_stays_below_the_escalation_threshold() -> None:
    store, (_, second) = _chat(
        [QUESTION, "What do you mean?"], [WRONG, AIMessage(content="Sydney is the capital city.")]
    )
    verdict = DissatisfactionVerifier(store).verify(second)  # clarification: 0.8 x 0.85 < 0.7
    assert verdict.failed is False and verdict.run_id is None
    assert (
        "below the escalation threshold" in verdict.feedback
        and "CLARIFICATION_REQUEST in turn 2" in verdict.feedback
    )


def test_a_tool_error_inside_the_run_fails_that_run() -> None:
    store, (first, second) = _chat(
        [QUESTION, "What is the weather in Canberra today?"],
        [
            WRONG,
            AIMessage(content="", tool_calls=[{"name": "weather", "args": {"city": "Canberra"}, "id": "c1"}]),
            AIMessage(content="Sorry, I could not get the weather right now."),
        ],
    )
    assert second.status.value == "ok"  # the agent recovered: only the detector sees the failure
    verdict = DissatisfactionVerifier(store).verify(second)
    assert verdict.failed is True and verdict.run_id is None and verdict.expected is None
    assert "TOOL_EXECUTION_ERROR in turn 2" in verdict.feedback and "timed out" in verdict.feedback
    assert DissatisfactionVerifier(store).verify(first).failed is False


@pytest.mark.parametrize(
    ("correction", "expected"),
    [
        ("No, that's wrong, it's Canberra.", "Canberra"),
        ("nope, thats wrong, its Canberra", "Canberra"),  # casual spelling
        ("Wrong: it is 42.", "42"),
        ("You should have checked the official list of capitals.", None),  # behavioural
        ("No, you should have looked it up, it's Canberra.", None),  # the value sits in a rule
        ("That's not what I asked.", None),
        # re-asking: the value describes the question, not the answer
        ("What is the capital of Australia in 2023?", None),
        ("That's not what I asked, I asked for 2024 figures.", None),
    ],
)
def test_a_rejection_states_the_right_answer_only_as_a_value(correction: str, expected: str | None) -> None:
    store, (first, second) = _chat([QUESTION, correction], [WRONG, AIMessage(content="Sorry.")])
    verdict = DissatisfactionVerifier(store).verify(second)
    assert verdict.failed is True and verdict.run_id == first.run_id
    assert verdict.expected == expected


def test_without_history_a_correction_has_no_run_to_blame() -> None:
    store, (_, second) = _chat(
        [QUESTION, "No, that's wrong, it's Canberra."],
        [WRONG, AIMessage(content="Canberra, yes.")],
    )
    for judge in (DissatisfactionVerifier(), DissatisfactionVerifier(store, history=1)):
        verdict = judge.verify(second)
        assert verdict.failed is False and verdict.run_id is None
        # since round 5 (2026-12-02) the detector reads nothing before the agent's first answer as
        # a correction, so the turn carries no signal at all rather than one with nothing to blame
        assert verdict.feedback == "no dissatisfaction signal in turn 1"
    # with the earlier run in view the same turn blames it
    verdict = DissatisfactionVerifier(store).verify(second)
    assert verdict.failed is True and verdict.run_id is not None


def test_forks_in_the_thread_are_not_the_previous_run() -> None:
    store = InMemorySpanStore()
    agent = _agent(
        [WRONG, AIMessage(content="Canberra is the capital."), AIMessage(content="Sorry: it is Canberra.")],
        store,
    )
    first = _say(agent, QUESTION)
    fork = _say(  # a counterfactual run on the same thread, e.g. a repair probe
        agent,
        "Which city is the capital of Australia?",
        metadata={"causal_lineage": {"parent_run_id": first, "mode": "regenerate"}},
    )
    second = _say(agent, "No, that's wrong, it's Canberra.")
    agent.force_flush()
    assert store.get_trajectory(fork).is_counterfactual
    judge = DissatisfactionVerifier(store)
    assert [t.run_id for t in judge.thread_runs(store.get_trajectory(second))] == [first, second]
    verdict = judge.verify(store.get_trajectory(second))
    assert verdict.failed is True and verdict.run_id == first
    assert judge.verify(store.get_trajectory(fork)).failed is None


def test_llm_mode_without_a_model_cannot_tell() -> None:
    store, (_, second) = _chat(
        [QUESTION, "No, that's wrong, it's Canberra."], [WRONG, AIMessage(content="Canberra.")]
    )
    verdict = DissatisfactionVerifier(store, mode="llm").verify(second)
    assert (
        verdict.failed is None and "did not run" in verdict.feedback and "no chat model" in verdict.feedback
    )


def test_llm_mode_reads_the_models_signals() -> None:
    store, (first, second) = _chat(
        [QUESTION, "Hmm, I thought it was Canberra."], [WRONG, AIMessage(content="It is Canberra.")]
    )
    said = '{"signals": [{"type": "correction", "turn": 2, "evidence": "I thought it was Canberra", "confidence": 0.9}]}'
    verdict = DissatisfactionVerifier(store, mode="llm", model=FakeListChatModel(responses=[said])).verify(
        second
    )
    assert verdict.failed is True and verdict.run_id == first.run_id
    assert "CORRECTION in turn 2" in verdict.feedback
    earlier = '{"signals": [{"type": "CORRECTION", "turn": 1, "evidence": "old news", "confidence": 0.9}]}'
    verdict = DissatisfactionVerifier(store, mode="llm", model=FakeListChatModel(responses=[earlier])).verify(
        second
    )
    assert verdict.failed is False  # a signal in an earlier turn was that turn's business
    garbled = DissatisfactionVerifier(store, mode="llm", model=FakeListChatModel(responses=["no idea"]))
    verdict = garbled.verify(second)
    assert verdict.failed is None and "expected a JSON object" in verdict.feedback


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="mode 'online'"):
        DissatisfactionVerifier(mode="online")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="history"):
        DissatisfactionVerifier(history=0)
    with pytest.raises(TypeError, match="SpanStore"):
        DissatisfactionVerifier(store="runs.db")


def _result(trajectory: Trajectory) -> RepairResult:
    return RepairResult(
        run_id=trajectory.run_id,
        status="no_flip",
        crs=CRSResult(run_id=trajectory.run_id, k=1, baseline_success=False),
        explanation="recorded by the test",
    )


def test_repair_on_dissatisfaction_end_to_end(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    store = InMemorySpanStore()
    repaired: list[tuple[Trajectory, str]] = []
    judged_in: list[str] = []
    seen: list[tuple[str, Verdict, RepairResult | None]] = []

    class RecordingJudge(DissatisfactionVerifier):
        def verify(self, trajectory: Trajectory) -> Verdict:
            judged_in.append(threading.current_thread().name)
            return super().verify(trajectory)

    def repairer(trajectory: Trajectory) -> RepairResult:
        repaired.append((trajectory, threading.current_thread().name))
        return _result(trajectory)

    queue = RepairQueue(
        repairer,
        judge=RecordingJudge(store),
        store=store,
        tracer_provider=tracer_provider,
        on_result=lambda run_id, judgement, result: seen.append((run_id, judgement, result)),
    )
    agent = _agent(
        [WRONG, AIMessage(content="You are right, it is Canberra.")],
        store,
        tracer_provider=tracer_provider,
        on_failure=queue,
    )
    first = _say(agent, QUESTION)
    second = _say(agent, "No, that's wrong, it's Canberra.")
    assert queue.wait_idle(GUARD)
    queue.close()

    assert judged_in == ["causal-repair-worker"] * 2  # judged off the user's thread
    [(trajectory, thread_name)] = repaired
    assert trajectory.run_id == first and thread_name == "causal-repair-worker"
    assert trajectory.answer == WRONG.content and trajectory.outcome == Outcome.FAILURE
    assert store.get_trajectory(first).outcome == Outcome.FAILURE  # annotated in the store
    assert store.get_trajectory(second).outcome in (None, Outcome.UNKNOWN)
    stats = queue.stats
    assert (stats.processed, stats.judged_failed, stats.judged_ok, stats.errors) == (2, 1, 1, 0)
    assert [(run_id, j.failed, r is not None) for run_id, j, r in seen] == [
        (first, False, False),
        (first, True, True),
    ]
    assert seen[1][1].run_id == first and "CORRECTION" in seen[1][1].feedback

    repair_spans = [
        s
        for s in span_exporter.get_finished_spans()
        if (s.attributes or {}).get(A.CAUSAL_SPAN_TYPE) == "repair"
    ]
    [span] = repair_spans
    assert span.attributes is not None and span.attributes[A.CAUSAL_REPAIR_RUN_ID] == first
    [link] = span.links
    root = root_span_id(store, first)
    assert root is not None
    assert format(link.context.trace_id, "032x") == first and format(link.context.span_id, "016x") == root


def test_a_blamed_run_that_is_unknown_or_a_fork_is_skipped() -> None:
    store, (first, second) = _chat([QUESTION, "Thanks!"], [WRONG, AIMessage(content="You're welcome.")])
    calls: list[str] = []

    class Blames:
        def __init__(self, target: str) -> None:
            self.target = target

        def verify(self, trajectory: Trajectory) -> Verdict:
            return Verdict(success=False, run_id=self.target, feedback="blamed by the test")

    def repairer(trajectory: Trajectory) -> RepairResult:
        calls.append(trajectory.run_id)
        return _result(trajectory)

    unknown = RepairQueue(repairer, judge=Blames("f" * 32), store=store)
    unknown.submit(second.run_id)
    assert unknown.wait_idle(GUARD)
    unknown.close()
    assert unknown.stats.skipped_unknown == 1 and unknown.stats.judged_failed == 1 and calls == []

    from causal_middleware.spans.model import Lineage

    store.annotate(first.run_id, lineage=Lineage(parent_run_id=second.run_id))  # now it reads as a fork
    forked = RepairQueue(repairer, judge=Blames(first.run_id), store=store)
    forked.submit(second.run_id)
    assert forked.wait_idle(GUARD)
    forked.close()
    assert forked.stats.skipped_forks == 1 and calls == []
    assert store.get_trajectory(first.run_id).outcome in (None, Outcome.UNKNOWN)  # not annotated


def test_the_example_repairs_the_rejected_turn(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "repair_on_dissatisfaction.py"
    spec = importlib.util.spec_from_file_location("repair_on_dissatisfaction_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    [repairing] = [line for line in out.splitlines() if line.startswith("repairing run")]
    assert "'The capital of Australia is Sydney.'" in repairing and "failure" in repairing
    assert "failed=True  the user rejected the previous run's reply: CORRECTION in turn 2" in out
    assert "'judged_failed': 1" in out and "'errors': 0" in out


def test_a_run_blamed_twice_is_repaired_once() -> None:
    store, (first, second) = _chat([QUESTION, "Thanks!"], [WRONG, AIMessage(content="You're welcome.")])
    calls: list[str] = []

    class BlamesFirst:
        def verify(self, trajectory: Trajectory) -> Verdict:
            return Verdict(success=False, run_id=first.run_id, feedback="blamed by the test")

    def repairer(trajectory: Trajectory) -> RepairResult:
        calls.append(trajectory.run_id)
        return _result(trajectory)

    queue = RepairQueue(repairer, judge=BlamesFirst(), store=store)
    queue.submit(first.run_id)  # blamed for itself, then again by the next turn
    queue.submit(second.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    assert calls == [first.run_id]
    assert queue.stats.judged_failed == 2 and queue.stats.skipped_repeats == 1


def test_the_users_correction_reaches_a_repairer_that_takes_feedback() -> None:
    store, (first, second) = _chat(
        [QUESTION, "No, that's wrong, it's Canberra."], [WRONG, AIMessage(content="Canberra.")]
    )
    seen: list[tuple[str, str | None]] = []

    class Service:  # the shape of RepairService.repair
        def repair(self, run: Trajectory, *, write: bool = True, feedback: str | None = None) -> RepairResult:
            seen.append((run.run_id, feedback))
            return _result(run)

    queue = RepairQueue(Service(), judge=DissatisfactionVerifier(store), store=store)
    queue.submit(second.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    [(run_id, feedback)] = seen
    assert run_id == first.run_id and feedback is not None and "it's Canberra" in feedback


def test_a_repair_that_raised_is_retried_when_blamed_again() -> None:
    store, (first, second) = _chat([QUESTION, "Thanks!"], [WRONG, AIMessage(content="You're welcome.")])
    calls: list[str] = []

    class BlamesFirst:
        def verify(self, trajectory: Trajectory) -> Verdict:
            return Verdict(success=False, run_id=first.run_id, feedback="blamed by the test")

    def flaky(trajectory: Trajectory) -> RepairResult:
        calls.append(trajectory.run_id)
        if len(calls) == 1:
            raise RuntimeError("transient")
        return _result(trajectory)

    queue = RepairQueue(flaky, judge=BlamesFirst(), store=store)
    for run in (first, second, second):
        queue.submit(run.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    assert calls == [first.run_id, first.run_id]
    assert queue.stats.errors == 1 and queue.stats.repaired == 0 and queue.stats.skipped_repeats == 1


def test_a_failing_detector_model_cannot_tell() -> None:
    store, (_, second) = _chat(
        [QUESTION, "No, that's wrong, it's Canberra."], [WRONG, AIMessage(content="Canberra.")]
    )

    class Down(FakeListChatModel):
        def _call(self, *args: Any, **kwargs: Any) -> str:
            raise ConnectionError("api unreachable")

    verdict = DissatisfactionVerifier(store, mode="llm", model=Down(responses=["unused"])).verify(second)
    assert verdict.failed is None and "ConnectionError: api unreachable" in verdict.feedback


def test_thumbs_down_tied_to_no_node_blames_the_reply_the_user_saw() -> None:
    store, (first, second) = _chat([QUESTION, "Thumbs down."], [WRONG, AIMessage(content="Sorry.")])
    said = '{"signals": [{"type": "EXPLICIT_FEEDBACK", "turn": 2, "evidence": "Thumbs down.", "confidence": 1.0}]}'
    verdict = DissatisfactionVerifier(store, mode="llm", model=FakeListChatModel(responses=[said])).verify(
        second
    )
    assert verdict.failed is True and verdict.run_id == first.run_id
    assert verdict.expected is None  # a thumbs-down states no right answer


class _StatesAnAnswer:
    """Blames ``target`` and states ``expected`` as the right answer."""

    def __init__(self, target: str, expected: str | None) -> None:
        self.target = target
        self.expected = expected

    def verify(self, trajectory: Trajectory) -> Verdict:
        return Verdict(
            success=False, run_id=self.target, feedback="blamed by the test", expected=self.expected
        )


def _repair_blamed(store: InMemorySpanStore, blamer: Trajectory, judge: _StatesAnAnswer) -> Trajectory:
    got: list[Trajectory] = []

    def repairer(trajectory: Trajectory) -> RepairResult:
        got.append(trajectory)
        return _result(trajectory)

    queue = RepairQueue(repairer, judge=judge, store=store)
    queue.submit(blamer.run_id)
    assert queue.wait_idle(GUARD)
    queue.close()
    assert queue.stats.errors == 0
    [trajectory] = got
    return trajectory


def test_the_queue_makes_a_stated_answer_the_reference_of_a_run_without_one() -> None:
    store, (first, second) = _chat([QUESTION, "Thanks!"], [WRONG, AIMessage(content="You're welcome.")])
    assert first.reference is None
    repaired = _repair_blamed(store, second, _StatesAnAnswer(first.run_id, "Canberra"))
    assert repaired.run_id == first.run_id and repaired.reference == "Canberra"
    assert repaired.outcome == Outcome.FAILURE
    stored = store.get_trajectory(first.run_id)
    assert stored.reference == "Canberra" and stored.outcome == Outcome.FAILURE
    assert store.get_trajectory(second.run_id).reference is None  # the blaming run is left alone


def test_the_queue_never_overwrites_a_stored_reference() -> None:
    store, (first, second) = _chat([QUESTION, "Thanks!"], [WRONG, AIMessage(content="You're welcome.")])
    store.annotate(first.run_id, reference="Canberra (ACT)")
    repaired = _repair_blamed(store, second, _StatesAnAnswer(first.run_id, "Melbourne"))
    assert repaired.reference == "Canberra (ACT)"
    assert store.get_trajectory(first.run_id).reference == "Canberra (ACT)"
    assert store.get_trajectory(first.run_id).outcome == Outcome.FAILURE


def test_without_a_stated_answer_the_queue_sets_no_reference() -> None:
    store, (first, second) = _chat([QUESTION, "Thanks!"], [WRONG, AIMessage(content="You're welcome.")])
    repaired = _repair_blamed(store, second, _StatesAnAnswer(first.run_id, None))
    assert repaired.reference is None and repaired.outcome == Outcome.FAILURE
    assert store.get_trajectory(first.run_id).reference is None

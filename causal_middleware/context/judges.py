"""The context package's dissatisfaction detector as a :class:`~causal_middleware.protocols.Verifier`.

A chat run is one user turn. The verifier rebuilds the thread's conversation up to and including
the judged run, runs the detector, and reads only the signals of the judged run's own turn:
earlier turns were judged when their runs were submitted. What a signal blames depends on where
the detector finds it:

* in the user's message of this turn (the user reacting to the reply they got): the PREVIOUS
  run of the thread failed: ``CORRECTION``, ``CONVERSATIONAL_REPAIR``,
  ``CLARIFICATION_REQUEST``, ``NEGATIVE_SENTIMENT``, ``REPETITION``, ``SESSION_ABANDONMENT``,
  and ``EXPLICIT_FEEDBACK`` (a thumbs-down, "rated 1/5") in the message or tied to no node;
* in this run's own execution: THIS run failed: ``TOOL_EXECUTION_ERROR`` (a tool or retrieval
  node of this turn), ``SEMANTIC_DRIFT`` (this turn's reply), and ``EXPLICIT_FEEDBACK`` the
  detector ties to a node of this turn other than the user's message.

A ``CORRECTION`` that states the right value ("No, that's wrong, it's Canberra.") also gives it
as ``Verdict.expected`` (the ``value`` delta of
:func:`~causal_middleware.context.delta.correction_delta` between the user's message and the
previous run's answer), which the ``RepairQueue`` turns into the previous run's reference. Not
when the message also re-asks (``REPETITION``, ``CONVERSATIONAL_REPAIR``,
``CLARIFICATION_REQUEST``): a value there describes the question ("I asked for 2024 figures"),
not the answer.

Only signals that escalate on their own terms count (``Detection.escalate`` applied to them: any
system signal, or a weighted confidence of at least 0.7); when both groups escalate, the user's
rejection of the previous reply wins (a tool error the agent recovered from is weaker evidence).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from causal_middleware.protocols import Verdict
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.base import SpanStore

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from causal_middleware.context.conversation import Conversation
    from causal_middleware.context.signals import Signal

# Signal types found in the user's message: the user is reacting to the previous run's reply.
USER_REACTION_SIGNALS = frozenset(
    {
        "CORRECTION",
        "CONVERSATIONAL_REPAIR",
        "CLARIFICATION_REQUEST",
        "NEGATIVE_SENTIMENT",
        "REPETITION",
        "SESSION_ABANDONMENT",
    }
)
# Signal types of a user re-asking: values in such a message describe the question, not the answer.
REASK_SIGNALS = frozenset({"REPETITION", "CONVERSATIONAL_REPAIR", "CLARIFICATION_REQUEST"})
MODES = ("offline", "llm")


class DissatisfactionVerifier:
    """Judge a chat run by the dissatisfaction detector (``causal_middleware.context``).

    Args:
        store: the span store holding the thread's earlier runs (the ``RepairQueue``'s store).
            Without one, or for a run without a thread id, the run is judged on its own, so only
            signals about its own execution can fail it.
        mode: ``"offline"`` (rule-based) or ``"llm"`` (needs ``model``).
        model: the chat model of the LLM detector.
        history: at most this many user runs of the thread (the judged one included) make up
            the conversation the detector reads.

    ``verify(run)`` returns ``Verdict(success=False, run_id=<previous run>)`` when the user
    rejected the previous run's reply in this turn (with ``expected``, the value the user's
    correction states, when it states one), ``Verdict(success=False)`` when this run's
    own execution failed, ``success=True`` otherwise, and ``success=None`` when the detector did
    not run (``mode="llm"`` without a model, or a model answer it could not read).
    """

    def __init__(
        self,
        store: SpanStore | None = None,
        *,
        mode: Literal["offline", "llm"] = "offline",
        model: BaseChatModel | None = None,
        history: int = 20,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown detector mode {mode!r}; expected 'offline' or 'llm'")
        if not isinstance(history, int) or history < 1:
            raise ValueError(f"history must be an int >= 1, got {history!r}")
        if store is not None and not (hasattr(store, "list_runs") and hasattr(store, "get_trajectory")):
            raise TypeError(
                f"store must be a SpanStore (list_runs, get_trajectory), got {type(store).__name__}"
            )
        self.store = store
        self.mode: Literal["offline", "llm"] = mode
        self.model = model
        self.history = history

    def verify(self, trajectory: Trajectory) -> Verdict:
        """Decide whether ``trajectory`` (or the run before it in its thread) failed."""
        from causal_middleware.context.conversation import conversation_from_trajectories
        from causal_middleware.context.detector import detect
        from causal_middleware.context.llm import LLMResponseError

        if trajectory.is_counterfactual:
            return Verdict(success=None, feedback="counterfactual runs are not judged")
        runs = self.thread_runs(trajectory)
        conversation = conversation_from_trajectories(runs, session_id=trajectory.thread_id)
        try:
            detection = detect(conversation, mode=self.mode, model=self.model)
        except LLMResponseError as exc:
            return Verdict(success=None, feedback=f"the {self.mode} detector failed: {exc}")
        except Exception as exc:  # a model or API error: cannot tell, like a detector that did not run
            return Verdict(
                success=None, feedback=f"the {self.mode} detector failed: {type(exc).__name__}: {exc}"
            )
        if detection.status == "not_run":
            return Verdict(success=None, feedback=f"the {self.mode} detector did not run: {detection.reason}")
        turn = len(runs)  # conversation_from_trajectories numbers the runs' turns from 1
        mine = [s for s in detection.signals if s.turn == turn]
        previous = runs[-2] if len(runs) > 1 else None
        rejected = [s for s in mine if _blames_previous(s, conversation)]
        own = [s for s in mine if s not in rejected]
        user_rejects = bool(rejected) and _escalates(conversation.session_id, rejected)
        if user_rejects and previous is not None:
            return Verdict(
                success=False,
                run_id=previous.run_id,
                feedback=f"the user rejected the previous run's reply: {_evidence(rejected)}",
                expected=_stated_value(conversation, turn, previous, rejected),
            )
        if own and _escalates(conversation.session_id, own):
            return Verdict(success=False, feedback=f"this run failed: {_evidence(own)}")
        if not mine:
            return Verdict(success=True, feedback=f"no dissatisfaction signal in turn {turn}")
        if user_rejects:  # and there is no previous run
            return Verdict(
                success=True,
                feedback=f"no earlier run in the thread for the user's reaction to blame: {_evidence(mine)}",
            )
        return Verdict(success=True, feedback=f"signals below the escalation threshold: {_evidence(mine)}")

    def thread_runs(self, trajectory: Trajectory) -> list[Trajectory]:
        """The user runs of the judged run's thread, oldest first, ending with the judged run."""
        if self.store is None or not trajectory.thread_id:
            return [trajectory]
        from causal_middleware.context.sessions import thread_runs

        ordered = [r for r in thread_runs(self.store, trajectory.thread_id) if r.parent_run_id is None]
        ids = [r.run_id for r in ordered]
        if trajectory.run_id in ids:
            earlier = ids[: ids.index(trajectory.run_id)]
        else:  # not listed yet: what started before it
            start = trajectory.started_at
            earlier = [r.run_id for r in ordered if start and r.started_at and r.started_at < start]
        keep = earlier[-(self.history - 1) :] if self.history > 1 else []
        runs = [self.store.get_trajectory(run_id) for run_id in keep]
        return [t for t in runs if not t.is_counterfactual] + [trajectory]


def _blames_previous(signal: Signal, conversation: Conversation) -> bool:
    kind = str(signal.type)
    if kind in USER_REACTION_SIGNALS:
        return True
    if kind == "EXPLICIT_FEEDBACK":
        # a thumbs-down reacts to a reply the user has seen, i.e. the previous run's, unless the
        # detector tied it to a node of this turn other than the user's message
        kind_of_node = _node_type(conversation, signal.node_id) if signal.node_id is not None else None
        return kind_of_node in (None, "user")
    return False


def _stated_value(
    conversation: Conversation, turn: int, previous: Trajectory, signals: Sequence[Signal]
) -> str | None:
    """The value the user's correction in ``turn`` says the previous run should have answered,
    when it states one (a ``value`` delta); None for behavioural corrections, rejections that are
    not corrections, and messages that re-ask the question."""
    from causal_middleware.context.delta import correction_delta
    from causal_middleware.context.text import expand_informal

    kinds = {str(s.type) for s in signals}
    if "CORRECTION" not in kinds or kinds & REASK_SIGNALS:
        return None
    said = [n.content for n in conversation.user_turns if n.turn == turn and n.content.strip()]
    if not said:
        return None
    kind, expected, _, _ = correction_delta(expand_informal(said[-1]), previous.answer)
    return expected if kind == "value" and expected else None


def _node_type(conversation: Conversation, node_id: str) -> str | None:
    try:
        return str(conversation.node(node_id).type)
    except KeyError:
        return None


def _escalates(session_id: str, signals: Sequence[Signal]) -> bool:
    from causal_middleware.context.signals import Detection

    return Detection.from_signals(session_id, list(signals)).escalate


def _evidence(signals: Sequence[Signal]) -> str:
    strongest = sorted(signals, key=lambda s: s.weighted, reverse=True)
    return "; ".join(f'{s.type.value} in turn {s.turn}: "{s.evidence}"' for s in strongest)

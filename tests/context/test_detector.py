"""The dissatisfaction detector: the eight signals, explicit feedback, weights, escalation, LLM form."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from causal_middleware.context.conversation import Conversation, ConversationNode, Feedback, NodeType
from causal_middleware.context.detector import detect, detect_offline
from causal_middleware.context.llm import LLMResponseError
from causal_middleware.context.signals import SIGNAL_WEIGHTS, Detection, Signal, SignalType


def chat(*turns: tuple[str, str], feedback: list[Feedback] | None = None) -> Conversation:
    nodes, turn = [], 0
    for role, text in turns:
        if role == "user":
            turn += 1
        node_type = {"user": NodeType.USER, "agent": NodeType.AGENT}[role]
        nodes.append(ConversationNode(id=f"n{len(nodes) + 1}", type=node_type, turn=turn, content=text))
    return Conversation(session_id="s", nodes=nodes, feedback=feedback or [])


def types(det: Detection) -> set[SignalType]:
    return {s.type for s in det.signals}


@pytest.mark.parametrize(
    "text",
    [
        "No, that's wrong. It's $35 now.",
        "That's outdated, it's 120 days now, not 60 days.",
        "thats wrong, its 4 years now",
        "That can't be right. The fee is $40.",
        "You're not supposed to give investment advice.",
        "I thought you weren't supposed to install stuff that's not in the catalog.",
    ],
)
def test_corrections_escalate(text: str) -> None:
    det = detect_offline(
        chat(("user", "What is it?"), ("agent", "It is $25, and it takes 60 days."), ("user", text))
    )
    assert SignalType.CORRECTION in types(det)
    assert det.escalate and det.confidence >= 0.7
    sig = det.first(SignalType.CORRECTION)
    assert sig is not None and sig.turn == 2 and sig.node_id == "n3" and sig.evidence


def test_value_contradiction_needs_a_statement_about_the_answer() -> None:
    corrected = detect_offline(
        chat(
            ("user", "Fee?"),
            ("agent", "The fee is $25."),
            ("user", "Nope, the clinic updated that. It's $40 now."),
        )
    )
    assert SignalType.CORRECTION in types(corrected)
    new_request = detect_offline(
        chat(
            ("user", "Limit?"),
            ("agent", "The daily limit is $1,000."),
            ("user", "Please move $200 to savings today."),
        )
    )
    assert not new_request.escalate


def test_supplied_answer_after_agent_admits_it_found_nothing() -> None:
    det = detect_offline(
        chat(
            ("user", "What is the fee?"),
            ("agent", "I couldn't find anything about the fee."),
            ("user", "It's $12. Can you add that?"),
        )
    )
    assert SignalType.CORRECTION in types(det) and det.escalate


def test_repair_clarification_sentiment_repetition_drift_abandonment() -> None:
    det = detect_offline(
        chat(
            ("user", "How long does a wire transfer to Spain take?"),
            ("agent", "Our branches open at 9 am."),
            ("user", "I said a wire transfer. What do you mean?"),
            ("agent", "Sorry about that."),
            ("user", "How long does a wire transfer to Spain take?"),
            ("agent", "It usually takes 2 business days."),
            ("user", "Ugh, this is frustrating. Forget it, I'll call the branch."),
        )
    )
    found = types(det)
    for t in (
        SignalType.CONVERSATIONAL_REPAIR,
        SignalType.CLARIFICATION_REQUEST,
        SignalType.NEGATIVE_SENTIMENT,
        SignalType.REPETITION,
        SignalType.SEMANTIC_DRIFT,
        SignalType.SESSION_ABANDONMENT,
    ):
        assert t in found, t
    assert det.first(SignalType.SEMANTIC_DRIFT).node_id == "n2"  # type: ignore[union-attr]
    assert det.first(SignalType.REPETITION).turn == 3  # type: ignore[union-attr]


def test_tool_error_is_a_system_signal_and_escalates_alone() -> None:
    conv = chat(("user", "Move $200 to savings."))
    conv.nodes.append(
        ConversationNode(
            id="n2",
            type=NodeType.TOOL_CALL,
            turn=1,
            name="transfer_funds",
            output="Error 422: invalid value 'instant'",
            status="error",
        )
    )
    det = detect_offline(conv)
    assert types(det) == {SignalType.TOOL_EXECUTION_ERROR}
    assert det.escalate and det.confidence == 1.0


def test_explicit_feedback_escalates() -> None:
    det = detect_offline(
        chat(
            ("user", "Fee?"),
            ("agent", "$25."),
            feedback=[Feedback(turn=1, rating="negative", comment="wrong")],
        )
    )
    assert types(det) == {SignalType.EXPLICIT_FEEDBACK} and det.escalate


def test_benign_sessions_do_not_escalate() -> None:
    det = detect_offline(
        chat(
            ("user", "What is the overdraft fee?"),
            ("agent", "The overdraft fee is $35 per item."),
            ("user", "Actually, I have another question: what is the wire fee?"),
            ("agent", "The outgoing wire fee is $30."),
            ("user", "No worries, that's right. Thanks!"),
        )
    )
    assert not det.escalate
    assert SignalType.CORRECTION not in types(det)


def test_weights_and_escalation_rule() -> None:
    assert SIGNAL_WEIGHTS[SignalType.CORRECTION] == 1.0
    assert SIGNAL_WEIGHTS[SignalType.REPETITION] == 0.8
    assert SIGNAL_WEIGHTS[SignalType.SEMANTIC_DRIFT] == 0.5
    weak = Detection.from_signals(
        "s", [Signal(type=SignalType.NEGATIVE_SENTIMENT, turn=1, evidence="ugh", confidence=1.0)]
    )
    assert weak.confidence == 0.5 and not weak.escalate
    repair = Detection.from_signals(
        "s", [Signal(type=SignalType.CONVERSATIONAL_REPAIR, turn=1, evidence="I said", confidence=0.9)]
    )
    assert repair.confidence == pytest.approx(0.72) and repair.escalate
    system = Detection.from_signals(
        "s", [Signal(type=SignalType.TOOL_EXECUTION_ERROR, turn=1, evidence="err", confidence=0.1)]
    )
    assert system.escalate and system.confidence == pytest.approx(0.1)


def test_llm_form_reads_the_models_json() -> None:
    answer = {
        "signals": [
            {"type": "correction", "turn": 2, "node_id": "n3", "evidence": "that's wrong", "confidence": 0.9}
        ]
    }
    model = FakeListChatModel(responses=["```json\n" + json.dumps(answer) + "\n```"])
    det = detect(chat(("user", "Fee?"), ("agent", "$25."), ("user", "that's wrong")), mode="llm", model=model)
    assert det.mode == "llm" and det.calls == 1
    assert [(s.type, s.node_id) for s in det.signals] == [(SignalType.CORRECTION, "n3")]
    assert det.escalate and det.confidence == pytest.approx(0.9)


def test_llm_form_without_model_reports_not_run() -> None:
    det = detect(chat(("user", "Fee?")), mode="llm")
    assert det.status == "not_run" and "no chat model" in (det.reason or "")
    assert det.signals == [] and not det.escalate


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I think the user is unhappy.", "expected a JSON object"),
        ('{"sig": []}', "no 'signals' key"),
        ('{"signals": [{"type": "ANGER", "confidence": 0.5}]}', "unknown type"),
        ('{"signals": [{"type": "CORRECTION", "confidence": 3}]}', "confidence must be"),
    ],
)
def test_llm_form_rejects_bad_answers(reply: str, message: str) -> None:
    with pytest.raises(LLMResponseError, match=message):
        detect(chat(("user", "Fee?")), mode="llm", model=FakeListChatModel(responses=[reply]))


def test_unknown_mode_is_named() -> None:
    with pytest.raises(ValueError, match="unknown detector mode 'fast'"):
        detect(chat(("user", "x")), mode="fast")  # type: ignore[arg-type]

"""The dissatisfaction detector, offline (rule-based, deterministic) form.

Patterns are generic English: corrections ("no, that's wrong", "actually it's X", "that's
outdated", "it's X, not Y", "you should have ..."), conversational repair ("I said ...", "I meant
..."), clarification requests, negative sentiment; tool errors come from tool outputs; repetition
is a near-duplicate user turn; drift is a reply that shares almost no content words with the
question; abandonment is a session that ends right after an unresolved signal.
:func:`detect` dispatches to this form or to the LLM form in :mod:`.detector_llm`.
"""

from __future__ import annotations

import re
from typing import Literal

from langchain_core.language_models import BaseChatModel

from causal_middleware.context.absence import supplied_answers
from causal_middleware.context.alternatives import asked_alternatives
from causal_middleware.context.concessions import conceded_corrections
from causal_middleware.context.contradictions import contradictions
from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.pushback import pushback, restated_meaning, restated_requirement
from causal_middleware.context.signal_patterns import (
    ABANDON_PATTERNS,
    BENIGN,
    CLARIFICATION_PATTERNS,
    CORRECTION_PATTERNS,
    NEGATIVE_FEEDBACK,
    REPAIR_PATTERNS,
    SENTIMENT_PATTERNS,
)
from causal_middleware.context.signals import Detection, Signal, SignalType
from causal_middleware.context.statements import asks_for_information, judging_text, statement_kind
from causal_middleware.context.text import (
    content_tokens,
    expand_informal,
    find_values,
    jaccard,
    quote,
    sentences,
    share_stem,
    stem,
    term_seq,
    term_set,
    word_number,
)
from causal_middleware.context.tool_errors import looks_like_error

_I = re.IGNORECASE

_ERROR_OUTPUT = re.compile(
    r"^\s*(?:error|exception|traceback|fatal)\b|\b(?:status(?:_code)?|http)\W{0,3}[45]\d\d\b|"
    r"\b(?:failed|failure|timed? ?out|not found|invalid|unauthori[sz]ed|forbidden|denied|unknown parameter)\b",
    _I,
)

REPETITION_THRESHOLD = 0.6
DRIFT_COVERAGE = 0.15


def detect(
    conversation: Conversation,
    *,
    mode: Literal["offline", "llm"] = "offline",
    model: BaseChatModel | None = None,
) -> Detection:
    """Detect dissatisfaction in a session with the offline rules or, given a chat model, the LLM.

    ``mode="llm"`` without a model returns a Detection with ``status="not_run"``.
    """
    if mode == "offline":
        return detect_offline(conversation)
    if mode == "llm":
        from causal_middleware.context.detector_llm import detect_llm

        return detect_llm(conversation, model)
    raise ValueError(f"unknown detector mode {mode!r}; expected 'offline' or 'llm'")


def detect_offline(conversation: Conversation) -> Detection:
    """The rule-based detector: every signal with its evidence quote and turn."""
    signals: list[Signal] = []
    user_nodes = conversation.user_turns
    for node in user_nodes:
        signals += _unrelated_weak_cues(
            conversation, node, _language_signals(node, _follows_answer(conversation, node))
        )
    signals += supplied_answers(conversation, signals)
    signals += contradictions(conversation, signals)
    signals += pushback(conversation, signals)
    signals += restated_meaning(conversation, signals)
    signals += restated_requirement(conversation, signals)
    signals = _repaired_questions(conversation, signals)
    signals += conceded_corrections(conversation, signals)
    signals += asked_alternatives(conversation, signals)
    signals += _tool_errors(conversation)
    signals += _repetitions(user_nodes)
    signals += _drift(conversation)
    signals += _feedback(conversation)
    signals += _unanswered_replies(conversation, signals)
    signals += _abandonment(conversation, signals)
    signals.sort(key=lambda s: (s.turn, s.type.value))
    return Detection.from_signals(conversation.session_id, signals)


def _best(patterns: tuple[tuple[re.Pattern[str], float], ...], text: str) -> tuple[float, str] | None:
    best: tuple[float, str] | None = None
    for pattern, conf in patterns:
        m = pattern.search(text)
        if m and (best is None or conf > best[0]):
            best = (conf, m.group(0))
    return best


def _follows_answer(conversation: Conversation, node: ConversationNode) -> bool:
    """Whether the agent has said anything before this user turn (there is an answer to correct)."""
    return any(n.type == NodeType.AGENT for n in conversation.nodes[: conversation.index(node.id)])


def _language_signals(node: ConversationNode, follows_answer: bool = True) -> list[Signal]:
    text = expand_informal(node.content)
    benign = BENIGN.search(text) is not None
    out = []
    for sig_type, patterns in (
        (SignalType.CORRECTION, CORRECTION_PATTERNS),
        (SignalType.CONVERSATIONAL_REPAIR, REPAIR_PATTERNS),
        (SignalType.CLARIFICATION_REQUEST, CLARIFICATION_PATTERNS),
        (SignalType.NEGATIVE_SENTIMENT, SENTIMENT_PATTERNS),
    ):
        if sig_type == SignalType.CORRECTION and not follows_answer:
            continue  # nothing has been said yet that the turn could correct
        hit = _best(patterns, judging_text(text) if sig_type == SignalType.CORRECTION else text)
        if hit is None:
            continue
        conf, _ = hit
        if benign:
            conf *= 0.5
        out.append(
            Signal(type=sig_type, turn=node.turn, node_id=node.id, evidence=quote(text), confidence=conf)
        )
    if NEGATIVE_FEEDBACK.search(text):
        out.append(
            Signal(
                type=SignalType.EXPLICIT_FEEDBACK,
                turn=node.turn,
                node_id=node.id,
                evidence=quote(text),
                confidence=1.0,
            )
        )
    return out


WEAK_CUE = 0.75
_WEAK_WORD = re.compile(r"\b(?:wrong|incorrect|mistaken|inaccurate|false)\b", _I)
_INDEFINITE_CUE = re.compile(
    r"\b(?:a|an|any|some)\s+(?:wrong|incorrect|mistaken|inaccurate|false)\s+[a-z]|"
    # "is something wrong with it?", "what's wrong with my card?": a fault in a thing the question
    # asks about, not a verdict on the answer
    r"\b(?:something|anything|what's|what is|what)\s+(?:\w+\s+)?wrong\s+with\b",
    _I,
)


def _unrelated_weak_cues(
    conversation: Conversation, node: ConversationNode, found: list[Signal]
) -> list[Signal]:
    """Drop weak correction cues (a bare "wrong") in a turn that asks a new question sharing no
    word with the agent's last answer: "I got the wrong size, how do I return it?" asks for help,
    it does not correct the answer."""
    if not any(s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE for s in found):
        return found
    sents = sentences(node.content)
    # the question may come before a closing detail ("..., can I still send it back? I bought it
    # a fortnight ago.")
    if not sents or not any(statement_kind(s) == "question" for s in sents):
        return found
    # The cue sits in the user's account of their own situation ("I got the wrong size, ..."):
    # it is about what happened to them, not about the answer.
    clauses = [c for sent in sents for c in re.split(r"[,;:]", sent)]
    if any(_WEAK_WORD.search(c) and statement_kind(c) == "personal" for c in clauses):
        return [s for s in found if not (s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE)]
    # "... for an incorrect charge?": after an indefinite article the cue describes something the
    # question introduces, not the answer it would judge.
    if all(_INDEFINITE_CUE.search(sent) or not _WEAK_WORD.search(sent) for sent in sents):
        return [s for s in found if not (s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE)]
    i = conversation.index(node.id)
    answer = next((n for n in reversed(conversation.nodes[:i]) if n.type == NodeType.AGENT), None)
    if answer is not None and set(term_seq(node.content)) & set(term_seq(answer.content)):
        return found
    return [s for s in found if not (s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE)]


# A negation in a reply: "can't", "nothing", "no ...", "not", "without".


def _repaired_questions(conversation: Conversation, signals: list[Signal]) -> list[Signal]:
    """A repair ("that's not what I asked", "I meant the X") says the user turn it looks back to
    was a question the agent misread: that question's own correction signals were misreadings
    too ("Why do you charge members extra just to print?" asked, it did not object)."""
    repaired = {s.node_id for s in signals if s.type == SignalType.CONVERSATIONAL_REPAIR}
    users = conversation.user_turns
    asked: set[str | None] = set()
    for prev, node in zip(users, users[1:], strict=False):
        if node.id in repaired and prev.content.rstrip().endswith("?") and prev.id not in repaired:
            asked.add(prev.id)
    return [s for s in signals if not (s.type == SignalType.CORRECTION and s.node_id in asked)]


def _tool_errors(conversation: Conversation) -> list[Signal]:
    out = []
    for n in conversation.of_type(NodeType.TOOL_CALL, NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP):
        head = n.output[:300]
        if n.status == "error" or (
            n.type == NodeType.TOOL_CALL and (_ERROR_OUTPUT.search(head) or looks_like_error(n.output))
        ):
            out.append(
                Signal(
                    type=SignalType.TOOL_EXECUTION_ERROR,
                    turn=n.turn,
                    node_id=n.id,
                    evidence=quote(f"{n.name or 'tool'}: {n.output}"),
                    confidence=1.0,
                )
            )
    return out


def _repetitions(user_nodes: list[ConversationNode]) -> list[Signal]:
    out = []
    seen: list[tuple[ConversationNode, set[str]]] = []
    for node in user_nodes:
        terms = term_set(node.content)
        if len(terms) >= 3:
            for prev, prev_terms in seen:
                sim = jaccard(terms, prev_terms)
                if sim >= REPETITION_THRESHOLD:
                    conf = round(min(1.0, 0.75 + 0.25 * sim), 3)
                    out.append(
                        Signal(
                            type=SignalType.REPETITION,
                            turn=node.turn,
                            node_id=node.id,
                            evidence=quote(f"{node.content} (repeats turn {prev.turn})"),
                            confidence=conf,
                        )
                    )
                    break
        seen.append((node, terms))
    return out


def _drift(conversation: Conversation) -> list[Signal]:
    """A reply that covers almost none of the content words of the question it answers."""
    out = []
    last_user: ConversationNode | None = None
    for n in conversation.nodes:
        if n.type == NodeType.USER:
            last_user = n
        elif n.type == NodeType.AGENT and last_user is not None:
            question = {stem(t) for t in content_tokens(last_user.content)}
            if len(question) >= 3 and "?" in last_user.content:
                reply = term_set(n.content)
                cov = len(question & reply) / len(question)
                if cov < DRIFT_COVERAGE and not n.content.rstrip().endswith("?"):
                    out.append(
                        Signal(
                            type=SignalType.SEMANTIC_DRIFT,
                            turn=n.turn,
                            node_id=n.id,
                            evidence=quote(n.content),
                            confidence=round(0.8 - cov, 3),
                        )
                    )
            last_user = None
    return out


def _feedback(conversation: Conversation) -> list[Signal]:
    return [
        Signal(
            type=SignalType.EXPLICIT_FEEDBACK,
            turn=f.turn,
            evidence=quote(f.comment or "negative feedback"),
            confidence=1.0,
        )
        for f in conversation.feedback
        if f.rating == "negative"
    ]


UNANSWERED_CONFIDENCE = 0.75
# The user's own plan for what comes next ("I'll book it then"): a reply that closes, not one that objects.
_OWN_PLAN = re.compile(r"\b(?:i|we)(?:'ll|\s+will|\s+shall|\s+am going to|'m going to|\s+are going to)\b", _I)
# Gratitude closes an exchange ("Cheers, that's sorted it.", "Lovely, ta."), in any register.
_GRATITUDE = re.compile(
    r"\b(?:thanks?|thank you|thx|ty|cheers|ta|appreciated?|grateful|merci|danke|gracias|grazi[ae]|obrigad[oa])\b",
    _I,
)


# A clause that asks: a question word, or a positive auxiliary, opens it ("is the shop open?",
# "..., is that the same room?"); a negative one challenges ("isn't that for a fitter?").
_ASKING_CLAUSE = re.compile(
    r"^(?:(?:and|but|so|or|then)\s+)*(?:what|when|where|which|who|whom|whose|why|how|do|does|did|can|could|"
    r"should|shall|will|would|may|might|is|are|am|was|were|have|has)\b(?!n't)",
    _I,
)


def _open_question(sentence: str) -> bool:
    """A question one of whose clauses asks for something, not one that challenges or restates."""
    if not sentence.rstrip().endswith("?"):
        return False
    return any(_ASKING_CLAUSE.match(c.strip()) for c in re.split(r"[,;:]", sentence) if c.strip())


def _unanswered_replies(conversation: Conversation, signals: list[Signal]) -> list[Signal]:
    """A user's reply to an answer that the agent never answered, when it says something about
    that exchange: it ends the session sharing a content word with the question or the answer
    it replies to (not a thanks, a plan or a new question or request), or the user speaks again
    without a reply in between. The user had the last word against the answer; no phrase family
    is needed to read it as an objection ("I don't think she'd want her number given out.")."""
    agents = [i for i, n in enumerate(conversation.nodes) if n.type == NodeType.AGENT]
    if not agents:
        return []
    last_agent = conversation.nodes[agents[-1]]
    tail = [n for n in conversation.nodes[agents[-1] + 1 :] if n.type == NodeType.USER]
    if not tail:
        return []
    before = [n for n in conversation.nodes[: agents[-1]] if n.type == NodeType.USER]
    exchange = term_set(last_agent.content) | (term_set(before[-1].content) if before else set())
    # a repair re-asks what was meant (it is a misreading, not an objection); a repetition re-asks
    flagged = {
        s.node_id
        for s in signals
        if s.type in (SignalType.CORRECTION, SignalType.CONVERSATIONAL_REPAIR, SignalType.REPETITION)
    }
    node = tail[0]
    text = expand_informal(node.content)
    sents = sentences(text)
    if (
        node.id in flagged
        or not sents
        or BENIGN.search(text)
        or _GRATITUDE.search(text)
        or any(p.search(text) for p in ABANDON_PATTERNS)
        or _OWN_PLAN.search(text)
        # a value in the reply is the value rules' to read (a contradiction, a supplied answer, or
        # the user's own case); this one reads replies about what the agent did
        or find_values(text)
        or any(word_number(w) is not None for w in re.findall(r"[a-z]+", text.lower()))
        or any(asks_for_information(sent) or _open_question(sent) for sent in sents)
    ):
        return []
    spoke_again = len(tail) > 1
    about = share_stem(term_set(text), exchange) and statement_kind(sents[0]) != "request"
    if not (spoke_again or about):
        return []
    return [
        Signal(
            type=SignalType.CORRECTION,
            turn=node.turn,
            node_id=node.id,
            evidence=quote(f"{node.content} (left unanswered)"),
            confidence=UNANSWERED_CONFIDENCE,
        )
    ]


def _abandonment(conversation: Conversation, signals: list[Signal]) -> list[Signal]:
    """The session ends on the user's side right after an unresolved signal, or with a give-up line."""
    if not conversation.nodes:
        return []
    users = conversation.user_turns
    if not users:
        return []
    last_user = users[-1]
    after = [
        n for n in conversation.nodes[conversation.index(last_user.id) + 1 :] if n.type == NodeType.AGENT
    ]
    unresolved = any(
        s.node_id == last_user.id
        and s.type
        in (
            SignalType.CORRECTION,
            SignalType.NEGATIVE_SENTIMENT,
            SignalType.REPETITION,
            SignalType.CONVERSATIONAL_REPAIR,
        )
        for s in signals
    )
    give_up = any(p.search(last_user.content) for p in ABANDON_PATTERNS)
    earlier_signal = any(s.turn < last_user.turn and s.type != SignalType.SEMANTIC_DRIFT for s in signals)
    if (unresolved and not after) or (give_up and earlier_signal):
        return [
            Signal(
                type=SignalType.SESSION_ABANDONMENT,
                turn=last_user.turn,
                node_id=last_user.id,
                evidence=quote(last_user.content),
                confidence=0.9 if give_up else 0.8,
            )
        ]
    return []

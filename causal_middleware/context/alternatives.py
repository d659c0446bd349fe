"""An answer asked back as a choice: "Is that per person or per group?" after "... £8 per person".

A question whose subject points back at the answer ("is that", "was it", "are they") and offers two
alternatives, one in the answer's own words and one it did not say, tells that the answer left open
what it meant (or that the user doubts it): the answer was not put so that it could be understood.
No cue word is needed: the structure (an anaphoric yes/no question, "X or Y", one side echoing the
answer) is the signal. It is read as a clarification request on the answer, and the delta is
behavioural: how the agent stated its answer, not a value to set right.
"""

from __future__ import annotations

import re

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.replies import replies
from causal_middleware.context.signals import Signal, SignalType
from causal_middleware.context.statements import LEAD_IN
from causal_middleware.context.text import expand_informal, quote, sentences

_I = re.IGNORECASE

ALTERNATIVE_CONFIDENCE = 0.9

# "is that ...", "was it ...", "are they ...", "does that mean ...": the subject is the answer.
_ANAPHORIC_QUESTION = re.compile(
    r"^(?:and\s+|so\s+|but\s+)?(?:is|was|are|were|does|did|do|will|would)\s+(?:that|it|this|those|these|they)\s+"
    r"(?:mean\s+|for\s+|per\s+|in\s+|on\s+)?(?P<rest>[^?]+?)\s*\?+\s*$",
    _I,
)
_WORD = re.compile(r"[\w'%£$€.-]+")
_FUNCTION_WORDS = frozenset(
    "a an the per each every for in on at of to by with or and is it that this".split()
)


def _words(text: str) -> list[str]:
    return [w.lower().strip(".") for w in _WORD.findall(text) if w.strip(".")]


def echoed_alternative(sentence: str, answer: str) -> tuple[str, str] | None:
    """``(said, other)`` when ``sentence`` asks the answer back as a choice between the answer's own
    words and words it did not say; else None."""
    body = LEAD_IN.sub("", expand_informal(sentence).strip())
    m = _ANAPHORIC_QUESTION.match(body)
    if m is None:
        return None
    sides = re.split(r"\s+or\s+", m.group("rest").strip(), flags=_I)
    if len(sides) != 2:
        return None
    said = set(_words(answer))
    left = [w for w in _words(sides[0])[-3:] if w not in _FUNCTION_WORDS]
    right = [w for w in _words(sides[1])[:3] if w not in _FUNCTION_WORDS]
    if not left or not right:
        return None
    in_left, in_right = all(w in said for w in left), all(w in said for w in right)
    if in_left == in_right:
        return None  # both sides (or neither) are the answer's: a real choice, not the answer's own
    a, b = (sides[0], sides[1]) if in_left else (sides[1], sides[0])
    return a.strip(), b.strip()


def asked_alternatives(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A clarification request on each user turn right after an agent answer (see :func:`replies`)
    that asks the answer back as a choice (see :func:`echoed_alternative`)."""
    out = []
    for agent, n in replies(conversation, found):
        if any(echoed_alternative(s, agent.content) for s in sentences(n.content)):
            out.append(
                Signal(
                    type=SignalType.CLARIFICATION_REQUEST,
                    turn=n.turn,
                    node_id=n.id,
                    evidence=quote(n.content),
                    confidence=ALTERNATIVE_CONFIDENCE,
                )
            )
    return out


def alternative_rule(correction: str, answer: str | None) -> str | None:
    """The rule a choice asked back implies: say which of the two the answer means."""
    if not answer:
        return None
    for sent in sentences(correction):
        pair = echoed_alternative(sent, answer)
        if pair is not None:
            said, other = pair
            return f"State answers so that it is clear whether they mean {said} or {other}."
    return None

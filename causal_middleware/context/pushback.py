"""Pushback without correction words: a prohibition, a rhetorical question or an objection about
what the answer said, and a repair that supplies the value the answer missed."""

from __future__ import annotations

import re

from causal_middleware.context.agent_acts import disputes_act
from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.objections import (
    OWN_WORDS,
    behavioural_objection,
    challenges_agent,
    doubted_with_source,
    prior_belief,
    relayed_conflict,
    relayed_contradiction,
    relayed_value,
)
from causal_middleware.context.replies import replies
from causal_middleware.context.signals import Signal, SignalType
from causal_middleware.context.statements import LEAD_IN, asks_for_information, trailing_question
from causal_middleware.context.text import (
    MEASURED_KINDS,
    expand_informal,
    find_values,
    quote,
    same_value,
    sentences,
    share_stem,
    term_seq,
)

_I = re.IGNORECASE

# A prohibition addressed to the agent ("Don't read out my ...", "Never tell ...") and a rhetorical
# question about what the agent may do ("How can you be sure of ...?", "Why would you send ...?").
# Their shape is generic; whether they push back on the answer is decided by what they refer to.
_PROHIBITION = re.compile(
    r"^(?:please\s+)?(?:don't|do not|never)\s+(?!worry\b|mind\b|bother\b|forget\b|hesitate\b)(?P<verb>[a-z]+)\b",
    _I,
)
_EVEN = re.compile(r"\beven\b", _I)
_RHETORICAL = re.compile(
    r"^(?:so\s+)?(?:how|why)\s+(?:can|could|would|did|do|are)\s+you\s+(?:even\s+|just\s+)?"
    r"(?!help\b|tell\b|explain\b|show\b|find\b|check\b|make sure\b|get\b|know\b|see\b)(?P<verb>[a-z]+)\b",
    _I,
)

# "how can you know people will ...?", "how could you be sure it's ...?": the agent's certainty
# doubted, a rhetorical question about what the answer asserted (not "how do you know ...", which
# can ask for the source)
_DOUBTED_CERTAINTY = re.compile(
    r"^(?:so\s+|but\s+)?how\s+(?:can|could)\s+you\s+(?:even\s+|possibly\s+|really\s+|just\s+)?"
    r"(?P<verb>know|be\s+(?:so\s+)?(?:sure|certain)|guarantee|promise)\b",
    _I,
)


def pushback_form(sentence: str) -> bool:
    """A prohibition addressed to the agent or a rhetorical "how can you / why are you ...?"
    question: the forms :func:`pushback` reads, whatever their object."""
    return any(
        _PROHIBITION.match(body) or _RHETORICAL.match(body) for body in _readings(expand_informal(sentence))
    )


def _readings(sentence: str) -> list[str]:
    """The sentence without its lead-in words and, when it ends in a question clause of its own
    ("Nobody has replied yet, so how would you know?"), that clause: a rhetorical question may
    follow the account that grounds it."""
    body = LEAD_IN.sub("", sentence.strip())
    q = trailing_question(body)
    return [body, q] if q and q != body else [body]


def pushback(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A user turn that pushes back on what the agent just said or did, with no correction words:
    a prohibition or a rhetorical "how can you ...?" whose object is what the answer was about (it
    shares a content word with the answer). "Don't forget to ..." and a question about something
    the answer never mentioned are not pushback."""
    out = []
    for last_agent, n in replies(conversation, found):
        answer_terms = set(term_seq(last_agent.content))
        agent_said = " ".join(
            m.content for m in conversation.nodes[: conversation.index(n.id)] if m.type == NodeType.AGENT
        )
        said = sentences(n.content)
        # "Where's my refund? It was supposed to be paid on Monday." after an answer on another matter:
        # a new question first, and the rest sets its scene; it objects to nothing the agent said.
        # With the account first and the question last, nothing in the turn may touch the answer.
        new_topic = bool(said) and (
            (asks_for_information(said[0]) and not share_stem(set(term_seq(said[0])), answer_terms))
            or (asks_for_information(said[-1]) and not share_stem(set(term_seq(n.content)), answer_terms))
        )
        for body in (b for sent in sentences(expand_informal(n.content)) for b in _readings(sent)):
            m = _PROHIBITION.match(body) or _RHETORICAL.match(body) or _DOUBTED_CERTAINTY.match(body)
            if (
                (
                    m
                    and (
                        share_stem(set(term_seq(body[m.start("verb") :])), answer_terms)
                        # ... or one of its values ("why are you promising me 3 weeks?")
                        or any(
                            same_value(v, a)
                            for _, v in find_values(body[m.start("verb") :])
                            for _, a in find_values(last_agent.content)
                        )
                    )
                )
                # "how can you promise a time when the cleaners aren't even in yet": "even" makes it rhetorical
                or (m and m.re is _RHETORICAL and _EVEN.search(body))
                or challenges_agent(body)
                or disputes_act(n.content, last_agent.content)
                or (behavioural_objection(body, agent_said) and not new_topic)
                or relayed_conflict(n.content)
                or relayed_contradiction(n.content, last_agent.content)
                or relayed_value(n.content, last_agent.content)
                or doubted_with_source(n.content)
                or prior_belief(body)
            ):
                out.append(
                    Signal(
                        type=SignalType.CORRECTION,
                        turn=n.turn,
                        node_id=n.id,
                        evidence=quote(f"{n.content} (after: {last_agent.content})"),
                        confidence=0.8,
                    )
                )
                break
    return out


def restated_meaning(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A repair that says what the user meant and carries a measured value the answer never
    stated ("no, I meant the annual pass (90 days)"): the user supplies the answer the agent
    missed, a correction whatever cue words the repair itself uses."""
    repaired = {s.node_id for s in found if s.type == SignalType.CONVERSATIONAL_REPAIR}
    out = []
    for last_agent, n in replies(conversation, found):
        if n.id not in repaired:
            continue
        said = [v for _, v in find_values(last_agent.content)]
        new = [
            v
            for kind, v in find_values(n.content)
            if kind in MEASURED_KINDS and not any(same_value(v, a) for a in said)
        ]
        if new:
            out.append(
                Signal(
                    type=SignalType.CORRECTION,
                    turn=n.turn,
                    node_id=n.id,
                    evidence=quote(f"{n.content} (the agent said: {last_agent.content})"),
                    confidence=0.8,
                )
            )
    return out


def restated_requirement(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """The user restates what they said before and the agent's reply left out ("I said I don't
    see the point of anything" after a reply that only gave the form): two or more content words
    of the restated part come from an earlier user turn, and the reply in between misses one of
    them. The agent ignored part of the request, a correction of its answer."""
    flagged = {s.node_id for s in found if s.type == SignalType.CORRECTION}
    out = []
    earlier: list[set[str]] = []
    last_agent: ConversationNode | None = None
    for n in conversation.nodes:
        if n.type == NodeType.AGENT:
            last_agent = n
            continue
        if n.type != NodeType.USER:
            continue
        m = OWN_WORDS.search(expand_informal(n.content))
        if m and last_agent is not None and n.id not in flagged:
            restated = set(term_seq(m.group("rest")))
            reply = set(term_seq(last_agent.content))
            for before in earlier:
                shared = restated & before
                if len(shared) >= 2 and any(not share_stem({t}, reply) for t in shared):
                    out.append(
                        Signal(
                            type=SignalType.CORRECTION,
                            turn=n.turn,
                            node_id=n.id,
                            evidence=quote(f"{n.content} (the reply left out: {', '.join(sorted(shared))})"),
                            confidence=0.85,
                        )
                    )
                    break
        earlier.append(set(term_seq(n.content)))
        last_agent = None
    return out

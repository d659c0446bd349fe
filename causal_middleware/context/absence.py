"""Absence: an agent reply saying the thing asked about is not there, and the value the user then supplies."""

from __future__ import annotations

import re

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.signals import Signal, SignalType
from causal_middleware.context.statements import (
    EXPERIENCED,
    REPORTED,
    STATEMENT,
    asks_for_information,
    statement_kind,
)
from causal_middleware.context.text import (
    MEASURED_KINDS,
    QUESTION_WORDS,
    expand_informal,
    find_values,
    quote,
    sentences,
    share_stem,
    term_set,
)

_I = re.IGNORECASE

# The agent says it could not answer; a user turn that then states the answer corrects the gap.
AGENT_FAILED = re.compile(
    r"\b(?:couldn't|could not|can't|cannot|wasn't able to|was not able to|unable to|not able to) (?:find|locate|answer)\b|"
    r"\b(?:don't|do not) have (?:any )?(?:information|details|data|anything|an answer)\b|"
    r"\bno (?:information|results|matching (?:entries|results))\b|\bI (?:don't|do not) know\b|"
    r"\b(?:doesn't|does not|don't|do not) (?:seem to )?(?:cover|include|mention|have|contain|list|specify|"
    r"say (?:anything|much))\b|"
    # "Our help pages don't say, I'm afraid.": a source's "say" with no object ends the clause
    r"\b(?:doesn't|does not|don't|do not|didn't|did not) (?:say|state|specify|mention)(?:\s+so)?(?=\s*(?:[,.;!?]|$))|"
    r"\bthere(?:'s| is) nothing (?:on|about|in|for)\b",
    _I,
)

_COUNT = re.compile(r"\d{1,4}(?:\.\d+)?")
_NEGATION = re.compile(r"\b(?:no|not|nothing|none|never|nowhere|cannot|without)\b|n't\b", _I)


# The agent's own negated ability or act whose object is a negative-polarity "anything" / "any
# ...": the reply reports that a look-up came back empty, however it names the subject ("I wasn't
# able to dig up anything on ...", "I can't see any mention of ...").
_NEGATED_SEARCH = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|just\s+)?(?:couldn't|could not|can't|cannot|wasn't able to|was not able to|"
    r"weren't able to|am unable to|was unable to|didn't|did not|don't|do not)\s+(?:[a-z]+\s+){1,2}?(?:anything|any\b)",
    _I,
)


# The agent speaking of its own knowledge or sources ("I don't have ...", "my search ...", "our
# docs ..."): with a negation, the reply is about what it could not find, not about the world
# ("we don't charge for that" answers; "our pages don't cover that" reports an absence).
_OWN_SOURCES = re.compile(r"\b(?:i|i'm|i've|my|our\s+[a-z]+)\b", _I)
# ... whose negation bears on the thing asked: an anaphor or an indefinite in the same clause
# ("I don't have that", "our pages don't cover it", "my search returned nothing").
_NEGATED_OBJECT = re.compile(
    r"\bnothing\b|(?:n't|\bnot|\bno|\bnever)\b[^,.;!?]*\b(?:that|this|it|anything|any|something|one)\b|"
    # ... or an anaphoric subject of the negation ("that isn't covered in the pages I have")
    r"\b(?:that|this|it)(?:'s|\s+is|\s+was|\s+isn't|\s+wasn't)\s*(?:not\b|(?<=n't))",
    _I,
)


# A claim about the world inside a personal frame: a third-person copula ("I'm sure it's ...", "I'm
# sure the fee is ..."), or
# a verb of belief or memory framing it ("I think they close at ...", "I remember it being ...").
_EMBEDDED_ASSERTION = re.compile(
    r"\b(?:it|that|this|they|there)(?:'s|'re| is| are| was| were)\b|"
    # ... or a noun phrase's ("I'm fairly sure the late fee is $5", "I checked: the limit is 4")
    r"\b(?:the|its|their|your)\s+[a-z][\w-]*(?:\s+[a-z][\w-]*){0,5}?\s+(?:is|are|was|were)\b|"
    r"\b(?:i|we)\s+(?:\w+\s+)?(?:think|believe|guess|reckon|know|remember|recall|thought|understood|heard)\b",
    _I,
)


def _appended_value(sentence: str) -> bool:
    """The sentence ends in a value set off by a colon or a dash ("I found it in an old letter:
    $12.00", "what the form says - 5 days"): an apposition that states the value, whatever frame
    the sentence opens with."""
    m = re.search(r"(?::|\s[-\u2013\u2014])\s*([^:]+?)[.!]*\s*$", sentence)
    if m is None or len(m.group(1).split()) > 5:
        return False
    tail = m.group(1).strip(" .!")
    values = find_values(tail)
    if not values:
        return False
    if len(values) == 1 and values[0][1].lower() == tail.lower():
        return True  # the value alone ("...: 2.00")
    # a measured value opens or closes it ("1.25% per month", "8th day of classes", "about $12.00");
    # a bare number after a noun labels something ("room 12")
    first, last = values[0], values[-1]
    return (first[0] in MEASURED_KINDS and tail.lower().startswith(first[1].lower())) or (
        last[0] in MEASURED_KINDS and tail.lower().endswith(last[1].lower())
    )


def _states_measured_value(reply: str) -> bool:
    """A reply that states a measured value answered something ("customers who don't have a year
    of history pay a $40 key deposit"): a negation in it reports no absence."""
    return any(kind in MEASURED_KINDS for kind, _ in find_values(expand_informal(reply)))


def states_absence(reply: str, asked: str | list[str]) -> bool:
    """The reply says the thing asked about is not there: it negates, names the subject that was
    asked or searched for (shares a word with ``asked``) or reports an empty look-up (a negated
    act with an "anything" / "any" object), and states no value of its own. Read from
    that structure, not from a list of "not found" phrasings ("I can't see anything on the X",
    "there's nothing about the X that I can find", "no X is listed")."""
    text = expand_informal(reply)
    if not _NEGATION.search(text) or text.rstrip().endswith("?"):
        return False
    # a reply that states a measured value or a count answered ("at least 12 credits and no failed
    # courses"): its negation is part of the answer
    if any(
        kind in MEASURED_KINDS or (kind == "number" and _COUNT.fullmatch(span))
        for kind, span in find_values(text)
    ):
        return False
    if _NEGATED_SEARCH.search(text) or (_OWN_SOURCES.search(text) and _NEGATED_OBJECT.search(text)):
        return True
    texts = [asked] if isinstance(asked, str) else asked
    return share_stem(
        term_set(text, drop=QUESTION_WORDS), {t for a in texts for t in term_set(a, drop=QUESTION_WORDS)}
    )


def supplied_answers(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A user turn that states a value right after the agent said it could not find the answer:
    a stock "could not find" phrase, or any reply that states the asked subject's absence
    (:func:`states_absence`) followed by a statement carrying a value."""
    out = []
    corrected = {s.node_id for s in found if s.type == SignalType.CORRECTION}
    last_agent: ConversationNode | None = None
    asked: list[str] = []
    for n in conversation.nodes:
        if n.type == NodeType.AGENT:
            last_agent = n
        elif n.type in (NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP):
            asked.append(n.content)
        elif n.type == NodeType.USER:
            # what the user states about the world or relays; their own plans and requests ("I'll
            # book the gym for 2 hours then", "I need a desk for 3 days") supply no answer
            statements = [
                sent
                for sent in sentences(n.content)
                if not sent.endswith("?")
                and (
                    statement_kind(sent) not in ("personal", "request")
                    or REPORTED.search(sent)
                    # "I'm pretty sure it's 2 hours": a personal frame around an assertion
                    or (statement_kind(sent) == "personal" and _EMBEDDED_ASSERTION.search(sent))
                    # "I paid $12 a day last time": the user's own experience of the value
                    or EXPERIENCED.search(sent)
                    # "I found it in an old email: $12.00": the value set off by a colon closes it
                    or _appended_value(sent)
                )
            ]
            opening = sentences(n.content)[:1]
            if opening and asks_for_information(opening[0]):
                # a new question first ("what is his balance? his number is 4007"): its details supply nothing
                statements = []
            failed = last_agent is not None and (
                bool(AGENT_FAILED.search(last_agent.content))
                and not _states_measured_value(last_agent.content)
                and any(find_values(sent) or STATEMENT.search(sent) for sent in statements)
                or states_absence(last_agent.content, asked)
                and any(find_values(sent) for sent in statements)
            )
            asked = [n.content]
            if last_agent is not None and n.id not in corrected and failed:
                out.append(
                    Signal(
                        type=SignalType.CORRECTION,
                        turn=n.turn,
                        node_id=n.id,
                        evidence=quote(f"{n.content} (after: {last_agent.content})"),
                        confidence=0.85,
                    )
                )
            last_agent = None
    return out

"""Contradictions: a user statement giving another value than the agent's last answer, no cue words needed."""

from __future__ import annotations

import re

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.replies import replies
from causal_middleware.context.signals import Signal, SignalType
from causal_middleware.context.statements import (
    LEAD_IN,
    REPORTED,
    STATEMENT,
    asks_for_information,
    statement_kind,
)
from causal_middleware.context.text import (
    MEASURED_KINDS,
    expand_informal,
    find_values,
    in_answer_units,
    quote,
    same_value,
    sentences,
    term_seq,
)

_I = re.IGNORECASE

CONTRADICTION_KINDS = MEASURED_KINDS

# A hypothetical states no value ("24 months would have been nicer", "if it were 2 days ...").
_HYPOTHETICAL = re.compile(r"\b(?:would|could|might)(?:'ve|\s+have)\b|^if\b|\bwish\b", _I)
# A value proposed as a question the asker expects agreement with: a negative question about the
# answer's subject ("isn't it 30 days?", "wasn't that raised to 30 days?") or a value with a tag
# ("30 days, surely?", "30 days, right?").
_PROPOSAL = re.compile(
    r"^(?:isn't|wasn't|aren't|weren't|doesn't|didn't|hasn't|haven't|shouldn't|won't)\s+(?:it|that|this|they)\b|"
    r",\s*(?:surely|right|no|correct|isn't it|wasn't it|aren't they)\s*\?+\s*$",
    _I,
)
# A value stated for the answer's subject inside a longer sentence ("last time I looked it was 30
# days"): an anaphoric subject and a copula right before it.
_ANAPHORIC_COPULA = re.compile(
    r"\b(?:it|that|this|they)(?:'s|'re| is| was| are| were| has been| had been| used to be)\s+"
    r"(?:now\s+|actually\s+|still\s+|only\s+|just\s+|really\s+)?$",
    _I,
)


def contradictions(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A user statement giving a different value than the agent's last answer: no cue words needed.

    A sentence contradicts the answer when it names the answer's own value against another
    ("24 hours, not 12 hours"), or asserts a value of the same kind (sizes compared by magnitude:
    "2 GB" is not "2000 MB"'s contradiction) as a statement about the world (it opens with a
    subject, not a verb or a request: "Your site says 48 hours now") or as a personal statement
    that refers back to the answer (shares a word with it). A sentence that names a subject and
    asserts a value of another kind than the answer's ("The restocking fee is 15%" after "30 days")
    says the agent answered something else. New requests ("move $200 to savings", "I'd like to
    transfer $500") and questions are not contradictions.
    """
    out = []
    for last_agent, n in replies(conversation, found):
        opening = sentences(n.content)[:1]
        if opening and asks_for_information(opening[0]):
            # a turn that opens with a new question or request: its values are that request's details
            continue
        said = find_values(last_agent.content)
        said_strong = [(k, v) for k, v in said if k in CONTRADICTION_KINDS]
        answer_terms = set(term_seq(last_agent.content))
        for sent in sentences(n.content):
            shape = statement_kind(sent)
            body = LEAD_IN.sub("", expand_informal(sent).strip())
            if shape == "question" and _PROPOSAL.search(body):
                shape = "assertion"
            if shape in ("question", "request") or _HYPOTHETICAL.search(body):
                continue
            values = in_answer_units(find_values(sent), said)
            if not any(same_value(v, a) for _, v in values for _, a in said):
                # no contrast with the answer's own value: only numbers in complement position
                values = in_answer_units(_complement_numbers(sent), said)
            if shape in ("other", "personal") and any(
                _ANAPHORIC_COPULA.search(sent[: sent.find(v)]) for _, v in values if v in sent
            ):
                shape = "assertion"
            contrast = any(same_value(v, a) for _, v in values for _, a in said)
            terms = set(term_seq(sent))
            refers = not terms or bool(terms & answer_terms)
            stated = bool(STATEMENT.search(sent))
            # "The letter says X", "I was told X": the user reports what a source states,
            # an assertion about the world whatever the sentence opens with.
            # "last week I paid X", "I've always been charged X": the user's own experience of it
            # (an experience told before a question sets the scene for it, it disputes nothing)
            reported = bool(REPORTED.search(sent) or (_EXPERIENCED.search(sent) and "?" not in n.content))
            stated = stated or reported
            if not (contrast or shape == "assertion" or (stated and (refers or reported))):
                continue
            hit = next(
                (
                    (value, same, 0.8)
                    for kind, value in values
                    if kind in CONTRADICTION_KINDS
                    and (same := [v for k, v in said if k == kind])
                    and not any(same_value(v, value) for v in same)
                ),
                None,
            )
            if hit is None and said_strong and shape == "assertion" and stated and terms:
                hit = next(
                    (
                        (value, [said_strong[0][1]], 0.75)
                        for kind, value in values
                        if kind in CONTRADICTION_KINDS and kind not in {k for k, _ in said_strong}
                    ),
                    None,
                )
            if hit is None and not said_strong and stated and (refers or contrast):
                hit = _other_count(values, said)
            if hit:
                out.append(
                    Signal(
                        type=SignalType.CORRECTION,
                        turn=n.turn,
                        node_id=n.id,
                        evidence=quote(f"{n.content} (the agent said {hit[1][0]})"),
                        confidence=hit[2],
                    )
                )
                break
    return out


# Reported speech: a source's statement relayed by the user ("the letter says", "I was told",
def _other_count(
    values: list[tuple[str, str]], said: list[tuple[str, str]]
) -> tuple[str, list[str], float] | None:
    """A count that differs from the answer's one count ("up to 3 renewals" -> "it's 5 renewals" or
    "5, not 3"): the answer states a single bare number and the statement another (years aside)."""
    counts = {v for k, v in said if k == "number" and not _YEAR.fullmatch(v)}
    if len(counts) != 1:
        return None
    (count,) = counts
    for kind, value in values:
        if kind in ("number", "count") and not _YEAR.fullmatch(value) and value != count:
            return value, [count], 0.75
    return None


_YEAR = re.compile(r"(?:19|20)\d\d")


# The user's own past experience of a value: a first-person past or perfect ("I paid", "we were
# charged", "I've always been billed"), not a plan or a habit ("I usually arrive at 4").
_EXPERIENCED = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:always\s+|just\s+|only\s+|never\s+|already\s+)?"
    r"(?:been\s+)?(?:paid|was\s+[a-z]+ed|were\s+[a-z]+ed|got\s+[a-z]+ed|charged|billed|quoted|given|sent)\b",
    _I,
)


# Where a bare number states the value of what the answer was about: after a copula or a contrast
# word ("it's 100", "it was raised to 100", "only 100"), at the start of a contrast ("100, not 50"),
# or alone. Elsewhere it counts or names something else ("badge M-30155 shows 48213", "split it
# into 6 payments") and keeps no unit of the answer's.
_COMPLEMENT_BEFORE = re.compile(
    r"(?:\b(?:is|are|was|were|it's|that's|they're|be|been|now|not|only|just|actually|than|to|of|at|says?)"
    r"|[:,])\s*(?:about\s+|around\s+|roughly\s+|like\s+)?$",
    _I,
)
_COMPLEMENT_AFTER = re.compile(r"^\s*,?\s*(?:not|instead|rather)\b", _I)
_ALONE = re.compile(r"^\s*[.!?]*\s*$")


def _complement_numbers(sentence: str) -> list[tuple[str, str]]:
    """The sentence's values, bare numbers outside a complement position marked as counts that
    :func:`in_answer_units` leaves bare."""
    out: list[tuple[str, str]] = []
    pos = 0
    for kind, span in find_values(sentence):
        at = sentence.find(span, pos)
        pos = at + len(span) if at >= 0 else pos
        if kind == "number" and at >= 0:
            before, after = sentence[:at], sentence[at + len(span) :]
            alone = not before.strip() and _ALONE.match(after) is not None
            if not (alone or _COMPLEMENT_BEFORE.search(before) or _COMPLEMENT_AFTER.match(after)):
                kind = "count"
        out.append((kind, span))
    return out

"""The delta: "expected X but got Y", read from the user's correction or from a tool error.

Generic rules only: value spans (amounts, percentages, durations, dates, times, quoted strings,
numbers) are matched by kind between the correction and the answer it corrects; "it's X, not Y",
"instead of Y", "no longer Y" name the wrong value explicitly; prescriptive corrections ("you
should ...", "you're supposed to ...") with no value are behavioural.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from causal_middleware.context.agent_acts import act_rule, agent_act
from causal_middleware.context.alternatives import alternative_rule
from causal_middleware.context.instructions import PRESCRIPTIVE, disapproved_act, instruction_from
from causal_middleware.context.objections import (
    OWN_WORDS,
    behavioural_objection,
    challenges_agent,
    doubted_with_source,
    prior_belief,
    relayed_conflict,
    relayed_contradiction,
)
from causal_middleware.context.pushback import pushback_form
from causal_middleware.context.signal_patterns import MISREAD_PATTERN
from causal_middleware.context.text import (
    CONVERSATION_WORDS,
    MEASURED_KINDS,
    ORDINAL_WORDS,
    contains,
    content_tokens,
    find_values,
    frequencies,
    in_answer_units,
    magnitude,
    normalize,
    relevance,
    same_value,
    sentences,
    share_stem,
    term_seq,
    term_set,
    value_kind,
    with_number,
    word_number,
)

DeltaKind = Literal["value", "behaviour", "tool_error", "none"]

_I = re.IGNORECASE
_STOP = r"(?=\s*(?:,|\.(?:\s|$)|;|!|\?|$|\s—|\s-\s|\bnot\b|\bnow\b|\binstead\b|\bany\s?more\b|\bthese days\b|\bsince\b|\bas of\b|\bfor\b|\bper\b|\band\b|\bbut\b))"
_GOT_PATTERNS = (
    re.compile(
        r"(?:,|;|—|\s-\s|\bbut)?\s*\bnot\s+(?:the\s+|a\s+|an\s+)?(?P<y>[^,.;!?]+?)"
        + _STOP.replace(r"|\bnot\b", ""),
        _I,
    ),
    re.compile(r"\b(?:instead of|rather than|no longer(?: \w+)?)\s+(?:the\s+)?(?P<y>[^,.;!?]+?)" + _STOP, _I),
    re.compile(
        r"\b(?:don't|do not|doesn't|does not|won't|no longer)\s+(?:use|accept|take|do|offer|support|charge|require|need)\s+"
        r"(?P<y>[^,.;!?]+?)\s*(?:any\s?more|these days|now)\b",
        _I,
    ),
)
_EXPECTED_PHRASE = re.compile(
    r"\b(?:it's|it is|they're|they are|that's|that is|we use|it uses|you use|it's done (?:via|through|by|with)|"
    r"is now|are now|should be|changed to|moved to|updated to|switched to|it's now|now it's|we now use|"
    r"goes through|go through|done through|done via|handled by|"
    # "the <thing> is X": the thing's words may be hyphenated ("the Wi-Fi name", "the cut-off") and
    # carry a complement ("the plan for a registered office address")
    r"(?:the|its|their)\s+[a-z]+(?:-[a-z]+)*(?:\s+[a-z]+(?:-[a-z]+)*){0,8}?\s+(?:is|are))\s+(?P<x>[^,.;!?]+?)"
    + _STOP,
    _I,
)
STRONG_VALUE_KINDS = MEASURED_KINDS
# Values that are not measured but name one thing of a set: another of the same kind against the
# answer's own is a contest of values.
_COUNTERABLE_KINDS = ("weekday", "quoted")


class Delta(BaseModel):
    """What the user (or a tool) says should have been, against what the agent produced."""

    kind: DeltaKind
    expected: str | None = None
    got: str | None = None
    evidence: str = ""
    anchor_node_id: str | None = Field(default=None, description="the correction or the failing tool call")
    target_node_id: str | None = Field(default=None, description="the agent turn the correction answers")
    question_node_id: str | None = Field(
        default=None, description="the user turn that asked the failing question"
    )
    instruction: str | None = Field(default=None, description="for behavioural deltas: the rule, imperative")

    def describe(self) -> str:
        if self.kind == "none":
            return "no delta: the session shows dissatisfaction but no stated correction"
        exp = self.instruction or self.expected or "?"
        return f"expected {exp!r} but got {self.got!r}" if self.got else f"expected {exp!r}"


def _clean(span: str) -> str:
    span = span.strip(" \t'\"`“”‘’")
    span = (
        re.sub(r"^(?:the|a|an|just|actually|only)\s+", "", span, flags=_I) if len(span.split()) > 1 else span
    )
    return span.strip()


# "what I asked", "what the sign says": a wh-word opening a clause (a subject and more) names
# something said or asked, not a value.
_FREE_RELATIVE = re.compile(
    r"^\s*(?:what|which|who|where|when|how)\s+(?:(?:i|you|we|they|he|she)\b|\w+\s+\w+)", _I
)


def _is_judgement(phrase: str) -> bool:
    words = content_tokens(phrase)
    return not words or all(w in CONVERSATION_WORDS for w in words) or bool(_FREE_RELATIVE.match(phrase))


def correction_delta(
    correction: str, answer: str | None
) -> tuple[DeltaKind, str | None, str | None, str | None]:
    """``(kind, expected, got, instruction)`` from a correction and the answer it corrects."""
    got: str | None = None
    got_span = ""
    got_at = -1
    for pattern in _GOT_PATTERNS:
        m = pattern.search(correction)
        if m and not _is_judgement(m.group("y")):
            got_span = m.group("y")
            got_at = m.start() if pattern is _GOT_PATTERNS[0] else -1
            values = find_values(got_span)
            got = values[0][1] if values else _clean(got_span)
            break
    expected: str | None = None
    spans = [
        span
        for _kind, span in find_values(correction)
        if not (got and same_value(span, got)) and not (got_span and contains(got_span, span))
    ]
    # A value the agent itself stated is the user citing the answer ("it used to be X but it's Y
    # now"), not what it should have been: prefer a value the answer does not contain.
    said = [v for _, v in find_values(answer)] if answer else []
    restated = [span for span in spans if any(same_value(span, v) for v in said)]
    fresh = [span for span in spans if span not in restated]
    # a year beside a measured value dates it ("that ended in 2024; now it's 12 hours")
    dated = [
        span for span in fresh if not (value_kind(span) == "number" and re.fullmatch(r"(?:19|20)\d\d", span))
    ]
    if dated and any(value_kind(span) in STRONG_VALUE_KINDS for span in dated):
        fresh = dated
    if fresh and got_at >= 0 and got is not None:
        # "X, not Y": the value set right against the rejected one is the one just before it, not
        # an earlier one of the user's own story ("I paid 80 yesterday, and the page says 90, not 120")
        kind = value_kind(got)
        before = [
            (at, span)
            for span in fresh
            if value_kind(span) == kind and 0 <= (at := correction.rfind(span, 0, got_at)) < got_at
        ]
        if before:
            nearest = max(before)[1]
            fresh = [nearest] + [span for span in fresh if span != nearest]
    if fresh:
        expected = fresh[0]
        if got is None and restated and value_kind(restated[0]) == value_kind(expected):
            got = restated[0]
    elif spans and (got is not None or not _quoted_back(correction, restated, spans)):
        expected = spans[0]
    if expected is None:
        for m in _EXPECTED_PHRASE.finditer(correction):
            phrase = _clean(m.group("x"))
            # "that's about something else": the user's verdict on the answer, not a value
            if MISREAD_PATTERN.search(m.group(0)):
                continue
            if phrase and not _is_judgement(phrase) and (not got or normalize(phrase) != normalize(got)):
                expected = phrase
                break
    if expected is None and got is not None:
        # "I only got two keys, not three": the rejected word's counterpart, a word of its own form
        # (a number word for a number word) elsewhere in the turn, is what it should have been
        expected = _counterpart(correction, got, got_span)
    # "we sat in Row K" after "... are in Row H": the answer's own words with another filler after
    # them; the two fillers are the values in dispute, whatever kind they are
    parallel = _parallel_value(correction, answer) if got is None else None
    # (over a free phrase the turn asserts, "they're always there": the refilled words are the value)
    if parallel is not None and (
        expected is None
        or value_kind(expected) == "phrase"
        or (value_kind(expected) not in STRONG_VALUE_KINDS and contains(expected, parallel[0]))
    ):
        expected, got = parallel
    recount = _recounted(correction, answer)
    if recount is not None:
        # "your colleague said you'd do up to 3 attempts" after "no more than 5 attempts": another
        # count of what the answer counted is a value, whatever the sentence's form
        return "value", recount[0], recount[1], None
    recode = _recoded(correction, answer) if expected is None else None
    if recode is not None:
        # "QX42 gets rejected; the flyer says QX45" after "enter QX42": another code of the shape
        # the answer gave is a value, whatever the sentence's form
        return "value", recode[0], recode[1], None
    if (
        not got_span
        and expected is not None
        and answer is not None
        and not _TRUTH_JUDGEMENT.search(correction)
        and _no_value_in_dispute(expected, got, answer)
    ):
        # "it's leaking" after "that's normal, let me look": a bare word the user says of the
        # situation, against an answer that stated no value, is no value to set right (one the
        # user rejects by name, "we don't use fax any more", or calls the answer wrong for, is)
        expected, got, parallel = None, None, None
    act = disapproved_act(correction)
    if act and (expected is None or value_kind(expected) not in STRONG_VALUE_KINDS):
        return "behaviour", correction.strip(), None, act
    # After "I couldn't find anything on X", a value the user gives is the missing answer, whoever
    # they say told them ("the person at the desk told me it's 3 instalments"): no objection.
    supplied = expected is not None and answer is not None and reports_absence(answer)
    # "2 miles, not 1 mile" against an answer that said 1 mile: the value the answer gave, rejected
    # by name, with its replacement: a value correction however the user frames it
    rejected = got is not None and expected is not None and any(same_value(got, v) for v in said)
    m = PRESCRIPTIVE.search(correction)
    # the rule's own clause: after a missing answer, "odd that you can't find it, the limit is 4"
    # complains in one clause and supplies the value in the next
    clause = m.group("clause").split(",")[0] if m and supplied else m.group("clause") if m else ""
    # Behavioural: a rule with no value, or whose value sits inside the rule ("tell them to call 911").
    if (
        m
        and not rejected
        and (
            expected is None
            or (value_kind(expected) not in STRONG_VALUE_KINDS and normalize(expected) in normalize(clause))
        )
    ):
        return "behaviour", correction.strip(), None, instruction_from(correction)
    if supplied and expected is not None and value_kind(expected) == "number":
        counted = re.search(r"(?<![\w.])" + re.escape(expected) + r"\s+(?P<noun>[a-z]{3,})\b", correction, _I)
        if (
            counted
            and counted.group("noun").lower() not in CONVERSATION_WORDS
            and content_tokens(counted.group("noun"))
        ):
            expected = f"{expected} {counted.group('noun')}"
    # "The newsletter says it opens on Wednesday" after "... every Monday": a value of the very kind
    # the answer stated (a weekday, a quoted name), another one; the answer's value is what is
    # disputed, not how the agent behaved
    # (a rule spoken beside it, "you can't promise that", makes the value an outcome it cites)
    countered = (
        m is None
        and expected is not None
        and value_kind(expected) in _COUNTERABLE_KINDS
        and any(k == value_kind(expected) and not same_value(v, expected) for k, v in find_values(answer))
    ) or (m is None and expected is not None and _same_label(expected, correction, answer or ""))
    # the answer's own frame refilled with another value of one form ("children under 14" against
    # "children under 16") disputes the answer's value, whatever else the turn says of the agent
    # ("read your own policy"); a refilled phrase ("walk-ins are fine") may be a relayed account
    countered = countered or (parallel is not None and _one_value(parallel[0].split()[-1]) is not None)
    if (
        not supplied
        and not rejected
        and not countered
        and (expected is None or value_kind(expected) not in STRONG_VALUE_KINDS)
        and (
            any(behavioural_objection(sent) or prior_belief(sent) for sent in sentences(correction))
            or relayed_conflict(correction)
            or relayed_contradiction(correction, answer or "")
            or doubted_with_source(correction)
        )
    ):
        return "behaviour", correction.strip(), None, instruction_from(correction)
    if expected is None and (
        any(challenges_agent(sent) or pushback_form(sent) for sent in sentences(correction))
        or OWN_WORDS.search(correction)
    ):
        # "you can just tell me that?", "I said I don't see the point": no value to set right, the
        # objection is to how the agent handled the turn
        return "behaviour", correction.strip(), None, instruction_from(correction)
    choice = alternative_rule(correction, answer) if expected is None else None
    if choice is not None:
        # "Is that per person or per group?" after "... per person": no value to set right, the answer left
        # open what it meant; how it was stated is the behaviour to change
        return "behaviour", correction.strip(), None, choice
    if expected is None:
        act = agent_act(answer or "")
        if act is not None:
            # No value to set right, and the answer reported an act or an outcome of the agent's:
            # the objection is to what the agent did ("that doesn't seem right").
            return "behaviour", correction.strip(), None, act_rule(act)
        if (
            answer is not None
            and not reports_absence(answer)
            and not (got and contains(answer, got))
            and not _TRUTH_JUDGEMENT.search(correction)
            and (
                _ADDRESSED.search(correction)
                or share_stem(term_set(correction), term_set(answer))
                or any(_ASKED_OF_ANSWER.match(sent.strip()) for sent in sentences(correction))
            )
        ):
            # No value to set right, none of the answer's rejected, no absence reported and the
            # answer's truth not judged, in a turn that speaks to the agent or of what it said:
            # what the user objects to is what the agent did or advised ("you want me to force
            # it? that could break something", "I don't think she'd want her number shared").
            return "behaviour", correction.strip(), None, instruction_from(correction)
        return "none", None, got, None
    if got is not None and answer and value_kind(expected) == "number" and value_kind(got) == "number":
        # "100, not 50" against "50 GB": both numbers are in the answer's unit.
        answer_values = find_values(answer)
        (_, got_m), (_, exp_m) = in_answer_units([("number", got), ("number", expected)], answer_values)
        if any(same_value(got_m, v) for _, v in answer_values):
            got, expected = got_m, exp_m
    if got is None and answer and value_kind(expected) == "number":
        # A bare number against a measured answer ("it's 100" after "50 GB") is in the answer's unit.
        measured = [
            span
            for k, span in find_values(answer)
            if k in ("size", "measure", "duration", "percent") and not same_value(span, expected)
        ] or [
            # no quantity: a bare number after a clock time names an hour ("it says 10" after "9 pm")
            span
            for k, span in find_values(answer)
            if k == "time" and not same_value(span, expected)
        ]
        named = claimed_subject(correction, expected)
        # ... unless the user names another subject ("the attachment limit is 25" after "the mailbox
        # limit is 100 GB"): that number need not share the answer's unit.
        if len(measured) == 1 and (named is None or relevance(named, answer) >= 0.5):
            got = measured[0]
            expected = with_number(measured[0], expected)
    if got is None and answer:
        kind = value_kind(expected)
        if kind != "phrase":
            said_kinds = [(k, span) for k, span in find_values(answer) if not same_value(span, expected)]
            same = [span for k, span in said_kinds if k == kind]
            # A value of another kind: the agent answered a different question than the one asked.
            other = [span for k, span in said_kinds if k in STRONG_VALUE_KINDS]
            got = (
                _contested(expected, same, answer, correction)
                if same
                else (other[0] if kind in STRONG_VALUE_KINDS and len(other) == 1 else None)
            )
    if got is None and answer and value_kind(expected) == "number":
        # "plus 1 bonus credit" after "add half a bonus credit": the answer counts the same thing
        # with a quantity word (a fraction, an article, a number word); that count is the value
        in_words = _counted_in_answer(correction, expected, answer)
        if in_words is not None:
            expected, got = in_words
    if got is None and answer and value_kind(expected) == "frequency":
        # "3 times a day" against "twice a day": the answer's one other frequency
        said = [f for f in frequencies(answer) if not same_value(f, expected)]
        if len(said) == 1:
            got = said[0]
    if got is not None and answer and value_kind(expected) in STRONG_VALUE_KINDS:
        got = _completed(got, expected, answer)
    return "value", expected, got, None


# A judgement of the answer's truth (not of the agent's conduct): "that's wrong", "out of date".
_TRUTH_JUDGEMENT = re.compile(
    r"\b(?:wrong|incorrect|inaccurate|untrue|not true|not right|false|mistaken|outdated|out of date|"
    r"old (?:info|information|price|rate|number|figure|page|rule)s?|no longer)\b",
    _I,
)
# The agent addressed: "you", "your".
_ADDRESSED = re.compile(r"\b(?:you|you're|you've|you'd|you'll|your|yours)\b", _I)
# A yes/no question about what was just said ("Is that safe?", "Would that not break it?").
_ASKED_OF_ANSWER = re.compile(
    r"^(?:is|was|are|were|would|could|should|can|will|does|did)(?:n't)?\s+(?:that|this|it)\b[^?]*\?$", _I
)
# A code: capitals and digits mixed in one token of four or more ("QX42", "SPRING25", "B2B4").
_CODE = re.compile(r"(?<![\w-])(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{4,}(?![\w-])")


# A quantity said in words before a counted noun: a fraction ("half a", "a quarter of a"), an
# article ("a", "an") or a number word ("two", "a couple of"). General language of counting.
_QUANTITY_WORDS = (
    r"(?:(?:a\s+|one\s+)?(?:half|quarter|third)(?:\s+of)?(?:\s+an?)?|a couple of|an?|"
    r"one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty)"
)


def _counted_in_answer(correction: str, number: str, answer: str) -> tuple[str, str] | None:
    """``(expected, got)`` when the correction counts a thing with ``number`` ("1 bonus credit")
    that the answer counts with another quantity in words ("half a bonus credit"); else None."""
    m = re.search(
        r"(?<![\w.])" + re.escape(number) + r"\s+((?:[a-z][\w-]*\s+){0,2}[a-z][\w-]*)", correction, _I
    )
    if m is None:
        return None
    words = m.group(1).split()
    for k in range(len(words), 0, -1):
        noun = " ".join(words[:k])
        if not content_tokens(noun) or all(w.lower() in CONVERSATION_WORDS for w in words[:k]):
            continue
        # the count's noun in either number ("2 free drinks" for "a free drink")
        form = re.escape(re.sub(r"(?<=[a-z]{3})e?s$", "", noun, flags=_I)) + r"(?:e?s)?"
        said = re.search(r"(?<![\w-])(?P<q>" + _QUANTITY_WORDS + r")\s+" + form + r"(?![\w-])", answer, _I)
        if said is None:
            continue
        q = said.group("q").lower()
        amount = word_number(q) if word_number(q) is not None else (1.0 if q in ("a", "an") else None)
        if amount is not None and _number(number) == amount:
            return None  # the same count in other words ("a bonus credit" for "1 bonus credit")
        return f"{number} {noun}", said.group(0)
    return None


def _number(span: str) -> float | None:
    try:
        return float(span.replace(",", ""))
    except ValueError:
        return None


def _quoted_back(correction: str, restated: list[str], spans: list[str]) -> bool:
    """Whether every value of the correction is one the answer itself stated, quoted back to the
    agent ("you told me I'd get 40 back", "4 pm? What time is that for me?"): the user cites what
    the agent said, rejects none of it and supplies no other, so there is no value to set right
    (the objection is to what the agent did or left out). A value said against another kind of
    source ("the page says 40") is that source's word, not the answer quoted back."""
    return bool(spans) and len(restated) == len(spans) and not _cited_from_source(correction, spans)


def _cited_from_source(correction: str, spans: list[str]) -> bool:
    """Whether a value is said in the clause that cites a source for it ("the page says 40"; not
    "my quote says these are estimates, so why are you promising me 7 years?", where the value is
    the answer's, asked back in a clause of its own)."""
    for m in _SOURCE_CITED.finditer(correction):
        start = max((b.end() for b in _CLAUSE_BREAK.finditer(correction, 0, m.start())), default=0)
        after = _CLAUSE_BREAK.search(correction, m.end())
        clause = correction[start : after.start() if after else len(correction)]
        if any(contains(clause, span) for span in spans):
            return True
    return False


# Where a clause ends: a punctuation mark or a conjunction that opens the next one.
_CLAUSE_BREAK = re.compile(r"[;!?]|[.,](?!\d)|\b(?:so|but|then)\b", _I)


# A source other than the agent cited for a value ("the page says", "according to the sign").
_SOURCE_CITED = re.compile(
    r"\b(?:says|said|states|stated|shows|showed|reads|lists|listed|according to)\b(?<!\byou said)", _I
)


def _recoded(correction: str, answer: str | None) -> tuple[str, str] | None:
    """``(expected, got)`` when the answer gave one code and the correction names another one
    (with or without the answer's beside it): "QX42 doesn't work, the leaflet says QX45" after
    "use the code QX42". A code is a value of its own shape; words around it do not matter."""
    if not answer:
        return None
    said = list(dict.fromkeys(_CODE.findall(answer)))
    if len(said) != 1:
        return None
    fresh = [c for c in dict.fromkeys(_CODE.findall(correction)) if c != said[0]]
    return (fresh[0], said[0]) if len(fresh) == 1 else None


def _plain_words(span: str) -> bool:
    """A span of lower-case words only: no digit, capital, number or ordinal word, nor quote."""
    words = span.split()
    return (
        0 < len(words) <= 3
        and all(re.fullmatch(r"[a-z][a-z'-]*", w) for w in words)
        and not any(_word_form(w) for w in words)
    )


def _no_value_in_dispute(expected: str, got: str | None, answer: str) -> bool:
    """The "value" is a few plain words (no number, code, name or unit) and the answer stated no
    value at all and reported no absence: nothing of the answer's content is set right."""
    return (
        _plain_words(expected)
        and (got is None or _plain_words(got))
        and not find_values(answer)
        and not reports_absence(answer)
    )


def _completed(got: str, expected: str, answer: str) -> str:
    """An elliptical rejected value read whole from the answer: "not the second" after "in the second
    week" is "second week", so it is compared with "fourth week" in kind."""
    kind = value_kind(expected)
    if value_kind(got) == kind:
        return got
    whole = [
        span
        for k, span in find_values(answer)
        if k == kind and re.match(re.escape(got) + r"(?![\w])", span, _I) and not same_value(span, expected)
    ]
    return whole[0] if len(whole) == 1 else got


def _word_form(word: str) -> str | None:
    w = word.lower()
    if word_number(w) is not None:
        return "number"
    if w in ORDINAL_WORDS:
        return "ordinal"
    return None


def _counterpart(correction: str, got: str, got_span: str) -> str | None:
    """The one word of the rejected word's form (number word, ordinal word) elsewhere in the
    correction, with another value: "two" in "I only got two keys when I joined, not three"."""
    form = _word_form(got)
    if form is None:
        return None
    rest = correction.replace(got_span, " ", 1) if got_span else correction
    words = {w for w in re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)?", rest) if w.lower() != got.lower()}
    found = [w for w in words if _word_form(w) == form]
    return found[0] if len(found) == 1 else None


# A word of a turn, with the marks a value keeps ("£2.50", "16+", "B2", "10:30").
_FRAME_TOKEN = re.compile(r"[£$€]?\d[\d,.:]*\d\w*\+?|[£$€]?\w[\w.:+'-]*\w\+?|[£$€]?\w\+?")
# Where a filler ends: a clause's punctuation, or the end of the turn.
_FRAME_END = re.compile(r"[,;!?()]|\.(?:\s|$)|\s[-\u2013\u2014]\s|$")
# A filler that is a value by its form: a number, a code (capitals and digits: "K", "B2", "12A").
_CODE_FILLER = re.compile(r"[£$€]?\d[\w.:,+-]*|[A-Z]{1,3}\d{0,3}|\d{1,3}[A-Z]{1,2}")


def _frame_tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _FRAME_TOKEN.finditer(text)]


def _one_value(word: str) -> str | None:
    """The form that makes one word a value by itself: a number or code, a number word, an ordinal."""
    return "code" if _CODE_FILLER.fullmatch(word) else _word_form(word)


def _filler(text: str, tokens: list[tuple[str, int, int]], i: int) -> str | None:
    """The short rest of the clause that starts at token ``i`` (three words at most)."""
    end = _FRAME_END.search(text, tokens[i][1])
    stop = end.start() if end else len(text)
    words = [t for t in tokens[i:] if t[2] <= stop]
    if not words or len(words) > 3:
        return None
    return text[tokens[i][1] : words[-1][2]]


def refilled_value(sentence: str, answer: str) -> tuple[str, str] | None:
    """``(value, answer's value)`` when a sentence repeats the answer's words and then gives another
    code, number word or ordinal than the answer did ("we sat in Row K" against "in Row H")."""
    return _parallel_value(sentence, answer, forms_only=True)


def _parallel_value(
    correction: str, answer: str | None, *, forms_only: bool = False
) -> tuple[str, str] | None:
    """``(expected, got)`` when the correction repeats words of the answer and then goes on with
    another value than the answer did ("... after the first piece" against "... after the
    interval", "in Row K" against "in Row H"): the correction's filler and the answer's. The
    shared words must be two or more, or one content word; the fillers are two words of one value
    form (two codes, two ordinals), else the short ends of their clauses, and neither turn states
    the other's. ``forms_only``: two words of one value form only."""
    if not answer:
        return None
    said = _frame_tokens(answer)
    mine = _frame_tokens(correction)
    found: list[tuple[int, str, str]] = []
    at: dict[str, list[int]] = {}
    for i, t in enumerate(said[:-1]):
        at.setdefault(t[0].casefold(), []).append(i + 1)
    for j in range(1, len(mine)):
        # the answer's tokens that follow the word the correction has just said
        for i in at.get(mine[j - 1][0].casefold(), []):
            if mine[j][0].casefold() == said[i][0].casefold():
                continue
            k = 0
            while k < min(i, j) and mine[j - 1 - k][0].casefold() == said[i - 1 - k][0].casefold():
                k += 1
            if k == 0:
                continue
            shared = " ".join(t[0] for t in mine[j - k : j])
            if k < 2 and not content_tokens(shared):
                continue
            if min(i, j) > k:
                before, theirs = mine[j - 1 - k][0], said[i - 1 - k][0]
                mark = term_set(before)
                if mark and term_set(theirs) and not share_stem(mark, term_set(answer)):
                    continue  # "the upload limit is 25" after "the quota limit is": another subject
            form = _one_value(mine[j][0])
            if form is not None and form == _one_value(said[i][0]):
                exp, got = mine[j][0], said[i][0]
                if form == "code" and not exp[0].isdigit() and content_tokens(mine[j - 1][0]):
                    # a bare code is read with its label: "Row K", not "K"
                    exp, got = f"{mine[j - 1][0]} {exp}", f"{said[i - 1][0]} {got}"
            elif forms_only:
                continue
            else:
                e, g = _filler(correction, mine, j), _filler(answer, said, i)
                if not e or not g or _is_judgement(e) or _is_judgement(g):
                    continue
                exp, got = e, g
            found.append((k, exp, got))
    stated: dict[tuple[str, str], bool] = {}
    for _, exp, got in found:
        if (exp, got) not in stated:
            stated[(exp, got)] = contains(answer, exp) or contains(correction, got)
    found = [(k, e, g) for k, e, g in found if not stated[(e, g)]]
    if not found:
        return None
    best = max(k for k, _, _ in found)
    top = {(e, g) for k, e, g in found if k == best}
    return next(iter(top)) if len(top) == 1 else None


def _same_label(expected: str, correction: str, answer: str) -> bool:
    """A bare number the correction labels with the word the answer put before its own, other,
    number ("size 38" against "up to size 36"): the same attribute, another value of it."""
    if value_kind(expected) != "number":
        return False
    m = re.search(r"\b([A-Za-z]{2,})\s+" + re.escape(expected) + r"(?![\w.,]?\d)", correction)
    if m is None or not term_seq(m.group(1)):
        return False
    return any(
        not same_value(n.group(1), expected)
        for n in re.finditer(rf"\b{re.escape(m.group(1))}\s+(\d[\d,.]*\d|\d)(?![\w.,]?\d)", answer, _I)
    )


def _recounted(correction: str, answer: str | None) -> tuple[str, str] | None:
    """``(expected, got)`` when the correction counts the very noun the answer counted, with another
    number ("3 attempts" against "5 attempts"); None if it names the answer's own count too."""
    if not answer:
        return None
    from causal_middleware.context.contradictions import counted_nouns

    said = counted_nouns(answer)
    if len(said) != 1:
        return None
    ((noun, (value, span)),) = said.items()
    mine = counted_nouns(correction)
    if (
        noun in mine
        and mine[noun][0] != value
        and not re.search(rf"(?<![\w.]){re.escape(value)}\s+{re.escape(span.split()[-1])}", correction, _I)
    ):
        return mine[noun][1], span
    return None


# Where a clause of an answer ends: punctuation, a bracket, or a word that opens an exception or a
# condition ("open 7am-11pm except on the 25th, when ...").
_ANSWER_CLAUSE = re.compile(
    r"[,;:()\[\]]|\s[-\u2013\u2014]\s|\b(?:except|unless|but|when|while|whereas|apart from|other than)\b", _I
)


def _clock_minutes(span: str) -> float | None:
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s?(am|pm)?", span.strip(), _I)
    if not m:
        return None
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").lower()
    hour = hour % 12 + (12 if half == "pm" else 0) if half else hour
    return hour * 60.0 + minute


def _reading(kind: str, span: str) -> tuple[str, float] | None:
    if kind == "time":
        minutes = _clock_minutes(span)
        return ("minutes", minutes) if minutes is not None else None
    return magnitude(kind, span)


def _contested(expected: str, same: list[str], answer: str | None, correction: str) -> str:
    """Which of the answer's several values of the expected's kind the correction sets right: the
    one in the clause that shares the most words with the correction, and among those the nearest
    to the correction's value (a correction adjusts the value it disputes: "9am" against "7am ...
    except on the 25th, when 10am" disputes "10am")."""
    if len(same) == 1 or not answer:
        return same[0]
    said_terms = set(term_seq(correction))
    clauses = [c for c in _ANSWER_CLAUSE.split(answer) if c and c.strip()]

    def overlap(span: str) -> int:
        clause = next((c for c in clauses if contains(c, span)), "")
        return len(set(term_seq(clause)) & said_terms)

    best = max(overlap(span) for span in same)
    tied = [span for span in same if overlap(span) == best]
    kind = value_kind(expected)
    target = _reading(kind, expected)
    if target is None or len(tied) == 1:
        return tied[0]

    def distance(span: str) -> float:
        r = _reading(kind, span)
        return abs(r[1] - target[1]) if r is not None and r[0] == target[0] else float("inf")

    return min(tied, key=distance)


def reports_absence(answer: str) -> bool:
    """The answer says it found nothing and states no measured value of its own."""
    from causal_middleware.context.absence import AGENT_FAILED

    return bool(AGENT_FAILED.search(answer)) and not any(k in MEASURED_KINDS for k, _ in find_values(answer))


def claimed_subject(correction: str, expected: str | None) -> str | None:
    """The subject a correction states a value for: "... the X is <expected>" -> "X"."""
    if not expected:
        return None
    m = re.search(
        r"\bthe ([a-z][\w -]{2,60}?),? (?:is|are|was|costs?|takes?|lasts?|which is) (?:now |actually |really )?"
        + re.escape(expected),
        correction,
        _I,
    )
    if m:
        return m.group(1).strip()
    m = re.search(
        r"\b(?:asked about|asking about|meant|mean|talking about|was asking for|asked for|wanted|want|needed|"
        r"need|was after|'m after|am after|was looking for|question was about|question is about) the ([a-z][\w -]{2,60}?)"
        r"(?:\s*[(\[—–:]|\s+-\s|[.,;!?]|$)",
        correction,
        _I,
    )
    return m.group(1).strip() if m else None

"""The delta: "expected X but got Y", read from the user's correction or from a tool error.

Generic rules only: value spans (amounts, percentages, durations, dates, times, quoted strings,
numbers) are matched by kind between the correction and the answer it corrects; "it's X, not Y",
"instead of Y", "no longer Y" name the wrong value explicitly; prescriptive corrections ("you
should ...", "you're supposed to ...") with no value are behavioural.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from causal_middleware.context.text import (
    CONVERSATION_WORDS,
    MEASURED_KINDS,
    contains,
    content_tokens,
    find_values,
    in_answer_units,
    normalize,
    relevance,
    same_value,
    sentences,
    share_stem,
    stem,
    term_seq,
    value_kind,
    with_number,
)
from causal_middleware.text import chat_tokens

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
    r"(?:the|its|their)\s+[a-z]+(?:\s+[a-z]+)?\s+(?:is|are))\s+(?P<x>[^,.;!?]+?)" + _STOP,
    _I,
)
_PRESCRIPTIVE = re.compile(
    r"(?:\byou(?:'re| are|'re not| are not| were| weren't| were not| aren't)\s+(?:really\s+|definitely\s+|clearly\s+)?(?:not\s+)?"
    r"(?:supposed|allowed|permitted|meant|required)\s+to|"
    r"\byou (?:really |definitely |clearly |honestly |absolutely |just |simply )?(?:should(?:n't| not)?|must(?:n't| not)?|need to|have to|"
    r"were supposed to|forgot to|didn't|did not|never|always|can't|cannot|can not|couldn't|won't)(?:\s+have)?|"
    r"\b(?:aren't|weren't) you (?:supposed|meant|required) to|\b(?:shouldn't|should|didn't|don't|couldn't|can't|wouldn't) you(?: have| need to)?|"
    r"\b(?:how|why) (?:can|could|would|did|do) you|"
    r"(?:^|(?<=[.!?]\s))\s*(?:please\s+)?(?:don't|do not|never)(?!\s+(?:worry|mind|bother|forget|hesitate)\b)|"
    r"\b(?:shouldn't|should not) (?:this|that|it)(?: have)?)"
    r"\s+(?P<clause>[^.;!?]+)",
    _I,
)
_TAG_QUESTION = re.compile(
    r",?\s*(?:are|aren't|do|don't|did|didn't|is|isn't|should|shouldn't|can|can't|will|won't|right)\s*(?:you|it|they|I)?\s*$",
    _I,
)
STRONG_VALUE_KINDS = MEASURED_KINDS
_TOOL_GOT = re.compile(
    r"\b(?:invalid|unknown|unsupported|unrecognized|unrecognised|bad|got|received|rejected)\s+"
    r"(?:value\s+|parameter\s+|field\s+|format\s+|argument\s+|code\s+)?['\"`](?P<got>[^'\"`]+)['\"`]",
    _I,
)
_TOOL_EXPECTED = re.compile(
    r"\b(?:expected|did you mean|must be|should be|use|allowed(?: values?)?:?|accepted(?: values?)?:?|supported:?)\s+"
    r"(?:format\s+|one of:?\s*|value\s+|parameter\s+|field\s+)?['\"`](?P<exp>[^'\"`]+)['\"`]",
    _I,
)
_QUOTED = re.compile(r"['\"`]([^'\"`]+)['\"`]")
_TOOL_GOT_BARE = re.compile(r"\b(?:got|received|given)\s*:?\s+(?P<got>[^\s,;()'\"`]+)", _I)
_TOOL_EXPECTED_BARE = re.compile(
    r"\b(?:expects?|expected|takes|accepts|requires|use|did you mean|should be|must be)\s+"
    r"(?:format\s+|parameter\s+|field\s+|value\s+|key\s+|argument\s+|the\s+)?(?P<exp>[A-Za-z0-9][\w./:-]*)",
    _I,
)
# A name that reads as code, not prose: with a separator or a digit, or in capitals.
_CODE_LIKE = re.compile(r"[\w.:/-]*[_\d-][\w.:/-]*|[A-Z][A-Z0-9]+")


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


# "what I asked", "who we wanted": a wh-word and a pronoun subject name the user's request, not a value.
_FREE_RELATIVE = re.compile(r"^\s*(?:what|which|who|where|when|how)\s+(?:i|you|we|they|he|she)\b", _I)


def _is_judgement(phrase: str) -> bool:
    words = content_tokens(phrase)
    return not words or all(w in CONVERSATION_WORDS for w in words) or bool(_FREE_RELATIVE.match(phrase))


_REQUEST_OPENING = re.compile(
    r"^(?:please|can|could|would|will|let's|let me)\b(?!\s+you\s+even\b)|^(?:i|we)(?:'d| would| want| need| wanna)\b",
    _I,
)
# An obligation or a permission ("needs to", "had to", "allowed to", "supposed to", "must").
_DEONTIC = re.compile(
    r"\b(?:needs? to|has to|have to|had to|must|ought to|(?:supposed|allowed|permitted|required|meant) to)\b",
    _I,
)
_FIRST_PERSON_WORD = re.compile(r"\b(?:i|we|me|us)\b", _I)
# A question that opens with an auxiliary or a question word asks for information...
_ASKING = re.compile(
    r"^(?:do|does|did|can|could|should|shall|must|will|would|is|are|am|was|were|have|has|how|what|when|"
    r"where|which|who|why)\b(?P<subject>\s+\w+)?",
    _I,
)
_QUESTION_WORD = re.compile(r"\b(?:how|what|when|where|which|who|whom|whose|why|whether)\b", _I)
# ...unless it questions the agent itself ("are you even allowed to ...?").
_AGENT_SUBJECT = re.compile(r"^\s+you\b", _I)
# The agent's own advice quoted back to it ("You told me to ...", "You said ...").
_AGENT_ADVICE = re.compile(
    r"^you\s+(?:just\s+|already\s+|literally\s+)?(?:told|said|advised|suggested|asked)\b", _I
)
# Something the user expected has not happened ("nobody has looked at it yet").
# Where a clause may open: the sentence start, after punctuation, or after a conjunction.
_CLAUSE_START = r"(?:^|[,;:?!]\s*|\b(?:but|and|so)\s+)"
_UNMET = re.compile(
    _CLAUSE_START
    + r"(?:nobody|no one|no-one|none|nothing|not even)\b[^?]*\byet\b|"
    # ... or that nobody did what should have been done ("no one warned us", "nobody said so").
    + _CLAUSE_START
    + r"(?:nobody|no one|no-one)\s+(?:ever\s+|even\s+|actually\s+)?"
    r"(?:[a-z]+ed|told|said|gave|sent|showed|let|made|rang|wrote|read|saw|took|came|got|did)\b"
    r"(?!\s+(?:worry|mind)\b)",
    _I,
)
# The user was left uninformed ("I was never told", "we weren't warned").
_UNINFORMED = re.compile(
    r"\b(?:i|we)\s+(?:wasn't|was not|weren't|were not|was never|were never|haven't been|have not been|"
    r"hadn't been|had not been)\s+(?:told|warned|informed|notified|asked)\b",
    _I,
)
# The user denies having asked for or agreed to what was done ("I never agreed to that").
_DENIED_CONSENT = re.compile(
    r"\b(?:i|we)\s+(?:never|didn't|did not|haven't|have not)\s+(?:even\s+)?(?:say|said|ask|asked|agree|agreed|"
    r"approve|approved|authori[sz]e|authori[sz]ed|consent|consented|request|requested)\b",
    _I,
)
# A step the agent skipped, named with "without" ("... without even checking?").
_SKIPPED_STEP = re.compile(
    r"\bwithout\s+(?:even\s+|first\s+|ever\s+|at least\s+)?(?:ask|check|tell|confirm|verif|warn|mention|"
    r"consult|notify|inform)\w*",
    _I,
)
# A polar question made rhetorical by "even" after its subject ("is that even legal?", "can you even
# do that?"), and "why would ..." about someone other than the user.
_RHETORICAL_EVEN = re.compile(
    r"^(?:is|are|was|were|can|could|does|do|did|should|would)\s+(?:that|this|it|you|they)\s+even\b|"
    r"^why\s+would\s+(?!i\b|we\b|my\b|our\b)[a-z]+|"
    # "how would you know": the agent's grounds doubted (would/could: "how can you tell if ..." asks)
    r"^how\s+(?:would|could)\s+(?:you|a\s+[a-z]+|an\s+[a-z]+|anyone|anybody|they|it)\s+(?:even\s+|possibly\s+|really\s+)?"
    r"(?:know|tell|be sure)\b",
    _I,
)
# An expected safeguard found missing: "no X at all?", "no X or anything?", "without a X?".
_MISSING_SAFEGUARD = re.compile(
    r"\b(?:no|not a|not any|not one)\s+(?!worries\b|problem\b|rush\b|need\b|thanks\b)[a-z]+(?:\s+[a-z]+)?\s+"
    r"(?:at all|or anything|whatsoever)\b|"
    r"\bwithout\s+(?:a|an|any|the|my)\s+(?:[a-z]+\s+)?(?:check|approval|confirmation|verification|consent|review|"
    r"signature|warning|notice|permission)\b",
    _I,
)
# The user judges what was just said or done ("that seems off", "this sounds risky").
_MISGIVING = re.compile(
    r"\b(?:that|this|it)\s+(?:seems|sounds|looks|feels)\s+(?:a bit\s+|kind of\s+|kinda\s+|really\s+|very\s+|pretty\s+)?"
    r"(?:off|odd|weird|strange|fishy|sketchy|dodgy|risky|dangerous|unsafe|wrong|suspicious)\b|"
    r"\bi(?:'m| am)\s+not\s+(?:comfortable|happy|okay|ok)\s+(?:with|taking|about|that)\b|"
    # "I only asked ...": the agent went beyond the request
    r"\bi\s+(?:only|just)\s+asked\b|\bi\s+only\s+(?:wanted|meant)\b|\bi\s+was\s+only\s+asking\b",
    _I,
)
# A negative question with an obligation whose subject is not the user ("Shouldn't someone look at
# it first?", "Doesn't that need a signature?"): the asker expects the obligation to hold.
_NEGATIVE_DEONTIC_QUESTION = re.compile(
    r"^(?:shouldn't|should not|mustn't|must not|oughtn't)\s+(?!i\b|we\b)\w+|"
    r"^(?:don't|doesn't|didn't|do not|does not)\s+(?:you|someone|anyone|somebody|they|it|that|this)\s+"
    r"(?:need|have to|require)\b",
    _I,
)
# A reproach for what the agent left undone: a counterfactual modal perfect addressed to it
# ("you could have said so", "you should've checked").
_REPROACH = re.compile(
    r"\byou\s+(?:could|should)(?:'ve|\s+(?:at least\s+|really\s+|just\s+|also\s+)?have)\s+(?:at least\s+|just\s+|also\s+)?"
    r"(?!one\b|none\b)[a-z]+(?:ed|en|wn|ne|t|d)\b",
    _I,
)
# A manner phrase pointing back at what was just done ("... like that?", "just like this").
_BACK_REFERENCE = re.compile(r"\blike (?:that|this)\b|\bthat way\b|\bjust like that\b", _I)
# An exposure the agent's act caused: others may now do something to it ("anybody nearby can
# read that now", "now everyone can see it").
_INDEFINITE_PERSON = r"(?:anyone|anybody|someone|somebody|everyone|everybody|people)"
_EXPOSURE = re.compile(
    rf"(?:^|\bnow\s+){_INDEFINITE_PERSON}\b[^?]*?\b(?:can|could|will|might)\s+(?:now\s+)?[a-z]+\s+(?:that|this|it|them)\b",
    _I,
)
# ... or asked as a question: others may "just" do it ("so anybody can just walk in?").
_OPEN_ACCESS = re.compile(
    rf"(?:^|\bso\s+|\bnow\s+){_INDEFINITE_PERSON}\b[^.!]*?\b(?:can|could)\s+just\s+[a-z]+", _I
)
_NOW = re.compile(r"\bnow\b", _I)


# A question asking which of two accounts holds ("which is it?", "who's right?").
_CHOICE_QUESTION = re.compile(
    r"\b(?:which|who)(?:'s|\s+is|\s+one\s+is|\s+one's)\s+(?:it|right|true|correct|wrong)\b", _I
)
# What someone other than the user or the agent said ("my neighbour said ...", "the sign says ...").
_RELAYED = re.compile(
    r"(?P<before>(?:\S+\s+){0,2})(?:said|says|told me|tells me|claims?|claimed|mentioned)\b", _I
)
_FIRST_OR_SECOND = re.compile(r"\b(?:i|we|you)\b", _I)


def relayed_conflict(text: str) -> bool:
    """The user sets another source's account against the agent's and asks which holds ("the
    leaflet said it closes early, so which is it?"): a conflict with the answer, with no value."""
    if not _CHOICE_QUESTION.search(text):
        return False
    return any(not _FIRST_OR_SECOND.search(m.group("before")) for m in _RELAYED.finditer(text))


# Words that open a reply without carrying its subject ("um, ...", "hold on, ...", "wait what, ...").
_LEAD_IN = re.compile(
    r"^\s*(?:(?:(?:well|hmm+|um+|uh+|er+m?|oh|ok|okay|wait|hey|hold on|hang on|hold up|whoa|wow|lol|ha(?:ha)+|"
    r"ugh+|omg|jeez|geez|yikes|oof)\b[,.!?]*|"
    # words that may also open the clause itself lead in only when punctuated: "no, ..." / "no one"
    r"(?:so|but|and|really|what|yeah|yes|no|sorry)[,.!?]+)\s*)+(?=\w)",
    _I,
)


_NEGATIVE = re.compile(r"\b(?:no|not|never|none|nothing|nobody|cannot|without)\b|n't\b", _I)


def relayed_contradiction(text: str, answer: str) -> bool:
    """The user relays another source's account of what the answer was about, with the opposite
    polarity ("the pharmacist said never mix the two" against "yes, they mix fine"): a conflict
    with the answer that carries no value. A relayed account asked about ("... is that so?") is not."""
    answer_terms = set(term_seq(answer))
    answer_negated = bool(_NEGATIVE.search(answer))
    for sent in sentences(text):
        if sent.rstrip().endswith("?"):
            continue
        for m in _RELAYED.finditer(sent):
            if _FIRST_OR_SECOND.search(m.group("before")):
                continue
            account = sent[m.end() :]
            if (
                share_stem(set(term_seq(account)), answer_terms)
                and bool(_NEGATIVE.search(account)) != answer_negated
            ):
                return True
    return False


def behavioural_objection(sentence: str) -> bool:
    """A reply to the agent's answer that objects to what it did, read from the sentence's
    structure rather than correction words: an obligation or permission that binds someone other
    than the user ("Surely someone has to check it first?", "I thought this had to be signed",
    "Are you even allowed to ...?", or a permission asked about what was just done "... like
    that?"), the agent's advice quoted back ("You told me to ..."), a reproach for what it left
    undone ("you could have said"), an exposure its act caused ("anybody can read that now"), or
    an expected step that has not happened ("nobody has even looked at it yet"). A question asking
    what the user must do ("Do I need to ...?") and a request are not objections."""
    text = _LEAD_IN.sub("", sentence.strip())
    if _AGENT_ADVICE.match(text) or _UNMET.search(text) or _REPROACH.search(text):
        return True
    if _NEGATIVE_DEONTIC_QUESTION.match(text) or _OPEN_ACCESS.search(text) or _RHETORICAL_EVEN.match(text):
        return True
    # "I wasn't told the time when I booked, what is it?" asks in a later clause.
    wh_question = text.endswith("?") and _QUESTION_WORD.search(text) is not None
    if not wh_question and (
        _UNINFORMED.search(text) or _MISSING_SAFEGUARD.search(text) or _MISGIVING.search(text)
    ):
        return True
    if not text.endswith("?") and _EXPOSURE.search(text) and _NOW.search(text):
        return True
    asking = _ASKING.match(text)
    # "How much can I spend without asking first?" asks for information; "Did you ... without
    # asking?" questions the agent.
    info_question = asking is not None and not (
        asking.group("subject") and _AGENT_SUBJECT.match(asking.group("subject"))
    )
    if _SKIPPED_STEP.search(text) and not info_question:
        return True
    if _DENIED_CONSENT.search(text) and not wh_question:
        return True
    if _REQUEST_OPENING.match(text):
        return False
    m = _DEONTIC.search(text)
    if m is None:
        return False
    before = text[: m.start()].split()[-2:]
    if any(_FIRST_PERSON_WORD.fullmatch(w.strip(",")) for w in before):
        return False
    if asking is not None:
        # "Is anyone allowed to do that like that?" asks whether what was just done was allowed.
        if _BACK_REFERENCE.search(text):
            return True
        return bool(asking.group("subject") and _AGENT_SUBJECT.match(asking.group("subject")))
    # "We were burgled, how quickly must it be reported?" asks in a later clause.
    return not (text.endswith("?") and _QUESTION_WORD.search(text))


def correction_delta(
    correction: str, answer: str | None
) -> tuple[DeltaKind, str | None, str | None, str | None]:
    """``(kind, expected, got, instruction)`` from a correction and the answer it corrects."""
    got: str | None = None
    got_span = ""
    for pattern in _GOT_PATTERNS:
        m = pattern.search(correction)
        if m and not _is_judgement(m.group("y")):
            got_span = m.group("y")
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
    if fresh:
        expected = fresh[0]
        if got is None and restated and value_kind(restated[0]) == value_kind(expected):
            got = restated[0]
    elif spans:
        expected = spans[0]
    if expected is None:
        for m in _EXPECTED_PHRASE.finditer(correction):
            phrase = _clean(m.group("x"))
            if phrase and not _is_judgement(phrase) and (not got or normalize(phrase) != normalize(got)):
                expected = phrase
                break
    act = _disapproved_act(correction)
    if act and (expected is None or value_kind(expected) not in STRONG_VALUE_KINDS):
        return "behaviour", correction.strip(), None, act
    m = _PRESCRIPTIVE.search(correction)
    # Behavioural: a rule with no value, or whose value sits inside the rule ("tell them to call 911").
    if m and (
        expected is None
        or (
            value_kind(expected) not in STRONG_VALUE_KINDS
            and normalize(expected) in normalize(m.group("clause"))
        )
    ):
        return "behaviour", correction.strip(), None, instruction_from(correction)
    if (expected is None or value_kind(expected) not in STRONG_VALUE_KINDS) and (
        any(behavioural_objection(sent) for sent in sentences(correction))
        or relayed_conflict(correction)
        or relayed_contradiction(correction, answer or "")
    ):
        return "behaviour", correction.strip(), None, instruction_from(correction)
    if expected is None:
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
            got = same[0] if same else (other[0] if kind in STRONG_VALUE_KINDS and len(other) == 1 else None)
    return "value", expected, got, None


_GOT_KEYS = re.compile(r"^(?:got|received|value|input|given|provided|actual|rejected(?:_value)?)$", _I)
_EXPECTED_KEYS = re.compile(r"^(?:expected(?:_value)?|did_you_mean|suggestion|correct(?:_value)?)$", _I)
_ALLOWED_KEYS = re.compile(
    r"(?:allow|valid|accept|support|permitted|options|choices|enum|expected|possible|one_?of)", _I
)
_QUOTED_VALUE = re.compile(r"(?<![\w])['\"`]([^'\"`\n]{1,80})['\"`](?![\w])")


def _structured(output: str) -> Any:
    """The JSON body of a tool error, when it has one (whole output, or after a short prefix); a
    Python literal (``{'field': 'x'}``, what a tool that prints a dict returns) is read alike."""
    text = (output or "").strip()
    for start in (0, *(i for i in (text.find("{"), text.find("[")) if i > 0)):
        try:
            return json.loads(text[start:])
        except (ValueError, TypeError):
            pass
        if text[start : start + 1] in ("{", "["):
            try:
                return ast.literal_eval(text[start:])
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return None


def _walk(data: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every ``(key, value)`` leaf or list of a parsed error body, depth first."""
    if isinstance(data, dict):
        return [pair for k, v in data.items() for pair in _walk(v, str(k))]
    if isinstance(data, list) and data and all(isinstance(v, str | int | float) for v in data):
        return [(key, [str(v) for v in data])]
    if isinstance(data, list):
        return [pair for v in data for pair in _walk(v, key)]
    return [(key, data)]


def error_text(output: str) -> str:
    """The human-readable text of a tool error: the string fields of a JSON body joined into
    sentences (so JSON quoting is not read as quoted values), else the output as it is."""
    data = _structured(output)
    if data is None:
        return output or ""
    parts: list[str] = []
    for _, v in _walk(data):
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, list):
            # messages filed in a list ({"size": ["is not a valid choice"]}), not lists of names
            parts += [m for m in v if " " in m.strip()]
    return ". ".join(p.rstrip(". ") for p in parts if p.strip())


_DISAPPROVAL = re.compile(
    r"\b(?:that|this|it)(?:'s| is| was)\s+(?:really\s+|just\s+|so\s+)?(?:not|never)\s+"
    r"(?:ok|okay|acceptable|appropriate|fine|allowed|alright|all right|safe|professional)\b",
    _I,
)
_AGENT_ACT = re.compile(
    r"\byou(?:'ve| have)?\s+(?:just\s+|already\s+|actually\s+)?(?P<verb>[a-z]+(?:ed|wn|ne)|showed|gave|told|sent|said|put|let|read|made|left)\s+(?P<rest>[^.;!?]+)",
    _I,
)


def _disapproved_act(correction: str) -> str | None:
    """ "You just showed my entire card number. That's not okay." -> "Do not show the user's entire
    card number.": an act the user reports the agent did, judged unacceptable, as a prohibition."""
    if not _DISAPPROVAL.search(correction):
        return None
    m = _AGENT_ACT.search(correction)
    if not m:
        return None
    clause = f"{m.group('verb')} {m.group('rest').strip()}"
    for pat, rep in _PRONOUNS:
        clause = re.sub(pat, rep, clause)
    return f"Do not {_base_form(clause).rstrip(' ,')}."


def tool_error_delta(output: str, args_text: str = "") -> tuple[str | None, str | None]:
    """``(expected, got)`` named in a tool's error message.

    Structured errors are read by field (``{"expected": ..., "got": ...}``, ``{"allowed": [...]}``)
    and by the text of their messages. ``got`` is the rejected value the call sent (quoted in the
    error and present in the call's arguments); ``expected`` is the value the error names as
    right, or the one acceptable value that resembles ``got``; None when the error lists several
    acceptable values and none stands out (the tool's description then decides, downstream).
    """
    data = _structured(output)
    got = expected = None
    if data is not None:
        for key, value in _walk(data):
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                if got is None and _GOT_KEYS.match(key):
                    got = str(value)
                elif expected is None and _EXPECTED_KEYS.match(key):
                    expected = str(value)
    text = error_text(output)
    got_m = _TOOL_GOT.search(text)
    exp_m = _TOOL_EXPECTED.search(text)
    got = got or (got_m.group("got") if got_m else None)
    expected = expected or (exp_m.group("exp") if exp_m else None)
    allowed = allowed_values(output)
    quoted = [q.strip() for q in _QUOTED_VALUE.findall(text)]
    # "..., got 05/12/2026": an unquoted value after "got" that the call sent; it is what was
    # rejected even where the error also quotes the argument's name ("Bad argument 'when': ...").
    bare = [m.group("got").rstrip(".") for m in _TOOL_GOT_BARE.finditer(text)]
    bare_got = next((b for b in bare if b and _in_args(b, args_text)), None)
    sent = _structured(args_text)
    sent_keys = {str(k) for k in sent} if isinstance(sent, dict) else set()
    if bare_got is not None and (got is None or got in sent_keys):
        got = bare_got
    if got is None:
        in_args = [q for q in quoted if q and _in_args(q, args_text)]
        got = in_args[0] if in_args else None
    if got is None:
        got = _unlisted_argument(data, text, args_text, allowed)
    if expected is None and data is not None:
        expected = _missing_required(data, args_text, got)
    if expected is None and allowed:
        # a field the call already sent is not what the rejected one was meant to be
        unsent = [a for a in allowed if a not in sent_keys] if got in sent_keys else allowed
        expected = _closest_allowed(got, unsent or allowed)
    if expected is None and not allowed:
        # a name the call already sent is the field in question, never the value it should have sent
        rest = [q for q in quoted if q != got and q not in allowed and q not in sent_keys]
        if rest:
            expected = rest[-1]
    if expected is None and not allowed:
        # "... takes zip_code", "expected format YYYY-MM-DD": an unquoted name that reads as code
        named = [m.group("exp").rstrip(".") for m in _TOOL_EXPECTED_BARE.finditer(text)]
        expected = next((n for n in named if _CODE_LIKE.fullmatch(n) and n != got), None)
    if expected is not None and got is not None and normalize(expected) == normalize(got):
        expected = None
    return expected, got


_REQUIRED_KEYS = re.compile(r"(?:required|missing|mandatory)", _I)


def _missing_required(data: Any, args_text: str, got: str | None) -> str | None:
    """The one field a structured error lists as required (``{"required": ["a", "b"]}``) that the
    call did not send: the name the call should have used instead of ``got``."""
    sent = _structured(args_text)
    keys = {str(k) for k in sent} if isinstance(sent, dict) else set()
    for key, value in _walk(data):
        if isinstance(value, list) and _REQUIRED_KEYS.search(key):
            absent = [str(v) for v in value if v not in keys and v != got]
            if len(absent) == 1:
                return absent[0]
    return None


def _unlisted_argument(data: Any, text: str, args_text: str, allowed: list[str]) -> str | None:
    """What the call sent that the error rejects without quoting it: the value of the field a
    structured error files its message under, else the one sent value the error's text names
    as a bare word, else the one sent key missing from the fields the error lists (required or
    allowed), else the one sent key the text names."""
    sent = _structured(args_text)
    if not isinstance(sent, dict) or not sent:
        return None
    keys = [str(k) for k in sent]
    listed = set(allowed)
    if data is not None:
        for key, value in _walk(data):
            if isinstance(value, list) and (_REQUIRED_KEYS.search(key) or _ALLOWED_KEYS.search(key)):
                listed |= {str(v) for v in value}
        filed = [sent[k] for k in _message_fields(data) if k in sent]
        if len(filed) == 1 and isinstance(filed[0], str | int | float) and not isinstance(filed[0], bool):
            return str(filed[0])
    values = [
        str(v)
        for v in sent.values()
        if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v) not in listed
    ]
    echoed = [v for v in values if len(v) >= 2 and _names(text, v)]
    if len(echoed) == 1:
        return echoed[0]
    if listed & set(keys):
        unlisted = [k for k in keys if k not in listed]
        if len(unlisted) == 1:
            return unlisted[0]
    # keys named in the text, or in a list the error points with ({"loc": ["body", "colour"]})
    pointed = (
        {str(v) for _, value in _walk(data) if isinstance(value, list) for v in value} if data else set()
    )
    named = [k for k in keys if (_names(text, k) or k in pointed) and k not in listed]
    if len(named) != 1:
        return None
    # An error that names the field and lists values (none of them a field name) rejects the
    # field's value: {"field": "size", "allowed": ["S", "M", ...]}.
    value = sent[named[0]]
    if allowed and isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    return named[0]


def _names(text: str, token: str) -> bool:
    """Whether ``text`` contains ``token`` as a whole word (not inside a longer identifier)."""
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def _message_fields(data: Any) -> list[str]:
    """Keys of a structured error whose value is a message (``{"errors": {"size": ["not valid"]}}``)."""
    out: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            msgs = [v] if isinstance(v, str) else v if isinstance(v, list) else []
            if msgs and all(isinstance(m, str) and " " in m.strip() for m in msgs):
                out.append(str(k))
            else:
                out += _message_fields(v)
    elif isinstance(data, list):
        for v in data:
            out += _message_fields(v)
    return out


def _in_args(value: str, args_text: str) -> bool:
    if not args_text:
        return False
    data = _structured(args_text)
    if isinstance(data, dict):
        leaves = {str(v) for _, v in _walk(data) if not isinstance(v, list)} | {str(k) for k in data}
        return value in leaves
    return value in args_text


def _closest_allowed(got: str | None, allowed: list[str]) -> str | None:
    """The acceptable value that ``got`` was meant to be: the only one, else the only one sharing a
    stem or prefix with it (``"damage"`` -> ``"DAMAGED"``, ``"promo_code"`` -> ``"promo"``...)."""
    options = [a for a in allowed if got is None or normalize(a) != normalize(got)]
    if len(options) == 1:
        return options[0]
    if not got:
        return None
    # The same name but for case and separators ("XLPLUS" for "XL_PLUS", "EU-WEST" for "eu_west").
    same = [a for a in options if _squashed(a) == _squashed(got)]
    if len(same) == 1:
        return same[0]
    g = {stem(t) for t in chat_tokens(got.replace("-", " ").replace("_", " "))}
    alike = [
        a
        for a in options
        if g & {stem(t) for t in chat_tokens(a.replace("-", " ").replace("_", " "))}
        or normalize(a).startswith(normalize(got)[:4])
        or (len(_squashed(a)) >= 3 and _squashed(got).startswith(_squashed(a)))
    ]
    return alike[0] if len(alike) == 1 else None


def _squashed(value: str) -> str:
    return re.sub(r"[^a-z0-9]", "", value.lower())


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
        r"need|was after|was looking for|question was about|question is about) the ([a-z][\w -]{2,60}?)"
        r"(?:\s*[(\[—–:]|\s+-\s|[.,;!?]|$)",
        correction,
        _I,
    )
    return m.group(1).strip() if m else None


_ALLOWED = re.compile(
    r"\b(?:one of|allowed(?: values| keys)?|accepted(?: values| keys)?|expected(?: keys| values| one of)?|valid (?:values|keys|options)|"
    r"supported(?: values| keys)?|options are|possible values|choices)\s*(?::|are|is|include)\s*(?P<list>[^.;()\n]+)|"
    r"\b(?:must be|should be)\s+one of\s*:?\s*(?P<list2>[^.;()\n]+)",
    _I,
)


# A bulleted line: read as one more item of the list it continues ("Allowed:\n- A\n- B").
_BULLET = re.compile(r"\s*\n\s*[-*\u2022]\s+")


def allowed_values(output: str) -> list[str]:
    """Values a tool error lists as acceptable ("must be one of P1, P2, P3", "Expected keys: 'a', 'b'",
    ``{"allowed": ["A", "B"]}``), from a JSON body's fields and its messages' text alike."""
    out: list[str] = []
    data = _structured(output)
    if data is not None:
        for key, value in _walk(data):
            if isinstance(value, list) and _ALLOWED_KEYS.search(key):
                out += [v for v in value if v not in out]
    text = _BULLET.sub(", ", error_text(output))
    for m in _ALLOWED.finditer(text):
        for part in re.split(r",|\bor\b|\band\b|\|", m.group("list") or m.group("list2") or ""):
            part = part.strip().strip("'\"`[]{}").strip()
            if part and len(part.split()) <= 3 and part not in out:
                out.append(part)
    if not out:
        out = enumeration(text)
    return out


# What introduces a list in an error: a colon, an arrow or a dash ("Try: a | b", "Options -> a, b").
_ENUMERATION = re.compile(
    r"(?::|->|=>|\u2192|\s\u2014|\s\u2013|\s-\s|\b(?:choose|pick|select) from\b|\b(?:one|any) of\b|"
    # "tiers are basic, silver, gold": a plural noun and "are" before the list
    r"\b[a-z]+s\s+are\b)\s*(?P<list>[^.;:()\n>\u2192]+)",
    _I,
)
# An unquoted run joined by pipes ("S|M|L"): list syntax, whatever introduces it.
_PIPE_RUN = re.compile(r"(?<![\w|])[\w.-]+(?:\s*\|\s*[\w.-]+)+(?![\w|])")
_LIST_SEPARATOR = re.compile(r",|\||\s/\s|\u00b7|\u2022|\bor\b|\band\b")
_QUOTED_RUN = re.compile(
    r"['\"`][\w./-]+['\"`](?:\s*(?:,|\||\bor\b|\band\b|,\s*or\b)\s*['\"`][\w./-]+['\"`])+"
)
_IDENTIFIER = re.compile(r"[\w][\w./-]*")


def enumeration(text: str) -> list[str]:
    """The values of a list an error introduces with a colon, an arrow or a dash, whatever its label
    ("Accepted arguments: a, b, c", "Try -> x | y"), or that it quotes as a run ("should be 'a', 'b'
    or 'c'"): two or more separated items, each a single identifier-like token. A colon before a
    sentence ("Error: the request failed") introduces no list."""
    for m in _ENUMERATION.finditer(text):
        parts = [p.strip().strip("'\"`[]{}").strip() for p in _LIST_SEPARATOR.split(m.group("list"))]
        parts = [p for p in parts if p]
        if len(parts) >= 2 and all(_IDENTIFIER.fullmatch(p) for p in parts):
            return list(dict.fromkeys(parts))
    for m in _QUOTED_RUN.finditer(text):
        return list(dict.fromkeys(_QUOTED_VALUE.findall(m.group(0))))
    for m in _PIPE_RUN.finditer(text):
        return list(dict.fromkeys(p.strip() for p in m.group(0).split("|") if p.strip()))
    return []


_PRONOUNS = (
    (r"\bmy\b", "the user's"),
    (r"\bme\b", "the user"),
    (r"\bI'm\b", "the user is"),
    (r"\bI\b", "the user"),
    (r"\bmine\b", "the user's"),
)


def instruction_from(correction: str) -> str:
    """A behavioural correction rewritten as an imperative rule for a system prompt.

    ``"You're not supposed to give advice, you should refer me to an advisor."`` ->
    ``"Do not give advice. Refer the user to an advisor."``
    """
    rules = []
    for m in _PRESCRIPTIVE.finditer(correction):
        lead = m.group(0)[: m.start("clause") - m.start(0)].lower()
        clause = m.group("clause").strip()
        clause = re.split(r"\s*(?:,|—|\s-\s)\s*(?:you\b|and you\b|but\b)", clause, maxsplit=1, flags=_I)[
            0
        ].strip()
        clause = _TAG_QUESTION.sub("", clause).strip()
        clause = re.sub(r"\s+(?:first|before anything else)$", " first", clause)
        lead_l = lead.strip()
        # "you shouldn't X" / "you're not allowed to X" forbid X; "didn't you / shouldn't you have X" ask for X.
        negative = (
            any(w in lead_l for w in ("not ", "n't", "never"))
            and not lead_l.startswith(
                ("shouldn't you", "didn't you", "don't you", "aren't you", "weren't you")
            )
            and "didn't" not in lead_l
            and "did not" not in lead_l
            and "forgot" not in lead_l
        ) or lead_l.startswith(("how ", "why "))
        for pat, rep in _PRONOUNS:
            clause = re.sub(pat, rep, clause)
        clause = clause.rstrip(" ,")
        if not clause:
            continue
        if clause.lower().startswith("have "):
            clause = clause[5:]
        clause = _base_form(clause)
        text = ("Do not " + clause) if negative else (clause[0].upper() + clause[1:])
        if "always" in lead and not negative:
            text = "Always " + clause
        rules.append(text.rstrip(".") + ".")
    return " ".join(rules) if rules else correction.strip()


_PAST = {
    "asked": "ask",
    "told": "tell",
    "checked": "check",
    "verified": "verify",
    "mentioned": "mention",
    "given": "give",
    "gave": "give",
    "said": "say",
    "offered": "offer",
    "referred": "refer",
    "confirmed": "confirm",
    "explained": "explain",
    "warned": "warn",
    "included": "include",
    "escalated": "escalate",
    "sent": "send",
    "informed": "inform",
    "reminded": "remind",
    "transferred": "transfer",
    "provided": "provide",
    "requested": "request",
    "recommended": "recommend",
    "suggested": "suggest",
    "disclosed": "disclose",
    "collected": "collect",
    "shared": "share",
}


_IRREGULAR = {"showed": "show", "shown": "show", "put": "put", "let": "let", "read": "read", "made": "make",
              "left": "leave", "done": "do", "gone": "go"}  # fmt: skip


def _base_form(clause: str) -> str:
    first, _, rest = clause.partition(" ")
    low = first.lower()
    base = _PAST.get(low) or _IRREGULAR.get(low)
    if base is None and low.endswith("ed") and len(low) > 4:
        stemmed = low[:-2]
        if len(stemmed) > 2 and stemmed[-1] == stemmed[-2] and stemmed[-1] not in "ls":
            stemmed = stemmed[:-1]  # stopped -> stop
        elif low.endswith("ied"):
            stemmed = low[:-3] + "y"
        base = stemmed
    return f"{base} {rest}".strip() if base else clause

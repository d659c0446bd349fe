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

from causal_middleware.context.text import (
    CONVERSATION_WORDS,
    content_tokens,
    find_values,
    normalize,
    value_kind,
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
    r"(?:the|its|their)\s+[a-z]+(?:\s+[a-z]+)?\s+(?:is|are))\s+(?P<x>[^,.;!?]+?)" + _STOP,
    _I,
)
_PRESCRIPTIVE = re.compile(
    r"(?:\byou(?:'re| are|'re not| are not| were| weren't| were not| aren't)\s+(?:really\s+|definitely\s+|clearly\s+)?(?:not\s+)?"
    r"(?:supposed|allowed|permitted|meant|required)\s+to|"
    r"\byou (?:really |definitely |clearly |honestly |absolutely |just )?(?:should(?:n't| not)?|must(?:n't| not)?|need to|have to|"
    r"were supposed to|forgot to|didn't|did not|never|always)(?:\s+have)?|"
    r"\b(?:aren't|weren't) you (?:supposed|meant|required) to|\b(?:shouldn't|should|didn't|don't) you(?: have| need to)?|"
    r"\b(?:shouldn't|should not) (?:this|that|it)(?: have)?)"
    r"\s+(?P<clause>[^.;!?]+)",
    _I,
)
_TAG_QUESTION = re.compile(
    r",?\s*(?:are|aren't|do|don't|did|didn't|is|isn't|should|shouldn't|can|can't|will|won't|right)\s*(?:you|it|they|I)?\s*$",
    _I,
)
STRONG_VALUE_KINDS = ("money", "percent", "duration", "date", "time")
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


def _is_judgement(phrase: str) -> bool:
    words = content_tokens(phrase)
    return not words or all(w in CONVERSATION_WORDS for w in words)


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
    for _kind, span in find_values(correction):
        if got and normalize(span) == normalize(got):
            continue
        if got_span and normalize(span) in normalize(got_span):
            continue
        expected = span
        break
    if expected is None:
        for m in _EXPECTED_PHRASE.finditer(correction):
            phrase = _clean(m.group("x"))
            if phrase and not _is_judgement(phrase) and (not got or normalize(phrase) != normalize(got)):
                expected = phrase
                break
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
    if expected is None:
        return "none", None, got, None
    if got is None and answer:
        kind = value_kind(expected)
        if kind != "phrase":
            said = [(k, span) for k, span in find_values(answer) if normalize(span) != normalize(expected)]
            same = [span for k, span in said if k == kind]
            # A value of another kind: the agent answered a different question than the one asked.
            other = [span for k, span in said if k in STRONG_VALUE_KINDS]
            got = same[0] if same else (other[0] if kind in STRONG_VALUE_KINDS and len(other) == 1 else None)
    return "value", expected, got, None


def tool_error_delta(output: str, args_text: str = "") -> tuple[str | None, str | None]:
    """``(expected, got)`` named in a tool's error message."""
    got_m = _TOOL_GOT.search(output)
    exp_m = _TOOL_EXPECTED.search(output)
    got = got_m.group("got") if got_m else None
    expected = exp_m.group("exp") if exp_m else None
    if got is None or expected is None:
        quoted = [q for q in _QUOTED.findall(output)]
        in_args = [q for q in quoted if q in args_text]
        if got is None and in_args:
            got = in_args[0]
        rest = [q for q in quoted if q != got]
        if expected is None and rest:
            expected = rest[-1]
    return expected, got


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
        r"\b(?:asked about|asking about|meant|mean|talking about|was asking for) the ([a-z][\w -]{2,60}?)(?:[.,;!?]|$)",
        correction,
        _I,
    )
    return m.group(1).strip() if m else None


_ALLOWED = re.compile(
    r"\b(?:one of|allowed(?: values| keys)?|accepted(?: values| keys)?|expected(?: keys| values| one of)?|valid (?:values|keys|options)|"
    r"supported(?: values| keys)?|options are)\s*:?\s*(?P<list>[^.;()\n]+)",
    _I,
)


def allowed_values(output: str) -> list[str]:
    """Values a tool error lists as acceptable ("must be one of P1, P2, P3", "Expected keys: 'a', 'b'")."""
    out: list[str] = []
    for m in _ALLOWED.finditer(output):
        for part in re.split(r",|\bor\b|\band\b", m.group("list")):
            part = part.strip().strip("'\"`").strip()
            if part and len(part.split()) <= 3 and part not in out:
                out.append(part)
    return out


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
        )
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


def _base_form(clause: str) -> str:
    first, _, rest = clause.partition(" ")
    base = _PAST.get(first.lower())
    if base is None and first.lower().endswith("ed") and len(first) > 5:
        base = None
    return f"{base} {rest}".strip() if base else clause

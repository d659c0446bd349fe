"""The delta: "expected X but got Y", read from the user's correction or from a tool error.

Generic rules only: value spans (amounts, percentages, durations, dates, times, quoted strings,
numbers) are matched by kind between the correction and the answer it corrects; "it's X, not Y",
"instead of Y", "no longer Y" name the wrong value explicitly; prescriptive corrections ("you
should ...", "you're supposed to ...") with no value are behavioural.
"""

from __future__ import annotations

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
    stem,
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
_UNMET = re.compile(r"(?:^|[,;:]\s*)(?:nobody|no one|no-one|none|nothing|not even)\b[^?]*\byet\b", _I)


def behavioural_objection(sentence: str) -> bool:
    """A reply to the agent's answer that objects to what it did, read from the sentence's
    structure rather than correction words: an obligation or permission that binds someone other
    than the user ("Surely someone has to check it first?", "I thought this had to be signed",
    "Are you even allowed to ...?"), the agent's advice quoted back ("You told me to ..."), or an
    expected step that has not happened ("nobody has even looked at it yet"). A question asking
    what the user must do ("Do I need to ...?") and a request are not objections."""
    text = sentence.strip()
    if _AGENT_ADVICE.match(text) or _UNMET.search(text):
        return True
    if _REQUEST_OPENING.match(text):
        return False
    m = _DEONTIC.search(text)
    if m is None:
        return False
    before = text[: m.start()].split()[-2:]
    if any(_FIRST_PERSON_WORD.fullmatch(w.strip(",")) for w in before):
        return False
    asking = _ASKING.match(text)
    if asking is not None:
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
    if (expected is None or value_kind(expected) not in STRONG_VALUE_KINDS) and any(
        behavioural_objection(sent) for sent in sentences(correction)
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
    """The JSON body of a tool error, when it has one (whole output, or after a short prefix)."""
    text = (output or "").strip()
    for start in (0, *(i for i in (text.find("{"), text.find("[")) if i > 0)):
        try:
            return json.loads(text[start:])
        except (ValueError, TypeError):
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
    parts = [str(v) for _, v in _walk(data) if isinstance(v, str) and not isinstance(v, bool)]
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
    if got is None:
        in_args = [q for q in quoted if q and _in_args(q, args_text)]
        got = in_args[0] if in_args else None
    if expected is None and data is not None:
        expected = _missing_required(data, args_text, got)
    if expected is None and allowed:
        expected = _closest_allowed(got, allowed)
    if expected is None and not allowed:
        rest = [q for q in quoted if q != got and q not in allowed]
        if rest:
            expected = rest[-1]
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
    g = {stem(t) for t in chat_tokens(got.replace("-", " ").replace("_", " "))}
    alike = [
        a
        for a in options
        if g & {stem(t) for t in chat_tokens(a.replace("-", " ").replace("_", " "))}
        or normalize(a).startswith(normalize(got)[:4])
    ]
    return alike[0] if len(alike) == 1 else None


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
    r"supported(?: values| keys)?|options are|possible values|choices)\s*(?::|are|is|include)\s*(?P<list>[^.;()\n]+)|"
    r"\b(?:must be|should be)\s+one of\s*:?\s*(?P<list2>[^.;()\n]+)",
    _I,
)


def allowed_values(output: str) -> list[str]:
    """Values a tool error lists as acceptable ("must be one of P1, P2, P3", "Expected keys: 'a', 'b'",
    ``{"allowed": ["A", "B"]}``), from a JSON body's fields and its messages' text alike."""
    out: list[str] = []
    data = _structured(output)
    if data is not None:
        for key, value in _walk(data):
            if isinstance(value, list) and _ALLOWED_KEYS.search(key):
                out += [v for v in value if v not in out]
    text = error_text(output)
    for m in _ALLOWED.finditer(text):
        for part in re.split(r",|\bor\b|\band\b|\|", m.group("list") or m.group("list2") or ""):
            part = part.strip().strip("'\"`[]{}").strip()
            if part and len(part.split()) <= 3 and part not in out:
                out.append(part)
    if not out:
        out = enumeration(text)
    return out


_ENUMERATION = re.compile(r":\s*(?P<list>[^.;:()\n]+)")
_IDENTIFIER = re.compile(r"[\w][\w./-]*")


def enumeration(text: str) -> list[str]:
    """The values of a list an error introduces with a colon, whatever its label ("Accepted
    arguments: a, b, c", "Try: x | y"): two or more separated items, each a single identifier-like
    token. A colon before a sentence ("Error: the request failed") introduces no list."""
    for m in _ENUMERATION.finditer(text):
        parts = [
            p.strip().strip("'\"`[]{}").strip() for p in re.split(r",|\bor\b|\band\b|\|", m.group("list"))
        ]
        parts = [p for p in parts if p]
        if len(parts) >= 2 and all(_IDENTIFIER.fullmatch(p) for p in parts):
            return list(dict.fromkeys(parts))
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

"""What a tool error says was wrong: the rejected argument and the value it should have been.

Read from any error body: JSON or a Python literal by field, and the text of its messages by shape
(an allowed-value list however it is introduced and separated, a quoted or bare rejected value).
"""

from __future__ import annotations

import html
import re
from typing import Any

from causal_middleware.context.error_bodies import error_text, structured, walk
from causal_middleware.context.text import normalize, stem
from causal_middleware.text import chat_tokens

_I = re.IGNORECASE
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
_LIST_GOES_ON = re.compile(r"\s*(?:,|\bor\b|\|)\s*['\"`]", _I)
_TOOL_GOT_BARE = re.compile(r"\b(?:got|received|given)\s*:?\s+(?P<got>[^\s,;()'\"`]+)", _I)
_TOOL_EXPECTED_BARE = re.compile(
    r"\b(?:expects?|expected|takes|accepts|requires|use|did you mean|should be|must be)\s+"
    r"(?:format\s+|parameter\s+|field\s+|value\s+|key\s+|argument\s+|the\s+)?(?P<exp>[A-Za-z0-9][\w./:-]*)",
    _I,
)
# A name that reads as code, not prose: with a separator or a digit, or in capitals.
_CODE_LIKE = re.compile(r"[\w.:/-]*[_\d-][\w.:/-]*|[A-Z][A-Z0-9]+")

# (snake_case or camelCase alike: "rejected_value", "rejectedValue")
_GOT_KEYS = re.compile(r"^(?:got|received|value|input|given|provided|actual|rejected(?:_?value)?)$", _I)
_EXPECTED_KEYS = re.compile(r"^(?:expected(?:_?value)?|did_?you_?mean|suggestion|correct(?:_?value)?)$", _I)
_ALLOWED_KEYS = re.compile(
    r"(?:allow|valid|accept|support|permitted|options|choices|enum|expected|possible|one_?of)", _I
)
_QUOTED_VALUE = re.compile(r"(?<![\w])['\"`]([^'\"`\n]{1,80})['\"`](?![\w])")


# Keys under which a structured error names the argument it is about ("loc", "param", "field", ...).
_FIELD_KEYS = re.compile(
    r"^(?:loc|location|param|parameter|field|field_name|property|path|key|name|argument|attr)$", _I
)
# ... or, several at once, under the plural of such a key ("keys": ["a", "b"]).
_FIELD_LIST_KEYS = re.compile(
    r"^(?:keys|fields|params|parameters|properties|arguments|attrs|attributes)$", _I
)
# ... or under a key that also says what is wrong with it ("missingProperty", "unknown_field").
_QUALIFIED_FIELD_KEY = re.compile(
    r"[a-z](?:_?(?:Property|property|Param|param|Parameter|parameter|Field|field|Argument|argument))$"
)
# Keys that hold an error's own text, never an argument's name.
_MESSAGE_KEYS = re.compile(
    r"^(?:message|msg|detail|details|error|errors|description|title|reason|hint|text|summary|type|code|status)$",
    _I,
)
# What an error item says of that argument: it was not expected, or it was missing.
# ... said of the argument itself, not of its value ("unknown parameter", "extra inputs", "field
# not permitted"; "unknown ward" rejects a value of the field).
_ARGUMENT = r"(?:field|param(?:eter)?|argument|arg|key|keyword|property|propertie|input|attribute|option)s?"
_UNEXPECTED = re.compile(
    rf"\b(?:extra|unknown|unexpected|unrecogni[sz]ed|unsupported|undeclared)[\s_]+{_ARGUMENT}\b|"
    rf"\b{_ARGUMENT}[\s_]+(?:unknown|not (?:permitted|allowed|expected|recogni[sz]ed))\b|"
    # "the parameter x is not recognized", "is not a permitted parameter"
    rf"\b{_ARGUMENT}\s+\S+\s+(?:is|was)\s+not\s+(?:recogni[sz]ed|permitted|allowed|expected|supported|known|defined)\b|"
    # a legacy command's "Keyword x not valid for this command"
    rf"\b{_ARGUMENT}\s+\S+\s+(?:(?:is|was)\s+)?not\s+(?:valid|defined)\s+for\s+(?:this|the)\s+"
    r"(?:command|operation|method|request|endpoint|call|function)\b|"
    rf"\bnot\s+an?\s+(?:permitted|allowed|known|recogni[sz]ed|valid|supported)\s+{_ARGUMENT}\b|"
    r"\bextra_|\badditional propert|\bno such (?:field|param)",
    _I,
)
_MISSING = re.compile(
    r"missing|required|mandatory|must be (?:provided|present|set)|(?:can't|cannot|can not|must not) be "
    r"(?:blank|empty|null)|must (?:contain|include|have)",
    _I,
)


def _error_items(data: Any) -> list[tuple[str, str]]:
    """``(argument, what the error says of it)`` for each item of a structured error that names an
    argument (``{"loc": ["body", "x"], "type": "missing", "msg": "Field required"}``, ``{"param":
    "x", "message": "Received unknown parameter"}``): the item's field, its other strings joined."""
    out: list[tuple[str, str]] = []
    if isinstance(data, dict):
        field = None
        said: list[str] = []
        for k, v in data.items():
            if _FIELD_KEYS.match(str(k)):
                names = [str(x) for x in v] if isinstance(v, list) else [str(v)] if isinstance(v, str) else []
                field = names[-1] if names else field
            elif isinstance(v, str) and _QUALIFIED_FIELD_KEY.search(str(k)):
                # {"missingProperty": "x"}, {"unknown_param": "x"}: the key says what is wrong with x
                field = v
                said.append(re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", str(k)))
            elif isinstance(v, str):
                said.append(f"{k} {v}")
        if field:
            out.append((field, " ".join(said)))
        for k, v in data.items():
            # {"code": "unrecognized_keys", "keys": ["a", "b"]}: a list of the arguments the item is about
            if _FIELD_LIST_KEYS.match(str(k)) and isinstance(v, list):
                out += [
                    (str(x), " ".join(said)) for x in v if isinstance(x, str) and _IDENTIFIER.fullmatch(x)
                ]
        for k, v in data.items():
            # {"errors": {"x": ["is not a permitted parameter"]}}: messages filed under the argument
            msgs = [v] if isinstance(v, str) else v if isinstance(v, list) else []
            if (
                not field
                and not _MESSAGE_KEYS.match(str(k))
                and msgs
                and all(isinstance(m, str) and " " in m.strip() for m in msgs)
            ):
                out.append((str(k), " ".join(msgs)))
            if isinstance(v, dict | list):
                out += _error_items(v)
    elif isinstance(data, list):
        for v in data:
            out += _error_items(v)
    return out


# A name written as code: with an underscore or a dot inside ("desk_id", "user.email").
_CODE_NAME = re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+(?![\w-])")
# An instruction that names the arguments to send (a legacy message's "Recovery" line, a
# hint's "use ... instead"): "Specify a_b and C, then try the command again".
_RECOVERY = re.compile(
    r"(?:^|[.:;]\s*|\n\s*)(?:please\s+)?(?:specify|provide|supply|pass|send|use)\s+"
    r"(?P<names>[^.;\n]*?)(?=,?\s*(?:then|and then|instead|and (?:re)?try|to continue)\b|[.;\n]|$)",
    _I,
)
_REQUIRED_LIST = re.compile(r"\b(?:required|missing|mandatory)\b[^:.;\n]{0,30}:\s*(?P<list>[^.;\n]+)", _I)


# A plural suffix in parentheses ("key(s)", "match(es)"): part of the word.
_PLURAL_SUFFIX = re.compile(r"(?<=[A-Za-z])\((e?s)\)", _I)


def _argument_fault(data: Any, text: str, args_text: str) -> tuple[str | None, str | None]:
    """``(expected, got)`` read from what a structured error says of each argument: the one sent
    argument it calls unexpected is what was rejected, and the one argument it calls missing (by
    item or in a "required ...:" list of its text) that the call did not send is what was meant."""
    sent = structured(args_text)
    if not isinstance(sent, dict):
        return None, None
    keys = {str(k) for k in sent}
    items = _error_items(data) if data is not None else []
    # the error's own codes ({"type": "value_error.missing"}, {"code": "invalid_enum"}) are written
    # as code too, but they classify the error, they name no argument
    codes = _error_codes(data)
    # and what each sentence of its text says of the arguments it names
    # (a parenthesised aside is a clause of its own: "invalid T.a: value is required (unknown field
    # "b")" says one thing of each name)
    # (a plural written "key(s)" or "field(s)" is one word, not an aside)
    for sentence in re.split(r"(?<=[.;!])\s+|\n+|\s*[()]\s*", _PLURAL_SUFFIX.sub(r"\1s", text)):
        named = [k for k in keys if _names(sentence, k)]
        if _UNEXPECTED.search(sentence) and len(named) == 1:
            items.append((named[0], sentence))
        elif _MISSING.search(sentence) and not _UNEXPECTED.search(sentence):
            items += [
                (n, sentence)
                for n in map(_field_of, _CODE_NAME.findall(sentence))
                if n not in keys and n not in codes
            ]
    folded = {k.casefold() for k in keys}
    for m in _RECOVERY.finditer(text):
        # "Recovery: Specify a_b and C, then try again": the argument names the fix tells the
        # caller to send; those the call did not send (in any case) are what it left out
        items += [(n, "missing") for n in _CODE_NAME.findall(m.group("names")) if n.casefold() not in folded]
    unexpected = {f for f, said in items if f in keys and _UNEXPECTED.search(said)}
    missing = {
        f for f, said in items if f not in keys and _MISSING.search(said) and not _UNEXPECTED.search(said)
    }
    for m in _REQUIRED_LIST.finditer(text):
        names = [p.strip().strip("'\"`[]").strip() for p in re.split(r",|\bor\b|\band\b|\|", m.group("list"))]
        missing |= {n for n in names if n and _IDENTIFIER.fullmatch(n) and n not in keys}
    got = next(iter(unexpected)) if len(unexpected) == 1 else None
    missing.discard(got or "")
    expected = next(iter(missing)) if len(missing) == 1 else None
    return expected, got


def _error_codes(data: Any) -> set[str]:
    """The values a structured error files under its own message, type or code keys that are one
    code-like token ("value_error.missing", "E_RANGE"): how the error classifies itself."""
    if data is None:
        return set()
    return {
        v.strip()
        for k, v in walk(data)
        if isinstance(v, str) and _MESSAGE_KEYS.match(k) and _IDENTIFIER.fullmatch(v.strip())
    }


# A field qualified by the message or type it belongs to ("RefundRequest.card_uid", how protobuf
# validators and schema tools name a field): the type's name starts with a capital letter.
_QUALIFIED_FIELD = re.compile(r"(?:[A-Z][A-Za-z0-9]*\.)+(?P<field>[A-Za-z_][A-Za-z0-9_]*)")


def _field_of(name: str) -> str:
    """The field a qualified name names ("Request.card_uid" -> "card_uid"); other names as they are."""
    m = _QUALIFIED_FIELD.fullmatch(name)
    return m.group("field") if m else name


def tool_error_delta(output: str, args_text: str = "") -> tuple[str | None, str | None]:
    """``(expected, got)`` named in a tool's error message.

    Structured errors are read by field (``{"expected": ..., "got": ...}``, ``{"allowed": [...]}``)
    and by the text of their messages. ``got`` is the rejected value the call sent (quoted in the
    error and present in the call's arguments); ``expected`` is the value the error names as
    right, or the one acceptable value that resembles ``got``; None when the error lists several
    acceptable values and none stands out (the tool's description then decides, downstream).
    """
    data = structured(output)
    fault_expected, fault_got = _argument_fault(data, error_text(output), args_text)
    if fault_got is not None and fault_expected is not None:
        return fault_expected, fault_got
    expected, got = _value_fault(output, args_text, data)
    sent = structured(args_text)
    sent_keys = {str(k) for k in sent} if isinstance(sent, dict) else set()
    if fault_got is None:
        if fault_expected is not None and _nothing_sent(data):
            # the error reports nothing received for the argument it says is missing
            # ({"field": "x", "rejectedValue": null}): what else the call sent and the error happens
            # to echo (an id in the request path) is no rejected value
            got = None
        if fault_expected is not None and (got is None or (expected is None and got in sent_keys)):
            # a rejected name, and the one missing name it was meant to be; or no rejected value at
            # all: then the error is about the one required argument it says the call left out,
            # and what else it quotes names the request ("Validation failed for object='x'"), not
            # a value
            expected = fault_expected
        return expected, got
    # the argument itself was rejected: what the error names as meant, if it is not a sent name
    return (expected if expected and expected not in sent_keys and expected != fault_got else None), fault_got


def _value_fault(output: str, args_text: str, data: Any) -> tuple[str | None, str | None]:
    """``(expected, got)`` from the error's fields and message text (the reading of
    :func:`tool_error_delta` when no argument is rejected as such)."""
    got = expected = None
    absent = False
    if data is not None:
        for key, value in walk(data):
            if value is None and _GOT_KEYS.match(key):
                absent = True  # "rejectedValue": null
            elif isinstance(value, str | int | float) and not isinstance(value, bool):
                # a bare "value" field is often the error's own (SOAP 1.2 <Code><Value>): it is
                # the rejected value only when the call sent it
                if _GOT_KEYS.match(key) and _ABSENT.fullmatch(str(value).strip()):
                    # "received": "undefined": nothing was sent; what is "expected" there is a type
                    absent = True
                elif (
                    got is None
                    and _GOT_KEYS.match(key)
                    and (key.lower() != "value" or not args_text or _in_args(str(value), args_text))
                ):
                    got = str(value)
                elif expected is None and _EXPECTED_KEYS.match(key):
                    expected = str(value)
        if absent and got is None:
            expected = None
    text = error_text(output)
    got_m = _TOOL_GOT.search(text)
    exp_m = _TOOL_EXPECTED.search(text)
    got = got or (got_m.group("got") if got_m else None)
    # "should be 'A', 'B' or 'C'": the first of a list is not the expected value, the list is
    head_of_list = exp_m is not None and _LIST_GOES_ON.match(text, exp_m.end()) is not None
    expected = expected or (exp_m.group("exp") if exp_m and not head_of_list else None)
    allowed = allowed_values(output)
    quoted = [q.strip() for q in _QUOTED_VALUE.findall(text)]
    # "..., got 05/12/2026": an unquoted value after "got" that the call sent; it is what was
    # rejected even where the error also quotes the argument's name ("Bad argument 'when': ...").
    bare = [m.group("got").rstrip(".") for m in _TOOL_GOT_BARE.finditer(text)]
    bare_got = next((b for b in bare if b and _in_args(b, args_text)), None)
    sent = structured(args_text)
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
# What a validator reports as the received value of an argument the call did not send.
_ABSENT = re.compile(r"undefined|null|nil|none|missing|", _I)


def _nothing_sent(data: Any) -> bool:
    """Whether a structured error reports the received value of an argument as nothing
    (``"received": "undefined"``, ``"rejectedValue": null``)."""
    return data is not None and any(
        _GOT_KEYS.match(key)
        and (value is None or (isinstance(value, str) and _ABSENT.fullmatch(value.strip())))
        for key, value in walk(data)
    )


def _missing_required(data: Any, args_text: str, got: str | None) -> str | None:
    """The one field a structured error lists as required (``{"required": ["a", "b"]}``) that the
    call did not send: the name the call should have used instead of ``got``."""
    sent = structured(args_text)
    keys = {str(k) for k in sent} if isinstance(sent, dict) else set()
    for key, value in walk(data):
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
    sent = structured(args_text)
    if not isinstance(sent, dict) or not sent:
        return None
    keys = [str(k) for k in sent]
    listed = set(allowed)
    if data is not None:
        for key, value in walk(data):
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
    pointed = {str(v) for _, value in walk(data) if isinstance(value, list) for v in value} if data else set()
    named = [k for k in keys if (_names(text, k) or k in pointed) and k not in listed]
    if len(named) != 1:
        # no field named: the one sent value written like the listed ones ("FT01" beside "EN01,
        # EN02, GR01") is the one they would replace
        shapes = {_shape(a) for a in allowed}
        alike = [v for v in values if _shape(v) in shapes]
        return alike[0] if allowed and len(alike) == 1 else None
    # An error that names the field and lists values (none of them a field name) rejects the
    # field's value: {"field": "size", "allowed": ["S", "M", ...]}.
    value = sent[named[0]]
    if allowed and isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    return named[0]


def _shape(value: str) -> str:
    """How a value is written: "EN01" -> "AA99", "gold-2" -> "aaaa-9"."""
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", value)))


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
    data = structured(args_text)
    if isinstance(data, dict):
        leaves = {str(v) for _, v in walk(data) if not isinstance(v, list)} | {str(k) for k in data}
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


# What labels a list of acceptable values: an adjective with, or without, the plural noun it
# qualifies on either side ("Allowed:", "valid values are", "Expected elements are", "values
# permitted:", "VALID CODES ARE:").
_ACCEPTABLE = r"(?:allowed|accepted|expected|valid|supported|permitted|possible|legal)"
_ALLOWED = re.compile(
    rf"(?<![\w-])(?:one of|(?:[a-z]+s\s+)?{_ACCEPTABLE}(?:\s+(?:one of|[a-z]+s))?|options are|choices)"
    r"\s*(?::|are|is|include)(?:\s*:)?\s*(?P<list>[^.;()\n]+)|"
    r"\b(?:must be|should be)\s+one of\s*:?\s*(?P<list2>[^.;()\n]+)",
    _I,
)
# A namespace before a name: "{http://example.org/ns}name" (how XML binders print a qualified name).
_NAMESPACE = re.compile(r"\{[^{}\s]*\}(?=\w)")


# A bulleted line: read as one more item of the list it continues ("Allowed:\n- A\n- B").
_BULLET = re.compile(r"\s*\n\s*[-*\u2022]\s+")


def allowed_values(output: str) -> list[str]:
    """Values a tool error lists as acceptable ("must be one of P1, P2, P3", "Expected keys: 'a', 'b'",
    ``{"allowed": ["A", "B"]}``), from a JSON body's fields and its messages' text alike."""
    out: list[str] = []
    data = structured(output)
    if data is not None:
        for key, value in walk(data):
            if isinstance(value, list) and _ALLOWED_KEYS.search(key):
                out += [v for v in value if v not in out]
            elif isinstance(value, str) and _ALLOWED_KEYS.search(key) and not _MESSAGE_KEYS.match(key):
                # <allowedValues>A B C</allowedValues>, {"valid": "A, B, C"}: the list as one string
                parts = [i for p in _LIST_SEPARATOR.split(value) for i in _items(p)]
                out += [v for v in parts if v not in out] if len(parts) >= 2 else []
    text = _NAMESPACE.sub("", _BULLET.sub(", ", html.unescape(error_text(output))))
    for m in _ALLOWED.finditer(text):
        for part in re.split(r",|\bor\b|\band\b|\|", m.group("list") or m.group("list2") or ""):
            for item in _items(part):
                if item not in out:
                    out.append(item)
    if not out:
        # "letter_type must be EN01, EN02 or GR01": a list of two or more bare identifiers
        for m in _MUST_BE.finditer(text):
            parts = [p.strip().strip("'\"`[]{}").strip() for p in _LIST_SEPARATOR.split(m.group("list"))]
            parts = [p for p in parts if p]
            if len(parts) >= 2 and all(_IDENTIFIER.fullmatch(p) for p in parts):
                out = list(dict.fromkeys(parts))
                break
    if not out:
        # "value must be in list [A B C]": a set printed in brackets, space-separated (how Go
        # prints a slice, and so how protobuf validators list the allowed values)
        in_list = _IN_LIST.search(text)
        if in_list:
            parts = [p.strip("'\"`") for p in re.split(r"[,\s]+", in_list.group("list")) if p.strip("'\"`")]
            if len(parts) >= 2 and all(_IDENTIFIER.fullmatch(p) for p in parts):
                out = list(dict.fromkeys(parts))
    if not out:
        out = enumeration(text)
    return out


_IN_LIST = re.compile(
    r"\b(?:in|one of)\s+(?:the\s+)?(?:list|set|values)?\s*:?\s*\[(?P<list>[^\[\]\n]+)\]", _I
)


def _items(part: str) -> list[str]:
    """The values of one separated part of a labelled list: the part itself when it is a short
    phrase, or each of its words when they are codes joined by spaces ("A_ONE B_TWO C", how
    fixed-width and mainframe messages list values); XML's angle brackets and namespaces dropped."""
    part = part.strip().strip("'\"`[]{}<>").strip()
    if _SLASH_RUN.fullmatch(part):
        return [p for p in part.split("/") if p]
    words = [w.strip("'\"`[]<>") for w in part.split()]
    # "*ALL *NONE": special values of a command language keep their mark
    if len(words) >= 2 and all(_CODE_LIKE.fullmatch(w.lstrip("*")) and not w.isdigit() for w in words):
        return [w for w in words if w]
    if _LIST_REFERENCE.match(part):
        return []  # "must be one of the allowed values": the message points at a list it gives elsewhere
    return [part] if part and len(part.split()) <= 3 else []


# A phrase that refers to a list rather than naming a value ("the allowed values", "these options",
# "the following").
_LIST_REFERENCE = re.compile(
    r"(?:the|these|those|its|their)\s+(?:[\w-]+\s+)?(?:values|options|choices|ones|list|set|following)\b"
    r"|(?:the\s+)?following\b",
    _I,
)


_MUST_BE = re.compile(
    r"\b(?:must|should|has to|have to|needs? to)\s+be\s+(?:either\s+)?(?P<list>[^.;()\n]+)", _I
)


# What introduces a list in an error: a colon, an arrow or a dash ("Try: a | b", "Options -> a, b").
_ENUMERATION = re.compile(
    r"(?::|->|=>|\u2192|\s\u2014|\s\u2013|\s-\s|\b(?:choose|pick|select) from\b|\b(?:one|any) of\b|"
    # "tiers are basic, silver, gold": a plural noun and "are" before the list
    r"\b[a-z]+s\s+are\b)\s*(?P<list>[^.;:()\n>\u2192]+)",
    _I,
)
# An unquoted run joined by pipes ("S|M|L"): list syntax, whatever introduces it.
_PIPE_RUN = re.compile(r"(?<![\w|])[\w.-]+(?:\s*\|\s*[\w.-]+)+(?![\w|])")
# ... or by semicolons with no space ("A;B;C"), the way a CSV-minded back end joins them.
_SEMICOLON_RUN = re.compile(r"(?<![\w;])[\w.-]+(?:;[\w.-]+)+(?![\w;])")
# ... or by slashes with no space ("EN01/EN02/GR01"), when every item is an upper-case code with a
# letter in it: a path ("api/v1/items") or a date ("05/12/2026") is no list.
_SLASH_RUN = re.compile(r"(?<![\w/])[A-Z0-9_-]*[A-Z][A-Z0-9_-]*(?:/[A-Z0-9_-]*[A-Z][A-Z0-9_-]*)+(?![\w/])")
# ... or in parentheses, brackets or braces, comma-joined ("NOT IN (EN01,EN02,GR01)", "enumeration
# '[A, B]'", "One of '{a, b}' is expected", how SQL, Java and XML schema validators print a set).
_PAREN_LIST = re.compile(
    r"\((?P<list>[\w.-]+(?:\s*,\s*[\w.-]+)+)\)|\[(?P<list2>[\w.-]+(?:\s*,\s*[\w.-]+)+)\]|"
    r"\{(?P<list3>[\w.-]+(?:\s*,\s*[\w.-]+)+)\}"
)
# ... or codes after a colon, joined by spaces ("Valid: EN01 EN02 GR01"): each an upper-case code
# with a digit or an underscore, so that an upper-case sentence ("ERROR: INVALID TYPE") is no list.
_CODE = r"[A-Z][A-Z]*(?:[0-9_][A-Z0-9_]*)"
_SPACED_CODES = re.compile(
    r"(?::|->)\s*(?P<list>" + _CODE + r"(?:\s+" + _CODE + r")+)\s*(?=[.;)]|$)", re.MULTILINE
)
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
    for m in _SEMICOLON_RUN.finditer(text):
        return list(dict.fromkeys(p for p in m.group(0).split(";") if p))
    for m in _SLASH_RUN.finditer(text):
        return list(dict.fromkeys(p for p in m.group(0).split("/") if p))
    for m in _PAREN_LIST.finditer(text):
        found = m.group("list") or m.group("list2") or m.group("list3")
        return list(dict.fromkeys(p.strip() for p in found.split(",") if p.strip()))
    for m in _SPACED_CODES.finditer(text):
        return list(dict.fromkeys(m.group("list").split()))
    return []


_ERROR_KEYS = re.compile(r"^(?:errors?|fault|faultcode|faultstring|exception|error_message|error_code)$", _I)
_FAILED_STATUS = re.compile(r"^(?:error|errors|failed|failure|rejected|invalid|denied|fault)$", _I)
_ERROR_WORDS = re.compile(
    r"\bvalidation (?:error|failed)\b|\bnot a valid\b|\bmust be one of\b|\b(?:is|are) required\b|\brejected\b|"
    r"\berror\s*[:=]|\brpc error\b|\b\w+(?:Error|Exception)\b|\bdoes not exist\b|\bunrecogni[sz]ed\b|"
    r"\bunknown (?:field|param\w*|argument|key|propert\w*|value|option)\b",
    _I,
)


def looks_like_error(output: str) -> bool:
    """Whether a tool's output is an error, read from its body whatever its format: an error or
    fault field, a false ``ok`` / ``success``, a 4xx/5xx or failed status, items that each name an
    argument and what is wrong with it; or error wording in plain text."""
    data = structured(output)
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        items = _error_items(data)
        if items and any(_UNEXPECTED.search(said) or _MISSING.search(said) for _, said in items):
            return True
    if isinstance(data, dict):
        for key, value in data.items():
            k = str(key)
            if _ERROR_KEYS.match(k) and value not in (None, "", [], {}, False):
                return True
            if (
                k.lower() in ("name", "type", "kind", "class")
                and isinstance(value, str)
                and re.fullmatch(r"\w*(?:Error|Exception|Fault)", value)
            ):
                # a serialised exception: {"name": "ValidationError", ...}
                return True
            if k.lower() in ("ok", "success", "succeeded") and value is False:
                return True
            if k.lower() in ("level", "severity") and str(value).lower() in ("error", "fatal", "critical"):
                return True
            if k.lower() in ("status", "status_code", "code", "http_status"):
                if isinstance(value, int) and 400 <= value < 600:
                    return True
                if isinstance(value, str) and (
                    _FAILED_STATUS.match(value) or re.fullmatch(r"[45]\d\d", value)
                ):
                    return True
        if isinstance(data.get("detail"), list) and _error_items(data["detail"]):
            return True
        return False
    return data is None and _ERROR_WORDS.search(output or "") is not None


def _words_of(name: str) -> list[str]:
    """The words of a code name: "new_end_time" -> ["new", "end", "time"], "endsAt" -> ["ends", "at"]."""
    return [w.lower() for w in re.split(r"[_.\-\s]+|(?<=[a-z])(?=[A-Z])", name) if w]


def renamed_argument(output: str, args_text: str, description: str) -> tuple[str | None, str | None]:
    """``(expected, got)`` for an error that only names a required argument the call did not send
    (``{"errors": {"new_end_time": ["... is required."]}}``): the call sent it under another name,
    the one the tool's description gives for the same thing. The description names the thing in
    words and the argument in code in one sentence ("send the new end time as return_by"); else
    the one sent name that shares a word with the required one ("ends_at" for "end_time")."""
    sent = structured(args_text)
    if not isinstance(sent, dict) or not sent or not description:
        return None, None
    expected, got = _argument_fault(structured(output), error_text(output), args_text)
    if expected is None or got is not None or _names(description, expected):
        return None, None
    keys = [str(k) for k in sent if _names(description, str(k))]
    words = _words_of(expected)
    spoken = re.compile(r"\b" + r"[\s-]+".join(re.escape(w) for w in words) + r"\b", _I)
    # a description wraps its sentences across lines (a YAML folded block): split at punctuation only
    for sentence in re.split(r"(?<=[.;!?])\s+|\n\s*\n", description):
        m = spoken.search(sentence)
        if m:
            # the name written right after the words ("the new end time as new_end_time")
            after = sentence[m.end() :]
            at = {
                k: hit.start()
                for k in keys
                if (hit := re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", after))
            }
            if at:
                return expected, min(at, key=lambda k: at[k])
    stems = {w.rstrip("s") for w in words if len(w) > 2}
    sharing = [k for k in keys if stems & _stems(k)]
    if not sharing:
        # no sent name shares a word with the required one: the one sent name whose own
        # documentation does ("payment_id": "The charge reference ..." for "charge_id")
        sharing = [k for k in keys if stems & _stems(_documentation_of(description, k))]
    if not sharing:
        # nor any documentation: the one sent name ending in another word for the same kind of
        # field ("issue_type" for "fault_category": both name what sort of thing it is)
        head = _HEAD_SYNONYMS.get(words[-1]) if words else None
        sharing = [
            k for k in keys if head is not None and _HEAD_SYNONYMS.get((_words_of(k) or [""])[-1]) == head
        ]
    if len(sharing) == 1:
        return expected, sharing[0]
    if len(sharing) > 1:
        # several sent names share a word with the required one ("pickup_time" and "postcode" for
        # "pickup_postcode"): the one whose name and documentation cover most of the required
        # name's words, then the one with fewest words the required name lacks
        def fit(k: str) -> tuple[int, int]:
            said = _stems(k) | _stems(_documentation_of(description, k))
            return len(stems & said), -len(_stems(k) - stems)

        ranked = sorted(sharing, key=fit, reverse=True)
        if fit(ranked[0]) != fit(ranked[1]):
            return expected, ranked[0]
    return None, None


# General English words that, as the last word of a field's name, say the field classifies the
# thing it is about (its type): one field can be named with any of them.
_HEAD_SYNONYMS = dict.fromkeys(
    ("type", "types", "kind", "kinds", "category", "categories", "class", "classes", "sort", "sorts"), "type"
)


def _stems(text: str) -> set[str]:
    """The words of a name or a text longer than two letters, a plural ``s`` dropped."""
    return {w.rstrip("s") for w in _words_of(re.sub(r"[^A-Za-z0-9]+", " ", text)) if len(w) > 2}


def _documentation_of(description: str, name: str) -> str:
    """What a tool description says of one argument: the rest of the line that names it (a JSON or
    protobuf field, ``name: text``), and when that line says little itself, the lines indented
    under it (a JSON object or YAML mapping whose ``description`` follows on lines of its own)."""
    lines = description.splitlines()
    named = rf"(?<![\w-]){re.escape(name)}(?![\w-])"
    # the line that defines it ("name": ..., name: ..., string name = 3;) before one that mentions it
    defining = re.compile(named + r"[\"'`]?\s*(?::|=\s*\d)")
    for i, line in sorted(enumerate(lines), key=lambda il: defining.search(il[1]) is None):
        m = re.search(named, line)
        if m:
            rest = line[m.end() :]
            if len(re.findall(r"[A-Za-z]{3,}", rest)) < 3:
                # a parameter annotated before its name on the same line (a Java / Kotlin
                # `@Param(description = "...") String name`, a C# `[Description("...")] string
                # name`): what precedes it documents it
                rest = line[: m.start()] + rest
            if len(re.findall(r"[A-Za-z]{3,}", rest)) < 3:
                indent = len(line) - len(line.lstrip())
                for below in lines[i + 1 : i + 8]:
                    if below.strip() and len(below) - len(below.lstrip()) <= indent:
                        break
                    rest += " " + below
            return rest
    return ""

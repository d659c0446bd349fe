"""What leaves the process: the content policy and secret redaction applied to exported spans.

The local span store keeps every span in full (it is the user's own disk); spans sent to an
OTLP endpoint pass through :class:`ContentFilterExporter` first, which

* drops content attributes (``capture_content="none"``), cuts long strings (``"truncated"``,
  marking the span ``causal.content.truncated=true``; the contract's identifiers such as span
  type, node names and document ids are never cut) or keeps them (``"full"``);
* runs a redaction hook (``str -> str``) over every string attribute, event attribute and status
  description, by default :func:`default_redactor` (provider API keys, AWS keys, GitHub/GitLab/
  Slack tokens, JWTs, ``Bearer``/``Basic`` credentials, PEM private keys, e-mails). The same
  redactor runs on every LLM prompt before it leaves the process
  (:func:`causal_middleware.prompts.redact_prompt`) and on ``causal-mw runs export`` files.

``ReadableSpan`` is immutable, so filtered spans are fresh copies with the same ids, parent,
times, status and links; a span nothing changed is passed through as is.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from causal_middleware.spans import attributes as A
from causal_middleware.spans.record import SpanRecord

CaptureContent = Literal["none", "truncated", "full"]
CAPTURE_CONTENT_MODES: tuple[str, ...] = get_args(CaptureContent)
Redactor = Callable[[str], str]

# Attributes that carry user or model content (dropped by capture_content="none").
CONTENT_ATTRIBUTES = frozenset(
    {
        A.INPUT_VALUE,
        A.OUTPUT_VALUE,
        A.TOOL_PARAMETERS,
        A.CAUSAL_ANSWER_TEXT,
        A.CAUSAL_HOP_SUB_QUERY,
        A.CAUSAL_RUN_REFERENCE,
        A.GEN_AI_RETRIEVAL_QUERY_TEXT,
        A.METADATA,
    }
)
CONTENT_SUFFIXES = (
    ".message.content",
    ".tool_call.function.arguments",
    ".document.content",
    ".document.metadata",
)


def _has_upper_lower_digit(token: str, *, at_least: int = 1) -> bool:
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    digit = sum(c.isdigit() for c in token)
    return min(upper, lower, digit) >= at_least


_KEY_LABEL = re.compile(r"(?i)(?:secret|aws|key|credential|passw|token)[^\n]{0,30}$")
_LOWER_RUN = re.compile(r"[a-z]{4,}")


def _bare_aws_secret(match: re.Match[str]) -> str:
    """A 40-character base64 run (an AWS secret access key's shape). After a key-ish label
    (``secret``, ``aws``, ``key``, ``credential``, ``token``... within 30 characters) it is masked
    when it mixes upper and lower case; standalone only when it also looks random: two or more
    upper- and lower-case letters, a digit, at most four ``/`` and not a leading one (a path), at
    most two lower-case runs of four or more (not a camelCase identifier). A git SHA (lower-case
    hex) is never masked."""
    token, start, lead = match.group(0), match.start(), ""
    if start >= 1 and match.string[start - 1] == "\\" and token[:1] in ("n", "r", "t"):
        lead, token, start = token[0], token[1:], start + 1  # after a JSON escape ("\\nwJal...")
    if len(token) != 40 or not _at_token_start(match.string, start):
        return match.group(0)  # longer runs (base64 payloads), padded ones, or glued to a word
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    if not upper or not lower:
        return match.group(0)
    before = match.string[max(0, start - 40) : start]
    if _KEY_LABEL.search(before) or (
        upper >= 2
        and lower >= 2
        and any(c.isdigit() for c in token)
        and token.count("/") <= 4
        and not token.startswith("/")
        and len(_LOWER_RUN.findall(token)) <= 2
    ):
        return lead + "[REDACTED_AWS_SECRET]"
    return match.group(0)


def _openai_key_anywhere(match: re.Match[str]) -> str:
    """``sk-`` glued to other word characters (``MYKEYsk-...``): masked when a 20+ character
    alphanumeric run after it mixes upper case, lower case and digits (a key, not prose)."""
    runs = re.findall(r"[A-Za-z0-9]{20,}", match.group(0))
    if any(_has_upper_lower_digit(run) for run in runs):
        return "[REDACTED_API_KEY]"
    return match.group(0)


def _basic_auth(match: re.Match[str]) -> str:
    """``Basic <base64>`` masked when it follows an ``Authorization`` header, or when the token
    decodes to ``user:password`` (so the prose "Basic information" is left alone)."""
    if not _at_token_start(match.string, match.start()):
        return match.group(0)
    token = match.group(1)
    before = match.string[max(0, match.start() - 20) : match.start()].lower()
    if "authorization" in before:
        return "Basic [REDACTED]"
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    if b":" in decoded and len(token) >= 8:
        return "Basic [REDACTED]"
    return match.group(0)


def _named_secret(match: re.Match[str]) -> str:
    """A ``name=value`` / ``"name": "value"`` secret. An unquoted value after ``:`` is masked
    only when it is not a plain word (so the prose "the secret: always knead" is left alone)."""
    prefix, value = match.group(1), match.group(2)
    if value[0] in "\"'\\":  # quoted, maybe JSON-escaped (\"...\"): keep the quotes
        opening = value[: len(value) - len(value.lstrip("\\")) + 1]
        closing = value[len(value[:-1].rstrip("\\")) :]
        return f"{prefix}{opening}[REDACTED]{closing}"
    if "=" not in prefix and value.isalpha() and len(value) < 16:
        return match.group(0)
    return f"{prefix}[REDACTED]"


def _email(match: re.Match[str]) -> str:
    """An e-mail address; after a JSON escape (``\nalice@...``) the escape's letter is kept."""
    text, start = match.string, match.start()
    if start >= 1 and text[start - 1] == "\\":
        return match.group(0)[0] + "[REDACTED_EMAIL]"
    return "[REDACTED_EMAIL]"


@dataclass(frozen=True)
class Precheck:
    """What a pattern needs before it can match: one of ``needles`` in the text (``lower``: in
    the lower-cased text), or a text of at least ``min_length`` characters."""

    needles: tuple[str, ...] = ()
    lower: bool = False
    min_length: int = 0

    def __call__(self, text: str, low: str) -> bool:
        if self.min_length:
            return len(text) >= self.min_length
        haystack = low if self.lower else text
        return any(n in haystack for n in self.needles)


def _has(*needles: str, lower: bool = False) -> Precheck:
    """A cheap substring test run before a pattern (``lower``: on the lower-cased text)."""
    return Precheck(needles=needles, lower=lower)


def _longer_than(n: int) -> Precheck:
    return Precheck(min_length=n)


def _at_token_start(text: str, start: int) -> bool:
    """True when a token at ``start`` is not glued to a letter or digit before it, or follows a
    JSON escape (``\\n``, ``\\t``, ``\\r``): span attributes often hold JSON text, where a secret
    follows a literal "\\n"."""
    if start == 0:
        return True
    before = text[start - 1]
    if before.isalnum():
        return start >= 2 and text[start - 2] == "\\" and before in "nrt"
    return before != "\\"


def _token(replacement: str) -> Callable[[re.Match[str]], str]:
    """A replacement applied only at a token start (:func:`_at_token_start`). The check is a
    callback, not a look-behind, so each pattern begins with its literal prefix and the regex
    engine scans for that prefix fast."""

    def replace(match: re.Match[str]) -> str:
        return replacement if _at_token_start(match.string, match.start()) else match.group(0)

    return replace


def _bearer(match: re.Match[str]) -> str:
    if not _at_token_start(match.string, match.start()):
        return match.group(0)
    return "Bearer [REDACTED]"


# (pre-check, pattern, replacement), in order: specific token shapes before generic rules.
_REDACTIONS: tuple[tuple[Precheck, re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # PEM private keys, the whole block (to the end of the text when the END line was cut off).
    (
        _has("-----BEGIN"),
        re.compile(
            r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.DOTALL
        ),
        "[REDACTED_PRIVATE_KEY]",
    ),
    # Anthropic and OpenAI keys in any context (even glued to ``_`` or to letters).
    (_has("sk-ant-"), re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), "[REDACTED_API_KEY]"),
    (
        _has("sk-"),
        re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
        _token("[REDACTED_API_KEY]"),
    ),
    (_has("sk-"), re.compile(r"sk-[A-Za-z0-9_\-]{20,}"), _openai_key_anywhere),
    # GitHub, GitLab and Slack tokens.
    (_has("gh"), re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"), _token("[REDACTED_GITHUB_TOKEN]")),
    (_has("github_pat_"), re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), "[REDACTED_GITHUB_TOKEN]"),
    (_has("glpat-"), re.compile(r"glpat-[A-Za-z0-9_\-]{20,}"), "[REDACTED_GITLAB_TOKEN]"),
    (_has("xox"), re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}"), _token("[REDACTED_SLACK_TOKEN]")),
    # JSON Web Tokens: header and payload are base64url JSON, so both start with "eyJ".
    (
        _has("eyJ"),
        re.compile(r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{8,}"),
        "[REDACTED_JWT]",
    ),
    # AWS access key ids (also glued to ``_`` or ``=``) and secret access keys.
    (
        _has("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA", "ABIA", "ACCA"),
        re.compile(
            r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Z0-9])"
        ),
        "[REDACTED_AWS_KEY]",
    ),
    (_longer_than(40), re.compile(r"[A-Za-z0-9/+]{40,}=*"), _bare_aws_secret),
    # Authorization headers: Bearer tokens and Basic credentials.
    (
        _has("bearer", lower=True),
        re.compile(r"(?i)bearer\s+(?=[A-Za-z0-9\-._~+/]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{8,}=*"),
        _bearer,
    ),
    (_has("basic", lower=True), re.compile(r"(?i)basic\s+([A-Za-z0-9+/]{4,}={0,2})"), _basic_auth),
    # Credentials in URLs: https://user:password@host
    (_has("://"), re.compile(r"(?<=://)[^/\s:@\\]+:[^/\s@\\]+@"), "[REDACTED]@"),
    # name=value secrets (api_key=..., x-api-key: ..., "password": "..."): a quoted value to its
    # closing quote (JSON-escaped quotes included).
    (
        _has("key", "token", "secret", "passw", lower=True),
        re.compile(
            r"(?i)((?:aws_secret_access_key|aws_session_token|api[_\-]?key|access[_\-]?token|"
            r"auth[_\-]?token|secret(?:[_\-]?(?:access[_\-]?)?key)?|password|passwd)"
            r"\\*[\"']?\s*[=:]\s*)"
            r"(\\*\"(?!\[REDACTED)[^\"\n]*\"|\\*'(?!\[REDACTED)[^'\n]*'|(?![\"']?\[REDACTED)[^\s\"',;&}\\]+)"
        ),
        _named_secret,
    ),
    # E-mail addresses, plain and URL-encoded (alice%40example.com).
    (
        _has("@"),
        re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
        _email,
    ),
    (
        _has("%40"),
        re.compile(r"[A-Za-z0-9._+\-]+%40[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
        _email,
    ),
)


def _registered_names() -> tuple[frozenset[str], re.Pattern[str]]:
    names = [v for k, v in vars(A).items() if k.isupper() and isinstance(v, str)]
    exact = frozenset(n for n in names if not {"N", "M"} & set(n.split(".")))
    templates = [
        r"\.".join(r"\d+" if p in ("N", "M") else re.escape(p) for p in n.split("."))
        for n in names
        if {"N", "M"} & set(n.split("."))
    ]
    return exact, re.compile("^(?:" + "|".join(templates) + ")$")


_REGISTERED_EXACT, _REGISTERED_TEMPLATES = _registered_names()


def _needle_scanner(lower: bool) -> re.Pattern[str]:
    """One scan for every needle of the case-sensitive (or the lower-case) pre-checks. A lookahead
    finds needles at every position, overlapping ones included; at a position the longest needle
    is listed first, so every needle that occurs is a prefix of one found."""
    needles = {n for check, _, _ in _REDACTIONS for n in check.needles if check.lower is lower}
    ordered = sorted(needles, key=lambda n: (-len(n), n))
    return re.compile("(?=(" + "|".join(re.escape(n) for n in ordered) + "))")


_SCAN_TEXT, _SCAN_LOW = _needle_scanner(False), _needle_scanner(True)
_NEEDLES_TEXT = frozenset(n for check, _, _ in _REDACTIONS for n in check.needles if not check.lower)
_NEEDLES_LOW = frozenset(n for check, _, _ in _REDACTIONS for n in check.needles if check.lower)


def _present(found: list[str], needles: frozenset[str]) -> set[str]:
    """Every needle occurring, from the longest one found at each position."""
    present = set(found)
    for hit in found:
        for needle in needles:
            if len(needle) < len(hit) and hit.startswith(needle):
                present.add(needle)
    return present


def _redact(text: str) -> str:
    # the case-insensitive pre-checks read the original text: replacements add none of their
    # needles; the case-sensitive ones read the text as earlier replacements left it
    present_low = _present(_SCAN_LOW.findall(text.lower()), _NEEDLES_LOW)
    present = _present(_SCAN_TEXT.findall(text), _NEEDLES_TEXT)
    for check, pattern, replacement in _REDACTIONS:
        if check.min_length:
            if len(text) < check.min_length:
                continue
        elif not any(n in (present_low if check.lower else present) for n in check.needles):
            continue
        new = pattern.sub(replacement, text)
        if new != text:
            text = new
            present = _present(_SCAN_TEXT.findall(text), _NEEDLES_TEXT)
    return text


_redact_short = lru_cache(maxsize=8192)(_redact)
_CACHED_LENGTH = 512  # span attributes repeat across spans and runs (ids, names, queries, documents)


def default_redactor(text: str) -> str:
    """Mask credentials and e-mail addresses: provider API keys (``sk-...``, ``sk-ant-...``, in any
    context), AWS access key ids and secret access keys, GitHub (``ghp_``, ``gho_``, ``ghs_``,
    ``github_pat_``), GitLab (``glpat-``) and Slack (``xox?-``) tokens, JWTs, ``Bearer`` and
    ``Basic`` credentials, passwords in URLs, PEM private keys (the whole body),
    ``name=value`` secrets (``api_key=``, ``password:``...) and e-mail addresses, plain or
    URL-encoded. Each pattern runs only when its marker occurs: one scan finds every pattern's
    markers at once; short texts' results are cached (they repeat across spans and runs)."""
    if len(text) < 6:
        return text
    if len(text) <= _CACHED_LENGTH:
        return _redact_short(text)
    return _redact(text)


# Attributes whose values the instrumentation takes from a closed vocabulary or makes as ids: a
# value of that shape cannot hold a secret, so the redactor skips it (any other value is redacted).
_VOCABULARY = frozenset(
    {"run", "hop", "node", "llm", "retrieval", "tool", "decision", "answer"}
    | {"CHAIN", "AGENT", "LLM", "RETRIEVER", "TOOL", "DECISION", "EMBEDDING", "RERANKER", "UNKNOWN"}
    | {"invoke_agent", "chat", "retrieval", "execute_tool", "text_completion"}
    | {"text/plain", "application/json", "regenerate", "frozen", "replay", "success", "failure", "unknown"}
)
_ID_SHAPE = re.compile(r"[0-9a-f][0-9a-f\-]{7,63}")
_CLOSED_VOCABULARY_KEYS = frozenset(
    {
        A.CAUSAL_SPAN_TYPE,
        A.OPENINFERENCE_SPAN_KIND,
        A.GEN_AI_OPERATION_NAME,
        A.INPUT_MIME_TYPE,
        A.OUTPUT_MIME_TYPE,
        A.CAUSAL_LINEAGE_MODE,
        A.CAUSAL_RUN_OUTCOME,
    }
)
_ID_KEYS = frozenset(
    {A.CAUSAL_CHECKPOINT_ID, A.CAUSAL_LINEAGE_PARENT_RUN_ID, A.CAUSAL_LINEAGE_FORK_CHECKPOINT_ID}
)


def needs_redaction(key: str, value: str) -> bool:
    """False for a value the instrumentation made from a closed vocabulary or as an id (span
    type, span kind, mime type, checkpoint id...) under its own key; True for everything else."""
    if key in _CLOSED_VOCABULARY_KEYS:
        return value not in _VOCABULARY
    if key in _ID_KEYS:
        return _ID_SHAPE.fullmatch(value) is None
    return True


def is_content_attribute(key: str) -> bool:
    """True for attributes that hold prompts, documents, tool arguments, outputs or answers."""
    return key in CONTENT_ATTRIBUTES or key.endswith(CONTENT_SUFFIXES)


def is_structural_attribute(key: str) -> bool:
    """Registered attributes that are not content (span type, node, ids, model names...): the
    truncating policy never cuts them, so exported spans still follow the span contract."""
    if is_content_attribute(key):
        return False
    return key in _REGISTERED_EXACT or _REGISTERED_TEMPLATES.match(key) is not None


def validate_content_settings(
    capture_content: str, max_attribute_length: int, redact: Redactor | None
) -> None:
    """Raise ``ValueError`` naming the bad setting."""
    if capture_content not in CAPTURE_CONTENT_MODES:
        raise ValueError(f"capture_content must be one of {CAPTURE_CONTENT_MODES}, got {capture_content!r}")
    if (
        isinstance(max_attribute_length, bool)
        or not isinstance(max_attribute_length, int)
        or max_attribute_length < 1
    ):
        raise ValueError(f"max_attribute_length must be a positive int, got {max_attribute_length!r}")
    if redact is not None and not callable(redact):
        raise ValueError(f"redact must be a callable str -> str or None, got {type(redact).__name__}")


class ContentPolicy:
    """Applies one content setting to attribute mappings; shared by exporters and tests."""

    def __init__(
        self,
        capture_content: CaptureContent = "full",
        max_attribute_length: int = 4096,
        redact: Redactor | None = default_redactor,
    ) -> None:
        validate_content_settings(capture_content, max_attribute_length, redact)
        self.capture_content = capture_content
        self.max_attribute_length = max_attribute_length
        self.redact = redact

    def filter_attributes(
        self, attributes: Mapping[str, Any] | None, *, drop_content: bool
    ) -> tuple[dict[str, Any], bool, bool]:
        """Returns (new attributes, whether anything changed, whether anything was truncated)."""
        out: dict[str, Any] = {}
        changed = truncated = False
        for key, value in (attributes or {}).items():
            if drop_content and is_content_attribute(key):
                changed = True
                continue
            if isinstance(value, str) and not needs_redaction(key, value):
                out[key] = value  # a closed-vocabulary value or an id: nothing to redact or cut
                continue
            new, cut = self._value(value, cut_allowed=not is_structural_attribute(key))
            if cut:
                truncated = True
            if new is not value:
                changed = True
            out[key] = new
        return out, changed, truncated

    def filter_text(self, text: str) -> str:
        new, _ = self._value(text)
        return new if isinstance(new, str) else text

    def _value(self, value: Any, cut_allowed: bool = True) -> tuple[Any, bool]:
        if isinstance(value, str):
            return self._string(value, cut_allowed)
        if (
            isinstance(value, Sequence)
            and not isinstance(value, bytes)
            and any(isinstance(v, str) for v in value)
        ):
            items = [self._string(v, cut_allowed) if isinstance(v, str) else (v, False) for v in value]
            if all(new is old for (new, _), old in zip(items, value, strict=True)):
                return value, False
            return tuple(new for new, _ in items), any(cut for _, cut in items)
        return value, False

    def _string(self, text: str, cut_allowed: bool = True) -> tuple[str, bool]:
        new = self.redact(text) if self.redact is not None else text
        if cut_allowed and self.capture_content == "truncated" and len(new) > self.max_attribute_length:
            return new[: self.max_attribute_length], True
        if new == text:
            return text, False  # keep identity so unchanged spans are not copied
        return new, False

    def filter_span(self, span: ReadableSpan) -> ReadableSpan:
        """A copy of ``span`` with the policy applied (or ``span`` itself when nothing changed)."""
        drop = self.capture_content == "none"
        attrs, changed, truncated = self.filter_attributes(span.attributes, drop_content=drop)
        events = []
        for event in span.events:
            ev_attrs, ev_changed, ev_cut = self.filter_attributes(event.attributes, drop_content=drop)
            truncated = truncated or ev_cut
            if ev_changed:
                changed = True
                events.append(Event(event.name, ev_attrs, event.timestamp))
            else:
                events.append(event)
        status = span.status
        if status.description:
            description = self.filter_text(status.description)
            if description is not status.description:
                changed = True
                status = Status(status.status_code, description)
        if truncated:
            attrs[A.CAUSAL_CONTENT_TRUNCATED] = True
            changed = True
        if not changed:
            return span
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=attrs,
            events=events,
            links=span.links,
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )


class ContentFilterExporter(SpanExporter):
    """Wraps an exporter (typically OTLP) so that only policy-filtered, redacted spans reach it."""

    def __init__(
        self,
        inner: SpanExporter,
        *,
        capture_content: CaptureContent = "full",
        max_attribute_length: int = 4096,
        redact: Redactor | None = default_redactor,
    ) -> None:
        self.inner = inner
        self.policy = ContentPolicy(capture_content, max_attribute_length, redact)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([self.policy.filter_span(s) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _redact_value(value: Any, redact: Redactor) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [_redact_value(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v, redact) for k, v in value.items()}
    return value


def redact_record(record: SpanRecord, redact: Redactor = default_redactor) -> SpanRecord:
    """A copy of a stored span with ``redact`` applied to every string of its attributes, event
    attributes, link attributes and status message (ids, names and times are kept), as the OTLP
    exporter does; used by ``causal-mw runs export``."""
    return record.model_copy(
        update={
            "attributes": _redact_value(record.attributes, redact),
            "status_message": redact(record.status_message)
            if record.status_message
            else record.status_message,
            "events": [
                e.model_copy(update={"attributes": _redact_value(e.attributes, redact)})
                for e in record.events
            ],
            "links": [
                link.model_copy(update={"attributes": _redact_value(link.attributes, redact)})
                for link in record.links
            ],
        }
    )

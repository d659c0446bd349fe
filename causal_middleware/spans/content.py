"""What leaves the process: the content policy and secret redaction applied to exported spans.

The local span store keeps every span in full (it is the user's own disk); spans sent to an
OTLP endpoint pass through :class:`ContentFilterExporter` first, which

* drops content attributes (``capture_content="none"``), cuts long strings (``"truncated"``,
  marking the span ``causal.content.truncated=true``; the contract's identifiers such as span
  type, node names and document ids are never cut) or keeps them (``"full"``);
* runs a redaction hook (``str -> str``) over every string attribute, event attribute and status
  description, by default :func:`default_redactor` (API keys, AWS keys, bearer tokens, e-mails).

``ReadableSpan`` is immutable, so filtered spans are fresh copies with the same ids, parent,
times, status and links; a span nothing changed is passed through as is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from causal_middleware.spans import attributes as A

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

_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Anthropic keys first: the generic sk- rule would leave the "ant-" prefix readable.
    (re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"), "[REDACTED_API_KEY]"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), "[REDACTED_API_KEY]"),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), "[REDACTED_AWS_KEY]"),
    (re.compile(r"(?i)\bBearer\s+[A-Za-z0-9\-._~+/]+=*"), "Bearer [REDACTED]"),
    (
        re.compile(
            r"(?i)\b((?:aws_secret_access_key|aws_session_token|[a-z0-9_\-]*api[_\-]?key|apikey|"
            r"access[_\-]?token|auth[_\-]?token|secret(?:[_\-]?key)?|password|passwd)"
            r"[\"']?\s*[=:]\s*[\"']?)[^\s\"',;&}]+"
        ),
        r"\1[REDACTED]",
    ),
    (
        re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
        "[REDACTED_EMAIL]",
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


def default_redactor(text: str) -> str:
    """Mask API keys (``sk-...``, ``sk-ant-...``, AWS access keys, ``api_key=...`` and similar
    ``name=value`` secrets), bearer tokens and e-mail addresses."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


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
            new, cut = self._value(value, cut_allowed=not is_structural_attribute(key))
            if cut:
                truncated = True
            if new is not value:
                changed = True
            out[key] = new
        return out, changed, truncated

    def filter_text(self, text: str) -> str:
        new, _ = self._value(text)
        return new

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

"""Content policy and redaction on exported spans (causal_middleware.spans.content)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from causal_middleware.spans import attributes as A
from causal_middleware.spans.content import (
    ContentFilterExporter,
    ContentPolicy,
    default_redactor,
    is_content_attribute,
)

ANTHROPIC_KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
OPENAI_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUv"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize(
    ("text", "secret", "replacement"),
    [
        (f"use {ANTHROPIC_KEY} please", ANTHROPIC_KEY, "[REDACTED_API_KEY]"),
        (f"OPENAI={OPENAI_KEY}", OPENAI_KEY, "[REDACTED_API_KEY]"),
        (f"creds {AWS_KEY} here", AWS_KEY, "[REDACTED_AWS_KEY]"),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
            "eyJhbGciOiJIUzI1NiJ9.payload.sig",
            "Bearer [REDACTED]",
        ),
        ("api_key=abc123secretvalue&x=1", "abc123secretvalue", "api_key=[REDACTED]"),
        ('{"api-key": "zzz999"}', "zzz999", "[REDACTED]"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG", "[REDACTED]"),
        ("password: hunter2", "hunter2", "password: [REDACTED]"),
        ("mail ilka.morrow@zorvex.example.com now", "ilka.morrow@zorvex.example.com", "[REDACTED_EMAIL]"),
    ],
)
def test_default_redactor_masks_secrets(text, secret, replacement):
    out = default_redactor(text)
    assert secret not in out
    assert replacement in out


@pytest.mark.parametrize(
    "text",
    [
        "Where was the founder of Zorvex Labs born?",
        "task-skeleton and sk-short",  # too short to be a key
        "the keyword 'key' alone, and a score=0.75",
    ],
)
def test_default_redactor_leaves_ordinary_text_alone(text):
    assert default_redactor(text) == text


def test_content_attribute_classification():
    for key in (
        A.INPUT_VALUE,
        A.OUTPUT_VALUE,
        A.TOOL_PARAMETERS,
        A.CAUSAL_ANSWER_TEXT,
        A.CAUSAL_HOP_SUB_QUERY,
        "llm.input_messages.3.message.content",
        "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments",
        "retrieval.documents.7.document.content",
        "retrieval.documents.7.document.metadata",
    ):
        assert is_content_attribute(key), key
    for key in (
        A.CAUSAL_NODE,
        A.CAUSAL_HOP_INDEX,
        "llm.input_messages.3.message.role",
        "retrieval.documents.7.document.id",
        "retrieval.documents.7.document.score",
        A.LLM_TOKEN_COUNT_TOTAL,
        A.TOOL_NAME,
    ):
        assert not is_content_attribute(key), key


def _emit(exporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    span = tracer.start_span(
        "llm",
        attributes={
            A.CAUSAL_SPAN_TYPE: "llm",
            A.LLM_MODEL_NAME: "m",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": f"my key is {ANTHROPIC_KEY} " + "x" * 100,
            "retrieval.documents.0.document.id": "p1",
            A.CAUSAL_HOP_INDEX: 2,
            "tags": ("contact a@b.example.org", "plain"),
        },
    )
    span.add_event("note", {"detail": f"token Bearer abc.def.ghi {'y' * 50}"})
    span.set_status(Status(StatusCode.ERROR, f"failed with api_key={OPENAI_KEY}"))
    span.end()


def test_filter_exporter_full_redacts_everywhere_and_keeps_ids():
    sink = InMemorySpanExporter()
    _emit(ContentFilterExporter(sink, capture_content="full"))
    (span,) = sink.get_finished_spans()
    content = span.attributes["llm.input_messages.0.message.content"]
    assert ANTHROPIC_KEY not in content and "[REDACTED_API_KEY]" in content and content.endswith("x" * 100)
    assert span.attributes["tags"] == ("contact [REDACTED_EMAIL]", "plain")
    assert span.events[0].attributes["detail"].startswith("token Bearer [REDACTED]")
    assert OPENAI_KEY not in span.status.description and span.status.status_code is StatusCode.ERROR
    assert (
        span.attributes[A.CAUSAL_HOP_INDEX] == 2
        and span.attributes["retrieval.documents.0.document.id"] == "p1"
    )
    assert A.CAUSAL_CONTENT_TRUNCATED not in span.attributes


def test_filter_exporter_truncated_cuts_and_marks():
    sink = InMemorySpanExporter()
    _emit(ContentFilterExporter(sink, capture_content="truncated", max_attribute_length=24))
    (span,) = sink.get_finished_spans()
    for key, value in span.attributes.items():
        if isinstance(value, str):
            assert len(value) <= 24, key
    assert span.attributes["llm.input_messages.0.message.content"] == "my key is [REDACTED_API_"
    assert span.attributes["tags"] == ("contact [REDACTED_EMAIL]", "plain")  # 24 chars: fits
    assert span.attributes[A.CAUSAL_CONTENT_TRUNCATED] is True
    assert len(span.events[0].attributes["detail"]) == 24


def test_truncation_never_cuts_the_contracts_identifiers():
    policy = ContentPolicy("truncated", 5, None)
    attrs = {
        A.CAUSAL_SPAN_TYPE: "retrieval",
        A.CAUSAL_NODE: "retrieve_documents",
        "retrieval.documents.3.document.id": "passage-000123",
        "retrieval.documents.3.document.content": "long passage text",
        "user.note": "a long foreign attribute",
    }
    out, changed, truncated = policy.filter_attributes(attrs, drop_content=False)
    assert changed and truncated
    assert out[A.CAUSAL_SPAN_TYPE] == "retrieval" and out[A.CAUSAL_NODE] == "retrieve_documents"
    assert out["retrieval.documents.3.document.id"] == "passage-000123"
    assert out["retrieval.documents.3.document.content"] == "long "
    assert out["user.note"] == "a lon"


def test_filter_exporter_none_drops_content_but_keeps_structure():
    sink = InMemorySpanExporter()
    _emit(ContentFilterExporter(sink, capture_content="none"))
    (span,) = sink.get_finished_spans()
    assert "llm.input_messages.0.message.content" not in span.attributes
    assert span.attributes["llm.input_messages.0.message.role"] == "user"
    assert span.attributes[A.LLM_MODEL_NAME] == "m"
    assert span.attributes["retrieval.documents.0.document.id"] == "p1"


def test_unchanged_spans_are_passed_through_as_is():
    policy = ContentPolicy("full", 4096, default_redactor)
    sink = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sink))
    provider.get_tracer("t").start_span("clean", attributes={A.CAUSAL_NODE: "retrieve"}).end()
    (span,) = sink.get_finished_spans()
    assert policy.filter_span(span) is span


def test_custom_and_disabled_redactors():
    policy = ContentPolicy("full", 4096, lambda s: s.replace("Zorvex", "[ORG]"))
    assert policy.filter_text("Zorvex Labs") == "[ORG] Labs"
    assert ContentPolicy("full", 4096, None).filter_text(ANTHROPIC_KEY) == ANTHROPIC_KEY


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capture_content": "some"}, "capture_content must be one of"),
        ({"max_attribute_length": 0}, "max_attribute_length must be a positive int"),
        ({"max_attribute_length": "10"}, "max_attribute_length must be a positive int"),
        ({"redact": "yes"}, "redact must be a callable"),
    ],
)
def test_bad_content_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ContentFilterExporter(InMemorySpanExporter(), **kwargs)

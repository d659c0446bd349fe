"""Item 6 of issue 13: every secret shape of the corpus is redacted over OTLP, in prompts and in
JSON-encoded attributes; ordinary text is left alone."""

from __future__ import annotations

import json

import pytest

from benchmarks.reliability import secrets as bench
from benchmarks.reliability.safety_corpus import CLEAN_TEXT, ISSUE_SHAPES, SECRETS, leaks
from causal_middleware.prompts import redact_prompt
from causal_middleware.spans.content import default_redactor

SHAPES = {name: (text, needle) for name, text, needle in SECRETS}


@pytest.mark.parametrize("name", ISSUE_SHAPES)
def test_the_11_shapes_of_the_report_are_redacted(name: str) -> None:
    text, needle = SHAPES[name]
    for context in (f"{text}", f"before {text} after", f"x_{text}", f'{{"v": "{text}"}}'):
        assert needle not in default_redactor(context), context


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_shape_is_redacted_plain_and_json_encoded(name: str) -> None:
    text, needle = SHAPES[name]
    once = json.dumps({"output": f"line\n{text}\nline"})
    twice = json.dumps(once)
    for value in (text, once, twice):
        out = default_redactor(value)
        assert needle not in out
    json.loads(default_redactor(once))  # still valid JSON
    json.loads(json.loads(default_redactor(twice)))


def test_the_previously_leaking_shapes() -> None:
    assert default_redactor("KEY_sk-ant-api03-AbCdEf1234567890XyZ") == "KEY_[REDACTED_API_KEY]"
    assert default_redactor("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == "[REDACTED_AWS_SECRET]"
    assert default_redactor("Authorization: Basic YWxpY2U6czNjcjN0") == "Authorization: Basic [REDACTED]"
    assert default_redactor("alice%40example.com") == "[REDACTED_EMAIL]"
    pem = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7\n-----END PRIVATE KEY-----"
    assert default_redactor(f"key:\n{pem}\nend") == "key:\n[REDACTED_PRIVATE_KEY]\nend"
    assert default_redactor("cut -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI") == "cut [REDACTED_PRIVATE_KEY]"


def test_ordinary_text_is_left_alone() -> None:
    figures = bench.false_positives()
    assert figures["changed"] == 0 and figures["changed_as_json"] == 0, figures["examples"]
    for text in (
        "a git sha 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "The Basic plan",
        "the bearer of news",
    ):
        assert default_redactor(text) == text


def test_otlp_export_leaks_nothing() -> None:
    otlp, records = bench.otlp_leaks()
    assert sum(otlp.values()) == 0, [k for k, v in otlp.items() if v]
    assert records and any(leaks(json.dumps(r.attributes)) for r in records)  # the store keeps them


def test_prompts_leak_nothing() -> None:
    figures = bench.prompt_leaks()
    assert figures["prompts"] >= 20 and sum(figures["by_shape"].values()) == 0
    assert redact_prompt("ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ") == "[REDACTED_GITHUB_TOKEN]"


def test_redaction_is_fast_on_ordinary_text() -> None:
    text = "\n".join(CLEAN_TEXT) * 100  # ~220 kB of trace text
    import time

    start = time.perf_counter()
    default_redactor(text)
    assert time.perf_counter() - start < 1.0

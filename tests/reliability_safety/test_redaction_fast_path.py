"""Issue 16 item 1: the redactor's one-scan dispatch, its cache and the skipped closed-vocabulary
keys give exactly the output of running every pre-check in turn (the previous redactor)."""

from __future__ import annotations

import json
import random

from benchmarks.reliability.safety_corpus import CLEAN_TEXT, SECRETS
from causal_middleware.spans import attributes as A
from causal_middleware.spans import content
from causal_middleware.spans.content import ContentPolicy, default_redactor


def previous_redactor(text: str) -> str:
    """The redactor before the one-scan dispatch: each pattern's pre-check evaluated in turn,
    the case-insensitive ones on the original lower-cased text."""
    if len(text) < 6:
        return text
    low = text.lower()
    for precheck, pattern, replacement in content._REDACTIONS:
        if precheck(text, low):
            text = pattern.sub(replacement, text)
    return text


def corpus() -> list[str]:
    secrets = [text for _, text, _ in SECRETS]
    out = list(CLEAN_TEXT) + secrets
    out += [f"call with {s} please" for s in secrets]
    out += [json.dumps({"messages": [{"content": f"line one\n{s}\nline three"}]}) for s in secrets]
    for s in secrets:
        out += [f"KEY{s}", f"x_{s}_y", s.upper(), s.lower()]
    out.append("\n".join(secrets))  # replacements change the text later pre-checks read
    out.append(" ".join(secrets) * 3)  # past the cached length: the uncached path
    out.append("\n".join(CLEAN_TEXT) * 5)
    rng = random.Random(16)
    for s in secrets + list(CLEAN_TEXT):  # cut and glued variants
        for _ in range(6):
            a, b = sorted(rng.sample(range(len(s) + 1), 2))
            other = rng.choice(secrets)
            out.append(s[a:b] + other[: rng.randint(0, len(other))])
            out.append(rng.choice(CLEAN_TEXT)[:30] + s[a:])
    # overlapping needles at one position: sk-ant- / sk-, AKIA / ASIA, gh / ghp_
    out += ["AKIASIAIOSFODNN7EXAMPLE12", "sk-ant-sk-proj-Xy12AbCdEf34GhIjKl56MnOp", "ghghp_" + "a1B2" * 9]
    out += ["BEARER abc.def-123456", "Authorization: BASIC YWxpY2U6czNjcjN0LXBhc3M=", "PassWord: hunter2x9"]
    return out


def test_same_output_as_the_previous_redactor_on_the_secrets_corpus() -> None:
    texts = corpus()
    assert len(texts) > 500
    changed = 0
    for text in texts:
        expected = previous_redactor(text)
        assert default_redactor(text) == expected, text
        assert default_redactor(text) == expected, text  # the cached answer too
        changed += expected != text
    assert changed > 100  # the corpus does exercise the patterns


def test_closed_vocabulary_keys_are_skipped_only_for_their_own_values() -> None:
    policy = ContentPolicy()
    attrs = {
        A.CAUSAL_SPAN_TYPE: "node",
        A.INPUT_MIME_TYPE: "application/json",
        A.CAUSAL_CHECKPOINT_ID: "1f0a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        # the same keys holding something else are redacted as any attribute is
        A.OUTPUT_MIME_TYPE: "api_key=ZmF1eC1hcGkta2V5LTEyMzQ1",
        A.CAUSAL_LINEAGE_PARENT_RUN_ID: "alice.smith@example.com",
    }
    out, changed, _ = policy.filter_attributes(attrs, drop_content=False)
    assert changed
    assert out[A.CAUSAL_SPAN_TYPE] == "node" and out[A.INPUT_MIME_TYPE] == "application/json"
    assert out[A.CAUSAL_CHECKPOINT_ID] == attrs[A.CAUSAL_CHECKPOINT_ID]
    assert "ZmF1eC1hcGkta2V5LTEyMzQ1" not in out[A.OUTPUT_MIME_TYPE]
    assert out[A.CAUSAL_LINEAGE_PARENT_RUN_ID] == "[REDACTED_EMAIL]"


def test_a_needle_found_inside_a_longer_one_at_the_same_position_counts() -> None:
    # the scan reports the longest needle at a position; the shorter ones there occur too
    assert {"sk-", "sk-ant-"} <= content._present(
        content._SCAN_TEXT.findall("x sk-ant-1"), content._NEEDLES_TEXT
    )

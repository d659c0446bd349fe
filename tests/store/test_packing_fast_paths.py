"""Issue 16: the SQLite write path's fast paths (names coded once per attribute-name tuple, one
JSON encoder) give exactly what the plain per-attribute loop gave."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from causal_middleware.spans.record import SpanRecord
from causal_middleware.store import _packing as P
from causal_middleware.store.base import StoreError


def _reference(attributes: dict[str, Any], blobs: dict[str, bytes], min_chars: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, str) and len(value) >= min_chars:
            digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
            blobs.setdefault(digest, P.blob_value(value))
            out[P.encode_key(key)] = {P.BLOB_KEY: digest}
        else:
            out[P.encode_key(key)] = value
    return out


class Text(str):
    pass


@pytest.mark.parametrize(
    "attributes",
    [
        {"causal.span.type": "node", "input.value": "x" * 300, "causal.hop.index": 2},
        {
            "input.value": "x" * 300,
            "causal.span.type": "node",
            "causal.hop.index": 2,
        },  # same names, other order
        {"retrieval.documents.3.document.content": "d" * 256, "§odd": 1, "plain.key": [1, 2]},
        {"causal.answer.text": Text("y" * 400), "output.value": "short", "n": None},
        {},
    ],
)
def test_lift_blobs_equals_the_plain_loop(attributes: dict[str, Any]) -> None:
    for _ in range(2):  # the second call reads the cached name codes
        fast_blobs: dict[str, bytes] = {}
        slow_blobs: dict[str, bytes] = {}
        fast = P.lift_blobs(attributes, fast_blobs)
        assert fast == _reference(attributes, slow_blobs, P.BLOB_MIN_CHARS)
        assert list(fast) == list(_reference(attributes, {}, P.BLOB_MIN_CHARS))
        assert fast_blobs == slow_blobs


def test_lift_blobs_skips_known_blobs() -> None:
    text = "k" * 500
    digest = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
    blobs: dict[str, bytes] = {}
    assert P.lift_blobs({"input.value": text}, blobs, {digest}) == {
        P.encode_key("input.value"): {P.BLOB_KEY: digest}
    }
    assert blobs == {}


def test_compact_json_names_the_span_and_column() -> None:
    span = SpanRecord(trace_id="a" * 32, span_id="b" * 16, name="s", start_time_ns=1)
    assert P.compact_json({"é": [1, 2.5]}, "attributes", span) == '{"é":[1,2.5]}'
    with pytest.raises(StoreError, match=f"attributes of span {'b' * 16} of trace {'a' * 32}"):
        P.compact_json({"x": object()}, "attributes", span)

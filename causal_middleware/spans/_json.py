"""``json.loads``, through orjson (several times faster) wherever it gives exactly the same value.

orjson differs from ``json`` on: integers past 64 bits (floats there), ``NaN`` / ``Infinity`` and
overflowing floats, lone surrogates and invalid UTF-8 (refused there). A text is read by orjson
only when it is valid UTF-8 with no run of 19 or more digits (a top-level string is exempt: its
digits are characters), and falls back to ``json`` whenever orjson refuses it, so values and
errors are ``json``'s. Without orjson installed, ``json`` reads everything.
"""

from __future__ import annotations

import json
from typing import Any

try:  # installed with langgraph (langgraph-sdk); json alone gives the same values, slower
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None  # type: ignore[assignment]

# Digits -> "1", every other byte -> " ": a run of 19 ones marks a number orjson may read
# differently from ``json`` (integers past 64 bits become floats there).
_DIGIT_RUNS = bytes(0x31 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"1" * 19
_DECODE = json.JSONDecoder().decode


def loads(text: str) -> Any:
    """``json.loads(text)``."""
    if _orjson is not None:
        try:
            data = text.encode()
        except UnicodeEncodeError:
            return json.loads(text)
        if data[:1] == b'"' or _LONG_NUMBER not in data.translate(_DIGIT_RUNS):
            try:
                return _orjson.loads(data)
            except _orjson.JSONDecodeError:
                pass
    return json.loads(text)


def decode(text: str) -> Any:
    """``json.JSONDecoder().decode(text)`` (``json.loads`` but for its message on a leading BOM)."""
    if _orjson is not None:  # (as in loads: one frame less, called once per stored span)
        try:
            data = text.encode()
        except UnicodeEncodeError:
            return _DECODE(text)
        if data[:1] == b'"' or _LONG_NUMBER not in data.translate(_DIGIT_RUNS):
            try:
                return _orjson.loads(data)
            except _orjson.JSONDecodeError:
                pass
    return _DECODE(text)


def loads_utf8(data: bytes) -> Any:
    """``json.JSONDecoder().decode(data.decode("utf-8", "surrogatepass"))`` (orjson reads strict
    UTF-8 only, and on that both decodings agree)."""
    if _orjson is not None and (data[:1] == b'"' or _LONG_NUMBER not in data.translate(_DIGIT_RUNS)):
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return _DECODE(data.decode("utf-8", "surrogatepass"))

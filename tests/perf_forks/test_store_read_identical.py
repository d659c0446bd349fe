"""The faster SQLite read path (issue 16: orjson row decoding, blob references found from the text,
facts built without the frozen ``__init__``) reads exactly what the store of the revision before
it read: the same records, field by field and type by type, the same facts, the same trajectories
(built and from the cache) and the same errors on malformed rows, from one file read by both."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import BASELINE, _has_revision
from pydantic import BaseModel
from span_factory import fabricate_run, openinference_run
from test_builder_identical import _shape

from causal_middleware.spans import _json
from causal_middleware.spans.builder import SpanFacts
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store import _packing
from causal_middleware.store._records import row_facts
from causal_middleware.store.sqlite import SqliteSpanStore

# the store of the baseline revision brings its own builder, cache, packing and record helpers
_COMPANIONS = (
    "causal_middleware.spans.builder",
    "causal_middleware.store._common",
    "causal_middleware.store._packing",
    "causal_middleware.store._records",
)


@pytest.fixture(scope="module")
def baseline_store() -> ModuleType:
    if not _has_revision(BASELINE):
        pytest.skip(f"revision {BASELINE} is not in this checkout")
    from benchmarks.perf.redaction import head_module

    module = head_module(
        "causal_middleware/store/sqlite.py", "_perf_forks_baseline_sqlite", BASELINE, companions=_COMPANIONS
    )
    assert module is not None
    assert module.unpack_json.__module__ != _packing.__name__  # really the baseline's packing
    return module


@pytest.fixture
def both(tmp_path: Path, baseline_store: ModuleType) -> Iterator[tuple[SqliteSpanStore, Any, Path]]:
    """The working tree's store and the baseline's, on one file (the new one writes it)."""
    path = tmp_path / "runs.db"
    new = SqliteSpanStore(path)
    old = baseline_store.SqliteSpanStore(path)
    try:
        yield new, old, path
    finally:
        new.close()
        old.close()


def assert_identical(new: Any, old: Any) -> None:
    """As test_builder_identical's, with NaN equal to NaN (``==`` alone fails on it)."""
    new_shape, old_shape = _shape(new), _shape(old)
    for mine, theirs in zip(new_shape, old_shape, strict=True):
        assert mine == theirs
    if isinstance(new, BaseModel):
        assert _dumped(new) == _dumped(old)
    if "nan" not in repr(new_shape):
        assert new == old


def _dumped(model: BaseModel) -> str:
    try:
        return model.model_dump_json()
    except ValueError as exc:  # a lone surrogate: JSON cannot carry it
        return f"error: {exc}"


def _facts(facts: Any) -> list[tuple[str, Any]]:
    return [(f.name, _shape(getattr(facts, f.name))) for f in dataclasses.fields(facts)]


def _read(store: Any, run_id: str) -> Any:
    """What a file read of the run gives: its records and facts, or the error (type and text)."""
    try:
        records, facts = store._read_spans_and_facts(run_id)
    except Exception as exc:  # the same failure is part of the contract
        return ("error", type(exc).__name__, str(exc))
    return records, {k: _facts(f) for k, f in facts.items()}


def assert_reads_identically(new: SqliteSpanStore, old: Any, run_id: str) -> None:
    mine, theirs = _read(new, run_id), _read(old, run_id)
    if mine[0] == "error" or theirs[0] == "error":
        assert mine == theirs
        return
    assert_identical(mine[0], theirs[0])
    assert mine[1] == theirs[1]
    for store in (new, old):
        store._written.clear()  # read from the file
        store._cache = type(store._cache)(64)
    assert_identical(new.get_trajectory(run_id), old.get_trajectory(run_id))  # a miss
    assert_identical(new.get_trajectory(run_id), old.get_trajectory(run_id))  # from the cache
    assert_identical(new.get_spans(run_id), old.get_spans(run_id))


def test_reference_runs_and_forks_read_identically(
    reference_runs: dict[str, list[SpanRecord]], both: tuple[SqliteSpanStore, Any, Path]
) -> None:
    new, old, _ = both
    for spans in reference_runs.values():
        new.write_batch(spans)
    for run_id in reference_runs:
        assert_reads_identically(new, old, run_id)
    stitched = [t for t in map(new.get_trajectory, reference_runs) if t.lineage is not None]
    assert len(stitched) >= 13  # the forks, in every mode, and a fork of a fork


def test_fabricated_and_openinference_runs_read_identically(both: tuple[SqliteSpanStore, Any, Path]) -> None:
    new, old, _ = both
    run_id, records = fabricate_run(thread_id="t-1", labels={"fault": "x"})
    long = "x" * 5000  # a blob, and a deflated attributes column
    records = [
        r.model_copy(update={"attributes": {**r.attributes, "note": long, "n": 2**70, "f": 1.5e-320}})
        for r in records
    ]
    oi = openinference_run()
    new.write_spans(records)
    new.write_spans(oi)
    assert_reads_identically(new, old, run_id)
    assert_reads_identically(new, old, oi[0].trace_id)


_DIGEST = "0123456789abcdef01234567"
_ATTRIBUTE_TEXTS: list[str | bytes] = [
    '{"big": 123456789012345678901234567890, "neg": -9999999999999999999, "ok": 999999999999999999}',
    '{"n": NaN, "i": Infinity, "o": 1e400, "tiny": 1e-400}',
    '{"s": "\\ud800", "pair": "\\ud83d\\ude00", "e": "\\u00e9", "raw": "é"}',
    '{"a": 1, "a": 2}',
    '{"x": {"\\u0000blob": "missing0digest000000000"}}',
    '{"x": {"\\u0000blob": 5}, "y": {"\\u0000blob": null}, "z": {"\\u0000blob": "s", "k": 1}}',
    '{"x": {"\\u0000blob": [1]}}',
    '{"x": {"\\u0000blob": "' + _DIGEST + '"}, "y": {"\\u0000blob": [1]}}',
    '{"x": {"\\u0000blob": "' + _DIGEST + '"}, "y": {"\\u0000blob": {"a": 1}}}',
    '{"x": {"\\u0000blob": "' + _DIGEST + '"}, "y": [{"\\u0000blob": "' + _DIGEST + '"}]}',
    '{"k\\u0000": "a NUL in a key", "v": "a NUL\\u0000inside"}',
    '{"x": "\\\\u0000blob", "y": {"\\\\u0000blob": "' + _DIGEST + '"}}',
    '{"\\u00a71": "a code", "\\u00a7\\u00a7x": "a mark", "\\u00a7zz.1.2": "unknown"}',
    '{"nested": {"a": [1, {"b": null}]}, "list": [1, "2", 3.5, true]}',
    '{"deep": ' * 1200 + "1" + "}" * 1200,
    "[1, 2]",
    '"a string"',
    "12",
    "\ufeff{}",
    '{"a": 1,}',
    "",
    b'{"s": "\xed\xa0\x80", "t": "ok"}',  # a surrogate, as the store's surrogatepass writes it
    b'{"b": "bytes, not deflated"}',
    b"\xff\xfe",
    b"\x01" + b"not deflate data",
]


def _with_columns(path: Path, run_id: str, span_id: str, **columns: Any) -> None:
    conn = sqlite3.connect(path)
    try:
        sets = ", ".join(f"{name} = ?" for name in columns)
        conn.execute(
            f"UPDATE spans SET {sets} WHERE trace_id = ? AND span_id = ?",
            (*columns.values(), run_id, span_id),
        )
        conn.commit()
    finally:
        conn.close()


def _blob(path: Path, digest: str, text: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "INSERT OR REPLACE INTO blobs (digest, value) VALUES (?, ?)", (digest, _packing.blob_value(text))
        )
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("text", _ATTRIBUTE_TEXTS, ids=range(len(_ATTRIBUTE_TEXTS)))
def test_odd_attribute_columns_read_identically(
    text: str | bytes, both: tuple[SqliteSpanStore, Any, Path]
) -> None:
    new, old, path = both
    run_id, records = fabricate_run()
    new.write_spans(records)
    _blob(path, _DIGEST, "the stored text")
    span_id = records[len(records) // 2].span_id
    _with_columns(path, run_id, span_id, attributes=text)
    assert_reads_identically(new, old, run_id)
    if isinstance(text, str) and text[:1] == "{":  # the same text deflated
        _with_columns(
            path, run_id, span_id, attributes=_packing._deflate(text.encode("utf-8", "surrogatepass"))
        )
        new._blob_cache.clear()
        old._blob_cache.clear()
        assert_reads_identically(new, old, run_id)


_OTHER_COLUMNS: list[dict[str, Any]] = [
    {
        "events": '[{"name": "e", "time_ns": 1764000000000000000, "attributes": {"big": 123456789012345678901}}]'
    },
    {"events": '[{"name": "e", "time_ns": 1.5, "attributes": {}}]'},  # validated, coerced or refused
    {"events": '[{"name": "e", "time_ns": 12, "attributes": {"n": NaN}, "extra": 1}]'},
    {"events": "[1]"},
    {
        "links": '[{"trace_id": "'
        + "a" * 32
        + '", "span_id": "'
        + "b" * 16
        + '", "attributes": {"k": [1, 2]}}]'
    },
    {"links": '[{"trace_id": "x", "span_id": "y", "attributes": {}}]'},
    {
        "links": '[{"trace_id": "'
        + "a" * 32
        + '", "span_id": "'
        + "b" * 16
        + '", "attributes": {"s": "\\ud800"}}]'
    },
    {"links": "not json"},
    {"resource": '{"service.name": "svc", "big": 123456789012345678901234}'},
    {"resource": '{"service.name": "svc", "nested": {"a": [1]}}'},
    {"resource": '{"service.name": "\\ud800", "n": NaN}'},
    {"resource": "[1]"},
    {"resource": "@missing-resource"},
    {"scope": 7, "status_message": 3},
]


@pytest.mark.parametrize("columns", _OTHER_COLUMNS, ids=range(len(_OTHER_COLUMNS)))
def test_odd_event_link_and_resource_columns_read_identically(
    columns: dict[str, Any], both: tuple[SqliteSpanStore, Any, Path]
) -> None:
    new, old, path = both
    run_id, records = fabricate_run()
    new.write_spans(records)
    for record in records[:3]:
        _with_columns(path, run_id, record.span_id, **columns)
    assert_reads_identically(new, old, run_id)


def _texts() -> list[bytes]:
    rng = random.Random(9)
    out = [
        b"[" + b",".join(str(rng.randint(-(10**25), 10**25)).encode() for _ in range(200)) + b"]",
        b'{"a": "\xc3\xa9", "b": "\xe2\x82\xac", "c": "\xf0\x9f\x98\x80"}',
        b'"\xed\xa0\x80"',
        b'{"s": "\xed\xb0\x80\xed\xa0\x80"}',
        b"\xef\xbb\xbf[1]",
        b'["\xff"]',
        b"[1e309, -1e309]",
        b"[NaN]",
        b'"12345678901234567890123"',
        b'{"k": 1.7976931348623157e308, "m": 5e-324, "z": -0.0}',
        b"   ",
        b"",
    ]
    for _ in range(500):
        x = rng.uniform(-1e20, 1e20) * 10 ** rng.randint(-300, 280)
        out.append(f"[{x!r}, {x:.17g}, {x:.3e}, {rng.randint(-(10**19), 10**19)}]".encode())
    return out


def _outcome(read: Any, value: Any) -> Any:
    try:
        return ("ok", _shape(read(value)))
    except RecursionError:
        return ("recursion",)
    except (ValueError, UnicodeDecodeError) as exc:
        return ("error", type(exc).__name__, str(exc))


def test_byte_columns_decode_as_json_decoded_them() -> None:
    before = json.JSONDecoder().decode
    for data in _texts():
        assert _outcome(_json.loads_utf8, data) == _outcome(
            lambda d: before(d.decode("utf-8", "surrogatepass")), data
        ), data


def test_text_columns_decode_as_json_decoded_them() -> None:
    before = json.JSONDecoder().decode
    texts = []
    for data in _texts():
        try:
            texts.append(data.decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            pass
    texts += ["\ufeff{}", '["\ud800"]', '{"a": 1,}', '{"deep": ' * 1200 + "1" + "}" * 1200]
    for text in texts:
        assert _outcome(_json.decode, text) == _outcome(before, text), text
        assert _outcome(_json.loads, text) == _outcome(json.loads, text), text


def test_a_text_without_the_nul_escape_holds_no_nul() -> None:
    """The reference check: whatever a JSON text holds, a NUL character anywhere (so a blob
    reference's key) shows as the ``\\u0000`` escape in it, in str and in (deflated) bytes."""
    rng = random.Random(5)
    alphabet = ["a", "\x00", "\\", "u", "0", "§", "é", '"', "\U0001f600", "\x1f"]
    for _ in range(2000):
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        value: Any = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        doc = {
            key: value,
            "nested": [{key: 1}],
            _packing.BLOB_KEY if rng.random() < 0.2 else "k": {"x": value},
        }
        text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
        holds_nul = "\x00" in text or "\x00" in json.dumps(json.loads(text), ensure_ascii=False)
        decoded, may_refer = _packing.unpack_attributes(text)
        assert decoded == json.loads(text)
        if "\x00" in repr(decoded) or holds_nul:
            assert may_refer
        long = json.dumps({**doc, "pad": "p" * 1100}, ensure_ascii=False)
        packed = _packing.pack_json(long)
        assert isinstance(packed, bytes)  # deflated
        assert _packing.unpack_attributes(packed) == _packing.unpack_attributes(long)


def test_row_facts_equal_the_dataclass() -> None:
    rows = [
        ("t", "s" * 16, None, 0, 0, 5, None, 0, 0, 0, 0, 0, 0, 0, None, 0, None, None),
        ("t", "s" * 16, "p" * 16, 0, 0, 5, 9, 0, 0, 0, 0, 0, 0, 0, "node", 1, 2, "an answer"),
        ("t", "x", "p", 0, 0, 2**70, -1, 0, 0, 0, 0, 0, 0, 0, "answer", 7, 0, ""),
    ]
    for row in rows:
        built = row_facts(row)
        expected = SpanFacts(
            span_id=row[1],
            parent_span_id=row[2],
            start_time_ns=row[5],
            end_time_ns=row[6],
            type=row[14],
            declared_run=bool(row[15]),
            hop_index=row[16],
            answer_text=row[17],
        )
        assert built == expected and hash(built) == hash(expected) and repr(built) == repr(expected)
        assert list(vars(built).items()) == list(vars(expected).items())
        assert [type(v) for v in vars(built).values()] == [type(v) for v in vars(expected).values()]
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.span_id = "other"  # type: ignore[misc]


def test_the_bench_before_store_decodes_with_its_own_packing() -> None:
    from benchmarks.perf.store import head_store_module

    if not _has_revision(BASELINE):
        pytest.skip(f"revision {BASELINE} is not in this checkout")
    head = head_store_module(BASELINE)
    assert head is not None
    assert head.unpack_json.__module__.startswith(head.__name__)
    assert head.span_record.__module__.startswith(head.__name__)


def test_without_orjson_every_column_reads_through_json(
    monkeypatch: pytest.MonkeyPatch, both: tuple[SqliteSpanStore, Any, Path]
) -> None:
    monkeypatch.setattr(_json, "_orjson", None)
    before = json.JSONDecoder().decode
    for data in _texts()[:40]:
        assert _outcome(_json.loads_utf8, data) == _outcome(
            lambda d: before(d.decode("utf-8", "surrogatepass")), data
        )
    new, old, _ = both
    run_id, records = fabricate_run()
    new.write_spans(records)
    assert_reads_identically(new, old, run_id)

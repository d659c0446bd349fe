"""The faster trajectory builder gives exactly what the builder before it gave (issue 16): the same
models, field by field and type by type, the same fields-set, the same containers shared (a hop's
steps are the trajectory's step objects) and nothing else shared, on real runs, forks in every
mode, fabricated runs and foreign traces; and its JSON and timestamp helpers give exactly what
``json.loads`` and ``datetime.fromtimestamp`` give."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import DATA
from pydantic import BaseModel
from span_factory import fabricate_run, openinference_run

from causal_middleware.spans import builder
from causal_middleware.spans.record import SpanRecord


def _walk(value: Any, path: str, seen: dict[int, int], out: list[tuple[str, Any]]) -> None:
    """Every node of ``value`` as (path, what it is); containers and models also by the order in
    which they were first met, so two walks match only when the same objects are shared."""
    if isinstance(value, BaseModel | dict | list | tuple):
        if id(value) in seen:
            out.append((path, ("shared", seen[id(value)])))
            return
        seen[id(value)] = len(seen)
    if isinstance(value, BaseModel):
        out.append(
            (
                path,
                (
                    type(value).__qualname__,
                    tuple(value.__dict__),
                    tuple(sorted(value.model_fields_set)),
                    value.__pydantic_extra__,
                    value.__pydantic_private__,
                ),
            )
        )
        for key, item in value.__dict__.items():
            _walk(item, f"{path}.{key}", seen, out)
    elif isinstance(value, dict):
        out.append((path, (type(value).__qualname__, tuple((type(k), k) for k in value))))
        for key, item in value.items():
            _walk(item, f"{path}[{key!r}]", seen, out)
    elif isinstance(value, list | tuple):
        out.append((path, (type(value).__qualname__, len(value))))
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", seen, out)
    elif isinstance(value, float) and math.isnan(value):
        out.append((path, ("float", "nan")))
    else:
        out.append((path, (type(value), value)))


def _shape(value: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    _walk(value, "t", {}, out)
    return out


def assert_identical(new: Any, old: Any) -> None:
    assert new == old
    new_shape, old_shape = _shape(new), _shape(old)
    for mine, theirs in zip(new_shape, old_shape, strict=True):
        assert mine == theirs
    if isinstance(new, BaseModel):
        assert new.model_dump_json() == old.model_dump_json()


def _check_run(spans: Sequence[SpanRecord], old: ModuleType, run_id: str | None = None) -> None:
    facts_new = {s.span_id: builder.span_facts(s) for s in spans}
    facts_old = {s.span_id: old.span_facts(s) for s in spans}
    assert {k: _fields(f) for k, f in facts_new.items()} == {k: _fields(f) for k, f in facts_old.items()}
    assert_identical(
        builder.build_trajectory(spans, run_id=run_id), old.build_trajectory(spans, run_id=run_id)
    )
    assert_identical(
        builder.build_trajectory(spans, run_id=run_id, facts=facts_new),
        old.build_trajectory(spans, run_id=run_id, facts=facts_old),
    )
    trace = run_id or spans[0].trace_id
    root_new = builder.choose_root(f for f in facts_new.values())
    root_span = next(s for s in spans if root_new is not None and s.span_id == root_new.span_id)
    summary_new = builder.summarize_run(trace, list(facts_new.values()), root_span)
    summary_old = old.summarize_run(trace, list(facts_old.values()), root_span)
    assert _fields(summary_new) == _fields(summary_old)


def _fields(facts: Any) -> list[tuple[str, Any]]:
    """A SpanFacts / RunFacts of either builder as comparable (name, shape) pairs (the two
    builders' dataclasses are different classes)."""
    return [(field.name, _shape(getattr(facts, field.name))) for field in dataclasses.fields(facts)]


def test_reference_runs_and_forks_in_every_mode_build_identically(
    reference_runs: dict[str, list[SpanRecord]], baseline_builder: ModuleType
) -> None:
    assert len(reference_runs) >= 10
    modes = set()
    for run_id, spans in reference_runs.items():
        _check_run(spans, baseline_builder, run_id)
        lineage = builder.build_trajectory(spans, run_id=run_id).lineage
        if lineage is not None:
            modes.add(lineage.mode)
    assert modes == {"regenerate", "frozen", "replay"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"thread_id": "t-7", "outcome": "failure", "reference": "Quarn", "labels": {"fault": "x"}},
    ],
)
def test_fabricated_runs_build_identically(kwargs: dict[str, Any], baseline_builder: ModuleType) -> None:
    _, records = fabricate_run(**kwargs)
    _check_run(records, baseline_builder)
    _check_run(list(reversed(records)), baseline_builder)  # arrival order does not matter either


def test_openinference_traces_build_identically(baseline_builder: ModuleType) -> None:
    _check_run(openinference_run(), baseline_builder)


def _odd(records: list[SpanRecord]) -> list[SpanRecord]:
    """The run with values the builder must coerce: str subclasses, ints for floats, dicts held
    as attribute values, big integers and NaN inside JSON text."""

    class Text(str):
        pass

    out = []
    for i, record in enumerate(records):
        attrs = dict(record.attributes)
        for key, value in list(attrs.items()):
            if isinstance(value, str) and i % 2:
                attrs[key] = Text(value)
            if key.endswith("document.score") and isinstance(value, float):
                attrs[key] = int(value)
            if key.endswith("document.metadata") and isinstance(value, str):
                attrs[key] = json.loads(value)
        if "output.value" in attrs:
            attrs["output.value"] = '{"big": 123456789012345678901234567890, "nan": NaN, "x": [1.5e-320]}'
        out.append(record.model_copy(update={"attributes": attrs}))
    return out


def test_odd_values_build_identically(baseline_builder: ModuleType) -> None:
    _, records = fabricate_run()
    _check_run(_odd(records), baseline_builder)
    _check_run(_odd(openinference_run()), baseline_builder)


def _trail_files() -> list[Path]:
    folder = DATA / "trail" / "traces" / "gaia"
    return sorted(folder.glob("*.json"))[:12] if folder.is_dir() else []


def test_trail_and_who_and_when_traces_build_identically(baseline_builder: ModuleType) -> None:
    from causal_middleware.store.memory import InMemorySpanStore
    from causal_middleware.store.whowhen import read_whowhen, whowhen_files

    files = _trail_files()
    who = DATA / "who_and_when"
    if not files and not who.is_dir():
        pytest.skip("no TRAIL or Who&When data in this checkout (../shared/data)")
    store = InMemorySpanStore()
    for path in files:
        run_id = store.import_trail_trace(path)
        _check_run(store.get_spans(run_id), baseline_builder, run_id)
    if who.is_dir():
        paths = [
            p
            for folder in ("Hand-Crafted", "Algorithm-Generated")
            if (who / folder).is_dir()
            for p in whowhen_files(who / folder)[:10]
        ]
        assert paths
        for path in paths:
            records = read_whowhen(path)
            for trace in dict.fromkeys(r.trace_id for r in records):
                _check_run([r for r in records if r.trace_id == trace], baseline_builder, trace)


_JSON_TEXTS = [
    '{"a": 1, "a": 2, "b": [1.0, -0.0, 1e-400, 2.5E+3]}',
    "[123456789012345678901234567890, -9999999999999999999, 999999999999999999]",
    '{"n": NaN, "i": Infinity, "m": -Infinity}',
    "[1e309]",
    '["\\ud800", "\\ud83d\\ude00", "\\u00e9"]',
    '"a string"',
    "\ufeff[1]",
    '["tab\there"]',
    "[1,]",
    '{"deep": ' * 1200 + "1" + "}" * 1200,
    "[" + ", ".join(repr(random.Random(7).uniform(-1e300, 1e300)) for _ in range(50)) + "]",
    '["\ud800"]',
    "",
    "   ",
    '"unterminated',
    '"a" 12345678901234567890123',
]


@pytest.mark.parametrize("text", _JSON_TEXTS, ids=range(len(_JSON_TEXTS)))
def test_json_reads_equal_json_loads(text: str) -> None:
    def outcome(read: Any) -> Any:
        try:
            return ("ok", _shape(read(text)))
        except RecursionError:
            return ("recursion", None)
        except ValueError:
            return ("error", None)

    assert outcome(builder._loads) == outcome(json.loads)
    for mime in (None, "application/json", "text/plain"):
        assert outcome(lambda t: builder.decode_json(t, mime)) == outcome(  # noqa: B023
            lambda t: _decode_before(t, mime)  # noqa: B023
        )


def _decode_before(value: Any, mime_type: Any = None) -> Any:
    """``decode_json`` as it was, with ``json.loads`` alone."""
    if not isinstance(value, str) or mime_type == "text/plain":
        return value
    stripped = value.strip()
    if mime_type != "application/json" and not stripped.startswith(("{", "[", '"')):
        return value
    try:
        return json.loads(stripped)
    except ValueError:
        return value


def test_json_reads_of_random_numbers_equal_json_loads() -> None:
    rng = random.Random(16)
    texts = []
    for _ in range(3000):
        x = rng.uniform(-1e20, 1e20) * 10 ** rng.randint(-300, 280)
        texts += [repr(x), f"{x:.17g}", f"{x:.3e}", str(rng.randint(-(10 ** rng.randint(1, 25)), 10**25))]
    text = "[" + ",".join(texts) + "]"
    assert _shape(builder._loads(text)) == _shape(json.loads(text))
    for item in texts[:2000]:
        assert _shape(builder._loads(item)) == _shape(json.loads(item))


def _datetime_before(ns: Any) -> datetime | None:
    if not ns:
        return None
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=rest // 1000)


def test_timestamps_equal_the_general_form() -> None:
    rng = random.Random(3)
    values: list[Any] = [None, 0, 1, 999, 1000, -1, -1_000_000_001, 1_750_000_000_123_456_789, 2**62]
    values += [rng.randint(-(10**18), 4 * 10**18) for _ in range(2000)]
    values += [1.75e18, 1_750_000_000_123_456_789.0, True]
    for ns in values:
        try:
            expected: Any = _datetime_before(ns)
        except (OverflowError, ValueError, OSError) as exc:
            expected = type(exc)
        try:
            got: Any = builder.datetime_from_ns(ns)
        except (OverflowError, ValueError, OSError) as exc:
            got = type(exc)
        assert got == expected and type(got) is type(expected), ns
        if isinstance(got, datetime):
            assert got.tzinfo is expected.tzinfo

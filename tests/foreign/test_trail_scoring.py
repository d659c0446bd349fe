"""TRAIL: annotations (trailing comma tolerated) and true answers kept by the importer, and the scorer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.foreign import trail as bench
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.store import trail
from causal_middleware.store.base import SpanStore, StoreError

TRAIL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "trail"
COMMA = "a96c6811716c0473b86a23321db79c34.json"  # the annotation with the known trailing comma
SAMPLE = "0035f455b3ff2295167a844f04d85d34.json"


@pytest.fixture
def trail_data() -> Path:
    if not (TRAIL / "traces" / "gaia").is_dir():
        pytest.skip(f"TRAIL data not present at {TRAIL} (../shared/data is absent in this checkout)")
    return TRAIL


def _true_answer(trace: Path) -> str:
    """The true_answer of the trace's answer_single_question log, found independently of the importer."""

    def walk(spans: list[dict[str, Any]]) -> Any:
        for span in spans:
            yield span
            yield from walk(span.get("child_spans") or [])

    raw = json.loads(trace.read_text())
    for span in walk(raw["spans"]):
        if span["span_name"] == "answer_single_question":
            return str(span["logs"][0]["body"]["function.arguments"]["example"]["true_answer"])
    raise AssertionError("no answer_single_question span")


def test_tolerant_json_drops_only_a_trailing_comma() -> None:
    value, notes = trail.loads_tolerant('{"a": [1, 2,\n ], "b": {"c": "x,]",\n},\n}')
    assert value == {"a": [1, 2], "b": {"c": "x,]"}}
    assert notes == [
        "dropped a trailing comma before ']' at line 1 column 12",
        "dropped a trailing comma before '}' at line 2 column 21",
        "dropped a trailing comma before '}' at line 3 column 2",
    ]
    assert trail.loads_tolerant('{"a": 1}') == ({"a": 1}, [])
    assert trail.loads_tolerant('["a\\",]"]') == (['a",]'], [])  # inside a string: untouched
    for bad in ("[,]", '{"a": ,}', "[1,,]", '{"a": 1 "b": 2}', "[1, 2"):
        with pytest.raises(json.JSONDecodeError):
            trail.loads_tolerant(bad)


def test_the_annotation_with_a_trailing_comma_is_read_and_says_so(trail_data: Path) -> None:
    path = trail_data / "annotations" / "gaia" / COMMA
    with pytest.raises(json.JSONDecodeError):
        json.loads(path.read_text())  # the shipped defect is still there
    annotation = trail.read_trail_annotation(path)
    assert annotation.trace_id == COMMA.removesuffix(".json")
    assert annotation.notes == ("dropped a trailing comma before ']' at line 38 column 10",)
    assert len(annotation.errors) == 5
    assert annotation.locations == ["bb1b825898c2697c", "d66194ef5db1af69", "c46c0dbcedd707cc"]
    assert {e["category"] for e in annotation.errors} >= {"Language-only", "Goal Deviation"}


def test_the_trailing_comma_trace_imports_with_reference_and_labels(
    store: SpanStore, trail_data: Path
) -> None:
    trace = trail_data / "traces" / "gaia" / COMMA
    assert trail.annotation_path(trace) == trail_data / "annotations" / "gaia" / COMMA
    run_id = store.import_trail_trace(trace)  # the store's method finds the annotation beside the traces
    t = store.get_trajectory(run_id)
    assert t.reference == _true_answer(trace) == "0.00033"
    labels = t.labels
    assert labels[trail.LABEL_ERROR_LOCATIONS] == ["bb1b825898c2697c", "d66194ef5db1af69", "c46c0dbcedd707cc"]
    assert set(labels[trail.LABEL_ERROR_LOCATIONS]) <= {s.step_id for s in t.steps}
    assert labels["trail.n_errors"] == len(labels[trail.LABEL_ERRORS]) == 5
    assert labels["trail.annotation_notes"] == ["dropped a trailing comma before ']' at line 38 column 10"]
    first = labels[trail.LABEL_ERRORS][0]
    assert first == {
        "location": "bb1b825898c2697c",
        "category": "Instruction Non-compliance",
        "category_normalised": "Instruction Non-compliance",
        "impact": "LOW",
    }
    assert labels["trail.scores"]["overall"] == 2.25
    (summary,) = store.list_runs(label="trail.n_errors=5", limit=None)
    assert summary.run_id == run_id and summary.labels == labels


def test_every_trace_keeps_its_true_answer_and_labels(trail_data: Path) -> None:
    traces = sorted((trail_data / "traces" / "gaia").glob("*.json"))
    with_errors = 0
    for trace in traces:
        t = build_trajectory(trail.read_trail_trace(trace))
        assert t.reference == _true_answer(trace), trace.name
        raw = trail.loads_tolerant((trail_data / "annotations" / "gaia" / trace.name).read_text())[0]
        wanted = list(dict.fromkeys(e["location"] for e in raw["errors"]))
        assert t.labels[trail.LABEL_ERROR_LOCATIONS] == wanted, trace.name
        with_errors += bool(wanted)
    assert (len(traces), with_errors) == (72, 69)


def test_categories_are_normalised_and_kept_as_written() -> None:
    assert (
        trail.normalise_category("Language-Only")
        == trail.normalise_category("language-only")
        == "Language-only"
    )
    assert trail.normalise_category("Context Handling Failure") == "Context Handling Failures"
    assert trail.normalise_category("Goal deviation") == "Goal Deviation"
    assert trail.normalise_category("Tool Selection") == "Tool Selection Errors"
    assert trail.normalise_category("  Something  New ") == "Something New"


def test_annotations_can_be_given_refused_or_left_out(trail_data: Path, tmp_path: Path) -> None:
    trace = tmp_path / SAMPLE
    shutil.copy(trail_data / "traces" / "gaia" / SAMPLE, trace)
    t = build_trajectory(trail.read_trail_trace(trace))  # no annotation beside a copy
    assert t.reference == _true_answer(trace) and trail.LABEL_ERROR_LOCATIONS not in t.labels
    given = trail_data / "annotations" / "gaia" / SAMPLE
    t = build_trajectory(trail.read_trail_trace(trace, annotations=given))
    assert t.labels[trail.LABEL_ERROR_LOCATIONS] == ["98fa1dda65ab168b", "bc20feefb97e11e5"]
    t = build_trajectory(trail.read_trail_trace(trail_data / "traces" / "gaia" / SAMPLE, annotations=False))
    assert trail.LABEL_ERROR_LOCATIONS not in t.labels
    with pytest.raises(
        StoreError, match=r"annotation 'a96c.*json' is of trace 'a96c6811716c0473b86a23321db79c34'"
    ):
        trail.read_trail_trace(trace, annotations=trail_data / "annotations" / "gaia" / COMMA)
    bad = tmp_path / "bad.json"
    bad.write_text('{"errors": [{"category": "Goal Deviation"}]}')
    with pytest.raises(
        StoreError, match=r"bad\.json is not a TRAIL annotation: errors\[0\] has no 'location'"
    ):
        trail.read_trail_trace(trace, annotations=bad)
    bad.write_text('{"errors": [,]}')
    with pytest.raises(StoreError, match="malformed JSON"):
        trail.read_trail_trace(trace, annotations=bad)


def test_a_streamed_import_keeps_reference_and_labels(
    store: SpanStore, trail_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trail, "BATCH_SPANS", 2)  # written batch by batch after a validating pass
    trace = trail_data / "traces" / "gaia" / COMMA
    run_id = store.import_trail_trace(trace)
    t = store.get_trajectory(run_id)
    assert t.reference == "0.00033" and t.labels["trail.n_errors"] == 5
    assert len(store.get_spans(run_id)) == len(trail.read_trail_trace(trace))


def test_the_scorer_runs_on_a_small_sample(trail_data: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "trail.json"
    assert (
        bench.main([str(trail_data), "--limit", "8", "--methods", "rule,iterative", "--json", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert "first_hop_llm" in printed and "random (expected)" in printed
    result = json.loads(out.read_text())
    assert result["data"]["traces"] == 8 and 0 < result["data"]["scored"] <= 8
    assert set(result["rows"]) == {*bench.BASELINES, "rule", "iterative"}
    for row in result["rows"].values():
        for key in ("location", "hop"):
            rate = row[key]
            assert rate["n"] == result["data"]["scored"] and rate["hits"] <= rate["n"]
            assert rate["ci95"][0] <= rate["rate"] <= rate["ci95"][1]
            assert row["hop"]["hits"] >= row["location"]["hits"]  # a located error lies in its group
    assert result["rows"]["rule"]["ran"] == result["data"]["scored"]
    assert result["rows"]["rule"]["uses_gold"] is False
    assert result["rows"]["rule"]["location_vs_first_hop_llm"]["n"] == result["data"]["scored"]


def test_the_full_set_facts_and_random_baseline(trail_data: Path) -> None:
    result = bench.benchmark(trail_data, methods=())
    data = result["data"]
    assert (data["traces"], data["scored"], data["without_errors"]) == (72, 69, 3)
    assert (data["gold_spans"], data["gold_span_kinds"]) == (137, {"llm": 134, "tool": 3})
    assert data["annotations_repaired"] == 1 and data["with_reference"] == 72
    assert result["expected_random"]["random_llm_location"] == pytest.approx(0.385, abs=0.001)


def test_predictions_map_hops_and_stages_to_spans(trail_data: Path) -> None:
    from causal_middleware.attribution.base import Diagnosis

    cases, _ = bench.load_cases(trail_data / "traces" / "gaia" / SAMPLE)
    case = cases[0]
    hop_one_llm = next(s for s in case.llm_steps if case.group[s] == 1)
    assert bench.predict(case, Diagnosis(method="m", hop=1)) == bench.Prediction(hop_one_llm, 1)
    last = case.llm_steps[-1]
    assert bench.predict(case, Diagnosis(method="m")) == bench.Prediction(last, case.group[last])
    assert bench.predict(case, Diagnosis(method="m", step_id=case.steps[0])).span == case.steps[0]
    assert bench.predict(case, Diagnosis.not_run("m", "no")) == bench.Prediction(None, None)

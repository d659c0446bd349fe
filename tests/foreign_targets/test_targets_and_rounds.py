"""Steps and agents as attribution targets, hop inference on foreign trace shapes, the
information-flow diagnoser and the foreign benchmarks' JSON, on small synthetic traces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.foreign import trail as trail_bench
from benchmarks.foreign import whowhen as whowhen_bench
from causal_middleware.attribution.base import Diagnosis
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.spans import attributes as A
from causal_middleware.spans.builder import build_trajectory, choose_root, span_facts, summarize_run
from causal_middleware.spans.model import Trajectory
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.whowhen import read_whowhen

TRACE = "ab" * 16
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


class Trace:
    """A foreign trace built span by span: OpenInference kinds, no causal.* hop attributes."""

    def __init__(self) -> None:
        self.spans = [SpanRecord(trace_id=TRACE, span_id=f"{1:016x}", name="root", start_time_ns=1)]

    def add(self, name: str, kind: str, parent: str | None = None, **attrs: Any) -> str:
        span_id = f"{len(self.spans) + 1:016x}"
        attributes = {A.OPENINFERENCE_SPAN_KIND: kind, **attrs}
        self.spans.append(
            SpanRecord(
                trace_id=TRACE,
                span_id=span_id,
                parent_span_id=parent or self.spans[0].span_id,
                name=name,
                start_time_ns=10 * len(self.spans),
                attributes=attributes,
            )
        )
        return span_id

    def llm(self, text: str, parent: str | None = None, name: str = "llm", **attrs: Any) -> str:
        return self.add(name, "LLM", parent, **{"llm.output_messages.0.message.content": text}, **attrs)

    def tool(self, text: str, parent: str | None = None, name: str = "tool", **attrs: Any) -> str:
        return self.add(name, "TOOL", parent, **{A.TOOL_NAME: name, A.OUTPUT_VALUE: text}, **attrs)

    def build(self) -> Trajectory:
        return build_trajectory(self.spans)

    def listed_hops(self) -> int:
        facts = [span_facts(s) for s in self.spans]
        root = choose_root(facts)
        assert root is not None
        return summarize_run(TRACE, facts, self.spans[0]).n_hops


def _hops(t: Trajectory) -> list[list[str]]:
    return [[s.name for s in h.steps] for h in t.hops]


# -- hop inference ---------------------------------------------------------------------------


def test_a_tool_call_inside_a_reading_step_starts_no_hop() -> None:
    tr = Trace()
    for i in (1, 2):
        tr.add(f"retrieve{i}", "RETRIEVER", tr.add("retrieve", "CHAIN"), **{A.INPUT_VALUE: f"q{i}"})
        read = tr.add("read", "CHAIN")
        tr.llm("reading", read)
        tr.tool("2+2", read, name="calculator")
    t = tr.build()
    assert len(t.hops) == 2 and tr.listed_hops() == 2
    assert [s.hop for s in t.steps_of("tool")] == [1, 2]


def test_tool_calls_inside_one_node_are_one_round() -> None:
    tr = Trace()
    for _ in range(2):
        tr.llm("call two tools", tr.add("model", "CHAIN"))
        tools = tr.add("tools", "CHAIN")
        tr.tool("a", tools, name="search")
        tr.tool("b", tools, name="search")
    t = tr.build()
    assert len(t.hops) == 2 and tr.listed_hops() == 2
    assert [[s.name for s in h.steps] for h in t.hops] == [["model", "llm", "tools", "search", "search"]] * 2


def test_the_planner_of_round_k_plus_1_is_in_round_k_plus_1() -> None:
    tr = Trace()
    for i in (1, 2):
        tr.llm(f"plan {i}", tr.add("plan", "CHAIN"))
        tr.add(f"r{i}", "RETRIEVER", tr.add("retrieve", "CHAIN"), **{A.INPUT_VALUE: f"q{i}"})
        tr.llm(f"read {i}", tr.add("read", "CHAIN"))
    tr.llm("final", tr.add("answer", "CHAIN"))
    t = tr.build()
    nodes = [[s.name for s in h.steps if s.kind == "node"] for h in t.hops]
    assert nodes == [["plan", "retrieve", "read"], ["plan", "retrieve", "read", "answer"]]
    plans = [s for s in t.steps if s.kind == "llm" and s.output.startswith("plan")]
    assert [s.hop for s in plans] == [1, 2]


def test_a_read_node_before_the_next_retrieval_stays_in_its_round() -> None:
    tr = Trace()
    for i in (1, 2, 3):
        tr.add(f"r{i}", "RETRIEVER", tr.add("retrieve", "CHAIN"), **{A.INPUT_VALUE: f"q{i}"})
        tr.llm(f"read {i}", tr.add("read", "CHAIN"))
    t = tr.build()
    reads = [s for s in t.steps if s.kind == "llm"]
    assert [s.hop for s in reads] == [1, 2, 3]  # no planner name before round 1: nothing joins


def test_code_agent_steps_without_tool_spans_are_hops() -> None:
    tr = Trace()
    agent = tr.add("CodeAgent.run", "AGENT")
    tr.llm("planning: facts and plan", agent)
    for i in (1, 2, 3):
        tr.llm(f"Thought {i}\n```py\nprint({i})\n```", tr.add(f"Step {i}", "CHAIN", agent))
    t = tr.build()
    assert len(t.hops) == 3 and tr.listed_hops() == 3
    assert [h[:1] for h in _hops(t)] == [["llm"], ["Step 2"], ["Step 3"]]  # the planning call joins round 1
    assert t.hops[0].steps[1].name == "Step 1"


def test_chat_style_multi_agent_log_groups_each_call_with_its_caller() -> None:
    tr = Trace()
    tr.llm("task: compute x", name="Planner_Expert")
    tr.tool("exitcode: 1 Traceback", name="terminal")
    tr.llm("fixed code", name="Coder_Expert")
    tr.tool("42", name="terminal")
    tr.llm("The answer is 42.", name="Checker_Expert")
    t = tr.build()
    assert _hops(t) == [["Planner_Expert", "terminal"], ["Coder_Expert", "terminal", "Checker_Expert"]]


# -- diagnoses name a step and an agent ------------------------------------------------------


def _log(tmp_path: Path, history: list[dict[str, str]], question: str = "How many apples are there?") -> Path:
    path = tmp_path / "Algorithm-Generated" / "1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"question": question, "ground_truth": "7", "history": history}
    path.write_text(json.dumps({**body, "mistake_agent": "B_Expert", "mistake_step": "2"}))
    return path


def _msg(name: str, content: str) -> dict[str, str]:
    return {"name": name, "role": "user", "content": content}


def test_a_hop_level_diagnosis_names_a_step_and_its_agent(tmp_path: Path) -> None:
    history = [
        _msg("A_Expert", "How many apples are there? Plan: count them."),
        _msg("Computer_terminal", "no code to run"),
        _msg("B_Expert", "```python\nprint(9)\n```"),
        _msg("Computer_terminal", "9"),
        _msg("A_Expert", "There are 9 apples in total, confirmed."),
    ]
    t = build_trajectory(read_whowhen(_log(tmp_path, history)))
    diagnosis = get_diagnoser("rule").diagnose(t)
    assert diagnosis.ran and diagnosis.step_id in {s.step_id for s in t.steps}
    assert diagnosis.step_from in {"hop", "answer", "method"}
    step = next(s for s in t.steps if s.step_id == diagnosis.step_id)
    assert diagnosis.agent == step.node  # the agent of the named step
    as_json = json.loads(diagnosis.model_dump_json())
    assert {"step_id", "step_from", "agent"} <= set(as_json)


def test_a_diagnosis_that_did_not_run_names_nothing() -> None:
    d = Diagnosis.not_run("x", "no reason")
    assert (d.step_id, d.agent, d.step_from) == (None, None, None)


# -- information flow ------------------------------------------------------------------------


def _flow(tmp_path: Path, history: list[dict[str, str]]) -> tuple[Trajectory, Diagnosis]:
    t = build_trajectory(read_whowhen(_log(tmp_path, history)))
    return t, get_diagnoser("information_flow").diagnose(t)


def _index(t: Trajectory, d: Diagnosis) -> int:
    return [s.step_id for s in t.steps].index(str(d.step_id))


def test_the_caller_of_the_tool_that_produced_the_final_number_is_blamed(tmp_path: Path) -> None:
    history = [
        _msg("A_Expert", "How many apples are there? 1. count 2. verify"),
        _msg("B_Expert", "Let me count.\n```python\nprint(3 * 3)\n```"),
        _msg("Computer_terminal", "exitcode: 0\nCode output: 9"),
        _msg("C_Expert", "1. Checked the code.\n2. The result is 9.\nThere are 9 apples."),
        _msg("A_Expert", "TERMINATE"),
    ]
    t, d = _flow(tmp_path, history)
    assert _index(t, d) == 1 and d.agent == "B_Expert"
    assert d.details["rule"] == "claim_origin" and d.details["key_claims"] == ["9"]
    assert d.details["error_category"] is None  # the value came from a tool


def test_an_unsupported_claim_that_reaches_the_answer_is_blamed(tmp_path: Path) -> None:
    history = [
        _msg("A_Expert", "How many apples are there? Use the inventory."),
        _msg("Computer_terminal", "exitcode: 0\nCode output: rows loaded"),
        _msg("B_Expert", "From memory, the inventory lists 1,250 apples."),
        _msg("C_Expert", "Agreed: there are 1250 apples in total."),
    ]
    t, d = _flow(tmp_path, history)
    assert _index(t, d) == 2 and d.agent == "B_Expert"
    assert d.details["error_category"] == "Language-only"


def test_without_a_traceable_claim_the_first_failed_call_is_blamed(tmp_path: Path) -> None:
    history = [
        _msg("A_Expert", "How many apples are there? Use the inventory."),
        _msg("B_Expert", "Reading the file first."),
        _msg("C_Expert", "```python\nopen('inventory.csv')\n```"),
        _msg("Computer_terminal", "Traceback (most recent call last): FileNotFoundError"),
        _msg("B_Expert", "We could not determine the count of apples here."),
    ]
    t, d = _flow(tmp_path, history)
    assert _index(t, d) == 2 and d.details["rule"] == "first_failed_call"


def test_else_the_first_reply_is_blamed(tmp_path: Path) -> None:
    history = [
        _msg("A_Expert", "How many apples are there? Use the inventory."),
        _msg("B_Expert", "I think we should ask the owner about the apples."),
        _msg("C_Expert", "Yes, the owner knows the apples best of all."),
    ]
    t, d = _flow(tmp_path, history)
    assert _index(t, d) == 1 and d.details["rule"] == "first_reply"


def test_information_flow_is_registered_and_passive() -> None:
    d = get_diagnoser("information_flow")
    assert not d.needs_live_agent and not d.uses_gold


# -- benchmarks ------------------------------------------------------------------------------


def test_whowhen_benchmark_writes_its_table_and_json(tmp_path: Path) -> None:
    source = DATA / "who_and_when" / "Algorithm-Generated"
    if not source.is_dir():
        pytest.skip("shared Who&When data absent")
    subset = tmp_path / "data" / "Algorithm-Generated"
    subset.mkdir(parents=True)
    for name in ("1.json", "2.json", "3.json"):
        shutil.copy(source / name, subset / name)
    out = tmp_path / "out"
    assert (
        whowhen_bench.main([str(tmp_path / "data"), "--methods", "information_flow,rule", "--out", str(out)])
        == 0
    )
    [result] = json.loads((out / "whowhen.json").read_text())
    assert result["n"] == 3 and {"first_agent", "first_reply", "last", "random"} <= set(result["rows"])
    row = result["rows"]["information_flow"]
    assert row["ran"] == 3 and row["uses_gold"] is False and 0 <= row["step"]["accuracy"] <= 100
    assert result["not_run"]["crs"]["run"] is False and "live agent" in result["not_run"]["crs"]["reason"]
    assert "information_flow" in (out / "whowhen.txt").read_text()


def test_whowhen_benchmark_refuses_a_missing_folder(tmp_path: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        whowhen_bench.main([str(tmp_path / "absent")])
    assert exit_info.value.code == 2 and "not found" in capsys.readouterr().err


def test_trail_benchmark_scores_category_and_joint(tmp_path: Path) -> None:
    if not (DATA / "trail" / "traces").is_dir():
        pytest.skip("shared TRAIL data absent")
    out = tmp_path / "out"
    argv = [str(DATA / "trail"), "--limit", "6", "--methods", "information_flow", "--out", str(out)]
    assert trail_bench.main(argv) == 0
    result = json.loads((out / "trail.json").read_text())
    row = result["rows"]["information_flow"]
    assert {"location", "hop", "category", "joint"} <= set(row)
    assert row["joint"]["hits"] <= min(row["location"]["hits"], row["category"]["hits"])
    assert result["rows"]["majority_category"]["uses_gold"] is True
    assert result["target"]["bar_location"] == result["expected_random"]["random_llm_location"]

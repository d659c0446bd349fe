"""``bench context --recorded``: a kit's sessions played by a real ``create_agent`` agent, recorded
with ``instrument()`` into a SQLite store and read back (load_conversation + align_to_workspace)
before the pipeline runs. The recording keeps what the pipeline needs: node for node the same
session, the search tool's plain-text pages tied to the workspace files by content, API errors as
failed tool steps; and the scores it gives equal the simulation's on the shipped example kit."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.bench import evaluate_trace
from benchmarks.context.kit import generate_kit_benchmark, run_kit_bench
from benchmarks.context.recorded import CLOSING_REPLY, recorded_traces, same_shape, script_session
from causal_middleware.context.conversation import NodeType

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "travel_kit" / "kit.yaml"


def _bench():
    return generate_kit_benchmark(KIT, seed=4, n_dissatisfied=18, n_control=4)


def test_the_script_plays_each_tool_node_and_answers_every_turn() -> None:
    trace = next(
        t for t in _bench().traces if any(n.type == NodeType.TOOL_CALL for n in t.conversation.nodes)
    )
    users, messages, tools, dropped = script_session(trace.conversation)
    conv = trace.conversation
    assert users == [n.content for n in conv.user_turns]
    tool_nodes = [
        n for n in conv.nodes if n.type in (NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP, NodeType.TOOL_CALL)
    ]
    calls = [m for m in messages if m.tool_calls]
    assert len(calls) == len(tool_nodes) and len(messages) == len(tool_nodes) + len(users) and dropped == 0
    assert {"find_articles", "open_article", "open_runbook"} <= {t.name for t in tools}
    # the API tool keeps its own name; the knowledge-base tools are named the user's way
    assert {c.tool_calls[0]["name"] for c in calls} & {
        n.name for n in tool_nodes if n.type == NodeType.TOOL_CALL
    }


def test_recorded_sessions_read_back_as_the_simulated_ones(tmp_path: Path) -> None:
    bench = _bench()
    traces, info = recorded_traces(bench, tmp_path)
    assert info["sessions"] == len(bench.traces) and info["runs"] > info["sessions"] and info["spans"] > 0
    assert info["shape_mismatches"] == 0
    for sim, rec in zip(bench.traces, traces, strict=True):
        assert same_shape(sim.conversation, rec.conversation), sim.ground_truth.trace_id
        gold = sim.ground_truth.root_node_id
        if gold is not None:
            carried = rec.conversation.node(rec.ground_truth.root_node_id)
            assert carried.type == sim.conversation.node(gold).type
        for node in rec.conversation.nodes:
            if node.type == NodeType.KB_RETRIEVAL and node.documents:
                assert all(bench.workspace(sim).exists(d.path) for d in node.documents)  # tied by content
            if node.name not in (None, "find_articles", "open_article", "open_runbook"):
                assert node.type == NodeType.TOOL_CALL
        sim_errors = [n.status for n in sim.conversation.nodes if n.type == NodeType.TOOL_CALL]
        rec_errors = [n.status for n in rec.conversation.nodes if n.type == NodeType.TOOL_CALL]
        assert sim_errors == rec_errors  # a kit tool's error is a failed tool step once recorded
        assert [
            n.content
            for n in rec.conversation.nodes
            if n.type == NodeType.AGENT and n.content != CLOSING_REPLY
        ] == [n.content for n in sim.conversation.nodes if n.type == NodeType.AGENT]
    # the pipeline's verdicts on this kit are the simulation's
    for sim, rec in zip(bench.traces, traces, strict=True):
        a, b = evaluate_trace(bench, sim), evaluate_trace(bench, rec)
        assert (a.detected, a.acc_at_1, a.op_acc, a.path_acc, a.e2e_acc) == (
            b.detected,
            b.acc_at_1,
            b.op_acc,
            b.path_acc,
            b.e2e_acc,
        ), sim.ground_truth.trace_id


def test_the_report_names_the_mode_and_the_recording() -> None:
    out = run_kit_bench([KIT], seed=4, n_dissatisfied=6, n_control=2, recorded=True)
    assert out["mode"] == "offline, recorded" and out["n"] == 8
    assert set(out["recorded"]["travel_booking"]) == {
        "sessions",
        "runs",
        "spans",
        "shape_mismatches",
        "reasoning_dropped",
        "record_seconds",
    }


def test_simulate_recorded_stores_runs_the_cli_diagnoses(tmp_path: Path, capsys) -> None:
    import json

    from causal_middleware.cli.main import main
    from causal_middleware.store.sqlite import SqliteSpanStore

    db, wss = tmp_path / "runs.db", tmp_path / "ws"
    argv = ["context", "simulate", "--kit", str(KIT), "--recorded", "--seed", "4", "--n-dissatisfied", "6"]
    assert main([*argv, "--n-control", "1", "--store", str(db), "--workspaces", str(wss), "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)["sessions"]
    store = SqliteSpanStore(db)
    assert not store.get_records("context.session")  # runs, not session records
    truths = {
        r["ground_truth"]["trace_id"]: r["ground_truth"] for r in store.get_records("context.ground_truth")
    }
    assert set(truths) == set(sessions)
    for sid in sessions:
        assert store.list_runs(thread_id=sid)  # one run per user turn
        gt = truths[sid]
        if not gt["dissatisfied"]:
            continue
        assert (
            main(["context", "diagnose", sid, "--store", str(db), "--workspace", str(wss / sid), "--json"])
            == 0
        )
        diag = json.loads(capsys.readouterr().out)
        assert diag["component_type"] == gt["component_type"], sid
        if gt["fault"]["category"] not in (
            "KB_CONTENT_GAP",
            "RETRIEVAL_FAILURE",
        ):  # the file to blame is read
            assert diag["component_path"] == gt["component_path"], sid

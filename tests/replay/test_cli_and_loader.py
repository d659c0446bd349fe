"""``causal-mw replay`` end to end (SQLite checkpoints and store on disk), and graph loading."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import load_graph
from langgraph.pregel import Pregel

from causal_middleware.cli.main import main
from causal_middleware.store.sqlite import SqliteSpanStore

GRAPH_FILE = """
import operator
import sqlite3
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    hop: int
    docs: Annotated[list[str], operator.add]
    answer: str


def decide(state: State) -> dict[str, Any]:
    return {}


def retrieve(state: State) -> dict[str, Any]:
    hop = state.get("hop", 0) + 1
    return {"docs": [f"d{hop}"], "hop": hop}


def answer(state: State) -> dict[str, Any]:
    return {"answer": "+".join(state["docs"])}


def build() -> Any:
    builder = StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("retrieve", retrieve)
    builder.add_node("answer", answer)
    builder.add_edge(START, "decide")
    builder.add_conditional_edges("decide", lambda s: "retrieve" if s.get("hop", 0) < 3 else "answer")
    builder.add_edge("retrieve", "decide")
    builder.add_edge("answer", END)
    saver = SqliteSaver(sqlite3.connect(CHECKPOINTS, check_same_thread=False))
    return builder.compile(checkpointer=saver, name="cli-agent")


graph = build()
"""


@pytest.fixture
def recorded(tmp_path: Path) -> dict[str, Any]:
    """A graph file, its SQLite checkpoints and a SQLite span store holding one 3-hop run."""
    checkpoints, store_path = tmp_path / "checkpoints.db", tmp_path / "runs.db"
    agent = tmp_path / "agent.py"
    agent.write_text(f"CHECKPOINTS = {str(checkpoints)!r}\n" + textwrap.dedent(GRAPH_FILE))
    with SqliteSpanStore(store_path) as store:
        graph = instrument(load_graph(f"{agent}:graph"), store=store, hop_nodes=["retrieve"])  # type: ignore[arg-type]
        graph.invoke({"hop": 0}, {"configurable": {"thread_id": "cli"}})
        run_id = graph.last_run_id
        graph.shutdown()
    return {"agent": agent, "store": str(store_path), "run_id": run_id}


def test_replay_json(recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "replay",
        recorded["run_id"][:10],
        "--graph",
        f"{recorded['agent']}:graph",
        "--hop",
        "2",
        "--set",
        '{"docs": ["X"]}',
        "--store",
        recorded["store"],
        "--label",
        "who=cli",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parent_run_id"] == recorded["run_id"] and out["mode"] == "regenerate"
    assert out["fork"]["node"] == "retrieve" and out["fork"]["hop"] == 2 and out["fork"]["checkpoint_id"]
    assert out["intervention"]["values"] == {"docs": ["X"], "hop": 2}
    assert out["answer"] == "d1+X+d3" and out["parent_answer"] == "d1+d2+d3"
    assert [h["origin"] for h in out["hops"]] == ["parent", "intervened+fork", "fork"]
    assert out["executed_nodes"] == 4 and out["labels"]["who"] == "cli"
    assert out["thread_id"].startswith(f"{out['parent_thread_id']}::fork-")  # its own thread
    with SqliteSpanStore(recorded["store"], create=False) as store:
        fork = store.get_trajectory(out["run_id"])
        assert fork.lineage is not None and fork.lineage.parent_run_id == recorded["run_id"]
        assert fork.answer == "d1+X+d3" and fork.thread_id == out["thread_id"]


def test_replay_table_and_modes(recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    base = [
        "replay",
        recorded["run_id"],
        "--graph",
        f"{recorded['agent']}:graph",
        "--store",
        recorded["store"],
    ]
    assert main([*base, "--hop", "3", "--set", '{"docs": ["Z"]}', "--mode", "frozen"]) == 0
    text = capsys.readouterr().out
    assert "fork run:" in text and "frozen" in text and "answer: d1+d2+Z" in text and "d1+d2+d3" in text
    assert main([*base, "--node", "answer", "--mode", "replay", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["executed_nodes"] == 0 and out["answer"] == "d1+d2+d3"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--hop", "2", "--set", "{not json"], "--set is not valid JSON"),
        (["--hop", "2", "--set", "[1]"], "--set must be a JSON object"),
        ([], "name the fork point"),
        (["--hop", "9"], "no node step with hop=9"),
        (["--hop", "2", "--label", "nolabel"], "KEY=VALUE"),
    ],
)
def test_replay_errors_exit_2(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = [
        "replay",
        recorded["run_id"],
        "--graph",
        f"{recorded['agent']}:graph",
        "--store",
        recorded["store"],
    ]
    assert main([*argv, *extra]) == 2
    assert message in capsys.readouterr().err


def test_replay_with_a_missing_store_or_graph(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    graph = f"{recorded['agent']}:graph"
    assert (
        main(["replay", recorded["run_id"], "--graph", graph, "--hop", "2", "--store", "/nonexistent.db"])
        == 2
    )
    assert "span store not found" in capsys.readouterr().err
    assert main(["replay", recorded["run_id"], "--graph", "nope.py:graph", "--hop", "2"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_load_graph_forms(recorded: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = recorded["agent"]
    assert isinstance(load_graph(f"{agent}:graph"), Pregel)
    assert isinstance(load_graph(f"{agent}:build"), Pregel)  # a factory is called
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("agent", None)
    assert isinstance(load_graph("agent:graph"), Pregel)  # package.module:attr
    with pytest.raises(ValueError, match="must look like"):
        load_graph("agent")
    with pytest.raises(ValueError, match="has no attribute 'nothing'"):
        load_graph("agent:nothing")
    with pytest.raises(ValueError, match="not a compiled LangGraph graph"):
        load_graph("agent:CHECKPOINTS")
    with pytest.raises(ValueError, match="cannot import module"):
        load_graph("no_such_module_xyz:graph")

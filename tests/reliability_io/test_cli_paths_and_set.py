"""Item 8 of issue 13 for the CLI: ``runs export --out <dir>`` failed only after loading the whole
store (now checked first: one line, exit 2), and ``replay --set '{"evidence": 5}'`` left an errored
fork run and a fork thread behind on every attempt (now refused before any fork)."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph import instrument
from causal_middleware.integrations.langgraph.replayer import load_graph

from causal_middleware.cli.main import main
from causal_middleware.store.base import StoreError
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.otlp_json import export_otlp_json
from causal_middleware.store.sqlite import SqliteSpanStore


class _NoWork(InMemorySpanStore):
    def list_runs(self, **kwargs: Any) -> Any:  # type: ignore[override]
        raise AssertionError("the store was read before the output path was checked")


@pytest.mark.parametrize("case", ["directory", "parent_is_file", "trailing_slash"])
def test_a_bad_export_path_fails_before_any_work(tmp_path: Path, case: str) -> None:
    (tmp_path / "afile").write_text("x")
    out = {
        "directory": str(tmp_path),
        "parent_is_file": str(tmp_path / "afile" / "runs.json"),
        "trailing_slash": str(tmp_path / "new") + "/",
    }[case]
    with pytest.raises(StoreError, match="cannot write the OTLP/JSON file"):
        export_otlp_json(_NoWork(), out)


def test_runs_export_to_a_directory_is_one_line_exit_2(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "runs.db"
    SqliteSpanStore(db).close()
    assert main(["runs", "export", "--out", str(tmp_path), "--store", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a directory" in err


GRAPH = """
import operator
import sqlite3
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    hop: int
    evidence: Annotated[list[str], operator.add]
    answer: str


def decide(state: State) -> dict[str, Any]:
    return {}


def retrieve(state: State) -> dict[str, Any]:
    hop = state.get("hop", 0) + 1
    return {"evidence": [f"d{hop}"], "hop": hop}


def answer(state: State) -> dict[str, Any]:
    return {"answer": "+".join(state["evidence"])}


builder = StateGraph(State)
builder.add_node("decide", decide)
builder.add_node("retrieve", retrieve)
builder.add_node("answer", answer)
builder.add_edge(START, "decide")
builder.add_conditional_edges("decide", lambda s: "retrieve" if s.get("hop", 0) < 3 else "answer")
builder.add_edge("retrieve", "decide")
builder.add_edge("answer", END)
graph = builder.compile(checkpointer=SqliteSaver(sqlite3.connect(CHECKPOINTS, check_same_thread=False)))
"""


@pytest.fixture
def recorded(tmp_path: Path) -> dict[str, Any]:
    checkpoints, store_path = tmp_path / "checkpoints.db", tmp_path / "runs.db"
    agent = tmp_path / "agent.py"
    agent.write_text(f"CHECKPOINTS = {str(checkpoints)!r}\n" + textwrap.dedent(GRAPH))
    with SqliteSpanStore(store_path) as store:
        graph = instrument(load_graph(f"{agent}:graph"), store=store, hop_nodes=["retrieve"])  # type: ignore[arg-type]
        graph.invoke({"hop": 0}, {"configurable": {"thread_id": "t"}})
        run_id = graph.last_run_id
        graph.shutdown()
    return {"agent": agent, "store": str(store_path), "checkpoints": checkpoints, "run_id": run_id}


def _threads(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ('{"evidence": 5}', "reducer add refused it"),
        ('{"hop": "x"}', "'hop' does not fit its type: hop must be int, got str 'x'"),
        ('{"evidence": [1]}', "evidence[0] must be str, got int 1"),
    ],
)
def test_a_bad_set_value_is_refused_before_any_fork(
    recorded: dict[str, Any], capsys: Any, values: str, message: str
) -> None:
    argv = ["replay", recorded["run_id"], "--graph", f"{recorded['agent']}:graph", "--hop", "2"]
    argv += ["--node", "retrieve", "--set", values, "--store", recorded["store"]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "nothing was forked" in err
    with SqliteSpanStore(recorded["store"]) as store:
        assert [r.run_id for r in store.list_runs(limit=None)] == [recorded["run_id"]]  # no errored fork run
    assert _threads(recorded["checkpoints"]) == {"t"}  # no fork thread


def test_a_good_set_value_still_forks(recorded: dict[str, Any]) -> None:
    argv = ["replay", recorded["run_id"], "--graph", f"{recorded['agent']}:graph", "--hop", "2"]
    argv += ["--node", "retrieve", "--set", '{"evidence": ["ok"]}', "--store", recorded["store"], "--json"]
    assert main(argv) == 0
    assert len(_threads(recorded["checkpoints"])) == 2

"""A user's own small agent, written as files the way a user keeps one (``agent.py`` importing a
sibling module), recorded with ``instrument(graph, store=path)`` and a ``SqliteSaver``.

The graph looks up capitals with a LangChain tool, one tool call per country (so one hop per
country), and answers "X and Y". Runs: one correct against its reference, one wrong against its
reference, one without a reference.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from causal_middleware import instrument

SIBLING = """
CAPITALS = {"france": "Paris", "spain": "Madrid", "italy": "Rome"}


def normalise(name: str) -> str:
    return name.strip().strip("?.,").lower()
"""

AGENT = """
import sqlite3
from typing import Any, TypedDict

from capitals_data import CAPITALS, normalise  # a sibling module of this file
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    question: str
    countries: list[str]
    capitals: list[str]
    answer: str


@tool
def lookup(country: str) -> str:
    \"\"\"The capital of a country.\"\"\"
    return CAPITALS.get(normalise(country), "unknown")


def plan(state: State) -> dict[str, Any]:
    words = state["question"].replace("?", "").split()
    return {"countries": [w for w in words if normalise(w) in CAPITALS], "capitals": []}


def fetch(state: State) -> dict[str, Any]:
    done = state.get("capitals", [])
    return {"capitals": [*done, lookup.invoke({"country": state["countries"][len(done)]})]}


def answer(state: State) -> dict[str, Any]:
    return {"answer": " and ".join(state["capitals"])}


def build() -> Any:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("fetch", fetch)
    builder.add_node("answer", answer)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "fetch")
    builder.add_conditional_edges(
        "fetch", lambda s: "fetch" if len(s["capitals"]) < len(s["countries"]) else "answer"
    )
    builder.add_edge("answer", END)
    saver = SqliteSaver(sqlite3.connect(CHECKPOINTS, check_same_thread=False))
    return builder.compile(checkpointer=saver, name="capitals")


graph = build()
"""


@pytest.fixture(autouse=True)
def _no_otlp_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's OTLP environment must not make tests export anywhere."""
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _restore_imports(tmp_path: Path) -> Iterator[None]:
    """Each test's user files import afresh: drop the modules they loaded and the folders the
    loader put on ``sys.path``."""
    path_before = list(sys.path)
    yield
    sys.path[:] = path_before
    root = str(tmp_path)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if name.startswith("_causal_user_") or file.startswith(root):
            del sys.modules[name]


@pytest.fixture
def user_agent(tmp_path: Path) -> Path:
    """``agent.py`` (and its sibling ``capitals_data.py``) in a folder of its own."""
    folder = tmp_path / "my_agent"
    folder.mkdir()
    (folder / "capitals_data.py").write_text(textwrap.dedent(SIBLING))
    checkpoints = tmp_path / "checkpoints.db"
    (folder / "agent.py").write_text(f"CHECKPOINTS = {str(checkpoints)!r}\n" + textwrap.dedent(AGENT))
    return folder / "agent.py"


@pytest.fixture
def recorded(user_agent: Path, tmp_path: Path) -> dict[str, Any]:
    """The store path and the ids of three recorded runs: ``right`` and ``wrong`` (both with the
    reference "Paris and Madrid") and ``plain`` (no reference)."""
    from causal_middleware.integrations.langgraph.replayer import load_graph

    store = tmp_path / "runs.db"
    graph = instrument(load_graph(f"{user_agent}:graph"), store=str(store))
    ids: dict[str, Any] = {"store": str(store), "agent": user_agent}
    try:
        for key, question, reference in (
            ("right", "Capitals of France and Spain?", "Paris and Madrid"),
            ("wrong", "Capitals of France and Italy?", "Paris and Madrid"),
            ("plain", "Capitals of Spain and Italy?", None),
        ):
            config: dict[str, Any] = {"configurable": {"thread_id": key}}
            if reference is not None:
                config["metadata"] = {"causal_reference": reference}
            graph.invoke({"question": question}, config)
            ids[key] = graph.last_run_id
    finally:
        graph.shutdown()
    return ids

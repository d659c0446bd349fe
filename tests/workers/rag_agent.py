"""The README's agent (examples/my_rag_agent.py: plan -> retrieve -> read, twice, over a corpus
whose keyword-stuffed page makes the run fail) with its checkpoints in Postgres, as a deployed
agent and its workers would share them.

``CAUSAL_TEST_CHECKPOINTS``: the checkpointer's database URL. ``CAUSAL_TEST_STALL_FILE``: when
set (in a worker under test only), ``retrieve`` writes its pid there and sleeps, so the test can
SIGKILL the worker mid-repair.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

_spec = importlib.util.spec_from_file_location(
    "_example_my_rag_agent", Path(__file__).resolve().parents[2] / "examples" / "my_rag_agent.py"
)
assert _spec is not None and _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _example  # pydantic resolves the retriever's annotations through it
# the example compiles its own graph on import: keep its checkpoints in memory, and only for the
# import (a process-wide setting would leak into every subprocess the other tests start)
_saved = os.environ.get("MY_AGENT_CHECKPOINTS")
os.environ["MY_AGENT_CHECKPOINTS"] = ":memory:"
try:
    _spec.loader.exec_module(_example)
finally:
    if _saved is None:
        del os.environ["MY_AGENT_CHECKPOINTS"]
    else:
        os.environ["MY_AGENT_CHECKPOINTS"] = _saved

State = _example.State
retriever = _example.retriever
QUESTION = "Which river flows through Marie Curie's birthplace?"


def retrieve(state: Any) -> Any:
    stall = os.environ.get("CAUSAL_TEST_STALL_FILE")
    if stall:
        Path(stall).write_text(str(os.getpid()))
        time.sleep(600)
    notes = state.get("notes") or []
    return {"docs": retriever.invoke(state["plan"][len(notes)].format(*notes))}


def build(url: str) -> Any:
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=4,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    saver = PostgresSaver(pool)  # type: ignore[arg-type]
    saver.setup()
    return _compile(saver)


def build_in_memory() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    return _compile(InMemorySaver())


def _compile(saver: Any) -> Any:
    g = StateGraph(State)
    for name, fn in [
        ("plan", _example.plan),
        ("retrieve", retrieve),
        ("read", _example.read),
        ("answer", _example.answer),
    ]:
        g.add_node(name, fn)
    g.add_edge(START, "plan")
    g.add_edge("plan", "retrieve")
    g.add_edge("retrieve", "read")
    g.add_conditional_edges("read", lambda s: "answer" if len(s["notes"]) >= 2 else "retrieve")
    g.add_edge("answer", END)
    return g.compile(checkpointer=saver, name="my_rag_agent")


graph = build(os.environ["CAUSAL_TEST_CHECKPOINTS"]) if os.environ.get("CAUSAL_TEST_CHECKPOINTS") else None

"""The agent whose failed runs the queue benchmark repairs: the README's example
(``examples/my_rag_agent.py``, a keyword-stuffed page makes every run answer "Seine" instead of
"Vistula") with its checkpoints in Postgres, as replicas and workers share them in a deployment.

``graph`` is built from ``$CAUSAL_SCALE_CHECKPOINTS`` (a ``postgresql://`` URL) when it is set:
``causal-mw worker --graph benchmarks/scale/agent.py:graph`` loads it that way.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

QUESTION = "Which river flows through Marie Curie's birthplace?"
_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_rag_agent.py"


def _example() -> Any:
    name = "_causal_scale_my_rag_agent"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the retriever's annotations through it
    saved = os.environ.get("MY_AGENT_CHECKPOINTS")
    os.environ["MY_AGENT_CHECKPOINTS"] = ":memory:"  # for the example's import only: never leak it
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del os.environ["MY_AGENT_CHECKPOINTS"]
        else:
            os.environ["MY_AGENT_CHECKPOINTS"] = saved
    return module


def build(url: str) -> Any:
    """The example's graph, recompiled on a PostgresSaver at ``url``."""
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=4,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    pool.open()
    saver = PostgresSaver(pool)  # type: ignore[arg-type]
    saver.setup()
    return _example().graph.builder.compile(checkpointer=saver, name="my_rag_agent")


graph = build(os.environ["CAUSAL_SCALE_CHECKPOINTS"]) if os.environ.get("CAUSAL_SCALE_CHECKPOINTS") else None

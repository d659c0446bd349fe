"""The reference agent on a small generated world, as a module the CLI can load with
``--graph tests/attribution/reference_world.py:graph`` (and ``--index ...:index``).

The graph keeps its checkpoints in memory: a fork works from the process that made the run, which
is how the test drives the CLI (in-process; the loader caches the module by path).
"""

from __future__ import annotations

from benchmarks.reference_agent import build_world_agent, make_index
from benchmarks.world.generator import generate_world
from causal_middleware.retrieval.langchain import IndexRetriever

dataset = generate_world(12, seed=0)
index = make_index("bm25", dataset)
graph = build_world_agent(dataset, retriever=IndexRetriever(index=index, k=5))

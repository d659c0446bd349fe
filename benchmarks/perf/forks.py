"""What a fork costs against a fresh run, on graph (b) (:mod:`benchmarks.perf.graphs`: the 3-hop
loop with an ``InMemorySaver`` checkpointer) instrumented with the default SQLite store.

Each figure is the caller's latency (``invoke`` / ``fork`` until it returns; the background writer
then drains, untimed, before the next call), as the overhead bench measures ``invoke``; the
``*_drained`` figures time the same calls until the writer has written what they produced.

Per round, interleaved: a fresh run, a ``regenerate``
fork at hop 1 (the whole suffix runs live), a ``frozen`` fork at hop 1 (later nodes return their
recorded outputs; the answer node runs), and a ``replay`` fork at the last hop (nothing executes:
the fork's fixed cost - reading the parent, copying its branch, writing the fork, recording it,
reading it back stitched). Each fork puts the step's recorded output back, so it does the
run's own work. ``read_fork_ms``: reading a fork again (``get_trajectory``, what diagnosers do
many times per fork).

``frozen_hop1_direct`` (``after`` only): the same frozen fork with ``Replayer.frozen_direct`` (the
leading frozen supersteps written with ``update_state`` instead of LangGraph's loop), interleaved,
so ``frozen_direct_vs_loop`` compares the two paths in one process.

``before`` repeats the forks with the store of git ``HEAD`` (when the checkout has one) in the
same process, interleaved, so the ratios compare code, not machine load.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from causal_middleware.integrations.langgraph.instrument import instrument
from causal_middleware.integrations.langgraph.replayer import Replayer
from langgraph.checkpoint.memory import InMemorySaver

from causal_middleware.store.sqlite import SqliteSpanStore

from .graphs import build_chain_graph, chain_input
from .redaction import STORE_COMPANIONS, head_module

HOPS = 3


class _Setup:
    def __init__(self, store: Any) -> None:
        self.store = store
        self.graph = instrument(build_chain_graph(HOPS, checkpointer=InMemorySaver()), store=store)
        self.replayer = Replayer(self.graph)
        self.counter = 0
        self.parent = self.fresh()

    def fresh(self) -> str:
        self.counter += 1
        self.graph.invoke(chain_input(HOPS), {"configurable": {"thread_id": f"perf-{self.counter}"}})
        run_id = self.graph.last_run_id
        assert run_id is not None
        return run_id

    def fork(self, mode: str, hop: int, *, direct: bool = False) -> str:
        self.replayer.frozen_direct = direct
        try:
            fork = self.replayer.fork(self.parent, hop=hop, mode=mode)  # type: ignore[arg-type]
        finally:
            self.replayer.frozen_direct = False
        return fork.run_id

    def drain(self) -> None:
        self.graph.flush(30)

    def close(self) -> None:
        self.graph.shutdown()
        self.store.close()


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = work()
    return time.perf_counter() - start, out


def run(*, quick: bool = False, before_ref: str = "HEAD") -> dict[str, Any]:
    rounds = 8 if quick else 40
    folder = Path(tempfile.mkdtemp(prefix="perf-forks-"))
    head = head_module(
        "causal_middleware/store/sqlite.py",
        "causal_middleware.store._sqlite_head_forks",
        before_ref,
        companions=STORE_COMPANIONS,
    )
    setups = {"after": _Setup(SqliteSpanStore(folder / "after.db"))}
    if head is not None:
        setups["before"] = _Setup(head.SqliteSpanStore(folder / "before.db"))
    work: dict[str, Callable[[_Setup], Any]] = {
        "fresh_run": lambda s: s.fresh(),
        "regenerate_hop1": lambda s: s.fork("regenerate", 1),
        "frozen_hop1": lambda s: s.fork("frozen", 1),
        "replay_last_hop": lambda s: s.fork("replay", HOPS),
        # the opt-in frozen path: leading frozen supersteps written with update_state
        "frozen_hop1_direct": lambda s: s.fork("frozen", 1, direct=True),
    }
    keys = [*work, *(f"{k}_drained" for k in work), "read_fork"]
    times: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in setups}
    try:
        for i in range(rounds + 2):
            for name, setup in setups.items():
                for key, job in work.items():
                    if key == "frozen_hop1_direct" and name != "after":
                        continue
                    elapsed, made = _timed(lambda: job(setup))  # noqa: B023
                    drained, _ = _timed(setup.drain)
                    if i >= 2:
                        times[name][key].append(elapsed)
                        times[name][f"{key}_drained"].append(elapsed + drained)
                    if key == "frozen_hop1" and i >= 2:
                        reads = [_timed(lambda: setup.store.get_trajectory(made))[0] for _ in range(3)]  # noqa: B023
                        times[name]["read_fork"].append(statistics.median(reads))
    finally:
        for setup in setups.values():
            setup.close()
    out: dict[str, Any] = {
        "rounds": rounds,
        "hops": HOPS,
        "store": "SqliteSpanStore",
        "before_ref": before_ref if head is not None else None,
    }
    for name in setups:
        med = {k: statistics.median(v) * 1e3 for k, v in times[name].items() if v}
        fresh = med["fresh_run"]
        out[name] = {
            "fresh_run_ms": round(fresh, 2),
            "fork_fixed_cost_ms": round(med["replay_last_hop"], 2),
            "regenerate_hop1_ms": round(med["regenerate_hop1"], 2),
            "frozen_hop1_ms": round(med["frozen_hop1"], 2),
            "regenerate_hop1_x_fresh": round(med["regenerate_hop1"] / fresh, 2),
            "frozen_hop1_x_fresh": round(med["frozen_hop1"] / fresh, 2),
            "read_fork_ms": round(med["read_fork"], 3),
            # the same, until the background writer has also written what the call produced
            "fresh_run_drained_ms": round(med["fresh_run_drained"], 2),
            "fork_fixed_cost_drained_ms": round(med["replay_last_hop_drained"], 2),
            "regenerate_hop1_drained_x_fresh": round(
                med["regenerate_hop1_drained"] / med["fresh_run_drained"], 2
            ),
            "frozen_hop1_drained_x_fresh": round(med["frozen_hop1_drained"] / med["fresh_run_drained"], 2),
        }
        if times[name]["frozen_hop1_direct"]:
            direct = med["frozen_hop1_direct"]
            out[name]["frozen_hop1_direct_ms"] = round(direct, 2)
            out[name]["frozen_hop1_direct_x_fresh"] = round(direct / fresh, 2)
            out[name]["frozen_direct_vs_loop"] = round(direct / med["frozen_hop1"], 3)
    if "before" in out:
        out["speedup"] = {
            k: round(out["before"][k] / out["after"][k], 2)
            for k in ("fork_fixed_cost_ms", "regenerate_hop1_ms", "frozen_hop1_ms", "read_fork_ms")
            if out["after"][k]
        }
    return out

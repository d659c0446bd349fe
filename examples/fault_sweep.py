"""Inject known faults into a live agent and see whether it recovers (offline, a few seconds).

Runs two three-hop questions of a generated world on the instrumented reference agent, then forks
each correct run at hop 2 with three fault families (the suffix re-executes live), and prints the
certified labels and the recovery table. Everything is kept in an in-memory span store.

    python examples/fault_sweep.py
"""

from __future__ import annotations

from rich.console import Console

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.faults.report import build_report, print_report
from causal_middleware.faults.sweep import iter_units, run_sweep
from causal_middleware.store.memory import InMemorySpanStore


def main() -> None:
    world = generate_world(2, seed=1, hop_mix={3: 1.0})
    env = reference_sweep_environment(world, store=InMemorySpanStore(), seed=1)
    try:
        result = run_sweep(
            env,
            depths=[2],
            families=["empty_retrieval", "false_premise", "content_corruption"],
            seed=1,
        )
        console = Console()
        console.print(f"{result.units} units, {result.statuses}, base runs correct: {result.base_correct}")
        for base, faulted, label, recovered, content, question in iter_units(env.store):
            console.print(
                f"[bold]{question.id}[/] {label.family} at hop {label.injected_hop} ({label.stage}): "
                f"{label.detail}\n    base answered {base.answer!r}, fork {faulted.run_id[:8]} answered "
                f"{faulted.answer!r} -> {'recovered' if recovered else 'failed'}"
                + (f", {content}" if content else "")
            )
        print_report(build_report(result.records), console)
    finally:
        env.close()


if __name__ == "__main__":
    main()

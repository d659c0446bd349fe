"""``causal-mw bench agents|reference|reliability|perf|scale|whowhen|trail``: the benchmark suites that
live as ``python -m benchmarks.X`` programs, reachable from the CLI with the same arguments."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import Any

# name -> (module exposing main(argv) -> int, help)
SUITES: dict[str, tuple[str, str]] = {
    "agents": ("benchmarks.agents.__main__", "adapter-free diagnosis and repair on agents of five shapes"),
    "reference": ("benchmarks.agents.reference", "the reference agent with and without its adapter"),
    "reliability": (
        "benchmarks.reliability.__main__",
        "store crashes, secrets, prompt injection, bad imports",
    ),
    "perf": ("benchmarks.perf.__main__", "instrumentation overhead, store at scale, fork cost (JSON)"),
    "scale": ("benchmarks.scale.__main__", "Postgres ingest from several writers, queue throughput"),
    "whowhen": ("benchmarks.foreign.whowhen", "Who&When agent / step accuracy beside published baselines"),
    "trail": ("benchmarks.foreign.trail", "TRAIL location / category / joint beside baselines"),
}


def register(sub: Any) -> None:
    for name, (module, help_text) in SUITES.items():
        p = sub.add_parser(name, help=help_text, add_help=False, prefix_chars="\0")
        p.add_argument("args", nargs=argparse.REMAINDER, help=f"arguments of python -m {module}")
        p.set_defaults(func=_delegate(module))


def _delegate(module: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        main: Callable[[Sequence[str] | None], int] = importlib.import_module(module).main
        return int(main(list(args.args)) or 0)

    return run

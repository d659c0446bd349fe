"""``causal-mw bench``: the benchmarks. Each benchmark module exposes ``register_bench(subparsers)``.

Created by the context-debugging helper with its one subcommand (``bench context``); other
benchmarks add their ``register_bench`` module to ``BENCH_MODULES``.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

# Modules exposing register_bench(bench_subparsers), in help order; missing ones are skipped.
BENCH_MODULES = (
    "causal_middleware.context.bench",
    "causal_middleware.cli.replay",
    "causal_middleware.cli.repair",
)


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser("bench", help="run the benchmarks")
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCHMARK")
    sub.required = True
    for name in BENCH_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register_bench(sub)

"""The benchmark package's ``causal-mw`` commands, registered through the
``causal_middleware.commands`` entry point (see ``causal_middleware/cli/plugins.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["register"]


def register(subparsers: Any, groups: Mapping[str, Any]) -> None:
    from benchmarks.cli import bench, context_simulate, demo, inject

    demo.register(subparsers)
    inject.register(subparsers)
    bench.register(subparsers)
    if "context" in groups:
        context_simulate.register(groups["context"])

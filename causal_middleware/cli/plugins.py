"""Commands and agents other installed packages add to ``causal-mw``, found through entry points.

Two entry-point groups, read once per process (a broken plugin is reported on stderr and skipped,
never fatal):

- ``causal_middleware.commands``: ``register(subparsers, groups)`` adds top-level commands, or
  subcommands to a core group (``groups["context"]`` is the ``context`` group's subparsers).
- ``causal_middleware.agents``: an :class:`AgentProvider` that rebuilds the live agent of a run
  recorded without ``--graph`` (the benchmark package's demo agent is one).

The benchmark package (``benchmarks/``, installed by ``make``) registers ``bench``, ``demo``,
``inject``, ``context simulate`` and the demo's agent this way; ``pip install causal-middleware``
alone has none of them.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager as ContextManager
from importlib.metadata import entry_points
from typing import Any, Protocol

from causal_middleware.cli.live_agent import LiveAgent
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.base import SpanStore

COMMANDS_GROUP = "causal_middleware.commands"
AGENTS_GROUP = "causal_middleware.agents"

RegisterCommands = Callable[[Any, Mapping[str, Any]], None]


class AgentProvider(Protocol):
    """Rebuilds the live agent of runs it recognises (for ``repair`` without ``--graph``)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of its own on the commands that use it (``repair``)."""
        ...

    def open(
        self, args: argparse.Namespace, store: SpanStore, trajectory: Trajectory
    ) -> ContextManager[tuple[LiveAgent, list[str]]] | None:
        """The run's agent and its answer's aliases, or None when the run is not one of its agents'."""
        ...


def _load(group: str) -> list[tuple[str, object]]:
    loaded: list[tuple[str, object]] = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            loaded.append((ep.name, ep.load()))
        except Exception as exc:  # a broken plugin must not take the CLI down
            print(
                f"causal-mw: warning: plugin {ep.name!r} ({ep.value}) failed to load: {exc}", file=sys.stderr
            )
    return loaded


def register_commands(subparsers: Any, groups: Mapping[str, Any]) -> None:
    for name, register in _load(COMMANDS_GROUP):
        try:
            register(subparsers, groups)  # type: ignore[operator]
        except Exception as exc:
            print(f"causal-mw: warning: plugin {name!r} failed to register: {exc}", file=sys.stderr)


def agent_providers() -> list[AgentProvider]:
    return [provider for _, provider in _load(AGENTS_GROUP)]  # type: ignore[misc]


@contextlib.contextmanager
def provided_agent(
    args: argparse.Namespace, store: SpanStore, trajectory: Trajectory
) -> Iterator[tuple[LiveAgent, list[str]]]:
    """The live agent an installed provider rebuilds for ``trajectory``; ValueError naming ``--graph``
    when none recognises the run."""
    for provider in agent_providers():
        opened = provider.open(args, store, trajectory)
        if opened is not None:
            with opened as agent:
                yield agent
            return
    graph = trajectory.graph or "an unnamed graph"
    raise ValueError(
        f"run {trajectory.run_id} was recorded by {graph}; pass --graph path/to/file.py:graph "
        "(the graph with the checkpointer that holds the run's checkpoints)"
    )

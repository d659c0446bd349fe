"""What every zoo agent gives the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AgentUnderTest:
    """A compiled graph (with a checkpointer) built over one task's world, its input, and the
    world changes that happen after the run (``after_run``: e.g. a stale table row refreshed)."""

    graph: Any
    inputs: dict[str, Any]
    after_run: Callable[[], None] = field(default=lambda: None)

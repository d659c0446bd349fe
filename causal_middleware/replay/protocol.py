"""What the core needs from a live agent, as a protocol.

Diagnosers and repairers that probe by intervention (frozen-hop repair, suffix regeneration,
Causal Responsibility Scores, CausalFlow repair) call a :class:`ForkBackend`; the LangGraph
replayer in ``causal_middleware.integrations.langgraph`` implements it. The core never imports
the integration, so passive diagnosers also run on imported traces with no backend at all.

A backend that can also free what a fork keeps in the agent's checkpointer implements the
optional :class:`DiscardingForkBackend` (repair uses it to drop its probe forks); check with
``isinstance(backend, DiscardingForkBackend)``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from causal_middleware.spans.model import Trajectory

SuffixMode = Literal["regenerate", "frozen", "replay"]


@runtime_checkable
class ForkBackend(Protocol):
    def fork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Any = None,
        mode: SuffixMode = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
    ) -> Trajectory:
        """Fork ``run_id`` before the given step, replace its output, run the suffix; return the fork."""
        ...


@runtime_checkable
class AsyncForkBackend(Protocol):
    async def afork(
        self,
        run_id: str,
        *,
        hop: int | None = None,
        node: str | None = None,
        step: int | None = None,
        values: dict[str, Any] | None = None,
        update: Any = None,
        mode: SuffixMode = "regenerate",
        rerun: list[str] | None = None,
        allow_side_effects: bool = False,
        intervention_kind: str = "replace",
        labels: dict[str, Any] | None = None,
    ) -> Trajectory: ...


@runtime_checkable
class DiscardingForkBackend(Protocol):
    """Optional capability of a :class:`ForkBackend`: discard a fork it made."""

    def discard_fork(self, run_id: str) -> bool:
        """Free what the fork ``run_id`` keeps in the agent's checkpointer (its fork thread); its
        spans stay in the store. True when something was deleted, False when there was nothing to
        delete (already discarded) or the checkpointer cannot delete. Raises ``ValueError`` for a
        run that is not a fork this backend may discard (e.g. a user's own run)."""
        ...

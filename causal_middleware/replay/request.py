"""A fork request as data, for ``fork_many`` / ``afork_many`` and for anything that queues forks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SuffixMode = Literal["regenerate", "frozen", "replay"]


class ForkRequest(BaseModel):
    """The arguments of one ``Replayer.fork`` call.

    Name the fork point with ``hop`` and/or ``node``, or with ``step`` (the ``langgraph_step``).
    ``values`` overrides keys of the step's recorded output; ``update`` is a function of the
    recorded output returning the new one; give at most one of them (neither: the recorded output
    is put back unchanged, which re-runs the suffix from that step).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    run_id: str
    hop: int | None = Field(default=None, ge=1)
    node: str | None = None
    step: int | None = Field(default=None, ge=0)
    values: dict[str, Any] | None = None
    update: Callable[[Any], Any] | None = None
    mode: SuffixMode = "regenerate"
    rerun: list[str] | None = None
    allow_side_effects: bool = False
    intervention_kind: str = "replace"
    labels: dict[str, Any] | None = None
    overwrite: list[str] = Field(
        default_factory=list,
        description="state keys whose whole accumulated value the new output replaces (reducers bypassed)",
    )

    @model_validator(mode="after")
    def _check(self) -> ForkRequest:
        if self.hop is None and self.node is None and self.step is None:
            raise ValueError("a fork needs a fork point: give hop=, node= or step=")
        if self.values is not None and self.update is not None:
            raise ValueError("give either values= or update=, not both")
        return self

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``Replayer.fork`` (everything but ``run_id``)."""
        return {name: getattr(self, name) for name in type(self).model_fields if name != "run_id"}


class ForkPoint(BaseModel):
    """Where a fork branches off: the node step and the checkpoint it ran from (``Replayer.locate``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str
    thread_id: str
    node: str
    langgraph_step: int
    hop: int | None = None
    checkpoint_id: str = Field(description="the root-graph checkpoint the node ran from")
    step_id: str = Field(description="the node step (span id) in the run's trajectory")
    recorded_output: Any = Field(default=None, description="what the node returned in the run (live objects)")

    @property
    def config(self) -> dict[str, Any]:
        """The LangGraph config addressing the fork checkpoint."""
        return {
            "configurable": {
                "thread_id": self.thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": self.checkpoint_id,
            }
        }

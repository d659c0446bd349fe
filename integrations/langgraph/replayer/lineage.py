"""Lineage and labels of a fork run: where it came from, what changed, how it was run.

The lineage travels to the instrumentation as ``config["metadata"]["causal_lineage"]`` (the fork's
run span gets ``causal.lineage.*`` and every span ``causal.run.counterfactual=true``) and is also
written to the store with ``annotate(lineage=...)``, so the store links the fork to its parent even
when spans went elsewhere first.
"""

from __future__ import annotations

import json
from typing import Any

from causal_middleware.replay.request import SuffixMode
from causal_middleware.spans.model import Intervention, Lineage

from ..extract import to_json
from ..handler import HOP_OFFSET_METADATA_KEY

__all__ = ["build_lineage", "jsonable", "run_metadata"]


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (messages, documents and models as the spans show them)."""
    return json.loads(to_json(value))


def build_lineage(
    *,
    parent_run_id: str,
    checkpoint_id: str,
    node: str,
    langgraph_step: int,
    hop: int | None,
    mode: SuffixMode,
    new_output: Any,
    kind: str,
    description: str | None = None,
) -> Lineage:
    """The :class:`Lineage` of a fork made before ``node`` at ``langgraph_step``."""
    values = jsonable(new_output) if new_output is not None else {}
    if not isinstance(values, dict):
        values = {"value": values}
    return Lineage(
        parent_run_id=parent_run_id,
        fork_checkpoint_id=checkpoint_id,
        fork_hop=hop,
        fork_node=node,
        fork_step=langgraph_step,
        mode=mode,
        intervention=Intervention(
            kind=kind,
            node=node,
            hop=hop,
            langgraph_step=langgraph_step,
            values=values,
            description=description,
        ),
    )


def run_metadata(lineage: Lineage, labels: dict[str, Any], reference: str | None) -> dict[str, Any]:
    """``config["metadata"]`` for the fork run (keys the instrumentation turns into run attributes).

    The hop offset makes the fork's own hops continue from the fork hop (own hop 1 = fork hop + 1).
    """
    metadata: dict[str, Any] = {
        "causal_lineage": lineage.model_dump(mode="json"),
        "causal_labels": labels,
        HOP_OFFSET_METADATA_KEY: lineage.fork_hop or 0,
    }
    if reference is not None:
        metadata["causal_reference"] = reference
    return metadata

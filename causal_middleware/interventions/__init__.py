"""Interventions derived from what a run recorded: where a step's values sit in its node's output
(:mod:`.locate`), edits that change them on live objects or JSON (:mod:`.edit`), and the generic
space of alternatives for any step (:mod:`.space`). Nothing here needs an agent adapter."""

from causal_middleware.interventions.edit import EditError, StepEdit, render_path, value_at
from causal_middleware.interventions.locate import (
    DocumentSlot,
    StepContents,
    TextLeaf,
    ToolSlot,
    step_contents,
)
from causal_middleware.interventions.space import Candidate, ToolRunner, step_interventions

__all__ = [
    "Candidate",
    "DocumentSlot",
    "EditError",
    "StepContents",
    "StepEdit",
    "TextLeaf",
    "ToolRunner",
    "ToolSlot",
    "render_path",
    "step_contents",
    "step_interventions",
    "value_at",
]

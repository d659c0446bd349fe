"""The whole Trace pipeline on one session: detect -> diagnose -> recommend."""

from __future__ import annotations

from typing import Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from causal_middleware.context.conversation import Conversation, align_to_workspace
from causal_middleware.context.detector import detect
from causal_middleware.context.recommendation import Recommendation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.recommender_llm import recommend_llm
from causal_middleware.context.root_cause import ContextDiagnosis, Method, diagnose
from causal_middleware.context.signals import Detection
from causal_middleware.context.workspace import Workspace


class ContextReport(BaseModel):
    session_id: str
    detection: Detection
    diagnosis: ContextDiagnosis | None = None
    recommendation: Recommendation | None = None


def debug_session(
    conversation: Conversation,
    workspace: Workspace | None = None,
    *,
    method: Method = "holistic",
    mode: Literal["offline", "llm"] = "offline",
    model: BaseChatModel | None = None,
    explore: bool = True,
    force: bool = False,
) -> ContextReport:
    """Detect; when the session escalates (or ``force``), diagnose; with a workspace, recommend
    (``mode="llm"``: every stage is the LLM form, the recommender :func:`recommend_llm`).

    With a workspace the session is first tied to its files (:func:`align_to_workspace`), so a
    user's own tools and layout (a workspace config) are read by content.

    Nothing is written anywhere: apply a recommendation with
    :func:`causal_middleware.context.apply.apply_recommendation`.
    """
    if workspace is not None:
        conversation = align_to_workspace(conversation, workspace)
    detection = detect(conversation, mode=mode, model=model)
    report = ContextReport(session_id=conversation.session_id, detection=detection)
    if not (detection.escalate or force):
        return report
    report.diagnosis = diagnose(
        conversation, detection, method=method, mode=mode, model=model, workspace=workspace
    )
    if workspace is not None and report.diagnosis.status == "ok":
        report.recommendation = (
            recommend_llm(conversation, report.diagnosis, workspace, model)
            if mode == "llm"
            else recommend(
                conversation, report.diagnosis, workspace, mode="explore" if explore else "passive"
            )
        )
    return report

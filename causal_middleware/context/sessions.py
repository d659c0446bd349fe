"""Sessions and context-debugging results in the span store.

A session is looked up by id as, in order: a ``context.session`` record (what the simulation
stores), the runs of a LangGraph thread (``store.list_runs(thread_id=...)``, oldest first, one
run per user turn), or a single run id. Detections, diagnoses and recommendations are kept as
``context.detection`` / ``context.diagnosis`` / ``context.recommendation`` records of the session.
"""

from __future__ import annotations

from typing import Any

from causal_middleware.context.conversation import Conversation, conversation_from_trajectories
from causal_middleware.context.recommendation import Recommendation
from causal_middleware.store.base import RunSummary, SpanStore

SESSION_KIND = "context.session"
DETECTION_KIND = "context.detection"
DIAGNOSIS_KIND = "context.diagnosis"
RECOMMENDATION_KIND = "context.recommendation"


def save_session(store: SpanStore, conversation: Conversation, **extra: Any) -> str:
    """Keep a conversation (plus any JSON-able extras, e.g. ground truth) as a session record."""
    payload = {"conversation": conversation.model_dump(mode="json"), **extra}
    return store.put_record(SESSION_KIND, conversation.session_id, payload)


def session_record(store: SpanStore, session_id: str) -> dict[str, Any] | None:
    records = store.get_records(SESSION_KIND, session_id)
    return records[-1] if records else None


def load_conversation(store: SpanStore, session_id: str) -> Conversation:
    """The session as a conversation (see the module docstring for the lookup order)."""
    record = session_record(store, session_id)
    if record is not None:
        return Conversation.model_validate(record["conversation"])
    ordered = thread_runs(store, session_id)
    if ordered:
        return conversation_from_trajectories(
            [store.get_trajectory(r.run_id) for r in ordered], session_id=session_id
        )
    try:
        traj = store.get_trajectory(session_id)
    except KeyError:
        raise KeyError(
            f"unknown session {session_id!r}: no context.session record, no runs with that thread_id, no such run"
        ) from None
    return conversation_from_trajectories([traj], session_id=traj.thread_id or session_id)


def thread_runs(store: SpanStore, thread_id: str) -> list[RunSummary]:
    """The runs recorded on ``thread_id``, oldest first (runs without a start time last, ties by id)."""
    runs = store.list_runs(thread_id=thread_id, limit=None)
    return sorted(runs, key=lambda r: (r.started_at is None, r.started_at or 0, r.run_id))


def list_sessions(store: SpanStore) -> list[str]:
    """Ids of the sessions kept as records (simulated or imported), oldest first, deduplicated."""
    seen: dict[str, None] = {}
    for rec in store.get_records(SESSION_KIND):
        seen[rec["conversation"]["session_id"]] = None
    return list(seen)


def save_recommendation(store: SpanStore, recommendation: Recommendation) -> str:
    return store.put_record(
        RECOMMENDATION_KIND, recommendation.session_id, recommendation.model_dump(mode="json")
    )


def find_recommendation(store: SpanStore, recommendation_id: str) -> Recommendation:
    """A stored recommendation by id (or an unambiguous prefix of it)."""
    matches = {}
    for rec in store.get_records(RECOMMENDATION_KIND):
        rid = str(rec.get("id", ""))
        if rid == recommendation_id:
            return Recommendation.model_validate(rec)
        if recommendation_id and rid.startswith(recommendation_id):
            matches[rid] = rec
    if len(matches) == 1:
        return Recommendation.model_validate(next(iter(matches.values())))
    if len(matches) > 1:
        raise ValueError(
            f"recommendation id prefix {recommendation_id!r} is ambiguous: {', '.join(sorted(matches))}"
        )
    raise KeyError(
        f"unknown recommendation {recommendation_id!r}; run 'causal-mw context recommend SESSION_ID' first"
    )

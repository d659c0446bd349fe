"""Dissatisfaction signals, their weights, and the detector's result model."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class SignalType(StrEnum):
    CORRECTION = "CORRECTION"
    CONVERSATIONAL_REPAIR = "CONVERSATIONAL_REPAIR"
    TOOL_EXECUTION_ERROR = "TOOL_EXECUTION_ERROR"
    CLARIFICATION_REQUEST = "CLARIFICATION_REQUEST"
    NEGATIVE_SENTIMENT = "NEGATIVE_SENTIMENT"
    REPETITION = "REPETITION"
    SEMANTIC_DRIFT = "SEMANTIC_DRIFT"
    SESSION_ABANDONMENT = "SESSION_ABANDONMENT"
    EXPLICIT_FEEDBACK = "EXPLICIT_FEEDBACK"


# c = max(w_s * conf_s): system signals and corrections 1.0; repair, clarification, repetition 0.8;
# sentiment, drift, abandonment 0.5.
SIGNAL_WEIGHTS: dict[SignalType, float] = {
    SignalType.CORRECTION: 1.0,
    SignalType.TOOL_EXECUTION_ERROR: 1.0,
    SignalType.EXPLICIT_FEEDBACK: 1.0,
    SignalType.CONVERSATIONAL_REPAIR: 0.8,
    SignalType.CLARIFICATION_REQUEST: 0.8,
    SignalType.REPETITION: 0.8,
    SignalType.NEGATIVE_SENTIMENT: 0.5,
    SignalType.SEMANTIC_DRIFT: 0.5,
    SignalType.SESSION_ABANDONMENT: 0.5,
}
# Signals the system itself emits (not inferred from user language): any one of them escalates.
SYSTEM_SIGNALS = frozenset({SignalType.TOOL_EXECUTION_ERROR, SignalType.EXPLICIT_FEEDBACK})
ESCALATION_THRESHOLD = 0.7


class Signal(BaseModel):
    """One piece of evidence that the user was not served well."""

    type: SignalType
    turn: int = Field(description="turn index of the node the signal was found in")
    node_id: str | None = None
    evidence: str = Field(description="quote from the session")
    confidence: float = Field(ge=0.0, le=1.0)

    @property
    def weighted(self) -> float:
        return SIGNAL_WEIGHTS[self.type] * self.confidence


class Detection(BaseModel):
    """The detector's verdict on one session."""

    session_id: str
    mode: Literal["offline", "llm"] = "offline"
    status: Literal["ok", "not_run"] = "ok"
    reason: str | None = Field(default=None, description="why the detector did not run, when it did not")
    signals: list[Signal] = Field(default_factory=list)
    confidence: float = 0.0
    escalate: bool = False
    calls: int = Field(default=0, description="model calls made (0 for the offline form)")

    @classmethod
    def from_signals(
        cls,
        session_id: str,
        signals: list[Signal],
        *,
        mode: Literal["offline", "llm"] = "offline",
        calls: int = 0,
    ) -> Detection:
        """Combine signals: c = max(w_s x conf_s); escalate when c >= 0.7 or any system signal."""
        c = max((s.weighted for s in signals), default=0.0)
        system = any(s.type in SYSTEM_SIGNALS for s in signals)
        return cls(
            session_id=session_id,
            mode=mode,
            signals=signals,
            confidence=round(c, 4),
            escalate=system or c >= ESCALATION_THRESHOLD,
            calls=calls,
        )

    def first(self, *types: SignalType) -> Signal | None:
        """The earliest signal of the given types (any type when none given)."""
        pool = [s for s in self.signals if not types or s.type in types]
        return min(pool, key=lambda s: s.turn) if pool else None

"""Question and corpus models shared by the generated world and the real-dataset loaders.

MuSiQue and HotpotQA items load into these same models, so the agent, retrievers, fault
injection and benchmarks never care where a question came from.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field


class Passage(BaseModel):
    """One retrievable passage. ``id`` is unique within its corpus."""

    id: str
    title: str = ""
    text: str
    date: dt.date | None = Field(default=None, description="when the fact was stated, for dated facts")
    metadata: dict[str, Any] = Field(default_factory=dict)


class HopGold(BaseModel):
    """The gold single-hop question at one position of a decomposition."""

    index: int = Field(ge=1)
    question: str = Field(description="natural-language sub-question; '#k' refers to hop k's answer")
    answer: str
    aliases: list[str] = Field(default_factory=list)
    bridge_entity: str | None = Field(default=None, description="entity carried into the next hop")
    supporting_passage_ids: list[str] = Field(default_factory=list)
    relation: str | None = None


class Question(BaseModel):
    id: str
    text: str
    answer: str
    aliases: list[str] = Field(default_factory=list)
    hops: list[HopGold] = Field(default_factory=list)
    dataset: Literal["world", "musique", "hotpotqa"] = "world"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def n_hops(self) -> int:
        return len(self.hops)

    @property
    def supporting_passage_ids(self) -> list[str]:
        return [pid for h in self.hops for pid in h.supporting_passage_ids]


class Dataset(BaseModel):
    """A corpus with the questions asked over it."""

    name: str
    passages: list[Passage]
    questions: list[Question]
    seed: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def passage_map(self) -> dict[str, Passage]:
        return {p.id: p for p in self.passages}

"""Question and corpus models shared by the generated world and the real-dataset loaders.

MuSiQue and HotpotQA items load into these same models, so the agent, retrievers, fault
injection and benchmarks never care where a question came from.
"""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path
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

    def save(self, path: str | Path) -> Path:
        """Write the dataset as JSON (gzip-compressed when ``path`` ends in ``.gz``); returns the path."""
        path = Path(path)
        data = self.model_dump_json().encode("utf-8")
        if path.suffix == ".gz":
            data = gzip.compress(data, mtime=0)
        path.write_bytes(data)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Dataset:
        """Read a dataset written by :meth:`save`. A malformed file raises ValueError naming it."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no dataset file at {path}")
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        try:
            return cls.model_validate_json(raw)
        except ValueError as exc:
            raise ValueError(f"{path} is not a valid Dataset JSON file: {exc}") from exc

"""Diagnosers by name: ``get_diagnoser("path_aware", audit=False)``, ``available()``.

Names: ``rule``, ``coverage``, ``llm_judge``, ``frozen_hop``, ``suffix_regen``, ``holistic``,
``holistic_llm``, ``iterative``, ``iterative_llm``, ``crs``, ``path_aware``, ``information_flow``, ``decisive_step``, ``all_at_once``. Register another
with :func:`register` (a :class:`~causal_middleware.attribution.base.Diagnoser` subclass).
"""

from __future__ import annotations

from typing import Any

from causal_middleware.attribution.all_at_once import AllAtOnceDiagnoser
from causal_middleware.attribution.base import Diagnoser
from causal_middleware.attribution.coverage import CoverageDiagnoser
from causal_middleware.attribution.crs import CRSDiagnoser
from causal_middleware.attribution.decisive_step import DecisiveStepDiagnoser
from causal_middleware.attribution.frozen_hop import FrozenHopDiagnoser
from causal_middleware.attribution.holistic import HolisticDiagnoser, HolisticLLMDiagnoser
from causal_middleware.attribution.information_flow import InformationFlowDiagnoser
from causal_middleware.attribution.iterative import IterativeDiagnoser, IterativeLLMDiagnoser
from causal_middleware.attribution.llm_judge import LLMJudgeDiagnoser
from causal_middleware.attribution.path_aware import PathAwareDiagnoser
from causal_middleware.attribution.rule import RuleDiagnoser
from causal_middleware.attribution.suffix_regen import SuffixRegenDiagnoser

DIAGNOSERS: dict[str, type[Diagnoser]] = {}


def register(cls: type[Diagnoser]) -> type[Diagnoser]:
    """Add a diagnoser class under its ``name`` (usable as a decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Diagnoser)):
        raise TypeError(f"register() needs a Diagnoser subclass, got {cls!r}")
    if cls.name in DIAGNOSERS and DIAGNOSERS[cls.name] is not cls:
        raise ValueError(
            f"a diagnoser named {cls.name!r} is already registered ({DIAGNOSERS[cls.name].__name__})"
        )
    DIAGNOSERS[cls.name] = cls
    return cls


for _cls in (
    RuleDiagnoser,
    CoverageDiagnoser,
    LLMJudgeDiagnoser,
    FrozenHopDiagnoser,
    SuffixRegenDiagnoser,
    HolisticDiagnoser,
    HolisticLLMDiagnoser,
    IterativeDiagnoser,
    IterativeLLMDiagnoser,
    CRSDiagnoser,
    PathAwareDiagnoser,
    InformationFlowDiagnoser,
    DecisiveStepDiagnoser,
    AllAtOnceDiagnoser,
):
    register(_cls)


def available() -> list[str]:
    """Registered diagnoser names, in registration order."""
    return list(DIAGNOSERS)


def get_diagnoser(name: str, **options: Any) -> Diagnoser:
    """A new diagnoser by name; ``options`` go to its constructor."""
    try:
        cls = DIAGNOSERS[name]
    except KeyError:
        raise KeyError(f"unknown diagnoser {name!r}; available: {', '.join(DIAGNOSERS)}") from None
    try:
        return cls(**options)
    except TypeError as exc:
        raise ValueError(f"bad options for diagnoser {name!r}: {exc}") from exc


def is_passive(name: str) -> bool:
    """Whether the named diagnoser runs on a stored run alone (no live agent needed)."""
    return not get_diagnoser(name).needs_live_agent

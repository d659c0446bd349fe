"""Attribution: which hop of a failed run caused the failure.

Every diagnoser implements :class:`Diagnoser` (``diagnose(trajectory, context) -> Diagnosis``);
:func:`get_diagnoser` builds one by name. See ``docs/attribution.md``.
"""

from causal_middleware.attribution.base import (
    Diagnoser,
    Diagnosis,
    DiagnosisContext,
    DiagnosisCost,
    ProbeRecord,
    blind,
)
from causal_middleware.attribution.registry import DIAGNOSERS, available, get_diagnoser, register
from causal_middleware.attribution.repair_op import HopRepair, ProbeRunner, repair_hop

__all__ = [
    "DIAGNOSERS",
    "Diagnoser",
    "Diagnosis",
    "DiagnosisContext",
    "DiagnosisCost",
    "HopRepair",
    "ProbeRecord",
    "ProbeRunner",
    "available",
    "blind",
    "get_diagnoser",
    "register",
    "repair_hop",
]

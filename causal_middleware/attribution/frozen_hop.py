"""``frozen_hop`` (Propagation-Aware, AgenticRAG-FP): repair a candidate hop, hold every other
step at its recorded output, re-run the answer; candidates in causal order; the earliest repair
that restores a correct answer is the diagnosis.

Holding later hops fixed means a root cause that propagated through a bridge entity is only
"restored" by repairing the hop where the damage reached the answer, so propagated faults are
blamed too late; faults in the hop that feeds the answer directly are found exactly.
"""

from __future__ import annotations

from causal_middleware.attribution.probe_sweep import CausalOrderProbe


class FrozenHopDiagnoser(CausalOrderProbe):
    name = "frozen_hop"
    mode = "frozen"
    description = (
        "repair each hop in causal order with the rest frozen; earliest repair that restores the answer"
    )

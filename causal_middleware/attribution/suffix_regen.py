"""``suffix_regen`` (Suf-Regen): repair a candidate hop and regenerate everything after it;
candidates in causal order; the earliest repair that restores a correct answer is the diagnosis.

Regenerating the suffix re-runs every later hop live, so a fault that the original run received
at a later hop (and that is not persistent in the environment) is washed out by repairing any
earlier hop: the method tends to blame hops that are too early.
"""

from __future__ import annotations

from causal_middleware.attribution.probe_sweep import CausalOrderProbe


class SuffixRegenDiagnoser(CausalOrderProbe):
    name = "suffix_regen"
    mode = "regenerate"
    description = "repair each hop in causal order and regenerate the suffix; earliest repair that restores"

"""The counterfactual search shared by attribution and repair: candidate steps, proposals of a
replacement output for a step, verifiers that judge a fork's outcome, and the Causal Responsibility
Score (:func:`compute_crs`: apply each proposal as a fork, regenerate the suffix, judge it).

The ``crs`` and ``path_aware`` diagnosers probe with it; :mod:`causal_middleware.repair` turns its
successful probes into minimal validated repairs.
"""

from causal_middleware.counterfactual.candidates import candidate_steps, final_answer_step
from causal_middleware.counterfactual.crs import ForkCache, compute_crs
from causal_middleware.counterfactual.minimality import minimality, tokenize
from causal_middleware.counterfactual.models import CRSResult, Probe, StepScore
from causal_middleware.counterfactual.proposers import LLMProposer, OfflineProposer
from causal_middleware.counterfactual.trace_proposer import TraceProposer
from causal_middleware.counterfactual.verifiers import (
    CallableVerifier,
    LLMOutcomeVerifier,
    OutcomeVerifier,
    ReferenceVerifier,
    as_verifier,
)

__all__ = [
    "CRSResult",
    "CallableVerifier",
    "ForkCache",
    "LLMOutcomeVerifier",
    "LLMProposer",
    "OfflineProposer",
    "OutcomeVerifier",
    "Probe",
    "ReferenceVerifier",
    "StepScore",
    "TraceProposer",
    "as_verifier",
    "candidate_steps",
    "compute_crs",
    "final_answer_step",
    "minimality",
    "tokenize",
]

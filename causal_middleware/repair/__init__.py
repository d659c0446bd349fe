"""CausalFlow repair: Causal Responsibility Scores, minimal validated repairs, contrastive pairs,
and repair triggered on failed runs. The verifier and proposer protocols, and the data they return
(``Verdict``, ``ProposalBatch``, ``Proposal``, ``RepairCost``), are in ``causal_middleware.protocols``.

Start with :func:`repair_run` (one failed run) or :class:`RepairQueue` (repair in the background
when runs fail); :func:`compute_crs` is the scoring core the ``crs`` diagnoser shares.
"""

from causal_middleware.counterfactual.candidates import candidate_steps, final_answer_step
from causal_middleware.counterfactual.crs import ForkCache, compute_crs
from causal_middleware.counterfactual.minimality import minimality, tokenize
from causal_middleware.counterfactual.models import CRSResult, Probe, StepScore
from causal_middleware.counterfactual.proposers import LLMProposer, OfflineProposer
from causal_middleware.counterfactual.verifiers import (
    CallableVerifier,
    LLMOutcomeVerifier,
    OutcomeVerifier,
    ReferenceVerifier,
    as_verifier,
)
from causal_middleware.repair.chain import search_second_step, validate_chain
from causal_middleware.repair.models import (
    ContrastivePair,
    LLMValidation,
    OfflineValidation,
    Repair,
    RepairResult,
    RepairStep,
    TwoStepSearch,
)
from causal_middleware.repair.pairs import build_pair, export_pairs, write_pairs
from causal_middleware.repair.service import RepairConfig, RepairService, repair_run
from causal_middleware.repair.trigger import RepairQueue
from causal_middleware.repair.validate import LLMValidator, prefix_differences, validate_offline

__all__ = [
    "CRSResult",
    "CallableVerifier",
    "ContrastivePair",
    "ForkCache",
    "LLMOutcomeVerifier",
    "LLMProposer",
    "LLMValidation",
    "LLMValidator",
    "OfflineProposer",
    "OfflineValidation",
    "OutcomeVerifier",
    "Probe",
    "ReferenceVerifier",
    "Repair",
    "RepairConfig",
    "RepairQueue",
    "RepairResult",
    "RepairService",
    "RepairStep",
    "StepScore",
    "TwoStepSearch",
    "as_verifier",
    "build_pair",
    "candidate_steps",
    "compute_crs",
    "export_pairs",
    "final_answer_step",
    "minimality",
    "prefix_differences",
    "repair_run",
    "search_second_step",
    "tokenize",
    "validate_chain",
    "validate_offline",
    "write_pairs",
]

"""The simulation benchmark: seeded workspaces with planted faults and the sessions they cause."""

from benchmarks.context.simulation.domains import DEFAULT_DOMAIN, domain_names, get_domain
from benchmarks.context.simulation.generator import GenerationError, generate_benchmark
from benchmarks.context.simulation.schema import (
    Benchmark,
    ExpectedFix,
    FaultSpec,
    GroundTruth,
    SimTrace,
)

__all__ = [
    "DEFAULT_DOMAIN",
    "Benchmark",
    "ExpectedFix",
    "FaultSpec",
    "GenerationError",
    "GroundTruth",
    "SimTrace",
    "domain_names",
    "generate_benchmark",
    "get_domain",
]

"""The live agent fixture of the fault-injection tests (helpers live in ``faults_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from faults_helpers import make_env

from causal_middleware.faults.sweep import SweepEnvironment


@pytest.fixture(scope="module")
def env() -> Iterator[SweepEnvironment]:
    """The live reference agent over the small world, in memory; one per test module."""
    environment = make_env()
    yield environment
    environment.close()

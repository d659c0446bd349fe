"""Fixtures for the repair tests: the simulated agent worlds (fakes live in repair_fakes.py)."""

from __future__ import annotations

import pytest
from repair_sim import World, make_world


@pytest.fixture
def sloppy_world() -> World:
    """Natural failure: hop 1's reader takes a near-namesake's founder, the run answers Lyon."""
    return make_world(sloppy=True)


@pytest.fixture
def clean_world() -> World:
    """The agent answers correctly (Paris)."""
    return make_world()

"""Fixtures for the attribution tests (the simulated world lives in ``attribution_sim``)."""

from __future__ import annotations

import pytest
from attribution_sim import World, make_world


@pytest.fixture
def world() -> World:
    return make_world()

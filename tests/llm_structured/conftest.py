"""Fixtures for the structured-reply tests: a chat model that records the schema it was asked for."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from causal_middleware.testing.models import RecordingChatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "attribution"))  # attribution_sim


class SchemaRecordingModel(RecordingChatModel):
    """The shared recording model, answering a forced tool with that tool's call by default."""

    as_tool_call: bool = True


@pytest.fixture
def recording() -> type[SchemaRecordingModel]:
    return SchemaRecordingModel

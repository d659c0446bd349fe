"""Item 6 of issue 13: ``causal-mw runs export`` files are redacted unless ``--no-redact``."""

from __future__ import annotations

from benchmarks.reliability import secrets as bench
from benchmarks.reliability.safety_corpus import SECRETS


def test_runs_export_is_redacted_unless_no_redact() -> None:
    _, records = bench.otlp_leaks()
    figures = bench.export_leaks(records)
    assert figures["redacted"] == {"exit_code": 0, "leaks": 0}
    assert figures["no_redact"] == {"exit_code": 0, "leaks": len(SECRETS)}

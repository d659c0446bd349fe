"""A page whose value starts a line ("up to\\n23 kg") is a fact like any other: the search's JSON
output writes the line break as ``\\n``, glued to the value, and the generated set must still verify
(the check reads the documents the search returned, not only its JSON text)."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks.context.kit import generate_kit_benchmark
from benchmarks.context.simulation.verification import verify_benchmark

KIT = Path(__file__).resolve().parents[2] / "examples" / "travel_kit"
PAGE = "workspace/help/baggage/checked-bag-allowance.md"


def test_a_value_at_the_start_of_a_line_verifies(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    shutil.copytree(KIT, kit)
    page = kit / PAGE
    text = page.read_text(encoding="utf-8")
    assert "may weigh up to 23 kg" in text
    page.write_text(text.replace("may weigh up to 23 kg", "may weigh up to\n23 kg"), encoding="utf-8")
    bench = generate_kit_benchmark(kit / "kit.yaml", seed=0, n_dissatisfied=60, n_control=15)
    on_page = [
        t
        for t in bench.dissatisfied
        if t.ground_truth.fault and t.ground_truth.fault.faulty_path == PAGE[10:]
    ]
    assert on_page  # the wrapped fact is among the sessions
    report = verify_benchmark(bench)
    assert report.ok, {k: v.failures[:2] for k, v in report.checks.items() if v.failed}

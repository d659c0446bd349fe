"""examples/instrument_basic.py runs offline and prints the three hops it read back from the store."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "instrument_basic.py"


def test_example_prints_the_hop_table(capsys, monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("instrument_basic_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # LangGraph resolves the state's type hints there
    spec.loader.exec_module(module)
    store = tmp_path / "runs.db"
    monkeypatch.setattr(sys, "argv", ["instrument_basic.py", "--store", str(store)])
    module.main()
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [row[0] for row in rows] == ["1", "2", "3"]
    assert "p1:1.00," in rows[0] and "p2:1.00," in rows[1] and "p3:1.00," in rows[2]
    assert "Tessaly country" in out and "answer:   Quarn" in out
    assert store.exists()

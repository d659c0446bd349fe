"""The instrumentation's spans are identical to those of a fixed earlier revision (issue 16: the
caller-thread cost was cut without changing a span).

``span_dump.py`` runs a set of graphs (a 3-hop RAG loop with retrieval + LLM, named hop/answer
nodes, a ``create_agent`` agent with tool calls, a subgraph, a ``Send`` fan-out, an error raised
in a node, async, stream, ``Command(goto=...)``, an interrupt, odd state values, the overhead
bench's graphs) and dumps what every sink received: a user's provider, and with our own
provider the in-memory exporter, the records the store's background writer writes and the OTLP
protobuf after the content policy; ids, uuids and times normalised. It runs once under the
working tree and once under ``BASELINE`` unpacked from git (``git archive``) and put first on
``sys.path`` (each in its own interpreter), and both dumps must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.perf.fp_wall import checkout_revision

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# the revision before the caller-thread cost was cut (what every span must still equal)
BASELINE = "5f11097"


def _has_revision(ref: str) -> bool:
    try:
        subprocess.run(
            ["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def _unpack(ref: str, dest: Path) -> Path:
    """``causal_middleware`` (with ``integrations`` as its subpackage, as installed) at ``ref``."""
    tree = checkout_revision(ref, dest, ("causal_middleware", "integrations"))
    assert tree is not None, f"cannot unpack {ref}"
    return tree


def _dump(tmp: Path, label: str, package_root: Path | None) -> dict[str, Any]:
    out = tmp / f"{label}.json"
    prefix = [str(package_root)] if package_root is not None else []
    code = (
        "import sys, runpy; "
        f"sys.path[:0] = {prefix + [str(HERE)]!r}; "
        f"sys.argv = ['span_dump.py', {str(out)!r}]; "
        f"runpy.run_path({str(HERE / 'span_dump.py')!r}, run_name='__main__')"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHONPATH"))} | {
        "PYTHONHASHSEED": "0",
        "OTEL_SDK_DISABLED": "false",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{label} dump failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    data = json.loads(out.read_text())
    expected_root = (package_root / "causal_middleware") if package_root is not None else ROOT
    assert data["handler_file"].startswith(str(expected_root)), (label, data["handler_file"])
    return data


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    if not _has_revision(BASELINE):
        pytest.skip(f"revision {BASELINE} is not in this checkout")
    tmp = tmp_path_factory.mktemp("spans_identical")
    old_root = _unpack(BASELINE, tmp / "baseline")
    return _dump(tmp, "baseline", old_root), _dump(tmp, "current", None)


def _scenarios() -> list[str]:
    sys.path.insert(0, str(HERE))
    try:
        from span_dump import SCENARIOS
    finally:
        sys.path.remove(str(HERE))
    return list(SCENARIOS)


@pytest.mark.parametrize("scenario", _scenarios())
def test_spans_equal_the_baseline_revision(dumps, scenario):
    old, new = dumps
    a, b = old["scenarios"][scenario], new["scenarios"][scenario]
    assert a["outputs"] == b["outputs"]
    for sink in ("user", "own_exporter", "own_store", "own_otlp"):
        assert a["sinks"][sink], f"{scenario}/{sink}: no spans"
        assert a["sinks"][sink] == b["sinks"][sink], f"{scenario}/{sink} differs from {BASELINE}"


def test_no_instrumentation_errors_either_way(dumps):
    old, new = dumps
    assert new["health_errors"] == old["health_errors"]
    assert new["health_dropped"] == old["health_dropped"]

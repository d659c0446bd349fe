"""``bench fp`` wall time (issue 16: "``bench fp --n 80`` wall time halved against today's on the
same machine"): the same command, run as a child process three times back to back on this machine:

* ``before``: the code of ``before_ref`` (default :data:`ISSUE_REVISION`, the revision issue 16
  measured), taken from git into a temporary folder, with that revision's own defaults;
* ``local``: this checkout with ``--executor local`` (threads);
* ``auto``: this checkout with its default executor (``auto``: worker processes when the run can
  use them, see ``benchmarks.cli.executor.resolve_executor``).

Wall time is the child's, start to exit (interpreter start and imports included, as a user sees
it). The accuracy figures of the three runs are compared diagnoser by diagnoser (``by_depth``):
``local`` and ``auto`` must agree on every one; against ``before`` the shared diagnosers are
listed as same or changed (later commits may change a diagnoser on purpose).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

#: the revision whose ``bench fp`` issue 16 timed (its "today")
ISSUE_REVISION = "7e0c7d2"

ROOT = Path(__file__).resolve().parents[2]


def checkout_revision(ref: str, into: Path, paths: tuple[str, ...] = ()) -> Path | None:
    """``ref``'s tree (or only ``paths`` of it) unpacked under ``into`` (None when this is no git
    checkout or ``ref`` is unknown), importable as ``causal_middleware`` with its ``integrations``
    folder as the installed package has it."""
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", ref, *paths], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    shipped = into / "causal_middleware" / "integrations"
    if (into / "integrations").is_dir() and not shipped.exists():
        # the installed package maps causal_middleware.integrations onto the top-level folder
        shipped.symlink_to(into / "integrations", target_is_directory=True)
    return into


def _run(args: list[str], out: Path, pythonpath: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    cwd = ROOT
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
        cwd = pythonpath  # ``python -m`` puts the working folder first on sys.path
    command = [sys.executable, "-m", "causal_middleware.cli.main", "bench", "fp", *args]
    command += ["--no-progress", "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"bench fp {' '.join(args)} exited {done.returncode}: {tail[0]}")
    results = json.loads(out.read_text(encoding="utf-8"))
    return {
        "wall_s": round(wall, 2),
        "bench_total_s": results["timing"]["total_s"],
        "executor": results["config"].get("executor", "local"),
        "load_average": results["timing"].get("load_average"),
        "by_depth": {name: d.get("by_depth") for name, d in results["diagnosers"].items()},
    }


def run(
    *, quick: bool = False, n: int | None = None, before_ref: str | None = ISSUE_REVISION
) -> dict[str, Any]:
    n = n if n is not None else (20 if quick else 80)
    common = ["--n", str(n)]
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="perf-fp-") as tmp:
        folder = Path(tmp)
        if before_ref:
            tree = checkout_revision(before_ref, folder / "before")
            if tree is not None:
                runs["before"] = _run(common, folder / "before.json", tree)
        runs["local"] = _run([*common, "--executor", "local"], folder / "local.json", None)
        runs["auto"] = _run(common, folder / "auto.json", None)
    local, auto = runs["local"], runs["auto"]
    out: dict[str, Any] = {
        "n": n,
        "before_ref": before_ref if "before" in runs else None,
        "runs": {k: {f: v for f, v in r.items() if f != "by_depth"} for k, r in runs.items()},
        "auto_over_local": round(auto["wall_s"] / local["wall_s"], 3),
        "same_results_local_auto": local["by_depth"] == auto["by_depth"],
    }
    if "before" in runs:
        before = runs["before"]
        out["auto_over_before"] = round(auto["wall_s"] / before["wall_s"], 3)
        shared = sorted(set(before["by_depth"]) & set(auto["by_depth"]))
        out["diagnosers_same_as_before"] = [d for d in shared if before["by_depth"][d] == auto["by_depth"][d]]
        out["diagnosers_changed_since_before"] = [
            d for d in shared if before["by_depth"][d] != auto["by_depth"][d]
        ]
        out["diagnosers_new_since_before"] = sorted(set(auto["by_depth"]) - set(before["by_depth"]))
    return out

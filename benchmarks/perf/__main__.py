"""``python -m benchmarks.perf --out DIR [--n N] [--no-before]``

Writes ``DIR/perf.json``. ``store``: the span store at scale (:mod:`benchmarks.perf.store`): N runs
(default 10,000) synthesised from a real recorded run of the reference agent, ingest spans/s,
bytes per span, ``list_runs`` / label filter / ``get_trajectory`` / page p50s, and the same with
the store of git ``HEAD`` (``before``) when the checkout has one.

Sibling modules of this package that expose ``run() -> dict`` (other than ``store``) are merged in
under their own names when present.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

from . import store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.split("\n\n")[1])
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for perf.json")
    parser.add_argument("--n", type=int, default=10_000, help="runs in the synthesised store (default 10000)")
    parser.add_argument("--no-before", action="store_true", help="skip the git HEAD store (before)")
    parser.add_argument("--only", choices=["store"], help="only this part")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"store": store.run(args.n, before=not args.no_before, workdir=out)}
    if args.only is None:
        for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
            if module.name in ("store", "__main__") or module.name.startswith("_"):
                continue
            sibling = importlib.import_module(f"{__package__}.{module.name}")
            if callable(getattr(sibling, "run", None)):
                result[module.name] = sibling.run()
    path = out / "perf.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["store"], indent=2))
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

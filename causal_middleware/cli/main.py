"""``causal-mw``: the command line. Each command group lives in its own module of this package
and exposes ``register(subparsers)``; this module only assembles them.

The CLI is a composition root: unlike the core folders it may import
``causal_middleware.integrations`` (it builds the live agent for ``replay``, ``repair``, ...). It never
imports the benchmarks: ``bench``, ``demo`` and ``inject`` arrive as plugins (``cli/plugins.py``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any

from causal_middleware.cli.plugins import register_commands

# Command modules, in help order; each ``register(subparsers)`` may return its own subparsers
# (a command group that plugins can extend). Installed plugins add theirs after these.
COMMAND_MODULES = (
    "runs",
    "replay",
    "diagnose",
    "repair",
    "pairs",
    "context",
    "health",
    "worker",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="causal-mw",
        description="Find which step of a LangGraph agent run made it fail, prove it, repair it.",
        epilog="demo, inject and bench come with the benchmark package (benchmarks/ in a checkout; "
        "`make install` puts it beside the library).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    groups: dict[str, Any] = {}
    for name in COMMAND_MODULES:
        qualified = f"causal_middleware.cli.{name}"
        if importlib.util.find_spec(qualified) is None:
            continue
        group = importlib.import_module(qualified).register(sub)
        if group is not None:
            groups[name] = group
    register_commands(sub, groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader (``| head``) went away: stop quietly, as Unix tools do
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        except OSError:
            pass
        return 0
    except (KeyError, ValueError, FileNotFoundError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"causal-mw: error: {msg}", file=sys.stderr)
        return 2
    return int(code or 0)


if __name__ == "__main__":
    raise SystemExit(main())

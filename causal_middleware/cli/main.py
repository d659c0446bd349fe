"""``causal-mw``: the command line. Each command group lives in its own module of this package
and exposes ``register(subparsers)``; this module only assembles them.

The CLI is a composition root: unlike the core folders it may import
``causal_middleware.integrations`` (it has to build a live agent for ``demo``, ``replay``, ...).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

# Command modules, in help order. A module listed here that does not exist yet is skipped.
COMMAND_MODULES = (
    "demo",
    "runs",
    "replay",
    "inject",
    "diagnose",
    "repair",
    "pairs",
    "context",
    "bench",
    "health",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="causal-mw",
        description="Find which step of a LangGraph agent run made it fail, prove it, repair it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        qualified = f"causal_middleware.cli.{name}"
        if importlib.util.find_spec(qualified) is None:
            continue
        importlib.import_module(qualified).register(sub)
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

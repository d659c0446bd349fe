"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

DEFAULT_STORE = os.environ.get("CAUSAL_MW_STORE", "causal_runs.db")


def add_store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help="span store path (SQLite); default $CAUSAL_MW_STORE or ./causal_runs.db",
    )


def add_json_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")

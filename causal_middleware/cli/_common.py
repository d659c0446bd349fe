"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from collections.abc import Callable
from typing import Any

DEFAULT_STORE = os.environ.get("CAUSAL_MW_STORE", "causal_runs.db")


def add_store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help="span store: a SQLite file path or a postgresql://user@host/db URL; "
        "default $CAUSAL_MW_STORE or ./causal_runs.db",
    )


def add_json_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")


def load_verifier(spec: str) -> Callable[..., bool | None]:
    """The verifier ``spec`` names: ``module:callable`` or ``path/to/file.py:callable`` (the
    file's own folder importable, so its sibling modules load; dotted attributes allowed).

    The callable takes the run's answer (a string, or None) and returns True (success), False
    (failure) or None (cannot tell); annotate its one parameter ``Trajectory`` to get the whole
    run instead (:func:`causal_middleware.counterfactual.verifiers.as_verifier` reads the annotation). An
    object with a ``verify(trajectory)`` method (a ``Verifier``) is returned as it is. Anything
    else, or a spec that does not load, is a one-line ``ValueError``.
    """
    from causal_middleware.loading import load_object

    obj = load_object(spec, what="verifier", example="callable")
    if callable(getattr(obj, "verify", None)) and not isinstance(obj, type):
        return obj  # type: ignore[no-any-return]
    if not callable(obj) or isinstance(obj, type):
        raise ValueError(
            f"verifier {spec!r} is a {type(obj).__name__ if not isinstance(obj, type) else 'class'}, "
            "not a function of the answer (or trajectory) returning True, False or None"
        )
    try:
        inspect.signature(obj).bind(None)
    except TypeError:
        raise ValueError(
            f"verifier {spec!r} must take one argument (the answer, or the trajectory), "
            f"its signature is {inspect.signature(obj)}"
        ) from None
    except ValueError:
        pass  # builtins without a signature: take them as they are
    return obj  # type: ignore[no-any-return]


def add_state_key_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-key",
        action="append",
        metavar="NODE=KEY",
        help="the state key holding NODE's retrieved documents when its update holds several (repeatable)",
    )

"""Load a user's object from a ``langgraph.json``-style spec: ``path/to/file.py:attr`` or ``package.module:attr``.

Shared by the graph loader (``--graph``) and the verifier loader (``--verifier``). A file is
imported with its own folder first on ``sys.path`` (as ``python path/to/file.py`` would), so its
sibling modules import; a file or module that fails to import, or names no such attribute, raises
a one-line ``ValueError`` naming the file and the exception (the CLI prints it, exit code 2).
The attribute may be dotted (``module:agents.research``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["load_object", "one_line", "split_spec"]


def one_line(exc: BaseException, width: int = 300) -> str:
    """``ExcType: message`` on one line, shortened to ``width`` characters."""
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= width else text[: width - 1] + "…"


def split_spec(spec: str, *, what: str = "object", example: str = "attr") -> tuple[str, str]:
    """``(where, attr)`` of ``where:attr``; ValueError when ``spec`` does not look like one."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(
            f"{what} spec {spec!r} must look like 'path/to/file.py:{example}' or 'package.module:{example}'"
        )
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ValueError(f"{what} spec {spec!r} names no module or no attribute")
    return where, attr


def is_file_spec(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def _import_file(path: Path, what: str) -> ModuleType:
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist")
    resolved = path.resolve()
    name = f"_causal_user_{path.stem}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    folder = str(resolved.parent)
    if folder not in sys.path:
        # the file's own folder, first, as when it is run as a script: its sibling modules import
        # (also the ones it imports lazily, inside functions, so the folder stays on the path)
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise ValueError(f"importing {what} file {str(path)!r} failed: {one_line(exc)}") from exc
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import_module(where: str, spec: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        raise ValueError(f"cannot import module {where!r} of {what} spec {spec!r}: {exc}") from exc
    except (Exception, SystemExit) as exc:
        raise ValueError(
            f"importing module {where!r} of {what} spec {spec!r} failed: {one_line(exc)}"
        ) from exc


def load_object(spec: str, *, what: str = "object", example: str = "attr") -> Any:
    """The attribute ``spec`` names (see the module docstring). Raises ``ValueError`` (or
    ``FileNotFoundError`` for a missing file) with a one-line message naming what was wrong."""
    where, attr = split_spec(spec, what=what, example=example)
    module = _import_file(Path(where), what) if is_file_spec(where) else _import_module(where, spec, what)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{where!r} has no attribute {attr!r} ({what} spec {spec!r})")
        obj = getattr(obj, part)
    return obj

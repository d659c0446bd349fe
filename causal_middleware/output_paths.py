"""Output paths checked before any work: a command that would spend minutes loading a store must
not find out at the end that it cannot write its file.

Both checks raise ``ValueError`` (the CLI prints it as one line, exit 2) naming the path and the
problem: a file path that is a directory, a folder path that is a file, a parent that is a file,
or a folder that cannot be written. Missing folders are fine (they are created when writing).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_output_dir", "check_output_file"]


def _nearest_existing(path: Path) -> Path:
    current = path
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def _check_writable_parent(path: Path, shown: str, what: str) -> None:
    ancestor = _nearest_existing(path.parent if str(path.parent) else Path("."))
    if not ancestor.is_dir():
        raise ValueError(f"cannot write {what} {shown}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write {what} {shown}: the folder {ancestor} is not writable")


def check_output_file(path: str | os.PathLike[str], what: str = "the output file") -> Path:
    """``path`` as a file to write; ValueError when it cannot be one."""
    shown = os.fspath(path)
    if not shown:
        raise ValueError(f"{what}: no path given")
    target = Path(shown)
    if target.is_dir() or shown.endswith(("/", os.sep)):
        raise ValueError(
            f"cannot write {what} {shown}: it is a directory; name a file, e.g. {target / 'runs.json'}"
        )
    _check_writable_parent(target, shown, what)
    return target


def check_output_dir(path: str | os.PathLike[str], what: str = "the output folder") -> Path:
    """``path`` as a folder to write into (created if missing); ValueError when it cannot be one."""
    shown = os.fspath(path)
    if not shown:
        raise ValueError(f"{what}: no path given")
    target = Path(shown)
    if target.exists() and not target.is_dir():
        raise ValueError(f"cannot write {what} {shown}: it is a file, not a folder")
    if target.is_dir():
        if not os.access(target, os.W_OK | os.X_OK):
            raise ValueError(f"cannot write {what} {shown}: it is not writable")
        return target
    _check_writable_parent(target, shown, what)
    return target

"""Applying a recommendation to a workspace directory: only with ``confirm=True``, with a backup.

Before changing anything the target is checked against the text the recommendation was made
from (an UPDATE or DELETE of a file that changed since is refused; so is a CREATE over an
existing file). The backup goes to ``DIR/.causal-backup/<UTC timestamp>/``: the file as it was
plus ``manifest.json``; :func:`restore_backup` puts it back.

Only context files are written (:func:`~causal_middleware.context.workspace.check_context_target`:
``system_prompt.md`` or a text file under ``tools/``, ``skills/``, ``kb/``; under a workspace
config (``causal-context.yaml`` in the workspace, or ``config=``) only the files it declares, never
the config itself; never a dot-directory such as ``.git`` or the backup folder). Symlinks are resolved before the containment check: a
target whose real path leaves the workspace, or lands in a dot-directory or outside the context
folders, is refused; so is a backup folder that is a symlink, and an existing backup is never
overwritten.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pydantic import BaseModel

from causal_middleware.context.recommendation import Operation, Recommendation
from causal_middleware.context.workspace import (
    BACKUP_DIR,
    WorkspaceLayout,
    check_context_target,
    find_layout,
    load_layout,
)

MANIFEST = "manifest.json"


class ApplyResult(BaseModel):
    recommendation_id: str
    operation: Operation
    target_path: str | None
    applied: bool
    backup_dir: str | None = None
    diff: str = ""
    message: str = ""


def apply_recommendation(
    recommendation: Recommendation,
    workspace_dir: str | Path,
    *,
    confirm: bool = False,
    config: str | Path | WorkspaceLayout | None = None,
) -> ApplyResult:
    """Apply ``recommendation`` under ``workspace_dir`` when ``confirm``; otherwise report the diff
    only. ``config`` is the workspace config (default: the one in ``workspace_dir``, if any)."""
    rec = recommendation
    root = Path(workspace_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"workspace directory {str(root)!r} does not exist")
    layout = _layout(root, config)
    result = ApplyResult(
        recommendation_id=rec.id,
        operation=rec.operation,
        target_path=rec.target_path,
        applied=False,
        diff=rec.diff,
    )
    if rec.operation == Operation.NO_ACTION:
        result.message = f"{rec.id} recommends no action ({rec.classification}): nothing to apply"
        return result
    if not rec.target_path:
        raise ValueError(f"recommendation {rec.id} ({rec.operation}) has no target path")
    rel = check_context_target(rec.target_path, layout)
    target = contained_target(root, rel, layout)
    _check_preconditions(rec, target)
    if not confirm:
        result.message = "dry run: nothing changed; pass --confirm (confirm=True) to apply"
        return result
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = _backup_root(root) / stamp
    backup.mkdir(parents=True, exist_ok=False)  # never into (or over) an existing backup
    existed = target.exists()
    if existed:
        saved = backup / rel
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(target.read_bytes())
    manifest = {
        "recommendation_id": rec.id,
        "session_id": rec.session_id,
        "operation": rec.operation.value,
        "target_path": rel,
        "existed_before": existed,
        "applied_at": stamp,
    }
    (backup / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    if rec.operation == Operation.DELETE:
        target.unlink()
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rec.new_text or "", encoding="utf-8")
    result.applied = True
    result.backup_dir = str(backup)
    result.message = f"{rec.operation.value} {rel}; backup in {backup}"
    return result


def _layout(root: Path, config: str | Path | WorkspaceLayout | None) -> WorkspaceLayout:
    if isinstance(config, WorkspaceLayout):
        return config
    return load_layout(config, root=root) if config is not None else find_layout(root)


def contained_target(root: Path, rel: str, layout: WorkspaceLayout | None = None) -> Path:
    """The real path of ``root/rel`` (symlinks resolved), checked to stay inside the real
    workspace and to be a context file there too; ValueError otherwise."""
    real_root = root.resolve(strict=True)
    target = (real_root / rel).resolve(strict=False)
    if not target.is_relative_to(real_root) or target == real_root:
        raise ValueError(
            f"workspace path {rel!r} resolves to {str(target)!r}, outside the workspace {str(real_root)!r} "
            "(through a symlink); refusing to write it"
        )
    real_rel = target.relative_to(real_root).as_posix()
    if real_rel != rel:
        try:
            check_context_target(real_rel, layout)
        except ValueError as exc:
            raise ValueError(
                f"workspace path {rel!r} resolves (through a symlink) to {real_rel!r}: {exc}"
            ) from exc
    return target


def _backup_root(root: Path) -> Path:
    """``root/.causal-backup`` as a real folder inside the workspace (not a symlink)."""
    real_root = root.resolve(strict=True)
    folder = real_root / BACKUP_DIR
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ValueError(
            f"{str(folder)!r} is not a plain folder (a symlink or a file); refusing to back up into it"
        )
    return folder


def _check_preconditions(rec: Recommendation, target: Path) -> None:
    if rec.operation == Operation.CREATE:
        if target.exists():
            raise ValueError(f"cannot CREATE {rec.target_path}: it already exists")
        if rec.new_text is None:
            raise ValueError(f"recommendation {rec.id} (CREATE) carries no content")
        return
    if not target.exists():
        raise FileNotFoundError(
            f"cannot {rec.operation.value} {rec.target_path}: no such file in the workspace"
        )
    if rec.base_text is not None and target.read_text(encoding="utf-8") != rec.base_text:
        raise ValueError(
            f"{rec.target_path} changed since recommendation {rec.id} was made; re-run 'context recommend' first"
        )
    if rec.operation == Operation.UPDATE and rec.new_text is None:
        raise ValueError(f"recommendation {rec.id} (UPDATE) carries no new content")


def restore_backup(
    workspace_dir: str | Path,
    backup_dir: str | Path,
    *,
    config: str | Path | WorkspaceLayout | None = None,
) -> str:
    """Undo one applied recommendation from its backup folder; returns the restored path."""
    root, backup = Path(workspace_dir), Path(backup_dir)
    layout = _layout(root, config)
    manifest_path = backup / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{str(backup)!r} is not a backup folder (no {MANIFEST})")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    rel = check_context_target(manifest["target_path"], layout)
    target = contained_target(root, rel, layout)
    if manifest["existed_before"]:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((backup / rel).read_bytes())
    elif target.exists():
        target.unlink()
    return rel

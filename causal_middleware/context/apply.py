"""Applying a recommendation to a workspace directory: only with ``confirm=True``, with a backup.

Before changing anything the target is checked against the text the recommendation was made
from (an UPDATE or DELETE of a file that changed since is refused; so is a CREATE over an
existing file). The backup goes to ``DIR/.causal-backup/<UTC timestamp>/``: the file as it was
plus ``manifest.json``; :func:`restore_backup` puts it back.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pydantic import BaseModel

from causal_middleware.context.recommendation import Operation, Recommendation
from causal_middleware.context.workspace import BACKUP_DIR, check_path

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
) -> ApplyResult:
    """Apply ``recommendation`` under ``workspace_dir`` when ``confirm``; otherwise report the diff only."""
    rec = recommendation
    root = Path(workspace_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"workspace directory {str(root)!r} does not exist")
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
    rel = check_path(rec.target_path)
    target = root / rel
    _check_preconditions(rec, target)
    if not confirm:
        result.message = "dry run: nothing changed; pass --confirm (confirm=True) to apply"
        return result
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = root / BACKUP_DIR / stamp
    backup.mkdir(parents=True, exist_ok=False)
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


def restore_backup(workspace_dir: str | Path, backup_dir: str | Path) -> str:
    """Undo one applied recommendation from its backup folder; returns the restored path."""
    root, backup = Path(workspace_dir), Path(backup_dir)
    manifest_path = backup / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{str(backup)!r} is not a backup folder (no {MANIFEST})")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    rel = check_path(manifest["target_path"])
    target = root / rel
    if manifest["existed_before"]:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((backup / rel).read_bytes())
    elif target.exists():
        target.unlink()
    return rel

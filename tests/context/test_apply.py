"""Applying a recommendation: dry run by default, backup first, refusal on drift, restore."""

from __future__ import annotations

import json

import pytest

from causal_middleware.context.apply import apply_recommendation, restore_backup
from causal_middleware.context.recommendation import (
    Classification,
    Operation,
    Recommendation,
    make_id,
    unified_diff,
)
from causal_middleware.context.workspace import Workspace


def rec(op: Operation, path: str | None, before: str | None, after: str | None) -> Recommendation:
    return Recommendation(
        id=make_id("s", op, path, after),
        session_id="s",
        operation=op,
        target_path=path,
        classification=Classification.SYSTEMIC,
        confidence=0.9,
        base_text=before,
        new_text=after,
        diff=unified_diff(path, before, after),
    )


@pytest.fixture
def wsdir(workspace: Workspace, tmp_path):
    return workspace.write_to(tmp_path / "ws")


def test_dry_run_changes_nothing(wsdir) -> None:
    path = wsdir / "kb/fees/overdraft-fee.md"
    before = path.read_text()
    r = rec(Operation.UPDATE, "kb/fees/overdraft-fee.md", before, before.replace("$25", "$35"))
    result = apply_recommendation(r, wsdir)
    assert not result.applied and "dry run" in result.message
    assert "+The overdraft fee is $35" in result.diff
    assert path.read_text() == before and not (wsdir / ".causal-backup").exists()


def test_update_with_backup_and_restore(wsdir) -> None:
    path = wsdir / "kb/fees/overdraft-fee.md"
    before = path.read_text()
    r = rec(Operation.UPDATE, "kb/fees/overdraft-fee.md", before, before.replace("$25", "$35"))
    result = apply_recommendation(r, wsdir, confirm=True)
    assert result.applied and "$35" in path.read_text()
    backup = wsdir / ".causal-backup"
    (stamp,) = list(backup.iterdir())
    assert (stamp / "kb/fees/overdraft-fee.md").read_text() == before
    manifest = json.loads((stamp / "manifest.json").read_text())
    assert manifest["recommendation_id"] == r.id and manifest["existed_before"] is True
    assert (
        Workspace.from_dir(wsdir).read("kb/fees/overdraft-fee.md") == path.read_text()
    )  # backups are not content
    assert restore_backup(wsdir, stamp) == "kb/fees/overdraft-fee.md"
    assert path.read_text() == before


def test_delete_and_create(wsdir) -> None:
    old = (wsdir / "kb/fees/wire-fee.md").read_text()
    result = apply_recommendation(
        rec(Operation.DELETE, "kb/fees/wire-fee.md", old, None), wsdir, confirm=True
    )
    assert result.applied and not (wsdir / "kb/fees/wire-fee.md").exists()
    restore_backup(wsdir, result.backup_dir)  # type: ignore[arg-type]
    assert (wsdir / "kb/fees/wire-fee.md").read_text() == old

    new = rec(Operation.CREATE, "kb/fees/new-fee.md", None, "---\ntitle: New fee\n---\nThe new fee is $1.\n")
    created = apply_recommendation(new, wsdir, confirm=True)
    assert (wsdir / "kb/fees/new-fee.md").read_text().endswith("$1.\n")
    with pytest.raises(ValueError, match="already exists"):
        apply_recommendation(new, wsdir, confirm=True)
    restore_backup(wsdir, created.backup_dir)  # type: ignore[arg-type]
    assert not (wsdir / "kb/fees/new-fee.md").exists()


def test_refuses_when_the_file_changed_since(wsdir) -> None:
    path = wsdir / "kb/fees/overdraft-fee.md"
    r = rec(Operation.UPDATE, "kb/fees/overdraft-fee.md", path.read_text(), "new text\n")
    path.write_text("edited by someone else\n")
    with pytest.raises(ValueError, match="changed since recommendation"):
        apply_recommendation(r, wsdir, confirm=True)
    assert path.read_text() == "edited by someone else\n"


def test_no_action_and_bad_targets(wsdir, tmp_path) -> None:
    assert not apply_recommendation(rec(Operation.NO_ACTION, None, None, None), wsdir, confirm=True).applied
    with pytest.raises(FileNotFoundError, match="no such file"):
        apply_recommendation(rec(Operation.UPDATE, "kb/missing.md", "a", "b"), wsdir, confirm=True)
    with pytest.raises(ValueError, match="stay inside the workspace"):
        apply_recommendation(rec(Operation.CREATE, "../outside.md", None, "x"), wsdir, confirm=True)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        apply_recommendation(rec(Operation.NO_ACTION, None, None, None), tmp_path / "nowhere")

"""Item 7 of issue 13: ``context apply`` writes only context files inside its workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from causal_middleware.context.apply import apply_recommendation, restore_backup
from causal_middleware.context.recommendation import Classification, Operation, Recommendation, make_id
from causal_middleware.context.workspace import BACKUP_DIR, Workspace, check_context_target, check_path

FEE = "kb/fees/fee.md"


def rec(op: Operation, path: str, before: str | None, after: str | None) -> Recommendation:
    return Recommendation(
        id=make_id("s", op, path, after),
        session_id="s",
        operation=op,
        target_path=path,
        classification=Classification.SYSTEMIC,
        confidence=0.9,
        base_text=before,
        new_text=after,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    files = {"system_prompt.md": "You help.\n", FEE: "The fee is $25.\n", "tools/lookup.md": "Looks up.\n"}
    root = Workspace.from_files(files).write_to(tmp_path / "ws")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


def test_a_symlinked_folder_inside_the_workspace_cannot_be_escaped_through(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "kb" / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="outside the workspace"):
        apply_recommendation(rec(Operation.CREATE, "kb/linked/evil.md", None, "x"), ws, confirm=True)
    (outside / "victim.md").write_text("mine\n")
    (ws / "kb" / "victim.md").symlink_to(outside / "victim.md")
    with pytest.raises(ValueError, match="outside the workspace"):
        apply_recommendation(rec(Operation.UPDATE, "kb/victim.md", "mine\n", "owned\n"), ws, confirm=True)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.md"]
    assert (outside / "victim.md").read_text() == "mine\n" and not (ws / BACKUP_DIR).exists()


def test_git_config_and_dot_directories_are_refused(ws: Path) -> None:
    for path in (
        ".git/config",
        "kb/../.git/config",
        "./.git/config",
        "kb/.hidden.md",
        ".env",
        "setup.py",
        "README.md",
    ):
        with pytest.raises(ValueError):
            apply_recommendation(
                rec(Operation.UPDATE, path, None, "[core]\n\tfsmonitor = evil\n"), ws, confirm=True
            )
    (ws / "kb" / "gitdir").symlink_to(ws / ".git", target_is_directory=True)
    with pytest.raises(ValueError, match="dot-directory"):
        apply_recommendation(rec(Operation.UPDATE, "kb/gitdir/config.md", None, "x"), ws, confirm=True)
    assert (ws / ".git" / "config").read_text() == "[core]\n"


def test_backups_cannot_be_overwritten(ws: Path) -> None:
    before = (ws / FEE).read_text()
    done = apply_recommendation(rec(Operation.UPDATE, FEE, before, "The fee is $35.\n"), ws, confirm=True)
    backup = Path(done.backup_dir or "")
    stamp = backup.name
    saved = (backup / FEE).read_text()
    manifest = (backup / "manifest.json").read_text()
    for path in (
        f"./{BACKUP_DIR}/{stamp}/{FEE}",
        f"{BACKUP_DIR}/{stamp}/manifest.json",
        f"kb/../{BACKUP_DIR}/{stamp}/{FEE}",
        f"kb/./../{BACKUP_DIR}/x.md",
    ):
        with pytest.raises(ValueError):
            apply_recommendation(rec(Operation.UPDATE, path, None, "forged\n"), ws, confirm=True)
    (ws / "kb" / "backups").symlink_to(ws / BACKUP_DIR, target_is_directory=True)
    with pytest.raises(ValueError, match="backup folder"):
        apply_recommendation(
            rec(Operation.UPDATE, f"kb/backups/{stamp}/{FEE}", None, "forged\n"), ws, confirm=True
        )
    assert (backup / FEE).read_text() == saved and (backup / "manifest.json").read_text() == manifest
    assert restore_backup(ws, backup) == FEE and (ws / FEE).read_text() == before


def test_a_symlinked_backup_folder_is_refused(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, ws / BACKUP_DIR)
    before = (ws / FEE).read_text()
    with pytest.raises(ValueError, match="not a plain folder"):
        apply_recommendation(rec(Operation.UPDATE, FEE, before, "x\n"), ws, confirm=True)
    assert list(elsewhere.iterdir()) == [] and (ws / FEE).read_text() == before


def test_restore_refuses_a_manifest_pointing_out_of_the_context(ws: Path) -> None:
    backup = ws / BACKUP_DIR / "forged"
    backup.mkdir(parents=True)
    (backup / "manifest.json").write_text(json.dumps({"target_path": ".git/config", "existed_before": True}))
    with pytest.raises(ValueError, match="dot-directory"):
        restore_backup(ws, backup)


def test_path_checks() -> None:
    with pytest.raises(ValueError, match="backup folder"):
        check_path(f"./{BACKUP_DIR}/x.md")
    assert check_path("./kb/x.md") == "kb/x.md" and check_path("kb/./x.md") == "kb/x.md"
    assert check_context_target("kb/fees/fee.md") == "kb/fees/fee.md"
    assert check_context_target("system_prompt.md") == "system_prompt.md"
    assert check_context_target("skills/refunds/SKILL.md") == "skills/refunds/SKILL.md"
    for bad in ("kb/x.exe", "other/x.md", "kb", ".github/workflows/ci.yml"):
        with pytest.raises(ValueError):
            check_context_target(bad)


def test_ordinary_apply_still_works(ws: Path) -> None:
    before = (ws / FEE).read_text()
    done = apply_recommendation(rec(Operation.UPDATE, FEE, before, "The fee is $35.\n"), ws, confirm=True)
    assert done.applied and (ws / FEE).read_text() == "The fee is $35.\n"
    created = apply_recommendation(rec(Operation.CREATE, "kb/fees/new.md", None, "new\n"), ws, confirm=True)
    assert created.applied and (ws / "kb/fees/new.md").read_text() == "new\n"

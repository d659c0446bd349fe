"""The context workspace and its six exploration tools."""

from __future__ import annotations

import json

import pytest

from causal_middleware.context.explorer import EXPLORATION_TOOLS, WorkspaceExplorer
from causal_middleware.context.tools import workspace_tools
from causal_middleware.context.workspace import Workspace, component_type, split_front_matter


def test_front_matter_and_typed_views(workspace: Workspace) -> None:
    entry = workspace.kb_entry("kb/fees/overdraft-fee.md")
    assert entry.id == "kb-overdraft-fee"
    assert entry.title == "Overdraft fee"
    assert entry.modified == "2024-01-10"
    assert entry.status == "official" and entry.level == "department" and entry.owner == "knowledge-team"
    assert workspace.kb_entry("kb-overdraft-fee").path == "kb/fees/overdraft-fee.md"
    assert [s.name for s in workspace.skills()] == ["dispute-a-charge"]
    assert workspace.tool_names() == ["transfer_funds"]
    assert "Example Bank" in workspace.system_prompt()


def test_search_kb_ranks_the_matching_entry_first(workspace: Workspace) -> None:
    hits = workspace.search_kb("overdraft fee", k=2)
    assert hits[0].path == "kb/fees/overdraft-fee.md"
    assert hits[0].content == workspace.read("kb/fees/overdraft-fee.md")  # whole file, exact copy
    assert all(h.score > 0 for h in hits)
    assert workspace.search_kb("   ") == []
    assert workspace.search_kb("zebra quantum") == []
    with pytest.raises(ValueError, match="k must be positive"):
        workspace.search_kb("fee", k=0)


def test_explorer_logs_every_call(workspace: Workspace) -> None:
    ex = WorkspaceExplorer(workspace)
    ex.search_kb("wire fee")
    ex.read_kb_entry("kb/fees/wire-fee.md")
    ex.list_skills()
    ex.read_skill("dispute-a-charge")
    ex.read_system_prompt()
    ex.read_tool_prompt("transfer_funds")
    assert [c.tool for c in ex.calls] == list(EXPLORATION_TOOLS)
    assert ex.read_kb_entry("kb/nope.md") is None
    assert ex.calls[-1].ok is False and "no knowledge-base entry" in ex.calls[-1].summary


def test_langchain_tools_return_workspace_text(workspace: Workspace) -> None:
    tools = {t.name: t for t in workspace_tools(workspace)}
    assert set(tools) == set(EXPLORATION_TOOLS)
    hits = json.loads(tools["search_kb"].invoke({"query": "overdraft fee"}))
    assert hits[0]["path"] == "kb/fees/overdraft-fee.md"
    assert tools["read_tool_prompt"].invoke({"name": "transfer_funds"}) == workspace.read(
        "tools/transfer_funds.md"
    )
    assert tools["read_skill"].invoke({"name": "missing"}).startswith("Error:")


def test_bad_paths_and_front_matter_are_named(tmp_path) -> None:
    with pytest.raises(ValueError, match="must be relative"):
        Workspace.from_files({"../escape.md": "x"})
    with pytest.raises(ValueError, match="never closed"):
        split_front_matter("---\nid: x\n")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Workspace.from_dir(tmp_path / "missing")
    with pytest.raises(KeyError, match="no file"):
        Workspace.from_files({"kb/a.md": "a"}).read("kb/b.md")


def test_dir_round_trip_skips_backups(workspace: Workspace, tmp_path) -> None:
    workspace.write_to(tmp_path)
    (tmp_path / ".causal-backup" / "x").mkdir(parents=True)
    (tmp_path / ".causal-backup" / "x" / "old.md").write_text("old")
    again = Workspace.from_dir(tmp_path)
    assert again.files == workspace.files
    changed = again.with_changes({"kb/fees/wire-fee.md": None, "kb/new.md": "new"})
    assert not changed.exists("kb/fees/wire-fee.md") and changed.read("kb/new.md") == "new"
    assert again.exists("kb/fees/wire-fee.md")  # the original is untouched


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("system_prompt.md", "system_prompt"),
        ("tools/x.md", "tool"),
        ("skills/a/b/SKILL.md", "skill"),
        ("kb/a/b.md", "kb"),
        ("notes.md", "other"),
        (None, "other"),
    ],
)
def test_component_type(path, kind) -> None:
    assert component_type(path) == kind

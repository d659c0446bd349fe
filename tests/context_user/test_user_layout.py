"""A workspace config (``causal-context.yaml``) declares the user's layout; only what it declares
is read or written, with the path guarantees of the default layout kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from causal_middleware.context.apply import apply_recommendation
from causal_middleware.context.recommendation import Classification, Operation, Recommendation, make_id
from causal_middleware.context.workspace import (
    BACKUP_DIR,
    Workspace,
    check_context_target,
    find_layout,
    load_layout,
)

from .support_agent import STALE_PAGE, write_workspace


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
def root(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "acme")


def test_the_layout_gives_each_file_its_kind(root: Path) -> None:
    ws = Workspace.from_dir(root)
    kind = ws.component_type
    assert kind("agent/system.txt") == "system_prompt" and ws.system_prompt().startswith("You are")
    assert kind(STALE_PAGE) == kind("docs/faq/account/password-reset.md") == "kb"
    assert kind("playbooks/cancel-subscription.md") == "skill" and kind("agent/tools.json") == "tool"
    assert kind("README.md") == kind("causal-context.yaml") == kind("docs/other.md") == "other"
    assert [e.title for e in ws.kb_entries()] == ["Password reset", "Invoices", "Refunds"]  # from headings
    assert ws.search_kb("refund window")[0].path == STALE_PAGE
    assert [s.name for s in ws.skills()] == ["cancel-subscription"]
    assert ws.tool_names() == ["open_playbook", "search_help_center"]
    assert ws.tool_prompt_path("open_playbook") == "agent/tools.json"
    assert "Open a support playbook" in ws.tool_prompt("open_playbook")
    with pytest.raises(KeyError):
        ws.tool_prompt("missing_tool")
    assert ws.kb_root() == "docs/faq"


def test_only_declared_files_may_be_written(root: Path) -> None:
    layout = find_layout(root)
    assert check_context_target(STALE_PAGE, layout) == STALE_PAGE
    assert check_context_target("docs/faq/billing/new-page.md", layout)  # a CREATE under the glob
    for path, why in (
        ("README.md", "not a context file"),
        ("causal-context.yaml", "workspace config"),
        ("kb/fees.md", "not a context file"),  # the default layout's folder is not this workspace's
        ("system_prompt.md", "not a context file"),
        ("docs/faq/.hidden.md", "dot"),
        (".git/config", "dot"),
        ("../outside.md", "inside the workspace"),
    ):
        with pytest.raises(ValueError, match=why):
            check_context_target(path, layout)
    with pytest.raises(ValueError, match="not a context file"):
        apply_recommendation(rec(Operation.UPDATE, "README.md", None, "x"), root, confirm=True)
    with pytest.raises(ValueError, match="workspace config"):
        apply_recommendation(
            rec(Operation.UPDATE, "causal-context.yaml", None, "kb: '**'"), root, confirm=True
        )
    assert not (root / BACKUP_DIR).exists()


def test_symlinks_out_of_the_declared_files_are_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe secret is 42 and must stay outside.\n")
    (root / "docs/faq/linked").symlink_to(outside, target_is_directory=True)
    (root / "docs/faq/secret.md").symlink_to(outside / "secret.md")
    (root / "docs/faq/readme.md").symlink_to(root / "README.md")  # inside, but not a declared file
    ws = Workspace.from_dir(root)
    assert not any("secret" in p or "linked" in p for p in ws.files)  # never read
    with pytest.raises(ValueError, match="outside the workspace"):
        apply_recommendation(rec(Operation.CREATE, "docs/faq/linked/x.md", None, "x"), root, confirm=True)
    with pytest.raises(ValueError, match="outside the workspace"):
        apply_recommendation(rec(Operation.UPDATE, "docs/faq/secret.md", None, "x"), root, confirm=True)
    with pytest.raises(ValueError, match="resolves .* to 'README.md'"):
        apply_recommendation(
            rec(Operation.UPDATE, "docs/faq/readme.md", (root / "README.md").read_text(), "x"),
            root,
            confirm=True,
        )
    assert (outside / "secret.md").read_text().startswith("# Secret") and not (root / BACKUP_DIR).exists()


@pytest.mark.parametrize(
    "text, why",
    [
        ("kb: ../elsewhere/*.md\n", "inside the workspace"),
        ("kb: /etc/*.md\n", "must be relative"),
        ("skills: .git/*\n", "dot-directory"),
        ("prompt: agent/*.txt\n", "one file"),
        ("knowledge: docs/\n", "unknown key"),
        ("- kb\n", "a mapping"),
        ("kb: [1, 2]\n", "a path, a glob or a list"),
    ],
)
def test_bad_configs_are_named(tmp_path: Path, text: str, why: str) -> None:
    config = tmp_path / "causal-context.yaml"
    config.write_text(text)
    with pytest.raises(ValueError, match=why):
        load_layout(config)


def test_folders_and_one_file_per_tool(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "main.md").write_text("You help.\n")
    (root / "tool-docs").mkdir()
    (root / "tool-docs" / "lookup.md").write_text("---\nname: lookup_order\n---\nLooks up an order.\n")
    (root / "help").mkdir()
    (root / "help" / "a.txt").write_text("The fee is $5.\n")
    (root / "causal-context.yaml").write_text("prompt: prompts/main.md\nkb: help\ntools: tool-docs/\n")
    ws = Workspace.from_dir(root)
    assert ws.layout.kb == ["help/**"] and ws.layout.skills == []
    assert (
        ws.tool_names() == ["lookup_order"] and ws.tool_prompt_path("lookup_order") == "tool-docs/lookup.md"
    )
    assert ws.tool_prompt_path("new_tool") == "tool-docs/new_tool.md"
    assert [e.path for e in ws.kb_entries()] == ["help/a.txt"] and ws.skills() == []

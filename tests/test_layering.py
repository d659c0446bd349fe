"""Layering rules import-linter cannot see: ``causal_middleware.integrations`` lives in the top-level
``integrations/`` folder (mapped into the package at install), so grimp does not walk it. Every
import is checked, lazy ones inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, imported names) of every import in ``path``, absolute names resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
    return found


def _files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).parts
    return "causal_middleware.integrations" if rel[0] == "integrations" else ".".join(rel[:2])


@pytest.mark.parametrize("folder", ["causal_middleware"])
def test_the_core_never_imports_the_integrations(folder: str) -> None:
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {module}"
        for p in _files(folder)
        # the CLI and the package root (its ``instrument`` / ``repair_on_failure`` shortcuts) compose
        if "cli" not in p.relative_to(ROOT).parts and p != ROOT / "causal_middleware" / "__init__.py"
        for line, module, _ in _imports(p)
        if module.startswith("causal_middleware.integrations")
    ]
    assert bad == []


def test_the_integrations_never_import_the_cli_or_the_benchmarks() -> None:
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {module}"
        for p in _files("integrations")
        for line, module, _ in _imports(p)
        if module.split(".")[0] == "benchmarks" or module.startswith("causal_middleware.cli")
    ]
    assert bad == []


def test_no_private_name_is_imported_across_packages() -> None:
    bad = []
    for p in _files("causal_middleware") + _files("integrations"):
        here = _package_of(p)
        for line, module, names in _imports(p):
            if not module.startswith("causal_middleware."):
                continue
            there = ".".join(module.split(".")[:2])
            if module.startswith("causal_middleware.integrations"):
                there = "causal_middleware.integrations"
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and there != here:
                bad.append(f"{p.relative_to(ROOT)}:{line} imports {private} from {module}")
    assert bad == []

"""README.md opens with the two set-up-and-run commands and is the assembled docs/ (no drift)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _builder():
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "docs" / "build_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_opens_with_exactly_make_demo_and_make_test() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```[a-z]*\n(.*?)```", text, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert text.index(first_block.group(0)) < text.index("\n## ")


def test_readme_is_the_assembled_docs() -> None:
    assert (ROOT / "README.md").read_text(encoding="utf-8") == _builder().build(), (
        "README.md is out of date: run `python docs/build_readme.py`"
    )


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.M)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test:", makefile, re.M) and re.search(r"^demo:", makefile, re.M)

"""README.md opens with the two set-up-and-run commands, stays short, and its example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_exactly_make_demo_and_make_test() -> None:
    first_block = re.search(r"```[a-z]*\n(.*?)```", README, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert README.index(first_block.group(0)) < README.index("\n## ")


def test_readme_is_short_and_links_every_reference_page() -> None:
    assert len(README.splitlines()) <= 200
    for page in re.findall(r"\(docs/([\w.-]+\.md)\)", README):
        assert (ROOT / "docs" / page).exists(), page


def test_readme_python_example_runs_on_the_users_own_graph(tmp_path: Path) -> None:
    block = re.search(r"```python\n(.*?)```", README, re.S)
    assert block is not None
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 15
    script = tmp_path / "example.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'examples')!r})\n{code}", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    expected = re.search(r"# (repaired .*)\n", code)
    assert expected is not None and expected.group(1) in done.stdout

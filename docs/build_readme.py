"""Assemble README.md from docs/: the head, then each area's reference with headings one level down.

Run ``python docs/build_readme.py`` after editing anything under docs/; ``tests/test_readme.py``
fails when README.md is out of date, so the two never drift apart.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
README = DOCS.parent / "README.md"
SECTIONS = (
    "instrumentation.md",
    "store.md",
    "world-and-agent.md",
    "retrieval-and-models.md",
    "replay.md",
    "faults.md",
    "attribution.md",
    "bench.md",
    "repair.md",
    "context.md",
    "span-contract.md",
)


def _section(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            line = "#" + line
        out.append(line)
    body = "\n".join(out)
    # links between docs pages point into docs/ once the page lives in README
    return re.sub(r"\]\((?!https?://|#|docs/)([^)]+\.md)(#[^)]*)?\)", r"](docs/\1\2)", body)


def build() -> str:
    parts = [(DOCS / "_readme_head.md").read_text(encoding="utf-8").rstrip()]
    for name in SECTIONS:
        path = DOCS / name
        if path.exists():
            parts.append(_section(path).rstrip())
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    text = build()
    if "--check" in sys.argv:
        sys.exit(0 if README.read_text(encoding="utf-8") == text else 1)
    README.write_text(text, encoding="utf-8")

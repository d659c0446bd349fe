"""A context workspace: the sources an agent's context is built from, as files.

Layout (paths are POSIX, relative to the workspace root)::

    system_prompt.md              the system prompt
    tools/<tool>.md               one tool's description (its "tool prompt")
    skills/**/SKILL.md            skills / SOPs, YAML front matter: name, description, ...
    kb/**/<entry>.md              knowledge-base entries, YAML front matter: id, title, modified,
                                  author, version, status, owner, level, supersedes, keywords

A workspace is read from a directory or built from a ``{path: text}`` mapping (the simulation keeps
its workspaces in memory). It is read-only; changes go through :mod:`causal_middleware.context.apply`.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from causal_middleware.context.search import BM25, analyze

SYSTEM_PROMPT_PATH = "system_prompt.md"
TOOLS_DIR = "tools"
SKILLS_DIR = "skills"
KB_DIR = "kb"
BACKUP_DIR = ".causal-backup"
TEXT_SUFFIXES = (".md", ".txt", ".markdown", ".yaml", ".yml", ".json")

ComponentType = Literal["system_prompt", "tool", "skill", "kb", "other"]


class KBEntry(BaseModel):
    """One knowledge-base document with its metadata."""

    path: str
    id: str
    title: str
    modified: str | None = Field(default=None, description="ISO date of the last change")
    author: str | None = None
    version: str | None = None
    status: str | None = Field(default=None, description="official | draft | deprecated | archived ...")
    owner: str | None = None
    level: str | None = Field(default=None, description="organization | department | team | individual")
    supersedes: list[str] = Field(default_factory=list, description="ids or paths this entry replaces")
    superseded_by: str | None = None
    keywords: list[str] = Field(default_factory=list)
    body: str = ""
    text: str = Field(default="", description="the whole file, front matter included")
    metadata: dict[str, Any] = Field(default_factory=dict)


class SkillInfo(BaseModel):
    name: str
    path: str
    description: str = ""
    body: str = ""
    text: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class KBHit(BaseModel):
    """One ``search_kb`` result: the entry's whole file as ``content``."""

    path: str
    id: str
    title: str
    score: float
    content: str


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(metadata, body)`` of a file with optional ``---`` YAML front matter."""
    meta, body = _split_front_matter(text)
    return dict(meta), body


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=4096)
def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            raw = "".join(lines[1:i])
            try:
                meta = yaml.load(raw, Loader=_Loader) or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"malformed YAML front matter: {exc}") from exc
            if not isinstance(meta, dict):
                raise ValueError("front matter must be a YAML mapping")
            return {k: _plain(v) for k, v in meta.items()}, "".join(lines[i + 1 :])
    raise ValueError("front matter opened with '---' is never closed")


def _plain(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def check_path(path: str) -> str:
    """A clean relative POSIX path inside the workspace, or ValueError naming the problem."""
    if not path or not isinstance(path, str):
        raise ValueError(f"workspace path must be a non-empty string, got {path!r}")
    if (
        _CLEAN.match(path)
        and not path.startswith(".")
        and "/." not in path
        and "//" not in path
        and not path.endswith("/")
    ):
        return path  # no "." or ".." part, no dot part at all (so not the backup folder)
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"workspace path {path!r} must be relative and stay inside the workspace")
    if BACKUP_DIR in p.parts:
        raise ValueError(f"workspace path {path!r} points into the backup folder")
    if not p.parts:
        raise ValueError(f"workspace path {path!r} names no file")
    return p.as_posix()


CONTEXT_DIRS = (TOOLS_DIR, SKILLS_DIR, KB_DIR)


def check_context_target(path: str) -> str:
    """A path :mod:`~causal_middleware.context.apply` may write: a clean relative path
    (:func:`check_path`) to a context file of the layout (``system_prompt.md``, or a text file
    under ``tools/``, ``skills/`` or ``kb/``), with no dot part (``.git``, the backup folder,
    ``.env``). ValueError naming the problem otherwise."""
    rel = check_path(path)
    parts = PurePosixPath(rel).parts
    if any(part.startswith(".") for part in parts):
        raise ValueError(
            f"workspace path {path!r} is in a dot-directory or is a dot-file; refusing to write it"
        )
    if rel != SYSTEM_PROMPT_PATH and (len(parts) < 2 or parts[0] not in CONTEXT_DIRS):
        raise ValueError(
            f"workspace path {path!r} is not a context file: only {SYSTEM_PROMPT_PATH} and files under "
            f"{', '.join(d + '/' for d in CONTEXT_DIRS)} may be written"
        )
    if PurePosixPath(rel).suffix not in TEXT_SUFFIXES:
        raise ValueError(f"workspace path {path!r} is not a text context file ({', '.join(TEXT_SUFFIXES)})")
    return rel


_CLEAN = re.compile(r"^[\w.-][\w./ -]*$")


def component_type(path: str | None) -> ComponentType:
    """Which kind of context source a workspace path is."""
    if not path:
        return "other"
    p = PurePosixPath(path)
    if p.as_posix() == SYSTEM_PROMPT_PATH:
        return "system_prompt"
    head = p.parts[0] if p.parts else ""
    if head == TOOLS_DIR:
        return "tool"
    if head == SKILLS_DIR and p.name == "SKILL.md":
        return "skill"
    if head == KB_DIR:
        return "kb"
    return "other"


def tool_prompt_path(name: str) -> str:
    return f"{TOOLS_DIR}/{name}.md"


class Workspace:
    """The context sources of one agent, read-only."""

    def __init__(self, files: Mapping[str, str], *, root: Path | None = None, _checked: bool = False) -> None:
        self._files = dict(files) if _checked else {check_path(p): t for p, t in files.items()}
        self.root = root
        self._kb: list[KBEntry] | None = None
        self._index: BM25 | None = None

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_dir(cls, root: str | Path) -> Workspace:
        """Read every text file under ``root`` (the backup folder excluded)."""
        base = Path(root)
        if not base.is_dir():
            raise FileNotFoundError(f"workspace directory {str(base)!r} does not exist")
        files: dict[str, str] = {}
        for f in sorted(base.rglob("*")):
            rel = f.relative_to(base)
            if not f.is_file() or (rel.parts and rel.parts[0] == BACKUP_DIR) or f.suffix not in TEXT_SUFFIXES:
                continue
            files[rel.as_posix()] = f.read_text(encoding="utf-8")
        return cls(files, root=base)

    @classmethod
    def from_files(cls, files: Mapping[str, str]) -> Workspace:
        return cls(files)

    def with_changes(self, changes: Mapping[str, str | None]) -> Workspace:
        """A copy with files replaced (``None`` deletes); the original is untouched."""
        files = dict(self._files)
        for path, text in changes.items():
            path = check_path(path)
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
        return Workspace(files, root=self.root, _checked=True)

    def write_to(self, root: str | Path) -> Path:
        """Write every file under ``root`` (created when missing)."""
        base = Path(root)
        for path, text in self._files.items():
            target = base / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return base

    # --- raw files ------------------------------------------------------------------------
    @property
    def files(self) -> dict[str, str]:
        return dict(self._files)

    def exists(self, path: str) -> bool:
        return check_path(path) in self._files

    def read(self, path: str) -> str:
        path = check_path(path)
        if path not in self._files:
            raise KeyError(f"no file {path!r} in the workspace")
        return self._files[path]

    def dirs(self, under: str = KB_DIR) -> list[str]:
        """Directories that hold files, below ``under``."""
        return sorted({PurePosixPath(p).parent.as_posix() for p in self._files if p.startswith(under + "/")})

    # --- typed views ----------------------------------------------------------------------
    def system_prompt(self) -> str:
        if SYSTEM_PROMPT_PATH not in self._files:
            raise KeyError(f"the workspace has no {SYSTEM_PROMPT_PATH}")
        return self._files[SYSTEM_PROMPT_PATH]

    def tool_names(self) -> list[str]:
        return sorted(PurePosixPath(p).stem for p in self._files if component_type(p) == "tool")

    def tool_prompt(self, name: str) -> str:
        path = tool_prompt_path(name)
        if path not in self._files:
            raise KeyError(
                f"no tool prompt for {name!r} (expected {path}); tools: {', '.join(self.tool_names())}"
            )
        return self._files[path]

    def skills(self) -> list[SkillInfo]:
        out = []
        for path, text in sorted(self._files.items()):
            if component_type(path) != "skill":
                continue
            meta, body = split_front_matter(text)
            name = str(meta.get("name") or PurePosixPath(path).parent.name)
            out.append(
                SkillInfo(
                    name=name,
                    path=path,
                    description=str(meta.get("description") or ""),
                    body=body,
                    text=text,
                    metadata=meta,
                )
            )
        return out

    def skill(self, name_or_path: str) -> SkillInfo:
        for s in self.skills():
            if name_or_path in (s.name, s.path, PurePosixPath(s.path).parent.as_posix()):
                return s
        names = ", ".join(s.name for s in self.skills())
        raise KeyError(f"no skill {name_or_path!r} in the workspace; skills: {names}")

    def kb_entries(self) -> list[KBEntry]:
        if self._kb is None:
            self._kb = [_kb_entry(p, t) for p, t in sorted(self._files.items()) if component_type(p) == "kb"]
        return list(self._kb)

    def kb_entry(self, path_or_id: str) -> KBEntry:
        for e in self.kb_entries():
            if path_or_id in (e.path, e.id):
                return e
        raise KeyError(f"no knowledge-base entry {path_or_id!r} in the workspace")

    def search_kb(self, query: str, k: int = 3) -> list[KBHit]:
        """BM25 over title, keywords and body; whole files come back as ``content``."""
        entries = self.kb_entries()
        if not entries or not query.strip():
            return []
        if self._index is None:
            self._index = BM25([analyze(" ".join([e.title, " ".join(e.keywords), e.body])) for e in entries])
        return [
            KBHit(
                path=entries[i].path,
                id=entries[i].id,
                title=entries[i].title,
                score=round(s, 4),
                content=entries[i].text,
            )
            for i, s in self._index.top(analyze(query), k)
        ]


def _kb_entry(path: str, text: str) -> KBEntry:
    try:
        meta, body = split_front_matter(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    title = str(meta.get("title") or _first_heading(body) or PurePosixPath(path).stem)
    supersedes = meta.get("supersedes") or []
    if isinstance(supersedes, str):
        supersedes = [supersedes]
    keywords = meta.get("keywords") or []
    if isinstance(keywords, str):
        keywords = [k.strip() for k in keywords.split(",") if k.strip()]
    return KBEntry(
        path=path,
        id=str(meta.get("id") or path),
        title=title,
        modified=_opt_str(meta.get("modified")),
        author=_opt_str(meta.get("author")),
        version=_opt_str(meta.get("version")),
        status=_opt_str(meta.get("status")),
        owner=_opt_str(meta.get("owner")),
        level=_opt_str(meta.get("level")),
        supersedes=[str(s) for s in supersedes],
        superseded_by=_opt_str(meta.get("superseded_by")),
        keywords=[str(k) for k in keywords],
        body=body,
        text=text,
        metadata=meta,
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _first_heading(body: str) -> str | None:
    for line in body.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return None

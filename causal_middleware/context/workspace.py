"""A context workspace: the sources an agent's context is built from, as files.

Layout (paths are POSIX, relative to the workspace root)::

    system_prompt.md              the system prompt
    tools/<tool>.md               one tool's description (its "tool prompt")
    skills/**/SKILL.md            skills / SOPs, YAML front matter: name, description, ...
    kb/**/<entry>.md              knowledge-base entries, YAML front matter: id, title, modified,
                                  author, version, status, owner, level, supersedes, keywords

That is the default layout. A user's own workspace declares its layout in a small config file,
``causal-context.yaml`` next to it (or passed with ``--config``), mapping component kinds to
files, globs or folders (see :class:`WorkspaceLayout`)::

    prompt: agent/system.txt          # the system prompt (one file)
    kb: docs/faq/**/*.md              # knowledge-base pages (a glob, a folder/ or a list)
    skills: playbooks/*.md            # skills / playbooks, one per file
    tools: agent/tools.json           # tool descriptions: a folder/ (one file per tool) or a
                                      # JSON/YAML file describing several tools

Under a config only the files it declares are read and only those may be written.

A workspace is read from a directory or built from a ``{path: text}`` mapping (the simulation keeps
its workspaces in memory). It is read-only; changes go through :mod:`causal_middleware.context.apply`.
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import json
import os
import re
import tomllib
import warnings
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from causal_middleware.context.dates import change_date
from causal_middleware.context.markup import (
    MEDIAWIKI_SUFFIXES,
    display_title,
    first_title,
    html_text,
    markup_fields,
    markup_header,
)
from causal_middleware.context.text import index_terms
from causal_middleware.prompts.reply import balanced_end
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.tasks.model import Passage

SYSTEM_PROMPT_PATH = "system_prompt.md"
TOOLS_DIR = "tools"
SKILLS_DIR = "skills"
KB_DIR = "kb"
BACKUP_DIR = ".causal-backup"
# Markup a knowledge base is written in (read as text: titles and header fields by markup.py)
TEXT_SUFFIXES = (
    ".md", ".txt", ".markdown", ".mdx", ".adoc", ".asciidoc", ".rst", ".html", ".htm", ".yaml", ".yml", ".json",
)  # fmt: skip
# Formats that are never text context, whatever bytes a file of them starts with
BINARY_SUFFIXES = frozenset(
    ".pdf .png .jpg .jpeg .gif .webp .ico .zip .gz .tgz .bz2 .xz .7z .tar .doc .docx .xls .xlsx .ppt "
    ".pptx .odt .ods .odp .pyc .so .dll .exe .bin .db .sqlite .woff .woff2 .ttf .mp3 .mp4 .wav".split()
)

CONFIG_NAMES = ("causal-context.yaml", "causal-context.yml")

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
    fenced = _fenced(text, "---")
    if fenced is None:
        if text.splitlines()[0].rstrip() != "---":
            return {}, text  # a rule or a wiki data block ("---- dataentry ----"), not front matter
        raise ValueError("front matter opened with '---' is never closed")
    raw, body = fenced
    try:
        meta = yaml.load(raw, Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"malformed YAML front matter: {exc}") from exc
    if not isinstance(meta, dict):
        raise ValueError("front matter must be a YAML mapping")
    return {k: _plain(v) for k, v in meta.items()}, body


def _fenced(text: str, fence: str) -> tuple[str, str] | None:
    """``(block, rest)`` of a file whose first line is ``fence`` and that a later ``fence`` line
    closes; None otherwise."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != fence:
        return None
    for i in range(1, len(lines)):
        if lines[i].strip() == fence:
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None


def read_page(text: str) -> tuple[dict[str, Any], str]:
    """``(metadata, body)`` of a page whatever carries its metadata: YAML front matter between
    ``---`` lines, TOML front matter between ``+++`` lines (Hugo, Zola), or a whole file that is
    one JSON object, as help desks and headless CMSs export an article (its title, its body with
    any HTML reduced to text, its other fields as metadata). Malformed front matter, or a file of
    none of these forms, is ``({}, text)``."""
    meta, body = _read_page(text)
    return dict(meta), body


@functools.lru_cache(maxsize=4096)
def _read_page(text: str) -> tuple[dict[str, Any], str]:
    if text.startswith("+++"):
        return _toml_front_matter(text)
    if text.lstrip().startswith("{"):
        return _json_article(text)
    try:
        return _split_front_matter(text)
    except ValueError:
        return {}, text


def _toml_front_matter(text: str) -> tuple[dict[str, Any], str]:
    fenced = _fenced(text, "+++")
    if fenced is None:
        return {}, text
    try:
        meta = tomllib.loads(fenced[0])
    except tomllib.TOMLDecodeError:
        return {}, text
    return {k: _plain(v) for k, v in meta.items()}, fenced[1]


# The fields of an exported article that carry its title and its body, in order of preference.
_TITLE_KEYS = ("title", "name", "headline", "heading", "subject", "question")
_BODY_KEY = re.compile(
    r"^(?:body|content|html|text|answer|article|markdown|description)(?:[_-]?(?:html|text|markdown|md))?$",
    re.IGNORECASE,
)


def _json_article(text: str) -> tuple[dict[str, Any], str]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}, text
    # an export may wrap the article in one field ({"article": {...}})
    for _ in range(2):
        if not isinstance(data, dict) or any(k in data for k in _TITLE_KEYS):
            break
        inner = [v for v in data.values() if isinstance(v, dict)]
        if len(inner) != 1:
            break
        data = inner[0]
    if not isinstance(data, dict):
        return {}, text
    bodies = [(k, v) for k, v in data.items() if isinstance(v, str) and v.strip() and _BODY_KEY.match(k)]
    title = next(
        (
            data[k]
            for k in _TITLE_KEYS
            if isinstance(data.get(k), str) and 0 < len(data[k]) <= 300 and "\n" not in data[k]
        ),
        None,
    )
    if not bodies or title is None:
        return {}, text
    body_key, body = max(bodies, key=lambda kv: len(kv[1]))
    meta: dict[str, Any] = {"title": title}
    for k, v in data.items():
        if k == body_key or k in meta:
            continue
        if v is None or isinstance(v, str | int | float | bool):
            meta[k] = v
        elif isinstance(v, list) and all(isinstance(i, str | int | float) for i in v):
            meta[k] = list(v)
    return meta, html_text(body).strip() + "\n"


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


def check_context_target(path: str, layout: WorkspaceLayout | None = None) -> str:
    """A path :mod:`~causal_middleware.context.apply` may write: a clean relative path
    (:func:`check_path`) to a context file of the layout (by default ``system_prompt.md``, or a
    text file under ``tools/``, ``skills/`` or ``kb/``; under a workspace config, only a file the
    config declares, never the config itself), with no dot part (``.git``, the backup folder,
    ``.env``). ValueError naming the problem otherwise."""
    rel = check_path(path)
    parts = PurePosixPath(rel).parts
    if any(part.startswith(".") for part in parts):
        raise ValueError(
            f"workspace path {path!r} is in a dot-directory or is a dot-file; refusing to write it"
        )
    if layout is not None and not layout.default:
        if rel == layout.config_path:
            raise ValueError(f"workspace path {path!r} is the workspace config; refusing to write it")
        if layout.kind(rel) == "other":
            raise ValueError(
                f"workspace path {path!r} is not a context file: the workspace config "
                f"{layout.source or ''} declares {layout.describe()}; only those may be written"
            )
        if PurePosixPath(rel).suffix.lower() in BINARY_SUFFIXES:
            raise ValueError(f"workspace path {path!r} is a binary format, not a text context file")
        return rel  # any other declared file is context whatever its suffix (the config says so)
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


# --- layouts ------------------------------------------------------------------------------------

_KIND_KEYS: dict[str, ComponentType] = {
    "prompt": "system_prompt",
    "system_prompt": "system_prompt",
    "kb": "kb",
    "knowledge_base": "kb",
    "skills": "skill",
    "tools": "tool",
}
_GLOB_CHARS = re.compile(r"[*?\[]")
_MULTI_TOOL_SUFFIXES = (".json", ".yaml", ".yml")
# Keys beside "name" that make a mapping one tool's definition rather than a {name: description} list
_TOOL_SCHEMA_KEYS = frozenset({"description", "inputSchema", "input_schema", "parameters", "args_schema"})
MAX_FILE_BYTES = 2_000_000  # a declared file larger than this is not read as context


class WorkspaceLayout(BaseModel):
    """Which workspace files are which kind of context source.

    ``prompt`` is one file; ``kb``, ``skills`` and ``tools`` are lists of globs relative to the
    workspace root (``**`` spans folders, ``*`` and ``?`` stay inside one name; a folder is
    written ``folder/``). A path that matches several kinds is, in order, the prompt, a tool, a
    skill, a knowledge-base page. ``default`` is the fixed layout (``system_prompt.md``,
    ``tools/``, ``skills/**/SKILL.md``, ``kb/``).
    """

    prompt: str | None = SYSTEM_PROMPT_PATH
    kb: list[str] = Field(default_factory=lambda: [f"{KB_DIR}/**"])
    skills: list[str] = Field(default_factory=lambda: [f"{SKILLS_DIR}/**/SKILL.md"])
    tools: list[str] = Field(default_factory=lambda: [f"{TOOLS_DIR}/**"])
    default: bool = True
    config_path: str | None = Field(default=None, description="the config file, relative to the root")
    source: str | None = Field(default=None, description="where the layout was read from")

    def kind(self, path: str | None) -> ComponentType:
        """Which kind of context source ``path`` is under this layout."""
        if not path:
            return "other"
        if self.default:
            return component_type(path)
        rel = PurePosixPath(path).as_posix()
        if rel == self.config_path:
            return "other"
        if self.prompt and rel == self.prompt:
            return "system_prompt"
        for kind, patterns in (("tool", self.tools), ("skill", self.skills), ("kb", self.kb)):
            if any(_glob_re(p).match(rel) for p in patterns):
                return kind  # type: ignore[return-value]
        return "other"

    def kb_root(self) -> str:
        """The folder new knowledge-base pages go to when no similar page is found."""
        return _literal_prefix(self.kb[0]) if self.kb else KB_DIR

    def tool_folder(self) -> str | None:
        """The folder that holds one file per tool, when the layout has one."""
        for p in self.tools:
            if _GLOB_CHARS.search(p):
                return _literal_prefix(p)
        return None

    def describe(self) -> str:
        parts = [f"prompt {self.prompt}"] if self.prompt else []
        for key, patterns in (("kb", self.kb), ("skills", self.skills), ("tools", self.tools)):
            if patterns:
                parts.append(f"{key} {', '.join(patterns)}")
        return "; ".join(parts) or "no files"


DEFAULT_LAYOUT = WorkspaceLayout()


def find_config(root: str | Path) -> Path | None:
    """The workspace config next to (inside) ``root``, when there is one."""
    base = Path(root)
    for name in CONFIG_NAMES:
        candidate = base / name
        if candidate.is_file():
            return candidate
    return None


def config_root(config: str | Path) -> Path:
    """The workspace root a config file describes: its ``root`` key (relative to the file),
    else the folder the file is in."""
    path = Path(config)
    data = _read_config(path)
    root = data.get("root")
    if root is not None and not isinstance(root, str):
        raise ValueError(f"{path}: 'root' must be a path")
    return (path.parent / root) if root else path.parent


def load_layout(config: str | Path, *, root: str | Path | None = None) -> WorkspaceLayout:
    """The layout a workspace config declares (see the module docstring). Every path and glob
    must be relative, stay inside the workspace and name no dot-directory; folders are written
    ``folder/`` (a name that is a folder of ``root`` counts as one too)."""
    path = Path(config)
    data = _read_config(path)
    base = Path(root) if root is not None else config_root(path)
    unknown = sorted(set(data) - set(_KIND_KEYS) - {"root"})
    if unknown:
        raise ValueError(
            f"{path}: unknown key(s) {', '.join(unknown)}; expected prompt, kb, skills, tools (and root)"
        )
    fields: dict[str, Any] = {"prompt": None, "kb": [], "skills": [], "tools": []}
    for key, value in data.items():
        if key == "root" or value is None:
            continue
        kind = _KIND_KEYS[key]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
            raise ValueError(f"{path}: {key!r} must be a path, a glob or a list of them")
        if kind == "system_prompt":
            if len(items) != 1 or _GLOB_CHARS.search(items[0]) or items[0].endswith("/"):
                raise ValueError(f"{path}: {key!r} must name one file")
            fields["prompt"] = _config_path(path, key, items[0])
            continue
        field = {"kb": "kb", "skill": "skills", "tool": "tools"}[kind]
        for item in items:
            pattern = _config_path(path, key, item.rstrip("/")) if item.rstrip("/") else ""
            if item.endswith("/") or (not _GLOB_CHARS.search(item) and (base / item).is_dir()):
                pattern = f"{pattern}/**"
            fields[field].append(pattern)
    config_rel: str | None = None
    try:
        config_rel = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        config_rel = None
    return WorkspaceLayout(**fields, default=False, config_path=config_rel, source=str(path))


def find_layout(root: str | Path) -> WorkspaceLayout:
    """The layout of the workspace at ``root``: its config when it has one, else the default."""
    config = find_config(root)
    return load_layout(config, root=root) if config is not None else DEFAULT_LAYOUT


def _read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"workspace config {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a workspace config is a mapping (prompt, kb, skills, tools)")
    return data


def _config_path(config: Path, key: str, value: str) -> str:
    try:
        rel = check_path(value)
    except ValueError as exc:
        raise ValueError(f"{config}: {key}: {exc}") from exc
    if any(part.startswith(".") for part in PurePosixPath(rel).parts):
        raise ValueError(f"{config}: {key}: {value!r} names a dot-directory or dot-file")
    return rel


@functools.lru_cache(maxsize=256)
def _glob_re(pattern: str) -> re.Pattern[str]:
    parts = pattern.split("/")
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(r"[^/].*" if last else r"(?:[^/]+/)*")
            continue
        seg, j = "", 0
        while j < len(part):
            c = part[j]
            if c == "*":
                seg += r"[^/]*"
            elif c == "?":
                seg += r"[^/]"
            elif c == "[" and "]" in part[j + 1 :]:
                end = part.index("]", j + 1)
                seg += _class_re(part[j + 1 : end])
                j = end
            else:
                seg += re.escape(c)
            j += 1
        out.append(seg if last else seg + "/")
    return re.compile("".join(out) + r"\Z")


def _class_re(body: str) -> str:
    """A glob character class (``[a-z0-9]``, ``[!_]``) as a regex class: ranges kept, every other
    character literal, a negated class never matching ``/``."""
    negated = body.startswith("!")
    if negated:
        body = body[1:]
    chars = "".join("-" if c == "-" and 0 < k < len(body) - 1 else re.escape(c) for k, c in enumerate(body))
    return f"[^/{chars}]" if negated else f"[{chars}]"


def _literal_prefix(pattern: str) -> str:
    parts = []
    for part in pattern.split("/"):
        if _GLOB_CHARS.search(part):
            break
        parts.append(part)
    if parts and parts == pattern.split("/"):
        parts = parts[:-1]  # a file: its folder
    return "/".join(parts) or "."


def _tool_names_in(path: str, text: str) -> list[str] | None:
    """The tools a JSON / YAML file describes (a list of ``{name, description}``, OpenAI-style
    ``{"function": {...}}`` items, ``{"tools": [...]}``, ``{name: description}``, one tool's
    manifest, or OpenAPI operations by ``operationId``) or a Python module defines (``@tool``
    functions); None for a file that is not such a collection."""
    if PurePosixPath(path).suffix == ".py":
        return _python_tool_names(text)
    if PurePosixPath(path).suffix in _JVM_SUFFIXES:
        return _jvm_tool_names(text)
    if PurePosixPath(path).suffix == ".cs":
        return _kernel_function_names(text)
    if PurePosixPath(path).suffix not in _MULTI_TOOL_SUFFIXES:
        return None
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.load(text, Loader=_Loader)
    except (ValueError, yaml.YAMLError):
        return None
    operations = _openapi_operation_ids(data)
    if operations:
        return operations  # an OpenAPI document, a path item or an operation: one tool per operationId
    if _is_json_schema(data):
        return None  # one tool's argument schema (e.g. a Pydantic model's): its file names the tool
    if isinstance(data, dict) and isinstance(data.get("tools"), list | dict):
        data = data["tools"]
    elif isinstance(data, dict) and isinstance(data.get("function"), dict):
        data = data["function"]  # one OpenAI-style tool
    if isinstance(data, dict) and isinstance(data.get("name"), str) and _TOOL_SCHEMA_KEYS & data.keys():
        return [data["name"]]  # one tool's manifest (an MCP tool, a function definition)
    names: list[str] = []
    if isinstance(data, list):
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("function"), dict):
                item = item["function"]
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                names.append(item["name"])
    elif isinstance(data, dict):
        names = [str(k) for k, v in data.items() if isinstance(v, str | dict)]
    return names or None


def _is_json_schema(data: object) -> bool:
    """A JSON Schema of an object (``{"type": "object", "properties": {...}}``, as Pydantic's
    ``model_json_schema()`` writes one): an argument schema, whose keys are keywords, not tools."""
    if not isinstance(data, dict) or "name" in data or not isinstance(data.get("properties"), dict):
        return False
    return data.get("type") == "object" or "$schema" in data or isinstance(data.get("required"), list)


_JVM_SUFFIXES = frozenset({".java", ".kt"})
_JVM_TOOL = re.compile(r"@Tool\b(?!Param)")
_OPEN_PAREN = re.compile(r"\s*\(")
_JVM_NAME_ARG = re.compile(r"\bname\s*=\s*\"((?:[^\"\\]|\\.)+)\"")
# what may stand between an annotation and the method it marks: more annotations, modifiers, the
# return type (generics, arrays, a Kotlin "fun"), then the method's name and its "("
_JVM_METHOD = re.compile(r"\s*(?:@\w+(?:\.\w+)*(?:\s*\([^)]*\))?\s*)*(?:[\w<>\[\],.?\s]+?\s)?(\w+)\s*\(")


def _jvm_tool_names(text: str) -> list[str] | None:
    """The tools a Java or Kotlin source file declares with Spring AI's ``@Tool`` annotation: the
    annotation's ``name``, else the method's name (Spring AI's default). None for a file with no
    ``@Tool`` method: its file name names its tool then."""
    names: list[str] = []
    for m in _JVM_TOOL.finditer(text):
        end = m.end()
        args = ""
        paren = _OPEN_PAREN.match(text, end)
        if paren:
            close = balanced_end(text, paren.end() - 1, "(", ")")
            if close < 0:
                continue
            args, end = text[paren.end() : close - 1], close
        given = _JVM_NAME_ARG.search(args)
        if given:
            names.append(given.group(1))
            continue
        method = _JVM_METHOD.match(text, end)
        if method and method.group(1) not in ("class", "interface", "fun"):
            names.append(method.group(1))
    return list(dict.fromkeys(names)) or None


# Semantic Kernel's [KernelFunction] / [KernelFunction("name")], perhaps among other attributes in
# the same brackets, then further attribute lists, modifiers and the return type before the name
_KERNEL_FUNCTION = re.compile(
    r'\[\s*(?:[\w.]+(?:\([^\]]*\))?\s*,\s*)*KernelFunction(?:Attribute)?\s*(?:\(\s*(?:@?"(?P<name>[^"]+)")?[^\]]*\))?'
)
_CS_METHOD = re.compile(r"(?:\s*\[[^\]]*\])*\s*(?:[\w<>\[\],.?]+\s+)+?(?P<name>\w+)\s*\(")


def _kernel_function_names(text: str) -> list[str] | None:
    """The tools a C# file declares as Semantic Kernel functions: ``[KernelFunction("name")]``'s
    name, else the method's name less an ``Async`` suffix (Semantic Kernel's default). None for a
    file with none: its file name names its tool then."""
    names: list[str] = []
    for m in _KERNEL_FUNCTION.finditer(text):
        if m.group("name"):
            names.append(m.group("name"))
            continue
        close = text.find("]", m.end())
        method = _CS_METHOD.match(text, close + 1) if close >= 0 else None
        if method:
            name = method.group("name")
            names.append(name[: -len("Async")] if name.endswith("Async") and len(name) > 5 else name)
    return list(dict.fromkeys(names)) or None


_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def _openapi_operation_ids(data: object) -> list[str]:
    """The ``operationId``s of an OpenAPI / Swagger document (under ``paths``), of one path item
    (``{post: {operationId: ...}}``) or of one operation object; [] for anything else."""
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("operationId"), str):
        return [data["operationId"]]
    if ("openapi" in data or "swagger" in data) and isinstance(data.get("paths"), dict):
        items = list(data["paths"].values())
    elif data and all(isinstance(k, str) and k.startswith("/") for k in data):
        items = list(data.values())  # a paths object on its own
    else:
        items = [data]
    ids: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        for method, op in item.items():
            if (
                str(method).lower() in _HTTP_METHODS
                and isinstance(op, dict)
                and isinstance(op.get("operationId"), str)
            ):
                ids.append(op["operationId"])
    return ids


def _python_tool_names(text: str) -> list[str] | None:
    """The tools a Python module defines with LangChain's ``@tool`` decorator (``@tool``,
    ``@tool("name")``, ``@tool(args_schema=...)``, ``@tools.tool``): the name the decorator gives,
    else the function's. None for a module with none (or one that does not parse): its file name
    names its tool then. The module is parsed, never imported."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    names: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for dec in node.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            target = call.func if call else dec
            if not (
                (isinstance(target, ast.Name) and target.id == "tool")
                or (isinstance(target, ast.Attribute) and target.attr == "tool")
            ):
                continue
            given = call.args[0] if call and call.args else None
            if isinstance(given, ast.Constant) and isinstance(given.value, str) and given.value:
                names.append(given.value)
            else:
                names.append(node.name)
            break
    return names or None


class Workspace:
    """The context sources of one agent, read-only."""

    def __init__(
        self,
        files: Mapping[str, str],
        *,
        root: Path | None = None,
        layout: WorkspaceLayout | None = None,
        _checked: bool = False,
    ) -> None:
        self._files = dict(files) if _checked else {check_path(p): t for p, t in files.items()}
        self.root = root
        self.layout = layout or DEFAULT_LAYOUT
        self._kb: list[KBEntry] | None = None
        self._index: BM25Index | None = None

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_dir(cls, root: str | Path, *, config: str | Path | WorkspaceLayout | None = None) -> Workspace:
        """Read the workspace at ``root``.

        Under a workspace config (``config``, else ``causal-context.yaml`` in ``root``) only the
        files it declares are read: no dot-directory, no folder reached through a symlink, no
        file whose real path leaves the workspace. Without one, every text file under ``root``
        (the backup folder excluded), in the default layout.
        """
        base = Path(root)
        if not base.is_dir():
            raise FileNotFoundError(f"workspace directory {str(base)!r} does not exist")
        if isinstance(config, WorkspaceLayout):
            layout = config
        else:
            layout = load_layout(config, root=base) if config is not None else find_layout(base)
        if not layout.default:
            declared = _declared_files(base, layout)
            _warn_unmatched(base, layout, declared)
            return cls(declared, root=base, layout=layout, _checked=True)
        files: dict[str, str] = {}
        for f in sorted(base.rglob("*")):
            rel = f.relative_to(base)
            if not f.is_file() or (rel.parts and rel.parts[0] == BACKUP_DIR) or f.suffix not in TEXT_SUFFIXES:
                continue
            files[rel.as_posix()] = f.read_text(encoding="utf-8")
        return cls(files, root=base)

    @classmethod
    def from_files(cls, files: Mapping[str, str], *, layout: WorkspaceLayout | None = None) -> Workspace:
        if layout is not None and not layout.default:
            files = {p: t for p, t in files.items() if layout.kind(check_path(p)) != "other"}
        return cls(files, layout=layout)

    def with_changes(self, changes: Mapping[str, str | None]) -> Workspace:
        """A copy with files replaced (``None`` deletes); the original is untouched."""
        files = dict(self._files)
        for path, text in changes.items():
            path = check_path(path)
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
        return Workspace(files, root=self.root, layout=self.layout, _checked=True)

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
        """Whether the workspace has ``path`` (False for a path that cannot be inside it)."""
        try:
            return check_path(path) in self._files
        except ValueError:
            return False

    def read(self, path: str) -> str:
        path = check_path(path)
        if path not in self._files:
            raise KeyError(f"no file {path!r} in the workspace")
        return self._files[path]

    def dirs(self, under: str | None = None) -> list[str]:
        """Directories that hold files, below ``under`` (default: the knowledge-base folder)."""
        under = under or self.layout.kb_root()
        return sorted({PurePosixPath(p).parent.as_posix() for p in self._files if p.startswith(under + "/")})

    # --- layout -----------------------------------------------------------------------------
    def component_type(self, path: str | None) -> ComponentType:
        """Which kind of context source ``path`` is in this workspace's layout."""
        return self.layout.kind(path)

    def check_target(self, path: str) -> str:
        """``path`` checked as a file this workspace's layout allows writing (see
        :func:`check_context_target`)."""
        return check_context_target(path, self.layout)

    @property
    def system_prompt_path(self) -> str:
        return self.layout.prompt or SYSTEM_PROMPT_PATH

    def kb_root(self) -> str:
        return self.layout.kb_root()

    def _tool_docs(self) -> dict[str, str]:
        """Tool name -> the file that describes it."""
        out: dict[str, str] = {}
        for path, text in sorted(self._files.items()):
            if self.component_type(path) != "tool":
                continue
            if self.layout.default:
                out.setdefault(PurePosixPath(path).stem, path)
                continue
            names = _tool_names_in(path, text)
            if names is None:
                try:
                    meta, _ = split_front_matter(text)
                except ValueError:
                    meta = {}
                names = [str(meta.get("name") or PurePosixPath(path).stem)]
            for name in names:
                out.setdefault(name, path)
        return out

    def tool_prompt_path(self, name: str) -> str:
        """The file that describes tool ``name`` (where a new description would go when none does)."""
        if self.layout.default:
            return tool_prompt_path(name)
        found = self._tool_docs().get(name)
        if found:
            return found
        folder = self.layout.tool_folder()
        if folder:
            return f"{folder}/{name}.md"
        return self.layout.tools[0] if self.layout.tools else tool_prompt_path(name)

    # --- typed views ----------------------------------------------------------------------
    def system_prompt(self) -> str:
        path = self.system_prompt_path
        if path not in self._files:
            raise KeyError(f"the workspace has no {path}")
        return self._files[path]

    def tool_names(self) -> list[str]:
        return sorted(self._tool_docs())

    def tool_prompt(self, name: str) -> str:
        """The text of the file describing tool ``name`` (a whole tools file, when several share one)."""
        path = self.tool_prompt_path(name)
        if path not in self._files or (not self.layout.default and name not in self._tool_docs()):
            raise KeyError(
                f"no tool prompt for {name!r} (expected {path}); tools: {', '.join(self.tool_names())}"
            )
        return self._files[path]

    def skills(self) -> list[SkillInfo]:
        out = []
        for path, text in sorted(self._files.items()):
            if self.component_type(path) != "skill":
                continue
            meta, body = split_front_matter(text)
            p = PurePosixPath(path)
            name = str(meta.get("name") or (p.parent.name if p.name == "SKILL.md" else p.stem))
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
            self._kb = [
                _kb_entry(p, t) for p, t in sorted(self._files.items()) if self.component_type(p) == "kb"
            ]
        return list(self._kb)

    def kb_entry(self, path_or_id: str) -> KBEntry:
        for e in self.kb_entries():
            if path_or_id in (e.path, e.id):
                return e
        raise KeyError(f"no knowledge-base entry {path_or_id!r} in the workspace")

    def search_kb(self, query: str, k: int = 3) -> list[KBHit]:
        """BM25 over title, keywords and body; whole files come back as ``content``.

        Short documents, so the plain-Python backend, with the workspace's stemmed terms, each
        query term counted once, and ``k1 = 1.2``; ties go to the earlier entry."""
        entries = self.kb_entries()
        if not entries or not query.strip():
            return []
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"k must be positive, got {k!r}")
        if self._index is None:
            passages = [
                Passage(id=str(i), text=" ".join([e.title, " ".join(e.keywords), e.body]))
                for i, e in enumerate(entries)
            ]
            self._index = BM25Index(
                passages, backend="python", k1=1.2, analyzer=index_terms, distinct_query_terms=True
            )
        hits = [(entries[int(hit.passage.id)], hit.score) for hit in self._index.search(query, k)]
        return [
            KBHit(path=e.path, id=e.id, title=e.title, score=round(s, 4), content=e.text) for e, s in hits
        ]


def _declared_files(base: Path, layout: WorkspaceLayout) -> dict[str, str]:
    """The text files under ``base`` that ``layout`` declares, read without leaving the workspace."""
    real_base = base.resolve(strict=True)
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            f = Path(dirpath) / name
            rel = f.relative_to(base).as_posix()
            if layout.kind(rel) == "other" or f.suffix.lower() in BINARY_SUFFIXES:
                continue
            real = f.resolve()
            if not real.is_relative_to(real_base) or not real.is_file():
                continue  # a symlink out of the workspace
            if real.stat().st_size > MAX_FILE_BYTES:
                continue
            text = _text_or_none(f.read_bytes())
            if text is not None:
                files[rel] = text
    return files


def _text_or_none(data: bytes) -> str | None:
    """The file's text when it is UTF-8 text; None for binary content. A declared layout names its
    files by glob, so any text format it declares is read (TOML, Protocol Buffers, ...), not only
    the markup suffixes a bare workspace is scanned for."""
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark is an encoding marker, not text
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text's universal newlines


def _warn_unmatched(base: Path, layout: WorkspaceLayout, declared: Mapping[str, str]) -> None:
    """Warn for each path or glob of a config that yields no file: a typo, or files of a kind the
    workspace does not read (a silent empty knowledge base is worse than a warning)."""
    present = [
        (Path(d) / n).relative_to(base).as_posix()
        for d, dirs, names in os.walk(base, followlinks=False)
        for n in names
        if not n.startswith(".") and not any(p.startswith(".") for p in Path(d).relative_to(base).parts)
    ]
    where = layout.source or "workspace config"
    entries = [("prompt", layout.prompt)] if layout.prompt else []
    entries += [(key, p) for key, pats in (("kb", layout.kb), ("skills", layout.skills), ("tools", layout.tools))
                for p in pats]  # fmt: skip
    for key, pattern in entries:
        rx = _glob_re(pattern)
        if any(rx.match(f) for f in declared):
            continue
        matched = [f for f in present if rx.match(f)]
        why = (
            f"matches {len(matched)} file(s) but none it reads (a binary format, not UTF-8 text, "
            f"or over {MAX_FILE_BYTES:,} bytes)"
            if matched
            else "matches no file"
        )
        warnings.warn(f"{where}: {key} {pattern!r} {why}", UserWarning, stacklevel=3)


def _kb_entry(path: str, text: str) -> KBEntry:
    try:
        meta, body = split_front_matter(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    if not meta:
        _, fields = markup_header(body)
        meta = {k.lower(): v for k, v in fields.items()} or dict(markup_fields(body))
    if PurePosixPath(path).suffix.lower() in MEDIAWIKI_SUFFIXES:
        # a MediaWiki page is titled by its name ("Pay_as_you_ride"), or {{DISPLAYTITLE:...}};
        # its "= x =" lines are sections and "# x" lines numbered list items, not titles
        title = str(meta.get("title") or display_title(body) or PurePosixPath(path).stem.replace("_", " "))
    else:
        title = page_title(meta, body) or display_title(body) or PurePosixPath(path).stem
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
        modified=change_date(meta),
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


def page_title(meta: Mapping[str, Any], body: str) -> str | None:
    """A page's title: its front matter's, else its markup header's (AsciiDoc ``= Title``, an
    underlined reST or setext title), else the one it declares (MediaWiki's
    ``{{DISPLAYTITLE:...}}``), else its first heading (Markdown ``#``, HTML)."""
    header_title = markup_header(body)[0] if not meta.get("title") else None
    title = (
        meta.get("title") or header_title or display_title(body) or first_heading(body) or first_title(body)
    )
    return str(title) if title else None


def first_heading(body: str) -> str | None:
    for line in body.splitlines():
        if line.startswith("#") and not line.startswith("#+"):  # "#+TITLE:" is an Org keyword line
            return line.lstrip("#").strip()
    return None

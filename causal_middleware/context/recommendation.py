"""The recommendation model and the text edits it is made of (replace, append, unified diff)."""

from __future__ import annotations

import difflib
import hashlib
import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from causal_middleware.context.explorer import ToolCall
from causal_middleware.context.text import contains, normalize, sentences, term_set


class Operation(StrEnum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NO_ACTION = "NO_ACTION"


class Classification(StrEnum):
    SYSTEMIC = "SYSTEMIC"
    INCIDENTAL = "INCIDENTAL"
    AMBIGUOUS = "AMBIGUOUS"


class Dimension(BaseModel):
    ok: bool | None = Field(default=None, description="None when the question does not apply")
    evidence: str = ""


class Dimensions(BaseModel):
    """The four checks of the context source: does the right content exist, could the agent reach
    it, is the faulty source wrong, and do sources disagree."""

    existence: Dimension = Field(default_factory=Dimension)
    accessibility: Dimension = Field(default_factory=Dimension)
    correctness: Dimension = Field(default_factory=Dimension)
    consistency: Dimension = Field(default_factory=Dimension)


class Recommendation(BaseModel):
    """A reviewable fix to one context source. Nothing is applied until ``context apply --confirm``."""

    id: str
    session_id: str
    operation: Operation
    target_path: str | None = None
    change_text: str = ""
    authoritative_source: str | None = None
    authority_rule: str | None = None
    classification: Classification
    confidence: float = Field(ge=0.0, le=1.0)
    dimensions: Dimensions = Field(default_factory=Dimensions)
    rationale: str = ""
    root_node_id: str | None = None
    # how it was made: the offline recommender exploring the workspace or not, or the LLM form
    mode: Literal["explore", "passive", "llm"] = "explore"
    exploration: list[ToolCall] = Field(default_factory=list)
    calls: int = Field(default=0, description="workspace tool calls made while exploring")
    base_text: str | None = Field(default=None, description="the target file before the change")
    new_text: str | None = Field(default=None, description="the target file after the change (None: deleted)")
    diff: str = ""


def make_id(session_id: str, operation: Operation, target: str | None, new_text: str | None) -> str:
    digest = hashlib.sha1(f"{session_id}\0{operation}\0{target}\0{new_text}".encode()).hexdigest()
    return f"rec-{digest[:12]}"


def unified_diff(path: str | None, before: str | None, after: str | None) -> str:
    """``difflib.unified_diff`` of a file change; ``/dev/null`` stands for a missing side."""
    if path is None or before == after:
        return ""
    a = (before or "").splitlines(keepends=True)
    b = (after or "").splitlines(keepends=True)
    if a and not a[-1].endswith("\n"):
        a[-1] += "\n"
    if b and not b[-1].endswith("\n"):
        b[-1] += "\n"
    return "".join(
        difflib.unified_diff(
            a,
            b,
            fromfile=f"a/{path}" if before is not None else "/dev/null",
            tofile=f"b/{path}" if after is not None else "/dev/null",
        )
    )


def replace_value(text: str, old: str, new: str, subject: set[str]) -> str:
    """Replace ``old`` by ``new`` in the lines that state it about ``subject`` (all lines if none do)."""
    pattern = re.compile(r"(?<![\w$€£])" + re.escape(old.strip()) + r"(?![\w%])", re.IGNORECASE)
    # A compound adjective keeps its form: "a 12-month warranty" becomes "a 24-month warranty".
    compound = re.fullmatch(r"\d[\d.,]*-[a-z]+", old.strip(), re.IGNORECASE)
    plain = re.fullmatch(r"(\d[\d.,]*)\s+([a-z]+?)s?", new.strip(), re.IGNORECASE)
    if compound and plain:
        new = f"{plain.group(1)}-{plain.group(2)}"
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if pattern.search(line)]
    if not hits:
        return text
    about = [i for i in hits if subject and term_set(lines[i]) & subject] or hits
    for i in about:
        lines[i] = pattern.sub(new.strip(), lines[i])
    return "".join(lines)


def append_line(text: str, line: str) -> str:
    """``text`` with ``line`` appended as its own line (one blank line kept before it)."""
    body = text.rstrip("\n")
    return f"{body}\n{line}\n" if body else f"{line}\n"


_WRAPPED = re.compile(r"(?<=[\w,;(])[ \t]*\n[ \t]*(?=[a-z0-9(])")


def claim_sentence(text: str, value: str) -> str | None:
    """The first sentence of ``text`` that states ``value``."""
    needle = normalize(value)
    # a hard-wrapped paragraph ("... free of\ncharge up to 48 hours ...") is one run of sentences
    text = _WRAPPED.sub(" ", text)
    # on token boundaries: "6" is not stated by a "2026-08-19" header line
    for s in sentences(text):
        if needle and needle in normalize(s) and contains(s, value):
            return s
    return None

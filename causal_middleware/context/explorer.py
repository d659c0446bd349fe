"""The six workspace exploration tools, with a log of every call.

``search_kb``, ``read_kb_entry``, ``list_skills``, ``read_skill``, ``read_system_prompt`` and
``read_tool_prompt`` are what the recommender (and an agent, through
:func:`causal_middleware.context.tools.workspace_tools`) uses to look at the context sources.
Each call is recorded so the number of calls per diagnosis can be reported.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from causal_middleware.context.text import quote
from causal_middleware.context.workspace import KBHit, Workspace

EXPLORATION_TOOLS = (
    "search_kb",
    "read_kb_entry",
    "list_skills",
    "read_skill",
    "read_system_prompt",
    "read_tool_prompt",
)


class ToolCall(BaseModel):
    """One exploration call: what was asked and a short summary of what came back."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""
    ok: bool = True


class WorkspaceExplorer:
    """The exploration tools over one workspace; ``calls`` lists every call made so far."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.calls: list[ToolCall] = []

    def _log(self, tool: str, args: dict[str, Any], summary: str, ok: bool = True) -> None:
        self.calls.append(ToolCall(tool=tool, args=args, summary=summary, ok=ok))

    def search_kb(self, query: str, k: int = 3) -> list[KBHit]:
        hits = self.workspace.search_kb(query, k=k)
        self._log(
            "search_kb",
            {"query": query, "k": k},
            ", ".join(f"{h.path} ({h.score:.2f})" for h in hits) or "no hits",
        )
        return hits

    def read_kb_entry(self, path_or_id: str) -> str | None:
        try:
            text = self.workspace.kb_entry(path_or_id).text
        except KeyError as exc:
            self._log("read_kb_entry", {"path": path_or_id}, str(exc.args[0]), ok=False)
            return None
        self._log("read_kb_entry", {"path": path_or_id}, quote(text, 80))
        return text

    def list_skills(self) -> list[dict[str, str]]:
        skills = [
            {"name": s.name, "path": s.path, "description": s.description} for s in self.workspace.skills()
        ]
        self._log("list_skills", {}, ", ".join(s["name"] for s in skills) or "no skills")
        return skills

    def read_skill(self, name_or_path: str) -> str | None:
        try:
            text = self.workspace.skill(name_or_path).text
        except KeyError as exc:
            self._log("read_skill", {"name": name_or_path}, str(exc.args[0]), ok=False)
            return None
        self._log("read_skill", {"name": name_or_path}, quote(text, 80))
        return text

    def read_system_prompt(self) -> str | None:
        try:
            text = self.workspace.system_prompt()
        except KeyError as exc:
            self._log("read_system_prompt", {}, str(exc.args[0]), ok=False)
            return None
        self._log("read_system_prompt", {}, quote(text, 80))
        return text

    def read_tool_prompt(self, name: str) -> str | None:
        try:
            text = self.workspace.tool_prompt(name)
        except KeyError as exc:
            self._log("read_tool_prompt", {"name": name}, str(exc.args[0]), ok=False)
            return None
        self._log(
            "read_tool_prompt", {"name": name, "path": self.workspace.tool_prompt_path(name)}, quote(text, 80)
        )
        return text


def format_hits(hits: list[KBHit]) -> str:
    """The JSON text ``search_kb`` returns to an agent: path, title, score and whole content."""
    return json.dumps([h.model_dump() for h in hits], ensure_ascii=False)

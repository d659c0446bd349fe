"""The exploration tools as LangChain tools, so a chat agent can read its own workspace.

``search_kb`` returns JSON (``[{"path", "id", "title", "score", "content"}]``): the shape
:func:`causal_middleware.context.conversation.conversation_from_trajectories` reads back into
retrieved documents with their source paths.
"""

from __future__ import annotations

import json

from langchain_core.tools import BaseTool, StructuredTool

from causal_middleware.context.explorer import WorkspaceExplorer, format_hits
from causal_middleware.context.workspace import Workspace


def workspace_tools(workspace: Workspace, *, k: int = 3) -> list[BaseTool]:
    """The six exploration tools bound to ``workspace`` (calls are logged on one explorer)."""
    ex = WorkspaceExplorer(workspace)

    def search_kb(query: str) -> str:
        """Search the knowledge base; returns the best entries as JSON with path, title, score and content."""
        return format_hits(ex.search_kb(query, k=k))

    def read_kb_entry(path: str) -> str:
        """Read one knowledge-base entry (by path or id), front matter included."""
        text = ex.read_kb_entry(path)
        return text if text is not None else f"Error: no knowledge-base entry {path!r}"

    def list_skills() -> str:
        """List the available skills (name, path, description) as JSON."""
        return json.dumps(ex.list_skills(), ensure_ascii=False)

    def read_skill(name: str) -> str:
        """Read one skill file (SKILL.md) by skill name or path."""
        text = ex.read_skill(name)
        return text if text is not None else f"Error: no skill {name!r}"

    def read_system_prompt() -> str:
        """Read the agent's system prompt."""
        text = ex.read_system_prompt()
        return text if text is not None else "Error: no system prompt"

    def read_tool_prompt(name: str) -> str:
        """Read the description (tool prompt) of one tool."""
        text = ex.read_tool_prompt(name)
        return text if text is not None else f"Error: no tool prompt for {name!r}"

    return [
        StructuredTool.from_function(f)
        for f in (search_kb, read_kb_entry, list_skills, read_skill, read_system_prompt, read_tool_prompt)
    ]

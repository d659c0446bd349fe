"""What a proposed output changes, in the step's own terms: the state key and the evidence.

For proposals that come without an edit (an LLM's rewritten output), the change is read off the
difference between the recorded output and the proposal: a changed tool output names the tool, a
changed document list names the documents it removes and brings in, anything else names its key.
"""

from __future__ import annotations

from typing import Any

from causal_middleware.interventions.edit import EditError, PathPart, render_path, value_at
from causal_middleware.interventions.locate import step_contents
from causal_middleware.spans.model import NodeStep, Trajectory


def change_target(
    trajectory: Trajectory, step: NodeStep, original: Any, new: Any
) -> tuple[str | None, list[str]]:
    """``(state key, evidence ids)`` that ``new`` changes relative to ``original`` (JSON outputs)."""
    contents = step_contents(trajectory, step)
    for tool in contents.tool_outputs:
        if _differs(original, new, tool.path):
            return tool.key, [tool.tool.tool_name]
    for slot in contents.documents:
        if _differs(original, new, slot.path):
            before = {d.id for d in slot.documents}
            after = _ids(_get(new, slot.path))
            gone = [d.id for d in slot.documents if d.id not in after]
            added = [i for i in after if i not in before]
            return slot.key, gone + added
    changed = _first_change(original, new, [])
    return (render_path(changed) if changed is not None else None), []


def _get(value: Any, path: list[PathPart]) -> Any:
    try:
        return value_at(value, path)
    except EditError:
        return None


def _differs(a: Any, b: Any, path: list[PathPart]) -> bool:
    return bool(_get(a, path) != _get(b, path))


def _ids(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    out: list[str] = []
    for item in value:
        if isinstance(item, dict):
            found = item.get("id") or (item.get("metadata") or {}).get("id")
            if found is not None:
                out.append(str(found))
    return out


def _first_change(a: Any, b: Any, path: list[PathPart]) -> list[PathPart] | None:
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            found = _first_change(a.get(key), b.get(key), [*path, key])
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_change(x, y, [*path, i])
            if found is not None:
                return found
        return None
    return path

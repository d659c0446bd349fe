"""A step edit: one change to a node's recorded output, as data, applied to live objects or JSON.

A fork replaces a node's output. When the output holds the agent's own objects (LangChain
``Document``s, messages, dataclasses), replacing it with JSON would hand the rest of the graph
dicts where it expects objects. A :class:`StepEdit` says *what* changes (drop the second item of
``docs``, swap ``"Paris"`` for ``"Warsaw"`` in ``plan[1]``) and is applied twice: to the recorded
JSON (what proposals, minimality and the fork cache compare) and, inside the fork, to the node's
live recorded output, keeping every untouched object as it was.

``path`` addresses a value inside the output: mapping keys and list indices, and attribute names
for objects (``["messages", 0, "content"]`` reaches an ``AIMessage``'s text).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, MutableSequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.spans.model import Document

PathPart = str | int


class EditError(ValueError):
    """The edit does not fit the output it is applied to (a path that is not there, a wrong type)."""


class StepEdit(BaseModel):
    """One change to a node's output (see the module docstring).

    * ``select``: the list at ``path`` becomes ``items``, each an index of the recorded list (kept,
      in this order) or a new :class:`Document` (built in the shape of the list's recorded items:
      a LangChain ``Document``, a dict with the same id/text keys, or the bare text);
    * ``replace_text``: in the string at ``path``, ``old`` becomes ``new`` (every occurrence);
    * ``set``: the value at ``path`` becomes ``value``, rebuilt in the recorded value's types
      (:func:`revive`: a proposed document dict becomes a ``Document`` where the agent held one).

    ``also`` lists more paths ``replace_text`` / ``set`` apply to (the same value written twice,
    e.g. a sub-query kept as ``sub_query`` and in ``queries``).
    """

    model_config = ConfigDict(extra="forbid")

    op: Literal["select", "replace_text", "set"]
    path: list[PathPart] = Field(default_factory=list)
    items: list[int | Document] = Field(default_factory=list)
    old: str = ""
    new: str = ""
    value: Any = None
    also: list[list[PathPart]] = Field(
        default_factory=list,
        description="more paths the same change applies to (a value the node wrote in several places)",
    )
    id_key: str | None = Field(default=None, description="dict items: the key holding a document's id")
    text_key: str | None = Field(default=None, description="dict items: the key holding a document's text")

    def apply(self, output: Any) -> Any:
        """A copy of ``output`` (live objects or JSON) with the edit made. Raises :class:`EditError`."""
        out = copy.deepcopy(output)
        if not self.path:
            return self._change(out, self.path)
        for path in [self.path, *self.also]:
            parent = _walk(out, path[:-1])
            last = path[-1]
            _put(parent, last, self._change(_get(parent, last), path))
        return out

    def _change(self, current: Any, path: list[PathPart]) -> Any:
        if self.op == "set":
            return revive(current, copy.deepcopy(self.value))
        if self.op == "replace_text":
            if not isinstance(current, str):
                raise EditError(f"replace_text at {path} needs a string, found {type(current).__name__}")
            if self.old not in current:
                raise EditError(f"replace_text at {path}: {self.old[:40]!r} is not in the value")
            return current.replace(self.old, self.new)
        if not isinstance(current, list | tuple):
            raise EditError(f"select at {path} needs a list, found {type(current).__name__}")
        template = current[0] if current else None
        chosen: list[Any] = []
        for item in self.items:
            if isinstance(item, int):
                if not 0 <= item < len(current):
                    raise EditError(f"select at {path}: no item {item} (the list has {len(current)})")
                chosen.append(current[item])
            else:
                chosen.append(like(template, item, id_key=self.id_key, text_key=self.text_key))
        return type(current)(chosen) if isinstance(current, tuple) else chosen


def revive(template: Any, value: Any) -> Any:
    """``value`` (JSON, e.g. a model's proposed output) rebuilt in the types of ``template`` (the
    recorded live output it replaces): a dict shaped like a LangChain ``Document`` or message where
    the recorded value was one, lists item by item, pydantic models validated. Anything that does
    not fit stays as it is."""
    from langchain_core.documents import Document as LCDocument
    from langchain_core.messages import BaseMessage
    from pydantic import BaseModel, ValidationError

    if isinstance(template, LCDocument) and isinstance(value, Mapping):
        text = value.get("page_content", value.get("text"))
        if isinstance(text, str):
            return LCDocument(
                id=value.get("id"), page_content=text, metadata=dict(value.get("metadata") or {})
            )
        return value
    if isinstance(template, BaseMessage) and isinstance(value, Mapping):
        cls = type(template)
        fields = {k: v for k, v in value.items() if k in cls.model_fields and k != "type"}
        try:
            return cls(**fields)
        except (TypeError, ValueError, ValidationError):
            return value
    if isinstance(template, BaseModel) and isinstance(value, Mapping):
        try:
            return type(template).model_validate(value)
        except ValidationError:
            return value
    if isinstance(template, Mapping) and isinstance(value, Mapping):
        return {k: revive(template.get(k), v) for k, v in value.items()}
    if isinstance(template, list | tuple) and isinstance(value, list) and template:
        return [revive(template[min(i, len(template) - 1)], v) for i, v in enumerate(value)]
    return value


def like(template: Any, document: Document, *, id_key: str | None = None, text_key: str | None = None) -> Any:
    """``document`` in the shape of ``template`` (a recorded item of the same list)."""
    from langchain_core.documents import Document as LCDocument

    metadata = dict(document.metadata)
    if isinstance(template, LCDocument) or (
        isinstance(template, Mapping) and "page_content" in template and text_key in (None, "page_content")
    ):
        recorded = template.metadata if isinstance(template, LCDocument) else template.get("metadata")
        if isinstance(recorded, Mapping) and "score" in recorded and document.score is not None:
            metadata.setdefault("score", document.score)  # the agent's documents carry scores
        if isinstance(template, Mapping):
            return {"id": document.id, "page_content": document.text, "metadata": metadata}
        return LCDocument(id=document.id, page_content=document.text, metadata=metadata)
    if isinstance(template, str):
        return document.text
    if isinstance(template, Mapping):
        out: dict[str, Any] = {}
        for key in template:
            if key == (id_key or "id"):
                out[key] = document.id
            elif key == (text_key or "text"):
                out[key] = document.text
            elif key == "score":
                out[key] = document.score
            elif key == "metadata":
                out[key] = metadata
            elif key in metadata:
                out[key] = metadata[key]
        out.setdefault(id_key or "id", document.id)
        out.setdefault(text_key or "text", document.text)
        return out
    return {"id": document.id, "text": document.text, **({"score": document.score} if document.score else {})}


def _get(container: Any, key: PathPart) -> Any:
    try:
        if isinstance(key, int) and isinstance(container, list | tuple):
            return container[key]
        if isinstance(container, Mapping):
            return container[key]
        if isinstance(key, str):
            return getattr(container, key)
    except (KeyError, IndexError, AttributeError, TypeError):
        pass
    raise EditError(f"the output has no {key!r} where the edit expects it")


def _put(container: Any, key: PathPart, value: Any) -> None:
    if isinstance(key, int) and isinstance(container, MutableSequence):
        container[key] = value
    elif isinstance(container, MutableMapping):
        container[key] = value
    elif isinstance(key, str) and hasattr(container, key):
        try:
            setattr(container, key, value)
        except (AttributeError, TypeError) as exc:
            raise EditError(f"cannot set {key!r} on a {type(container).__name__}: {exc}") from exc
    else:
        raise EditError(f"cannot set {key!r} on a {type(container).__name__}")


def _walk(value: Any, path: list[PathPart]) -> Any:
    for key in path:
        value = _get(value, key)
    return value


def value_at(output: Any, path: list[PathPart]) -> Any:
    """The value at ``path`` inside ``output`` (raises :class:`EditError` when absent)."""
    return _walk(output, path)


def render_path(path: list[PathPart]) -> str:
    """``docs[1]``, ``messages[0].content``: a path as a user reads it."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "<output>"

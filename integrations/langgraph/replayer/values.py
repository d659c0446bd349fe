"""Checks of a fork's new state values against the graph's state channels, before any fork.

``causal-mw replay --set '{"evidence": 5}'`` used to copy the parent's branch to a fork thread,
write the value and run the suffix, which then crashed on it: an errored fork run and a fork thread
were left behind on every attempt. :func:`check_fork_values` rejects such values up front, without
touching the checkpointer: a key with a reducer gets the value put through that reducer on an empty
copy of its channel (what ``update_state`` will do, minus the recorded state), and the result, or
a plain key's value (and a key named in ``overwrite``, which bypasses the reducer) must match the
key's annotated type. The type check is deliberately lenient where JSON cannot say more: ``Any``,
unresolved names and classes (a class accepts an instance or a dict, which LangGraph or the node
may coerce) pass; builtin scalars, containers, ``Optional``/unions, ``Literal`` and ``TypedDict``
are checked element by element.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

__all__ = ["check_fork_values"]

_SEQUENCES = {
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Iterable,
    collections.abc.Collection,
    collections.abc.Set,
    collections.abc.MutableSet,
}
_MAPPINGS = {dict, collections.abc.Mapping, collections.abc.MutableMapping}
_MAX_ITEMS = 1000  # elements checked per container (values given on a command line are small)


def _name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _mismatch(value: Any, tp: Any, path: str) -> str | None:
    """Why ``value`` cannot be a ``tp`` (None when it can, or when the type cannot tell)."""
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar | str | typing.ForwardRef):
        return None
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _mismatch(value, get_args(tp)[0], path)
    if origin is Union or origin is types.UnionType:
        reasons = [_mismatch(value, member, path) for member in get_args(tp)]
        if all(reasons):
            return f"{path} must be {_name(tp)}, got {type(value).__name__} {value!r}"
        return None
    if origin is Literal:
        allowed = get_args(tp)
        return None if value in allowed else f"{path} must be one of {list(allowed)}, got {value!r}"
    if tp is type(None):
        return None if value is None else f"{path} must be null, got {type(value).__name__} {value!r}"
    supertype = getattr(tp, "__supertype__", None)  # NewType
    if supertype is not None:
        return _mismatch(value, supertype, path)
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is str:
        ok = isinstance(value, str)
    elif tp in _SEQUENCES or origin in _SEQUENCES:
        if not isinstance(value, list | tuple | set | frozenset):
            return f"{path} must be a list ({_name(tp)}), got {type(value).__name__} {value!r}"
        args = get_args(tp)
        items = list(value)[:_MAX_ITEMS]
        if (origin or tp) is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(items) != len(args):
                return f"{path} must have {len(args)} items ({_name(tp)}), got {len(items)}"
            pairs = list(zip(items, args, strict=True))
        else:
            pairs = [(item, args[0] if args else Any) for item in items]
        for i, (item, item_type) in enumerate(pairs):
            reason = _mismatch(item, item_type, f"{path}[{i}]")
            if reason:
                return reason
        return None
    elif tp in _MAPPINGS or origin in _MAPPINGS:
        if not isinstance(value, Mapping):
            return f"{path} must be an object ({_name(tp)}), got {type(value).__name__} {value!r}"
        args = get_args(tp)
        if len(args) == 2:
            for key, item in list(value.items())[:_MAX_ITEMS]:
                reason = _mismatch(item, args[1], f"{path}.{key}")
                if reason:
                    return reason
        return None
    elif typing.is_typeddict(tp):
        if not isinstance(value, Mapping):
            return f"{path} must be an object ({_name(tp)}), got {type(value).__name__} {value!r}"
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception:  # unresolvable annotations: cannot tell
            return None
        for key, item in value.items():
            if key in hints:
                reason = _mismatch(item, hints[key], f"{path}.{key}")
                if reason:
                    return reason
        return None
    elif isinstance(tp, type):
        # an instance, or a dict LangGraph / the node may turn into one; never a bare scalar
        ok = isinstance(value, tp | dict)
    else:
        return None
    return None if ok else f"{path} must be {_name(tp)}, got {type(value).__name__} {value!r}"


def _channels(graph: Any) -> Mapping[str, Any]:
    for candidate in (graph, getattr(graph, "graph", None), getattr(graph, "original_graph", None)):
        channels = getattr(candidate, "channels", None)
        if isinstance(channels, Mapping) and channels:
            return channels
    return {}


def check_fork_values(
    graph: Any, values: Mapping[str, Any] | None, overwrite: Iterable[str] = (), *, what: str = "--set"
) -> None:
    """Raise ``ValueError`` (one line, naming the key) when ``values`` cannot be written into
    ``graph``'s state as a fork's new step output; nothing is forked or written to check."""
    if not values:
        return
    channels = _channels(graph)
    replaced = set(overwrite)
    for key, value in values.items():
        channel = channels.get(key)
        if channel is None:
            continue  # unknown keys are the planner's to report (with the graph's key list)
        result = value
        operator = getattr(channel, "operator", None)
        if operator is not None and key not in replaced:
            try:
                probe = channel.copy()
                probe.update([value])
                result = probe.get()
            except Exception as exc:  # the reducer refused it: so would update_state
                reducer = getattr(operator, "__name__", type(operator).__name__)
                detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ValueError(
                    f"{what}: state key {key!r} cannot take {value!r}: its reducer {reducer} refused it "
                    f"({detail}); nothing was forked"
                ) from None
        reason = _mismatch(result, getattr(channel, "typ", Any), key)
        if reason:
            raise ValueError(f"{what}: state key {key!r} does not fit its type: {reason}; nothing was forked")

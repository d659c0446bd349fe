"""Errors the replayer raises. Both are ``ValueError``s so the CLI reports them as bad input."""

from __future__ import annotations


class ReplayError(ValueError):
    """A fork could not be made: the fork point, the checkpoints or the graph do not allow it."""


class SideEffectBlockedError(ReplayError):
    """A side-effecting tool or node was about to run inside a fork, and there is no recorded output.

    Forks never re-fire side effects unless the caller passes ``allow_side_effects=True``; they
    return what the parent run recorded instead, and fail with this error when the fork's path
    reaches a side-effecting call the parent never made.
    """

    def __init__(self, name: str, *, kind: str = "tool", args: object = None, detail: str = "") -> None:
        self.name = name
        self.kind = kind
        self.args_seen = args
        shown = f" with args {args!r}" if args not in (None, {}, ()) else ""
        message = (
            f"side-effecting {kind} {name!r} was called{shown} inside a fork, and the parent run has no "
            f"recorded output for it{detail}; pass allow_side_effects=True to let it run for real"
        )
        super().__init__(message)

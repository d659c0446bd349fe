"""``Replayer.discard_fork``: a fork's thread leaves the checkpointer, its spans stay in the store,
and nothing but a fork thread is ever deleted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import Replayer, ReplayError
from causal_middleware.integrations.langgraph.replayer.fork_thread import (
    FORK_THREAD_MARK,
    delete_fork_thread,
    is_fork_thread,
    new_fork_thread_id,
)
from causal_middleware.integrations.langgraph.replayer.replayer import DISCARDED_LABEL
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from causal_middleware.protocols import DiscardingForkBackend, ForkBackend
from causal_middleware.spans.model import Lineage

from .conftest import Shape, checkpoint_rows

NEW_DOCS = {"docs": [{"id": "NEW", "text": "replacement", "score": 1.0}]}


def threads(saver: Any) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in saver.list(None)}


def rows_of(saver: Any, thread_id: str) -> dict[Any, Any]:
    return {k: v for k, v in checkpoint_rows(saver).items() if k[1] == thread_id}


def test_discard_deletes_only_the_fork_thread(
    make_shape: Callable[..., Shape], sqlite_saver: SqliteSaver
) -> None:
    shape = make_shape("custom", checkpointer=sqlite_saver)
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    assert isinstance(replayer, DiscardingForkBackend) and isinstance(replayer, ForkBackend)
    fork = replayer.fork(run_id, hop=2, values=NEW_DOCS)
    nested = replayer.fork(fork.run_id, hop=3, values={"docs": []})
    user_rows = rows_of(sqlite_saver, shape.thread_id)
    nested_rows = rows_of(sqlite_saver, nested.thread_id or "")
    assert threads(sqlite_saver) == {shape.thread_id, fork.thread_id, nested.thread_id}

    # a replayer that did not make the fork finds it in the store (the one that did remembers it)
    assert Replayer(shape.graph).discard_fork(fork.run_id) is True

    assert threads(sqlite_saver) == {shape.thread_id, nested.thread_id}
    assert rows_of(sqlite_saver, fork.thread_id or "") == {}
    # the user's thread and the nested fork's thread are byte for byte what they were
    assert rows_of(sqlite_saver, shape.thread_id) == user_rows
    assert rows_of(sqlite_saver, nested.thread_id or "") == nested_rows
    # the fork's spans stay in the store, marked discarded
    kept = shape.graph.store.get_trajectory(fork.run_id)
    assert kept.answer == fork.answer and kept.labels[DISCARDED_LABEL] is True
    # a fork made of it before still forks (its thread holds its own copy); the discarded one does not
    again = replayer.fork(nested.run_id, hop=3, values={"docs": []})
    assert again.lineage is not None and again.lineage.parent_run_id == nested.run_id
    with pytest.raises(ReplayError, match=f"run {fork.run_id} is a fork whose checkpoints were discarded"):
        replayer.fork(fork.run_id, hop=3, values={"docs": []})
    # idempotent
    assert replayer.discard_fork(fork.run_id) is False
    assert rows_of(sqlite_saver, shape.thread_id) == user_rows


def test_discard_refuses_what_is_not_a_fork(
    make_shape: Callable[..., Shape], sqlite_saver: SqliteSaver
) -> None:
    shape = make_shape("custom", checkpointer=sqlite_saver)
    run_id = shape.run()
    replayer = Replayer(shape.graph)
    store = shape.graph.store
    before = checkpoint_rows(sqlite_saver)

    with pytest.raises(ValueError, match=f"run {run_id} is not a fork"):
        replayer.discard_fork(run_id)
    with pytest.raises(ValueError, match="run 'f00d' is not in the store"):
        replayer.discard_fork("f00d")
    # a counterfactual run on a thread without the fork mark (an old-style fork on its parent's thread)
    other = shape.run(thread_id="thread-2")
    store.annotate(other, lineage=Lineage(parent_run_id=run_id))
    with pytest.raises(ValueError, match=f"run {other} ran on thread 'thread-2', not on a fork thread"):
        replayer.discard_fork(other)
    assert {k: v for k, v in checkpoint_rows(sqlite_saver).items() if k[1] != "thread-2"} == before

    # a fork thread someone continued on holds a second run: it is no longer the fork's alone
    fork = replayer.fork(run_id, hop=2, values=NEW_DOCS)
    continued = shape.run(thread_id=fork.thread_id)
    with pytest.raises(ValueError, match=f"also holds run\\(s\\) {continued}"):
        replayer.discard_fork(fork.run_id)
    assert fork.thread_id in threads(sqlite_saver)


class NoDeleteSaver(InMemorySaver):
    """A saver that does not implement thread deletion (the base class's NotImplementedError)."""

    delete_thread = BaseCheckpointSaver.delete_thread
    adelete_thread = BaseCheckpointSaver.adelete_thread


def test_a_checkpointer_that_cannot_delete_keeps_the_fork(make_shape: Callable[..., Shape]) -> None:
    saver = NoDeleteSaver()
    shape = make_shape("custom", checkpointer=saver)
    replayer = Replayer(shape.graph)
    fork = replayer.fork(shape.run(), hop=2, values=NEW_DOCS)
    assert replayer.discard_fork(fork.run_id) is False
    assert asyncio.run(replayer.adiscard_fork(fork.run_id)) is False
    assert fork.thread_id in threads(saver)
    assert DISCARDED_LABEL not in shape.graph.store.get_trajectory(fork.run_id).labels
    replayer.fork(fork.run_id, hop=3, values={"docs": []})  # still forkable


def test_adiscard_fork(make_shape: Callable[..., Shape]) -> None:
    saver = InMemorySaver()
    shape = make_shape("custom", checkpointer=saver)
    run_id = shape.run()
    replayer = Replayer(shape.graph)

    async def main() -> tuple[bool, bool, set[str], set[str]]:
        fork = await replayer.afork(run_id, hop=2, values=NEW_DOCS)
        held = threads(saver)
        first = await replayer.adiscard_fork(fork.run_id)
        second = await replayer.adiscard_fork(fork.run_id)
        with pytest.raises(ValueError, match="is not a fork"):
            await replayer.adiscard_fork(run_id)
        return first, second, held, threads(saver)

    first, second, held, after = asyncio.run(main())
    assert (first, second) == (True, False)
    assert len(held) == 2 and after == {shape.thread_id}


def test_fork_thread_names() -> None:
    fork_thread = new_fork_thread_id("chat-7")
    assert is_fork_thread(fork_thread) and is_fork_thread(new_fork_thread_id(fork_thread))
    for thread in ("chat-7", "", None, f"chat-7{FORK_THREAD_MARK}", f"{FORK_THREAD_MARK}0123456789ab"):
        assert not is_fork_thread(thread)
    assert not is_fork_thread(fork_thread + "0")
    with pytest.raises(ValueError, match="'chat-7' is not a fork thread"):
        delete_fork_thread(InMemorySaver(), "chat-7")

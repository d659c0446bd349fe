"""``open_store(target)``: the span store a path or URL names, for ``instrument(store=...)``,
``--store`` and ``$CAUSAL_MW_STORE`` alike.

``postgresql://...`` (or ``postgres://...``) opens the shared Postgres store
(:class:`~causal_middleware.store.postgres.PostgresSpanStore`, needs the ``[postgres]`` extra);
anything else is a SQLite file path (:class:`~causal_middleware.store.sqlite.SqliteSpanStore`).
"""

from __future__ import annotations

import os

from causal_middleware.store.postgres import PostgresSpanStore, is_postgres_url
from causal_middleware.store.sqlite import SqliteSpanStore

__all__ = ["OpenedStore", "open_store", "is_postgres_url", "describe_store"]

#: what ``open_store`` returns: both keep derived records with ids (``list_records``) and annotations
OpenedStore = SqliteSpanStore | PostgresSpanStore


def open_store(target: str | os.PathLike[str], *, create: bool = True) -> OpenedStore:
    """The store ``target`` names. ``create=False`` opens an existing store only
    (FileNotFoundError otherwise), as readers want."""
    if is_postgres_url(target):
        return PostgresSpanStore(str(target), create=create)
    return SqliteSpanStore(target, create=create)


def describe_store(target: str | os.PathLike[str]) -> str:
    """``target`` as it may be shown in messages (a URL without its password)."""
    if is_postgres_url(target):
        from causal_middleware.store.postgres import split_store_url

        return split_store_url(str(target))[2]
    return str(target)

"""Which of several conflicting sources is authoritative.

Rules, strongest first: explicit supersession (one source names the other in ``supersedes`` /
``superseded_by``) > official status (official > approved/published > draft/unset >
deprecated/archived) > hierarchy (organization > department > team > individual) > recency
(the later change date, whatever its front-matter key is called: see :mod:`.dates`) > ownership
(a source with a named owner beats one without).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from causal_middleware.context.dates import change_date, iso_date

Rule = Literal["supersession", "status", "hierarchy", "recency", "ownership", "tie", "only"]
RULES: tuple[Rule, ...] = ("supersession", "status", "hierarchy", "recency", "ownership")

STATUS_RANK = {
    "official": 3,
    "approved": 2,
    "published": 2,
    "active": 2,
    "current": 2,
    "draft": 1,
    "proposed": 1,
    "review": 1,
    "deprecated": 0,
    "archived": 0,
    "obsolete": 0,
    "superseded": 0,
    "retired": 0,
    # the same ranks in other workspaces' words
    "live": 2,
    "final": 2,
    "valid": 2,
    "in force": 2,
    "effective": 2,
    "canonical": 3,
    "authoritative": 3,
    "pending": 1,
    "wip": 1,
    "unpublished": 1,
    "in review": 1,
    "under review": 1,
    "withdrawn": 0,
    "expired": 0,
    "inactive": 0,
    "outdated": 0,
    "legacy": 0,
    "replaced": 0,
    "historical": 0,
}
LEVEL_RANK = {
    "organization": 4,
    "organisation": 4,
    "company": 4,
    "enterprise": 4,
    "global": 4,
    "department": 3,
    "division": 3,
    "regional": 3,
    "team": 2,
    "group": 2,
    "individual": 1,
    "personal": 1,
    "user": 1,
}


# Each field under the names workspaces give it; the first key present wins, the usual one first.
_ID = ("id", "page_id", "doc_id", "article_id", "entry_id")
_STATUS = ("status", "state", "lifecycle", "publication_status", "review_status")
_LEVEL = ("level", "scope", "tier")
_OWNER = ("owner", "owned_by", "maintained_by", "maintainer", "owning_team")
_SUPERSEDES = ("supersedes", "replaces", "obsoletes")
_SUPERSEDED_BY = ("superseded_by", "replaced_by", "obsoleted_by", "successor")


def _first(meta: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(k).lower(): v for k, v in meta.items()}
    return next((lowered[k] for k in keys if lowered.get(k)), None)


class SourceInfo(BaseModel):
    """The metadata authority is decided on (any missing field is neutral)."""

    path: str
    id: str | None = None
    status: str | None = None
    level: str | None = None
    modified: str | None = None
    owner: str | None = None
    supersedes: list[str] = Field(default_factory=list)
    superseded_by: str | None = None

    @classmethod
    def from_metadata(cls, path: str, meta: dict[str, Any]) -> SourceInfo:
        sup = _first(meta, _SUPERSEDES) or []
        ident, status, level = _first(meta, _ID), _first(meta, _STATUS), _first(meta, _LEVEL)
        owner, successor = _first(meta, _OWNER), _first(meta, _SUPERSEDED_BY)
        return cls(
            path=path,
            id=str(ident) if ident else None,
            status=str(status) if status else None,
            level=str(level) if level else None,
            modified=change_date(meta),
            owner=str(owner) if owner else None,
            supersedes=[str(s) for s in ([sup] if isinstance(sup, str) else sup)],
            superseded_by=str(successor) if successor else None,
        )

    def names(self) -> set[str]:
        return {n for n in (self.path, self.id) if n}


class AuthorityDecision(BaseModel):
    winner: str = Field(description="path of the authoritative source")
    rule: Rule = Field(description="the rule that decided against the strongest rival")
    ranking: list[str] = Field(default_factory=list, description="paths, most authoritative first")


def compare(a: SourceInfo, b: SourceInfo) -> tuple[int, Rule]:
    """``(1, rule)`` when ``a`` outranks ``b``, ``(-1, rule)`` when ``b`` does, ``(0, "tie")``."""
    if a.names() & set(b.supersedes) or (a.superseded_by and a.superseded_by in b.names()):
        return -1, "supersession"
    if b.names() & set(a.supersedes) or (b.superseded_by and b.superseded_by in a.names()):
        return 1, "supersession"
    keys: tuple[tuple[Rule, Callable[[SourceInfo], Any]], ...] = (
        ("status", _status),
        ("hierarchy", _level),
        ("recency", _date),
        ("ownership", _owned),
    )
    for rule, key in keys:
        ka, kb = key(a), key(b)
        if ka is not None and kb is not None and ka != kb:
            return (1 if ka > kb else -1), rule
    return 0, "tie"


def resolve_authority(sources: Sequence[SourceInfo]) -> AuthorityDecision:
    """The most authoritative source; ``rule`` says what decided it against the runner-up."""
    if not sources:
        raise ValueError("resolve_authority needs at least one source")
    ranked = [sources[0]]
    for s in sources[1:]:
        pos = len(ranked)
        for i, r in enumerate(ranked):
            if compare(s, r)[0] > 0:
                pos = i
                break
        ranked.insert(pos, s)
    rule: Rule = "only" if len(ranked) == 1 else compare(ranked[0], ranked[1])[1]
    return AuthorityDecision(winner=ranked[0].path, rule=rule, ranking=[s.path for s in ranked])


UNSET_STATUS = 1  # a page that declares no status ranks with drafts: below official, above deprecated


def _status(s: SourceInfo) -> int:
    return STATUS_RANK.get(s.status.lower(), UNSET_STATUS) if s.status else UNSET_STATUS


def _level(s: SourceInfo) -> int | None:
    return LEVEL_RANK.get(s.level.lower()) if s.level else None


def _date(s: SourceInfo) -> str | None:
    return (iso_date(s.modified) or s.modified[:10]) if s.modified else None


def _owned(s: SourceInfo) -> int:
    return 1 if s.owner else 0

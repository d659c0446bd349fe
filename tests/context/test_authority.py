"""Authority resolution: supersession > status > hierarchy > recency > ownership."""

from __future__ import annotations

import pytest

from causal_middleware.context.authority import SourceInfo, compare, resolve_authority


def src(path: str, **kw) -> SourceInfo:
    return SourceInfo(path=path, **kw)


def test_each_rule_in_priority_order() -> None:
    # Each pair differs on a stronger rule in favour of A and on every weaker rule in favour of B.
    b = src("b", id="B", status="draft", level="team", modified="2025-06-01", owner="x")
    assert compare(
        src("a", supersedes=["B"], status="deprecated", level="individual", modified="2020-01-01"), b
    ) == (1, "supersession")
    assert compare(src("a", status="official", level="individual", modified="2020-01-01"), b) == (1, "status")
    b2 = src("b", status="official", level="team", modified="2025-06-01", owner="x")
    assert compare(src("a", status="official", level="organization", modified="2020-01-01"), b2) == (
        1,
        "hierarchy",
    )
    b3 = src("b", status="official", level="team", modified="2020-01-01", owner="x")
    assert compare(src("a", status="official", level="team", modified="2024-01-01"), b3) == (1, "recency")
    b4 = src("b", status="official", level="team", modified="2024-01-01")
    assert compare(src("a", status="official", level="team", modified="2024-01-01", owner="kb"), b4) == (
        1,
        "ownership",
    )
    assert compare(src("a"), src("b")) == (0, "tie")


def test_superseded_by_counts_as_supersession() -> None:
    assert compare(src("old", id="O", superseded_by="N"), src("new", id="N")) == (-1, "supersession")


def test_resolve_picks_the_winner_and_ranks_all() -> None:
    decision = resolve_authority(
        [
            src("kb/old.md", status="official", modified="2023-01-01"),
            src("kb/draft.md", status="draft", modified="2025-01-01"),
            src("kb/new.md", status="official", modified="2024-06-01"),
        ]
    )
    assert decision.winner == "kb/new.md" and decision.rule == "recency"
    assert decision.ranking == ["kb/new.md", "kb/old.md", "kb/draft.md"]
    assert resolve_authority([src("only.md")]).rule == "only"
    with pytest.raises(ValueError, match="at least one source"):
        resolve_authority([])


def test_from_metadata() -> None:
    info = SourceInfo.from_metadata(
        "kb/a.md", {"id": "a", "supersedes": "b", "status": "official", "modified": "2024-01-01"}
    )
    assert info.supersedes == ["b"] and info.names() == {"kb/a.md", "a"}

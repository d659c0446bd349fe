"""Answer scoring: normalisation, EM, F1, whole-token containment and the is_correct rule."""

from __future__ import annotations

import pytest

from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import (
    answer_tokens,
    contains_answer,
    exact_match,
    f1,
    is_correct,
    normalize_answer,
    token_overlap,
    token_set,
)


def q(answer: str, aliases: list[str] | None = None) -> Question:
    return Question(id="q", text="?", answer=answer, aliases=aliases or [])


def test_normalize_answer_squad_rules():
    assert normalize_answer("  The  U.S. Army!  ") == "us army"
    assert normalize_answer("An Apple a day") == "apple day"
    assert answer_tokens("G. Stanley Hall") == ["g", "stanley", "hall"]
    assert token_set("the cat, the CAT") == frozenset({"cat"})


def test_exact_match_uses_aliases():
    assert exact_match("the United States", "United States")
    assert not exact_match("United Kingdom", "United States")
    assert exact_match("Stanley Hall", "G. Stanley Hall", aliases=["Stanley Hall"])


def test_f1_partial_overlap_and_max_over_aliases():
    assert f1("Stanley Hall", "G. Stanley Hall") == pytest.approx(0.8)
    assert f1("Stanley Hall", "G. Stanley Hall", aliases=["Stanley Hall"]) == 1.0
    assert f1("Paris", "London") == 0.0
    assert f1("", "") == 1.0 and f1("", "x") == 0.0


def test_f1_yes_no_only_matches_itself():
    assert f1("yes", "yes") == 1.0
    assert f1("yes", "no") == 0.0
    assert f1("no idea", "no") == 0.0


def test_contains_answer_requires_whole_tokens():
    assert contains_answer("It was chaired by G. Stanley Hall in 1892.", "G. Stanley Hall")
    assert not contains_answer("Halloween parties", "Hall")
    assert contains_answer("founded in London.", "in London", aliases=["London"])


@pytest.mark.parametrize(
    ("prediction", "question", "expected"),
    [
        ("G. Stanley Hall", q("G. Stanley Hall"), True),
        ("stanley hall", q("G. Stanley Hall", ["Stanley Hall"]), True),
        ("It was G. Stanley Hall.", q("G. Stanley Hall"), True),
        ("Stanley", q("G. Stanley Hall"), False),
        ("Hall of fame", q("Hall and Oates"), False),
        (" ".join(["word"] * 12) + " Paris", q("Paris"), False),  # too long to count as a short answer
        (" ".join(["word"] * 9) + " Paris", q("Paris"), True),
        ("no, they are not", q("no"), True),
        ("yes and no", q("no"), False),
        ("Yes.", q("yes"), True),
        ("I don't know", q("yes"), False),
        (None, q("Paris"), False),
        ("", q("Paris"), False),
    ],
)
def test_is_correct(prediction, question, expected):
    assert is_correct(prediction, question) is expected


def test_is_correct_extra_token_budget_is_configurable():
    assert not is_correct("the answer is Paris", q("Paris"), max_extra_tokens=1)
    assert is_correct("the answer is Paris", q("Paris"), max_extra_tokens=2)


def test_token_overlap():
    assert token_overlap("red green", "green blue") == pytest.approx(1 / 3)
    assert token_overlap("", "") == 0.0


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="aliases must be a sequence"):
        exact_match("a", "b", aliases="b")
    with pytest.raises(TypeError, match="answers must be strings"):
        normalize_answer(3)  # type: ignore[arg-type]

"""Minimality: tokenization and the score on hand-computed examples."""

from __future__ import annotations

import pytest

from causal_middleware.repair.minimality import (
    length_penalty,
    minimality,
    minimality_tokens,
    token_match_ratio,
    tokenize,
)
from causal_middleware.repair.render import render_output


def test_tokenize_splits_words_and_punctuation_and_keeps_case() -> None:
    assert tokenize("Born in Paris.") == ["Born", "in", "Paris", "."]
    assert tokenize("  it's 4.5%  ") == ["it", "'", "s", "4", ".", "5", "%"]
    assert tokenize("") == []
    with pytest.raises(TypeError, match="string"):
        tokenize(None)  # type: ignore[arg-type]


def test_identical_outputs_score_one_and_empty_edge_cases() -> None:
    assert minimality("The cat sat", "The cat sat") == 1.0
    assert minimality("", "") == 1.0
    assert minimality("", "Paris") == 0.0
    assert minimality("Paris", "") == 0.0


def test_one_word_substitution_in_ten_tokens_scores_point_nine() -> None:
    a = "a b c d e f g h i j"
    b = "a b c d X f g h i j"
    assert minimality(a, b) == pytest.approx(0.9)


def test_appending_one_token_to_ten() -> None:
    a = "a b c d e f g h i j"
    b = a + " k"
    # match 10/11, penalty 1/11 -> 10/11 * (1 - 0.5/11)
    assert minimality(a, b) == pytest.approx(10 / 11 * (1 - 0.5 / 11))


def test_hand_computed_sentence_example() -> None:
    a = "The cat sat on the mat"
    b = "The dog sat on the mat today"
    # positions: The=The, cat!=dog, sat, on, the, mat match -> 5 of max(6, 7); penalty 1/7
    assert token_match_ratio(tokenize(a), tokenize(b)) == pytest.approx(5 / 7)
    assert length_penalty(tokenize(a), tokenize(b)) == pytest.approx(1 / 7)
    assert minimality(a, b) == pytest.approx(5 / 7 * (1 - 0.5 / 7))
    assert minimality(a, b) == pytest.approx(65 / 98)


def test_position_wise_matching_punishes_a_shift() -> None:
    assert minimality_tokens(["a", "b", "c", "d"], ["x", "a", "b", "c", "d"]) == 0.0


def test_structured_outputs_compare_their_leaves_not_keys() -> None:
    assert render_output({"b": "x", "a": "y"}) == "x\ny"
    assert (
        render_output({"hops": [{"fact": "Bob Smith", "n": 1, "ok": True, "none": None}]})
        == "Bob Smith\n1\ntrue"
    )
    # {"fact": "Bob Smith"} vs {"fact": "Rob Smith"}: [Bob, Smith] vs [Rob, Smith] -> 1/2, no penalty
    assert minimality({"fact": "Bob Smith"}, {"fact": "Rob Smith"}) == pytest.approx(0.5)
    # a different key with the same leaf is no change at all
    assert minimality({"fact": "Paris"}, {"answer": "Paris"}) == 1.0


def test_case_change_counts_as_a_change() -> None:
    assert minimality("paris is big", "Paris is big") == pytest.approx(2 / 3)

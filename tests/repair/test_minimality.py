"""Minimality: tokenization and the score on hand-computed examples."""

from __future__ import annotations

import pytest

from causal_middleware.counterfactual.minimality import (
    changed_leaves,
    describe_change,
    leaves,
    length_penalty,
    minimality,
    minimality_tokens,
    token_match_ratio,
    tokenize,
)


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


def test_structured_outputs_are_compared_leaf_by_leaf() -> None:
    assert leaves({"hops": [{"fact": "Paris", "n": 1, "ok": True, "none": None}]}) == {
        ".hops[0].fact": "Paris",
        ".hops[0].n": "1",
        ".hops[0].ok": "true",
    }
    assert leaves("just text") == {"": "just text"}
    # {"fact": "Bob Smith"} vs {"fact": "Rob Smith"}: [Bob, Smith] vs [Rob, Smith] -> 1/2, no penalty
    assert minimality({"fact": "Bob Smith"}, {"fact": "Rob Smith"}) == pytest.approx(0.5)
    # a renamed field is a change: its tokens sit at another path
    assert minimality({"fact": "Paris"}, {"answer": "Paris"}) == 0.0


def test_an_added_field_does_not_shift_the_others() -> None:
    # matches x, y, z = 3; La = 3, Lb = 4 -> 3/4 * (1 - 0.5 * 1/4)
    assert minimality({"a": "x y z"}, {"b": "new", "a": "x y z"}) == pytest.approx(0.65625)
    # key order is irrelevant
    assert minimality({"a": "x", "b": "y"}, {"b": "y", "a": "x"}) == 1.0


def test_list_items_align_by_index() -> None:
    # item 0 equal (a b), item 1: c matches, d != e, f extra -> 3 matches; La 4, Lb 5
    before = {"evidence": ["a b", "c d"]}
    after = {"evidence": ["a b", "c e f"]}
    assert minimality(before, after) == pytest.approx(3 / 5 * (1 - 0.5 / 5))
    assert minimality(before, {"evidence": []}) == 0.0


def test_case_change_counts_as_a_change() -> None:
    assert minimality("paris is big", "Paris is big") == pytest.approx(2 / 3)


def test_changed_leaves_name_what_a_repair_changes() -> None:
    before = {"hops": [{"fact": "Rob Smith", "docs": ["a", "b"]}]}
    after = {"hops": [{"fact": "Bob Smith", "docs": ["a", "b"]}], "note": "x"}
    assert changed_leaves(before, after) == [
        (".hops[0].fact", "Rob Smith", "Bob Smith"),
        (".note", None, "x"),
    ]
    assert describe_change(before, after) == "hops[0].fact: 'Rob Smith' -> 'Bob Smith'; note: (absent) -> 'x'"
    assert describe_change(before, after, limit=1).endswith("and 1 more changed field(s)")
    assert describe_change("same", "same") == "no change"

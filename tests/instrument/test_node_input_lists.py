"""Node inputs record a grown list as the earlier list's digest plus its tail. A list that starts
with the very strings of the key's previous list is extended without serialising or hashing its
prefix again; the recorded attributes are the ones whole serialisation gives, and a list whose
non-string elements changed in place is serialised again, not taken from the last one."""

from __future__ import annotations

import json
from typing import Any

from causal_middleware.integrations.langgraph.extract import NodeInputEncoder, _digest

from causal_middleware.spans import attributes as A


def _whole_digest(value: list[Any]) -> str:
    return _digest("[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]")


def _refs(attrs: dict[str, Any]) -> list[Any]:
    return json.loads(attrs[A.CAUSAL_NODE_INPUT_REFS])


def test_a_list_of_strings_that_grows_is_written_as_its_tail_with_whole_digests() -> None:
    encoder = NodeInputEncoder()
    evidence = ["Zorvex Labs was founded by Ilka Morrow.", 'caf\u00e9 \u2014 \ud83d\ude00 quoted "x"']
    first = encoder.attributes({"evidence": evidence})
    assert _refs(first) == [["evidence", _whole_digest(evidence), 0]]
    assert json.loads(first[A.INPUT_VALUE]) == {"evidence": evidence}
    for extra in ("Ilka Morrow was born in Tessaly.", "Tessaly is a town in Quarn."):
        before = evidence
        evidence = evidence + [extra]  # what an operator.add channel hands the next node
        attrs = encoder.attributes({"evidence": evidence, "question": "q"})
        refs = _refs(attrs)
        assert refs[0] == ["evidence", _whole_digest(evidence), [_whole_digest(before), len(before)]]
        assert json.loads(attrs[A.INPUT_VALUE])["evidence"] == [extra]
    same = encoder.attributes({"evidence": evidence})
    assert _refs(same) == [["evidence", _whole_digest(evidence), 1]]


def test_equal_strings_that_are_other_objects_give_the_same_record() -> None:
    encoder = NodeInputEncoder()
    encoder.attributes({"evidence": ["alpha", "beta"]})
    rebuilt = ["".join(["al", "pha"]), "".join(["be", "ta"]), "gamma"]  # equal, not identical
    attrs = encoder.attributes({"evidence": rebuilt})
    assert _refs(attrs)[0] == ["evidence", _whole_digest(rebuilt), [_whole_digest(["alpha", "beta"]), 2]]
    assert json.loads(attrs[A.INPUT_VALUE])["evidence"] == ["gamma"]


def test_a_message_changed_in_place_is_serialised_again() -> None:
    encoder = NodeInputEncoder()
    message = {"role": "user", "content": "first"}
    encoder.attributes({"messages": [message]})
    message["content"] = "edited in place"
    grown = [message, {"role": "ai", "content": "reply"}]
    attrs = encoder.attributes({"messages": grown})
    assert _refs(attrs)[0] == ["messages", _whole_digest(grown), 0]
    assert json.loads(attrs[A.INPUT_VALUE])["messages"] == grown


def test_a_shorter_or_reordered_list_is_written_whole() -> None:
    encoder = NodeInputEncoder()
    encoder.attributes({"evidence": ["a", "b", "c"]})
    for value in (["a", "b"], ["b", "a", "c", "d"]):
        attrs = encoder.attributes({"evidence": value})
        assert _refs(attrs)[0] == ["evidence", _whole_digest(value), 0]
        assert json.loads(attrs[A.INPUT_VALUE])["evidence"] == value

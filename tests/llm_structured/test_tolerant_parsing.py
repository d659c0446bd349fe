"""Replies read tolerantly; an unreadable one is still an error (never a crash, never a guess)."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from structured_sessions import stale_session

from causal_middleware.context.detector import detect
from causal_middleware.context.llm import LLMResponseError, parse_json_object
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.signals import SignalType

SIGNAL = {"type": "CORRECTION", "turn": 2, "node_id": "n4", "evidence": "outdated", "confidence": 0.9}


def _detect(reply: str):
    return detect(stale_session(), mode="llm", model=FakeListChatModel(responses=[reply]))


def test_a_bare_empty_list_is_no_signals() -> None:
    det = _detect("[]")  # what Qwen2.5-Coder-0.5B answered without a schema
    assert det.status == "ok" and det.signals == [] and not det.escalate and det.calls == 1


def test_a_bare_list_of_signals_is_read_as_the_signals() -> None:
    det = _detect("Here you go:\n" + json.dumps([SIGNAL]))
    assert [(s.type, s.node_id, s.turn) for s in det.signals] == [(SignalType.CORRECTION, "n4", 2)]


def test_the_object_is_preferred_over_a_list_quoted_before_it() -> None:
    det = _detect('The user said ["no"]. {"signals": []}')
    assert det.signals == []


def test_a_node_id_not_in_the_session_is_dropped_not_trusted() -> None:
    det = _detect(json.dumps({"signals": [{**SIGNAL, "node_id": "n99"}]}))
    assert det.signals[0].node_id is None and det.signals[0].turn == 2


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I cannot tell.", "expected a JSON object"),
        ("[1, 2]", "expected a JSON object"),  # a list, but not of signals
        ('{"signals": [{"type": "CORRECTION", "confidence": 3}]}', "confidence must be"),
        ('{"signals": "none"}', "'signals' should be"),
    ],
)
def test_unreadable_detector_replies_are_errors(reply: str, message: str) -> None:
    with pytest.raises(LLMResponseError, match=message):
        _detect(reply)


def test_parse_json_object_list_key_only_when_asked() -> None:
    assert parse_json_object("[]", ("signals",), list_key="signals") == {"signals": []}
    with pytest.raises(LLMResponseError):
        parse_json_object("[]", ("signals",))


def _root(answer: dict) -> object:
    return diagnose(stale_session(), mode="llm", model=FakeListChatModel(responses=[json.dumps(answer)]))


def test_root_cause_drops_attribution_keys_that_name_no_node() -> None:
    diag = _root({"root_node_id": "n2", "attributions": {"n2": 0.6, "hop 3": 0.3, "n3": 0.1}})
    assert [a.node_id for a in diag.attributions] == ["n2", "n3"]  # type: ignore[attr-defined]


def test_root_cause_without_attributions_gives_the_root_the_whole_score() -> None:
    diag = _root({"root_node_id": "n2", "category": "KB_CONTENT_STALE"})
    assert [(a.node_id, a.score) for a in diag.attributions] == [("n2", 1.0)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"n6": 0.5}, "no 'root_node_id' key"),  # the inner dict of a reply cut at the token limit
        ({"root_node_id": "n99"}, "n99"),
        ({"root_node_id": "n2", "attributions": {"n2": "high"}}, "non-negative number"),
    ],
)
def test_unreadable_root_cause_replies_are_errors(answer: dict, message: str) -> None:
    with pytest.raises(LLMResponseError, match=message):
        _root(answer)


def test_an_unreadable_judge_reply_is_a_diagnosis_without_a_hop(recording) -> None:
    from attribution_sim import faulted_run, make_world

    from causal_middleware.attribution import get_diagnoser

    run = faulted_run(make_world(), "empty_retrieval", 1)
    d = get_diagnoser("llm_judge", model=recording(replies=["I am not sure."])).diagnose(run)
    assert d.ran and d.hop is None and d.stage is None and "parse_error" in d.details
    assert d.cost.llm_calls == 1

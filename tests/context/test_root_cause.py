"""Root cause: holistic reverse pass vs the iterative per-node baseline, offline and LLM forms."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from causal_middleware.context.llm import LLMResponseError
from causal_middleware.context.root_cause import FaultCategory, diagnose


class CountingModel(FakeListChatModel):
    calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        return super()._call(*args, **kwargs)


def stale_session(session):
    session.system()
    session.user("What is the overdraft fee?")
    session.reasoning("Let me look it up.")
    first = session.search("overdraft fee")
    again = session.read("kb/fees/overdraft-fee.md")
    session.agent("The overdraft fee is $25 per item.")
    session.user("That's outdated, it's $35 now.")
    return session.build(), first, again


def test_holistic_returns_the_first_node_that_brought_the_wrong_value(session) -> None:
    conv, first, again = stale_session(session)
    diag = diagnose(conv)
    assert diag.status == "ok" and diag.method == "holistic" and diag.calls == 1
    assert diag.delta is not None and (diag.delta.expected, diag.delta.got) == ("$35", "$25")
    assert diag.root_node_id == first
    assert diag.category == FaultCategory.KB_CONTENT_STALE
    assert diag.component_type == "kb" and diag.component_path == "kb/fees/overdraft-fee.md"
    assert sum(a.score for a in diag.attributions) == pytest.approx(1.0, abs=1e-4)
    assert diag.top(3)[:2] == [first, again]


def test_iterative_baseline_prefers_the_node_closest_to_the_failure(session) -> None:
    conv, first, again = stale_session(session)
    diag = diagnose(conv, method="iterative")
    assert diag.root_node_id == again  # per-node judging has no notion of "first in the chain"
    assert first in diag.top(3)
    assert diag.calls == len(conv.nodes) + 2
    assert sum(a.score for a in diag.attributions) == pytest.approx(1.0, abs=1e-4)


def test_earlier_retrieval_is_the_root_but_a_coincidental_value_is_not(files, session_for, make_kb) -> None:
    files["kb/cards/replacement-card-fee.md"] = make_kb(
        "kb-rc", "Replacement card fee", "A replacement card costs $25."
    )
    s = session_for(files)
    s.system()
    s.user("How much is a replacement card?")
    coincidence = s.search("replacement card")
    s.agent("A replacement card costs $25.")
    s.user("How many overdraft fees can I be charged per day?")
    earlier = s.search("overdraft fees per day")
    s.agent("No more than three overdraft fees are charged per day.")
    s.user("And what is the overdraft fee itself?")
    s.agent("The overdraft fee is $25 per item.")
    s.user("No, that's wrong. It's $35 now.")
    diag = diagnose(s.build())
    assert diag.root_node_id == earlier != coincidence
    assert diag.component_path == "kb/fees/overdraft-fee.md"


def test_content_gap_roots_at_the_questions_retrieval(session) -> None:
    session.system()
    session.user("What is the monthly maintenance fee?")
    search = session.search("monthly maintenance fee")
    session.agent("I couldn't find anything about the monthly maintenance fee.")
    session.user("It's $12. That should be in your documentation.")
    diag = diagnose(session.build())
    assert diag.root_node_id == search
    assert (
        diag.category == FaultCategory.KB_CONTENT_GAP
        and diag.component_type == "kb"
        and diag.component_path is None
    )


def test_tool_error_roots_at_the_first_call_under_the_tool_definition(session) -> None:
    session.system()
    session.user("Move $200 to savings today.")
    call = session.tool(
        "transfer_funds",
        {"speed": "instant"},
        "Error 422: invalid value 'instant' for parameter 'speed'; expected 'same_day'.",
        error=True,
    )
    session.tool(
        "transfer_funds",
        {"speed": "instant"},
        "Error 422: invalid value 'instant' for parameter 'speed'; expected 'same_day'.",
        error=True,
    )
    session.agent("Sorry, that failed.")
    session.user("Ugh, why does it keep failing?")
    diag = diagnose(session.build())
    assert diag.root_node_id == call
    assert (
        diag.category == FaultCategory.TOOL_PROMPT_ERROR and diag.component_path == "tools/transfer_funds.md"
    )
    assert (diag.delta.expected, diag.delta.got) == ("same_day", "instant")  # type: ignore[union-attr]


def test_behavioural_correction_roots_at_the_system_prompt(session) -> None:
    system = session.system()
    session.user("Should I move my savings into tech stocks?")
    session.agent("Tech stocks have done well, so yes.")
    session.user("You're not supposed to give investment advice.")
    diag = diagnose(session.build())
    assert diag.root_node_id == system
    assert diag.category == FaultCategory.SYSTEM_PROMPT_GAP and diag.component_path == "system_prompt.md"
    assert diag.delta.kind == "behaviour"  # type: ignore[union-attr]


def test_stale_skill(session) -> None:
    session.system()
    session.user("How long do I have to dispute a charge?")
    skill = session.skill("skills/dispute-a-charge/SKILL.md")
    session.agent("Disputes must be filed within 60 days of the statement date.")
    session.user("That's outdated, it's 120 days now.")
    diag = diagnose(session.build())
    assert diag.root_node_id == skill
    assert (
        diag.category == FaultCategory.SKILL_FILE_STALE
        and diag.component_path == "skills/dispute-a-charge/SKILL.md"
    )


def test_satisfied_session_has_no_failure(session) -> None:
    session.system()
    session.user("What is the overdraft fee?")
    session.search("overdraft fee")
    session.agent("The overdraft fee is $25 per item.")
    session.user("Thanks, that's helpful.")
    diag = diagnose(session.build())
    assert diag.status == "no_failure" and diag.root_node_id is None


def test_llm_holistic_one_call(session) -> None:
    conv, first, again = stale_session(session)
    answer = {
        "expected": "$35",
        "got": "$25",
        "root_node_id": first,
        "attributions": {first: 3, again: 1},
        "category": "KB_CONTENT_STALE",
        "component_path": "kb/fees/overdraft-fee.md",
    }
    model = CountingModel(responses=[json.dumps(answer)])
    diag = diagnose(conv, mode="llm", model=model)
    assert model.calls == 1 and diag.calls == 1 and diag.mode == "llm"
    assert diag.root_node_id == first and diag.category == FaultCategory.KB_CONTENT_STALE
    assert [(a.node_id, a.score) for a in diag.attributions] == [(first, 0.75), (again, 0.25)]


def test_llm_iterative_makes_n_plus_two_calls(session) -> None:
    conv, first, again = stale_session(session)
    n = len(conv.nodes)
    scores = [
        json.dumps({"score": 0.9 if node.id in (first, again) else 0.1, "reason": "r"}) for node in conv.nodes
    ]
    responses = [
        json.dumps({"expected": "$35", "got": "$25"}),
        *scores,
        json.dumps({"root_node_id": first, "category": "KB_CONTENT_STALE", "component_path": None}),
    ]
    model = CountingModel(responses=responses)
    diag = diagnose(conv, method="iterative", mode="llm", model=model)
    assert model.calls == n + 2 == diag.calls
    assert diag.root_node_id == first and diag.attributions[0].node_id == first
    assert sum(a.score for a in diag.attributions) == pytest.approx(1.0, abs=1e-4)


def test_llm_forms_validate_and_report_not_run(session) -> None:
    conv, _, _ = stale_session(session)
    bad = json.dumps({"root_node_id": "n99", "attributions": {}, "category": None})
    with pytest.raises(LLMResponseError, match="n99"):
        diagnose(conv, mode="llm", model=FakeListChatModel(responses=[bad]))
    bad_cat = json.dumps({"root_node_id": "n4", "attributions": {"n4": 1}, "category": "GREMLINS"})
    with pytest.raises(LLMResponseError, match="unknown category"):
        diagnose(conv, mode="llm", model=FakeListChatModel(responses=[bad_cat]))
    assert diagnose(conv, mode="llm").status == "not_run"
    with pytest.raises(ValueError, match="unknown root-cause method"):
        diagnose(conv, method="random")  # type: ignore[arg-type]

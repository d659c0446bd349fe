"""The reference agent with an upstream plan (plan-and-execute): ``decide`` issues the plan's
steps with ``#N`` filled from the facts found, without a model call; the model reads every hop and
writes the answer; ``"search -> fact"`` echoes of small models are cut from a sub-query."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks.reference_agent import build_reference_agent, prompts, run_question


class _Recording(GenericFakeChatModel):
    """Scripted replies; every prompt it was sent is kept."""

    prompts_seen: list[str] = []

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> BaseMessage:  # noqa: A002
        messages = input if isinstance(input, list) else [input]
        self.prompts_seen.append(str(getattr(messages[-1], "content", messages[-1])))
        return super().invoke(input, config, **kwargs)


def test_the_plan_drives_the_searches_and_the_model_only_reads_and_answers(toy_world, toy_retriever):
    replies = iter([AIMessage("FACT: Port Vell"), AIMessage("FACT: 1901"), AIMessage("ANSWER: 1901")])
    model = _Recording(messages=replies, prompts_seen=[])
    agent = build_reference_agent(toy_retriever, model)
    plan = ["Where is Acme Mills headquartered?", "When was #1 founded?"]
    run = run_question(agent, "When was the city where Acme Mills is headquartered founded?", plan=plan)
    assert run.queries == ["Where is Acme Mills headquartered?", "When was Port Vell founded?"]
    assert run.answer == "1901" and run.stop_reason == "answered"
    # three model calls: read, read, answer; the two decisions and the stop took none
    assert len(model.prompts_seen) == 3
    assert "Current sub-question: When was Port Vell founded?" in model.prompts_seen[1]
    assert "Give the final answer" in model.prompts_seen[2]


def test_a_plan_step_whose_search_found_nothing_is_filled_with_unknown():
    hops = [{"sub_query": "Who founded X?", "fact": None}, {"sub_query": "q", "fact": "Ann  Lee"}]
    assert prompts.fill_plan_step("Where was #1 born and did #2 marry #7?", hops) == (
        "Where was unknown born and did Ann Lee marry unknown?"
    )


def test_a_subquery_echoing_the_facts_layout_is_cut_at_the_arrow():
    assert prompts.parse_decision("SUBQUERY: Who is the mayor of Vugri? -> Vugri -> Vugri") == (
        "search",
        "Who is the mayor of Vugri?",
    )

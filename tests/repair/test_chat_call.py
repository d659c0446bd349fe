"""The one chat-model call (causal_middleware.prompts.llm): usage read once, budgets, the costs it books."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from causal_middleware.attribution.base import DiagnosisCost
from causal_middleware.attribution.llm import call
from causal_middleware.counterfactual.llm import call_model
from causal_middleware.prompts import Fence
from causal_middleware.prompts.llm import BudgetExceeded, describe_error, invoke_chat, reply_usage
from causal_middleware.protocols import RepairCost


def fake(*replies: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(replies))


def test_usage_comes_from_usage_metadata_then_response_metadata_else_is_estimated() -> None:
    reported = AIMessage(
        content="ok", usage_metadata={"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}
    )
    openai_style = AIMessage(
        content="ok", response_metadata={"token_usage": {"prompt_tokens": 4, "completion_tokens": 1}}
    )
    silent = AIMessage(content="two words")
    assert reply_usage(reported) == (7, 2)
    assert reply_usage(openai_style) == (4, 1)
    assert reply_usage(silent) is None
    reply = invoke_chat(fake(silent), "be brief", "one two three")
    assert (reply.input_tokens, reply.output_tokens, reply.usage_estimated) == (5, 2, True)


def test_attribution_and_repair_book_the_same_tokens_for_the_same_reply() -> None:
    def reply() -> AIMessage:
        return AIMessage(
            content=[{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "{}"}],
            usage_metadata={"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
        )

    diagnosis, repair = DiagnosisCost(), RepairCost()
    assert call(fake(reply()), "s", "u", diagnosis) == "{}"  # the text blocks only
    assert call_model(fake(reply()), "s", "u", repair).text == "{}"
    assert (diagnosis.llm_calls, diagnosis.tokens) == (1, 14)
    assert (repair.llm_calls, repair.total_tokens) == (1, 14)


def test_the_budget_stops_a_call_before_it_is_made_and_books_nothing() -> None:
    cost = DiagnosisCost(llm_calls=2)
    model = fake(AIMessage(content="never sent"))
    with pytest.raises(BudgetExceeded, match="budget 2"):
        call(model, "s", "u", cost, max_calls=2)
    assert cost.llm_calls == 2 and cost.tokens == 0
    assert invoke_chat(model, "s", "u", calls_made=1, max_calls=2).text == "never sent"


def test_the_fence_rule_goes_into_the_system_message_and_prompts_are_redacted() -> None:
    seen: list[str] = []

    class Recording(GenericFakeChatModel):
        def invoke(self, messages, *args, **kwargs):  # type: ignore[no-untyped-def, override]
            seen.extend(str(m.content) for m in messages)
            return super().invoke(messages, *args, **kwargs)

    fence = Fence()
    key = "sk-ant-" + "a" * 40
    invoke_chat(Recording(messages=iter([AIMessage(content="ok")])), "judge", f"key {key}", fence=fence)
    assert fence.system("judge") in seen[0]
    assert key not in seen[1]


def test_describe_error_is_one_short_line() -> None:
    text = describe_error(RuntimeError("boom\n" + "x" * 500))
    assert text.startswith("RuntimeError: boom x") and len(text) <= len("RuntimeError: ") + 300
    assert "\n" not in text

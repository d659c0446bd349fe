"""How a reply schema travels: ``invoke_chat(schema=...)`` -> ``with_structured_output`` -> the model."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from causal_middleware.prompts.llm import invoke_chat
from causal_middleware.prompts.schema import nullable, one_of, reply_schema, text

SCHEMA = reply_schema("probe_reply", "A probe.", {"answer": text(20), "hop": one_of([1, 2, None])})


def test_the_schema_reaches_a_tool_calling_model_as_a_forced_tool(recording) -> None:
    model = recording(replies=['{"answer": "Paris", "hop": 2}'])
    reply = invoke_chat(model, "system", "user", schema=SCHEMA)
    assert reply.structured is True
    assert model.titles == ["probe_reply"] and model.asked[0]["tool_choice"] == "any"
    sent = model.schemas[0]
    assert sent["properties"] == SCHEMA["properties"] and sent["required"] == ["answer", "hop"]
    # the tool call's arguments are the reply text the role's parser reads
    assert json.loads(reply.text) == {"answer": "Paris", "hop": 2}


def test_text_before_a_tool_call_comes_first_so_the_arguments_are_the_last_json(recording) -> None:
    model = recording(replies=['{"answer": "Rome", "hop": 1}'])
    reply = invoke_chat(model, "s", "u", schema=SCHEMA)
    assert reply.text.endswith('{"answer": "Rome", "hop": 1}')


def test_a_model_that_answers_in_text_despite_the_tool_is_still_read(recording) -> None:
    model = recording(replies=['Sure: {"answer": "Oslo", "hop": null}'], as_tool_call=False)
    reply = invoke_chat(model, "s", "u", schema=SCHEMA)
    assert reply.structured is True and reply.text == 'Sure: {"answer": "Oslo", "hop": null}'


def test_without_a_schema_nothing_is_bound(recording) -> None:
    model = recording(replies=["plain"])
    reply = invoke_chat(model, "s", "u")
    assert reply.structured is False and model.titles == [None] and reply.text == "plain"


def test_a_model_without_structured_output_is_called_plainly() -> None:
    model = FakeListChatModel(responses=['{"answer": "x", "hop": 1}'])  # no bind_tools
    reply = invoke_chat(model, "s", "u", schema=SCHEMA)
    assert reply.structured is False and json.loads(reply.text) == {"answer": "x", "hop": 1}


def test_reply_schema_shape_and_bad_titles() -> None:
    assert SCHEMA["additionalProperties"] is False and list(SCHEMA["properties"]) == ["answer", "hop"]
    assert nullable(text(5)) == {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]}
    assert one_of([]) == {"type": "string"} and one_of(["a", "a", None]) == {"enum": ["a", None]}
    with pytest.raises(ValueError, match="schema title 'bad title!'"):
        reply_schema("bad title!", "d", {})

"""The local model's structured replies without loading a model: response_format -> grammar."""

from __future__ import annotations

import pytest
from causal_middleware.integrations.llamacpp import LlamaCppChatModel, response_grammar
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from causal_middleware.prompts.schema import one_of, reply_schema, text

SCHEMA = reply_schema("probe_reply", "A probe.", {"node": one_of(["n1", "n7"]), "why": text(30)})


class Verdict(BaseModel):
    hop: int | None
    stage: str


def _model() -> LlamaCppChatModel:
    return LlamaCppChatModel(model_path="/nonexistent/model.gguf")  # never loaded in these tests


def test_with_structured_output_binds_a_json_schema_response_format() -> None:
    bound = _model().with_structured_output(SCHEMA).first  # type: ignore[attr-defined]
    fmt = bound.kwargs["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "probe_reply"
    assert fmt["json_schema"]["schema"]["properties"] == SCHEMA["properties"]


def test_with_structured_output_takes_a_pydantic_model_and_json_mode() -> None:
    fmt = _model().with_structured_output(Verdict).first.kwargs["response_format"]  # type: ignore[attr-defined]
    assert fmt["json_schema"]["name"] == "Verdict" and set(fmt["json_schema"]["schema"]["properties"]) == {
        "hop",
        "stage",
    }
    mode = _model().with_structured_output(SCHEMA, method="json_mode").first  # type: ignore[attr-defined]
    assert mode.kwargs["response_format"] == {"type": "json_object"}
    with pytest.raises(ValueError, match="unknown structured-output method 'xml'"):
        _model().with_structured_output(SCHEMA, method="xml")  # type: ignore[arg-type]


def test_function_calling_method_binds_the_schema_as_a_tool() -> None:
    bound = _model().with_structured_output(SCHEMA, method="function_calling").first  # type: ignore[attr-defined]
    assert bound.kwargs["tools"][0]["function"]["name"] == "probe_reply"


def test_tools_and_a_response_format_together_are_refused_before_loading() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    with pytest.raises(ValueError, match="tools or a response_format, not both"):
        _model()._generate([HumanMessage("x")], tools=[tool], response_format={"type": "json_object"})


@pytest.mark.parametrize(
    "fmt",
    [
        {"type": "json_schema", "json_schema": {"name": "probe_reply", "schema": SCHEMA}},
        {"type": "json_object", "schema": SCHEMA},
    ],
)
def test_a_schema_becomes_a_grammar_that_only_admits_its_enum(fmt) -> None:
    pytest.importorskip("llama_cpp")
    grammar = response_grammar(fmt)._grammar
    assert '"\\"n1\\"" | "\\"n7\\""' in grammar  # the node can only be one of the listed ids
    assert '"\\"why\\""' in grammar


def test_json_object_without_schema_is_any_json() -> None:
    pytest.importorskip("llama_cpp")
    assert "object" in response_grammar({"type": "json_object"})._grammar


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ({"type": "text"}, "response_format must be"),
        ("json", "response_format must be"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "needs"),
        ({"type": "json_object", "schema": ["not", "a", "schema"]}, "JSON-schema object"),
    ],
)
def test_bad_response_formats_are_one_line_errors(fmt, message) -> None:
    with pytest.raises(ValueError, match=message):
        response_grammar(fmt)

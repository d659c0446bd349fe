"""Locating a step's recorded values in its node's update, and editing live objects and JSON alike."""

from __future__ import annotations

import json

import pytest
from causal_middleware.integrations.langgraph.extract import to_json
from langchain_core.documents import Document as LCDocument
from langchain_core.messages import AIMessage, ToolMessage

from causal_middleware.interventions import EditError, StepEdit, step_contents, step_interventions
from causal_middleware.spans.model import Document, NodeStep, RetrievalStep, ToolStep, Trajectory

DOCS = [
    Document(id="a", text="Ada Brenner designed the Orvel bridge in 1931."),
    Document(id="b", text="Orvel bridge designed designed Orvel bridge designed by Tom Kell."),
]


def run_with(
    output: object, *, tool: ToolStep | None = None, query: str = "Who designed the Orvel bridge?"
) -> Trajectory:
    node = NodeStep(step_id="n1", node="search", hop=1, langgraph_step=1, output=output)
    steps: list = [node]
    if tool is None:
        steps.append(
            RetrievalStep(
                step_id="r1", parent_step_id="n1", node="search", hop=1, query=query, documents=DOCS
            )
        )
    else:
        steps.append(tool)
    return Trajectory(run_id="0" * 32, input={"question": query}, steps=steps)


def test_documents_are_located_in_lists_of_documents_dicts_and_joined_strings() -> None:
    as_docs = {
        "context": [
            {"id": "a", "page_content": DOCS[0].text, "metadata": {}},
            {"id": "b", "page_content": DOCS[1].text, "metadata": {}},
        ]
    }
    contents = step_contents(run_with(as_docs), run_with(as_docs).steps[0])
    assert [(s.key, s.kind, [d.id for d in s.documents]) for s in contents.documents] == [
        ("context", "list", ["a", "b"])
    ]
    custom = {"hits": [{"doc_key": "x", "body": DOCS[1].text}, {"doc_key": "y", "body": DOCS[0].text}]}
    (slot,) = step_contents(run_with(custom), run_with(custom).steps[0]).documents
    assert slot.text_key == "body" and [d.id for d in slot.documents] == ["b", "a"]
    joined = {"prompt_context": f"{DOCS[0].text}\n\n{DOCS[1].text}"}
    (slot,) = step_contents(run_with(joined), run_with(joined).steps[0]).documents
    assert slot.kind == "string" and [d.id for d in slot.documents] == ["a", "b"]


def test_documents_under_two_keys_are_ambiguous_until_the_user_names_one() -> None:
    output = {"docs": [{"id": "a", "text": DOCS[0].text}], "cache": [{"id": "a", "text": DOCS[0].text}]}
    run = run_with(output)
    contents = step_contents(run, run.steps[0])
    assert contents.ambiguous and "state_keys" in (contents.note or "")
    named = step_contents(run, run.steps[0], state_key="docs")
    assert [s.key for s in named.documents] == ["docs"] and not named.ambiguous


def test_a_select_edit_keeps_live_documents_and_builds_new_ones_in_their_shape() -> None:
    live = {
        "docs": [LCDocument(id="a", page_content=DOCS[0].text), LCDocument(id="b", page_content=DOCS[1].text)]
    }
    new = Document(id="c", text="Ada Brenner also designed the Kessel tower.")
    edit = StepEdit(op="select", path=["docs"], items=[1, new])
    out = edit.apply(live)
    assert [type(d).__name__ for d in out["docs"]] == ["Document", "Document"]
    assert [d.id for d in out["docs"]] == ["b", "c"] and out["docs"][1].page_content.startswith("Ada")
    assert [d.id for d in live["docs"]] == ["a", "b"]  # the recorded output is never modified
    # what instrumentation records of the live result equals the edit applied to the recorded JSON
    assert json.loads(to_json(out)) == edit.apply(json.loads(to_json(live)))
    with pytest.raises(EditError):
        StepEdit(op="select", path=["docs"], items=[5]).apply(live)
    with pytest.raises(EditError):
        StepEdit(op="select", path=["nothing"], items=[0]).apply(live)


def test_text_edits_reach_message_attributes() -> None:
    live = {
        "messages": [
            AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"city": "Sidney"}, "id": "c1"}])
        ]
    }
    out = StepEdit(
        op="replace_text", path=["messages", 0, "tool_calls", 0, "args", "city"], old="Sidney", new="Sydney"
    ).apply(live)
    assert out["messages"][0].tool_calls[0]["args"]["city"] == "Sydney"
    tool_live = {
        "messages": [ToolMessage(content="population 4.1m (2011)", tool_call_id="c1", name="lookup")]
    }
    out = StepEdit(op="set", path=["messages", 0, "content"], value="population 5.3m (2023)").apply(tool_live)
    assert isinstance(out["messages"][0], ToolMessage) and out["messages"][0].content.endswith("(2023)")


def test_the_space_of_a_retrieval_step_names_the_stuffed_document_first() -> None:
    output = {"context": [{"id": "b", "page_content": DOCS[1].text, "metadata": {}}]}
    run = run_with(output)
    candidates, _ = step_interventions(run, run.steps[0])
    assert candidates[0].evidence == ["b"] and "keyword-stuffed" in candidates[0].description
    assert candidates[0].state_key == "context"


def test_a_tool_output_is_rerun_live_unless_side_effecting() -> None:
    tool = ToolStep(
        step_id="t1",
        parent_step_id="n1",
        node="search",
        hop=1,
        tool_name="lookup",
        args={"city": "Sydney"},
        output="4.1m",
    )
    output = {"messages": [{"type": "tool", "content": "4.1m", "tool_call_id": "c1", "name": "lookup"}]}
    run = run_with(output, tool=tool)
    candidates, contents = step_interventions(run, run.steps[0], rerun_tool=lambda name, args: "5.3m")
    assert [c.kind for c in candidates if c.kind == "tool"] == ["tool"]
    assert candidates[0].edit.apply(output)["messages"][0]["content"] == "5.3m"
    blocked = run.model_copy(
        update={"steps": [run.steps[0], tool.model_copy(update={"side_effecting": True})]}
    )
    candidates, _ = step_interventions(blocked, blocked.steps[0], rerun_tool=lambda name, args: "5.3m")
    assert not [c for c in candidates if c.kind == "tool"]

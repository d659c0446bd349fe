"""Phoenix's span JSON -> SpanRecord, on the shapes Phoenix's REST API returns (captured from
Phoenix 20.26 on spans of the OpenInference LangChain instrumentor and of our own)."""

from __future__ import annotations

import json

import pytest

from causal_middleware.spans import attributes as A
from causal_middleware.store.phoenix import PROJECT_RESOURCE_ATTRIBUTE, record_from_phoenix

RETRIEVER = {
    "id": "U3BhbjoxMg==",
    "name": "_Retriever",
    "context": {"trace_id": "a957c980a3593d6c704d4d7a1f545e00", "span_id": "d18604eabe21a659"},
    "span_kind": "RETRIEVER",
    "parent_id": "be48247787570603",
    "start_time": "2026-12-01T13:16:30.195371+00:00",
    "end_time": "2026-12-01T13:16:30.195999+00:00",
    "status_code": "OK",
    "status_message": "",
    "attributes": {
        "input.value": "founder of Zorvex Labs",
        "metadata.ls_integration": "langgraph",
        "metadata.langgraph_step": 2,
        "metadata.langgraph_path": ["__pregel_pull", "retrieve"],
        "metadata.lc_versions.langchain-core": "1.8.3",
        "retrieval.documents.0.document.content": "Zorvex Labs was founded by Ilka Morrow.",
        "retrieval.documents.0.document.metadata.source": "corpus",
        "retrieval.documents.0.document.metadata.doc_id": "meta-d1",
        "tool.parameters.steps.0.name": "a",
        "tool.parameters.steps.1.name": "b",
    },
    "events": [
        {
            "name": "exception",
            "timestamp": "2026-12-01T13:16:30.195500+00:00",
            "attributes": {"exception.message": "x"},
        }
    ],
}


def test_json_text_attributes_are_joined_back() -> None:
    record = record_from_phoenix(RETRIEVER, "proj")
    attrs = record.attributes
    assert json.loads(attrs[A.METADATA]) == {
        "ls_integration": "langgraph",
        "langgraph_step": 2,
        "langgraph_path": ["__pregel_pull", "retrieve"],
        "lc_versions": {"langchain-core": "1.8.3"},
    }
    assert json.loads(attrs["retrieval.documents.0.document.metadata"]) == {
        "source": "corpus",
        "doc_id": "meta-d1",
    }
    assert json.loads(attrs[A.TOOL_PARAMETERS]) == {"steps": [{"name": "a"}, {"name": "b"}]}
    assert not any(k.startswith(("metadata.", "retrieval.documents.0.document.metadata.")) for k in attrs)
    assert attrs["retrieval.documents.0.document.content"] == "Zorvex Labs was founded by Ilka Morrow."


def test_span_kind_times_status_and_provenance() -> None:
    record = record_from_phoenix(RETRIEVER, "proj")
    assert record.attributes[A.OPENINFERENCE_SPAN_KIND] == "RETRIEVER"
    assert record.start_time_ns == 1796130990195371000 and record.end_time_ns == 1796130990195999000
    assert (record.status_code, record.status_message, record.parent_span_id) == (
        "OK",
        None,
        "be48247787570603",
    )
    assert record.events[0].name == "exception" and record.events[0].time_ns == 1796130990195500000
    assert record.resource == {PROJECT_RESOURCE_ATTRIBUTE: "proj"}
    unknown = record_from_phoenix({**RETRIEVER, "span_kind": "UNKNOWN", "parent_id": None})
    assert A.OPENINFERENCE_SPAN_KIND not in unknown.attributes and unknown.parent_span_id is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"context": {"trace_id": "xyz", "span_id": "d18604eabe21a659"}}, "trace_id"),
        ({"start_time": None}, "start_time must be an ISO 8601 time"),
        ({"start_time": "not a time"}, "Invalid isoformat"),
    ],
)
def test_malformed_spans_name_the_span(change: dict[str, object], expected: str) -> None:
    with pytest.raises(ValueError, match=expected) as caught:
        record_from_phoenix({**RETRIEVER, **change})
    assert "d18604eabe21a659" in str(caught.value)

"""The reference agent end to end on AnthropicChatModel, with the Messages API mocked.

The mocked endpoint plays Claude: it reads the agent's prompts (integrations/langgraph/
reference_agent/prompts.py) and replies with SUBQUERY/FACT/ANSWER lines, extracting facts from the
evidence text the agent actually retrieved with BM25.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import httpx2
from causal_middleware.integrations.anthropic import AnthropicChatModel

from benchmarks.reference_agent import build_reference_agent, run_question
from benchmarks.reference_agent import prompts as agent_prompts
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.retrieval.langchain import IndexRetriever
from causal_middleware.tasks.model import Passage, Question
from causal_middleware.tasks.scoring import is_correct

PASSAGES = [
    Passage(
        id="p-velmora",
        title="Velmora Industries",
        text="Velmora Industries was founded by Ada Quill in 1921.",
    ),
    Passage(id="p-quill", title="Ada Quill", text="Ada Quill was born in Lyon and trained as a chemist."),
    Passage(id="p-orbis", title="Orbis Freight", text="Orbis Freight was founded by Tom Reyes in 1950."),
    Passage(id="p-reyes", title="Tom Reyes", text="Tom Reyes was born in Porto."),
]
QUESTION = Question(id="q1", text="Where was the founder of Velmora Industries born?", answer="Lyon")

_ids = itertools.count(1)


class ScriptedClaude:
    """Answers the agent's three prompt kinds deterministically from the prompt text alone."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        prompt = body["messages"][-1]["content"][0]["text"]
        facts = re.findall(r"^\d+\. .* -> (.+)$", prompt, re.M)
        if "Current sub-question:" in prompt:
            sub = re.search(r"Current sub-question: (.+)", prompt).group(1)
            evidence = prompt.split("Evidence (most relevant first):", 1)[1]
            pattern = r"founded by ([A-Z]\w+ [A-Z]\w+)" if "founded" in sub else r"born in ([A-Z]\w+)"
            found = re.search(pattern, evidence)
            reply = f"FACT: {found.group(1) if found else 'NONE'}"
        elif "Decide the next step." in prompt:
            if not facts:
                reply = "SUBQUERY: Who founded Velmora Industries?"
            elif len(facts) == 1:
                reply = f"SUBQUERY: Where was {facts[0]} born?"
            else:
                reply = f"ANSWER: {facts[-1]}"
        else:
            reply = f"ANSWER: {facts[-1] if facts else 'unknown'}"
        words = len(prompt.split())
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{next(_ids)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": reply}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": words, "output_tokens": len(reply.split())},
            },
        )


def test_reference_agent_runs_on_the_anthropic_backend():
    api = ScriptedClaude()
    model = AnthropicChatModel(
        api_key="test",
        model="claude-haiku-4-5",
        max_retries=0,
        retry_backoff_s=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(api)),
    )
    retriever = IndexRetriever(index=BM25Index(PASSAGES), k=2)
    agent = build_reference_agent(retriever, model, budget=4)

    run = run_question(agent, QUESTION)

    assert run.answer == "Lyon" and is_correct(run.answer, QUESTION)
    assert run.stop_reason == "answered"
    assert run.queries == ["Who founded Velmora Industries?", "Where was Ada Quill born?"]
    assert [hop["fact"] for hop in run.hops] == ["Ada Quill", "Lyon"]
    assert run.hops[0]["documents"][0]["id"] == "p-velmora"
    assert run.hops[1]["documents"][0]["id"] == "p-quill"
    # decide, read, decide, read, decide (answer), answer: six model calls, all with the system prompt
    assert len(api.requests) == 6
    assert all(r["system"] == agent_prompts.SYSTEM for r in api.requests)
    assert all(r["model"] == "claude-haiku-4-5" for r in api.requests)
    history = list(agent.get_state_history(run.config))
    assert history and history[0].values["answer"] == "Lyon"

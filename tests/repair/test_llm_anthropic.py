"""CausalFlow's LLM parts on the real Anthropic client path: ``LLMProposer`` and ``LLMValidator`` run
on ``AnthropicChatModel`` (the ``anthropic`` SDK over ``httpx2``), the Messages API mocked with an
``httpx2.MockTransport`` (no network). The repaired agent is the reference agent on the offline
model and BM25; its failure is a hop-1 query drift, fault injection's own family.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from causal_middleware.integrations.anthropic import AnthropicChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from repair_agent import first_failing_fault

from benchmarks.reference_agent.adapter import reference_sweep_environment
from benchmarks.world.generator import generate_world
from causal_middleware.counterfactual.llm import call_model, json_list_prefix, parse_json
from causal_middleware.faults.sweep import SweepEnvironment
from causal_middleware.protocols import RepairCost
from causal_middleware.repair import LLMProposer, ReferenceVerifier, RepairConfig, repair_run
from causal_middleware.repair.validate import LLMValidator
from causal_middleware.spans.model import NodeStep, Trajectory
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import is_correct

MODEL = "claude-repair-test"
CONFIG = RepairConfig(validation_runs=2, validation_min_flips=2)
PROSE = "I cannot tell which output would be right without seeing the corpus."
_ids = itertools.count(1)


class MockClaude:
    """The Messages API endpoint, playing Claude for the repair roles.

    A proposer request (``LLMProposer``'s system prompt) gets alternatives composed from the request:
    for a ``decide`` step, the failing hop's gold sub-question from the world's data (earlier
    hops' gold answers put in for ``#k``), a wrong one (answer now, with no facts found), and two
    malformed items; anything else gets ``[]``. A validator role gets the verdict set for it in
    ``verdicts``. ``errors`` are answered first, one per request; ``fail`` may answer any request
    with an error status instead. Replies carry ``usage`` (whitespace words in, words out), and
    the usage of every 200 reply is kept in ``usage``.
    """

    def __init__(
        self,
        questions: list[Question],
        *,
        verdicts: dict[str, tuple[bool, float]] | None = None,
        proposer_reply: str | None = None,
        truncate_at: int | None = None,
        errors: list[int] | None = None,
        fail: Callable[[dict[str, Any]], int | None] | None = None,
    ) -> None:
        self.questions = {q.text: q for q in questions}
        self.verdicts = verdicts or {}
        self.proposer_reply = proposer_reply
        self.truncate_at = truncate_at
        self.errors = list(errors or [])
        self.fail = fail
        self.requests: list[dict[str, Any]] = []
        self.usage: list[tuple[int, int]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        status = self.errors.pop(0) if self.errors else (self.fail(body) if self.fail else None)
        if status is not None:
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
            # retry-after-ms: the SDK's own retry waits 1 ms instead of its 0.5 s+ backoff
            return httpx2.Response(
                status,
                json={"type": "error", "error": {"type": kind, "message": f"mock {kind}"}},
                headers={"retry-after-ms": "1"},
            )
        system, user = body.get("system", ""), body["messages"][-1]["content"][0]["text"]
        reply, stop = self.reply(system, user), "end_turn"
        if self.truncate_at is not None and system.startswith("You repair failed runs"):
            reply, stop = reply[: self.truncate_at], "max_tokens"
        usage = (len(system.split()) + len(user.split()), len(reply.split()))
        self.usage.append(usage)
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{next(_ids)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": reply}],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
            },
        )

    def reply(self, system: str, user: str) -> str:
        if system.startswith("You repair failed runs"):
            return self.proposer_reply if self.proposer_reply is not None else self.proposals(user)
        role = "meta_critic" if "meta-critic" in system else "critic" if "critic" in system else "proposer"
        agree, confidence = self.verdicts[role]
        return json.dumps({"agree": agree, "confidence": confidence, "reason": f"{role} verdict"})

    def proposals(self, user: str) -> str:
        question = self.questions[_field(user, "Question")]
        step = re.search(r'^Step: node "(\w+)", hop (\d+)', user, re.M)
        if step is None or step.group(1) != "decide":
            return "[]"
        good = gold_sub_query(question, int(step.group(2)))
        items = [
            {"decision": "answer", "sub_query": None, "queries": [], "stop_reason": "answered"},
            {"sub_query": good, "queries": [good]},
            "a sub-query, not an object",
            {"rationale": "a key the step's output does not have"},
        ]
        return f"Here are alternatives for the step:\n```json\n{json.dumps(items)}\n```"


def _field(text: str, name: str) -> str:
    found = re.search(rf"^{name}: (.+)$", text, re.M)
    assert found is not None, f"no {name!r} line in the request"
    value = found.group(1)
    return json.loads(value) if value.startswith('"') else value  # fenced data: a quoted value


def gold_sub_query(question: Question, hop: int) -> str:
    text = question.hops[hop - 1].question
    return re.sub(r"#(\d+)", lambda m: question.hops[int(m.group(1)) - 1].answer, text)


def claude(api: MockClaude, **kw: Any) -> AnthropicChatModel:
    kw.setdefault("max_retries", 0)
    kw.setdefault("retry_backoff_s", 0)
    return AnthropicChatModel(
        model=MODEL, api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(api)), **kw
    )


@pytest.fixture(scope="module")
def env() -> Iterator[SweepEnvironment]:
    environment = reference_sweep_environment(generate_world(12, seed=0), store=InMemorySpanStore(), seed=0)
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def drifted(env: SweepEnvironment) -> tuple[Trajectory, Question]:
    """The first run whose hop-1 query drift makes the (otherwise correct) agent fail."""
    return first_failing_fault(env, "query_drift")


def _verifier(question: Question) -> ReferenceVerifier:
    return ReferenceVerifier(question.answer, question.aliases)


def _step(run: Trajectory, node: str, hop: int) -> NodeStep:
    return next(s for s in run.steps if isinstance(s, NodeStep) and (s.node, s.hop) == (node, hop))


def _assert_cost_is_the_apis_usage(cost: Any, api: MockClaude) -> None:
    assert cost.llm_calls == len(api.usage)
    assert cost.input_tokens == sum(i for i, _ in api.usage)
    assert cost.output_tokens == sum(o for _, o in api.usage)


def test_llm_proposer_repairs_the_failed_run_over_the_messages_api(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question]
) -> None:
    faulted, question = drifted
    api = MockClaude(env.dataset.questions)
    # the failed step only, every proposal forked (no early stop), to see which one flips
    failed_step = _step(faulted, "decide", 1)
    config = CONFIG.model_copy(update={"candidates": [failed_step.step_id], "early_stop": False})
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=LLMProposer(claude(api), temperature=0.9),
        verifier=_verifier(question),
        config=config,
        write=False,
    )
    # the request: model, temperature passed through, system prompt, failed output and feedback
    sent = api.requests[0]
    assert sent["model"] == MODEL and sent["temperature"] == 0.9
    assert sent["system"].startswith("You repair failed runs") and "JSON" in sent["system"]
    user = sent["messages"][0]["content"][0]["text"]
    drifted_query = failed_step.output["sub_query"]
    assert 'Step: node "decide", hop 1' in user  # fenced data: node names are quoted
    assert json.dumps(drifted_query) in user
    assert result.crs.baseline_feedback in user and "does not match the reference answer" in user

    assert result.status == "repaired", result.explanation
    repair = result.repair
    assert repair is not None and (repair.node, repair.hop, repair.source) == ("decide", 1, "llm")
    good = gold_sub_query(question, 1)
    assert repair.repaired["sub_query"] == good and repair.repaired["queries"] == [good]
    assert is_correct(repair.answer_after, question) and not is_correct(faulted.answer, question)
    # both well-formed proposals were forked; only the gold sub-query flips the run
    outcomes = {p.proposal.values["sub_query"]: p.success for p in result.crs.probes}
    assert outcomes == {good: True, None: False}
    fork = env.store.get_trajectory(repair.fork_run_id or "")
    assert _step(fork, "decide", 1).output["sub_query"] == good and is_correct(fork.answer, question)
    assert repair.validation.passed and repair.llm_validation.ran is False
    # one call in all, costed with the API's usage
    assert len(api.requests) == 1
    _assert_cost_is_the_apis_usage(result.cost, api)


def test_malformed_and_cut_off_replies(env: SweepEnvironment, drifted: tuple[Trajectory, Question]) -> None:
    faulted, _ = drifted
    step = _step(faulted, "decide", 1)
    api = MockClaude(env.dataset.questions)
    batch = LLMProposer(claude(api)).propose(faulted, step, 3, feedback="wrong answer")
    assert len(batch.proposals) == 2 and batch.note == "2 malformed proposal(s) dropped"
    assert all(set(p.values) == set(step.output) for p in batch.proposals)  # unchanged keys kept
    # a reply cut off at max_tokens keeps its complete items and says so
    whole = api.proposals(api.requests[0]["messages"][0]["content"][0]["text"])
    cut = MockClaude(env.dataset.questions, truncate_at=whole.index('{"sub_query"', 50) + 5)
    partial = LLMProposer(claude(cut)).propose(faulted, step, 3, feedback="wrong answer")
    assert [p.values for p in partial.proposals] == [batch.proposals[0].values]
    assert partial.proposals[0].values["decision"] == "answer"  # the first item; the second was cut
    assert partial.note is not None and "cut off at the model's output-token limit" in partial.note
    with pytest.raises(ValueError, match="temperature 1.5 is not valid for AnthropicChatModel"):
        LLMProposer(claude(api), temperature=1.5)


def test_validator_roles_agree_and_the_repair_is_retained(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question]
) -> None:
    faulted, question = drifted
    verdicts = {"proposer": (True, 0.9), "critic": (False, 0.6), "meta_critic": (True, 0.8)}
    api = MockClaude(env.dataset.questions, verdicts=verdicts)
    model = claude(api)
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=LLMProposer(model),
        verifier=_verifier(question),
        config=CONFIG,
        llm_validator=LLMValidator(model),
        write=False,
    )
    assert result.status == "repaired", result.explanation
    assert result.repair is not None
    llm = result.repair.llm_validation
    assert llm.ran and llm.retained and llm.confidence == 0.8
    assert [(j.role, j.agree, j.confidence) for j in llm.judgements] == [
        ("proposer", True, 0.9),
        ("critic", False, 0.6),
        ("meta_critic", True, 0.8),
    ]
    assert "Multi-agent validation: confidence 0.8 (2 of 3 roles agree)" in result.explanation
    roles = api.requests[1:]
    assert [r["system"].split(".")[0] for r in roles] == [
        "You attribute the failure of an AI agent's run to one step",
        "You are a critic checking a failure attribution for an AI agent's run",
        "You are the meta-critic: weigh the proposer's attribution and the critic's review and give "
        "the final verdict on whether the blamed step caused the failure and the repair fixes it",
    ]
    case = roles[0]["messages"][0]["content"][0]["text"]
    assert gold_sub_query(question, 1) in case and 'Blamed step: node "decide", hop 1' in case
    assert "proposer says: agree=True" in roles[1]["messages"][0]["content"][0]["text"]
    assert "critic says: agree=False" in roles[2]["messages"][0]["content"][0]["text"]
    assert all("temperature" not in r for r in roles)  # the validator samples at the model's own setting
    # 1 proposer + 3 validator calls, costed with the API's usage
    assert result.cost.llm_calls == 4 and llm.cost.llm_calls == 3
    _assert_cost_is_the_apis_usage(result.cost, api)


def test_meta_critic_rejection_keeps_no_repair(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question]
) -> None:
    faulted, question = drifted
    verdicts = {"proposer": (True, 0.9), "critic": (False, 0.7), "meta_critic": (False, 0.9)}
    api = MockClaude(env.dataset.questions, verdicts=verdicts)
    model = claude(api)
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=LLMProposer(model),
        verifier=_verifier(question),
        store=env.store,
        config=CONFIG,
        llm_validator=LLMValidator(model),
    )
    assert result.status == "unvalidated" and result.repair is None and result.pair is None
    [rejected] = result.rejected
    assert rejected.success and rejected.proposal.values["sub_query"] == gold_sub_query(question, 1)
    assert (
        "1 proposal(s) flipped the outcome once but were not kept; the first (decide at hop 1) was not "
        "retained by multi-agent validation (confidence 0.1 < 0.5; 1 of 3 roles agree)"
    ) in result.explanation
    record = env.store.get_records("repair", faulted.run_id)[-1]
    assert record["status"] == "unvalidated" and record["explanation"] == result.explanation
    _assert_cost_is_the_apis_usage(result.cost, api)


@pytest.mark.parametrize(
    ("layer", "options"),
    [
        ("sdk", {"max_retries": 2, "rate_limit_retries": 0}),
        ("model", {"max_retries": 0, "rate_limit_retries": 2, "retry_backoff_s": 0.5}),
    ],
)
def test_overloaded_then_rate_limited_then_success(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question], layer: str, options: dict[str, Any]
) -> None:
    faulted, _ = drifted
    api = MockClaude(env.dataset.questions, errors=[529, 429])
    slept: list[float] = []
    batch = LLMProposer(claude(api, sleep=slept.append, **options)).propose(
        faulted, _step(faulted, "decide", 1), 3, feedback="wrong answer"
    )
    assert len(api.requests) == 3 and len(batch.proposals) == 2
    assert batch.note == "2 malformed proposal(s) dropped"
    # the SDK waits what retry-after-ms says (1 ms); AnthropicChatModel's own backoff is injected
    assert slept == ([] if layer == "sdk" else [0.5, 1.0])
    assert batch.cost.llm_calls == 1 and len(api.usage) == 1  # the failed attempts are no calls
    _assert_cost_is_the_apis_usage(batch.cost, api)


def test_reply_without_json_gives_no_proposals_and_no_flip(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question]
) -> None:
    faulted, question = drifted
    api = MockClaude(env.dataset.questions, proposer_reply=PROSE)
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=LLMProposer(claude(api)),
        verifier=_verifier(question),
        config=CONFIG,
        write=False,
    )
    assert result.status == "no_flip" and result.repair is None
    scores = result.crs.scores
    assert scores and all(s.n_proposals == 0 and s.crs is None for s in scores)
    assert all((s.skipped or "").startswith("no proposals: no JSON value") for s in scores)
    assert PROSE[:40] in (scores[0].skipped or "")
    assert result.crs.cost.reexecutions == 0
    assert f"{len(scores)} step(s) got no usable proposal" in result.explanation
    assert "no JSON value of the expected shape in model reply" in result.explanation
    assert len(api.requests) == len(scores)  # one call per candidate step
    _assert_cost_is_the_apis_usage(result.cost, api)


def test_a_persistent_api_error_fails_open(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question]
) -> None:
    faulted, question = drifted
    api = MockClaude(env.dataset.questions, fail=lambda body: 529)
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=LLMProposer(claude(api, max_retries=1, rate_limit_retries=0)),
        verifier=_verifier(question),
        store=env.store,
        config=CONFIG,
    )
    assert result.status == "no_flip" and result.repair is None
    scores = result.crs.scores
    assert scores and all(
        (s.skipped or "").startswith("no proposals: model call failed: OverloadedError") for s in scores
    )
    assert (
        "got no usable proposal, the first because: model call failed: OverloadedError" in result.explanation
    )
    assert len(api.requests) == 2 * len(scores)  # each call retried once by the SDK, then given up
    assert result.cost.llm_calls == 0 and result.cost.total_tokens == 0
    record = env.store.get_records("repair", faulted.run_id)[-1]
    assert record["status"] == "no_flip" and "OverloadedError" in record["crs"]["scores"][0]["skipped"]


def test_validator_api_error_keeps_the_offline_validated_repair_and_says_so(
    env: SweepEnvironment, drifted: tuple[Trajectory, Question]
) -> None:
    faulted, question = drifted
    # the API answers the proposer, then is overloaded for good
    api = MockClaude(
        env.dataset.questions, fail=lambda body: None if body["system"].startswith("You repair") else 529
    )
    model = claude(api)
    result = repair_run(
        faulted,
        backend=env.backend,
        proposer=LLMProposer(model),
        verifier=_verifier(question),
        config=CONFIG,
        llm_validator=LLMValidator(model),
        write=False,
    )
    assert result.status == "repaired" and result.repair is not None
    llm = result.repair.llm_validation
    assert llm.ran is False and llm.retained is None and llm.judgements == []
    assert llm.reason.startswith("not run: the proposer's model call failed: OverloadedError")
    assert "Multi-agent validation not run: the proposer's model call failed" in result.explanation
    assert result.repair.validation.passed
    _assert_cost_is_the_apis_usage(result.cost, api)
    assert result.cost.llm_calls == 1


def test_reply_helpers_take_content_blocks_other_usage_keys_and_asides() -> None:
    # a provider returning content blocks (thinking first) and OpenAI-style usage and finish reason
    reply = AIMessage(
        content=[
            {"type": "thinking", "thinking": "[no]"},
            {"type": "text", "text": 'see [1]: [{"a": 1}, {"b"'},
        ],
        response_metadata={
            "token_usage": {"prompt_tokens": 5, "completion_tokens": 2},
            "finish_reason": "length",
        },
    )
    cost = RepairCost()
    got = call_model(GenericFakeChatModel(messages=iter([reply])), "system", "user", cost)
    assert got.text == 'see [1]: [{"a": 1}, {"b"' and got.truncated
    assert (cost.llm_calls, cost.input_tokens, cost.output_tokens) == (1, 5, 2)
    assert json_list_prefix(got.text) == [{"a": 1}]  # the last top-level list, not an aside before it
    assert json_list_prefix(got.text, accept=lambda item: isinstance(item, dict)) == [{"a": 1}]
    objects = parse_json(
        'see [1], then [{"a": 1}]', accept=lambda v: isinstance(v, list) and v and isinstance(v[0], dict)
    )
    assert objects == [{"a": 1}]
    with pytest.raises(ValueError, match="no JSON value of the expected shape"):
        parse_json("see [1]", accept=lambda v: isinstance(v, dict))

"""Schema-constrained replies from the real local model (``@pytest.mark.model``; skipped without it).

Qwen2.5-Coder-0.5B without a schema answered the detector prompt with a bare ``[]`` and cut the
root-cause JSON at the token limit; with the reply schema its decoding is grammar-constrained, so
the reply must validate against the schema the prompt's role declared.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from causal_middleware.integrations import llamacpp_weights as weights
from causal_middleware.integrations.llamacpp import LlamaCppChatModel, LocalRuntimeMissing, import_llama_cpp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "attribution"))  # attribution_sim
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm_structured"))  # structured_sessions

pytestmark = pytest.mark.model
jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def qwen() -> LlamaCppChatModel:
    try:
        import_llama_cpp()
        weights.installed_model_path(weights.DEFAULT_LOCAL_MODEL)
    except LocalRuntimeMissing:
        pytest.skip("llama-cpp-python is not installed: run `make local-model`")
    except weights.WeightsError as exc:
        pytest.skip(str(exc))
    return LlamaCppChatModel.from_catalogue(weights.DEFAULT_LOCAL_MODEL, max_tokens=200)


def test_the_detector_prompt_gets_schema_valid_json(qwen) -> None:
    from structured_sessions import stale_session

    from causal_middleware.context.detector_llm import PROMPT, SYSTEM, detector_schema
    from causal_middleware.context.llm import fenced_transcript
    from causal_middleware.context.signals import SignalType
    from causal_middleware.prompts import Fence
    from causal_middleware.prompts.llm import invoke_chat

    conv = stale_session()
    fence = Fence()
    prompt = PROMPT.format(
        types=", ".join(t.value for t in SignalType),
        session_id=fence.inline(conv.session_id),
        transcript=fenced_transcript(conv, fence),
    )
    schema = detector_schema(conv)
    reply = invoke_chat(qwen, SYSTEM, prompt, fence=fence, schema=schema)
    assert reply.structured and not reply.truncated, reply.text
    jsonschema.validate(json.loads(reply.text), schema)  # the whole reply is the one JSON value


def test_the_judge_prompt_gets_schema_valid_json_and_a_diagnosis(qwen) -> None:
    from attribution_sim import faulted_run, make_world

    from causal_middleware.attribution import get_diagnoser
    from causal_middleware.attribution.hops import hop_views, render_hops
    from causal_middleware.attribution.llm import verdict_schema
    from causal_middleware.attribution.llm_judge import JUDGE_SYSTEM
    from causal_middleware.prompts import Fence
    from causal_middleware.prompts.llm import invoke_chat

    run = faulted_run(make_world(), "empty_retrieval", 1)
    views = hop_views(run)
    fence = Fence()
    schema = verdict_schema(max(v.index for v in views))
    reply = invoke_chat(
        qwen,
        fence.system(JUDGE_SYSTEM),
        fence.block("run", render_hops(run, views, fence=fence)),
        schema=schema,
    )
    assert reply.structured and not reply.truncated, reply.text
    jsonschema.validate(json.loads(reply.text), schema)
    d = get_diagnoser("llm_judge", model=qwen).diagnose(run)
    assert d.ran and "parse_error" not in d.details and d.stage in ("retrieval", "tool", "answer")

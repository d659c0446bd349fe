"""``OfflineChatModel``: a deterministic LangChain chat model that plays a research agent offline.

It reads only the natural-language text of its prompt (the question, the facts found so far,
the evidence passages) and answers in the reply formats the prompt asks for (``SUBQUERY:``,
``FACT:``, ``ANSWER:``); see :mod:`benchmarks.models.offline_prompts` for the text
conventions. On the generated world it plans sub-queries by unfolding the composed question
with the world's question grammar, carries bridge entities from earlier facts, extracts facts
by matching statement templates and relation synonyms, learns aliases from the evidence,
re-queries with reformulations when the evidence lacks what it needs, and answers when done.
How it reacts to bad evidence is a :class:`Susceptibility` profile.

``simulate`` mode (for MuSiQue/HotpotQA, whose questions it cannot decompose from the wording)
plans from gold decompositions given at construction (:class:`GoldDecompositionPlanner`) and
reports a hop's answer only when the retrieved evidence text contains it (or an alias).

Token usage is counted with a simple regex tokenizer and reported like a hosted model's
(``usage_metadata`` on the message and ``llm_output["token_usage"]``).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LangSmithParams
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr

from benchmarks.models.offline_policy import (
    UNKNOWN_ANSWER,
    Dice,
    GoldDecompositionPlanner,
    SimulatedPolicy,
    Susceptibility,
    WorldPolicy,
)
from benchmarks.models.offline_prompts import dice_text, read_prompt
from causal_middleware.tasks.model import Question

DEFAULT_MODEL_NAME = "offline-0"
_TOKEN = re.compile(r"\w+|[^\w\s]")

__all__ = [
    "DEFAULT_MODEL_NAME",
    "GoldDecompositionPlanner",
    "OfflineChatModel",
    "Susceptibility",
    "count_tokens",
]


def count_tokens(text: str) -> int:
    """Words and punctuation marks: a rough stand-in for a subword tokenizer."""
    return len(_TOKEN.findall(text))


def _content_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


class _Sampler:
    """The sampling model's random stream: seeded, thread-safe, and fresh in every copy (a
    deep copy or an unpickled model restarts from the seed instead of sharing a lock)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def resample(self, temperature: float) -> float | None:
        """A fresh draw with probability ``temperature``, else None (keep the fixed draw)."""
        with self._lock:
            if self._rng.random() >= temperature:
                return None
            return self._rng.random()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Sampler:
        return _Sampler(self.seed)

    def __reduce__(self) -> tuple[type[_Sampler], tuple[int]]:
        return (_Sampler, (self.seed,))


class OfflineChatModel(BaseChatModel):
    """Deterministic, seeded chat model for the reference agent (see the module docstring).

    >>> model = OfflineChatModel(seed=0)
    >>> model.invoke("Question: Who founded Velmora Industries?\\nReply with SUBQUERY: or ANSWER:").content
    'SUBQUERY: Who founded Velmora Industries?'
    """

    model_name: str = DEFAULT_MODEL_NAME
    seed: int = 0
    temperature: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="0: the same prompt always gets the same reply. t > 0 samples: each prompt-specific "
        "draw (misreading a namesake, trusting a false premise, grabbing an off-topic value, ...) is "
        "replaced by a fresh one with probability t, from a random stream seeded with `seed` (so a "
        "re-run of the same step can go another way, as with an LLM sampled at a temperature). The "
        "stream is reproducible when calls run one at a time (concurrent forks interleave it)",
    )
    susceptibility: Susceptibility = Field(default_factory=Susceptibility)
    gold: GoldDecompositionPlanner | None = Field(
        default=None, description="gold decompositions; set = simulate mode (see simulating())"
    )

    _sampler: _Sampler | None = PrivateAttr(default=None)

    def _resample(self) -> float | None:
        if self._sampler is None:
            self._sampler = _Sampler(self.seed)
        return self._sampler.resample(self.temperature)

    @classmethod
    def simulating(cls, questions: Iterable[Question], **kwargs: Any) -> OfflineChatModel:
        """A model in simulate mode for these questions (e.g. loaded MuSiQue/HotpotQA items)."""
        return cls(gold=GoldDecompositionPlanner.from_questions(questions), **kwargs)

    @property
    def simulate(self) -> bool:
        return self.gold is not None

    @property
    def _llm_type(self) -> str:
        return "offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "seed": self.seed,
            "temperature": self.temperature,
            "simulate": self.simulate,
            "susceptibility": self.susceptibility.model_dump(),
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "offline"
        params["ls_model_name"] = self.model_name
        return params

    def _combine_llm_outputs(self, llm_outputs: list[dict[str, Any] | None]) -> dict[str, Any]:
        totals = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for output in llm_outputs:
            for key, value in ((output or {}).get("token_usage") or {}).items():
                totals[key] = totals.get(key, 0) + value
        return {"token_usage": totals, "model_name": self.model_name}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> OfflineChatModel:
        """Tools are accepted and ignored (the model never calls them), so agent builders work."""
        return self

    def respond(self, prompt: str, context: str | None = None) -> str:
        """The reply text for ``prompt``; ``context`` (all messages) seeds the random draws."""
        view = read_prompt(prompt)
        resample = self._resample if self.temperature > 0 else None
        dice = Dice(self.seed, context if context is not None else dice_text(prompt), resample)
        policy: WorldPolicy | SimulatedPolicy
        policy = SimulatedPolicy(self.gold) if self.gold is not None else WorldPolicy(self.susceptibility)
        if view.task == "decide":
            return policy.decide(view, dice)
        if view.task == "read":
            return policy.read(view, dice)
        if view.task == "answer":
            return policy.answer(view, dice)
        return f"I can only follow the SUBQUERY/FACT/ANSWER formats; answer: {UNKNOWN_ANSWER}"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if not messages:
            raise ValueError("OfflineChatModel got no messages")
        texts = [_content_text(m) for m in messages]
        humans = [t for m, t in zip(messages, texts, strict=True) if isinstance(m, HumanMessage)]
        prompt = humans[-1] if humans else texts[-1]
        context = "\n\n".join(
            dice_text(t) if isinstance(m, HumanMessage) else t for m, t in zip(messages, texts, strict=True)
        )
        reply = self.respond(prompt, context)
        if stop:
            for token in stop:
                if token in reply:
                    reply = reply[: reply.index(token)]
        n_in, n_out = count_tokens(context), count_tokens(reply)
        usage = {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
        message = AIMessage(
            content=reply,
            usage_metadata=usage,
            response_metadata={"model_name": self.model_name, "finish_reason": "stop"},
        )
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={
                "token_usage": {
                    "prompt_tokens": n_in,
                    "completion_tokens": n_out,
                    "total_tokens": n_in + n_out,
                },
                "model_name": self.model_name,
            },
        )

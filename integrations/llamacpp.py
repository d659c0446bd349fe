"""A local GGUF model as a LangChain chat model, on ``llama-cpp-python`` (installed by ``make local-model``).

:class:`LlamaCppChatModel` renders the conversation with the model's own chat template (read
from the GGUF file), generates with llama.cpp, and reports token usage the way the other chat
models of this project do (``AIMessage.usage_metadata``, ``llm_output["token_usage"]``), with the
prompt tokens served from the prefix cache in ``input_token_details["cache_read"]``.

Decoding is greedy by default (``temperature=0``: the most likely token, identical output for an
identical prompt, in any process). With ``temperature > 0`` the sampler is seeded with ``seed`` on
every call, so a call is still reproducible; vary ``seed`` (``model.bind(seed=n)``) for fresh
samples, or set ``seed_per_call=True``: call ``i`` of the model (and of its copies, which share the
count) is seeded with ``seed + i``, so a repeated prompt (a re-run validating a repair) samples
afresh while a whole sequence of calls, made in the same order, still reproduces. Sampled replies
also depend on what the prefix cache held: a prompt evaluated from a cached prefix gets a reply
other than the same prompt evaluated whole, with the same seed (measured on Qwen2.5-Coder-0.5B;
greedy replies do not change). With ``prefix_cache="off"`` a sampled sequence reproduces exactly.

Prefix caching: llama.cpp keeps the last prompt in its KV cache and evaluates only the part of a
new prompt after the shared prefix (the system prompt, the question...): ``prefix_cache="context"``.
``"ram"`` (the default) also keeps recent states in a
:class:`~causal_middleware.integrations.llamacpp_cache.PrefixStateCache`, so a prompt that extends
any recent one, not only the last, starts from there: what re-executing a run's suffix does.
``"off"`` evaluates every prompt from scratch (for measuring).

Tool calling: with a template that renders ``tools`` (Qwen 2.5's does) the tools go through it and
the model answers with ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; for any other
template the same instructions are written into the system prompt. :func:`parse_tool_calls` reads
the calls back (tagged, fenced or bare JSON naming a bound tool); a call naming an unbound tool
becomes an ``invalid_tool_call``. Small models call tools when the request plainly needs one; they
are not reliable at choosing among many, and once they have a tool's result they tend to call it
again with the same arguments, forever (Qwen2.5-Coder-0.5B under ``create_agent`` does). So by
default (``repeat_tool_calls="answer"``) a reply whose calls all repeat calls already answered in
the conversation is replaced by a second completion, without tools, asked to answer from the
results (``response_metadata["completions"] == 2``; usage counts both).

Structured replies: ``with_structured_output(schema)`` (a pydantic model, TypedDict or JSON schema;
``method="json_schema"``, the default) binds ``response_format`` and parses the reply; a bound
``response_format`` (OpenAI's ``{"type": "json_schema", "json_schema": {"schema": ...}}``,
llama-cpp-python's ``{"type": "json_object", "schema": ...}``, or plain ``{"type": "json_object"}``)
turns the schema into a llama.cpp grammar (:func:`response_grammar`), so decoding can only produce
JSON of that shape: a small model that ignores the format asked for in the prompt cannot. Only the
grammar converter's subset of JSON schema binds (types, ``enum``, ``required``, ``maxLength``,
``maxItems``, ``anyOf``, local ``$ref``); numeric bounds do not. ``method="function_calling"``
binds the schema as a tool instead (the base class's way: an instruction, no grammar).

One loaded model (``llama_cpp.Llama``) is shared by every chat model with the same file and load
settings, behind a lock: llama.cpp contexts are not thread-safe, and two calls at once on 2 cores
would only be slower. ``n_threads`` defaults to 1 because 2 threads busy-wait on each other when
another process holds a core (a 0.6 s call took 47 s).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LangSmithParams, LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .llamacpp_cache import MIN_GAIN_TOKENS, PrefixStateCache
from .llamacpp_tools import (
    ANSWER_FROM_RESULTS,
    TOOL_INSTRUCTIONS,
    answered_calls,
    parse_tool_calls,
    to_chat_messages,
    tool_call_key,
)
from .llamacpp_weights import DEFAULT_LOCAL_MODEL, INSTALL_HINT, installed_model_path

__all__ = [
    "TOOL_INSTRUCTIONS",
    "LlamaCppChatModel",
    "LocalRuntimeMissing",
    "answered_calls",
    "import_llama_cpp",
    "parse_tool_calls",
    "response_grammar",
    "to_chat_messages",
]

RUNTIME_HINT = f"the local model needs llama-cpp-python 0.3.36 (built without AMX): run `{INSTALL_HINT}`"
PrefixCache = Literal["ram", "context", "off"]
ToolSpec = dict[str, Any] | type | Callable[..., Any] | BaseTool


class LocalRuntimeMissing(ImportError, ValueError):
    """``llama_cpp`` is not importable (a ValueError too, so the CLI prints it as a bad-input line)."""


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module, or :class:`LocalRuntimeMissing` saying how to install it."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise LocalRuntimeMissing(f"{RUNTIME_HINT} ({exc})") from None
    return llama_cpp


@dataclass
class _Loaded:
    llama: Any
    lock: threading.Lock
    formatter: Any
    template_has_tools: bool
    extra_stops: tuple[str, ...]
    ram_cache: PrefixStateCache | None


@dataclass(frozen=True)
class _Options:
    max_tokens: int
    temperature: float
    seed: int
    stops: list[str]
    grammar: Any = None


@dataclass(frozen=True)
class _Completion:
    prompt: str
    text: str
    input_tokens: int
    output_tokens: int
    cache_read: int
    finish_reason: str | None
    seconds: float


_LOADED: dict[tuple[str, int, int, int], _Loaded] = {}
_LOADED_LOCK = threading.Lock()


def _load(path: str, n_ctx: int, n_threads: int, ram_cache_bytes: int) -> _Loaded:
    key = (str(Path(path).resolve()), n_ctx, n_threads, ram_cache_bytes)
    with _LOADED_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        llama_cpp = import_llama_cpp()
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if not Path(path).is_file():
            raise FileNotFoundError(f"GGUF file {path} does not exist")
        llama = llama_cpp.Llama(
            model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, verbose=False
        )
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{path} has no chat template (a base model?): it cannot serve as a chat model")
        eos_id, bos_id = llama.token_eos(), llama.token_bos()
        eos = llama._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llama._model.token_get_text(bos_id) if bos_id != -1 else ""
        formatter = Jinja2ChatFormatter(
            template=template, eos_token=eos, bos_token=bos, stop_token_ids=[eos_id]
        )
        # ChatML templates end a turn with <|im_end|>, which is not always the file's eos token
        stops = tuple(s for s in ("<|im_end|>", "<|eot_id|>", "<end_of_turn>") if s in template and s != eos)
        ram_cache = PrefixStateCache(ram_cache_bytes) if ram_cache_bytes > 0 else None
        loaded = _Loaded(llama, threading.Lock(), formatter, "tools" in template, stops, ram_cache)
        _LOADED[key] = loaded
        return loaded


class LlamaCppChatModel(BaseChatModel):
    """A chat model over a local GGUF file (``model_path``; :meth:`from_catalogue` by name)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str
    model_name: str = Field(default="", description="reported as the model's name; default: the file's stem")
    n_ctx: int = Field(default=4096, gt=0)
    n_threads: int = Field(default=1, gt=0)
    max_tokens: int = Field(default=256, gt=0)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    seed: int = 0
    seed_per_call: bool = Field(
        default=False,
        description="seed call i with seed + i (copies share the count) instead of seed every time",
    )
    stop_sequences: list[str] | None = None
    prefix_cache: PrefixCache = "ram"
    repeat_tool_calls: Literal["answer", "allow"] = Field(
        default="answer",
        description="a reply that only repeats tool calls already answered in the conversation is "
        "replaced by a plain answer from their results (``answer``), or returned as is (``allow``)",
    )
    ram_cache_bytes: int = Field(default=512 << 20, gt=0)
    # itertools.count is advanced atomically under the GIL; model_copy shares it with the copy
    _calls: itertools.count[int] = PrivateAttr(default_factory=itertools.count)

    @classmethod
    def from_catalogue(cls, name: str = DEFAULT_LOCAL_MODEL, **kwargs: Any) -> LlamaCppChatModel:
        """The catalogued model ``name`` from the cache (``make local-model`` puts it there)."""
        return cls(model_path=str(installed_model_path(name)), model_name=name, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "llamacpp"

    @property
    def name_reported(self) -> str:
        return self.model_name or Path(self.model_path).stem

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model": self.name_reported,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "seed_per_call": self.seed_per_call,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="llamacpp",
            ls_model_name=self.name_reported,
            ls_model_type="chat",
            ls_max_tokens=self.max_tokens,
            ls_temperature=self.temperature,
        )
        if stop or self.stop_sequences:
            params["ls_stop"] = stop or self.stop_sequences
        return params

    def _call_seed(self) -> int:
        if not self.seed_per_call:
            return self.seed
        return (self.seed + next(self._calls)) % (1 << 31)  # llama.cpp takes a 32-bit seed

    def loaded(self) -> _Loaded:
        """The shared loaded model (loads it on first use)."""
        cache_bytes = self.ram_cache_bytes if self.prefix_cache == "ram" else 0
        return _load(self.model_path, self.n_ctx, self.n_threads, cache_bytes)

    def bind_tools(
        self,
        tools: Sequence[ToolSpec],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (LangChain tools, functions, pydantic models or OpenAI tool dicts).

        ``tool_choice`` ``"any"``/``"required"``/``True`` or a tool name adds an instruction to call
        one (a small model may still not); ``"none"`` binds no tools.
        """
        kwargs.pop("strict", None)  # OpenAI-only flags create_agent may pass
        kwargs.pop("parallel_tool_calls", None)
        if tool_choice == "none":
            return super().bind(**kwargs)
        bound: dict[str, Any] = {"tools": [convert_to_openai_tool(t) for t in tools]}
        if tool_choice not in (None, False, "auto"):
            bound["tool_choice"] = tool_choice
        return super().bind(**bound, **kwargs)

    def with_structured_output(  # type: ignore[override]
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: Literal["json_schema", "json_mode", "function_calling"] = "json_schema",
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """A runnable answering with ``schema``'s JSON, grammar-constrained (``json_schema``), any
        JSON object (``json_mode``), or through a bound tool (``function_calling``). Returns the
        parsed reply, or with ``include_raw`` ``{"raw", "parsed", "parsing_error"}``."""
        kwargs.pop("strict", None)
        if method == "function_calling":
            return super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        if kwargs:
            raise ValueError(f"LlamaCppChatModel.with_structured_output got unsupported arguments {kwargs}")
        if method not in ("json_schema", "json_mode"):
            raise ValueError(f"unknown structured-output method {method!r}")
        is_pydantic = isinstance(schema, type) and issubclass(schema, BaseModel)
        if method == "json_mode":
            response_format: dict[str, Any] = {"type": "json_object"}
        else:
            json_schema = schema.model_json_schema() if is_pydantic else convert_to_json_schema(schema)  # type: ignore[union-attr]
            name = str(json_schema.get("title") or "reply")
            response_format = {"type": "json_schema", "json_schema": {"name": name, "schema": json_schema}}
        llm = self.bind(
            response_format=response_format,
            ls_structured_output_format={"kwargs": {"method": method}, "schema": schema},
        )
        parser: Runnable[Any, Any] = (
            PydanticOutputParser(pydantic_object=schema) if is_pydantic else JsonOutputParser()  # type: ignore[arg-type]
        )
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
        fallback = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | parsed.with_fallbacks([fallback], exception_key="parsing_error")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools: list[dict[str, Any]] = kwargs.pop("tools", None) or []
        tool_choice = kwargs.pop("tool_choice", None)
        max_tokens = int(kwargs.pop("max_tokens", self.max_tokens))
        temperature = float(kwargs.pop("temperature", self.temperature))
        seed = int(kwargs.pop("seed")) if "seed" in kwargs else self._call_seed()
        response_format = kwargs.pop("response_format", None)
        if kwargs:
            raise TypeError(f"LlamaCppChatModel got unsupported call arguments: {sorted(kwargs)}")
        if response_format is not None and tools:
            raise ValueError("LlamaCppChatModel: bind tools or a response_format, not both")
        loaded = self.loaded()
        options = _Options(
            max_tokens,
            temperature,
            seed,
            [*loaded.extra_stops, *(stop or self.stop_sequences or [])],
            response_grammar(response_format) if response_format is not None else None,
        )
        chat = to_chat_messages(messages, tools, tool_choice, native_tools=loaded.template_has_tools)
        done = self._complete(loaded, chat, tools if loaded.template_has_tools and tools else None, options)
        names = {t["function"]["name"] for t in tools}
        content, calls, invalid = (
            parse_tool_calls(done.text, names, call_key=f"{done.prompt}\x00{done.text}")
            if names
            else (done.text.strip(), [], [])
        )
        runs = [done]
        answered = answered_calls(messages) if calls and self.repeat_tool_calls == "answer" else set()
        if answered and all(tool_call_key(c) in answered for c in calls):
            # a small model that has its tool results tends to call the same tool again, forever
            closing = [*to_chat_messages(messages, native_tools=loaded.template_has_tools)]
            closing.append({"role": "system", "content": ANSWER_FROM_RESULTS})
            runs.append(self._complete(loaded, closing, None, options))
            content, calls, invalid = runs[-1].text.strip(), [], []
        n_in = sum(r.input_tokens for r in runs)
        n_out = sum(r.output_tokens for r in runs)
        usage = UsageMetadata(
            input_tokens=n_in,
            output_tokens=n_out,
            total_tokens=n_in + n_out,
            input_token_details={"cache_read": sum(r.cache_read for r in runs)},
        )
        message = AIMessage(
            content=content,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata=usage,
            response_metadata={
                "model_name": self.name_reported,
                "model_provider": "llamacpp",
                "finish_reason": runs[-1].finish_reason,
                "duration_s": round(sum(r.seconds for r in runs), 4),
                "completions": len(runs),
            },
        )
        llm_output = {"token_usage": dict(usage), "model_name": self.name_reported}
        return ChatResult(generations=[ChatGeneration(message=message)], llm_output=llm_output)

    def _complete(
        self,
        loaded: _Loaded,
        chat: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: _Options,
    ) -> _Completion:
        prompt = loaded.formatter(messages=chat, tools=tools).prompt
        with loaded.lock:
            llama = loaded.llama
            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) + options.max_tokens > self.n_ctx:
                raise ValueError(
                    f"prompt of {len(tokens)} tokens + max_tokens {options.max_tokens} exceeds n_ctx {self.n_ctx}"
                )
            reused = self._prepare_cache(loaded, tokens)
            started = time.perf_counter()
            result = llama.create_completion(
                tokens,
                max_tokens=options.max_tokens,
                temperature=options.temperature,
                top_k=1 if options.temperature == 0 else 40,
                top_p=self.top_p,
                seed=options.seed,
                stop=options.stops or None,
                grammar=options.grammar,
            )
            elapsed = time.perf_counter() - started
            if loaded.ram_cache is not None:
                loaded.ram_cache.save(llama)
        choice = result["choices"][0]
        return _Completion(
            prompt=prompt,
            text=str(choice.get("text") or ""),
            input_tokens=len(tokens),
            output_tokens=int(result.get("usage", {}).get("completion_tokens", 0)),
            cache_read=reused,
            finish_reason=choice.get("finish_reason"),
            seconds=elapsed,
        )

    def _prepare_cache(self, loaded: _Loaded, tokens: list[int]) -> int:
        """Set llama.cpp up for this call's cache mode; return how many prompt tokens it will reuse."""
        llama = loaded.llama
        if self.prefix_cache == "off":
            llama.reset()
            return 0
        reused = llama.longest_token_prefix(llama._input_ids.tolist(), tokens) if llama.n_tokens else 0
        if loaded.ram_cache is not None:
            key, cached = loaded.ram_cache.longest(tokens)
            if (
                key is not None
                and cached >= reused + MIN_GAIN_TOKENS
                and loaded.ram_cache.restore(llama, key)
            ):
                reused = cached
        # a prompt wholly cached is still re-fed one token to refresh the logits
        return min(reused, len(tokens) - 1) if reused else 0

    def _combine_llm_outputs(self, llm_outputs: list[dict[str, Any] | None], /) -> dict[str, Any]:
        totals: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for output in llm_outputs:
            for key in totals:
                totals[key] += int(((output or {}).get("token_usage") or {}).get(key, 0))
        return {"token_usage": totals, "model_name": self.name_reported}


def response_grammar(response_format: object) -> Any:
    """The ``llama_cpp.LlamaGrammar`` of a ``response_format`` (see the module docstring);
    ValueError naming what is wrong with one it cannot read."""
    if not isinstance(response_format, dict) or response_format.get("type") not in (
        "json_object",
        "json_schema",
    ):
        raise ValueError(
            "response_format must be {'type': 'json_object'[, 'schema': ...]} or "
            f"{{'type': 'json_schema', 'json_schema': {{'schema': ...}}}}, got {response_format!r}"
        )
    if response_format["type"] == "json_schema":
        inner = response_format.get("json_schema")
        schema = inner.get("schema") if isinstance(inner, dict) else None
        if not isinstance(schema, dict):
            raise ValueError("response_format json_schema needs {'json_schema': {'schema': {...}}}")
    else:
        schema = response_format.get("schema")
    if schema is None:
        return _json_grammar()
    if not isinstance(schema, dict):
        raise ValueError(f"response_format schema must be a JSON-schema object, got {type(schema).__name__}")
    return _schema_grammar(json.dumps(schema, sort_keys=False))


@lru_cache(maxsize=64)
def _schema_grammar(schema_json: str) -> Any:
    llama_cpp = import_llama_cpp()
    return llama_cpp.LlamaGrammar.from_json_schema(schema_json, verbose=False)


@lru_cache(maxsize=1)
def _json_grammar() -> Any:
    llama_cpp = import_llama_cpp()
    from llama_cpp.llama_grammar import JSON_GBNF

    return llama_cpp.LlamaGrammar.from_string(JSON_GBNF, verbose=False)

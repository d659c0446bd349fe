"""``python -m benchmarks.local_model.speed [--models NAMES] [--threads N] [--out FILE]``: how fast the
local models run here, and what prefix caching saves.

Per model (catalogue names, default ``qwen2.5-coder-0.5b,smollm2-135m``):

* ``prompt_tok_s``: prompt evaluation from an empty cache (a reference-agent READ prompt, ~400 tokens);
* ``gen_tok_s``: generation speed, from two greedy completions of the same prompt that differ only
  in ``max_tokens`` (the difference in time over the difference in tokens);
* ``prefix_cache``: the reference agent's call sequence for a few generated-world questions (decide
  / read / answer prompts, real evidence from BM25), run once as recorded and then a second time
  as a re-execution does, in each cache mode (``off``, ``context``, ``ram``): ``seconds``,
  ``cache_read_share`` (prompt tokens served from cache) and ``speedup_vs_off``.

Writes one JSON object (to ``--out`` or stdout). Run it alone: on 2 shared cores the figures are
only comparable between runs made under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from causal_middleware.integrations.llamacpp import LlamaCppChatModel, PrefixCache
from langchain_core.messages import BaseMessage

from benchmarks.reference_agent import prompts
from benchmarks.world.generator import generate_world
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.retrieval.langchain import IndexRetriever

DEFAULT_MODELS = ("qwen2.5-coder-0.5b", "smollm2-135m")
MODES: tuple[PrefixCache, ...] = ("off", "context", "ram")


def agent_calls(n_questions: int, seed: int = 0) -> list[list[BaseMessage]]:
    """The prompts one reference-agent pass sends: per question, decide -> read -> decide -> read -> answer
    (two hops), with BM25's top-5 passages as evidence and the gold hop answers as facts."""
    world = generate_world(max(n_questions, 4), seed=seed)
    retriever = IndexRetriever(index=BM25Index(world.passages), k=5)
    calls: list[list[BaseMessage]] = []
    for question in world.questions[:n_questions]:
        hops: list[dict[str, Any]] = []
        for used, gold in enumerate(question.hops[:2]):
            sub_query = gold.question
            for k, earlier in enumerate(hops, start=1):
                sub_query = sub_query.replace(f"#{k}", str(earlier["fact"]))
            calls.append(prompts.decide_messages(question.text, hops, used, 4))
            docs = [
                {"id": d.metadata.get("id"), "title": d.metadata.get("title"), "text": d.page_content}
                for d in retriever.invoke(sub_query)
            ]
            calls.append(prompts.read_messages(question.text, hops, sub_query, docs))
            hops.append({"sub_query": sub_query, "fact": gold.answer})
        calls.append(prompts.answer_messages(question.text, hops))
    return calls


COUNTING = ", ".join(str(n) for n in range(1, 21)) + ","


def _raw_generation(model: LlamaCppChatModel, max_tokens: int) -> tuple[float, int]:
    """(seconds, generated tokens) of a plain completion that continues a count (no chat template:
    every model keeps counting, whereas small chat models stop early when asked to count)."""
    loaded = model.model_copy(update={"prefix_cache": "off"}).loaded()
    with loaded.lock:
        loaded.llama.reset()
        started = time.perf_counter()
        result = loaded.llama.create_completion(COUNTING, max_tokens=max_tokens, temperature=0.0, top_k=1)
        return time.perf_counter() - started, int(result["usage"]["completion_tokens"])


def throughput(model: LlamaCppChatModel, read_prompt: list[BaseMessage]) -> dict[str, float]:
    """Prompt tok/s on a READ prompt (one generated token, empty cache); generation tok/s from two
    completions of one prompt that differ only in length (the prompt's cost cancels out)."""
    cold = model.model_copy(update={"prefix_cache": "off"})
    started = time.perf_counter()
    usage = cold.invoke(read_prompt, max_tokens=1).usage_metadata or {}
    t_prompt, n_prompt = time.perf_counter() - started, int(usage.get("input_tokens", 0))
    t_short, n_short = _raw_generation(model, 8)
    t_long, n_long = _raw_generation(model, 72)
    gen = (n_long - n_short) / (t_long - t_short) if n_long > n_short and t_long > t_short else float("nan")
    return {
        "prompt_tokens": n_prompt,
        "prompt_tok_s": round(n_prompt / t_prompt, 1),
        "gen_tok_s": round(gen, 1),
        "gen_tokens_measured": n_long - n_short,
    }


def cache_modes(model: LlamaCppChatModel, calls: list[list[BaseMessage]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        variant = model.model_copy(update={"prefix_cache": mode})
        variant.loaded().llama.reset()  # every mode starts from an empty context
        cache = variant.loaded().ram_cache
        if cache is not None:
            cache.clear()
        record: dict[str, float] = {}
        for label in ("first_pass", "re_execution"):
            started = time.perf_counter()
            read = total = 0
            for messages in calls:
                usage = variant.invoke(messages).usage_metadata or {}
                total += int(usage.get("input_tokens", 0))
                read += int((usage.get("input_token_details") or {}).get("cache_read", 0))
            record[f"{label}_s"] = round(time.perf_counter() - started, 2)
            record[f"{label}_cache_read_share"] = round(read / total, 3) if total else 0.0
        out[mode] = record
    base = out["off"]
    for record in out.values():
        for label in ("first_pass", "re_execution"):
            record[f"{label}_speedup_vs_off"] = round(base[f"{label}_s"] / record[f"{label}_s"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.local_model.speed", description=__doc__)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--skip-cache", action="store_true", help="throughput only")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    calls = agent_calls(max(args.questions, 1))
    result: dict[str, Any] = {
        "setup": {"threads": args.threads, "calls_per_pass": len(calls), "cpu_count": os.cpu_count()},
        "models": {},
    }
    for name in (n.strip() for n in args.models.split(",") if n.strip()):
        model = LlamaCppChatModel.from_catalogue(name, n_threads=args.threads, max_tokens=32)
        started = time.perf_counter()
        model.loaded()
        entry: dict[str, Any] = {"load_s": round(time.perf_counter() - started, 2)}
        entry.update(throughput(model, calls[1]))
        if not args.skip_cache:
            entry["prefix_cache"] = cache_modes(model, calls)
        result["models"][name] = entry
        print(json.dumps({name: entry}), flush=True, file=sys.stderr)
    text = json.dumps(result, indent=2)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

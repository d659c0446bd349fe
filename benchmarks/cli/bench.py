"""``causal-mw bench``: the benchmarks, one subcommand each, and ``bench all``.

``instrument``, ``retrieval``, ``agent``, ``faults``, ``fp`` and ``all`` are defined here; ``replay``,
``repair`` and ``context`` come from the modules in :data:`BENCH_MODULES` (each exposes
``register_bench(subparsers)``). Every benchmark prints a human summary, writes its JSON with
``--out`` and prints the JSON instead with ``--json``.

This module is a composition root: it builds the live reference agent from
``causal_middleware.integrations`` and hands it to the core benchmarks as factories.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.cli.executor import add_executor_args, check_executor_args
from causal_middleware.cli._common import add_json_arg, print_json

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from causal_middleware.counterfactual.proposers import LLMProposer
    from causal_middleware.repair.validate import LLMValidator
    from causal_middleware.tasks.model import Dataset

# Modules exposing register_bench(bench_subparsers); missing ones are skipped.
BENCH_MODULES = (
    "benchmarks.cli.replay_bench",
    "benchmarks.cli.repair_bench",
    "benchmarks.context.bench",
)
DATASETS = ("world", "musique", "hotpotqa")


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="run the benchmarks",
        description="Run one benchmark, or all of them with 'bench all --out DIR'.",
    )
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCHMARK")
    sub.required = True
    order: tuple[str | Callable[[Any], None], ...] = (
        _register_instrument,
        _register_retrieval,
        _register_agent,
        "benchmarks.cli.replay_bench",
        _register_faults,
        _register_fp,
        "benchmarks.cli.repair_bench",
        "benchmarks.context.bench",
        _register_suites,
        _register_all,
    )
    for item in order:
        if callable(item):
            item(sub)
        elif importlib.util.find_spec(item) is not None:
            importlib.import_module(item).register_bench(sub)


# --- shared helpers -----------------------------------------------------------------------------


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _write_json(result: dict[str, Any], out: str | None, default_name: str) -> Path | None:
    """Write ``result`` to ``out`` (a file, or a directory: ``out/<default_name>``)."""
    if not out:
        return None
    path = Path(out)
    if path.is_dir() or out.endswith(("/", "\\")) or not path.suffix:
        path = path / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path


def _finish(args: argparse.Namespace, result: dict[str, Any], summary: str, name: str) -> int:
    path = _write_json(result, args.out, f"{name}.json")
    if args.json:
        print_json(result)
    else:
        print(summary)
        if path is not None:
            print(f"\nresults written to {path}")
    return 0


def _positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


def _out_arg(p: argparse.ArgumentParser, default_name: str) -> None:
    p.add_argument(
        "--out", metavar="FILE", help=f"write the results JSON here (a directory: DIR/{default_name})"
    )


# --- runners: params dict -> JSON-ready result (shared by the subcommands and 'bench all') -------


def run_instrument(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.suites.overhead_bench import run_overhead_bench

    return run_overhead_bench(runs=p.get("runs", 200), warmup=p.get("warmup", 10))


def run_retrieval(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.suites.retrieval import run_retrieval_bench

    return run_retrieval_bench(
        p.get("sizes", [10_000, 100_000]),
        p.get("retrievers", ["bm25", "bm25s", "dense"]),
        p.get("n_queries", 50),
        k=p.get("k", 5),
        seed=p.get("seed", 0),
        progress=p.get("progress"),
    )


def reference_agent_factory(
    *, k: int = 5, budget: int = 4, seed: int = 0, model: BaseChatModel | None = None, gold_plan: bool = False
) -> Callable[[Any, str], Any]:
    """``make_agent(dataset, retriever)`` for the agent benchmark: the reference agent (offline
    model unless ``model`` is given; ``gold_plan``: the question's gold decomposition as its plan)."""
    from benchmarks.reference_agent import build_world_agent, run_question
    from benchmarks.reference_agent import gold_plan as plan_for
    from benchmarks.suites.agent import AgentAnswer

    def make_agent(dataset: Any, retriever: str) -> Callable[[Any], AgentAnswer]:
        graph = build_world_agent(dataset, retriever=retriever, k=k, budget=budget, seed=seed, model=model)

        def answer(question: Any) -> AgentAnswer:
            plan = plan_for(question) if gold_plan and question.hops else None
            run = run_question(graph, question, plan=plan)
            return AgentAnswer(run.answer, len(run.queries))

        return answer

    return make_agent


def run_agent(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.suites.agent import run_agent_accuracy_bench
    from benchmarks.world.generator import generate_world

    seed, k, budget = p.get("seed", 0), p.get("k", 5), p.get("budget", 4)
    dataset_name, model_spec = p.get("dataset", "world"), p.get("model") or "offline"
    plan = p.get("plan", "model")
    _check_plan(plan, dataset_name)
    if dataset_name == "world":
        dataset = generate_world(p.get("n", 60), seed=seed)
    else:
        from benchmarks.cli.inject import load_dataset

        dataset = load_dataset(dataset_name, p.get("n", 60), seed=seed, hops=None)
    model = agent_model(model_spec, seed=seed)
    result = run_agent_accuracy_bench(
        reference_agent_factory(k=k, budget=budget, seed=seed, model=model, gold_plan=plan == "gold"),
        dataset,
        retrievers=p.get("retrievers", ["bm25", "dense"]),
        seed=seed,
        progress=p.get("progress"),
    )
    result["agent"] = {
        "name": "reference_agent",
        "model": model_spec,
        "mode": agent_mode(model_spec, dataset_name, plan),
        "plan": plan,
        "k": k,
        "budget": budget,
    }
    return result


AGENT_MAX_TOKENS = 64


def _check_plan(plan: str, dataset: str) -> None:
    if plan == "gold" and dataset == "hotpotqa":
        raise ValueError("--plan gold: HotpotQA's annotated steps are not questions; use --plan model")


AGENT_RECORD = "fp_agent"


def _claim_store(store: Any, path: str, agent: dict[str, str]) -> None:
    """A resumable store holds the runs of one agent (model and plan): base runs, units and
    diagnoses are keyed by question, so another agent must not resume them."""
    kept = store.get_records(AGENT_RECORD)
    if not kept:
        store.put_record(AGENT_RECORD, "store", agent)
        return
    earlier = {k: kept[-1].get(k) for k in agent}
    if earlier != agent:
        raise ValueError(
            f"--store {path} holds runs of --model {earlier['model']} --plan {earlier['plan']}; "
            f"give --model {agent['model']} --plan {agent['plan']} a store of its own"
        )


def expected_time(
    model: BaseChatModel,
    dataset: Dataset,
    depths: list[int],
    faults: str,
    site: str = "trace",
    *,
    gold_plan: bool = False,
) -> str:
    """A line estimating the injection's model time, from one timed (warm) call of the agent's first prompt:
    a base run takes about two calls a hop plus two (one a hop plus one with the gold plan, whose
    steps need no model); a fork re-runs the suffix from its depth."""
    from benchmarks.reference_agent import prompts
    from causal_middleware.faults.model import FAULT_SETS, PERSISTABLE_FAMILIES

    questions = dataset.questions
    messages = prompts.decide_messages(questions[0].text, [], 0, 4)
    model.invoke(messages)  # the first call also loads the model
    started = time.perf_counter()
    model.invoke(prompts.decide_messages(questions[-1].text, [], 0, 4))
    per_call = time.perf_counter() - started
    per_hop, extra = (1, 1) if gold_plan else (2, 2)
    base_calls = sum(per_hop * q.n_hops + extra for q in questions)
    chosen = FAULT_SETS.get(faults, ())
    families = len([f for f in chosen if f in PERSISTABLE_FAMILIES] if site == "corpus" else chosen)
    fork_calls = sum(
        families * (per_hop * (q.n_hops - d + 1) + extra) for q in questions for d in depths if d <= q.n_hops
    )
    minutes = (base_calls + fork_calls) * per_call / 60
    return (
        f"model {type(model).__name__}: {per_call:.1f} s for one agent call; the injection needs about "
        f"{base_calls + fork_calls} calls (~{minutes:.0f} min, less what fails or is ineligible); "
        "diagnosis adds its re-executions"
    )


def agent_model(spec: str | None, *, seed: int = 0, temperature: float = 0.0) -> BaseChatModel | None:
    """The chat model driving the reference agent: None for ``offline`` (the agent builds its own,
    simulate mode off the world), else the model ``spec`` names (``local``, ``local:NAME``,
    ``gguf:PATH``, ``anthropic[:MODEL]`` or ``package.module:attr``). ``temperature`` > 0 samples
    it, each call with a fresh seed where the model takes one per call (a local model's
    ``seed_per_call``), so a re-run of the same step is a fresh draw."""
    if not spec or spec == "offline":
        return None
    from causal_middleware.cli.live_agent import load_chat_model

    model = load_chat_model(spec, "model")
    fields = type(model).model_fields
    if temperature and "temperature" not in fields:
        raise ValueError(
            f"--temperature: the model {spec!r} ({type(model).__name__}) has no temperature to set"
        )
    # every reply the agent asks for is one short line; a cap keeps a rambling small model cheap
    wanted: tuple[tuple[str, Any], ...] = (("seed", seed), ("max_tokens", AGENT_MAX_TOKENS))
    if temperature:
        wanted += (("temperature", temperature), ("seed_per_call", True))
    update = {k: v for k, v in wanted if k in fields}
    return model.model_copy(update=update) if update else model


def agent_mode(model_spec: str | None, dataset: str, plan: str) -> str:
    """How the answers came about: ``offline`` (the offline model's reader on the generated world),
    ``simulated`` (the offline model on a real dataset follows its gold decomposition and finds
    each gold hop answer in the evidence) or ``live`` (a real model plans and reads), with
    ``_gold_plan`` appended when the plan was the gold decomposition."""
    if not model_spec or model_spec == "offline":
        base = "offline" if dataset == "world" else "simulated"
    else:
        base = "live"
    return f"{base}_gold_plan" if plan == "gold" else base


def run_replay(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.suites.replay_bench import reference_replay_bench

    return reference_replay_bench(
        n_questions=p.get("n_questions", 5),
        hops=p.get("hops", 3),
        seed=p.get("seed", 0),
        modes=tuple(p.get("modes", ["regenerate", "frozen", "replay"])),
        model_latency_s=p.get("model_latency_s", 0.0),
    )


def sweep_env_factory(
    *,
    retriever: str = "bm25",
    k: int = 5,
    budget: int = 4,
    seed: int = 0,
    workers: int = 2,
    checkpoints: str | None = None,
    temperature: float = 0.0,
    model: Any = None,
    gold_plan: bool = False,
) -> Callable[[Any, Any], Any]:
    """``build_env(dataset, store)``: the instrumented reference agent as a sweep environment
    (``temperature`` > 0: the offline model samples, seeded with ``seed``; ``model``: any chat model
    instead; ``gold_plan``: the gold decomposition as the agent's plan)."""
    from benchmarks.models.offline import OfflineChatModel
    from benchmarks.reference_agent.adapter import reference_sweep_environment

    def build(dataset: Any, store: Any) -> Any:
        index: Any = retriever
        if retriever == "dense":  # forks repeat the same sub-queries: encode each one once
            from benchmarks.suites.fp import MemoizedEncoder
            from causal_middleware.retrieval.dense import DenseIndex, default_encoder

            index = DenseIndex(dataset.passages, encoder=MemoizedEncoder(default_encoder()))
        return reference_sweep_environment(
            dataset,
            store=store,
            retriever=index,
            k=k,
            budget=budget,
            seed=seed,
            checkpoints=checkpoints,
            max_concurrency=workers,
            model=model
            if model is not None
            else (OfflineChatModel(seed=seed, temperature=temperature) if temperature else None),
            gold_plan=gold_plan,
        )

    return build


def run_faults(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.suites.faults import run_fault_bench

    seed, workers = p.get("seed", 0), p.get("workers", 2)
    return run_fault_bench(
        sweep_env_factory(retriever=p.get("retriever", "bm25"), seed=seed, workers=workers),
        n=p.get("n", 80),
        hops=p.get("hops", 3),
        seed=seed,
        depths=p.get("depths", [1, 2, 3]),
        conditions=p.get("conditions", ["structural", "content", "content_persistent"]),
        workers=workers,
        progress=p.get("progress", False),
    )


def run_fp(p: dict[str, Any]) -> dict[str, Any]:
    """The attribution benchmark; ``p`` keys mirror ``bench fp``'s options (``store``: a SQLite path)."""
    from benchmarks.cli.executor import ReferenceEnvSpec, close_executor, make_executor, resolve_executor
    from benchmarks.cli.inject import checkpoint_path, load_dataset
    from benchmarks.suites.fp import run_fp_bench

    seed, workers = p.get("seed", 0), p.get("workers", 2)
    dataset_name = p.get("dataset", "world")
    hops = p.get("hops", 3) if dataset_name == "world" else None
    requested = p.get("executor", "local")
    model_spec, plan = p.get("model") or "offline", p.get("plan", "model")
    _check_plan(plan, dataset_name)
    local_only = bool(
        p.get("store") or p.get("judge") or model_spec != "offline" or plan != "model" or p.get("natural")
    )
    executor_name = resolve_executor(
        requested, workers=workers, n_items=p.get("n", 80), local_only=local_only
    )
    if executor_name != "local" and local_only:
        raise ValueError(
            f"--executor {executor_name} runs without --store, --judge, --model, --plan gold and --natural "
            "(they need --executor local)"
        )
    dataset = load_dataset(dataset_name, p.get("n", 80), seed=seed, hops=hops)
    spec = ReferenceEnvSpec(
        dataset=dataset_name,
        n=p.get("n", 80),
        seed=seed,
        hops=hops,
        retriever=p.get("retriever", "bm25"),
        k=p.get("k", 5),
        budget=p.get("budget", 4),
        workers=workers,
    )
    model = agent_model(model_spec, seed=seed)
    if model is not None and p.get("progress", False):
        depths, faults = p.get("depths", [1, 2, 3]), p.get("faults", "structural")
        _say(expected_time(model, dataset, depths, faults, p.get("site", "trace"), gold_plan=plan == "gold"))
    executor = make_executor(executor_name, workers=workers, address=p.get("address"))
    store: Any = None
    checkpoints = None
    if p.get("store"):
        from causal_middleware.store.sqlite import SqliteSpanStore

        store = SqliteSpanStore(p["store"])
        checkpoints = checkpoint_path(p["store"], p.get("checkpoints"))
        try:
            _claim_store(store, p["store"], {"model": model_spec, "plan": plan})
        except ValueError:
            store.close()
            raise
    judge_spec = p.get("judge")
    try:
        return run_fp_bench(
            sweep_env_factory(
                retriever=p.get("retriever", "bm25"),
                k=p.get("k", 5),
                budget=p.get("budget", 4),
                seed=seed,
                workers=workers,
                checkpoints=checkpoints,
                model=model,
                gold_plan=plan == "gold",
            ),
            dataset,
            store=store,
            depths=p.get("depths", [1, 2, 3]),
            faults=p.get("faults", "structural"),
            site=p.get("site", "trace"),
            natural=p.get("natural", False),
            diagnosers=p.get("diagnosers"),
            chat_model=load_judge(judge_spec) if judge_spec else None,
            judge=judge_spec,
            seed=seed,
            workers=workers,
            bootstrap_B=p.get("bootstrap_B", 1000),
            rediagnose=p.get("rediagnose", False),
            progress=p.get("progress", False),
            config={
                "hops": hops,
                "k": p.get("k", 5),
                "budget": p.get("budget", 4),
                "store": p.get("store"),
                "executor": executor_name,
                "executor_requested": requested,
                "model": model_spec,
                "plan": plan,
                "mode": agent_mode(model_spec, dataset_name, plan),
            },
            executor=executor,
            env_spec=spec,
        )
    finally:
        close_executor(executor)
        if store is not None:
            store.close()


def load_judge(spec: str) -> Any:
    """The judge chat model: ``module:attr`` (an instance, class or factory), or a Claude model name."""
    from causal_middleware.integrations.models import is_model_spec

    if is_model_spec(spec) or ":" in spec:
        from causal_middleware.cli.live_agent import load_chat_model

        return load_chat_model(spec, "judge")
    import os

    from causal_middleware.integrations.anthropic import API_KEY_ENV, AnthropicChatModel

    if not os.environ.get(API_KEY_ENV):
        raise ValueError(
            f"--judge {spec!r} names a Claude model, which needs ${API_KEY_ENV}; "
            "or pass a chat model as package.module:attr"
        )
    return AnthropicChatModel(model=spec)


def run_repair(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.cli.executor import ReferenceEnvSpec, close_executor, make_executor, resolve_executor
    from benchmarks.models.offline import OfflineChatModel
    from benchmarks.reference_agent.adapter import reference_sweep_environment
    from benchmarks.suites.repair import DEFAULT_FAMILIES, run_repair_bench
    from benchmarks.world.generator import generate_world
    from causal_middleware.repair.service import RepairConfig
    from causal_middleware.store.memory import InMemorySpanStore
    from causal_middleware.store.sqlite import SqliteSpanStore

    seed = p.get("seed", 0)
    temperature = p.get("temperature", 0.0)
    requested = p.get("executor", "local")
    model_spec, plan = p.get("model") or "offline", p.get("plan", "model")
    proposer_spec, validator_spec = p.get("proposer") or "offline", p.get("validator")
    local_only = bool(
        temperature
        or model_spec != "offline"
        or plan != "model"
        or proposer_spec != "offline"
        or validator_spec
        or p.get("store")
    )
    # the remote path runs the sweep and the repairs in two workers (ReferenceEnvSpec below)
    executor_name = resolve_executor(
        requested, workers=2, n_items=p.get("inject_questions", 20), local_only=local_only
    )
    if executor_name != "local" and (temperature or model_spec != "offline" or plan != "model"):
        # the sampling model's draws depend on the order of every call in the process
        raise ValueError(f"--executor {executor_name} runs the offline model at --temperature 0 only")
    if executor_name != "local" and (proposer_spec != "offline" or validator_spec):
        raise ValueError(f"--executor {executor_name} repairs with the offline proposer and no --validator")
    if executor_name != "local" and p.get("store"):
        raise ValueError(f"--store keeps the runs of --executor local only, not {executor_name}'s workers")
    proposer, validator = repair_models(proposer_spec, validator_spec, seed=seed)
    model = agent_model(model_spec, seed=seed, temperature=temperature)
    hops = p.get("hops")
    # generate_world(n, seed, hop_mix) is load_dataset("world", n, seed, hops)
    spec = ReferenceEnvSpec(dataset="world", n=p.get("n", 100), seed=seed, hops=hops, workers=4)
    with contextlib.ExitStack() as closing:  # closed in reverse: executor, environment, store
        store = SqliteSpanStore(p["store"]) if p.get("store") else InMemorySpanStore()
        closing.callback(store.close)
        env = reference_sweep_environment(
            generate_world(p.get("n", 100), seed=seed, hop_mix={hops: 1.0} if hops else None),
            store=store,
            seed=seed,
            model=model
            if model is not None
            else (OfflineChatModel(seed=seed, temperature=temperature) if temperature else None),
            gold_plan=plan == "gold",
        )
        closing.callback(env.close)
        executor = make_executor(executor_name, address=p.get("address"))
        closing.callback(close_executor, executor)
        results = run_repair_bench(
            env,
            inject_questions=p.get("inject_questions", 20),
            families=tuple(p.get("families", DEFAULT_FAMILIES)),
            depths=tuple(p.get("depths", [1, 2])),
            max_injected=p.get("max_injected", 40),
            config=RepairConfig(k=p.get("k", 3), max_steps=p.get("max_steps", 1)),
            seed=seed,
            progress=p.get("progress"),
            executor=executor,
            env_spec=spec,
            proposer=proposer,
            llm_validator=validator,
            holdout_runs=p.get("holdout_runs", 0),
            control_runs=p.get("control_runs", 0),
        )
    results["config"]["hops"] = hops
    results["config"]["temperature"] = temperature
    results["config"]["store"] = p.get("store")
    results["config"]["executor"] = executor_name
    results["config"]["executor_requested"] = requested
    results["config"]["model"] = model_spec
    results["config"]["plan"] = plan
    results["config"]["mode"] = agent_mode(model_spec, "world", plan)
    results["config"]["proposer_model"] = proposer_spec
    results["config"]["validator"] = validator_spec
    return results


PROPOSER_TEMPERATURE = 0.7  # CausalFlow samples its proposals
PROPOSER_MAX_TOKENS = 384  # k JSON objects of a step's output
VALIDATOR_MAX_TOKENS = 128  # one {"agree", "confidence", "reason"} object per role


def repair_models(
    proposer_spec: str, validator_spec: str | None, *, seed: int = 0
) -> tuple[LLMProposer | None, LLMValidator | None]:
    """The LLM proposer (None for ``offline``: the bench's deterministic proposer) and the
    proposer / critic / meta-critic validator (None without a spec) that ``bench repair`` uses."""
    from causal_middleware.cli.live_agent import load_chat_model
    from causal_middleware.counterfactual.proposers import LLMProposer
    from causal_middleware.repair.validate import LLMValidator

    def model(spec: str, what: str, max_tokens: int) -> BaseChatModel:
        chat = load_chat_model(spec, what)
        fields = type(chat).model_fields
        update = {k: v for k, v in (("seed", seed), ("max_tokens", max_tokens)) if k in fields}
        return chat.model_copy(update=update) if update else chat

    proposer = (
        None
        if proposer_spec == "offline"
        else LLMProposer(
            model(proposer_spec, "proposer", PROPOSER_MAX_TOKENS), temperature=PROPOSER_TEMPERATURE
        )
    )
    validator = (
        LLMValidator(model(validator_spec, "validator", VALIDATOR_MAX_TOKENS)) if validator_spec else None
    )
    return proposer, validator


def run_context(p: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.context.bench import run_context_bench

    return run_context_bench(
        p.get("domains"),
        seed=p.get("seed", 0),
        n_dissatisfied=p.get("n_dissatisfied", 60),
        n_control=p.get("n_control", 15),
    )


# --- summaries (markdown) -----------------------------------------------------------------------


def summarize_instrument(r: dict[str, Any]) -> str:
    lines = [
        f"{r['runs']} runs after {r['warmup']} warm-up of {r['graph']}; spans per run {r['spans_per_run']}.",
        "",
        "| variant | median ms | p90 ms | ratio to none | overhead ms |",
        "|---|---|---|---|---|",
    ]
    for name, v in r["variants"].items():
        lines.append(
            f"| {name} | {v['median_ms']} | {v['p90_ms']} | {v['ratio_to_none']} | {v['overhead_ms']} |"
        )
    lines.append(
        f"\nOur overhead / OpenInference's: {r['ours_overhead_vs_openinference']} (target met: {r['target_met']})."
    )
    return "\n".join(lines)


def summarize_retrieval(r: dict[str, Any]) -> str:
    from benchmarks.suites.retrieval import format_table

    return f"Corpus: {r['corpus']}; {r['n_queries']} queries, k={r['k']}.\n\n```\n{format_table(r)}\n```"


def summarize_agent(r: dict[str, Any]) -> str:
    from benchmarks.suites.agent import format_agent_table

    d = r["dataset"]
    return (
        f"{d['name']}: {d['n_questions']} questions (hop counts {d['hop_counts']}), {d['n_passages']} passages.\n\n"
        + format_agent_table(r)
    )


def summarize_replay(r: dict[str, Any]) -> str:
    from benchmarks.suites.replay import format_replay_table

    return format_replay_table(r)


def summarize_faults(r: dict[str, Any]) -> str:
    w = r["world"]
    parts = [f"{w['name']}: {w['n_questions']} {w['hops']}-hop questions, depths {r['depths']}."]
    for name, cond in r["conditions"].items():
        parts += ["", f"### {name}", "", cond["markdown"].rstrip()]
    parts += ["", f"Paper vs ours: `{json.dumps(r['comparison'], default=str)}`"]
    return "\n".join(parts)


def summarize_fp(r: dict[str, Any]) -> str:
    from benchmarks.suites.fp import fp_summary_markdown

    return fp_summary_markdown(r)


def summarize_repair(r: dict[str, Any]) -> str:
    from benchmarks.suites.repair import format_repair_table

    return format_repair_table(r)


def summarize_context(r: dict[str, Any]) -> str:
    from benchmarks.context.bench import markdown_table

    return markdown_table(r)


# --- subcommands --------------------------------------------------------------------------------


def _register_instrument(sub: Any) -> None:
    p = sub.add_parser(
        "instrument",
        help="per-run instrumentation overhead: ours vs none vs OpenInference",
        description="Median per-run wall time of a 3-hop graph uninstrumented, with instrument() (in-memory "
        "exporter; and with the SQLite store), and with OpenInference's LangChainInstrumentor.",
    )
    p.add_argument("--runs", type=int, default=200, help="timed runs per variant (default 200)")
    p.add_argument("--warmup", type=int, default=10, help="untimed warm-up runs (default 10)")
    _out_arg(p, "instrument.json")
    add_json_arg(p)
    p.set_defaults(func=_cmd_instrument)


def _cmd_instrument(args: argparse.Namespace) -> int:
    _positive(runs=args.runs)
    if args.warmup < 0:
        raise ValueError(f"--warmup must be >= 0, got {args.warmup}")
    result = run_instrument({"runs": args.runs, "warmup": args.warmup})
    return _finish(args, result, summarize_instrument(result), "instrument")


def _register_retrieval(sub: Any) -> None:
    from benchmarks.suites.retrieval import RETRIEVERS

    p = sub.add_parser(
        "retrieval",
        help="index build time, query latency and recall@k at corpus sizes",
        description="BM25 (rank-bm25 and bm25s) and dense retrieval over the generated world padded to each "
        "size; dense rows above 10k passages are estimated (the row says so).",
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="corpus sizes")
    p.add_argument("--retrievers", nargs="+", choices=RETRIEVERS, default=list(RETRIEVERS))
    p.add_argument("--queries", type=int, default=50, help="queries per size (default 50)")
    p.add_argument("-k", type=int, default=5, help="passages per query (default 5)")
    _out_arg(p, "retrieval.json")
    add_json_arg(p)
    p.set_defaults(func=_cmd_retrieval)


def _cmd_retrieval(args: argparse.Namespace) -> int:
    _positive(queries=args.queries, k=args.k)
    result = run_retrieval(
        {
            "sizes": args.sizes,
            "retrievers": args.retrievers,
            "n_queries": args.queries,
            "k": args.k,
            "progress": None if args.json else _say,
        }
    )
    return _finish(args, result, summarize_retrieval(result), "retrieval")


def _model_args(p: Any) -> None:
    p.add_argument(
        "--model",
        metavar="SPEC",
        default="offline",
        help="the chat model driving the agent: offline (default; simulate mode on MuSiQue/HotpotQA), "
        "local, local:NAME, gguf:PATH, anthropic[:MODEL] or package.module:attr; any other than offline "
        "runs live: the model plans and reads the real passages (replies capped at 64 tokens)",
    )
    p.add_argument(
        "--plan",
        choices=("model", "gold"),
        default="model",
        help="who plans the searches: the model (default) or the question's gold decomposition, "
        "filled in step by step (plan-and-execute; the model still reads every hop and answers)",
    )


def _register_agent(sub: Any) -> None:
    p = sub.add_parser(
        "agent",
        help="reference agent accuracy on the default world, by hop count and retriever",
        description="Run every question of the default generated world (or MuSiQue / HotpotQA) on the "
        "reference agent (offline model, or --model) with each retriever; accuracy by hop count with "
        "bootstrap 95%% intervals.",
    )
    p.add_argument("--dataset", choices=DATASETS, default="world", help="question source (default world)")
    p.add_argument("--n", type=int, default=60, help="questions (default 60)")
    p.add_argument("--seed", type=int, default=0, help="world and model seed (default 0)")
    _model_args(p)
    p.add_argument(
        "--retrievers", nargs="+", choices=("bm25", "dense"), default=["bm25", "dense"], help="(default both)"
    )
    p.add_argument("--k", type=int, default=5, help="passages per retrieval (default 5)")
    p.add_argument("--budget", type=int, default=4, help="searches per question (default 4)")
    _out_arg(p, "agent.json")
    add_json_arg(p)
    p.set_defaults(func=_cmd_agent)


def _cmd_agent(args: argparse.Namespace) -> int:
    _positive(n=args.n, k=args.k, budget=args.budget)
    result = run_agent(
        {
            "dataset": args.dataset,
            "model": args.model,
            "plan": args.plan,
            "n": args.n,
            "seed": args.seed,
            "retrievers": args.retrievers,
            "k": args.k,
            "budget": args.budget,
            "progress": None if args.json else _say,
        }
    )
    return _finish(args, result, summarize_agent(result), "agent")


def _register_faults(sub: Any) -> None:
    from benchmarks.suites.faults import CONDITIONS

    p = sub.add_parser(
        "faults",
        help="fault injection: recovery by depth and family, content outcomes (AgenticRAG-FP)",
        description="Structural, content and persistent-content sweeps on N generated questions of HOPS hops.",
    )
    p.add_argument("--n", type=int, default=80, help="questions (default 80)")
    p.add_argument("--hops", type=int, default=3, help="hops per question (default 3)")
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3], metavar="H", help="hops to inject at")
    p.add_argument("--conditions", nargs="+", choices=list(CONDITIONS), default=list(CONDITIONS))
    p.add_argument("--retriever", choices=("bm25", "dense"), default="bm25")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2, help="questions swept in parallel (default 2)")
    _out_arg(p, "faults.json")
    add_json_arg(p)
    p.set_defaults(func=_cmd_faults)


def _cmd_faults(args: argparse.Namespace) -> int:
    _positive(n=args.n, hops=args.hops, workers=args.workers)
    result = run_faults(
        {
            "n": args.n,
            "hops": args.hops,
            "depths": args.depths,
            "conditions": args.conditions,
            "retriever": args.retriever,
            "seed": args.seed,
            "workers": args.workers,
            "progress": True,
        }
    )
    return _finish(args, result, summarize_faults(result), "faults")


def _register_fp(sub: Any) -> None:
    from causal_middleware.faults.model import FAULT_SETS

    p = sub.add_parser(
        "fp",
        help="attribution benchmark (AgenticRAG-FP): inject faults, score every diagnoser by depth",
        description="Inject faults into the reference agent's runs (resumable with --store), diagnose every "
        "failed trace with each diagnoser (blinded), and write results.json, the markdown report and "
        "accuracy_by_depth.png.",
    )
    p.add_argument("--dataset", choices=DATASETS, default="world", help="question source (default world)")
    p.add_argument("--n", type=int, default=80, help="questions (default 80)")
    p.add_argument("--hops", type=int, default=3, help="world only: hops per question (default 3)")
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3], metavar="H", help="hops to inject at")
    p.add_argument("--faults", choices=sorted(FAULT_SETS), default="structural", help="(default structural)")
    p.add_argument("--retriever", choices=("bm25", "dense"), default="bm25", help="(default bm25)")
    p.add_argument(
        "--diagnosers",
        nargs="+",
        metavar="SPEC",
        help="diagnosers to score: names, or name:option=value (default: every registered one plus "
        "path_aware:audit=false; LLM ones report run=false without --judge)",
    )
    p.add_argument(
        "--judge",
        metavar="MODEL",
        help="chat model for the LLM diagnosers: a Claude model name (needs $ANTHROPIC_API_KEY) or "
        "package.module:attr",
    )
    p.add_argument(
        "--site",
        choices=("trace", "corpus"),
        default="trace",
        help="where faults go: into the hop's recorded evidence (trace, default) or into a private copy "
        "of the corpus, the hop's retrieval re-run live (corpus: the families of --faults that write a "
        "passage, i.e. content corruption, false premise and stale evidence)",
    )
    _model_args(p)
    p.add_argument(
        "--natural",
        action="store_true",
        help="also certify the base runs that failed with no fault (the step whose clean replacement "
        "alone flips the run) and score every diagnoser on them",
    )
    p.add_argument("--seed", type=int, default=0, help="world, model, fault and bootstrap seed (default 0)")
    p.add_argument("--workers", type=int, default=2, help="questions injected in parallel (default 2)")
    add_executor_args(p, default="auto")
    p.add_argument("--k", type=int, default=5, help="passages per retrieval (default 5)")
    p.add_argument("--budget", type=int, default=4, help="searches per question (default 4)")
    p.add_argument(
        "--bootstrap", type=int, default=1000, metavar="B", help="bootstrap resamples (default 1000)"
    )
    p.add_argument(
        "--store",
        metavar="PATH",
        help="SQLite span store to keep runs, faults and diagnoses in; an existing one resumes "
        "(default: in memory)",
    )
    p.add_argument(
        "--checkpoints",
        metavar="PATH",
        help="LangGraph checkpoints with --store (default <store>.checkpoints.db)",
    )
    p.add_argument(
        "--rediagnose", action="store_true", help="with --store: ignore diagnoses kept by an earlier run"
    )
    p.add_argument(
        "--out",
        metavar="PATH",
        help="results.json to write (report and PNG beside it), or a directory for results.json, "
        "report.md and accuracy_by_depth.png",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_json_arg(p)
    p.set_defaults(func=_cmd_fp)


def _cmd_fp(args: argparse.Namespace) -> int:
    _positive(
        n=args.n, hops=args.hops, workers=args.workers, k=args.k, budget=args.budget, bootstrap=args.bootstrap
    )
    if args.dataset != "world" and args.hops != 3:
        raise ValueError("--hops applies to --dataset world only")
    if args.rediagnose and not args.store:
        raise ValueError("--rediagnose needs --store (an in-memory run has nothing to reuse)")
    check_executor_args(args)
    result = run_fp(
        {
            "executor": args.executor,
            "address": args.address,
            "dataset": args.dataset,
            "n": args.n,
            "hops": args.hops,
            "depths": args.depths,
            "faults": args.faults,
            "site": args.site,
            "natural": args.natural,
            "model": args.model,
            "plan": args.plan,
            "retriever": args.retriever,
            "diagnosers": args.diagnosers,
            "judge": args.judge,
            "seed": args.seed,
            "workers": args.workers,
            "k": args.k,
            "budget": args.budget,
            "bootstrap_B": args.bootstrap,
            "store": args.store,
            "checkpoints": args.checkpoints,
            "rediagnose": args.rediagnose,
            "progress": not args.no_progress,
        }
    )
    paths: dict[str, Path] = {}
    if args.out:
        from benchmarks.suites.fp import write_fp_report

        paths = write_fp_report(result, args.out)
    if args.json:
        print_json(result)
        return 0
    from benchmarks.suites.fp import print_fp_table

    print_fp_table(result)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0


def _register_suites(sub: Any) -> None:
    from benchmarks.cli.suites import register

    register(sub)


def _register_all(sub: Any) -> None:
    from benchmarks.suites.suite import SUITE_ORDER

    p = sub.add_parser(
        "all",
        help="every benchmark, each into DIR/<name>.json, plus DIR/summary.md",
        description="Run every benchmark with modest defaults (about 15-20 minutes on 2 cores; --quick: a "
        "smoke run of about 2 minutes). A benchmark that fails is recorded and the rest still run.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory for <name>.json and summary.md")
    p.add_argument("--quick", action="store_true", help="tiny sizes: check every benchmark runs")
    p.add_argument(
        "--only",
        nargs="+",
        choices=SUITE_ORDER,
        metavar="NAME",
        help=f"run only these ({', '.join(SUITE_ORDER)})",
    )
    p.add_argument(
        "--skip", nargs="+", choices=SUITE_ORDER, default=[], metavar="NAME", help="leave these out"
    )
    add_json_arg(p)
    p.set_defaults(func=_cmd_all)


def suite_entries() -> list[Any]:
    """The suite, in :data:`~benchmarks.suites.suite.SUITE_ORDER`, wired to the reference agent."""
    from benchmarks.suites.fp import write_fp_report
    from benchmarks.suites.suite import SuiteEntry

    def fp_extra(result: dict[str, Any], path: Path) -> list[Path]:
        paths = write_fp_report(result, path)
        return [paths["markdown"], paths["png"]]

    return [
        SuiteEntry("instrument", run_instrument, summarize_instrument),
        SuiteEntry("retrieval", run_retrieval, summarize_retrieval),
        SuiteEntry("agent", run_agent, summarize_agent),
        SuiteEntry("replay", run_replay, summarize_replay),
        SuiteEntry("faults", run_faults, summarize_faults),
        SuiteEntry("fp", run_fp, summarize_fp, fp_extra),
        SuiteEntry("repair", run_repair, summarize_repair),
        SuiteEntry("context", run_context, summarize_context),
    ]


def _cmd_all(args: argparse.Namespace) -> int:
    from benchmarks.suites.suite import run_suite

    started = time.perf_counter()

    def say(message: str) -> None:
        _say(f"[{time.perf_counter() - started:7.1f}s] {message}")

    record = run_suite(
        suite_entries(),
        args.out,
        size="quick" if args.quick else "default",
        only=args.only,
        skip=args.skip,
        progress=say,
    )
    if args.json:
        print_json(record)
    else:
        print((Path(args.out) / "summary.md").read_text(encoding="utf-8"))
    return 0 if all(row["status"] == "ok" for row in record["benchmarks"].values()) else 1

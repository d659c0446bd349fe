"""``causal-mw context``: detect, diagnose and recommend on stored sessions; apply a recommendation.

Sessions are looked up in the span store (``--store``) as ``context.session`` records (what
``context simulate`` writes) or as the runs of a LangGraph thread id.

A user's own workspace declares its layout in ``causal-context.yaml`` (found in ``--workspace``,
or passed with ``--config``; the workspace is then the folder the config is in unless it says
``root:``): which files are the prompt, the knowledge base, the skills and the tool descriptions.
Only those files are read, and only those can be changed by ``apply``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.context.apply import apply_recommendation
from causal_middleware.context.conversation import Conversation, align_to_workspace
from causal_middleware.context.detector import detect
from causal_middleware.context.recommender import recommend
from causal_middleware.context.recommender_llm import recommend_llm
from causal_middleware.context.root_cause import ContextDiagnosis, diagnose
from causal_middleware.context.sessions import (
    DETECTION_KIND,
    DIAGNOSIS_KIND,
    find_recommendation,
    load_conversation,
    save_recommendation,
    session_record,
)
from causal_middleware.context.signals import Detection
from causal_middleware.context.workspace import Workspace, config_root
from causal_middleware.store.open import OpenedStore, open_store

# ``--llm`` without a SPEC
_DEFAULT_LLM = "anthropic"


def register(subparsers: Any) -> Any:
    ctx = subparsers.add_parser("context", help="debug an agent's context from dissatisfied sessions")
    sub = ctx.add_subparsers(dest="context_command", metavar="SUBCOMMAND")
    sub.required = True

    p = sub.add_parser("detect", help="dissatisfaction signals of one session")
    p.add_argument("session_id")
    _workspace_args(p, help_dir="the workspace the session ran on (optional: ties nodes to its files)")
    _mode_args(p)
    add_store_arg(p)
    add_json_arg(p)
    p.set_defaults(func=_detect)

    p = sub.add_parser("diagnose", help="the root node, fault category and source of one session")
    p.add_argument("session_id")
    p.add_argument(
        "--method", choices=["holistic", "iterative"], default="holistic", help="default: holistic"
    )
    _workspace_args(p, help_dir="the workspace the session ran on (optional: resolves paths in it)")
    _mode_args(p)
    add_store_arg(p)
    add_json_arg(p)
    p.set_defaults(func=_diagnose)

    p = sub.add_parser("recommend", help="explore the workspace and propose a fix (stored; nothing applied)")
    p.add_argument("session_id")
    _workspace_args(
        p,
        help_dir="the context workspace directory (default: the config's, else the one the session was simulated on)",
    )
    p.add_argument("--passive", action="store_true", help="decide from the session alone, without exploring")
    p.add_argument("--method", choices=["holistic", "iterative"], default="holistic")
    _mode_args(p)
    add_store_arg(p)
    add_json_arg(p)
    p.set_defaults(func=_recommend)

    p = sub.add_parser("apply", help="apply a stored recommendation; prints the diff only unless --confirm")
    p.add_argument("recommendation_id")
    _workspace_args(p, help_dir="the context workspace directory to change (default: the config's folder)")
    p.add_argument(
        "--confirm", action="store_true", help="really change the files (a backup is written first)"
    )
    add_store_arg(p)
    add_json_arg(p)
    p.set_defaults(func=_apply)
    return sub


def _workspace_args(p: argparse.ArgumentParser, *, help_dir: str) -> None:
    p.add_argument("--workspace", metavar="DIR", help=help_dir)
    p.add_argument(
        "--config",
        metavar="FILE",
        help="the workspace config (causal-context.yaml) declaring the prompt, kb, skills and tools "
        "files; default: the one in the workspace, if any",
    )


def _workspace_dir(args: argparse.Namespace) -> str | None:
    if getattr(args, "workspace", None):
        return str(args.workspace)
    if getattr(args, "config", None):
        return str(config_root(args.config))
    return None


def _workspace(args: argparse.Namespace, directory: str | None = None) -> Workspace | None:
    directory = directory or _workspace_dir(args)
    if not directory:
        return None
    return Workspace.from_dir(directory, config=getattr(args, "config", None))


def _mode_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--llm",
        nargs="?",
        const=_DEFAULT_LLM,
        default=None,
        metavar="SPEC",
        help="use the LLM form with this chat model: anthropic[:MODEL] (the default: Claude, when "
        "$ANTHROPIC_API_KEY is set; otherwise reported as not run), local[:NAME], gguf:PATH or "
        "module:attr",
    )


def _model(args: argparse.Namespace) -> BaseChatModel | None:
    """The ``--llm`` chat model, loaded once per command (its stages share it)."""
    if not hasattr(args, "_llm_model"):
        args._llm_model = _load_model(args)
    model: BaseChatModel | None = args._llm_model
    return model


def _load_model(args: argparse.Namespace) -> BaseChatModel | None:
    spec = getattr(args, "llm", None)
    if not spec:
        return None
    if spec == _DEFAULT_LLM:
        if not os.environ.get("ANTHROPIC_API_KEY"):
            return None  # the LLM form reports itself as not run
        from causal_middleware.integrations.models import select_chat_model

        model: BaseChatModel = select_chat_model(prefer="anthropic")
        return model
    from causal_middleware.cli.live_agent import load_chat_model

    return load_chat_model(str(spec), "llm")


def _store(args: argparse.Namespace, *, create: bool = False) -> OpenedStore:
    return open_store(args.store, create=create)


def _load(args: argparse.Namespace, workspace: Workspace | None = None) -> tuple[OpenedStore, Conversation]:
    store = _store(args)
    conv = load_conversation(store, args.session_id)
    return store, align_to_workspace(conv, workspace) if workspace is not None else conv


def _detection(args: argparse.Namespace, conv: Conversation) -> Detection:
    return detect(conv, mode="llm" if args.llm else "offline", model=_model(args))


def _detect(args: argparse.Namespace) -> int:
    store, conv = _load(args, _workspace(args))
    det = _detection(args, conv)
    store.put_record(DETECTION_KIND, conv.session_id, det.model_dump(mode="json"))
    if args.json:
        print_json(det.model_dump(mode="json"))
        return 0
    if det.status == "not_run":
        print(f"{conv.session_id}: detector not run ({det.reason})")
        return 0
    verdict = "ESCALATE" if det.escalate else "ok"
    print(f"{conv.session_id}: {verdict} (confidence {det.confidence:.2f}, {len(det.signals)} signals)")
    for s in det.signals:
        print(
            f"  turn {s.turn:>2} {s.node_id or '-':>4}  {s.type.value:<22} {s.confidence:.2f}  {s.evidence}"
        )
    return 0


def _diagnosis(
    args: argparse.Namespace, conv: Conversation, workspace: Workspace | None = None
) -> tuple[Detection, ContextDiagnosis]:
    det = _detection(args, conv)
    mode: Literal["offline", "llm"] = "llm" if args.llm else "offline"
    return det, diagnose(
        conv,
        det if det.status == "ok" else None,
        method=args.method,
        mode=mode,
        model=_model(args),
        workspace=workspace,
    )


def _diagnose(args: argparse.Namespace) -> int:
    ws = _workspace(args)
    store, conv = _load(args, ws)
    _, diag = _diagnosis(args, conv, ws)
    store.put_record(DIAGNOSIS_KIND, conv.session_id, diag.model_dump(mode="json"))
    if args.json:
        print_json(diag.model_dump(mode="json"))
        return 0
    if diag.status != "ok":
        print(f"{conv.session_id}: {diag.status}" + (f" ({diag.reason})" if diag.reason else ""))
        return 0
    print(
        f"{conv.session_id}: root {diag.root_node_id}  {diag.category.value if diag.category else '?'}  {diag.component_path or '(new content)'}"
    )
    if diag.delta:
        print(f"  delta: {diag.delta.describe()}")
    print(f"  attribution ({diag.method}, {diag.calls} call(s)):")
    for a in diag.attributions[:5]:
        node = conv.node(a.node_id)
        print(f"    {a.node_id:>4} {a.score:.3f}  {node.type.value:<13} {a.reason}")
    return 0


def _recommend(args: argparse.Namespace) -> int:
    if args.llm and args.passive:
        raise ValueError("--passive is the offline recommender's; the LLM form (--llm) explores")
    workspace_dir = _workspace_dir(args)
    if workspace_dir is None:
        record = session_record(_store(args), args.session_id)
        workspace_dir = record.get("workspace_dir") if record else None
    if not workspace_dir:
        raise ValueError(
            f"no workspace for session {args.session_id!r}: pass --workspace DIR (or --config FILE)"
        )
    ws = _workspace(args, workspace_dir)
    assert ws is not None
    store, conv = _load(args, ws)
    det, diag = _diagnosis(args, conv, ws)
    if args.llm:
        rec = recommend_llm(conv, diag, ws, _model(args))
    else:
        rec = recommend(conv, diag, ws, mode="passive" if args.passive else "explore")
    save_recommendation(store, rec)
    if args.json:
        print_json(rec.model_dump(mode="json"))
        return 0
    print(f"recommendation {rec.id}: {rec.operation.value} {rec.target_path or ''}".rstrip())
    print(
        f"  classification {rec.classification.value}, confidence {rec.confidence:.2f}, {rec.calls} workspace call(s)"
    )
    if rec.authoritative_source:
        rule = f" ({rec.authority_rule})" if rec.authority_rule else ""
        print(f"  authoritative source: {rec.authoritative_source}{rule}")
    print(f"  why: {rec.rationale}")
    if rec.diff:
        print()
        print(rec.diff, end="" if rec.diff.endswith("\n") else "\n")
        config = f" --config {args.config}" if args.config else ""
        print(
            f"\nnothing applied. to apply: causal-mw context apply {rec.id} --workspace {workspace_dir}{config} --confirm"
        )
    return 0


def _apply(args: argparse.Namespace) -> int:
    store = _store(args)
    rec = find_recommendation(store, args.recommendation_id)
    workspace_dir = _workspace_dir(args)
    if workspace_dir is None:
        raise ValueError("pass --workspace DIR (or --config FILE): the workspace to change")
    result = apply_recommendation(rec, workspace_dir, confirm=args.confirm, config=args.config)
    if args.json:
        print_json(result.model_dump(mode="json"))
        return 0
    if result.diff:
        print(result.diff, end="" if result.diff.endswith("\n") else "\n")
    print(result.message)
    return 0

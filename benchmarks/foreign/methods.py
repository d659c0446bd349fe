"""Which registered diagnosers a foreign-trace benchmark can run offline, and why the others cannot."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from rich.console import Console
from rich.progress import track

from causal_middleware.attribution.base import Diagnosis, DiagnosisContext
from causal_middleware.attribution.registry import available, get_diagnoser

T = TypeVar("T")

#: the one-call LLM methods a foreign-trace benchmark adds when a judge model is configured
#: (Who&When's all-at-once protocol; the multi-call ones would cost N + 2 calls per long log)
LLM_METHODS = ("all_at_once",)


def not_run_reason(name: str) -> str | None:
    """Why the named diagnoser cannot run on a stored foreign trace with a reference answer and
    nothing else (no live agent, no chat model); None when it can."""
    diagnoser = get_diagnoser(name)
    missing = diagnoser.requirements(DiagnosisContext(reference="reference"))
    if diagnoser.needs_live_agent:
        return f"needs a live agent to fork ({missing or 'a fork backend'}); a foreign trace has none"
    return f"needs {missing}" if missing else None


def runnable() -> list[str]:
    """Every registered diagnoser that runs offline on a stored trace, in registration order."""
    return [name for name in available() if not_run_reason(name) is None]


def not_run(exclude: set[str] | None = None) -> dict[str, dict[str, object]]:
    """``{name: {"run": False, "reason": ...}}`` for every registered diagnoser that cannot run."""
    out: dict[str, dict[str, object]] = {}
    for name in available():
        reason = not_run_reason(name)
        if reason is not None and name not in (exclude or set()):
            out[name] = {"run": False, "reason": reason}
    return out


def methods_for(methods: Sequence[str] | None, chat_model: BaseChatModel | None) -> list[str]:
    """The methods to score: the ones named, else every offline one plus, with a judge model, the
    one-call LLM methods."""
    if methods is not None:
        return list(methods)
    return runnable() + (list(LLM_METHODS) if chat_model is not None else [])


def with_progress(items: Sequence[T], description: str, *, slow: bool) -> Iterable[T]:
    """``items`` with a progress bar on stderr for slow (model-backed) methods."""
    if not slow:
        return items
    return track(items, description=description, console=Console(stderr=True), transient=True)


class LLMFacts:
    """What the LLM calls of one method cost and how many replies could not be read."""

    def __init__(self) -> None:
        self.calls = self.tokens = self.unreadable = 0
        self.started = time.perf_counter()

    def add(self, diagnosis: Diagnosis) -> None:
        self.calls += diagnosis.cost.llm_calls
        self.tokens += diagnosis.cost.tokens
        self.unreadable += "parse_error" in diagnosis.details

    def as_dict(self) -> dict[str, object]:
        if not self.calls:
            return {}
        seconds = time.perf_counter() - self.started
        return {
            "llm_calls": self.calls,
            "llm_tokens": self.tokens,
            "llm_errors": self.unreadable,
            "seconds_per_call": round(seconds / self.calls, 2),
        }


def load_judge(spec: str | None) -> BaseChatModel | None:
    """The judge chat model of ``--judge SPEC`` (None without one)."""
    if not spec:
        return None
    from causal_middleware.cli.live_agent import load_chat_model

    return load_chat_model(spec, "judge")

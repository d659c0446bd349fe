"""Which registered diagnosers a foreign-trace benchmark can run offline, and why the others cannot."""

from __future__ import annotations

from causal_middleware.attribution.base import DiagnosisContext
from causal_middleware.attribution.registry import available, get_diagnoser


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

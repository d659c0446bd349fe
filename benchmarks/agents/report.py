"""Aggregates of ``DIR/agents.json`` and the printed table.

``agents.json`` keys:

* ``setup``: seed, methods, quick, command, targets, counts (tasks generated, kept = failed runs,
  skipped because the control run without the plant already failed, or the planted run succeeded);
* ``methods``: per method: ``n``, ``accuracy`` (exact step at node level: blamed node == true node
  and, for hop-scoped causes, blamed hop == the true step's recorded hop) with ``accuracy_ci``
  (bootstrap 95%), ``node_accuracy``, ``step_exact`` (blamed step id == the true step's id),
  ``reexecutions_mean``, ``reexecutions_per_correct`` (total re-executions / correct diagnoses),
  ``not_run``, ``errors``, ``by_cause`` and ``by_agent`` (accuracy and n);
* ``repair``: ``n``, ``rate`` (status == "repaired") with ``rate_ci``, ``minimality_mean`` (over
  repaired runs), ``step_correct`` (share of repairs that changed the true step),
  ``reexecutions_mean``, ``statuses``, ``by_cause``, ``by_agent``;
* ``targets``: each issue-12 target with the measured value and whether it is met;
* ``misses``: per failed run and method that missed: what was blamed instead;
* ``runs``: every task record (see :func:`benchmarks.agents.runner.run_task`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from causal_middleware.evaluation.stats import proportion_ci

PROBING = ("frozen_hop", "suffix_regen", "crs", "path_aware")
TARGET_ACCURACY = 0.85
TARGET_REPAIR = 0.70
TARGET_REEXEC = 10


def _rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _grouped(kept: list[dict[str, Any]], key: str, value: Any) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in kept:
        v = value(r)
        if v is not None:
            groups[r[key]].append(bool(v))
    return {g: {"n": len(v), "rate": _rate(v)} for g, v in sorted(groups.items())}


def aggregate(runs: list[dict[str, Any]], methods: list[str], seed: int) -> dict[str, Any]:
    kept = [r for r in runs if r.get("kept")]
    out: dict[str, Any] = {"methods": {}, "repair": None, "misses": []}
    for m in methods:
        ds = [r["diagnoses"][m] for r in kept if m in r.get("diagnoses", {})]
        correct = [bool(d.get("correct")) for d in ds]
        reexec = [int(d.get("reexecutions") or 0) for d in ds]
        n_correct = sum(correct)
        out["methods"][m] = {
            "n": len(ds),
            "accuracy": _rate(correct),
            "accuracy_ci": proportion_ci(correct, seed=seed) if ds else None,
            "node_accuracy": _rate([bool(d.get("node_correct")) for d in ds]),
            "step_exact": _rate([bool(d.get("step_exact")) for d in ds]),
            "step_exact_ci": proportion_ci([bool(d.get("step_exact")) for d in ds], seed=seed)
            if ds
            else None,
            "reexecutions_mean": round(sum(reexec) / len(reexec), 2) if reexec else None,
            "reexecutions_per_correct": round(sum(reexec) / n_correct, 2) if n_correct else None,
            "not_run": sum(1 for d in ds if not d.get("ran")),
            "errors": sum(1 for d in ds if d.get("error")),
            "by_cause": _grouped(kept, "cause", lambda r, m=m: r["diagnoses"].get(m, {}).get("correct")),
            "by_agent": _grouped(kept, "agent", lambda r, m=m: r["diagnoses"].get(m, {}).get("correct")),
        }
        for r in kept:
            d = r["diagnoses"].get(m, {})
            if d.get("correct"):
                continue
            out["misses"].append(
                {
                    "task": r["task"],
                    "agent": r["agent"],
                    "cause": r["cause"],
                    "method": m,
                    "true": f"{r['truth']['node']}@hop{r['truth']['hop']}",
                    "blamed": f"{d.get('node')}@hop{d.get('hop')}"
                    if d.get("node")
                    else f"stage={d.get('stage')}",
                    "why": (d.get("error") or d.get("root_cause") or d.get("reason") or "")[:240],
                    "probed_nodes": d.get("probed_nodes"),
                    "probe_errors": d.get("probe_errors"),
                    "not_probed": d.get("not_probed"),
                    "plant": {
                        k: v
                        for k, v in r["plant"].items()
                        if k in ("namesake_kind", "planted_doc", "removed_doc")
                    },
                }
            )
    reps = [r["repair"] for r in kept if "repair" in r]
    if reps:
        repaired = [bool(x.get("repaired")) for x in reps]
        mins = [x["minimality"] for x in reps if x.get("repaired") and x.get("minimality") is not None]
        out["repair"] = {
            "n": len(reps),
            "rate": _rate(repaired),
            "rate_ci": proportion_ci(repaired, seed=seed),
            "minimality_mean": round(sum(mins) / len(mins), 4) if mins else None,
            "step_correct": _rate([bool(x.get("step_correct")) for x in reps if x.get("repaired")]),
            "reexecutions_mean": round(sum(int(x.get("reexecutions") or 0) for x in reps) / len(reps), 2),
            "statuses": dict(Counter(x.get("status") for x in reps)),
            "by_cause": _grouped(kept, "cause", lambda r: r.get("repair", {}).get("repaired")),
            "by_agent": _grouped(kept, "agent", lambda r: r.get("repair", {}).get("repaired")),
        }
    targets: dict[str, Any] = {}
    for m in methods:
        if m in PROBING:
            s = out["methods"][m]
            targets[f"{m}.accuracy>={TARGET_ACCURACY}"] = {
                "value": s["accuracy"],
                "met": s["accuracy"] is not None and s["accuracy"] >= TARGET_ACCURACY,
            }
            targets[f"{m}.reexecutions_per_correct<{TARGET_REEXEC}"] = {
                "value": s["reexecutions_per_correct"],
                "met": s["reexecutions_per_correct"] is not None
                and s["reexecutions_per_correct"] < TARGET_REEXEC,
            }
    if out["repair"]:
        targets[f"repair.rate>={TARGET_REPAIR}"] = {
            "value": out["repair"]["rate"],
            "met": out["repair"]["rate"] is not None and out["repair"]["rate"] >= TARGET_REPAIR,
        }
    out["targets"] = targets
    return out


def table(report: dict[str, Any]) -> str:
    lines = []
    setup = report["setup"]
    lines.append(
        f"bench agents: seed {setup['seed']}, {setup['counts']['kept']} failed runs kept "
        f"of {setup['counts']['generated']} tasks ({setup['counts']['control_failed']} control failures, "
        f"{setup['counts']['not_failed']} planted runs that still succeeded)"
    )
    lines.append(
        f"{'method':<14}{'n':>4}{'acc':>7}{'95% CI':>16}{'node':>7}{'step':>7}{'reex/ok':>9}{'reex':>7}"
    )
    for m, s in report["methods"].items():
        ci = s["accuracy_ci"]
        ci_s = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "-"
        rpc = s["reexecutions_per_correct"]
        lines.append(
            f"{m:<14}{s['n']:>4}{_f(s['accuracy']):>7}{ci_s:>16}{_f(s['node_accuracy']):>7}"
            f"{_f(s['step_exact']):>7}{(f'{rpc:.1f}' if rpc is not None else '-'):>9}{_f(s['reexecutions_mean'], 1):>7}"
        )
    causes = sorted({c for s in report["methods"].values() for c in s["by_cause"]})
    agents = sorted({a for s in report["methods"].values() for a in s["by_agent"]})
    for title, keys, field in (("by cause", causes, "by_cause"), ("by agent", agents, "by_agent")):
        lines.append("")
        lines.append(
            f"accuracy {title:<22}" + "".join(f"{m[:12]:>13}" for m in report["methods"]) + f"{'repair':>9}"
        )
        for k in keys:
            row = f"  {k:<29}"
            n = 0
            for s in report["methods"].values():
                g = s[field].get(k)
                n = g["n"] if g else n
                row += f"{(_f(g['rate']) if g else '-'):>13}"
            rg = (report["repair"] or {}).get(field, {}).get(k)
            row += f"{(_f(rg['rate']) if rg else '-'):>9}   (n={n})"
            lines.append(row)
    rep = report["repair"]
    if rep:
        ci = rep["rate_ci"]
        lines.append("")
        lines.append(
            f"repair: rate {_f(rep['rate'])} [{ci[0]:.2f}, {ci[1]:.2f}]  minimality {_f(rep['minimality_mean'])}  "
            f"repaired step correct {_f(rep['step_correct'])}  re-executions {rep['reexecutions_mean']}  "
            f"statuses {rep['statuses']}"
        )
    lines.append("")
    lines.append(
        "targets: "
        + ", ".join(
            f"{k}={_f(v['value'])}{'' if v['met'] else ' (NOT met)'}" for k, v in report["targets"].items()
        )
    )
    return "\n".join(lines)


def _f(v: Any, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"

"""AgenticRAG-FP style attribution results: ``results.json``, markdown tables and a PNG.

A :class:`FPUnit` is one injected fault: its certified :class:`FaultLabel`, whether the agent
recovered (answered correctly despite the fault), each diagnoser's :class:`Diagnosis` of the
faulted run (diagnosers run on failed traces only) and, for content corruptions, how the agent
treated the corrupted content. :func:`build_results` scores the diagnosers against the labels;
:func:`write_report` writes ``results.json``, ``report.md`` and ``accuracy_by_depth.png``.

Scoring conventions (also in ``docs/attribution.md``):

* depth = the label's ``injected_hop``; with ``eligible_only`` (default) units whose injected hop
  differs from the requested one are left out (the paper's eligibility rule) and counted;
* a diagnoser is *correct* on a failed trace when it ran and its ``hop`` equals the injected hop;
  a diagnoser that did not run on a trace counts as wrong there;
* a prediction outside every hop (``hop=None``, answer stage) sits at position ``H + 1`` for the
  hop tolerance and the mean absolute hop error, ``H`` being the unit's ``n_hops`` (the failed
  trace's hop count) when given, else the deepest injected hop in the results;
* bootstrap intervals: B resamples (default 1000) of the per-trace 0/1 correctness, seeded; a cell
  with fewer than ``min_cell`` (default 10) failed traces is flagged ``descriptive``.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from causal_middleware.attribution.base import Diagnosis
from causal_middleware.evaluation.stats import bootstrap_ci, paired_comparison
from causal_middleware.faults.model import ContentOutcome, FaultLabel

CONTENT_OUTCOMES: tuple[ContentOutcome, ...] = ("absorbed", "resisted", "derailed")


class FPUnit(BaseModel):
    """One injected fault and what became of it."""

    model_config = ConfigDict(extra="forbid")

    label: FaultLabel
    recovered: bool = Field(description="the agent answered correctly despite the fault")
    diagnoses: dict[str, Diagnosis] = Field(default_factory=dict, description="diagnoser name -> diagnosis")
    content_outcome: ContentOutcome | None = None
    n_hops: int | None = Field(default=None, ge=0, description="hops of the faulted trace")
    run_id: str | None = Field(default=None, description="the faulted run")


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _susceptibility(units: Sequence[FPUnit], *, B: int, seed: int) -> dict[str, dict[str, Any]]:
    """How the agent's model reacts to each fault family: family -> ``injected``, ``recovered``,
    ``recovery`` (share answered right despite the fault) with its bootstrap ``ci``, and the same by
    depth (``by_depth``: depth -> [recovered, injected]). A reader that always finds the gold fact
    recovers where a real one would not; this is the table that shows it."""
    by_family: dict[str, list[FPUnit]] = defaultdict(list)
    for u in units:
        by_family[u.label.family].append(u)
    out: dict[str, dict[str, Any]] = {}
    for family, members in sorted(by_family.items()):
        flags = [float(u.recovered) for u in members]
        ci = bootstrap_ci(flags, B=B, seed=seed)
        depths: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for u in members:
            cell = depths[str(u.label.injected_hop)]
            cell[0] += int(u.recovered)
            cell[1] += 1
        out[family] = {
            "injected": len(members),
            "recovered": int(sum(flags)),
            "recovery": _r(sum(flags) / len(flags)),
            "ci": [_r(ci[0]), _r(ci[1])] if ci is not None else None,
            "by_depth": dict(sorted(depths.items())),
        }
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _uses_gold(name: str, diagnoses: Iterable[Diagnosis]) -> bool:
    if any(d.uses_gold for d in diagnoses):
        return True
    from causal_middleware.attribution.registry import DIAGNOSERS

    cls = DIAGNOSERS.get(name)
    return bool(cls is not None and cls.uses_gold)


def build_results(
    units: Sequence[FPUnit],
    diagnoser_names: Sequence[str],
    config: dict[str, Any] | None = None,
    *,
    B: int = 1000,
    seed: int = 0,
    min_cell: int = 10,
    eligible_only: bool = True,
) -> dict[str, Any]:
    """Score the diagnosers over ``units`` (see the module docstring for the conventions).

    Returns the ``results.json`` dict: ``config``, ``recovery``, ``failed``, ``injected``,
    ``excluded``, ``diagnosers``, ``outcomes``, ``mcnemar`` (keys documented in
    ``docs/attribution.md``).
    """
    if B < 1:
        raise ValueError(f"B must be >= 1, got {B}")
    for i, unit in enumerate(units):
        if not isinstance(unit, FPUnit):
            raise TypeError(f"unit {i} is a {type(unit).__name__}, not an FPUnit")
    kept = [u for u in units if u.label.eligible or not eligible_only]
    depths = sorted({u.label.injected_hop for u in kept})
    deepest = max(depths, default=0)
    by_depth: dict[int, list[FPUnit]] = defaultdict(list)
    for u in kept:
        by_depth[u.label.injected_hop].append(u)
    failed_units = [u for u in kept if not u.recovered]

    def key(d: int) -> str:
        return str(d)

    results: dict[str, Any] = {
        "config": {
            **(config or {}),
            "bootstrap_B": B,
            "bootstrap_seed": seed,
            "min_cell": min_cell,
            "eligible_only": eligible_only,
            "diagnosers": list(diagnoser_names),
        },
        "injected": {key(d): len(by_depth[d]) for d in depths},
        "recovery": {key(d): _r(sum(u.recovered for u in by_depth[d]) / len(by_depth[d])) for d in depths},
        "failed": {key(d): sum(not u.recovered for u in by_depth[d]) for d in depths},
        "excluded": {"ineligible": len(units) - len(kept)},
        "susceptibility": _susceptibility(kept, B=B, seed=seed),
        "diagnosers": {},
        "outcomes": {},
        "mcnemar": [],
    }

    def position(unit: FPUnit, diagnosis: Diagnosis) -> int:
        if diagnosis.hop is not None:
            return diagnosis.hop
        return (unit.n_hops if unit.n_hops else deepest) + 1

    correct_vectors: dict[str, list[bool]] = {}
    for name in diagnoser_names:
        diagnoses = [u.diagnoses.get(name) for u in failed_units]
        ran = [(u, d) for u, d in zip(failed_units, diagnoses, strict=True) if d is not None and d.ran]
        correct = [
            d is not None and d.ran and d.hop == u.label.injected_hop
            for u, d in zip(failed_units, diagnoses, strict=True)
        ]
        correct_vectors[name] = correct
        entry: dict[str, Any] = {
            "run": bool(ran),
            "uses_gold": _uses_gold(name, [d for d in diagnoses if d is not None]),
            "n_ran": len(ran),
            "n": len(failed_units),
        }
        reasons = sorted({d.reason for d in diagnoses if d is not None and not d.ran and d.reason})
        if reasons:
            entry["not_run_reasons"] = reasons
        cells: dict[str, Any] = {}
        for depth in depths:
            flags = [c for u, c in zip(failed_units, correct, strict=True) if u.label.injected_hop == depth]
            if not flags:
                cells[key(depth)] = {"acc": None, "ci": None, "n": 0, "descriptive": True}
                continue
            acc = sum(flags) / len(flags)
            ci = bootstrap_ci([float(f) for f in flags], B=B, seed=seed)
            cells[key(depth)] = {
                "acc": _r(acc) if ran else None,
                "ci": [_r(ci[0]), _r(ci[1])] if ran and ci is not None else None,
                "n": len(flags),
                "correct": sum(flags),
                "descriptive": len(flags) < min_cell,
            }
        entry["by_depth"] = cells
        overall_ci = bootstrap_ci([float(c) for c in correct], B=B, seed=seed) if ran else None
        if ran and overall_ci is not None:
            entry["overall"] = {
                "acc": _r(sum(correct) / len(correct)),
                "ci": [_r(overall_ci[0]), _r(overall_ci[1])],
                "n": len(correct),
            }
        else:
            entry["overall"] = {"acc": None, "ci": None, "n": len(correct)}
        if ran:
            stage_hits = [d.stage == u.label.stage for u, d in ran]
            errors = [abs(position(u, d) - u.label.injected_hop) for u, d in ran]
            ancestor = [
                d.hop is not None and d.hop <= u.label.injected_hop and d.stage == u.label.stage
                for u, d in ran
            ]
            n_correct = sum(correct)
            calls = sum(d.cost.llm_calls for _, d in ran)
            tokens = sum(d.cost.tokens for _, d in ran)
            reexec = sum(d.cost.reexecutions for _, d in ran)
            entry.update(
                {
                    "stage_acc": _r(_mean([float(x) for x in stage_hits])),
                    "hop_tolerance": _r(_mean([float(e <= 1) for e in errors])),
                    "ancestor_hit": _r(_mean([float(x) for x in ancestor])),
                    "mae": _r(_mean([float(e) for e in errors])),
                    "uncertain_rate": _r(_mean([float(d.uncertain) for _, d in ran])),
                    "calls_per_correct": _r(calls / n_correct) if n_correct else None,
                    "tokens_per_correct": _r(tokens / n_correct) if n_correct else None,
                    "reexec_per_correct": _r(reexec / n_correct) if n_correct else None,
                    "totals": {
                        "llm_calls": calls,
                        "tokens": tokens,
                        "reexecutions": reexec,
                        "correct": n_correct,
                    },
                }
            )
        else:
            entry.update(
                {
                    key_: None
                    for key_ in (
                        "stage_acc",
                        "hop_tolerance",
                        "ancestor_hit",
                        "mae",
                        "uncertain_rate",
                        "calls_per_correct",
                        "tokens_per_correct",
                        "reexec_per_correct",
                    )
                }
            )
        results["diagnosers"][name] = entry

    for depth in depths:
        content = [u for u in by_depth[depth] if u.content_outcome is not None]
        if content:
            shares: dict[str, Any] = {
                o: _r(sum(u.content_outcome == o for u in content) / len(content)) for o in CONTENT_OUTCOMES
            }
            shares["n"] = len(content)
            results["outcomes"][key(depth)] = shares

    ran_names = [n for n in diagnoser_names if results["diagnosers"][n]["run"]]
    for a, b in itertools.combinations(ran_names, 2):
        cmp = paired_comparison(a, b, correct_vectors[a], correct_vectors[b])
        results["mcnemar"].append({"depth": "all", **cmp.model_dump()})
        for depth in depths:
            idx = [i for i, u in enumerate(failed_units) if u.label.injected_hop == depth]
            if not idx:
                continue
            cmp = paired_comparison(
                a, b, [correct_vectors[a][i] for i in idx], [correct_vectors[b][i] for i in idx]
            )
            results["mcnemar"].append({"depth": key(depth), **cmp.model_dump()})
    return results


# --- rendering ----------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_markdown(results: dict[str, Any]) -> str:
    """The report: injection summary, then tables laid out like AgenticRAG-FP's Tables 2-4."""
    depths = list(results.get("failed", {}))
    diagnosers: dict[str, Any] = results.get("diagnosers", {})
    config = results.get("config", {})
    out = ["# Fault attribution results", ""]
    shown = {k: v for k, v in config.items() if k not in ("diagnosers",)}
    if shown:
        out.append("Config: " + ", ".join(f"`{k}={v}`" for k, v in shown.items()))
        out.append("")
    out += ["## Injection outcome by depth", ""]
    out += _table(
        ["depth", "injected", "recovery", "failed traces"],
        [
            [
                d,
                str(results.get("injected", {}).get(d, "—")),
                _fmt(results["recovery"].get(d)),
                str(results["failed"][d]),
            ]
            for d in depths
        ],
    )
    susceptibility: dict[str, Any] = results.get("susceptibility") or {}
    if susceptibility:
        out += ["", "## Susceptibility — recovery by fault family (the agent's model under each fault)", ""]
        out += _table(
            ["family", "injected", "recovered", "recovery [95% CI]"],
            [
                [
                    family,
                    str(row["injected"]),
                    str(row["recovered"]),
                    _fmt(row["recovery"])
                    + (f" [{_fmt(row['ci'][0])}, {_fmt(row['ci'][1])}]" if row["ci"] else ""),
                ]
                for family, row in susceptibility.items()
            ],
        )
    out += [
        "",
        "## Table 2 — exact-hop accuracy on failed traces, by depth [bootstrap 95% CI]",
        "",
        "`*` uses gold information; `†` descriptive cell (fewer than "
        f"{config.get('min_cell', 10)} failed traces); `—` not run.",
        "",
    ]
    rows = []
    for name, entry in diagnosers.items():
        cells = []
        for d in depths:
            cell = entry["by_depth"].get(d)
            if not entry["run"] or cell is None or cell["acc"] is None:
                cells.append("—")
                continue
            dagger = "†" if cell["descriptive"] else ""
            cells.append(
                f"{cell['acc']:.2f} [{cell['ci'][0]:.2f}, {cell['ci'][1]:.2f}]{dagger} (n={cell['n']})"
            )
        overall = entry.get("overall", {})
        cells.append(
            "—"
            if overall.get("acc") is None
            else f"{overall['acc']:.2f} [{overall['ci'][0]:.2f}, {overall['ci'][1]:.2f}]"
        )
        rows.append([name + ("*" if entry["uses_gold"] else "")] + cells)
    out += _table(["diagnoser"] + [f"depth {d}" for d in depths] + ["all"], rows)
    out += ["", "## Table 3 — stage and hop error", ""]
    out += _table(
        ["diagnoser", "stage acc", "hop ±1", "ancestor hit", "MAE (hops)", "uncertain"],
        [
            [
                name,
                _fmt(e.get("stage_acc")),
                _fmt(e.get("hop_tolerance")),
                _fmt(e.get("ancestor_hit")),
                _fmt(e.get("mae")),
                _fmt(e.get("uncertain_rate")),
            ]
            for name, e in diagnosers.items()
        ],
    )
    out += ["", "## Table 4 — cost per correct diagnosis", ""]
    out += _table(
        ["diagnoser", "LLM calls", "tokens", "re-executions", "correct / failed"],
        [
            [
                name,
                _fmt(e.get("calls_per_correct")),
                _fmt(e.get("tokens_per_correct"), 0),
                _fmt(e.get("reexec_per_correct")),
                f"{e.get('totals', {}).get('correct', 0)}/{e['n']}" if e["run"] else "—",
            ]
            for name, e in diagnosers.items()
        ],
    )
    if results.get("outcomes"):
        out += ["", "## Content corruption outcomes by depth", ""]
        out += _table(
            ["depth", "absorbed", "resisted", "derailed", "n"],
            [
                [d, _fmt(o["absorbed"]), _fmt(o["resisted"]), _fmt(o["derailed"]), str(o["n"])]
                for d, o in results["outcomes"].items()
            ],
        )
    overall = [m for m in results.get("mcnemar", []) if m["depth"] == "all"]
    if overall:
        out += ["", "## Paired comparisons (exact McNemar, all depths)", ""]
        out += _table(
            ["A", "B", "n", "only A right", "only B right", "p"],
            [
                [m["a"], m["b"], str(m["n"]), str(m["a_only"]), str(m["b_only"]), f"{m['p_value']:.3g}"]
                for m in overall
            ],
        )
    return "\n".join(out) + "\n"


def plot_accuracy(results: dict[str, Any], path: str | Path) -> Path:
    """Accuracy by depth per diagnoser (lines with 95% CI bars); recovery and failed counts in the
    title, like AgenticRAG-FP's Figure 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depths = list(results.get("failed", {}))
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    shown = [(name, entry) for name, entry in results.get("diagnosers", {}).items() if entry.get("run")]
    for i, (name, entry) in enumerate(shown):
        # a small sideways offset per diagnoser keeps equal accuracies from hiding each other
        xs = [x + (i - (len(shown) - 1) / 2) * 0.03 for x in range(len(depths))]
        ys, lo, hi = [], [], []
        for d in depths:
            cell = entry["by_depth"].get(d) or {}
            acc = cell.get("acc")
            ci = cell.get("ci") or [acc, acc]
            ys.append(float("nan") if acc is None else acc)
            lo.append(0.0 if acc is None else max(0.0, acc - ci[0]))
            hi.append(0.0 if acc is None else max(0.0, ci[1] - acc))
        label = name + (" *" if entry.get("uses_gold") else "")
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=label)
    ax.set_xticks(list(range(len(depths))))
    ax.set_xticklabels([f"hop {d}" for d in depths])
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("injected fault depth")
    ax.set_ylabel("exact-hop accuracy (failed traces)")
    recovery = ", ".join(f"h{d} {_fmt(results['recovery'].get(d))}" for d in depths)
    failed = ", ".join(f"h{d} {results['failed'][d]}" for d in depths)
    ax.set_title(
        f"Exact-hop attribution accuracy by depth\nrecovery: {recovery} | failed traces: {failed}",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(
            fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="* uses gold", title_fontsize=8
        )
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def write_report(results: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``report.md`` and ``accuracy_by_depth.png`` into ``out_dir``."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": directory / "results.json",
        "markdown": directory / "report.md",
        "png": directory / "accuracy_by_depth.png",
    }
    paths["json"].write_text(
        json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    paths["markdown"].write_text(render_markdown(results), encoding="utf-8")
    plot_accuracy(results, paths["png"])
    return paths

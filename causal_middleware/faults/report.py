"""Sweep tables: recovery by depth and family, and absorbed/resisted/derailed by depth.

:func:`build_report` reads :class:`~causal_middleware.faults.model.UnitRecord` s (the latest record
of each unit, :func:`~causal_middleware.faults.sweep.latest_records`) and counts:

* ``recovery[family][depth]``: of the units forked (status ``done``), how many still answered
  correctly; ``recovery_by_depth`` and ``recovery_by_family`` pool the other axis;
* ``content[depth]``: content-corruption units split into absorbed / resisted / derailed, with
  the number whose corrupted span reached a later sub-query (query contamination) and the
  number skipped because nothing was certifiable;
* ``statuses`` and ``reasons``: units per status, and ineligible/skipped units per reason code.

Rates are ``None`` when a cell has no unit. JSON keys are strings (depths too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from causal_middleware.faults.model import ALL_FAMILIES, UnitRecord

# AgenticRAG-FP's published figures, for the closing comparison.
PAPER_FIGURES: dict[str, object] = {
    "content_recovery_range": [0.54, 0.85],
    "structural_recovery_range": [0.0, 0.71],
    "hop1_content": {"absorbed": 0.15, "resisted": 0.58, "derailed": 0.26},
    "query_contamination": {"count": 3, "of": 129},
}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


class RecoveryCell(BaseModel):
    n: int = 0
    recovered: int = 0

    @property
    def rate(self) -> float | None:
        return _rate(self.recovered, self.n)

    def to_json(self) -> dict[str, object]:
        return {"n": self.n, "recovered": self.recovered, "rate": self.rate}


class ContentCell(BaseModel):
    n: int = 0
    absorbed: int = 0
    resisted: int = 0
    derailed: int = 0
    contaminated: int = 0
    skipped: int = 0

    def rates(self) -> dict[str, float | None]:
        return {k: _rate(getattr(self, k), self.n) for k in ("absorbed", "resisted", "derailed")}

    def to_json(self) -> dict[str, object]:
        return {**self.model_dump(), **{f"{k}_rate": v for k, v in self.rates().items()}}


class FaultReport(BaseModel):
    """The tables of one set of units (see the module docstring)."""

    units: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)
    reasons: dict[str, int] = Field(default_factory=dict)
    recovery: dict[str, dict[int, RecoveryCell]] = Field(default_factory=dict)
    recovery_by_depth: dict[int, RecoveryCell] = Field(default_factory=dict)
    recovery_by_family: dict[str, RecoveryCell] = Field(default_factory=dict)
    content: dict[int, ContentCell] = Field(default_factory=dict)

    @property
    def depths(self) -> list[int]:
        return sorted(self.recovery_by_depth)

    def to_json(self) -> dict[str, object]:
        """The report as plain JSON (string keys; each cell with its rate)."""
        return {
            "units": self.units,
            "statuses": dict(self.statuses),
            "reasons": dict(self.reasons),
            "recovery": {
                family: {str(d): cell.to_json() for d, cell in sorted(cells.items())}
                for family, cells in self.recovery.items()
            },
            "recovery_by_depth": {str(d): c.to_json() for d, c in sorted(self.recovery_by_depth.items())},
            "recovery_by_family": {f: c.to_json() for f, c in self.recovery_by_family.items()},
            "content": {str(d): c.to_json() for d, c in sorted(self.content.items())},
        }


def build_report(records: Iterable[UnitRecord]) -> FaultReport:
    """Count ``records`` (one per unit) into a :class:`FaultReport`."""
    report = FaultReport()
    statuses: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    order: dict[str, int] = {f: i for i, f in enumerate(ALL_FAMILIES)}
    for r in records:
        report.units += 1
        statuses[r.status] += 1
        if r.reason_code:
            reasons[r.reason_code] += 1
        depth = r.requested_hop
        if r.family == "content_corruption" and r.status in ("done", "skipped"):
            content = report.content.setdefault(depth, ContentCell())
            if r.status == "skipped":
                content.skipped += 1
            elif r.content_outcome is not None:
                content.n += 1
                setattr(content, r.content_outcome, getattr(content, r.content_outcome) + 1)
                content.contaminated += int(bool(r.query_contamination))
        if r.status != "done":
            continue
        recovered = int(r.outcome == "recovered")
        for cell in (
            report.recovery.setdefault(r.family, {}).setdefault(depth, RecoveryCell()),
            report.recovery_by_depth.setdefault(depth, RecoveryCell()),
            report.recovery_by_family.setdefault(r.family, RecoveryCell()),
        ):
            cell.n += 1
            cell.recovered += recovered
    report.statuses = dict(statuses)
    report.reasons = dict(reasons)
    report.recovery = {f: report.recovery[f] for f in sorted(report.recovery, key=lambda f: order.get(f, 99))}
    report.recovery_by_family = {
        f: report.recovery_by_family[f]
        for f in sorted(report.recovery_by_family, key=lambda f: order.get(f, 99))
    }
    return report


def _fmt(cell: RecoveryCell | None) -> str:
    if cell is None or not cell.n:
        return "-"
    return f"{cell.rate:.2f} ({cell.recovered}/{cell.n})"


def recovery_table(report: FaultReport, title: str = "Recovery by depth and family") -> Table:
    """Rows: families (and all); columns: depths (and all). Cells: rate (recovered/forked)."""
    table = Table(title=title)
    table.add_column("family")
    for d in report.depths:
        table.add_column(f"hop {d}", justify="right")
    table.add_column("all", justify="right")
    for family, cells in report.recovery.items():
        table.add_row(
            family, *(_fmt(cells.get(d)) for d in report.depths), _fmt(report.recovery_by_family[family])
        )
    pooled = RecoveryCell(
        n=sum(c.n for c in report.recovery_by_depth.values()),
        recovered=sum(c.recovered for c in report.recovery_by_depth.values()),
    )
    table.add_row(
        "all", *(_fmt(report.recovery_by_depth.get(d)) for d in report.depths), _fmt(pooled), style="bold"
    )
    return table


def content_table(report: FaultReport, title: str = "Content corruption outcomes by depth") -> Table:
    """Rows: depths. Columns: forked units, absorbed / resisted / derailed rates (counts),
    query contamination count, skipped (not certifiable)."""
    table = Table(title=title)
    for name in ("depth", "n", "absorbed", "resisted", "derailed", "contaminated", "skipped"):
        table.add_column(name, justify="right")
    for depth, cell in sorted(report.content.items()):
        rates = cell.rates()
        table.add_row(
            str(depth),
            str(cell.n),
            *(
                f"{rates[k]:.2f} ({getattr(cell, k)})" if rates[k] is not None else "-"
                for k in ("absorbed", "resisted", "derailed")
            ),
            f"{cell.contaminated} of {cell.n}",
            str(cell.skipped),
        )
    return table


def print_report(report: FaultReport, console: Console | None = None, *, title: str | None = None) -> None:
    """Print the report's tables (recovery; content outcomes when there are content units)."""
    console = console or Console()
    if title:
        console.print(f"[bold]{title}[/]")
    console.print(
        "units: "
        + ", ".join(f"{k} {v}" for k, v in sorted(report.statuses.items()))
        + (" | " + ", ".join(f"{k} {v}" for k, v in sorted(report.reasons.items())) if report.reasons else "")
    )
    if report.recovery:
        console.print(recovery_table(report))
    if report.content:
        console.print(content_table(report))


def markdown_tables(report: FaultReport) -> str:
    """The two tables as Markdown (for notes and the README)."""
    lines = ["| family | " + " | ".join(f"hop {d}" for d in report.depths) + " | all |"]
    lines.append("|---" * (len(report.depths) + 2) + "|")
    for family, cells in report.recovery.items():
        row = [_fmt(cells.get(d)) for d in report.depths] + [_fmt(report.recovery_by_family[family])]
        lines.append(f"| {family} | " + " | ".join(row) + " |")
    if report.content:
        lines += ["", "| depth | n | absorbed | resisted | derailed | query contamination | skipped |"]
        lines.append("|---" * 7 + "|")
        for depth, cell in sorted(report.content.items()):
            rates = cell.rates()
            shown = [
                f"{rates[k]:.2f} ({getattr(cell, k)})" if rates[k] is not None else "-"
                for k in ("absorbed", "resisted", "derailed")
            ]
            lines.append(
                f"| {depth} | {cell.n} | "
                + " | ".join(shown)
                + f" | {cell.contaminated} of {cell.n} | {cell.skipped} |"
            )
    return "\n".join(lines)

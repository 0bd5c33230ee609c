"""Timeout budgets per group of runs, with the risk each really carries.

The number is made in `firedup.tables.risk` (an upper prediction bound for the next run: a
log-normal Student-t bound over the runs, never below the slowest run plus a minimum margin;
the distribution-free risk 1/(n+1) beside it); this module groups the runs as `compare` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from firedup.tables.compare import Group, Grouping, group_runs
from firedup.tables.frames import Runs
from firedup.tables.risk import (
    Budget,
    LognormalFit,
    PredictionBound,
    budget_for,
    prediction_bound,
    round_up,
    runs_needed,
)


@dataclass
class BudgetReport:
    grouping: Grouping
    budgets: list[Budget]

    def as_json(self) -> dict[str, Any]:
        """The budgets as data; `firedup.render.budget.budget_json` adds the snippets."""
        g = self.grouping
        return {"by": g.by, "by_auto": g.by_auto, "population": g.population,
                "groups": [b.as_json() for b in self.budgets],
                "left_out": [lo.as_json() for lo in g.left_out], "notes": g.notes}


def _engine_and_port(runs: Runs, group: Group) -> tuple[str | None, int | None]:
    import polars as pl

    frame = runs.runs.filter(pl.col("run_id").is_in(pl.Series(group.run_ids, dtype=pl.Utf8).implode()))
    engines = frame["engine"].drop_nulls().unique().to_list()
    ports = set()
    for url in frame["health_url"].drop_nulls().to_list():
        tail = str(url).rsplit(":", 1)[-1].split("/")[0]
        if tail.isdigit():
            ports.add(int(tail))
    return (engines[0] if len(engines) == 1 else None), (ports.pop() if len(ports) == 1 else None)


def budgets(runs: Runs, by: Sequence[str] | None = None, risk: float = 0.01) -> BudgetReport:
    """A budget per group of runs (grouped as `compare` does)."""
    grouping = group_runs(runs, by)
    out = []
    for group in grouping.groups:
        b = budget_for(group.ready_seconds, risk, group.key, group.label)
        b.engine, b.port = _engine_and_port(runs, group) if group.run_ids else (None, None)
        if b.engine is None and grouping.population.get("engine"):
            b.engine = str(grouping.population["engine"])
        out.append(b)
    return BudgetReport(grouping, out)


__all__ = ["Budget", "BudgetReport", "LognormalFit", "PredictionBound", "budget_for", "budgets",
           "prediction_bound", "round_up", "runs_needed"]

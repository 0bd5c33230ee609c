"""Timeout budgets from observed startups, with the risk said honestly, and snippets to paste.

Two statements per group of runs, never blended into one number without saying which:

* Distribution-free (a fact about order statistics, whatever the distribution): with n
  exchangeable runs, a new run is slower than all n with probability 1/(n+1). So a risk r
  needs n >= 1/r - 1 runs before "the slowest run seen" is itself a budget with that risk.
* A model: a log-normal fitted to the times (mu, sigma = mean and sample standard
  deviation of ln t) gives the (1 - r) quantile exp(mu + z_(1-r) * sigma). It is an
  assumption (start-up times are positive and right-skewed, which log-normal captures),
  not a measurement, and with few runs it is an extrapolation; it is labelled as such.

The budget is the larger of the model's quantile and the slowest run seen: it is never
below a run that actually happened. With fewer than 3 runs no spread can be estimated;
the budget is then the slowest run times a rule-of-thumb margin, and says so.
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
    budget_for,
    lognormal_quantile,
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


__all__ = ["Budget", "BudgetReport", "LognormalFit", "budget_for", "budgets", "lognormal_quantile",
           "round_up", "runs_needed"]

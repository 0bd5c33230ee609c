"""Timeout budgets per group of runs, with the risk each really carries.

The number is made in `firedup.tables.risk` (an upper prediction bound for the next run: a
log-normal Student-t bound over the runs, never below the slowest run plus a minimum margin;
the distribution-free risk 1/(n+1) beside it); this module groups the runs as `compare` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from firedup.core.health import VersionGuess, combine_guesses
from firedup.formats.base import Format
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
from firedup.tables.timeouts import LayerTimeouts, layer_timeouts


@dataclass
class BudgetReport:
    grouping: Grouping
    budgets: list[Budget]
    timeouts: list[LayerTimeouts | None] = field(default_factory=list)  # per budget: every layer's timeout

    def as_json(self) -> dict[str, Any]:
        """The budgets as data; `firedup.render.budget.budget_json` adds the snippets."""
        g = self.grouping
        groups = []
        for i, b in enumerate(self.budgets):
            item = b.as_json()
            t = self.timeouts[i] if i < len(self.timeouts) else None
            item["version"] = ({"low": b.version.low, "high": b.version.high, "evidence": list(b.version.evidence)}
                               if b.version is not None else None)
            item["timeouts"] = t.as_json() if t is not None else None
            groups.append(item)
        return {"by": g.by, "by_auto": g.by_auto, "population": g.population, "groups": groups,
                "left_out": [lo.as_json() for lo in g.left_out], "notes": g.notes}


def _engine_and_port(runs: Runs, group: Group) -> tuple[str | None, int | None]:
    import polars as pl

    frame = runs.runs.filter(pl.col("run_id").is_in(pl.Series(group.run_ids, dtype=pl.Utf8).implode()))
    engines = frame["engine"].drop_nulls().unique().to_list()
    ports = set()
    for url in frame["health_url"].drop_nulls().to_list():
        tail = str(url).rsplit(":", 1)[-1].split("/")[0]
        if tail.isascii() and tail.isdigit() and 0 < int(tail[:6]) <= 65535:  # a store's row from before URLs were checked
            ports.add(int(tail))
    return (engines[0] if len(engines) == 1 else None), (ports.pop() if len(ports) == 1 else None)


def version_of(runs: Runs, run_ids: Sequence[str], fmt: Format | None) -> VersionGuess | None:
    """The engine versions these runs may be, from the markers their lines show (the union)."""
    import polars as pl

    if fmt is None or fmt.version_guess is None or not run_ids:
        return None
    ids = pl.Series(list(run_ids), dtype=pl.Utf8).implode()
    milestones = runs.milestones.filter(pl.col("run_id").is_in(ids))
    by_run: dict[str, list[Any]] = {}
    for row in milestones.select("run_id", "name", "text", "fields_json").iter_rows(named=True):
        by_run.setdefault(row["run_id"], []).append(SimpleNamespace(
            name=row["name"], text=row["text"] or "", fields=json.loads(row["fields_json"] or "{}")))
    guesses = []
    for row in runs.runs.filter(pl.col("run_id").is_in(ids)).select(
            "run_id", "config_json", "config_complete").iter_rows(named=True):
        config = json.loads(row["config_json"] or "{}")
        guesses.append(fmt.version_guess(by_run.get(row["run_id"], []), config, bool(row["config_complete"])))
    return combine_guesses(guesses)


def mixed_cache_notes(runs: Runs, grouping: Grouping) -> list[str]:
    """Groups whose history holds both cold and warm starts (`frames.cache_start`): one budget
    over both is too tight for a cold start or too loose for a warm one, so say how to split."""
    import polars as pl

    notes = []
    for group in grouping.groups:
        if not group.run_ids or "cache_start" not in runs.runs.columns:
            continue
        states = runs.runs.filter(pl.col("run_id").is_in(pl.Series(group.run_ids, dtype=pl.Utf8).implode()))[
            "cache_start"].to_list()
        cold, warm = states.count("cold"), states.count("warm")
        if cold and warm:
            by = ", ".join([*grouping.by, "cache_start"])
            notes.append(f"{group.label}: {cold} cold-cache and {warm} warm-cache starts of this config; "
                         f"--by {by} gives cold and warm starts a budget each")
    return notes


def budgets(runs: Runs, by: Sequence[str] | None = None, risk: float = 0.01) -> BudgetReport:
    """A budget per group of runs (grouped as `compare` does), with every layer's timeout."""
    from firedup.core.health import ready_probe
    from firedup.formats import all_formats

    grouping = group_runs(runs, by)
    if "cache_start" not in grouping.by:
        grouping.notes.extend(mixed_cache_notes(runs, grouping))
    out = []
    timeouts: list[LayerTimeouts | None] = []
    for group in grouping.groups:
        b = budget_for(group.ready_seconds, risk, group.key, group.label)
        b.engine, b.port = _engine_and_port(runs, group) if group.run_ids else (None, None)
        if b.engine is None and grouping.population.get("engine"):
            b.engine = str(grouping.population["engine"])
        fmt = all_formats().get(b.engine or "")
        b.version = version_of(runs, group.run_ids, fmt)
        probe = ready_probe(fmt.readiness, b.version) if fmt is not None else None
        out.append(b)
        timeouts.append(layer_timeouts(runs, b, group.run_ids, fmt, probe))
    return BudgetReport(grouping, out, timeouts)


__all__ = [
    "Budget",
    "BudgetReport",
    "LayerTimeouts",
    "LognormalFit",
    "PredictionBound",
    "budget_for",
    "budgets",
    "mixed_cache_notes",
    "prediction_bound",
    "round_up",
    "runs_needed",
    "version_of",
]

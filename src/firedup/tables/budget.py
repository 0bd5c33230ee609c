"""Timeout budgets per group of runs, with the risk each really carries.

The number is made in `firedup.tables.risk` (an upper prediction bound for the next run: a
log-normal Student-t bound over the runs, never below the slowest run plus a minimum margin;
the distribution-free risk 1/(n+1) beside it); this module groups the runs as `compare` does.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from firedup.core.health import VersionGuess, combine_guesses
from firedup.core.units import fmt_duration
from firedup.formats.base import Format
from firedup.tables.coldwarm import ColdWarm, key_changes, split
from firedup.tables.frames import Runs
from firedup.tables.grouping import Group, Grouping, group_runs
from firedup.tables.risk import Budget, budget_for
from firedup.tables.timeouts import LayerTimeouts, layer_timeouts


@dataclass
class Clock:
    """Where a group's times count from, and how each run's launch was known (docs/launch.md)."""

    kinds: dict[str, int]  # measured | log | given | estimated | first line -> runs
    text: str  # one line of the budget's derivation
    slowest_first_line: float | None  # the slowest run by the log's own clock (first line -> ready)

    def as_json(self) -> dict[str, Any]:
        return {"from": "launch", "runs_by_launch_source": self.kinds, "basis": self.text,
                "slowest_first_line_seconds": None if self.slowest_first_line is None
                else round(self.slowest_first_line, 3)}


@dataclass
class Side:
    """The cold or the warm starts of a group split by `coldwarm.split`: their own budget."""

    kind: str  # "cold" | "warm"
    budget: Budget
    run_ids: list[str]

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "budget_seconds": self.budget.budget_seconds, "n": self.budget.n,
                "method_label": self.budget.method_label, "risk_label": self.budget.risk_label,
                "slowest_seconds": self.budget.slowest, "runs": self.run_ids}


@dataclass
class BudgetReport:
    grouping: Grouping
    budgets: list[Budget]
    timeouts: list[LayerTimeouts | None] = field(default_factory=list)  # per budget: every layer's timeout
    clocks: list[Clock | None] = field(default_factory=list)  # per budget: where its times count from
    # per budget: its cold and warm starts apart (None: not both there); the budget is the cold side's
    splits: list[tuple[ColdWarm, Side, Side] | None] = field(default_factory=list)

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
            clock = self.clocks[i] if i < len(self.clocks) else None
            item["clock"] = clock.as_json() if clock is not None else None
            split_ = self.splits[i] if i < len(self.splits) else None
            item["cold_warm"] = ({**split_[0].as_json(), "cold_budget": split_[1].as_json(),
                                  "warm_budget": split_[2].as_json()} if split_ is not None else None)
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

    if fmt is None or fmt.serving.version_guess is None or not run_ids:
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
        guesses.append(fmt.serving.version_guess(by_run.get(row["run_id"], []), config, bool(row["config_complete"])))
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


def group_budget(runs: Runs, run_ids: Sequence[str], launch_seconds: Sequence[float], launch_margin: float,
                 risk: float, key: dict[str, Any] | None = None, label: str = "all runs", cold_warm: bool = True,
                 ) -> tuple[Budget, tuple[ColdWarm, Side, Side] | None]:
    """The budget of one group's timed runs (each one's time from launch; the group's launch margin),
    as `firedup budget` states it: where they hold cold and warm starts (`coldwarm.split`), never
    pooled: the cold starts' budget, the warm one beside it. `check` takes its limit on time to ready
    from here too, so a config's limit and its budget are one number."""
    apart = split(runs, list(run_ids)) if cold_warm else None
    if apart is None:
        return budget_for(list(launch_seconds), risk, key, label, launch_margin), None
    by_id = dict(zip(run_ids, launch_seconds, strict=True))
    cold = Side("cold", budget_for([by_id[r] for r in apart.cold], risk, key, label, launch_margin), apart.cold)
    warm = Side("warm", budget_for([by_id[r] for r in apart.warm], risk, key, label, launch_margin), apart.warm)
    b = cold.budget
    b.side = (f"The budget of the {_n(len(apart.cold), 'cold start')} of this configuration; its "
              f"{_n(len(apart.warm), 'warm start')} need {fmt_duration(warm.budget.budget_seconds)} "
              f"({warm.budget.method_label}).")
    return b, (apart, cold, warm)


def budgets(runs: Runs, by: Sequence[str] | None = None, risk: float = 0.01) -> BudgetReport:
    """A budget per group of runs (grouped as `compare` does), with every layer's timeout."""
    from firedup.core.health import ready_probe
    from firedup.formats import all_formats

    grouping = group_runs(runs, by)
    out = []
    timeouts: list[LayerTimeouts | None] = []
    clocks: list[Clock | None] = []
    splits: list[tuple[ColdWarm, Side, Side] | None] = []
    for group in grouping.groups:
        grouping.notes.extend(key_changes(runs, group.run_ids, group.label))
        b, apart = group_budget(runs, group.run_ids, group.launch_seconds, group.launch_margin, risk,
                                group.key, group.label, cold_warm="cache_start" not in grouping.by)
        splits.append(apart)
        clock = clock_of(runs, group) if group.run_ids else None
        b.clock = clock.text if clock is not None else None
        clocks.append(clock)
        b.engine, b.port = _engine_and_port(runs, group) if group.run_ids else (None, None)
        if b.engine is None and grouping.population.get("engine"):
            b.engine = str(grouping.population["engine"])
        fmt = all_formats().get(b.engine or "")
        b.version = version_of(runs, group.run_ids, fmt)
        probe = ready_probe(fmt.serving.readiness, b.version) if fmt is not None else None
        out.append(b)
        timeouts.append(layer_timeouts(runs, b, group.run_ids, fmt, probe))
    return BudgetReport(grouping, out, timeouts, clocks, splits)


def _allowance_phrase(row: dict[str, Any]) -> str:
    """`first line + 21 s, typical of the usual 16-37 s (docs/launch.md)` for an estimated launch:
    what every view adds (`launch.seconds_before_first_line`)."""
    gap = row["launch_gap"]
    high = row["launch_high"] if row["launch_high"] is not None else gap
    low = row["launch_low"] if row["launch_low"] is not None else high
    where = "the history's measured launches" if "measured" in (row["launch_basis"] or "") else "docs/launch.md"
    return f"first line + {gap:.0f} s, typical of the usual {low:.0f}-{high:.0f} s ({where})"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def clock_of(runs: Runs, group: Group) -> Clock:
    """How a group's times count from launch: a line of the budget's derivation."""
    import polars as pl

    kinds = Counter(group.launch_kinds)
    parts = [f"{kinds[k]} {k}" for k in ("measured", "log", "given") if kinds[k]]
    estimated = kinds["estimated"]
    if estimated:
        ids = [r for r, k in zip(group.run_ids, group.launch_kinds, strict=True) if k == "estimated"]
        frame = runs.runs.filter(pl.col("run_id").is_in(pl.Series(ids, dtype=pl.Utf8).implode()))
        allowances = Counter(_allowance_phrase(row) for row in frame.select(
            "launch_high", "launch_low", "launch_gap", "launch_basis").to_dicts())
        (phrase, _), *others = allowances.most_common()
        more = f" (and {len(others)} other allowance{'s' if len(others) > 1 else ''})" if others else ""
        parts.append(f"{estimated} estimated: {phrase}{more}")
    if kinds["first line"]:
        parts.append(f"{kinds['first line']} with no launch known, counted from the first line (short by the "
                     "imports before it)")
    names = {"measured": "measured (wait --pid)", "log": "stated by a line", "given": "given (--launched-at)"}
    text = "counted from launch: " + "; ".join(
        (f"{p.split(' ', 1)[0]} {names[p.split(' ', 1)[1]]}" if p.split(" ", 1)[1] in names else p) for p in parts)
    if group.margin_basis is not None:  # the margin from the measured launches at hand; the times stay each run's
        text += (f"; {group.margin_basis}: the budget adds {group.launch_margin:.0f} s in case a launch came that "
                 "much earlier than counted" if group.launch_margin >= 0.5 else
                 f"; {group.margin_basis}: none longer than the estimate, so the budget adds no launch margin")
    elif group.launch_margin >= 0.5:
        text += (f"; the budget adds {group.launch_margin:.0f} s in case a launch came that much earlier "
                 "(the top of the range)")
    return Clock(dict(kinds), text, max(group.ready_seconds) if group.ready_seconds else None)


__all__ = ["BudgetReport", "Clock", "Side", "budgets", "clock_of", "group_budget", "mixed_cache_notes", "version_of"]

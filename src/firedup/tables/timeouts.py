"""Every layer's timeout for one group of runs, from the same measured phases and the same rule.

A start-up passes several clocks at once: the orchestrator's (Kubernetes `startupProbe`,
docker compose `start_period`), the engine's own (a watchdog, a ready timeout, a collective
timeout), a router's wait for its workers, and the CI step's. Each gets the budget rule of
`firedup.tables.risk` over the span it has to outlast, measured per run (the whole start-up,
one phase, or the longest wait of a rank for the others). The runs' own values of those clocks
are read back from their args where the log shows them, and every one that contradicts the
measured start-up is flagged. The clocks themselves are data of the format (`Format.timeouts.clocks`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from firedup.core.health import ReadyProbe
from firedup.core.units import fmt_duration
from firedup.formats.base import EngineClock, Format
from firedup.tables.frames import Runs
from firedup.tables.risk import Budget, budget_for, round_up

CI_MARGIN = 1.25  # a CI step also checks out, pulls and tears down: 25 % over the start-up budget


@dataclass
class ClockAdvice:
    clock: EngineClock
    measured: list[float]  # per run: the span the clock must outlast
    needed: int | None  # seconds: the budget rule over `measured`
    run_values: dict[float, int] = field(default_factory=dict)  # the runs' own setting -> how many runs
    flags: list[str] = field(default_factory=list)  # contradictions with the measured start-up

    @property
    def current(self) -> float | None:
        """What the runs ran with: the smallest value their args show, else the default."""
        return min(self.run_values) if self.run_values else self.clock.default

    @property
    def covers_label(self) -> str:
        covers = self.clock.covers
        if covers == "ready":
            return "first line to ready"
        if covers.startswith("phase:"):
            return f"the {covers.split(':', 1)[1]} phase"
        return "the longest a rank waits for the others"

    @property
    def setting(self) -> str | None:
        """What to set, when what the runs had is not enough (None: keep it)."""
        if self.needed is None:
            return None
        current = self.current
        if current is not None and current >= self.needed:
            return None
        return self.clock.how.format(seconds=self.needed)

    def line(self) -> str:
        """One line of text: the clock, what it must outlast, and what to do."""
        longest = fmt_duration(max(self.measured)) if self.measured else "not measured"
        head = f"{self.clock.name} ({self.clock.component}): must outlast {self.covers_label} (slowest {longest})"
        if self.needed is None:
            return head + ": no run measures it"
        current = self.current
        where = "in the runs' args" if self.run_values else "default"
        now = f"{current:g} s ({where})" if current is not None else "its default (not known to firedup)"
        verdict = f"set {self.setting}" if self.setting else "enough"
        return f"{head}; needs {self.needed} s, has {now}: {verdict}"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.clock.name, "component": self.clock.component, "covers": self.clock.covers,
                "measured_max_seconds": round(max(self.measured), 3) if self.measured else None,
                "needed_seconds": self.needed, "default_seconds": self.clock.default,
                "current_seconds": self.current, "setting": self.setting,
                "run_values": {f"{k:g}": v for k, v in self.run_values.items()},
                "flags": self.flags, "what": self.clock.what}


@dataclass
class LayerTimeouts:
    """The timeouts of one budget group, every layer at once."""

    budget: Budget
    probe: ReadyProbe | None
    period: int  # startupProbe periodSeconds
    threshold: int  # startupProbe failureThreshold
    readiness_timeout: int  # readinessProbe.timeoutSeconds, above one probe's latency
    ci_minutes: int  # a CI step's timeout (GitHub Actions timeout-minutes)
    clocks: list[ClockAdvice] = field(default_factory=list)

    @property
    def flags(self) -> list[str]:
        return [flag for c in self.clocks for flag in c.flags]

    def as_json(self) -> dict[str, Any]:
        return {
            "startup_probe": {"periodSeconds": self.period, "failureThreshold": self.threshold,
                              "allowance_seconds": self.period * self.threshold,
                              "path": self.probe.route if self.probe else None},
            "readiness_probe": {"timeoutSeconds": self.readiness_timeout,
                                "probe_seconds": self.probe.probe_seconds if self.probe else None},
            "compose_start_period_seconds": self.budget.budget_seconds,
            "ci_timeout_minutes": self.ci_minutes,
            "engine_clocks": [c.as_json() for c in self.clocks],
            "flags": self.flags,
        }


def probe_period(budget_seconds: int) -> int:
    """Short budgets poll often so fast starts are seen quickly; 10 s is the Kubernetes default."""
    return 5 if budget_seconds <= 300 else 10


def _measured(runs: Runs, run_ids: list[str], covers: str) -> list[float]:
    if not run_ids:
        return []
    ids = pl.Series(run_ids, dtype=pl.Utf8).implode()
    if covers == "ready":
        frame = runs.runs.filter(pl.col("run_id").is_in(ids))
        return [float(v) for v in frame["ready_seconds"].drop_nulls().to_list()]
    phases = runs.phases.filter(pl.col("run_id").is_in(ids))
    out: list[float] = []
    if covers.startswith("phase:"):
        name = covers.split(":", 1)[1]
        per_run = phases.filter((pl.col("phase") == name) & (pl.col("scope") == "run"))
        sums = per_run.group_by("run_id").agg(pl.col("seconds").sum())
        out = [float(v) for v in sums["seconds"].drop_nulls().to_list()]
        return out
    # the longest wait of a rank for the others: how far apart the ranks end a phase, and the
    # distributed init itself (every rank waits there until all have joined)
    ranked = phases.filter((pl.col("scope") == "rank") & pl.col("end").is_not_null())
    for run_id in run_ids:
        mine = ranked.filter(pl.col("run_id") == run_id)
        waits = [0.0]
        for (_phase,), part in mine.group_by(["phase"]):
            ends = part["end"].to_list()
            if len(ends) > 1:
                waits.append((max(ends) - min(ends)).total_seconds())
        init = mine.filter(pl.col("phase") == "dist_init")["seconds"].drop_nulls().to_list()
        waits.extend(float(v) for v in init)
        out.append(max(waits))
    return out


def _run_values(runs: Runs, run_ids: list[str], key: str | None) -> dict[float, int]:
    if key is None or not run_ids:
        return {}
    frame = runs.runs.filter(pl.col("run_id").is_in(pl.Series(run_ids, dtype=pl.Utf8).implode()))
    values: dict[float, int] = {}
    for text in frame["config_json"].to_list():
        value = json.loads(text or "{}").get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[float(value)] = values.get(float(value), 0) + 1
    return values


def advise_clock(clock: EngineClock, measured: list[float], risk: float,
                 run_values: dict[float, int]) -> ClockAdvice:
    """The budget rule over the clock's span, and the flags where a setting contradicts it."""
    found = budget_for(measured, risk) if measured else None
    needed = found.budget_seconds if found is not None else None
    advice = ClockAdvice(clock, measured, needed, run_values)
    if not measured or needed is None:
        return advice
    longest = max(measured)
    for value in sorted(run_values):
        if value < longest:
            advice.flags.append(f"{clock.name} {value:g} s in the runs' args is below the measured "
                                f"{advice.covers_label} ({fmt_duration(longest)}): {clock.what}")
        elif value < needed:
            advice.flags.append(f"{clock.name} {value:g} s in the runs' args leaves less than the budget for "
                                f"{advice.covers_label} ({needed} s): set {advice.setting}")
    if not run_values and clock.default is not None and clock.default < needed:
        seen = "below" if clock.default < longest else "close to"
        advice.flags.append(f"{clock.name} defaults to {clock.default:g} s, {seen} the measured "
                            f"{advice.covers_label} ({fmt_duration(longest)}): set {advice.setting}")
    return advice


def layer_timeouts(runs: Runs, budget: Budget, run_ids: list[str], fmt: Format | None,
                   probe: ReadyProbe | None) -> LayerTimeouts | None:
    """Every layer's timeout for a budget group; None when the group has no budget."""
    if budget.budget_seconds is None:
        return None
    seconds = budget.budget_seconds
    period = probe_period(seconds)
    threshold = math.ceil(seconds / period)
    probe_s = probe.probe_seconds if probe is not None else 1.0
    readiness_timeout = max(probe.timeout_seconds if probe is not None else 5, math.ceil(probe_s * 3) + 1)
    ci_minutes = math.ceil(round_up(seconds * CI_MARGIN) / 60)
    out = LayerTimeouts(budget, probe, period, threshold, readiness_timeout, ci_minutes)
    for clock in fmt.timeouts.clocks if fmt is not None else ():
        out.clocks.append(advise_clock(clock, _measured(runs, run_ids, clock.covers), budget.risk,
                                       _run_values(runs, run_ids, clock.config_key)))
    return out


__all__ = ["CI_MARGIN", "ClockAdvice", "LayerTimeouts", "advise_clock", "layer_timeouts", "probe_period"]

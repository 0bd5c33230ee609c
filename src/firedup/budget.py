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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev
from typing import Any

from firedup.compare import Group, Grouping, group_runs, left_out_lines
from firedup.render import fmt_duration
from firedup.tables import Runs

MIN_RUNS_FOR_MODEL = 3
RULE_OF_THUMB = 1.5  # margin over the slowest run when there is no spread to model


@dataclass(frozen=True)
class LognormalFit:
    mu: float
    sigma: float
    quantile: float  # seconds at 1 - risk

    def as_json(self) -> dict[str, Any]:
        return {"name": "lognormal", "mu": round(self.mu, 6), "sigma": round(self.sigma, 6),
                "quantile_seconds": round(self.quantile, 3)}


def lognormal_quantile(times: Sequence[float], risk: float) -> LognormalFit:
    """Plug-in log-normal fit (sample sd, n - 1) and its (1 - risk) quantile."""
    logs = [math.log(t) for t in times]
    mu, sigma = fmean(logs), stdev(logs)
    z = NormalDist().inv_cdf(1.0 - risk)
    return LognormalFit(mu, sigma, math.exp(mu + z * sigma))


def runs_needed(risk: float) -> int:
    """Smallest n with 1/(n+1) <= risk."""
    return max(1, math.ceil(1.0 / risk - 1.0 - 1e-9))


def round_up(seconds: float) -> int:
    """A value to paste: whole seconds, up to the next 10 s past a minute."""
    if seconds <= 60:
        return math.ceil(seconds)
    return int(math.ceil(seconds / 10.0) * 10)


@dataclass
class Budget:
    key: dict[str, Any]
    label: str
    n: int
    risk: float
    budget_seconds: int | None  # rounded up, ready to paste
    raw_seconds: float | None
    method: str  # "no data" | "single run" | "rule of thumb" | "lognormal model" | "slowest observed"
    slowest: float | None
    distribution_free_risk: float | None  # 1/(n+1)
    needed: int  # runs the asked risk needs, distribution-free
    model: LognormalFit | None
    statement: str
    engine: str | None = None
    port: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "label": self.label, "n": self.n, "budget_seconds": self.budget_seconds,
            "risk": self.risk, "method": self.method,
            "raw_seconds": None if self.raw_seconds is None else round(self.raw_seconds, 3),
            "slowest_seconds": self.slowest,
            "distribution_free_risk": None if self.distribution_free_risk is None
            else round(self.distribution_free_risk, 6),
            "runs_needed_for_risk": self.needed,
            "model": self.model.as_json() if self.model else None,
            "statement": self.statement, "engine": self.engine,
        }


def budget_for(times: Sequence[float], risk: float, key: dict[str, Any] | None = None,
               label: str = "all runs") -> Budget:
    """The recommended timeout for one group's times to ready (seconds)."""
    if not 0.0 < risk < 1.0:
        raise ValueError(f"risk must be between 0 and 1 (exclusive), not {risk}")
    key = key or {}
    n = len(times)
    needed = runs_needed(risk)
    if n == 0:
        return Budget(key, label, 0, risk, None, None, "no data", None, None, needed, None,
                      "no run reached ready: there is no data to derive a budget from")
    slowest = max(times)
    df_risk = 1.0 / (n + 1)
    chance = (f"a new run is slower than the slowest of these {n} with chance 1/{n + 1} ({df_risk:.0%}); "
              f"a risk of {risk:.2%} needs {needed} runs (distribution-free)")
    if n < MIN_RUNS_FOR_MODEL:
        raw = slowest * RULE_OF_THUMB
        method = "single run" if n == 1 else "rule of thumb"
        what = "a single run" if n == 1 else f"only {n} runs"
        statement = (f"{what} ({fmt_duration(slowest)} slowest): nothing is known about the spread, so the "
                     f"budget is {RULE_OF_THUMB:g} x the slowest, a rule of thumb, not a statistic; {chance}")
        return Budget(key, label, n, risk, round_up(raw), raw, method, slowest, df_risk, needed, None, statement)
    fit = lognormal_quantile(times, risk)
    quantile = fit.quantile
    pct = f"p{_pct(1 - risk)}"
    model_text = (f"model (log-normal fit, mu={fit.mu:.3f}, sigma={fit.sigma:.3f}; an assumption, not a fact"
                  + (f", extrapolated from {n} runs" if n < needed else "") + f"): {pct} = {fmt_duration(quantile)}")
    if quantile >= slowest:
        raw, method = quantile, "lognormal model"
        why = f"the model's {pct}, above the slowest run seen ({fmt_duration(slowest)})"
    else:
        raw, method = slowest, "slowest observed"
        why = f"the slowest run seen, since the model's {pct} ({fmt_duration(quantile)}) is below it"
    statement = f"{n} runs, slowest {fmt_duration(slowest)}; {chance}; {model_text}; budget = {why}"
    return Budget(key, label, n, risk, round_up(raw), raw, method, slowest, df_risk, needed, fit, statement)


def _pct(q: float) -> str:
    text = f"{q * 100:.2f}".rstrip("0").rstrip(".")
    return text


@dataclass
class BudgetReport:
    grouping: Grouping
    budgets: list[Budget]

    def as_json(self) -> dict[str, Any]:
        from firedup.snippets import snippets_for

        g = self.grouping
        groups = []
        for b in self.budgets:
            item = b.as_json()
            item["snippets"] = snippets_for(b) if b.budget_seconds is not None else {}
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


def budget_text(report: BudgetReport, snippets: Sequence[str] = ("bash", "kubernetes", "compose")) -> str:
    from firedup.snippets import snippets_for

    g = report.grouping
    if not g.groups:
        return "\n".join(["no server startup found in the input",
                          *(f"  {lo.source}: {lo.reason}" for lo in g.left_out)])
    lines: list[str] = []
    if g.population:
        lines.append("runs of " + ", ".join(f"{k}={v}" for k, v in g.population.items()))
    lines.extend(f"note: {n}" for n in g.notes)
    for b in report.budgets:
        lines.append("")
        if b.budget_seconds is None:
            lines.append(f"{b.label}: no budget ({b.statement})")
            continue
        lines.append(f"{b.label}: budget {fmt_duration(b.budget_seconds)} ({b.budget_seconds} s), "
                     f"method: {b.method}, asked risk {b.risk:.2%}")
        lines.append(f"  {b.statement}")
    lines.extend(left_out_lines(g.left_out, "left out"))
    for b in report.budgets:
        if b.budget_seconds is None or not snippets:
            continue
        texts = snippets_for(b)
        for kind in snippets:
            lines.append("")
            lines.append(f"# ---- {kind}: {b.label} ----")
            lines.append(texts[kind].rstrip("\n"))
    return "\n".join(lines)


__all__ = ["Budget", "BudgetReport", "LognormalFit", "budget_for", "budget_text", "budgets", "lognormal_quantile",
           "round_up", "runs_needed"]

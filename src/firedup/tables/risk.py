"""The arithmetic of a timeout budget, with no table library: `wait` uses it on its start path.

See `firedup.tables.budget` for the two statements (distribution-free and log-normal model) and
why the budget is never below the slowest run seen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev
from typing import Any

from firedup.core.units import fmt_duration
from firedup.errors import UsageError

MIN_RUNS_FOR_MODEL = 3
RULE_OF_THUMB = 1.5  # margin over the slowest run when there is no spread to model
# The smallest risk asked for: below it 1 - risk rounds to 1.0 in floating point, and no
# quantile exists (1e-9 is one timeout in a billion starts).
MIN_RISK = 1e-9
# A run timed at 0 s (its first and ready lines in the same second) took less than the log's
# clock can tell; it counts as this long, so the log-normal fit (logarithms) and the budget
# (at least 1 s, rounded up) stay defined.
MIN_SECONDS = 0.001


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
    if not MIN_RISK <= risk < 1.0:
        raise UsageError(f"risk must be between 0 and 1 (at least {MIN_RISK:g}, below 1), not {risk}")
    times = [max(t, MIN_SECONDS) for t in times if math.isfinite(t)]
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

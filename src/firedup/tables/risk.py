"""The arithmetic of a timeout budget, with no table library: `wait` uses it on its start path.

The budget is an upper prediction bound for the NEXT run's time to ready, and the larger of:

* the log-normal prediction bound at the asked risk r, accounting for how few runs there are:
  with y = ln t over n runs (mean ybar, sample sd s), the next y exceeds
  ybar + t_{1-r, n-1} * s * sqrt(1 + 1/n) with probability exactly r when times are
  log-normal (the Student-t prediction interval for one future observation of a normal
  sample, here of ln t: Hahn & Meeker, *Statistical Intervals*, Wiley 1991, chapter 4).
  The factor t * sqrt(1 + 1/n) falls with n (38.97 at n = 2, 8.04 at n = 3, 2.50 at n = 30 for r = 1 %), so fewer runs never give a
  smaller budget for the same spread;
* the slowest run plus a stated minimum margin (10 %): a budget is never
  below a run that happened, and never so close to it that a start a little slower restarts.

Too few runs for their spread (the bound past 10 x the slowest run): the budget is the slowest
run plus the margin, its risk unknown, the bound shown beside it; never a useless number.

Distribution-free, whatever the times' distribution (exchangeable runs): the next run is
slower than the slowest of n with probability 1/(n+1), so the budget's risk is at most
1/(n+1); once n >= 1/r - 1 that alone guarantees the asked risk, no model needed.

One run tells nothing about the spread: its budget is a rule of thumb (twice the run), said so,
with no risk attached. The Student-t quantile is computed exactly for the integer degrees of
freedom used here (Abramowitz & Stegun 26.7.3-4, inverted by bisection) rather than with scipy,
which would be a large dependency for one function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist, fmean, stdev
from typing import Any

from firedup.core.health import VersionGuess
from firedup.core.units import fmt_duration
from firedup.errors import UsageError

RULE_OF_THUMB = 2.0  # one run: twice it, a rule of thumb (no spread is known)
MIN_MARGIN = 0.10  # the budget is at least the slowest run plus 10 %
# A bound past this many times the slowest run says only that the runs are too few for their
# spread: no one would set such a timeout, so the budget is the slowest run plus the margin, its
# risk unknown, and the bound is shown beside it (never "24 h").
CAP_FACTOR = 10.0
# The smallest risk asked for: below it 1 - risk rounds to 1.0 in floating point and no
# quantile exists (1e-9 is one timeout in a billion starts). Checked at the boundary.
MIN_RISK = 1e-9
# A run timed at 0 s (its first and ready lines in the same second) took less than the log's
# clock can tell; it counts as this long, so a budget is never 0 s (it rounds up to 1 s).
MIN_SECONDS = 0.001

# method names (Budget.method)
NO_DATA = "no data"
CAPPED = "too few runs for this spread: slowest run + minimum margin"
THUMB = "rule of thumb"
BOUND = "log-normal prediction bound"
FLOOR = "slowest run + minimum margin"


# --- Student's t quantile -----------------------------------------------------------------------

def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer `df` (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    term = total = 1.0
    if df % 2:
        if df == 1:
            return 2.0 * theta / math.pi
        for k in range(1, (df - 3) // 2 + 1):
            term *= cos2 * (2 * k) / (2 * k + 1)
            total += term
        return 2.0 / math.pi * (theta + sin * math.cos(theta) * total)
    for k in range(1, (df - 2) // 2 + 1):
        term *= cos2 * (2 * k - 1) / (2 * k)
        total += term
    return sin * total


@lru_cache(maxsize=4096)
def student_t_quantile(p: float, df: int) -> float:
    """The p quantile of Student's t with `df` >= 1 degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"student_t_quantile needs 0 < p < 1 and df >= 1, not p={p}, df={df}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    z = NormalDist().inv_cdf(p)
    if df > 5000:  # Cornish-Fisher (A&S 26.7.5): within 1e-9 here, and the exact sum is long
        return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    target = 2.0 * p - 1.0
    lo, hi = 0.0, max(1.0, z)
    while _t_central(hi, df) < target:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _t_central(mid, df) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


# --- the bound -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PredictionBound:
    """The log-normal upper prediction bound for the next run: exp(mu + factor * sigma)."""

    mu: float  # mean of ln t
    sigma: float  # sample sd of ln t (n - 1)
    n: int
    t: float  # t_{1-r, n-1}
    factor: float  # t * sqrt(1 + 1/n)
    bound: float  # seconds

    def as_json(self) -> dict[str, Any]:
        return {"name": "lognormal-student-t", "mu": round(self.mu, 6), "sigma": round(self.sigma, 6),
                "n": self.n, "t_quantile": round(self.t, 6), "factor": round(self.factor, 6),
                "bound_seconds": round(self.bound, 3)}


# kept for callers of the old name
LognormalFit = PredictionBound


def prediction_bound(times: Sequence[float], risk: float) -> PredictionBound:
    """The (1 - risk) upper prediction bound of the next time under a log-normal model (n >= 2)."""
    n = len(times)
    if n < 2:
        raise ValueError("a prediction bound needs at least 2 runs")
    logs = [math.log(max(t, 1e-9)) for t in times]
    mu, sigma = fmean(logs), stdev(logs)
    t = student_t_quantile(1.0 - risk, n - 1)
    factor = t * math.sqrt(1.0 + 1.0 / n)
    return PredictionBound(mu, sigma, n, t, factor, math.exp(min(mu + factor * sigma, 700.0)))


def _big_duration(seconds: float) -> str:
    """A duration that may be absurd (a bound of 10^40 s) as a readable figure."""
    return fmt_duration(seconds) if seconds < 1e7 else f"{seconds:.3g} s"


def minimum_floor(slowest: float) -> float:
    """The slowest run plus the minimum margin."""
    return slowest * (1.0 + MIN_MARGIN)


def runs_needed(risk: float) -> int:
    """Smallest n with 1/(n+1) <= risk: from there the risk holds distribution-free."""
    return max(1, math.ceil(1.0 / risk - 1.0 - 1e-9))


def round_up(seconds: float) -> int:
    """A value to paste: whole seconds, up to the next 10 s past a minute."""
    if seconds <= 60:
        return math.ceil(seconds)
    return int(math.ceil(seconds / 10.0) * 10)


def pct(q: float) -> str:
    """0.01 -> '1 %', 0.0025 -> '0.25 %'."""
    text = f"{q * 100:.2f}".rstrip("0").rstrip(".")
    return f"{text} %"


@dataclass
class Budget:
    key: dict[str, Any]
    label: str
    n: int
    risk: float  # the asked risk
    budget_seconds: int | None  # rounded up, ready to paste
    raw_seconds: float | None
    method: str  # NO_DATA | THUMB | BOUND | FLOOR
    slowest: float | None
    distribution_free_risk: float | None  # 1/(n+1): the budget's risk is at most this, whatever the distribution
    needed: int  # runs the asked risk needs, distribution-free
    model: PredictionBound | None
    statement: str
    engine: str | None = None
    port: int | None = None
    floor_seconds: float | None = None
    version: VersionGuess | None = None  # the engine versions the runs may be (their probes differ)
    clock: str | None = None  # where its times count from (tables.budget.Clock.text)
    side: str | None = None  # of a group split into cold and warm starts: which side, and the other's figure
    # seconds added for a launch slower than each run's estimate (the top of its range less the
    # estimate used; 0 where every launch is known): a named fact, never folded into the runs' times
    launch_margin: float = 0.0

    @property
    def risk_holds_without_model(self) -> bool:
        return self.distribution_free_risk is not None and self.distribution_free_risk <= self.risk

    @property
    def risk_label(self) -> str:
        """The risk this budget really carries, in a few words (legends, table cells)."""
        if self.method == NO_DATA:
            return "no budget"
        if self.method == THUMB:
            return "rule of thumb: risk unknown"
        if self.method == CAPPED:
            return f"risk unknown (too few runs to bound {pct(self.risk)})"
        df = self.distribution_free_risk or 0.0
        if self.risk_holds_without_model:
            return f"risk ≤ {pct(self.risk)} (distribution-free, {self.n} runs)"
        model = f"risk {pct(self.risk)}" if self.method == BOUND else f"risk < {pct(self.risk)}"
        return f"{model} if log-normal; ≤ {pct(df)} without that assumption"

    @property
    def beside(self) -> str | None:
        """The statistical bound a budget of too few runs is shown with: `the bound would be 4 h 23 min`."""
        if self.method != CAPPED or self.model is None:
            return None
        return f"the bound would be {_big_duration(self.model.bound)}"

    @property
    def method_label(self) -> str:
        """The method as a label: which rule made the number."""
        return self._method_words + self.margin_words

    @property
    def margin_words(self) -> str:
        """` + 6 s for a slower launch`: the launch margin, where the budget adds one."""
        return f" + {self.launch_margin:.0f} s for a slower launch" if self.launch_margin >= 0.5 else ""

    @property
    def _method_words(self) -> str:
        if self.method == THUMB:
            return f"rule of thumb ({RULE_OF_THUMB:g} x the only run)"
        if self.method == BOUND:
            return f"log-normal prediction bound (Student-t, {self.n} runs)"
        if self.method == CAPPED:
            return f"slowest run + {pct(MIN_MARGIN)} (too few runs for a bound)"
        if self.method == FLOOR:
            return f"slowest run + {pct(MIN_MARGIN)} (minimum margin)"
        return self.method

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "label": self.label, "n": self.n, "budget_seconds": self.budget_seconds,
            "risk": self.risk, "method": self.method, "method_label": self.method_label,
            "risk_label": self.risk_label,
            "raw_seconds": None if self.raw_seconds is None else round(self.raw_seconds, 3),
            "slowest_seconds": self.slowest,
            "floor_seconds": None if self.floor_seconds is None else round(self.floor_seconds, 3),
            "distribution_free_risk": None if self.distribution_free_risk is None
            else round(self.distribution_free_risk, 6),
            "runs_needed_for_risk": self.needed,
            "model": self.model.as_json() if self.model else None,
            "statement": self.statement, "engine": self.engine, "clock": self.clock, "side": self.side,
            "beside": self.beside, "launch_margin_seconds": round(self.launch_margin, 3),
        }


def budget_for(times: Sequence[float], risk: float, key: dict[str, Any] | None = None,
               label: str = "all runs", launch_margin: float = 0.0) -> Budget:
    """The recommended timeout for one group's times to ready (seconds), plus `launch_margin`
    seconds for a launch slower than the runs' estimated ones (tables.launches.launch_margin)."""
    found = _budget_for(times, risk, key, label)
    if launch_margin <= 0.0 or found.raw_seconds is None:
        return found
    found.launch_margin = launch_margin
    found.raw_seconds += launch_margin
    found.budget_seconds = round_up(found.raw_seconds)
    found.statement += (f"; plus {launch_margin:.0f} s for a slower launch: the runs' times count from their "
                        "estimated launches, and a launch may come that much earlier (docs/launch.md)")
    return found


def _budget_for(times: Sequence[float], risk: float, key: dict[str, Any] | None = None,
                label: str = "all runs") -> Budget:
    if not MIN_RISK <= risk < 1.0:
        raise UsageError(f"risk must be between 0 and 1 (at least {MIN_RISK:g}, below 1), not {risk}")
    times = [max(t, MIN_SECONDS) for t in times if math.isfinite(t)]
    key = key or {}
    n = len(times)
    needed = runs_needed(risk)
    if n == 0:
        return Budget(key, label, 0, risk, None, None, NO_DATA, None, None, needed, None,
                      "no ready run with a known time to ready, so no data to derive a budget from; "
                      "excerpts and failed runs are left out")
    slowest = max(times)
    df_risk = 1.0 / (n + 1)
    floor = minimum_floor(slowest)
    if n == 1:
        raw = max(slowest * RULE_OF_THUMB, floor)
        statement = (f"a single run ({fmt_duration(slowest)}): one run says nothing about the spread, so no risk "
                     f"can be stated; the budget is a rule of thumb, {RULE_OF_THUMB:g} x that run, not a statistic. "
                     f"A new run is slower than this one with chance 1/2; run more for a bound "
                     f"({needed} runs make a {pct(risk)} risk hold without any model)")
        return Budget(key, label, n, risk, round_up(raw), raw, THUMB, slowest, df_risk, needed, None, statement,
                      floor_seconds=floor)
    fit = prediction_bound(times, risk)
    if fit.bound > CAP_FACTOR * slowest:
        statement = (f"{n} runs, slowest {fmt_duration(slowest)}; their spread (sigma={fit.sigma:.3f} of ln t) is too "
                     f"wide for {n} runs to bound a {pct(risk)} risk: the log-normal prediction bound would be "
                     f"{_big_duration(fit.bound)}, past {CAP_FACTOR:g} x the slowest run; the budget is the slowest "
                     f"run + {pct(MIN_MARGIN)} ({fmt_duration(floor)}) and its risk is unknown. Run more starts of "
                     f"this config, or split the runs by what makes them differ (--by, or cold and warm starts)")
        return Budget(key, label, n, risk, round_up(floor), floor, CAPPED, slowest, df_risk, needed, fit, statement,
                      floor_seconds=floor)
    if fit.bound >= floor:
        raw, method = fit.bound, BOUND
        why = (f"the bound, above the slowest run + {pct(MIN_MARGIN)} ({fmt_duration(floor)}); if times are "
               f"log-normal a new run exceeds it with chance {pct(risk)}")
    else:
        raw, method = floor, FLOOR
        why = (f"the slowest run + {pct(MIN_MARGIN)} (the minimum margin), since the bound "
               f"({fmt_duration(fit.bound)}) is closer to the slowest run than that; if times are log-normal a "
               f"new run exceeds it with chance under {pct(risk)}")
    model_text = (f"log-normal prediction bound for the next run (mu={fit.mu:.3f}, sigma={fit.sigma:.3f} of ln t; "
                  f"Student-t with {n - 1} df: factor {fit.factor:.2f} = t {fit.t:.2f} x sqrt(1 + 1/{n})): "
                  f"{fmt_duration(fit.bound)}")
    if df_risk <= risk:
        df_text = (f"distribution-free, the budget is above the slowest of {n} runs, which a new run exceeds "
                   f"with chance 1/{n + 1} ({pct(df_risk)}), so the {pct(risk)} risk holds without the model")
    else:
        df_text = (f"without the log-normal assumption the risk is only known to be under 1/{n + 1} "
                   f"({pct(df_risk)}: a new run is slower than the slowest of {n} with that chance); "
                   f"{needed} runs make a {pct(risk)} risk hold without any model")
    statement = f"{n} runs, slowest {fmt_duration(slowest)}; {model_text}; budget = {why}; {df_text}"
    return Budget(key, label, n, risk, round_up(raw), raw, method, slowest, df_risk, needed, fit, statement,
                  floor_seconds=floor)

"""Budgets: the statistics on known numbers, the floor at the slowest run, and the small-n cases."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firedup.render.budget import budget_json, budget_text
from firedup.tables.budget import budget_for, budgets, lognormal_quantile, round_up, runs_needed
from firedup.tables.frames import load
from logmaker import fleet, ready_seconds_by_regex


def test_lognormal_quantile_on_a_hand_computed_sample() -> None:
    # ln 100 = 4.605170, ln 200 = 5.298317, ln 300 = 5.703782
    # mean = 5.202423; squared deviations 0.356711 + 0.009196 + 0.251361 = 0.617268
    # sd (n - 1) = sqrt(0.617268 / 2) = 0.555548; z(0.99) = 2.326348
    # p99 = exp(5.202423 + 2.326348 * 0.555548) = exp(6.494821) = 661.71
    fit = lognormal_quantile([100.0, 200.0, 300.0], 0.01)
    assert fit.mu == pytest.approx(5.202423, abs=1e-6)
    assert fit.sigma == pytest.approx(0.555548, abs=1e-6)
    assert fit.quantile == pytest.approx(661.71, abs=0.01)
    b = budget_for([100.0, 200.0, 300.0], 0.01)
    assert b.method == "lognormal model"
    assert b.raw_seconds == pytest.approx(661.71, abs=0.01)
    assert b.budget_seconds == 670  # rounded up to 10 s
    assert b.distribution_free_risk == pytest.approx(1 / 4)
    assert "1/4" in b.statement and "99 runs" in b.statement and "an assumption, not a fact" in b.statement


def test_runs_needed_for_a_risk() -> None:
    # n >= 1/r - 1
    assert runs_needed(0.01) == 99
    assert runs_needed(0.05) == 19
    assert runs_needed(0.1) == 9
    assert runs_needed(0.3) == 3  # 1/0.3 - 1 = 2.33 -> 3 runs; 1/(3+1) = 0.25 <= 0.3
    assert runs_needed(0.5) == 1


def test_the_slowest_run_wins_when_the_model_is_lower() -> None:
    # a high outlier: the p50-risk quantile of the fit is below it
    times = [100.0, 101.0, 102.0, 400.0]
    b = budget_for(times, 0.5)
    assert b.method == "slowest observed"
    assert b.raw_seconds == 400.0
    assert b.budget_seconds == 400


def test_no_data_and_single_run() -> None:
    none = budget_for([], 0.01)
    assert none.budget_seconds is None and none.method == "no data"
    assert "no data" in none.statement
    one = budget_for([240.0], 0.01)
    assert one.method == "single run"
    assert one.budget_seconds == 360  # 1.5 x 240, said to be a rule of thumb
    assert "a single run" in one.statement and "rule of thumb, not a statistic" in one.statement
    assert "1/2" in one.statement
    two = budget_for([240.0, 250.0], 0.01)
    assert two.method == "rule of thumb" and two.budget_seconds == 380  # 1.5 x 250 = 375 -> 380


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1.0, max_value=20000.0), min_size=1, max_size=40),
       st.floats(min_value=0.001, max_value=0.5))
def test_a_budget_is_never_below_the_slowest_run(times: list[float], risk: float) -> None:
    b = budget_for(times, risk)
    assert b.budget_seconds is not None and b.budget_seconds >= max(times)
    assert b.distribution_free_risk == pytest.approx(1 / (len(times) + 1))


def test_round_up() -> None:
    assert round_up(59.2) == 60
    assert round_up(661.7) == 670
    assert round_up(1100.0) == 1100


def test_risk_out_of_range() -> None:
    with pytest.raises(ValueError):
        budget_for([1.0], 0.0)


def test_fleet_budget_covers_every_production_run(tmp_path: Path) -> None:
    fleet(tmp_path)
    report = budgets(load([str(tmp_path)]), ["disable_cuda_graph"], 0.01)
    by_key = {b.key["disable_cuda_graph"]: b for b in report.budgets}
    prod = [ready_seconds_by_regex(p) for p in sorted(tmp_path.glob("prod-*.log"))]
    observed = [t for t in prod if t is not None]
    assert len(observed) == 5
    b = by_key[False]
    assert b.n == 5 and b.slowest == max(observed)
    assert b.budget_seconds is not None and b.budget_seconds >= max(observed)
    logs = [math.log(t) for t in observed]
    mu = sum(logs) / 5
    sigma = math.sqrt(sum((v - mu) ** 2 for v in logs) / 4)
    assert b.model is not None and b.model.quantile == pytest.approx(math.exp(mu + 2.3263478740 * sigma))
    assert b.engine == "sglang" and b.port == 30000
    text = budget_text(report)
    assert "production (disable_cuda_graph=False): budget" in text
    assert "grep -q ok" in text  # the warning about SGLang's empty /health body
    data = budget_json(report)
    assert {"key", "n", "budget_seconds", "risk", "method"} <= set(data["groups"][0])

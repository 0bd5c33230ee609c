"""The twin rule (timeline.twins): one phase of a run against the fastest run of its configuration."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firedup.timeline.twins import TWIN_RATIO, TWIN_SECONDS, slower, slower_than_twins, twin_key

FAST = TWIN_SECONDS  # a twin whose ratio binds: TWIN_RATIO x 20 s is more than 20 s + TWIN_SECONDS
QUICK = 1.0  # a twin whose seconds bind: TWIN_RATIO x 1 s is less than 1 s + TWIN_SECONDS


@pytest.mark.parametrize(("seconds", "twin", "expected"), [
    (TWIN_RATIO * FAST, FAST, True),  # exactly the ratio, well over the seconds
    (TWIN_RATIO * FAST - 0.1, FAST, False),  # under the ratio
    (QUICK + TWIN_SECONDS, QUICK, True),  # exactly the seconds, well over the ratio
    (QUICK + TWIN_SECONDS - 0.1, QUICK, False),  # under the seconds
    (100.0, 0.0, False),  # no twin: it did not have the phase
])
def test_slower_needs_both_the_ratio_and_the_seconds(seconds: float, twin: float, expected: bool) -> None:
    assert slower(seconds, twin) is expected


def test_each_phase_is_held_to_its_fastest_twin_and_a_run_without_it_is_no_twin() -> None:
    found = slower_than_twins({
        "a": {"cuda_graph": 12.0, "warmup": 4.0},
        "b": {"cuda_graph": 75.0, "warmup": 5.0},
        "c": {"cuda_graph": 13.0, "warmup": 107.0},
        "d": {"warmup": 0.0},  # no graphs, a warm-up of 0 s: no twin for either
    })
    assert [(f.run, f.phase, f.seconds, f.twin, f.twin_seconds) for f in found] == [
        ("b", "cuda_graph", 75.0, "a", 12.0), ("c", "warmup", 107.0, "a", 4.0)]
    assert found[0].ratio == 75.0 / 12.0 and found[0].saving == 63.0
    assert slower_than_twins({"a": {"cuda_graph": 10.0}}) == []  # one run has no twin


@given(st.dictionaries(st.integers(0, 9), st.floats(0.0, 1e4), min_size=1))
def test_a_run_is_slower_than_its_twins_only_by_the_rule_against_the_fastest(captures: dict[int, float]) -> None:
    found = slower_than_twins({run: {"cuda_graph": s} for run, s in captures.items()})
    timed = {run: s for run, s in captures.items() if s > 0}
    fastest = min(timed.values(), default=0.0)
    assert {f.run for f in found} == {run for run, s in timed.items() if len(timed) > 1 and slower(s, fastest)}
    assert all(f.twin_seconds == fastest and captures[f.twin] == fastest for f in found)


def test_twins_need_a_model_a_line_names() -> None:
    assert twin_key("sglang", {"tp_size": 8}) is None
    assert twin_key("sglang", {"model_path": "m", "tp_size": 8}) == twin_key("sglang", {"model_path": "m", "tp_size": 8})
    assert twin_key("sglang", {"model_path": "m", "tp_size": 8}) != twin_key("sglang", {"model_path": "m", "tp_size": 4})

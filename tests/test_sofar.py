"""live/sofar.py: what a wait has seen so far, and the questions the printer and the record ask
of it (the stage, the time in it, the progress bar, a crash's fatal line), on runs read from
real logs by the reader `wait` uses."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

from _live import CRASH_OOM, NEW_READY
from firedup.live.pidclock import PidClock
from firedup.live.sofar import SoFar, Stretch
from firedup.read.sources import Line
from firedup.timeline.pipeline import DatePolicy, LogReader


def _seen(log: Path, upto: int | None = None) -> SoFar:
    lines = log.read_text().splitlines()[:upto]
    reader = LogReader(str(log), "sglang", DatePolicy(None, date(2026, 1, 1)))
    reader.feed([Line(i + 1, t) for i, t in enumerate(lines)])
    runs = reader.runs()
    seen = SoFar(PidClock(None, None, 0.0, time.time(), None, quiet=True), 0.0, log_name=str(log))
    seen.run, seen.fmt, seen.events = runs[-1], reader.fmt, reader.events
    return seen


def test_a_ready_run_is_serving_and_a_crashed_one_is_in_its_crash_phase() -> None:
    assert _seen(NEW_READY).current_stage() == "serving"
    crashed = _seen(CRASH_OOM)
    assert crashed.run is not None and crashed.run.crash is not None
    assert crashed.current_stage() == crashed.run.crash.phase == "cuda_graph"
    assert crashed.fatal_after_crash()


def test_the_stages_come_in_the_order_first_entered_with_their_lines() -> None:
    seen = _seen(NEW_READY)
    names = [name for name, _, _ in seen.first_entries()]
    assert names[:3] == ["launch", "dist_init", "load_weights"] and names[-1] == "serving"
    lines = [line for _, _, line in seen.first_entries()]
    assert lines == sorted(lines)
    ts, line = seen.stage_since("load_weights")
    assert ts is not None and line > 1


def test_the_time_in_a_stage_counts_on_from_the_newest_stamp() -> None:
    seen = _seen(NEW_READY, upto=20)
    run = seen.run
    assert run is not None and run.first_ts is not None and run.last_ts is not None
    stage = seen.current_stage()
    base = run.last_ts.minus(run.first_ts)
    assert seen.elapsed_log(0.0) == base
    assert seen.elapsed_log(7.5) == base + 7.5  # seven and a half seconds since the newest stamp arrived
    in_stage = seen.in_stage(7.5, stage)
    assert in_stage is not None and 7.5 <= in_stage <= base + 7.5


def test_nothing_seen_answers_nothing() -> None:
    seen = SoFar(PidClock(None, None, 0.0, time.time(), None, quiet=True), 0.0)
    assert seen.current_stage() is None and seen.elapsed_log(1.0) is None and seen.progress() is None
    assert seen.first_entries() == [] and not seen.informative() and not seen.fatal_after_crash()
    assert seen.witnesses() == [] and seen.observed_on_log_clock() == []


def test_stretches_go_on_the_log_clock_only_once_its_zone_is_known() -> None:
    clock = PidClock(1, time.time() - 10, 0.0, time.time(), None, quiet=True)
    seen = SoFar(clock, 0.0, pid=1)
    now = time.time()
    seen.observed.append(Stretch("compiling", "compiling kernels (nvcc)", now - 5, now, "cuda_graph", [], ["nvcc"]))
    assert seen.observed_on_log_clock() == []
    from datetime import timedelta

    clock.zone = timedelta(hours=1)
    [stretch] = seen.observed_on_log_clock()
    assert stretch.kind == "compiling" and stretch.compilers == ("nvcc",)
    assert abs((stretch.end.dt - stretch.start.dt).total_seconds() - 5) < 0.01

"""live/pidclock.py: the --pid process's start put on the log's clock, and the run it launched.
Runs are read from real log text by the reader `wait` uses; the clock's moments are given."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firedup.live.pidclock import PidClock
from firedup.read.sources import Line
from firedup.timeline.pipeline import DatePolicy, LogReader
from firedup.timeline.run import Run

ARGS = "server_args=ServerArgs(model_path='/tmp/model', tp_size=1)"


def _stamp(wall: float, zone: timedelta = timedelta(0)) -> str:
    return (datetime.fromtimestamp(wall) + zone).strftime("[%Y-%m-%d %H:%M:%S]")


def _runs(lines: list[str]) -> list[Run]:
    reader = LogReader("server.log", "sglang", DatePolicy(None, datetime.now().date()))
    reader.feed([Line(i + 1, text) for i, text in enumerate(lines)])
    return reader.runs()


def _clock(launch: float, w0: float, log: Path | None = None) -> PidClock:
    return PidClock(100, launch, 0.0, w0, log, quiet=False)


@settings(max_examples=40, deadline=None)
@given(st.integers(-12 * 4, 14 * 4), st.floats(1, 600))
def test_the_launch_is_measured_across_any_zone_from_a_live_stamp(quarters: int, before: float) -> None:
    w0 = time.time()
    zone = timedelta(minutes=15 * quarters)
    runs = _runs([f"{_stamp(w0, zone)} {ARGS}", f"{_stamp(w0, zone)} Load weight begin. avail mem=78.50 GB"])
    clock = _clock(w0 - before, w0)
    notes = clock.apply(runs, 0.0, live=True)
    assert clock.zone == zone
    launch = runs[-1].launch
    assert launch is not None and launch.source == "measured"
    assert launch.gap == pytest.approx(before, abs=1.01)  # whole-second stamps
    assert notes and notes[0].startswith("note: pid 100 was launched")
    assert clock.measured(runs[-1])


def test_an_old_stamp_in_a_file_still_written_sets_no_zone_until_a_live_one(tmp_path: Path) -> None:
    """Attached 15 min after the log's newest stamped line (the file written since, by lines
    without a stamp): its age is not a zone; a stamp that comes live decides."""
    w0 = time.time()
    log = tmp_path / "server.log"
    log.write_text("fresh\n")  # modified now
    old = _runs([f"{_stamp(w0 - 900)} {ARGS}"])
    clock = _clock(w0 - 934, w0, log)
    assert clock.apply(old, 0.0, live=False) == []
    assert clock.zone is None and old[-1].launch is not None and old[-1].launch.source != "measured"
    runs = _runs([f"{_stamp(w0 - 900)} {ARGS}", f"{_stamp(w0 + 5)} Load weight begin. avail mem=78.50 GB"])
    clock.apply(runs, 5.0, live=True)
    assert clock.zone == timedelta(0)
    launch = runs[-1].launch
    assert launch is not None and launch.source == "measured" and launch.gap == pytest.approx(34, abs=1.01)


def test_a_stamp_near_now_sets_zone_0_even_from_what_the_log_held(tmp_path: Path) -> None:
    w0 = time.time()
    log = tmp_path / "server.log"
    log.write_text("x\n")
    clock = _clock(w0 - 20, w0, log)
    clock.apply(_runs([f"{_stamp(w0 - 3)} {ARGS}"]), 0.0, live=False)
    assert clock.zone == timedelta(0)


def test_a_log_written_before_the_wait_is_dated_by_its_modification_time(tmp_path: Path) -> None:
    w0 = time.time()
    log = tmp_path / "server.log"
    log.write_text("x\n")
    os.utime(log, (w0 - 3600, w0 - 3600))  # written an hour ago, in a zone 2 h ahead
    zone = timedelta(hours=2)
    clock = _clock(w0 - 3630, w0, log)
    clock.apply(_runs([f"{_stamp(w0 - 3600, zone)} {ARGS}"]), 0.0, live=False)
    assert clock.zone == zone


def test_the_supervisors_start_launches_the_first_run_after_it_only() -> None:
    """A supervisor's pid: its start launched the first run; the restart after the crash is
    another process's, whenever the wait attached."""
    w0 = time.time()
    first, restart = [f"{_stamp(w0 - 80)} {ARGS}", f"{_stamp(w0 - 79)} Load weight begin. avail mem=78.50 GB"], \
        [f"{_stamp(w0 - 10)} {ARGS}", f"{_stamp(w0 - 9)} Load weight begin. avail mem=78.50 GB"]
    runs = _runs([*first, f"{_stamp(w0 - 75)} Received sigquit from a child process. It usually means the child "
                          "failed.", *restart])
    assert len(runs) == 2
    clock = _clock(w0 - 100, w0)
    clock.apply(runs, 0.0, live=True)
    assert clock.launch_run == (runs[0].source, runs[0].first_line)
    assert not clock.measured(runs[-1])
    assert runs[-1].launch is None or runs[-1].launch.source != "measured"


def test_a_pid_started_after_the_first_line_or_long_before_is_not_the_launch() -> None:
    # a quarter second into a second: the log's stamps are whole seconds, and from 0.95 s into
    # one the gap (5 s and that fraction) was worded "6.0 s" (CI failed once on it)
    w0 = int(time.time()) + 0.25
    runs = _runs([f"{_stamp(w0 - 10)} {ARGS}"])
    clock = _clock(w0 - 5, w0)  # started after the log's first line
    notes = clock.apply(runs, 0.0, live=True)
    assert notes and re.search(r"started 5(\.\d)? s after the log.s first line", notes[0]), notes
    assert not clock.measured(runs[-1])
    far = _clock(w0 - 10 - 7200, w0)  # two hours before
    assert "before the log's first line" in far.apply(_runs([f"{_stamp(w0 - 10)} {ARGS}"]), 0.0, live=True)[0]


def test_a_log_on_another_clock_is_said_once_and_measures_nothing() -> None:
    w0 = time.time()
    clock = _clock(w0 - 30, w0)
    runs = _runs([f"{_stamp(w0 - 86400 * 40)} {ARGS}"])  # a replayed log of another month
    notes = clock.apply(runs, 0.0, live=True)
    assert len(notes) == 1 and "do not follow this machine's clock" in notes[0]
    assert clock.apply(runs, 1.0, live=True) == []
    assert clock.zone is None and clock.on_log_clock(w0) is None


def test_without_a_pid_nothing_is_measured() -> None:
    clock = PidClock(None, None, 0.0, time.time(), None, quiet=False)
    runs = _runs([f"{_stamp(time.time())} {ARGS}"])
    assert clock.apply(runs, 0.0) == [] and clock.since_launch(5.0) is None

"""The `wait --pid` process's start on the log's clock: this machine's clock and the log's
differ by the time zone the server prints in, found from the newest stamp (`_set_zone`); the
process's start time in /proc, moved onto the log's clock, is the launch of the run it started
(`apply`), a measured launch (`timeline.launch`). What is worth saying comes back as notes for
the loop to print."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from pathlib import Path

from firedup.core.units import fmt_duration
from firedup.timeline.launch import Launch, measured_launch
from firedup.timeline.run import Run

# How long before the log's first line a process's own start can still be that start's launch:
# a measured start, so wider than a launch line's plausible gap (`LaunchGap.plausible`, 120 s):
# imports on a cold node, an image unpacked inside the container, a wrapper script's set-up.
MAX_PID_GAP_S = 1800.0
ZONE_STEP_S = 900.0  # a log's stamps and this machine's clock differ by whole quarter hours (time zones)
LAUNCH_SLACK_S = 1.5  # a launch up to this long after the first line: whole-second stamps, not a later start
STALE_LOG_S = 60.0  # a log written longer ago than this dates its newest line by its modification time
ZONE_MAX_S = 26 * 3600.0  # two zones differ by at most this much (UTC-12 and UTC+14)
ZONE_SLACK_S = 90.0  # a live line's stamp is at most this far from the quarter hour (its lag, a skewed clock)


class PidClock:
    """The --pid process's launch (`launch_wall`, seconds since the epoch; None without --pid or
    /proc) against the wait's monotonic clock (`started`, when `wall_at_start` was read)."""

    def __init__(self, pid: int | None, launch_wall: float | None, started: float, wall_at_start: float,
                 log: Path | None, quiet: bool) -> None:
        self.pid = pid
        self.launch_wall = launch_wall
        self.started = started
        self.wall_at_start = wall_at_start
        self.log = log  # a log file (its modification time dates a log written before the wait); None: a stream
        self.quiet = quiet
        self.zone_said = False
        self.zone: timedelta | None = None  # the log's clock minus this machine's local clock
        self.launch_run: tuple[str, int | None] | None = None  # the run the pid's start launched
        self.launch_said = False
        self.launch_value: Launch | None = None

    def wall(self, now: float) -> float:
        """This machine's clock (seconds since the epoch) at the loop's `now`."""
        return self.wall_at_start + (now - self.started)

    def since_launch(self, now: float) -> float | None:
        """Seconds since the --pid process was launched (None: not measured)."""
        return None if self.launch_wall is None else max(0.0, self.wall(now) - self.launch_wall)

    def _set_zone(self, run: Run, now: float, live: bool, notes: list[str]) -> None:
        """The log's clock against this machine's: its newest stamp against the wall clock when
        that line was written (now, as lines come; the file's modification time for a log
        written before the wait), rounded to whole quarter hours: the time zone the server
        prints in (a container often prints UTC), not the seconds the line took to come.

        A stamp the log held before the wait (not `live`) while the file is still being written
        dates nothing: a wait attached 15 min after the log's newest stamped line (lines without
        a stamp since) would read the log's age as a zone. Only a zone of 0 is taken from it
        (a stamp within the slack of now); else the next stamp that comes as the wait watches
        decides."""
        if self.zone is not None or run.last_ts is None:
            return
        written = self.wall(now)
        stale = False
        if self.log is not None:
            with contextlib.suppress(OSError):
                mtime = self.log.stat().st_mtime
                if written - mtime > STALE_LOG_S:
                    written, stale = mtime, True
        difference = (run.last_ts.dt - datetime.fromtimestamp(written)).total_seconds()
        zone = round(difference / ZONE_STEP_S) * ZONE_STEP_S
        if not live and not stale and zone != 0:
            return  # the stamp's age, or a zone: a stamp that comes live tells
        if abs(zone) > ZONE_MAX_S or abs(difference - zone) > ZONE_SLACK_S:
            # not a clock of this moment: an old log copied or replayed, a skewed clock
            self.zone = None
            if self.launch_wall is not None and not self.zone_said:
                self.zone_said = True
                notes.append(f"note: the log's stamps do not follow this machine's clock (its newest, {run.last_ts.iso}, "
                             f"is {fmt_duration(abs(difference))} from now, not whole quarter hours): pid "
                             f"{self.pid}'s start is not put on the log's clock; the launch stays "
                             f"{run.launch.source if run.launch else 'unknown'}")
            return
        self.zone = timedelta(seconds=zone)

    def on_log_clock(self, wall: float) -> datetime | None:
        """A moment of this machine's clock on the log's clock (None until a stamped line came)."""
        return None if self.zone is None else datetime.fromtimestamp(wall) + self.zone

    def _zone_text(self) -> str:
        if not self.zone:
            return "the log's clock is this machine's"
        hours = self.zone.total_seconds() / 3600
        return (f"the log's clock runs {fmt_duration(abs(self.zone.total_seconds()))} "
                f"{'ahead of' if hours > 0 else 'behind'} this machine's (its time zone)")

    def apply(self, runs: list[Run], now: float, live: bool = True) -> list[str]:
        """The --pid process's start is the launch of the run it started (measured): the first
        run of the log whose first line comes after it (a restart later in the log is another
        process's, even when the pid is a supervisor's that started them all). `runs` are the
        log's, the newest the one followed; `live`: its newest stamp came as the wait watched. A
        pid that started long before that first line, or after it, did not launch this start:
        said once, and the run keeps its own launch. The notes to say."""
        notes: list[str] = []
        run = runs[-1] if runs else None
        if run is None or run.first_ts is None or self.launch_wall is None:
            return notes
        self._set_zone(run, now, live, notes)
        launched = self.on_log_clock(self.launch_wall)
        if launched is None:
            return notes
        key = (run.source, run.first_line)
        gap = (run.first_ts.dt - launched).total_seconds()
        if self.launch_run is None:
            first = next((r for r in runs if r.first_ts is not None
                          and (r.first_ts.dt - launched).total_seconds() >= -LAUNCH_SLACK_S), run)
            assert first.first_ts is not None
            first_gap = (first.first_ts.dt - launched).total_seconds()
            self.launch_run = (first.source, first.first_line)
            if not -LAUNCH_SLACK_S <= first_gap <= MAX_PID_GAP_S:
                self.launch_run = ("", -1)
                when = "after" if first_gap < 0 else "before"
                notes.append(f"note: pid {self.pid} started {fmt_duration(abs(first_gap))} {when} the log's first line "
                             f"(line {first.first_line}): not this start's launch, which stays "
                             f"{run.launch.source if run.launch else 'unknown'}")
                return notes
        if key != self.launch_run:
            return notes
        at = launched if gap >= 0 else run.first_ts.dt  # whole-second stamps: the same second
        basis = (f"pid {self.pid} started at {datetime.fromtimestamp(self.launch_wall).strftime('%H:%M:%S.%f')[:-4]}"
                 f" by this machine's clock (/proc: its start time after boot); {self._zone_text()}")
        run.launch = self.launch_value = measured_launch(at, run.first_ts, basis)
        if not self.launch_said:
            self.launch_said = True
            if not self.quiet:
                notes.append(f"note: pid {self.pid} was launched {self.gap_text(run)} (measured: its start "
                             "time in /proc)")
        return notes

    @staticmethod
    def gap_text(run: Run) -> str:
        """`20 s before the log's first line`."""
        gap = run.launch.gap if run.launch is not None else None
        if gap is None:
            return "at an unknown time"
        return "at the log's first line" if gap < 1 else f"{fmt_duration(gap)} before the log's first line"

    def measured(self, run: Run | None) -> bool:
        """Whether `run` (the one followed) carries the launch this wait measured."""
        return run is not None and run.launch is not None and run.launch.source == "measured" \
            and self.launch_run == (run.source, run.first_line)


__all__ = ["PidClock"]

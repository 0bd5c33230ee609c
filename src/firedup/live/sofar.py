"""What one `firedup wait` has seen so far: the one record its loop (`live.wait`) fills in on
every pass (the log's run and lines, the URL's answers, the process tree's evidence, the
clock) and everything else reads: the decision's `Observation` is taken from it, the printer
(`live.printer`) words it, `--record` (`live.record`) writes it. Its methods answer questions
of what was seen (the stage, the time in it, the progress bar), never change it.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from datetime import datetime

from firedup.core.health import HealthSemantics
from firedup.formats import Format
from firedup.live.activity import Activity
from firedup.live.history import History, WaitBudget
from firedup.live.pidclock import PidClock
from firedup.live.probe import ProbeResult
from firedup.live.stages import Progress, progress_of
from firedup.live.telemetry import Telemetry
from firedup.read.clock import Stamp
from firedup.read.engine import Event
from firedup.timeline.run import Run
from firedup.timeline.silence import Observed
from firedup.timeline.stages import stage_changes

LAST_LINES = 12


@dataclass
class Stretch:
    """A stretch of time in which the process tree did one thing (`live.activity.classify`), with
    what showed it: the classification timeline `--record` keeps and the cache verdicts read."""

    kind: str
    text: str
    since: float  # seconds since the epoch (this machine's clock)
    until: float
    phase: str | None
    evidence: list[str] = field(default_factory=list)
    compilers: list[str] = field(default_factory=list)


def stamp(when: datetime) -> Stamp:
    return Stamp(when, when.isoformat(timespec="milliseconds" if when.microsecond else "seconds"))


@dataclass
class SoFar:
    """What this wait has seen so far (its loop the only writer). `started` and every `..._at`
    are seconds on the wait's monotonic clock; `clock` puts them on this machine's clock and
    the log's."""

    clock: PidClock
    started: float
    log_name: str | None = None  # None: no log followed
    url: str | None = None  # --url as given
    pid: int | None = None  # --pid
    url_grace: float = 30.0
    # the log
    fmt: Format | None = None
    run: Run | None = None  # the newest start-up of the log, as read so far
    events: list[Event] = field(default_factory=list)
    lines: int = 0  # lines of the followed start-up read so far (after --from-end's skip)
    last_lines: collections.deque[tuple[int, str]] = field(
        default_factory=lambda: collections.deque(maxlen=LAST_LINES))
    log_exists: bool = False
    log_began: bool = False  # a line some format's header reads has come (before its engine shows)
    last_growth: float | None = None  # when the log last grew
    last_ts_at: float = 0.0  # when the run's newest timestamp arrived
    partial_progress: Progress | None = None  # a progress bar still being redrawn on the last line
    ready_seen_at: float | None = None
    http_open_at: float | None = None
    crash_seen_at: float | None = None
    # the URL
    probed: str | None = None  # the URL probed now (a base URL moves on from a path that does not exist)
    probe: ProbeResult | None = None  # its latest answer
    probe_counts: collections.Counter[str] = field(default_factory=collections.Counter)  # its answers, by kind
    probe_earlier: list[tuple[str, collections.Counter[str]]] = field(default_factory=list)  # paths moved on from
    telemetry: Telemetry | None = None  # the engine's own start-up figures
    # the process
    pid_reused: bool = False  # the --pid process's pid now belongs to another process
    watch_pid: int | None = None  # whose tree is looked at
    activity: Activity | None = None  # what it did, as last looked at
    observed: list[Stretch] = field(default_factory=list)  # what it did, stretch by stretch
    gpu: tuple[str | None, str | None] | None = None  # (the GPUs' source, why they are off); None: not read
    # the clock and the history
    deadline: float | None = None
    timeout_note: str = ""
    history: History = field(default_factory=lambda: History([]))
    history_line: str | None = None
    budget: WaitBudget | None = None

    def health(self) -> HealthSemantics | None:
        return self.fmt.serving.health if self.fmt else None

    def first_entries(self) -> list[tuple[str, Stamp | None, int]]:
        """Stages in the order first entered, with when (log clock) and on which line."""
        run = self.run
        if run is None:
            return []
        seen: dict[str, tuple[str, Stamp | None, int]] = {}
        for stage, m in stage_changes(run, self.fmt):
            if stage is None or stage in seen:
                continue
            seen[stage] = (stage, run.first_ts if m is None else m.ts, run.first_line or 0 if m is None else m.line)
        return list(seen.values())

    def current_stage(self) -> str | None:
        run = self.run
        if run is None:
            return None
        if run.outcome == "ready":
            return "serving"
        if run.crash is not None and run.outcome == "crashed":
            return run.crash.phase
        return run.stopped_in

    def elapsed_log(self, now: float) -> float | None:
        """Seconds since the run's first line by the log's clock, plus the time since its
        last timestamp arrived here."""
        run = self.run
        if run is None or run.first_ts is None or run.last_ts is None:
            return None
        return run.last_ts.minus(run.first_ts) + max(0.0, now - self.last_ts_at)

    def stage_since(self, stage: str | None) -> tuple[Stamp | None, int]:
        for name, ts, line in self.first_entries():
            if name == stage:
                return ts, line
        return None, 0

    def in_stage(self, now: float, stage: str | None) -> float | None:
        run = self.run
        since, _ = self.stage_since(stage)
        elapsed = self.elapsed_log(now)
        if run is None or run.first_ts is None or since is None or elapsed is None:
            return None
        return max(0.0, elapsed - since.minus(run.first_ts))

    def progress(self) -> Progress | None:
        """The newest progress bar, if no milestone came after it (else it is finished news)."""
        if self.partial_progress is not None:
            return self.partial_progress
        run = self.run
        after = run.milestones[-1].line if run is not None and run.milestones else 0
        units = self.fmt.vocab.progress if self.fmt is not None else {}
        for event in reversed(self.events):
            if event.line <= after:
                break
            if event.name in units:
                return progress_of(event, units)
        return None

    def run_events(self) -> list[Event]:
        """The events of the run followed (a restart's, not the crashed start's before it)."""
        run = self.run
        return [e for e in self.events if run is not None and run.first_line is not None and e.line >= run.first_line]

    def version_pick(self) -> str | None:
        run = self.run
        if run is None or self.fmt is None or self.fmt.serving.version_guess is None:
            return None
        return self.fmt.serving.version_guess(self.run_events(), run.all_config, run.config_complete).pick()

    def informative(self) -> bool:
        """Does the log show the startup's progress (else the URL alone decides)?"""
        return self.run is not None and len(stage_changes(self.run, self.fmt)) > 1

    def fatal_after_crash(self) -> bool:
        """A fatal line at or after the crash's line (else a bare traceback, a crash only if the
        log then falls silent)."""
        run = self.run
        if run is None or run.crash is None:
            return False
        fatal = self.fmt.vocab.fatal if self.fmt is not None else frozenset()
        return any(e.name in fatal for e in self.events if e.line >= run.crash.line)

    def since_launch(self, now: float) -> float | None:
        return self.clock.since_launch(now)

    def observed_on_log_clock(self) -> list[Observed]:
        """The process tree's stretches on the log's clock (those it can be put on)."""
        out = []
        for s in self.observed:
            since, until = self.clock.on_log_clock(s.since), self.clock.on_log_clock(s.until)
            if since is not None and until is not None:
                out.append(Observed(s.kind, stamp(since), stamp(until), s.text, tuple(s.compilers)))
        return out

    def witnesses(self) -> list[str]:
        """What the wait watches, by name: the log, the URL, the pid."""
        return [who for who in (self.log_name, self.probed, f"pid {self.pid}" if self.pid else None) if who]


__all__ = ["LAST_LINES", "SoFar", "Stretch", "stamp"]

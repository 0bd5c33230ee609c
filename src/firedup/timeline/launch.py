"""When the server process was launched: where the clock of a wait loop, a `startupProbe` or a
CI step starts.

A server's first timestamped line comes after its launch, since Python and CUDA imports print
nothing with a time (on real start-ups, 19-28 s after: docs/launch.md). A time to ready counted
from the first line is short by that much, so every run carries a `Launch`, in order of trust:

* `measured`: a process start time firedup saw itself (`wait --pid` reads it from /proc);
* `log`: a line of the input states it (systemd's `Started`/`Starting` unit line, a launch
  command echoed with a collector's stamp): their kinds say so (`formats.vocab.Kind.launch`);
* `given`: the user said it (`--launched-at`);
* `estimated`: none of these; the gap before the first line is the format's documented typical
  gap (`Format.timeouts.launch_gap`), or the history's measured gaps (`tables.launches`), with its range;
* `unknown`: the log has no time, or begins mid-startup (an excerpt: what came before is unknown).

A launch changes no other figure of the run: `total_seconds` stays first line -> ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from firedup.formats.base import Format, LaunchGap
from firedup.read.clock import Stamp
from firedup.read.engine import Event

if TYPE_CHECKING:
    from firedup.timeline.run import Run

# `--launched-at`: a moment on the log's clock, or a time of day (the first line's date)
LaunchedAt = datetime | time | None

SOURCES = ("measured", "log", "given", "estimated", "unknown")
KNOWN = frozenset({"measured", "log", "given"})  # a launch that happened at a stated time
# A launch line further than this before the first line is another start (a unit started hours
# earlier, then restarted by hand): not this run's launch.
MAX_STATED_GAP = 1800.0


@dataclass
class Launch:
    """One run's launch (see the module docstring). `gap` is `seconds_before_first_line`;
    `low`/`high` bound it where it is estimated (the range budgets allow for)."""

    source: str
    basis: str
    ts: Stamp | None = None
    gap: float | None = None
    low: float | None = None
    high: float | None = None
    line: int | None = None  # the input line that states it (source "log")

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"launch source must be one of {', '.join(SOURCES)}, not {self.source!r}")

    @property
    def known(self) -> bool:
        """Whether the launch time is a fact (measured, stated by the log, given), not an estimate."""
        return self.source in KNOWN

    @property
    def margin(self) -> float:
        """Seconds a budget adds for this launch coming earlier than estimated: the top of its
        range less the estimate, 0 for a known one (a wait loop must outlast a slow import, not
        the typical one). A fact of its own: the run's time from launch uses `gap`."""
        if self.known or self.high is None or self.gap is None:
            return 0.0
        return max(0.0, self.high - self.gap)

    def as_contract(self, seconds_to_ready: float | None, seconds_to_end: float | None) -> dict[str, Any]:
        return {
            "ts": self.ts.iso if self.ts is not None else None, "source": self.source,
            "seconds_before_first_line": _r(self.gap), "seconds_to_ready": _r(seconds_to_ready),
            "basis": self.basis,
            # additions beyond the contract's keys
            "seconds_to_end": _r(seconds_to_end),
            "range": [_r(self.low), _r(self.high)] if self.low is not None and self.high is not None else None,
            "line": self.line,
        }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def launch_gap_text(gap: LaunchGap) -> str:
    """`typically 21 s (19-27 s) after the launch`: how a gap reads in a basis."""
    return f"typically {gap.typical:.0f} s ({gap.low:.0f}-{gap.high:.0f} s) after the launch"


def stated_launch(events: Sequence[Event], first: Stamp, fmt: Format) -> Launch | None:
    """The launch a line of the run states: the last such line at or before the first line
    (a unit restarted by hand prints `Started` again), with its own time, not an inherited one."""
    found: Event | None = None
    for e in events:
        # within a second after: the line may itself be the run's first, its fraction cut there
        if e.name in fmt.vocab.launch and e.ts is not None and not e.inherited \
                and -1.0 < first.minus(e.ts) <= MAX_STATED_GAP:
            found = e
    if found is None or found.ts is None:
        return None
    what = fmt.vocab.kind(found.name).means
    return Launch("log", f"line {found.line}, at {found.ts.iso}: {what}", found.ts,
                  max(0.0, first.minus(found.ts)), line=found.line)


def estimate(first: Stamp | None, gap: LaunchGap | None, engine: str, previous_end: Stamp | None = None,
             begins_mid_startup: bool = False) -> Launch:
    """The launch no line states: the documented (or history's) gap before the first line, never
    silently zero. A restart in the same log was launched after the previous run's last line,
    which caps the gap."""
    if first is None:
        return Launch("unknown", "the log has no timestamped line")
    if begins_mid_startup:
        return Launch("unknown", "the log begins mid-startup, so the time before its first line is not known")
    if gap is None:
        return Launch("unknown", f"no launch line, and no typical gap before the first line is known for {engine}")
    typical, low, high = gap.typical, gap.low, gap.high
    basis = f"no line states the launch; {gap.basis} {launch_gap_text(gap)} (docs/launch.md)"
    if previous_end is not None:
        cap = max(0.0, first.minus(previous_end))
        if cap < high:
            typical, low, high = min(typical, cap), min(low, cap), cap
            basis += f", at most {cap:.0f} s here (the previous start's last line)"
    return Launch("estimated", basis, first.plus(-typical), typical, low, high)


def _stamp(when: datetime) -> Stamp:
    return Stamp(when, when.isoformat(timespec="milliseconds" if when.microsecond else "seconds"))


def give_launch(run: Run, launched_at: datetime | time) -> None:
    """`--launched-at` on a run: the user's time on the log's clock. A time of day alone is the
    last such moment at or before the first line. A time after the first line cannot be this
    run's launch: the run keeps its own and says why."""
    first = run.first_ts
    if isinstance(launched_at, time):
        base = first.dt if first is not None else datetime.now()
        when = datetime.combine(base.date(), launched_at)
        if when > base:
            when -= timedelta(days=1)
    else:
        when = launched_at
    stamp = _stamp(when)
    if first is not None and stamp > first:
        run.warnings.append(f"--launched-at {stamp.iso} is after the log's first line ({first.iso}): not this "
                            "run's launch, left out")
        return
    gap = first.minus(stamp) if first is not None else None
    run.launch = Launch("given", f"given: launched at {stamp.iso} (--launched-at)", stamp, gap)


def measured_launch(when: datetime, first: Stamp | None, basis: str) -> Launch:
    """A process start firedup saw (`wait --pid`), already on the log's clock."""
    stamp = _stamp(when)
    return Launch("measured", basis, stamp, first.minus(stamp) if first is not None else None)


__all__ = ["KNOWN", "SOURCES", "Launch", "LaunchedAt", "estimate", "give_launch", "launch_gap_text",
           "measured_launch", "stated_launch"]

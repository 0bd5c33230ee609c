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
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from firedup.core.safe import visible
from firedup.core.units import fmt_duration
from firedup.errors import UsageError
from firedup.formats.base import Format, LaunchGap
from firedup.read.clock import Stamp
from firedup.read.engine import Event

# `--launched-at`: a moment on the log's clock, or a time of day (the first line's date)
LaunchedAt = datetime | time | None

SOURCES = ("measured", "log", "given", "estimated", "unknown")
KNOWN = frozenset({"measured", "log", "given"})  # a launch that happened at a stated time
# A launch line further than this before the first line is another start (a unit started an
# hour earlier, then restarted by hand): not this run's launch. The engine's own
# `LaunchGap.plausible` where it has one.
MAX_STATED_GAP = 120.0


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
        """Seconds a budget adds for this launch coming earlier than estimated (`launch_margin`)."""
        return launch_margin(self.source, self.gap, self.high)

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


def launch_margin(source: str | None, gap: float | None, high: float | None) -> float:
    """Seconds a budget adds for a launch coming earlier than estimated: the top of its range
    (`high`) less the estimate (`gap`), 0 for any launch that is no estimate (a wait loop must
    outlast a slow import, not the typical one). A fact of its own: the run's time from launch
    uses `gap`. The one formula: `Launch.margin` and the rows of `tables.launches` ask it."""
    if source != "estimated" or high is None or gap is None:
        return 0.0
    return max(0.0, high - gap)


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def launch_gap_text(gap: LaunchGap) -> str:
    """`typically 21 s (16-37 s: up to 27 s with a warm page cache, 37 s cold) after the launch`:
    how a gap reads in a basis, saying which case its top assumes."""
    if gap.warm_high is not None and gap.warm_high < gap.high:
        return (f"typically {gap.typical:.0f} s ({gap.low:.0f}-{gap.high:.0f} s: up to {gap.warm_high:.0f} s with a "
                f"warm page cache, {gap.high:.0f} s cold) after the launch")
    return f"typically {gap.typical:.0f} s ({gap.low:.0f}-{gap.high:.0f} s) after the launch"


def _identity(event: Event) -> str:
    """What a launch line starts: its unit, its container (with the runtime's attributes), or
    the echoed command."""
    fields = event.fields
    for key in ("unit", "container"):
        if fields.get(key):
            attrs = fields.get("attrs")
            return f"{fields[key]} ({attrs})" if attrs else str(fields[key])
    return "the launch command"


def _names_engine(event: Event, fmt: Format) -> bool:
    """Whether a launch line names this engine (`Format.name`): in its unit (`<engine>.service`),
    its container's image or name, or the engine's own command (`argv`, read by the engine's rule)."""
    if event.fields.get("argv") is not None:
        return True
    text = " ".join(str(event.fields.get(k) or "") for k in ("unit", "container", "attrs")).lower()
    return fmt.name.lower() in text


@dataclass(frozen=True)
class StatedLaunch:
    """The launch a line states, or why none is taken (`note`, for the estimate's basis)."""

    launch: Launch | None
    note: str | None = None


def stated_launch(events: Sequence[Event], first: Stamp, fmt: Format) -> StatedLaunch:
    """The launch a line of the run states, when the line is this server's: a launch line with
    its own time (not an inherited one), at most the engine's plausible gap before the first line
    (`LaunchGap.plausible`; further back it is another start: a unit started an hour earlier, a
    `logrotate.service`), and of the server: the last such line of a unit or container that names
    the engine (`<engine>.service`, its image), else of the only unit or container started in
    that window, unless a line naming the engine lies further back (the server's own start, too
    far: a bystander's is not taken for it). Several unnamed ones: which is the server's is not known, and the
    run stays estimated; so does a run whose launch lines are all too far back. Each such line
    not taken is said in the note."""
    gap = fmt.timeouts.launch_gap
    plausible = gap.plausible if gap is not None else MAX_STATED_GAP
    near: list[Event] = []
    far: list[Event] = []
    for e in events:
        # within a second after: the line may itself be the run's first, its fraction cut there
        if e.name in fmt.vocab.launch and e.ts is not None and not e.inherited and first.minus(e.ts) > -1.0:
            (near if first.minus(e.ts) <= plausible else far).append(e)
    named = [e for e in near if _names_engine(e, fmt)]
    found: Event | None = None
    note: str | None = None
    if named:
        found = named[-1]
    elif near and len({_identity(e) for e in near}) == 1 and not any(_names_engine(e, fmt) for e in far):
        found = near[-1]
    elif near:
        starts = ", ".join(dict.fromkeys(f"{_identity(e)} (line {e.line})" for e in near))
        note = (f"launch lines of several units or containers within {plausible:.0f} s before the first line, none "
                f"naming {fmt.display}: {visible(starts, one_line=True)}; which launched this server is not known")
    elif far:
        last = next((e for e in reversed(far) if _names_engine(e, fmt)), far[-1])
        assert last.ts is not None
        note = (f"line {last.line} ({visible(_identity(last), one_line=True)} started at {last.ts.iso}) is "
                f"{fmt_duration(first.minus(last.ts))} before the first line: more than the {plausible:.0f} s a "
                f"launch can precede {fmt.display}'s first line, so another start, not this run's launch")
    if found is None or found.ts is None:
        return StatedLaunch(None, note)
    what = fmt.vocab.kind(found.name).means
    return StatedLaunch(Launch("log", f"line {found.line}, at {found.ts.iso}: {what}", found.ts,
                               max(0.0, first.minus(found.ts)), line=found.line))


def estimate(first: Stamp | None, gap: LaunchGap | None, engine: str, previous_end: Stamp | None = None,
             begins_mid_startup: bool = False, note: str | None = None) -> Launch:
    """The launch no line states: the documented (or history's) gap before the first line, never
    silently zero. A restart in the same log was launched after the previous run's last line,
    which caps the gap. `note`: a launch line not taken, and why (`stated_launch`)."""
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
    if note:
        basis += f"; {note}"
    return Launch("estimated", basis, first.plus(-typical), typical, low, high)


def _stamp(when: datetime) -> Stamp:
    return Stamp(when, when.isoformat(timespec="milliseconds" if when.microsecond else "seconds"))


_LAUNCHED_AT_HINT = "give a time: 22:46:34, 2026-12-05T22:46:34 (Z or +01:00 after it if you like)"


def parse_launched_at(value: object) -> datetime | time:
    """`--launched-at` (or the library's `launched_at=`) as a time of day or a moment: a
    `datetime`, a `time`, or a string (`22:46:34`, `2026-12-05 22:46:34`, `14:20:00Z`,
    `...+01:00`). A date alone (midnight is no launch time), a number or anything else is a
    UsageError that says what to give."""
    if isinstance(value, datetime | time):
        return value
    if isinstance(value, date):
        raise UsageError(f"--launched-at {value.isoformat()}: a date alone is no launch time; {_LAUNCHED_AT_HINT}")
    if not isinstance(value, str):
        raise UsageError(f"--launched-at {value!r} ({type(value).__name__}): not a time; {_LAUNCHED_AT_HINT}")
    text = value.strip()
    shown = visible(text, one_line=True)
    if len(text) == 10 and text[4:5] == "-" and ":" not in text:
        raise UsageError(f"--launched-at {shown}: a date alone is no launch time; {_LAUNCHED_AT_HINT}")
    try:
        if ":" in text and "-" not in text[:10] and "T" not in text:
            return time.fromisoformat(text)
        return datetime.fromisoformat(text.replace(" ", "T", 1))
    except ValueError:
        raise UsageError(f"--launched-at {shown}: not a time; {_LAUNCHED_AT_HINT}") from None


def _readings(launched_at: datetime | time, first: datetime) -> list[tuple[datetime, str]]:
    """The moments on the log's (naive) clock `launched_at` may mean, with how each reads it: a time
    of day on the first line's day or the day before; one with a UTC offset as written (a log on
    that offset) or moved to UTC (a log in UTC, as containers and `docker logs -t` keep)."""
    if isinstance(launched_at, time):
        days = (first.date(), first.date() - timedelta(days=1))
        moments = [datetime.combine(day, launched_at) for day in days]
    else:
        moments = [launched_at]
    out: list[tuple[datetime, str]] = []
    for moment in moments:
        out.append((moment.replace(tzinfo=None), ""))
        if moment.tzinfo is not None:
            utc = moment.astimezone(UTC).replace(tzinfo=None)
            if utc != moment.replace(tzinfo=None):
                out.append((utc, " (read as UTC)"))
    return out


def given_launch(first: Stamp | None, engine: str, launched_at: datetime | time) -> Launch | str:
    """`--launched-at` for a run whose first line is `first`: the user's time on the log's clock
    (see `_readings`). It counts only where it can be this run's launch: not after its first line,
    and no further before it than the engine's plausible gap (`LaunchGap.plausible`: a time of
    another day, or of another start, is not this run's). Otherwise the run keeps its own launch,
    and the warning saying why is returned instead (the caller refuses a time no run could take)."""
    if first is None:
        return "--launched-at: not used: the log has no timestamped line to place a launch before"
    from firedup.formats import all_formats

    fmt = all_formats().get(engine)
    gap = fmt.timeouts.launch_gap if fmt is not None else None
    plausible = gap.plausible if gap is not None else MAX_STATED_GAP
    readings = _readings(launched_at, first.dt)
    fits = [(first.dt - when).total_seconds() for when, _ in readings]
    good = [(gap_s, when, how) for gap_s, (when, how) in zip(fits, readings, strict=True) if -1.0 < gap_s <= plausible]
    if not good:
        when, how = readings[0]
        given = _stamp(when).iso + how
        if fits[0] <= -1.0:  # as written, on the first line's day
            reason = f"{given} is after the log's first line ({first.iso}): not this run's launch"
        else:
            reason = (f"{given} is {fmt_duration(fits[0])} before the log's first line ({first.iso}): more than the "
                      f"{plausible:.0f} s a launch can precede {fmt.display if fmt else engine}'s first line "
                      "(another day, or another start): not this run's launch")
        return f"--launched-at {reason}, left out"
    gap_s, when, how = min(good, key=lambda g: abs(g[0]))
    stamp = _stamp(when)
    return Launch("given", f"given: launched at {stamp.iso}{how} (--launched-at)", stamp, max(0.0, gap_s))


def measured_launch(when: datetime, first: Stamp | None, basis: str) -> Launch:
    """A process start firedup saw (`wait --pid`), already on the log's clock."""
    stamp = _stamp(when)
    return Launch("measured", basis, stamp, first.minus(stamp) if first is not None else None)


__all__ = ["KNOWN", "SOURCES", "Launch", "LaunchedAt", "StatedLaunch", "estimate", "given_launch", "launch_gap_text",
           "measured_launch", "parse_launched_at", "stated_launch"]

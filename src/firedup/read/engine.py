"""The incremental engine: logical lines in, events out, one line at a time.

It is what `wait` runs on a growing log and what `parse` runs on small inputs. The batch
engine (`firedup.read.batch`) must give exactly the same events from the same rule tables;
a differential test holds them to that.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

from firedup.formats.base import Format, Header, Rule
from firedup.formats.convert import convert_field
from firedup.formats.vocab import CLOCK_FIRST as CLOCK_FIRST
from firedup.formats.vocab import CLOCK_LAST as CLOCK_LAST
from firedup.formats.vocab import CLOCK_OUTER_FIRST as CLOCK_OUTER_FIRST
from firedup.formats.vocab import HTTP_ACCESS
from firedup.read.clock import Clock, Stamp
from firedup.read.collectors import OuterStamp
from firedup.read.sources import Line

# Events the engine itself emits (not from rules, `vocab.READER`): the first and the last line
# with the engine's own timestamp around every possible run boundary and at the end of input
# (CLOCK_FIRST, CLOCK_LAST), and the first line since such a boundary that carries only a
# collector's stamp (glog lines, `print` output), its stamp moved onto the engine's clock (see
# `Clock.first_on_engine_clock`; emitted once the offset is known, so it comes after lines it precedes).
CLOCK_EVENTS = frozenset({CLOCK_FIRST, CLOCK_LAST, CLOCK_OUTER_FIRST})

# Gaps between the engine's own lines shorter than this are not recorded (the timeline's
# silence threshold is never below it).
GAP_SECONDS = 10.0
# Lines of a start-up that no rule matched, kept for mining (per source; the rest is counted).
UNMATCHED_LIMIT = 20_000
UNMATCHED_CHARS = 240
# A start-up that has not reached `ready` this many lines after it began is not watched further:
# a log that never gets ready (a hang, a server whose ready line this format does not know) must
# not make the batch engine read every one of its lines.
WATCH_LINES = 200_000


@dataclass(slots=True)
class Event:
    """A line that matched a rule, with what the rule read from it."""

    name: str
    line: int  # physical line number, 1-based
    ts: Stamp | None  # the line's own time, or the last one seen when `inherited`
    rank: str | None = None  # "TP0", "DP1 TP1", "GPU0"; None for untagged lines
    fields: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # the message
    inherited: bool = False
    header: str = "bare"  # which header family the line had
    proc: str | None = None
    # The process id of the line's process tag ("(WorkerDict pid=26107)" -> 26107): under a
    # launcher such as Ray, one log holds several engines, told apart only by it
    # (timeline.split_engines).
    pid: int | None = None
    # The source tag of an unknown wrapper in front of the line ("[worker_0]": `formats.base.
    # wrapper_tag`): one harness may re-log several servers, told apart by it.
    wrapper: str | None = None

    def key(self) -> tuple[Any, ...]:
        """What two engines must agree on."""
        return (self.name, self.line, self.ts.iso if self.ts else None, self.inherited, self.rank,
                sorted((k, repr(v)) for k, v in self.fields.items()), self.text, self.header, self.pid,
                self.wrapper)


@dataclass(slots=True, frozen=True)
class Gap:
    """Time between two consecutive lines of a start-up that carry the engine's own clock
    (access lines are the outside world's and do not count): no line said anything."""

    since_line: int
    since: Stamp
    line: int
    ts: Stamp
    since_text: str = ""  # the two lines' messages (cut to UNMATCHED_CHARS)
    text: str = ""
    pid: int | None = None  # in `LineStats.process_gaps`: the process tag both lines carry
    wrapper: str | None = None  # ... or the wrapper's source tag (`Event.wrapper`), which comes first

    def key(self) -> tuple[Any, ...]:
        return (self.since_line, self.since.iso, self.line, self.ts.iso, self.since_text, self.text, self.pid,
                self.wrapper)


@dataclass(slots=True, frozen=True)
class Unmatched:
    """A line of a start-up that no rule matched: its number, message (cut) and the time it
    was printed at or after (its own stamp, else the last one before it)."""

    line: int
    text: str
    ts: Stamp | None
    own: bool
    rank: str | None = None  # the line's rank tag: an excerpt's ranks show on lines no rule knows


@dataclass(slots=True)
class LineStats:
    """How every input line was accounted for."""

    physical: int = 0  # physical lines read
    logical: int = 0  # after splitting progress redraws and glued lines
    matched: int = 0  # became an event
    runtime: int = 0  # runtime traffic skipped by literal (batch lines)
    timestamped: int = 0  # carried the engine's own timestamp but no rule matched
    other: int = 0  # everything else: third-party output, traceback bodies, blank lines
    # Batch engine only: lines it left unread (no rule literal, no collector prefix; or an
    # access line `compact` would drop); matched + runtime + timestamped + other + skipped
    # is the same total.
    skipped: int = 0
    # Not counts: what the timeline needs to find silences and mine unknown lines, recorded
    # while a start-up runs (until `ready`; again from a line that may start a run).
    gaps: list[Gap] = field(default_factory=list)
    # The same between consecutive lines of one source: a wrapper's tag (`Event.wrapper`), else
    # a process tag (`Line.pid`, a Ray actor's): in a log of several engines
    # (`timeline.build.split_engines`) each engine's silences come from these, since another
    # engine's lines would end a silence of its own in `gaps`.
    process_gaps: list[Gap] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    unmatched_dropped: int = 0  # lines past UNMATCHED_LIMIT, counted only

    def as_dict(self) -> dict[str, int]:
        out = {"physical": self.physical, "logical": self.logical, "matched": self.matched,
               "runtime": self.runtime, "timestamped": self.timestamped, "other": self.other}
        if self.skipped:
            out["skipped"] = self.skipped
        return out


@dataclass(slots=True)
class Parsed:
    """A line split into header parts and message, before rules run."""

    header: Header | None
    msg: str
    ts: Stamp | None
    own_clock: bool
    rank: str | None
    level: str | None
    proc: str | None = None  # the line's process tag, or one a wrapper ended with
    pid: int | None = None
    wrapper: str | None = None  # a wrapper's source tag (`Event.wrapper`)
    outer: OuterStamp | None = None  # a harness's own stamp before the engine's (`Scanner.wrapper_stamp`)

    @property
    def source(self) -> tuple[int | None, str | None]:
        """Whose line this is, for silences per source: a wrapper's tag, else a process tag."""
        return (None, self.wrapper) if self.wrapper is not None else (self.pid, None)


_LITERAL_INDEX: dict[int, tuple[Format, tuple[str, ...], dict[str, tuple[Rule, ...]], dict[int, int]]] = {}


def _outer_stamp(groups: Mapping[str, Any]) -> OuterStamp | None:
    """A header's date and time as a collector's stamp (a harness's in front of the engine's)."""
    date_text, time_text = groups.get("date"), groups.get("time")
    if not date_text or not time_text or len(date_text) != 10:
        return None
    try:
        year, month, day = (int(p) for p in date_text.split("-"))
    except ValueError:
        return None
    frac = groups.get("frac") or ""
    return OuterStamp(f"{date_text} {time_text}" + (f".{frac}" if frac else ""), year, month, day, time_text, frac)


def _literal_index(fmt: Format) -> tuple[tuple[str, ...], dict[str, tuple[Rule, ...]], dict[int, int]]:
    """A format's distinct rule literals, the rules naming each, and each rule's place."""
    found = _LITERAL_INDEX.get(id(fmt))
    if found is None or found[0] is not fmt:
        literals = tuple(sorted({lit for rule in fmt.parsing.rules for lit in rule.literals}))
        rules_of = {lit: tuple(rule for rule in fmt.parsing.rules if lit in rule.literals) for lit in literals}
        found = _LITERAL_INDEX[id(fmt)] = (fmt, literals, rules_of, {id(rule): i for i, rule in enumerate(fmt.parsing.rules)})
    return found[1], found[2], found[3]


def _holds_any(text: str, literals: Sequence[str]) -> bool:
    """Whether `text` holds one of `literals` (`any` over a generator, without the generator:
    this runs for every line, often over one or two literals)."""
    for literal in literals:  # noqa: SIM110 - `any` over a generator costs a generator per line
        if literal in text:
            return True
    return False


def _normalise_ranks(text: str | None) -> str | None:
    """A header's rank tags, one space apart (" TP0" -> "TP0"); a log repeats a few, so each
    short one read is remembered (`_RANKS_MEMO` at most at a time)."""
    if not text:
        return None
    ranks = _RANKS.get(text)
    if ranks is None:
        ranks = " ".join(text.split())
        if len(text) <= _RANKS_MEMO_CHARS:
            if len(_RANKS) >= _RANKS_MEMO:
                _RANKS.clear()
            _RANKS[text] = ranks
    return ranks or None


_RANKS_MEMO, _RANKS_MEMO_CHARS = 1024, 256
_RANKS: dict[str, str] = {}


normalise_ranks = _normalise_ranks


class Scanner:
    """Turns the logical lines of one source into events, keeping the clock between lines."""

    def __init__(self, fmt: Format, default_date: date | None = None, file_year: int | None = None,
                 file_date: date | None = None) -> None:
        self.fmt = fmt
        self.clock = Clock(default_date, file_year, file_date)
        self.stats = LineStats()
        self._last_own: tuple[Stamp, int] | None = None  # last own-clock stamp and its line
        self._want_first = True  # emit CLOCK_FIRST at the next own-clock stamp
        # the first line since then with only a collector's stamp, until an own-clock line
        # that carries a collector's stamp too gives the offset (CLOCK_OUTER_FIRST)
        self._outer_first: tuple[int, OuterStamp] | None = None
        self._last_any: Stamp | None = None  # fallback for logs that never show their own clock
        self._last_physical = 0
        # With `keep_stamps`: the time of the line fed last, and whether it is on the engine's
        # own clock (its own stamp, or a collector's moved onto it by the measured offset);
        # None when the line has no time of its own. `replay` paces lines by it.
        self.keep_stamps = False
        self.last_stamp: tuple[Stamp, bool] | None = None
        # the last own-clock line that is not an access line: its time, number and message
        self._last_active: tuple[Stamp, int, str] | None = None
        # the same, per source (`Parsed.source`: a wrapper's tag, else a process tag)
        self._last_active_of: dict[tuple[int | None, str | None], tuple[Stamp, int, str]] = {}
        # the header a harness writes its own stamp with before the engine's (`Format.wrapper_stamp`,
        # from the log's head): a line with that header alone is on the harness's clock
        self.wrapper_stamp: Header | None = None
        self._offset_of: dict[str, timedelta | None] = {}  # per wrapper tag: its collector-to-engine clock offset
        self.watching = True  # recording gaps and unmatched lines (a start-up is under way)
        # the kinds that restart and stop that recording (`Kind.watch`): only a start-up's time
        # is explained, and after ready a server's log is runtime traffic
        self._watch_on, self._watch_off = fmt.vocab.watch_on, fmt.vocab.watch_off
        self._launch = fmt.vocab.launch  # a launcher's line (a unit's start): never the server's first line
        # Launch lines read before any line showed both clocks, with their collector's stamp: put
        # on the engine's clock once a line does (a journald `Dec 31` takes the year nearest the
        # server's first stamp; a `docker events` stamp on another UTC offset is moved onto it)
        self._pending_launch: list[tuple[Event, OuterStamp]] = []
        self._watch_until = WATCH_LINES  # the last line number watched (WATCH_LINES after the start)

    # -- header layer ------------------------------------------------------------------
    def _layout(self, text: str) -> tuple[Header, dict[str, Any], str, str | None] | None:
        """The header a line has (`Format.layout`: behind a wrapper too), its groups, its message
        and level (no clock involved)."""
        laid = self.fmt.layout(text)
        return None if laid.header is None else (laid.header, dict(laid.groups), laid.msg, laid.level)

    def layout(self, text: str) -> tuple[Header, dict[str, Any], str, str | None] | None:
        """`_layout`, for readers that need a line's shape without touching the clock."""
        return self._layout(text)

    def makes_event(self, text: str, rules: Sequence[Rule]) -> bool:
        """Whether `feed` would make an event of this line with these rules, without
        touching the clock or any other state (the batch engine looks before it feeds)."""
        msg = self.fmt.layout(text).msg
        if _holds_any(msg, self.fmt.parsing.runtime_literals):
            return False
        return any(_holds_any(msg, rule.literals) and rule.regex.search(msg) for rule in rules)

    def split(self, line: Line) -> Parsed:
        laid = self.fmt.layout(line.text)
        wrapper = laid.wrapper
        if line.tag is not None and wrapper is None:  # a collector's service: the line's source
            wrapper = line.tag
        # the line's own process tag; else one its wrapper ended with
        proc, pid = (line.proc, line.pid) if line.proc is not None or line.pid is not None else (laid.proc, laid.pid)
        header, g = laid.header, laid.groups
        outer = None
        if self.wrapper_stamp is not None and header is not None and line.outer is None:
            if laid.opened_by is self.wrapper_stamp and laid.opening is not None:
                outer = _outer_stamp(laid.opening)  # two clocks on the line: the engine's decides
            elif header is self.wrapper_stamp and (outer := _outer_stamp(g)) is not None:
                header = None  # only the harness's stamp: a collector's, moved onto the engine's clock
        if header is None:
            return Parsed(None, laid.msg, None, False, self.fmt.rank_from_proc(proc, pid), None, proc, pid,
                          wrapper, outer)
        ts = None
        if g.get("time"):
            ts = self.clock.resolve(date_text=g.get("date"), month_day=g.get("md"), time_text=g["time"],
                                    frac=g.get("frac") or "", outer=line.outer,
                                    foreign=header.clock != "own")
        rank = _normalise_ranks(g.get("ranks"))
        if rank is None and g.get("gpu") is not None:
            rank = f"GPU{g['gpu']}"
        if rank is None and g.get("rank") is not None:
            rank = g["rank"]
        if rank is None:
            tag_proc, tag_pid = (g["proc"], int(g["pid"]) if g.get("pid") else None) if g.get("proc") else (proc, pid)
            rank = self.fmt.rank_from_proc(tag_proc, tag_pid)
        return Parsed(header, laid.msg, ts, header.clock == "own" and ts is not None, rank, laid.level, proc, pid,
                      wrapper, outer)

    # -- rule layer --------------------------------------------------------------------
    def feed(self, line: Line, rules: Sequence[Rule] | None = None,
             found: tuple[str, Sequence[Rule]] | None = None) -> list[Event]:
        """The events of one logical line. `rules` narrows the rules tried to those whose
        literals the caller found in the raw line (the batch engine); None tries them all.
        `found` (with `rules` None): a text and the rules whose literals it holds, as the
        batch engine's scan found them in the raw line this one was normalised from; they
        stand for the line's own where its message is a substring of that text (a prefix
        stripped: every literal of the message is in the text), and are looked for else."""
        stats = self.stats
        stats.logical += 1
        if line.number > stats.physical:
            stats.physical = line.number
        self._watch_limit(line.number)
        if not line.text and line.outer is None and line.proc is None:
            # A blank line: no header, no rule, no clock; all it does is count. A .gz of
            # millions of them costs a counter each, not a pass through every layer.
            stats.other += 1
            if self.keep_stamps:
                self.last_stamp = None
            return []
        parsed = self.split(line)
        if parsed.outer is not None:
            line = replace(line, outer=parsed.outer)
        previous_own = self._last_own
        own = parsed.own_clock and parsed.ts is not None
        if own:
            assert parsed.ts is not None
            self._last_own = (parsed.ts, line.number)
        msg = parsed.msg
        if _holds_any(msg, self.fmt.parsing.runtime_literals):
            return self._runtime_line(line, parsed, own)
        ts, inherited = self._time_of(line, parsed, own)
        if self.keep_stamps:
            # on the engine's clock: its own stamp, or a collector's moved by the offset
            on_own = own or (ts is not None and parsed.ts is None and self._last_own is not None)
            self.last_stamp = (ts, on_own) if ts is not None and not inherited else None
        if rules is None:
            rules = found[1] if found is not None and msg in found[0] else self._rules_in(msg)
        event = self._match(msg, line, parsed, ts, inherited, rules)
        if event is None:
            return self._unmatched_line(line, parsed, own)
        return self._matched_line(line, parsed, own, event, previous_own)

    def _runtime_line(self, line: Line, parsed: Parsed, own: bool) -> list[Event]:
        """`feed` of runtime traffic (a `runtime_literals` line): counted, no event of its own."""
        self.stats.runtime += 1
        if own:
            assert parsed.ts is not None
            self._active(parsed.ts, line.number, parsed.msg, parsed.source)
        if self.keep_stamps:
            self.last_stamp = (parsed.ts, True) if own and parsed.ts is not None else None
        out: list[Event] = []
        self._mark_start(out, parsed, line)
        return out

    def _unmatched_line(self, line: Line, parsed: Parsed, own: bool) -> list[Event]:
        """`feed` of a line no rule matched: counted, and kept for mining while watching."""
        if own:
            self.stats.timestamped += 1
            assert parsed.ts is not None
            self._active(parsed.ts, line.number, parsed.msg, parsed.source)
        else:
            self.stats.other += 1
        self._keep_unmatched(line.number, parsed.msg, parsed.ts if own else None, parsed.rank)
        out: list[Event] = []
        self._mark_start(out, parsed, line)
        return out

    def _matched_line(self, line: Line, parsed: Parsed, own: bool, event: Event,
                      previous_own: tuple[Stamp, int] | None) -> list[Event]:
        """`feed` of a line that made `event`: after the marks of where a run may end and start."""
        self.stats.matched += 1
        if own and event.name != HTTP_ACCESS:
            assert parsed.ts is not None
            self._active(parsed.ts, line.number, parsed.msg, parsed.source)
        self._watch(event, own)
        out: list[Event] = []
        starts_run = bool(event.fields.get("starts_run"))
        if starts_run and previous_own is not None:
            out.append(Event(CLOCK_LAST, previous_own[1], previous_own[0], header="clock"))
        if event.name in self._launch:
            # systemd's `Started`, a runtime's `container start`, an echoed command: the launcher's
            # time, before the server printed anything; the run's first line is the server's next
            if not own and line.outer is not None and self.clock.engine_offset is None:
                self._pending_launch.append((event, line.outer))
            if starts_run:
                self._outer_first, self._want_first = None, True
        else:
            self._mark_start(out, parsed, line, starts_run)
        out.append(event)
        return out

    def _time_of(self, line: Line, parsed: Parsed, own: bool) -> tuple[Stamp | None, bool]:
        """The time of a line that is not runtime traffic, and whether it is inherited (the last
        own-clock stamp's). What it changes: the offset between the engine's clock and a
        collector's (measured on a line that carries both), and the last stamp any line had
        (`_last_any`, read only while no own-clock line has come); a collector's stamp read
        before any own-clock line also tells the clock where the dates come from."""
        ts, inherited = parsed.ts, False
        if parsed.wrapper is not None and line.outer is not None:
            # a source of its own (a compose service, a harness's worker): the offset between its
            # collector's clock and its engine's is its own, not the last other server's
            self.clock.engine_offset = self._offset_of.get(parsed.wrapper)
        if own and line.outer is not None and parsed.ts is not None:
            self.clock.measure_offset(line.outer, parsed.ts)
            if parsed.wrapper is not None:
                self._offset_of[parsed.wrapper] = self.clock.engine_offset
            while self._pending_launch:
                early, outer = self._pending_launch.pop()
                moved = self.clock.on_engine_clock(outer, parsed.ts)
                if moved is not None:
                    early.ts = moved
        if ts is not None and not own and self._last_own is not None:
            ts, inherited = self._last_own[0], True  # a foreign clock: keep ours
        if ts is None and line.outer is not None and self._last_own is not None:
            # a line without a time of its own (uvicorn's): the collector's time, on our clock
            ts = self.clock.on_engine_clock(line.outer, self._last_own[0])
        if ts is None:
            if self._last_own is not None:
                ts, inherited = self._last_own[0], True
            elif line.outer is not None:  # a harness's stamp in the engine's header shape dates nothing
                ts = self.clock.resolve(outer=line.outer, foreign=parsed.outer is not None)
            elif self._last_any is not None:
                ts, inherited = self._last_any, True
        if ts is not None and not inherited:
            self._last_any = ts
        return ts, inherited

    # -- silences and unmatched lines -----------------------------------------------------
    def _active(self, ts: Stamp, number: int, msg: str, source: tuple[int | None, str | None] = (None, None)) -> None:
        """A line of the engine's own with its own time: the end of any silence before it, in
        the whole log and among the lines of its source (`Parsed.source`)."""
        here = (ts, number, msg[:UNMATCHED_CHARS])
        self._end_silence(self._last_active, here, self.stats.gaps, (None, None))
        self._last_active = here
        if source != (None, None):
            self._end_silence(self._last_active_of.get(source), here, self.stats.process_gaps, source)
            self._last_active_of[source] = here

    def _end_silence(self, last: tuple[Stamp, int, str] | None, here: tuple[Stamp, int, str], gaps: list[Gap],
                     source: tuple[int | None, str | None]) -> None:
        """Record the gap from the active line `last` to `here` while watching, if long enough."""
        if self.watching and last is not None and here[0].minus(last[0]) >= GAP_SECONDS:
            gaps.append(Gap(last[1], last[0], here[1], here[0], last[2], here[2], *source))

    def _keep_unmatched(self, number: int, msg: str, own_ts: Stamp | None, rank: str | None = None) -> None:
        if not self.watching or not msg.strip():
            return
        stats = self.stats
        if len(stats.unmatched) >= UNMATCHED_LIMIT:
            stats.unmatched_dropped += 1
            return
        ts = own_ts if own_ts is not None else (self._last_own[0] if self._last_own is not None else None)
        stats.unmatched.append(Unmatched(number, msg[:UNMATCHED_CHARS], ts, own_ts is not None, rank))

    def _watch_limit(self, number: int) -> None:
        if self.watching and number > self._watch_until:
            self.watching = False

    def _watch(self, event: Event, own: bool) -> None:
        if event.fields.get("starts_run") or event.name in self._watch_on:
            if not self.watching:
                self._watch_until = event.line + WATCH_LINES
                # lines since `ready` went unwatched (the batch engine leaves them unread):
                # a silence of this start-up is measured from here
                self._last_active = ((event.ts, event.line, event.text[:UNMATCHED_CHARS])
                                     if own and event.ts is not None else None)
                source = (None, event.wrapper) if event.wrapper is not None else (event.pid, None)
                self._last_active_of = ({source: self._last_active}
                                        if self._last_active is not None and source != (None, None) else {})
            self.watching = True
        elif event.name in self._watch_off:
            self.watching = False

    def quiet_line(self, line: Line, access_rules: Sequence[Rule]) -> list[Event]:
        """What `feed` does with a line the batch engine proved makes no event `compact` keeps
        (no rule literal, or an access line it drops), in place of the line, in file order: the
        clock state (its own stamp, or a collector's: `_time_of`), the marks of a run's first
        line (`_mark_start`: the events returned), and while `watching`, the end of a silence
        and the line kept for mining. Only the counts are left to `skip`."""
        self._watch_limit(line.number)
        out: list[Event] = []
        if not line.text and line.outer is None and line.proc is None:
            return out  # a blank line: all `feed` does is count it
        parsed = self.split(line)
        own = parsed.own_clock and parsed.ts is not None
        if own:
            assert parsed.ts is not None
            self._last_own = (parsed.ts, line.number)
        runtime = _holds_any(parsed.msg, self.fmt.parsing.runtime_literals)
        if not runtime:
            self._time_of(line, parsed, own)
        self._mark_start(out, parsed, line)
        if access_rules and self.makes_event(line.text, access_rules):
            return out  # an access line: the outside world's, neither activity nor unknown
        if own:
            assert parsed.ts is not None
            self._active(parsed.ts, line.number, parsed.msg, parsed.source)
        if not runtime:
            self._keep_unmatched(line.number, parsed.msg, parsed.ts if own else None, parsed.rank)
        return out

    @property
    def collector_times_count(self) -> bool:
        """Whether a line with no clock of the engine's own and a collector's stamp gets that
        stamp's time (`_time_of`: on the engine's clock once the offset is known, as it is
        before any own-clock line), not an inherited one. Until the next own-clock line, such
        lines' times are ordered as their stamps are."""
        return self._last_own is None or self.clock.engine_offset is not None

    @property
    def collector_stamps_count(self) -> bool:
        """Whether a line with no clock of the engine's own can still change this scanner's
        state, through a collector's stamp (`_time_of`, `_mark_start`): before the first
        own-clock line (it dates the lines after it, and says where the source's dates come
        from), or while a run's first line is wanted and none with only a collector's stamp
        is marked yet. Otherwise such a line changes nothing but the counts."""
        return self._last_own is None or (self._want_first and self._outer_first is None)

    def _mark_start(self, out: list[Event], parsed: Parsed, line: Line, starts_run: bool = False) -> None:
        """Mark where a run may start, after a line that may open one (`starts_run`).

        CLOCK_FIRST: the first line since then with the engine's own clock. CLOCK_OUTER_FIRST:
        the first line since then with only a collector's stamp, if one came before the own
        clock, once the first line with both stamps gives the offset between the clocks. A line
        still waiting for the offset where another run may start is dropped (the run before
        never showed both clocks), unless this line carries both: its event then comes before
        the line's own, so `timeline.split_runs` keeps it with the lines before.
        """
        own = parsed.own_clock and parsed.ts is not None
        if own and line.outer is not None and self._outer_first is not None:
            assert parsed.ts is not None
            number, early = self._outer_first
            stamp = self.clock.first_on_engine_clock(early, line.outer, parsed.ts)
            if stamp is not None:
                out.append(Event(CLOCK_OUTER_FIRST, number, stamp, header="clock", fields={"offset_line": line.number}))
            self._outer_first = None
        if starts_run:
            self._outer_first = None
            self._want_first = True
        if not own and line.outer is not None and self._want_first and self._outer_first is None:
            self._outer_first = (line.number, line.outer)
        if self._want_first and own:
            out.append(Event(CLOCK_FIRST, line.number, parsed.ts, parsed.rank, header="clock", pid=parsed.pid,
                             wrapper=parsed.wrapper))
            self._want_first = False

    def skip(self, count: int, last_number: int, first_own: tuple[Line, Parsed] | None,
             last_own: tuple[Stamp, int] | None) -> list[Event]:
        """Account for `count` lines up to `last_number` that the batch engine did not feed.

        The caller proves them inert, or access lines whose events `compact` would drop:
        one logical line each, no collector prefix, and either no clock or the engine's own
        dated one. Such lines only move the last own-clock stamp (`last_own`) and, when one
        is wanted, the first (`first_own`).
        """
        out: list[Event] = []
        if count <= 0:
            return out
        self.stats.logical += count
        self.stats.skipped += count
        if last_number > self.stats.physical:
            self.stats.physical = last_number
        if first_own is not None:  # no collector prefix: it can only be a CLOCK_FIRST
            self._mark_start(out, first_own[1], first_own[0])
        if last_own is not None:
            self._last_own = last_own
        return out

    def _rules_in(self, msg: str) -> Sequence[Rule]:
        """The rules whose literals `msg` holds, in table order: each distinct literal is
        looked for once, not once per rule that names it (some 70 rules, 100 literals)."""
        literals, rules_of, order = _literal_index(self.fmt)
        found = [lit for lit in literals if lit in msg]
        if not found:
            return ()
        if len(found) == 1:
            return rules_of[found[0]]
        chosen = {id(rule): rule for lit in found for rule in rules_of[lit]}
        return sorted(chosen.values(), key=lambda rule: order[id(rule)])

    def match(self, msg: str, line: Line, parsed: Parsed, ts: Stamp | None, inherited: bool,
              rules: Sequence[Rule]) -> Event | None:
        """The event of the first of `rules` that matches `msg` (what `feed` makes of a line)."""
        return self._match(msg, line, parsed, ts, inherited, rules)

    @property
    def last_own(self) -> tuple[Stamp, int] | None:
        """The last line with the engine's own time seen: its stamp and number."""
        return self._last_own

    @property
    def wants_first(self) -> bool:
        """True until the next own-clock line has been marked as a run's first."""
        return self._want_first

    def _match(self, msg: str, line: Line, parsed: Parsed, ts: Stamp | None, inherited: bool,
               rules: Sequence[Rule]) -> Event | None:
        for rule in rules:
            if not _holds_any(msg, rule.literals):
                continue
            m = rule.regex.search(msg)
            if m is None:
                continue
            groups = m.groupdict()
            fields = rule.convert(groups)
            for regex, conv, names, literal in self.fmt.field_searches:
                if literal not in msg or not names.isdisjoint(fields):
                    continue
                fm = regex.search(msg)
                if fm:
                    for key, value in fm.groupdict().items():
                        if value is not None:
                            convert_field(conv, key, value, fields)
            if parsed.level:
                fields.setdefault("level", parsed.level)
            if line.repeated > 1:
                fields["repeated"] = line.repeated
            if line.redraws:
                fields["_redraws"] = line.redraws
            if rule.starts_run:
                fields["starts_run"] = rule.starts_run
            rank = parsed.rank
            if rank is None and rule.rank is not None:
                try:
                    rank = rule.rank.format(**groups)
                except (KeyError, IndexError):
                    rank = None
            header = parsed.header.name if parsed.header else "bare"
            return Event(rule.name, line.number, ts, rank, fields, msg, inherited, header, parsed.proc, parsed.pid,
                         parsed.wrapper)
        return None

    def finish(self) -> list[Event]:
        if self._last_own is None:
            return []
        stamp, number = self._last_own
        return [Event(CLOCK_LAST, number, stamp, header="clock")]


def scan(fmt: Format, lines: Iterable[Line], default_date: date | None = None,
         file_year: int | None = None, file_date: date | None = None) -> tuple[list[Event], LineStats, Clock]:
    """All events of a finite sequence of lines."""
    scanner = Scanner(fmt, default_date, file_year, file_date)
    events: list[Event] = []
    for line in lines:
        events.extend(scanner.feed(line))
    events.extend(scanner.finish())
    return events, scanner.stats, scanner.clock


def iter_scanned(scanner: Scanner, lines: Iterable[Line]) -> Iterator[Event]:
    """The events of `lines` through `scanner`, streamed (its stats and clock stay readable)."""
    for line in lines:
        yield from scanner.feed(line)
    yield from scanner.finish()


def iter_events(fmt: Format, lines: Iterable[Line], default_date: date | None = None) -> Iterator[Event]:
    scanner = Scanner(fmt, default_date)
    for line in lines:
        yield from scanner.feed(line)
    yield from scanner.finish()

"""The batch engine: the incremental engine's events, without reading every line.

Runtime traffic (`Decode batch` lines and the like) is nearly all of a long log, and no
rule can match it. This engine lets one multi-literal scan (Hyperscan, over the memory-
mapped file) find the candidate lines: those holding a rule literal of the format, and
those whose meaning a rule-free reading could get wrong (a collector prefix, ANSI codes, a
`\\r` redraw, a progress bar, a header whose clock depends on earlier lines, JSON). Only
candidates go through `sources.normalise` and `engine.Scanner.feed`, the very code the
incremental engine runs, with the rules narrowed to those whose literals the scan saw.

Every other line is inert: one logical line, no prefix, no rule literal, and either no
clock or the engine's own fully dated one. Such a line changes only the scanner's last
own-clock stamp (which events without a time inherit, and which closes a run) and, rarely,
marks a run's first stamp; `Scanner.skip` applies that, from the last such line before the
next candidate (found by reading back a line or two) and the first one when wanted.

Access lines (`http.access`, one request each) are the rest of the traffic, and events:
they are read in bulk with the rule table's own regexes (polars for many, Python's `re`
for a few) and handed to `compact.compact` as blocks, which builds only the few events a
timeline can use (the first request, the first health probe, ...).

Two things the scan cannot prove send the source back to the incremental engine
(`NeedExact`): a line longer than `sources.MAX_LINE_BYTES`, and a time-only or year-less
stamp that would depend on the latest dated stamp among lines that were skipped.
`parse.parse_source` then reads the source again with the incremental engine.

Events are identical to the incremental engine's (tests/test_batch.py). Line counts differ
in one documented way: skipped lines are counted as `skipped`, not split into runtime,
timestamped and other.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import re
from collections.abc import Iterator
from datetime import date
from typing import Any, cast

from firedup.clock import Clock, Stamp
from firedup.compact import ACCESS, ACCESS_BLOCK, PROBE_PATHS, AnyEvent
from firedup.engine import Event, LineStats, Parsed, Scanner
from firedup.formats.base import Format, Rule
from firedup.sources import _ANSI, _BAR, MAX_LINE_BYTES, Line, normalise

WINDOW = 16 << 20  # bytes scanned per step; pages are released after each step

# Collector prefixes as `sources._strip_outer` reads them, reduced to what starts them
# (Hyperscan has no look-arounds; a wider net only costs a few more candidates).
_PREFIX_STARTS = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}",  # RFC 3339, Docker Desktop's local stamp
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2}",  # journald
    r"[A-Za-z0-9][\w.-]*\s+\| ",  # docker compose
    r"\[(?:INFO|WARN|ERROR|DEBUG) ?\] ",  # DJL serving
    r"\(",  # Ray / vLLM process tags
)
_LINE_START = r"^[ \t\r\f\v]*"  # normalise() strips indentation before reading prefixes


class NeedExact(Exception):
    """The batch engine cannot prove this source's events equal; read it incrementally."""


def available() -> bool:
    """True when the batch engine's libraries are installed (Hyperscan has x86-64 wheels)."""
    try:
        import hyperscan  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


class _Prefilter:
    """One compiled scan for a format: rule literals plus the marks of lines to read."""

    def __init__(self, fmt: Format) -> None:
        import hyperscan
        import numpy as np

        literals = sorted({lit for rule in fmt.rules for lit in rule.literals})
        self.rules_of: list[tuple[Rule, ...]] = [
            tuple(rule for rule in fmt.rules if lit in rule.literals) for lit in literals]
        self.literal_count = len(literals)
        patterns = [re.escape(lit) for lit in literals]
        patterns += _markers(fmt)
        self.light = _LightPlan.of(fmt)
        self._rules: dict[frozenset[int], tuple[Rule, ...] | None] = {}
        self._order = {id(rule): i for i, rule in enumerate(fmt.rules)}
        # pattern id -> the literal belongs to the access rule alone (its lines may go the fast way)
        light_rules = self.light.rules if self.light is not None else None
        self.access_only = np.array([i < len(literals) and self.rules_of[i] == light_rules
                                     for i in range(len(patterns))], dtype=bool)
        self.database = hyperscan.Database()
        flags = [hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY] * len(patterns)
        self.database.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
                              elements=len(patterns), flags=flags)

    def rules_for(self, patterns: frozenset[int]) -> tuple[Rule, ...] | None:
        """The rules whose literals a line holds, in table order; None when a marker says the
        line must be normalised first (which may join text: every rule may then apply)."""
        found = self._rules.get(patterns, ())
        if found != ():
            return found
        rules: tuple[Rule, ...] | None
        if any(p >= self.literal_count for p in patterns):
            rules = None
        else:
            chosen = {id(rule): rule for p in patterns for rule in self.rules_of[p]}
            rules = tuple(sorted(chosen.values(), key=lambda rule: self._order[id(rule)]))
            if self.light is not None and rules == self.light.rules:
                rules = self.light.rules  # so that the scan loop can test it with `is`
        self._rules[patterns] = rules
        return rules


_LIGHT_GROUPS = {"date", "time", "frac", "ranks", "msg"}
_READ_COLUMNS = ("header", "date", "time", "frac", "order", "rank", "path")
POLARS_FROM = 1000  # access lines in a window from which polars reads them faster than `re`


class _LightPlan:
    """How to read an access line without the engine's general machinery (the batch engine's
    fast path): which rule, and which headers it may carry. None when the format's tables
    leave any doubt (the rule names a rank, starts a run, or a field pattern could set `path`)."""

    def __init__(self, fmt: Format, rule: Rule, light_headers: frozenset[str]) -> None:
        self.fmt = fmt
        self.rule = rule
        self.rules = (rule,)
        self.light_headers = light_headers

    @classmethod
    def of(cls, fmt: Format) -> _LightPlan | None:
        rules = [rule for rule in fmt.rules if rule.name == ACCESS]
        if len(rules) != 1:
            return None
        rule = rules[0]
        if rule.rank is not None or rule.starts_run or "path" in rule.fields or "path" in rule.const:
            return None
        if any("path" in regex.groupindex for regex, _conv in fmt.compiled_fields):
            return None
        light = frozenset(h.name for h in fmt.headers if h.clock == "own" and h.decode is None
                          and set(h.regex.groupindex) <= _LIGHT_GROUPS and "date" in h.regex.groupindex)
        return cls(fmt, rule, light) if light else None

    def read(self, texts: list[str]) -> dict[str, list[Any]]:
        """`read_polars` for many lines, `read_python` for a few (polars costs ~5 ms a call)."""
        return self.read_python(texts) if len(texts) < POLARS_FROM else self.read_polars(texts)

    def read_python(self, texts: list[str]) -> dict[str, list[Any]]:
        """`read_polars`, line by line with Python's `re` (what `Scanner.split` and `match` run)."""
        fmt = self.fmt
        columns: dict[str, list[Any]] = {n: [] for n in _READ_COLUMNS}
        for text in texts:
            got = None
            for header in fmt.headers:
                m = header.regex.match(text)
                if m is None:
                    continue
                if header.name in self.light_headers:
                    got = self._python_one(header.name, m)
                break
            for name, value in zip(_READ_COLUMNS, got or (None,) * len(_READ_COLUMNS), strict=True):
                columns[name].append(value)
        return columns

    def _python_one(self, header: str, m: re.Match[str]) -> tuple[Any, ...] | None:
        fmt = self.fmt
        msg = m.group("msg") or ""
        if fmt.compiled_level is not None:
            lm = fmt.compiled_level.match(msg)
            if lm:
                msg = msg[lm.end():]
        if any(lit in msg for lit in fmt.runtime_literals):
            return None
        rm = self.rule.regex.search(msg)
        if rm is None:
            return None
        g = m.groupdict()
        date_text, time_text, frac = g["date"], g["time"], g.get("frac") or ""
        hh, mm, ss = (int(p) for p in time_text.split(":"))
        if not (hh < 24 and mm < 60 and ss < 60):
            return None
        try:
            day = date.fromisoformat(date_text)
        except ValueError:
            return None
        order = f"{day.isoformat()} {time_text} {(frac + '000000')[:6]}"
        rank = " ".join((g.get("ranks") or "").split()) or None
        return header, date_text, time_text, frac, order, rank, rm.groupdict().get("path")

    def read_polars(self, texts: list[str]) -> dict[str, list[Any]]:
        """What `Scanner.feed` would read of each line, for lines it would read as an access
        event with its own dated clock: columns header (None for any other line), date, time,
        frac, order (a sortable stamp), rank, path. The table's regexes, run by polars (the
        rule tables keep to the syntax Python and Rust share; the lines are ASCII)."""
        import polars as pl

        fmt = self.fmt
        frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
        t = pl.col("t")
        # the first header that matches, as Scanner.split takes it
        chosen = pl.coalesce([pl.when(t.str.contains(_anchored(h.pattern))).then(pl.lit(h.name))
                              for h in fmt.headers] + [pl.lit(None, dtype=pl.String)])
        frame = frame.with_columns(chosen.alias("header"))
        names = _READ_COLUMNS
        parts = []
        for header in fmt.headers:
            if header.name not in self.light_headers:
                continue
            part = frame.with_row_index("i").filter(pl.col("header") == header.name)
            if part.is_empty():
                continue
            g = t.str.extract_groups(_anchored(header.pattern))
            part = part.with_columns(g.struct.field("date").alias("date"), g.struct.field("time").alias("time"),
                                     (g.struct.field("frac") if "frac" in header.regex.groupindex
                                      else pl.lit(None, dtype=pl.String)).alias("frac"),
                                     (g.struct.field("ranks") if "ranks" in header.regex.groupindex
                                      else pl.lit(None, dtype=pl.String)).alias("ranks"),
                                     g.struct.field("msg").fill_null("").alias("msg"))
            msg = pl.col("msg")
            if fmt.level_prefix:
                part = part.with_columns(msg.str.replace(_anchored(fmt.level_prefix), ""))
            runtime = pl.lit(False)
            for lit in fmt.runtime_literals:
                runtime = runtime | msg.str.contains(lit, literal=True)
            rule = self.rule
            path = msg.str.extract_groups(rule.pattern).struct.field("path") \
                if "path" in rule.regex.groupindex else pl.lit(None, dtype=pl.String)
            frac = pl.col("frac").fill_null("")
            part = part.with_columns(
                (msg.str.contains(rule.pattern) & ~runtime).alias("matches"),
                path.alias("path"),
                pl.col("date").str.to_date("%Y-%m-%d", strict=False).alias("day"),
                pl.col("time").str.slice(0, 2).cast(pl.Int32, strict=False).alias("hh"),
                pl.col("time").str.slice(3, 2).cast(pl.Int32, strict=False).alias("mm"),
                pl.col("time").str.slice(6, 2).cast(pl.Int32, strict=False).alias("ss"),
                pl.concat_str([pl.col("date"), pl.lit(" "), pl.col("time"), pl.lit(" "),
                               frac.str.pad_end(6, "0").str.slice(0, 6)]).alias("order"),
                pl.col("ranks").fill_null("").str.replace_all(r"\s+", " ").str.strip_chars().alias("rank"),
                frac.alias("frac"),
            )
            part = part.filter(pl.col("matches") & pl.col("day").is_not_null() & (pl.col("day").dt.year() >= 1)
                               & (pl.col("hh") < 24) & (pl.col("mm") < 60) & (pl.col("ss") < 60))
            parts.append(part.select("i", pl.lit(header.name).alias("header"), "date", "time", "frac", "order",
                                     pl.col("rank").replace("", None), "path"))
        rows = pl.DataFrame({"i": range(len(texts))}, schema={"i": pl.UInt32})
        if parts:
            rows = rows.join(pl.concat(parts), on="i", how="left", maintain_order="left")
        else:
            rows = rows.with_columns(*(pl.lit(None, dtype=pl.String).alias(n) for n in names))
        return {n: rows.get_column(n).to_list() for n in names}


def _anchored(pattern: str) -> str:
    """`pattern` as Python's `re.match` runs it: from the start of the text."""
    return f"^(?:{pattern})"


class _Light:
    """An access line read by the fast path; `compact` builds its `Event` only if it keeps it."""

    __slots__ = ("fields", "header", "line", "rank", "scanner", "text", "ts")
    name = ACCESS
    inherited = False
    proc: str | None = None

    def __init__(self, scanner: Scanner, line: int, text: str, header: str, ts: Stamp, rank: str | None,
                 path: str | None) -> None:
        self.scanner = scanner
        self.line = line
        self.text = text
        self.ts: Stamp | None = ts
        self.rank = rank
        self.fields = {"path": path} if path is not None else {}
        self.header = header

    def materialise(self) -> Event:
        """The event `Scanner.feed` makes of this line (reading it again the same way)."""
        scanner = self.scanner
        line = Line(self.line, self.text)
        parsed = scanner.split(line)
        event = scanner.match(parsed.msg, line, parsed, parsed.ts, False, (_light_rule(scanner),))
        assert event is not None, "the fast path read an access line the rule does not match"
        return event


class LightBlock:
    """Consecutive access lines read by the fast path in bulk (polars, the rule table's own
    regexes); `compact` asks for the few it may keep (`notable`) and builds only those."""

    name = ACCESS_BLOCK

    def __init__(self, scanner: Scanner, numbers: list[int], texts: list[str], header: str,
                 stamps: list[tuple[str, str, str]], order: list[str], ranks: list[str | None],
                 paths: list[str | None]) -> None:
        self.scanner = scanner
        self.numbers = numbers
        self.texts = texts
        self.header = header
        self.stamps = stamps
        self.order = order  # sortable text of each stamp: date, time, microseconds
        self.ranks = ranks
        self.paths = paths

    def __len__(self) -> int:
        return len(self.numbers)

    def notable(self) -> list[int]:
        """Indices of the members `compact` could keep: the first, the last, the first health
        probe and the first other request, the first of each rank, and the first with the
        earliest and with the latest stamp."""
        n = len(self.numbers)
        picks = {0, n - 1}
        health = next((i for i, p in enumerate(self.paths) if (p or "").startswith("/health")), None)
        request = next((i for i, p in enumerate(self.paths) if not (p or "").startswith(PROBE_PATHS)), None)
        for i in (health, request):
            if i is not None:
                picks.add(i)
        seen: set[str | None] = set()
        for i, rank in enumerate(self.ranks):
            if rank not in seen:
                seen.add(rank)
                picks.add(i)
        order = self.order
        picks.add(min(range(n), key=order.__getitem__))
        picks.add(max(range(n), key=lambda i: (order[i], -i)))
        return sorted(picks)

    def touch_clock(self) -> None:
        """The clock sees the latest stamp, as it would line by line (the others change nothing)."""
        order = self.order
        self.member(max(range(len(order)), key=lambda i: (order[i], -i)))

    def member(self, i: int) -> _Light:
        stamp = self.scanner.clock.resolve(date_text=self.stamps[i][0], time_text=self.stamps[i][1],
                                           frac=self.stamps[i][2])
        assert stamp is not None, "the block reader let an invalid stamp through"
        return _Light(self.scanner, self.numbers[i], self.texts[i], self.header, stamp, self.ranks[i],
                      self.paths[i])


def _light_rule(scanner: Scanner) -> Rule:
    plan = prefilter(scanner.fmt).light
    assert plan is not None
    return plan.rule


def _normalising_markers() -> list[str]:
    """Patterns of lines that `sources.normalise` does more to than strip them."""
    out = [
        _ANSI.pattern,
        r"#033\[",
        r"\r[^\n]",  # a redraw inside the line (a trailing \r of CRLF is harmless)
        _BAR.pattern,
        "repeated",  # Ray's "[repeated Nx across cluster]"
    ]
    # Python's lstrip() also takes \x1c-\x1f and non-ASCII spaces before a prefix
    out.append(_LINE_START + r"[\x1c-\x1f\x80-\xff]")
    return out + [_LINE_START + p for p in _PREFIX_STARTS]


def _markers(fmt: Format) -> list[str]:
    """Patterns of lines whose reading needs the full normaliser or an in-order clock."""
    out = _normalising_markers()
    for header in fmt.headers:
        groups = header.regex.groupindex
        dated_own = "date" in groups and header.clock == "own"
        clockless = "time" not in groups and "md" not in groups
        if header.decode is not None or not (dated_own or clockless):
            out.append(_LINE_START + _hyperscan_safe(header.pattern))
    return out


def _hyperscan_safe(pattern: str) -> str:
    """A header pattern's start: no leading `^` (the caller anchors it after indentation)
    and nothing from the message on (`(?P<msg>.*)$`), which Hyperscan need not see."""
    cut = pattern.find("(?P<msg>")
    head = pattern[:cut] if cut > 0 else pattern
    return head[1:] if head.startswith("^") else head


_COMPILED: dict[int, tuple[Format, _Prefilter]] = {}


def prefilter(fmt: Format) -> _Prefilter:
    """The compiled scan of a format, once per process (compiling takes some 50 ms)."""
    found = _COMPILED.get(id(fmt))
    if found is None or found[0] is not fmt:
        found = _COMPILED[id(fmt)] = (fmt, _Prefilter(fmt))
    return found[1]


_NORMALISING: list[Any] = []


def head_sample(path: str | os.PathLike[str], lines: int = 2000) -> str:
    """The text `parse` sniffs the format from: its first `lines` logical lines, joined,
    exactly as `sources.read_lines` gives them, but without normalising the lines that
    only need stripping (the scan says which)."""
    import hyperscan

    if not _NORMALISING:
        database = hyperscan.Database()
        patterns = _normalising_markers()
        database.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
                         elements=len(patterns), flags=[hyperscan.HS_FLAG_MULTILINE] * len(patterns))
        _NORMALISING.append(database)
    database = _NORMALISING[0]
    data = b""
    at_end = False
    with open(path, "rb") as fh:
        while data.count(b"\n") < lines:
            more = fh.read(1 << 20)
            if not more:
                at_end = True
                break
            data += more
            if len(data) > 64 << 20:
                raise NeedExact("the first lines are too long to sniff quickly")
    raws = data.split(b"\n")
    last = raws.pop()  # after the last newline: a cut line, or the file's unterminated last one
    if at_end and last:
        raws.append(last)
    raws = raws[:lines]
    head = b"\n".join(raws)
    flagged: set[int] = set()
    starts: list[int] = []
    offset = 0
    for raw in raws:
        starts.append(offset)
        offset += len(raw) + 1

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        flagged.add(bisect.bisect_right(starts, max(stop - 1, 0)) - 1)

    database.scan(head, match_event_handler=on_match)
    texts: list[str] = []
    for index, raw in enumerate(raws):
        text = raw.decode("utf-8", errors="replace")
        if index in flagged:
            texts.extend(line.text for line in normalise(text, index + 1))
        else:
            texts.append(text.rstrip("\r").strip())
        if len(texts) >= lines:
            break
    return "\n".join(texts[:lines])


class _GuardedClock(Clock):
    """A clock that refuses to complete a stamp from history the batch engine may have skipped."""

    unsure = False

    def _running_day(self, time_text: str) -> date:
        if self.unsure:
            raise NeedExact("a time-only stamp after skipped dated lines")
        return super()._running_day(time_text)

    def _year_for(self, month: int, dom: int) -> int:
        if self.unsure:
            raise NeedExact("a year-less stamp after skipped dated lines")
        return super()._year_for(month, dom)


def scan_file(path: str | os.PathLike[str], fmt: Format, default_date: date | None = None,
              file_year: int | None = None, file_date: date | None = None) -> tuple[list[Event], LineStats, Clock]:
    """All events of a plain (uncompressed) log file, as `engine.scan` gives them."""
    events: list[Event] = []
    scanner = _new_scanner(fmt, default_date, file_year, file_date)
    for batch in _scan(path, scanner, light=False):
        events.extend(batch)  # type: ignore[arg-type]  # without `light`, all are Events
    events.extend(scanner.finish())
    return events, scanner.stats, scanner.clock


def iter_file(path: str | os.PathLike[str], scanner: Scanner) -> Iterator[AnyEvent]:
    """The events of a file, streamed, for `compact.compact` (which builds the access events
    it keeps: the others are never built). `scanner` from `new_scanner` holds stats and clock."""
    for batch in _scan(path, scanner, light=True):
        yield from batch
    yield from scanner.finish()


def new_scanner(fmt: Format, default_date: date | None = None, file_year: int | None = None,
                file_date: date | None = None) -> Scanner:
    return _new_scanner(fmt, default_date, file_year, file_date)


def _new_scanner(fmt: Format, default_date: date | None, file_year: int | None, file_date: date | None) -> Scanner:
    scanner = Scanner(fmt, default_date, file_year, file_date)
    scanner.clock = _GuardedClock(default_date, file_year, file_date)
    return scanner


def _scan(path: str | os.PathLike[str], scanner: Scanner, light: bool) -> Iterator[list[AnyEvent]]:
    pre = prefilter(scanner.fmt)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mm)
        try:
            yield from _windows(mm, view, size, _State(scanner, pre, mm, light), pre)
        finally:
            try:
                view.release()
                mm.close()
            except BufferError:  # a slice still alive in a traceback; the GC closes it
                pass


def _windows(mm: mmap.mmap, view: memoryview, size: int, state: _State,
             pre: _Prefilter) -> Iterator[list[AnyEvent]]:
    import numpy as np

    pos = 0
    while pos < size:
        end = min(size, pos + WINDOW)
        if end < size:
            cut = mm.rfind(b"\n", pos, end)
            if cut < 0:  # no line ends in a whole window: longer than any log line
                raise NeedExact("a line longer than the scan window")
            end = cut + 1
        chunk = np.frombuffer(mm, dtype=np.uint8, count=end - pos, offset=pos)
        newlines = np.flatnonzero(chunk == 10)
        del chunk
        ends = newlines.tolist()
        if not ends or ends[-1] != end - pos - 1:
            ends.append(end - pos)  # the last line has no newline
            newlines = np.append(newlines, end - pos)
        if int(np.diff(newlines, prepend=-1).max()) > MAX_LINE_BYTES:
            raise NeedExact("a line longer than the limit")  # the engine reports it
        del newlines
        hits: list[int] = []
        ids: list[int] = []

        def on_match(pattern: int, start: int, stop: int, flags: int, context: Any,
                     hits: list[int] = hits, ids: list[int] = ids) -> None:
            hits.append(stop)
            ids.append(pattern)

        piece = view[pos:end]
        try:
            pre.database.scan(cast(bytes, piece), match_event_handler=on_match)  # any buffer will do
        finally:
            piece.release()
        yield state.window(pos, ends, hits, ids)
        # the pages stay in the page cache, but leave this process's resident set
        with contextlib.suppress(AttributeError, OSError, ValueError):
            mm.madvise(mmap.MADV_DONTNEED, pos - pos % mmap.PAGESIZE, end - pos + pos % mmap.PAGESIZE)
        pos = end


class _State:
    """The scan's place in the file: line numbers and the lines already accounted for."""

    def __init__(self, scanner: Scanner, pre: _Prefilter, mm: mmap.mmap, light: bool) -> None:
        self.scanner = scanner
        self.pre = pre
        self.mm = mm
        self.clock = scanner.clock
        self.lines_before = 0  # physical lines before the current window
        self.light = pre.light if light else None
        self._stamps: dict[tuple[str, str, str], Stamp] = {}

    def window(self, base: int, ends: list[int], hits: list[int], ids: list[int]) -> list[AnyEvent]:
        """Events of one window; `ends[k]` is where its line k ends (its newline)."""
        import numpy as np

        self._out: list[AnyEvent] = []
        self._done = -1  # last line index of this window fed to the scanner or skipped
        self._quick = 0  # access lines since `_done` read by the fast path
        if hits:
            lines = np.searchsorted(np.asarray(ends), np.asarray(hits) - 1)
            order = np.argsort(lines, kind="stable")
            lines = lines[order]
            patterns = np.asarray(ids)[order]
            cuts = np.flatnonzero(np.diff(lines)) + 1
            starts = np.concatenate(([0], cuts))
            firsts = starts.tolist()
            stops = np.concatenate((cuts, [len(lines)])).tolist()
            quick = np.logical_and.reduceat(self.pre.access_only[patterns], starts).tolist() \
                if self.light is not None else [False] * len(firsts)
            line_list = lines.tolist()
            pattern_list = patterns.tolist()
            pending: list[int] = []
            for a, b, fast in zip(firsts, stops, quick, strict=True):
                k = line_list[a]
                if fast:
                    pending.append(k)
                    continue
                if pending:
                    self._fast_lines(base, ends, pending)
                    pending = []
                self._full(base, ends, k, self.pre.rules_for(frozenset(pattern_list[a:b])))
            if pending:
                self._fast_lines(base, ends, pending)
        self._out.extend(self._skip(base, ends, self._done + 1, len(ends), self._quick))
        self.lines_before += len(ends)
        return self._out

    def _full(self, base: int, ends: list[int], k: int, rules: tuple[Rule, ...] | None) -> None:
        """Line k through the engine: first the lines since the last one it saw."""
        self._out.extend(self._skip(base, ends, self._done + 1, k, self._quick))
        self._out.extend(self._feed(base, ends, k, rules))
        self._done, self._quick = k, 0

    def _fast_lines(self, base: int, ends: list[int], ks: list[int]) -> None:
        """Access lines (their only rule literal is the access rule's): read in bulk, handed
        to `compact` as blocks; a line the bulk read cannot vouch for goes through the engine."""
        plan = self.light
        assert plan is not None
        if self.scanner.wants_first:  # the next own-clock line marks a run's first stamp
            for k in ks:
                self._full(base, ends, k, plan.rules)
            return
        raws = [self._raw(base, ends, k) for k in ks]
        texts = [raw.decode("ascii").rstrip("\n").rstrip("\r").strip() if raw.isascii() else "" for raw in raws]
        read = plan.read(texts)
        headers = read["header"]
        n = len(ks)
        i = 0
        while i < n:
            header = headers[i] if raws[i].isascii() else None
            if header is None:
                self._full(base, ends, ks[i], plan.rules)
                i += 1
                continue
            j = i + 1
            while j < n and headers[j] == header and raws[j].isascii():
                j += 1
            numbers = [self.lines_before + k + 1 for k in ks[i:j]]
            stamps = list(zip(read["date"][i:j], read["time"][i:j], read["frac"][i:j], strict=True))
            block = LightBlock(self.scanner, numbers, texts[i:j], header, stamps, read["order"][i:j],
                               read["rank"][i:j], read["path"][i:j])
            block.touch_clock()
            self._out.append(block)
            self._quick += j - i
            i = j

    def _raw(self, base: int, ends: list[int], k: int) -> bytes:
        start = base + (ends[k - 1] + 1 if k else 0)
        return self.mm[start: base + ends[k] + 1]

    def _line(self, base: int, ends: list[int], k: int) -> Line:
        text = self._raw(base, ends, k).decode("utf-8", errors="replace").rstrip("\n").rstrip("\r").strip()
        return Line(self.lines_before + k + 1, text)

    def _feed(self, base: int, ends: list[int], k: int, rules: tuple[Rule, ...] | None) -> list[Event]:
        """Feed line k, found by the scan, through the incremental engine's own code."""
        if rules is not None:
            # No marker: normalising this line only strips it (see _markers), so skip it.
            return self.scanner.feed(self._line(base, ends, k), rules)
        raw = self._raw(base, ends, k).decode("utf-8", errors="replace")
        out: list[Event] = []
        for line in normalise(raw, self.lines_before + k + 1):
            out.extend(self.scanner.feed(line))
        return out

    def _skip(self, base: int, ends: list[int], first: int, stop: int, light: int) -> list[Event]:
        """Account for lines first..stop-1 of the window: proved inert by the scan, or (`light`
        of them) access lines read by the fast path."""
        if stop <= first:
            return []
        scanner = self.scanner
        first_own: tuple[Line, Parsed] | None = None
        if scanner.wants_first:
            for k in range(first, stop):
                line = self._line(base, ends, k)
                parsed = scanner.split(line)
                if parsed.own_clock and parsed.ts is not None:
                    first_own = (line, parsed)
                    break
        last_own = None
        for k in range(stop - 1, first - 1, -1):
            line = self._line(base, ends, k)
            parsed = scanner.split(line)
            if parsed.own_clock and parsed.ts is not None:
                last_own = (parsed.ts, line.number)
                if k > first and isinstance(self.clock, _GuardedClock):
                    # dated lines before it went unread: the clock's latest stamp is a guess now
                    self.clock.unsure = True
                break
        return scanner.skip(stop - first, self.lines_before + stop, first_own, last_own, light)

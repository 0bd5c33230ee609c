"""The batch engine: the incremental engine's events, without reading every line.

Runtime traffic (`Decode batch` lines, access lines) is nearly all of a long log, and no
rule can match most of it. This engine lets one multi-literal scan (Hyperscan, over the
file, read a window at a time) find the candidate lines: those holding a rule literal of the format,
and those whose meaning a rule-free reading could get wrong (a collector prefix, ANSI codes,
a `\\r` redraw, a progress bar, a header whose clock depends on earlier lines, JSON). Only
candidates go through `sources.normalise` and `engine.Scanner.feed`, the very code the
incremental engine runs, with the rules narrowed to those whose literals the scan saw.

Every other line is inert: one logical line, no prefix, no rule literal, and either no
clock or the engine's own fully dated one. Such a line changes only the scanner's last
own-clock stamp (which events without a time inherit, and which closes a run) and, rarely,
marks a run's first stamp; `Scanner.skip` applies that, from the last such line before the
next candidate (found by reading back a line or two) and the first one when wanted.

During a start-up (`Scanner.watching`: from the first line, or a line that may start a run,
until `ready`) the lines between candidates are read after all, one by one, in order
(`_State._walk` feeding `Scanner.quiet_line`): silences are measured on every line with the
engine's own time, exactly as the incremental engine measures them, and the lines no rule
knows are kept for template mining. A start-up is a few thousand lines; the runtime traffic
after `ready`, nearly all of a long log, is still skipped unread.

Decorated lines. A format whose every clock header is read in order (`skips_decorations`:
an engine whose stamps have no year) leaves no line unread that has a clock of its own; its
lines are decorated (a process tag, often coloured, behind kubectl's stamp), and that alone
does not make them candidates (`_decorated_markers` says which shapes do). Every line this
engine reads of such a format goes through `sources.normalise`. An unread decorated line
changes no state but by its collector stamp, and only in three ways, which the engine reads
lines for: before any own-clock line, and while a run's first line is wanted and none with
only a collector's stamp is marked (`Scanner.collector_stamps_count`: `_skip_clockless` reads
on, in order, until neither holds), and as the earliest or latest access time of a stretch,
which `compact` keeps (`_spanning_access`). No stamp of a skipped line can then be missed by
the clock: such a format is never handed back for it.

Access lines (`http.access`, one request each) are the rest of the traffic, and events, but
the timeline reads few of them (compact.py states which). The scan leaves their literal out;
this engine keeps an `AccessNeeds` fed with the events it emits and reads access lines
(found with `bytes.find`) only while one may be kept: every one after a run starts until its
first request after `ready`, the `/health` ones until the first, all those in a crash
window, and the last before each candidate (`Scanner.makes_event` checks it first). The
others stay unread and are counted as `skipped`; `compact` then keeps from this stream
exactly what it keeps from the incremental engine's.

The scan is nearly all of a long log's time, and needs no engine state: files of
`PARALLEL_FROM` bytes and more are scanned window by window by forked processes (one per
core; on one core by this process, a piece at a time), which also count the lines up to
each candidate, while this process feeds the engine in file order. Every scan pattern runs to the end of its line, so Hyperscan reports
it once per line (a progress bar redrawn 300 times is one match), and compiled databases
are kept in the user's cache directory (loading one takes a tenth of a millisecond,
compiling it 50-100).

Two things the scan cannot prove send the source back to the incremental engine
(`NeedExact`): a line longer than `sources.MAX_LINE_BYTES`, and a time-only or year-less
stamp that would depend on the latest dated stamp among lines that were skipped.
`pipeline.parse_source` then reads the source again with the incremental engine.

`scan_file` reads every access line and gives exactly the incremental engine's events
(tests/test_batch.py); `iter_file`, what `parse` runs, gives them minus unread access
lines. Line counts differ in one documented way: lines left unread are counted as
`skipped`, not split into matched, runtime, timestamped and other.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import os
import re
from collections.abc import Iterator
from datetime import date, datetime
from itertools import islice
from operator import add, itemgetter, methodcaller
from typing import Any, cast

from firedup.formats.base import Format, Rule
from firedup.read.clock import Clock, UnsureDate, year_ok
from firedup.read.compact import HEALTH_PATH, AccessNeeds
from firedup.read.engine import Event, LineStats, Parsed, Scanner
from firedup.read.prefilter import (
    DECORATION_STARTS,
    FIRST_PREFIX_MARKER,
    PREFIX_STARTS,
    Prefilter,
    compile_database,
    for_format,
    normalising_markers,
    skips_decorations,
    to_line_end,
)
from firedup.read.sources import Line, normalise
from firedup.read.windows import (
    LazyWindow,
    NewlineCounter,
    Truncated,
    Window,
    find_any,
    rfind_any,
    scanned,
)

# NeedExact: raised by this module and the windows' scan alike; its callers catch `batch.NeedExact`
from firedup.read.windows import NeedExact as NeedExact


@functools.cache
def available() -> bool:
    """True when the batch engine's libraries are installed (Hyperscan has x86-64 wheels). Asked
    once a process: every file of a folder asks, and finding numpy unimported is a path search."""
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    import importlib.util  # numpy: found, not imported (`windows.count_in_bulk` imports it where it pays)

    return importlib.util.find_spec("numpy") is not None



_NORMALISING: list[Any] = []
# A file whose first lines (up to _PREFIXED_SAMPLE of them, at least _PREFIXED_MIN) are more
# than _MOSTLY_PREFIXED prefixed is read by the incremental engine (`read_head`).
_MOSTLY_PREFIXED = 0.5
_PREFIXED_SAMPLE = 200
_PREFIXED_MIN = 100


def _refuse_if_prefixed(database: Any, raws: list[bytes]) -> None:
    """NeedExact when most of these lines start with a collector prefix or a process tag
    (`kubectl logs --timestamps`, docker compose, an engine's `(APIServer pid=1)`): such a prefix
    is on every line of a file, so the scan would send nearly every line through the engine
    anyway, and the incremental engine does that with less bookkeeping (a process-tagged log behind
    kubectl: 46 ms, not 58). Progress bars or colour alone do not count: the traffic after
    them may still be skipped. Nor do kubectl's stamps and process tags in the log of a format
    whose batch engine leaves such lines unread (`skips_decorations`), by the sniff literals
    of these lines."""
    prefixed: set[int] = set()
    decorated: set[int] = set()
    text = b"\n".join(raws)
    for pattern, line in _marked_lines(database, text):
        if pattern >= FIRST_PREFIX_MARKER:
            (decorated if PREFIX_STARTS[pattern - FIRST_PREFIX_MARKER] in DECORATION_STARTS else prefixed).add(line)
    most = len(raws) * _MOSTLY_PREFIXED
    if len(prefixed) > most or (len(prefixed | decorated) > most and not _decorations_skipped(text)):
        raise NeedExact("most lines carry a collector prefix or a process tag")


def _marked_lines(database: Any, text: bytes) -> list[tuple[int, int]]:
    """(pattern, line index) of every match of `database` in `text`, lines counted from 0: the
    newlines before each match's last byte, counted on from the match before (matches come
    by their end, so the text is counted once)."""
    marked: list[tuple[int, int]] = []
    counted = [0, 0]  # newlines are counted up to this offset; the line there

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        at = stop - 1 if stop else 0  # called for every match: no call to max
        if at < counted[0]:
            marked.append((pattern, text.count(b"\n", 0, at)))
            return
        counted[1] += text.count(b"\n", counted[0], at)
        counted[0] = at
        marked.append((pattern, counted[1]))

    database.scan(text, match_event_handler=on_match)
    return marked


def _decorations_skipped(text: bytes) -> bool:
    """Whether the format whose sniff literals weigh most in `text` (raw lines: decorations
    hold none) `skips_decorations`. A guess, before the format is sniffed from normalised
    lines: a wrong one costs time, not correctness."""
    found = _sniff_found(text)
    formats = _formats()
    weight, best = max(((sum(w for literal, w in fmt.sniff_literals.items() if literal in found), i)
                        for i, fmt in enumerate(formats)), default=(0.0, -1))
    return weight > 0 and skips_decorations(formats[best])


def head_sample(path: str | os.PathLike[str], lines: int = 2000) -> str:
    """The text `parse` sniffs the format from: its first `lines` logical lines, joined,
    exactly as `sources.read_lines` gives them (see `read_head`)."""
    return read_head(path, lines)[0]


def read_head(path: str | os.PathLike[str], lines: int = 2000, refuse_mostly_flagged: bool = False,
              until_settled: bool = False, literals: set[str] | None = None) -> tuple[str, dict[int, list[Line]]]:
    """`head_sample`, and the lines it had to normalise (by physical number), which the scan
    then takes instead of normalising them again (progress bars redrawn hundreds of times
    are the costly ones). Lines that only need stripping (the scan says which) are stripped.

    `refuse_mostly_flagged`: raise NeedExact, before normalising anything, when most of the
    first lines carry a collector prefix or a process tag (`_refuse_if_prefixed`).
    `until_settled`: stop at the first lines whose sniff and release hint no later line can
    change (`settled_format`): the sample may then be shorter than `lines` (a log's 100 first
    lines, not all its 1,400 colour-tagged ones, each normalised).
    `literals`: a set this fills with the sniff literals the sample holds (`sniff_format`
    takes them: the head is not scanned for them twice)."""
    import hyperscan

    if not _NORMALISING:
        _NORMALISING.append(compile_database([to_line_end(p) for p in normalising_markers()], hyperscan.HS_FLAG_MULTILINE))
    database = _NORMALISING[0]
    data = b""
    at_end = False
    # The newlines read so far: the first piece's from its split (the lines are split anyway:
    # most logs of a folder are one piece, counted then split whole before), each later piece
    # counted once (counting all that was read at each step was quadratic in a head's length).
    newlines = 0
    raws: list[bytes] | None = None  # `data` split, while it is one piece
    with open(path, "rb") as fh:
        while newlines < lines:
            more = fh.read(1 << 20)
            if not more:
                at_end = True
                break
            if data:
                raws = None
                newlines += more.count(b"\n")
            else:
                raws = more.split(b"\n")
                newlines = len(raws) - 1
            data += more
            if len(data) > 64 << 20:
                raise NeedExact("the first lines are too long to sniff quickly")
    if raws is None:
        raws = data.split(b"\n")
    last = raws.pop()  # after the last newline: a cut line, or the file's unterminated last one
    if at_end and last:
        raws.append(last)
    raws = raws[:lines]
    if refuse_mostly_flagged and len(raws) >= _PREFIXED_MIN:
        _refuse_if_prefixed(database, raws[:_PREFIXED_SAMPLE])
    texts: list[str] = []
    normalised: dict[int, list[Line]] = {}
    # The lines are read in pieces ending at lines 100, 200, 400..., each scanned for the lines
    # to normalise; with `until_settled`, the sniff is asked after each piece whether it is
    # settled, so a head that settles stops after its first piece instead of normalising 2,000.
    can_settle = until_settled and any(_settle_bars(fmt) is not None for fmt in _formats())
    low, high = 0, _SETTLE_FIRST if can_settle else len(raws)
    found: set[str] = set()  # the sniff literals in the texts so far: none spans a newline
    while True:
        high = min(high, len(raws))
        read = len(texts)
        _read_piece(database, raws, low, high, texts, normalised)
        if len(texts) >= lines or high == len(raws):
            break
        found |= _sniff_found("\n".join(texts[read:]))
        if _settled(found, texts) is not None:
            if literals is not None:
                literals |= found
            return "\n".join(texts), normalised
        low, high = high, 2 * high
    if literals is not None:  # the last piece's, up to the sample's end
        literals |= found | _sniff_found("\n".join(texts[read:lines]))
    return "\n".join(texts[:lines]), normalised


def _read_piece(database: Any, raws: list[bytes], low: int, high: int, texts: list[str],
                normalised: dict[int, list[Line]]) -> None:
    """Lines [low, high) of the head into `texts`: normalised where the scan marks them (and
    kept in `normalised` by physical number), else only stripped."""
    piece = b"\n".join(raws[low:high])
    flagged = {low + line for _pattern, line in _marked_lines(database, piece)}
    # one decode for all: a newline byte is never part of a UTF-8 sequence, so this splits
    # into what decoding line by line gives; the unmarked lines between marked ones are
    # stripped a stretch at a time (strip() takes a CRLF's "\r" too)
    decoded = piece.decode("utf-8", errors="replace").split("\n")
    done = 0
    for index in sorted(flagged):
        at = index - low
        texts.extend(map(str.strip, decoded[done:at]))
        found = normalised[index + 1] = normalise(decoded[at], index + 1)
        texts.extend(line.text for line in found)
        done = at + 1
    texts.extend(map(str.strip, decoded[done:]))


_SETTLE_FIRST = 100  # logical lines read before the sniff is first asked whether it is settled


def _formats() -> list[Format]:
    from firedup.formats import all_formats

    return list(all_formats().values())


def _settle_bars(fmt: Format) -> tuple[float, float] | None:
    """What `fmt`'s sniff score must reach to lead for good: more than the most any other
    registered format's rules add up to (`Format.sniff_most`), and at least the most any
    foreign engine's literals do; None when its own rules cannot get there (its sniff never
    settles early)."""
    from firedup.formats._foreign import FOREIGN

    others = max((other.sniff_most for other in _formats() if other is not fmt), default=0.0)
    foreign = max((sum(engine.literals.values()) for engine in FOREIGN), default=0.0)
    most = fmt.sniff_most
    return (others, foreign) if most > others and most >= foreign else None


def settled_format(sample: str) -> Format | None:
    """The format `formats.sniff_format` gives on `sample` and on any longer text that begins with
    it, whose release hint (`Format.release_hint`) no later line can change either; None when
    later lines could still change one of them. A score only grows as lines come (a rule once
    matched stays matched, `Format.evidence`), so a format leads for good once its score passes
    the most any other format could reach (all its rules), and no foreign engine can outweigh
    it once it reaches the most one of those could: a shorter sample then decides exactly as
    the whole head would."""
    return _settled(_sniff_found(sample), [sample])


def _settled(found: set[str], texts: list[str]) -> Format | None:
    """`settled_format` of the lines `texts`, whose sniff literals are `found`."""
    formats = _formats()
    # the most each score can be before a line is read: a head no format's could settle (that
    # of a format whose rules weigh less than another's could) is not read for its rules; its
    # literals are `found` (the lines are joined only past this: most heads stop here, a
    # join of up to 2,000 lines each time)
    if not any((bars := _settle_bars(fmt)) is not None and sum(rule.evidence for rule in fmt.candidates("", found))
               > bars[0] for fmt in formats):
        return None
    sample = "\n".join(texts)
    scores = [fmt.sniff_score(sample, found) for fmt in formats]
    best = max(range(len(formats)), key=scores.__getitem__, default=None)
    if best is None or scores[best] <= 0:
        return None
    bars = _settle_bars(formats[best])
    if bars is None or scores[best] <= bars[0] or scores[best] < bars[1]:
        return None
    return formats[best] if formats[best].release_hint_settled(sample, found) else None


# The registered formats (a format may join later: `formats.register`) -> their sniff scan.
_SNIFFING: dict[tuple[int, ...], tuple[list[str], Any]] = {}


def sniff_format(sample: str, found: set[str] | None = None) -> Format | None:
    """`formats.sniff_format(sample)`, with one Hyperscan pass for every format's sniff literals and
    the foreign engines' instead of one search of the sample per literal (those searches
    were a quarter of a small log's parse); `found`: that pass's result, where `read_head`
    made it already."""
    from firedup.formats import sniff_format as sniff_registered

    return sniff_registered(sample, found=_sniff_found(sample) if found is None else found)


def _sniff_found(sample: str | bytes) -> set[str]:
    """The sniff literals (formats' and foreign engines') and the release hints' literals
    (`formats.release_literals`) present in `sample` (text, or raw lines as bytes), in one scan."""
    literals, database = _sniff_scan()
    found: set[str] = set()

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        found.add(literals[pattern])

    # UTF-8: a str's substrings are its bytes'
    database.scan(sample.encode() if isinstance(sample, str) else sample, match_event_handler=on_match)
    return found


def _sniff_scan() -> tuple[list[str], Any]:
    """Every registered format's sniff literals and the foreign engines' (`formats.sniff_literals`),
    and the release hints' (`formats.release_literals`: a head with no such literal was searched
    for each, a tenth of a millisecond a log), and their compiled scan (pattern i: literal i)."""
    import hyperscan

    from firedup.formats import all_formats, release_literals, sniff_literals

    key = tuple(id(fmt) for fmt in all_formats().values())
    if key not in _SNIFFING:
        literals = sorted(sniff_literals() | release_literals())
        database = compile_database([re.escape(lit) for lit in literals], hyperscan.HS_FLAG_SINGLEMATCH)
        _SNIFFING[key] = (literals, database)
    return _SNIFFING[key]


def scan_file(path: str | os.PathLike[str], fmt: Format, default_date: date | None = None,
              file_year: int | None = None, file_date: date | None = None) -> tuple[list[Event], LineStats, Clock]:
    """All events of a plain (uncompressed) log file, as `engine.scan` gives them."""
    events: list[Event] = []
    scanner = Scanner(fmt, default_date, file_year, file_date)
    for batch in _scan(path, scanner, every_access=True):
        events.extend(batch)
    events.extend(scanner.finish())
    return events, scanner.stats, scanner.clock


def iter_file(path: str | os.PathLike[str], scanner: Scanner,
              normalised: dict[int, list[Line]] | None = None, cut: list[Truncated] | None = None,
              whole: int = 0) -> Iterator[Event]:
    """The events of a file, streamed, for `compact.compact`: every event it keeps, but
    without the access lines it would drop (left unread). `scanner` from `new_scanner`
    holds stats and clock; `normalised` (from `read_head`) saves normalising lines again.
    `cut`: where a file that shrinks while it is read says so (the events of the lines read
    before are kept); without it, Truncated is raised. `whole`: the file's size when reading
    it began (its head read): a file shorter when the scan opens it shrank already."""
    try:
        for batch in _scan(path, scanner, every_access=False, normalised=normalised, whole=whole):
            yield from batch
    except Truncated as exc:
        if cut is None:
            raise
        cut.append(exc)
    yield from scanner.finish()


def new_scanner(fmt: Format, default_date: date | None = None, file_year: int | None = None,
                file_date: date | None = None) -> Scanner:
    """The incremental engine's scanner, which this engine feeds (`iter_file`)."""
    return Scanner(fmt, default_date, file_year, file_date)


def _scan(path: str | os.PathLike[str], scanner: Scanner, every_access: bool,
          normalised: dict[int, list[Line]] | None = None, whole: int = 0) -> Iterator[list[Event]]:
    pre = for_format(scanner.fmt)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        state = _State(scanner, pre, every_access, normalised or {})
        for found, data in scanned(fh.fileno(), size, pre) if size else ():
            try:
                events = state.window(found, data)
            except UnsureDate as exc:  # a stamp the clock would complete from skipped lines
                raise NeedExact(str(exc)) from None
            except Truncated:
                # the file shrank under the window's lines: the events of those read stand with
                # the lines the scanner counted (dropped, the run they began was missing)
                yield state.taken()
                raise
            yield events
        if size < whole:  # shrank (copytruncate) since its head was read: what is left was read
            raise Truncated(size, whole)



def _kubectl_key(stamp: bytes, frac: bytes | None) -> bytes:
    """A collector's stamp as `YYYY-MM-DDTHH:MM:SS` and six digits of a second (what the
    engine keeps of it): keys whose order is the times' order."""
    return bytes(stamp + (frac or b"")[:6].ljust(6, b"0"))


_STAMP_GROUPS = methodcaller("groups", b"")  # (kubectl's stamp, its fraction); b"" where absent
_SIX = itemgetter(slice(0, 6))  # a fraction's first six digits (`_kubectl_key`)
_PADDED = methodcaller("ljust", 6, b"0")
_SPAN = methodcaller("span")
_CHUNK_LINES = 4096  # access lines keyed at a time: their match objects are held together


def _earliest_and_latest(matches: Iterator[re.Match[bytes]]) -> list[tuple[bytes, int, int]] | None:
    """Of access-line matches (`Prefilter.access_line`), the first with the smallest
    `_kubectl_key` and the first with the largest, as (key, start, end); [] for none. None where
    a line has no kubectl stamp at its start (its stamp is read from the normalised line). The
    keys of a chunk of lines are made by `map` over C methods, and `min` and `max` with `index`
    find the first of each, as the stable sorts of `_spanning_access_lines` would."""
    earliest: tuple[bytes, int, int] | None = None
    latest: tuple[bytes, int, int] | None = None
    while chunk := list(islice(matches, _CHUNK_LINES)):
        stamps, fractions = zip(*map(_STAMP_GROUPS, chunk), strict=True)
        if b"" in stamps:
            return None
        keys = list(map(add, stamps, map(_PADDED, map(_SIX, fractions))))
        low, high = min(keys), max(keys)
        if earliest is None or low < earliest[0]:  # strictly: of equal keys the earlier line stays
            earliest = (low, *_SPAN(chunk[keys.index(low)]))
        if latest is None or high > latest[0]:
            latest = (high, *_SPAN(chunk[keys.index(high)]))
    return [] if earliest is None or latest is None else [earliest, latest]


def _valid_stamp(key: bytes) -> bool:
    """Whether a `_State._stamp_key` is a real time: the engine gives a line with an invalid
    collector stamp an inherited time, which does not count for a run's span."""
    try:
        datetime(int(key[0:4]), int(key[5:7]), int(key[8:10]), int(key[11:13]), int(key[14:16]), int(key[17:19]))
    except ValueError:
        return False
    return year_ok(int(key[0:4]))


# Bytes of a lazy window searched at a time for the first request (`_State._find_request`).
_REQUEST_PIECE = 1 << 16


class _State:
    """The scan's place in the file: the next line to account for (its offset and number),
    and which access lines are still worth reading (`AccessNeeds`). Lines are read by offset;
    their numbers come from the newlines counted up to each candidate (`Window`), and for
    the few other lines read, from the nearest line whose number is known."""

    def __init__(self, scanner: Scanner, pre: Prefilter, every_access: bool,
                 normalised: dict[int, list[Line]]) -> None:
        self.scanner = scanner
        self.normalised = normalised
        self.pre = pre
        self.mm: bytes | bytearray | LazyWindow = b""  # the window being read
        self.clock = scanner.clock
        self.number = 1  # physical number of the next line not accounted for
        self.every_access = every_access
        self.needs = AccessNeeds(scanner.fmt.vocab)
        self._by_literals: dict[frozenset[int], tuple[Rule, ...]] = {}  # `_literal_rules`

    def window(self, found: Window, data: bytes | bytearray | LazyWindow) -> list[Event]:
        """Events of one scanned window (its bytes `data`), which starts and ends at line
        boundaries; offsets below count from its start."""

        self._out: list[Event] = []
        self.mm = data
        base, end = 0, len(data)
        self._base, self._end = base, end
        # newlines in a range of the window (perhaps a numpy view of a read window: let go below)
        self._count = data.newlines if isinstance(data, LazyWindow) else NewlineCounter(data, base, end).count
        self._first = self.number  # the number of the window's first line
        self._next = base  # where the next line not accounted for starts
        # line starts whose preceding newlines (from `base`) are known, in order
        self._known = [base, *(c[0] for c in found.candidates), end]
        self._known_count = [0, *(c[2] for c in found.candidates), found.newlines]
        for start, line_end, _newlines, patterns in found.candidates:
            self._access_lines(start)
            key = frozenset(patterns)
            rules = self.pre.rules_for(key)
            self._full(start, line_end, rules, self._literal_rules(key) if rules is None else None)
        self._access_lines(end)
        self._skip_to(end)
        del self._count
        self.mm = b""
        return self._out

    def taken(self) -> list[Event]:
        """The events of the window's lines read so far (a window the file no longer has all of)."""
        with contextlib.suppress(AttributeError):
            del self._count  # a view of the window's buffer
        self.mm = b""
        return self._out

    # -- lines of the window ---------------------------------------------------------------
    def _line_around(self, at: int) -> tuple[int, int]:
        """The line holding byte `at`: where it starts, and where it ends (its newline, or the
        window's end for a last line without one)."""
        before = self.mm.rfind(b"\n", self._base, at)
        after = self.mm.find(b"\n", at, self._end)
        return (self._base if before < 0 else before + 1), (self._end if after < 0 else after)

    def _newlines_before(self, start: int) -> int:
        """Newlines from the window's start to `start` (a line start), counted from the
        nearest point where the count is known: the next line to account for, or a candidate."""
        known, counts = self._known, self._known_count
        i = bisect.bisect_left(known, start)
        if i < len(known) and known[i] == start:
            return counts[i]
        below, below_count = known[i - 1], counts[i - 1]
        if self._next <= start and self._next > below:
            below, below_count = self._next, self.number - self._first
        if i < len(known) and known[i] - start < start - below:
            return counts[i] - self._count(start, known[i])
        return below_count + self._count(below, start)

    def _text(self, start: int, end: int) -> str:
        return self.mm[start:end].decode("utf-8", errors="replace").rstrip("\r").strip()

    def _read(self, start: int, end: int, number: int) -> list[Line]:
        """The logical lines of the line [start, end), numbered `number`, as the incremental
        engine reads them. A line no marker flagged only needs stripping, unless decorations
        went unflagged (`Prefilter.decorations`): then it is normalised (`read_head` may have)."""
        if not self.pre.decorations:
            return [Line(number, self._text(start, end))]
        lines = self.normalised.pop(number, None)
        return lines if lines is not None else normalise(self.mm[start:end].decode("utf-8", errors="replace"), number)

    def _message(self, start: int, end: int) -> str:
        """The text of an unflagged line, as `_read` gives it (one logical line)."""
        return self._read(start, end, 0)[0].text if self.pre.decorations else self._text(start, end)

    # -- feeding ---------------------------------------------------------------------------
    def _emit(self, events: list[Event]) -> None:
        step = self.needs.step
        for event in events:
            step(event)
        self._out.extend(events)

    def _literal_rules(self, patterns: frozenset[int]) -> tuple[Rule, ...]:
        """The rules whose literals the scan found on a marked line (`patterns`, markers and
        all), in table order: `_feed` hands them to the engine with the line's text."""
        found = self._by_literals.get(patterns)
        if found is None:
            pre = self.pre
            found = self._by_literals[patterns] = cast(
                tuple[Rule, ...], pre.rules_for(frozenset(p for p in patterns if p < pre.literal_count)))
        return found

    def _full(self, start: int, end: int, rules: tuple[Rule, ...] | None,
              literal_rules: tuple[Rule, ...] | None = None) -> None:
        """The line [start, end) through the engine: first the lines since the last one it saw."""
        self._skip_to(start)
        self._emit(self._feed(start, end, rules, literal_rules))
        self._next = min(end + 1, self._end)
        self.number += 1

    def _feed(self, start: int, end: int, rules: tuple[Rule, ...] | None,
              literal_rules: tuple[Rule, ...] | None = None) -> list[Event]:
        """Feed a line found by the scan through the incremental engine's own code. A marked
        line (`rules` None) is normalised; the engine takes the rules of the literals the
        scan found in it (`literal_rules`) for each logical line whose message is a substring
        of the raw line (`Scanner.feed`'s `found`), and looks for its literals else."""
        if rules is not None:
            # No marker: one logical line, its rule literals all in the raw line (see _markers)
            (line,) = self._read(start, end, self.number)
            pre = self.pre
            access = pre.access_rule
            # by identity: `in` would compare every other rule field by field (a dataclass's ==)
            if access is not None and any(lit in line.text for lit in access.literals) \
                    and not any(rule is access for rule in rules):
                rules = pre.with_access(rules)
            return self.scanner.feed(line, rules)
        raw = self.mm[start:end + 1].decode("utf-8", errors="replace")
        lines = self.normalised.pop(self.number, None)
        if lines is None:
            lines = normalise(raw, self.number)
        found = None
        if literal_rules is not None:
            text = raw[:-1] if raw.endswith("\n") else raw  # the line the scan read, without its newline
            access = self.pre.access_rule  # not in the scan: looked for as above
            if access is not None and any(lit in text for lit in access.literals) \
                    and not any(rule is access for rule in literal_rules):
                literal_rules = self.pre.with_access(literal_rules)
            found = (text, literal_rules)
        out: list[Event] = []
        for line in lines:
            out.extend(self.scanner.feed(line, found=found))
        return out

    def _access_lines(self, high: int) -> None:
        """Read the access lines before offset `high` (a line start) that `compact` may keep
        (AccessNeeds; the earliest and latest by a collector's clock: `_spanning_access`),
        and the last of them; the others stay unread."""
        pre = self.pre
        if pre.access_rule is None:
            return  # its literal is in the scan: its lines are candidates like any other
        low = self._next
        while low < high:
            every = self._every_line()
            if every:
                at = self._find(low, high)
            elif self.needs.request or self.needs.health:
                at = self._find_request_or_health(low, high)
            else:
                break
            if at < 0:
                break
            start, end = self._line_around(at)
            if not every:
                self._spanning_access(low, start)  # the access lines before it stay unread
            self._full(start, end, pre.access_rules)
            low = self._next
        if low < high and not self.every_access:
            self._spanning_access(low, high)
            self._last_access(self._next, high)

    def _spanning_access(self, low: int, high: int) -> None:
        """Read the access lines in [low, high) whose time may be the earliest or the latest
        of their stretch by a collector's clock, which `compact` keeps (its point 4): the
        first with the earliest and the first with the latest stamp. Only decorated lines go
        unread with such a stamp (`skips_decorations`); until an own-clock line comes, or from
        when one with a collector's stamp too has given the offset, it dates them, and their
        times are in their stamps' order (the offset stays until an own-clock line).

        Every access line of the stretch is found in one search (a log behind kubectl is nearly
        all access lines: a million of them in 100 MB), and its stamp's key is made, compared
        and kept by C-level calls a chunk of lines at a time (`_earliest_and_latest`), not by a
        Python loop a line. A line without kubectl's stamp at its start, or an earliest or latest
        stamp that does not count, sends the stretch to `_spanning_access_lines`, which reads
        each line's stamp in turn and looks on in the stamps' order."""
        if not self.pre.decorations or not self.scanner.collector_times_count:
            return
        assert self.pre.access_line is not None  # decorations and access literals: a format with access lines
        # a lazy window's stretch is read once (a bytes copy); `^` still meets only line starts
        text, shift = (self.mm.range(low, high), low) if isinstance(self.mm, LazyWindow) else (self.mm, 0)
        found = _earliest_and_latest(self.pre.access_line.finditer(text, low - shift, high - shift))
        if found is not None and all(self._counts(key, start + shift, end + shift) for key, start, end in found):
            chosen = {(start + shift, end + shift) for _key, start, end in found}
        else:  # look on in the stamps' order, line by line
            chosen = self._spanning_access_lines(text, shift, low, high)
        for start, end in sorted(chosen):
            self._full(start, end, self.pre.access_rules)

    def _counts(self, key: bytes, start: int, end: int) -> bool:
        """Whether the access line [start, end) with this stamp key is one `compact` keeps for
        its stretch's span: its stamp a real time, the line an event."""
        return _valid_stamp(key) and self.scanner.makes_event(self._message(start, end), self.pre.access_rules)

    def _spanning_access_lines(self, text: Any, shift: int, low: int, high: int) -> set[tuple[int, int]]:
        """`_spanning_access`'s lines, found line by line: each access line's stamp, kubectl's
        from the search or another collector's from the normalised line (`_stamp_key`), then
        the first line in the stamps' order, each way, whose stamp counts (`_counts`)."""
        assert self.pre.access_line is not None
        stamped: list[tuple[bytes, int, int]] = []  # (the stamp as sortable text, line start, end)
        for m in self.pre.access_line.finditer(text, low - shift, high - shift):
            start, end = m.start() + shift, m.end() + shift
            # `_kubectl_key`, inline: a call a line was a tenth of this search
            key = bytes(m[1] + (m[2] or b"")[:6].ljust(6, b"0")) if m[1] is not None else self._stamp_key(start, end)
            if key is not None:
                stamped.append((key, start, end))
        chosen: set[tuple[int, int]] = set()
        for order in (sorted(stamped, key=itemgetter(0)), sorted(stamped, key=itemgetter(0), reverse=True)):
            # sorted() is stable, with reverse too: of equal stamps the first comes first
            for key, start, end in order:
                if self._counts(key, start, end):
                    chosen.add((start, end))
                    break
        return chosen

    def _stamp_key(self, start: int, end: int) -> bytes | None:
        """`_kubectl_key` of the collector's stamp that `normalise` finds on the unflagged line
        [start, end), one without kubectl's stamp at its start (the access-line search reads
        that one); None without one."""
        outer = self._read(start, end, 0)[0].outer
        if outer is None:
            return None
        if outer.year is None:  # never unflagged (see _decorated_markers); its year would need the clock
            raise NeedExact("a year-less collector stamp on an unread line")
        return _kubectl_key(f"{outer.year:04d}-{outer.month:02d}-{outer.day:02d}T{outer.time}".encode(), outer.frac.encode())

    def _every_line(self) -> bool:
        """Whether any access line may be kept now. Waiting only for the first request after
        `ready` is not that where the scan can tell requests from probes (`request_database`):
        a server probed every second for weeks logs millions of probes before it."""
        needs = self.needs
        if self.every_access or needs.any_path:
            return True
        return needs.request and self.pre.request_database is None

    def _find_request_or_health(self, low: int, high: int) -> int:
        """The first line in [low, high) that may be the request or the `/health` probe still
        wanted; -1 when there is none."""
        found = []
        if self.needs.health:
            found.append(self._find_health(low, high))
        if self.needs.request:
            found.append(self._find_request(low, high))
        found = [at for at in found if at >= 0]
        return min(found) if found else -1

    def _find_request(self, low: int, high: int) -> int:
        """Where in [low, high) the first line that may be a request (not a probe) is. A lazy
        window is read a piece at a time (cut after a line's end: a match is inside a line),
        up to the first hit: the first request after `ready` is often a few lines into
        megabytes of probes."""
        window = self.mm
        if not isinstance(window, LazyWindow):
            with memoryview(window) as view, view[low:high] as piece:
                at = self._request_hit(piece)
            return low + at if at >= 0 else -1
        while low < high:
            upto = min(high, low + _REQUEST_PIECE)
            if upto < high:  # cut after the piece's last line end (or the end of a longer line)
                cut = window.rfind(b"\n", low, upto)
                upto = cut + 1 if cut >= 0 else (window.find(b"\n", upto, high) + 1 or high)
            at = self._request_hit(window.range(low, upto))
            if at >= 0:
                return low + at
            low = upto
        return -1

    def _request_hit(self, buffer: bytes | memoryview) -> int:
        """Where in `buffer` the first match of the request database ends (its last byte), -1 if none."""
        import hyperscan

        hit: list[int] = []

        def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> bool:
            hit.append(stop)
            return True  # the first is enough

        with contextlib.suppress(hyperscan.ScanTerminated):
            self.pre.request_database.scan(cast(bytes, buffer), match_event_handler=on_match)
        return max(hit[0] - 1, 0) if hit else -1

    def _find(self, low: int, high: int) -> int:
        return find_any(self.mm, self.pre.access_literals, low, high)

    def _find_health(self, low: int, high: int) -> int:
        """The first line in [low, high) with a `/health` request on it (an access literal too)."""
        probe = HEALTH_PATH.encode()
        while low < high:
            at = self.mm.find(probe, low, high)
            if at < 0:
                return -1
            start, end = self._line_around(at)
            if any(self.mm.find(lit, start, end) >= 0 for lit in self.pre.access_literals):
                return at
            low = end + 1
        return -1

    def _last_access(self, low: int, high: int) -> None:
        """Read the last access event among the unread lines in [low, high): `compact` keeps
        the last before every other event (and the stream's last)."""
        pre = self.pre
        while low < high:
            at = rfind_any(self.mm, pre.access_literals, low, high)
            if at < 0:
                return
            start, end = self._line_around(at)
            if self.scanner.makes_event(self._message(start, end), pre.access_rules):
                self._full(start, end, pre.access_rules)
                return
            high = start

    def _skip_to(self, stop: int) -> None:
        """Account for the lines from the next one up to offset `stop` (a line start, or the
        window's end): proved inert by the scan, or access lines `compact` would drop."""
        first = self._next
        if stop <= first:
            return
        count = self._newlines_before(stop) - (self.number - self._first)
        if self.mm[stop - 1] != 10:
            count += 1  # the file's last line, without a newline
        scanner = self.scanner
        if scanner.watching:
            self._walk(first, stop, count)
            return
        if self.pre.decorations:
            self._skip_clockless(first, stop, count)
            return
        first_own: tuple[Line, Parsed] | None = None
        if scanner.wants_first:
            start, number = first, self.number
            while start < stop:
                end = self.mm.find(b"\n", start, stop)
                end = stop if end < 0 else end
                line = Line(number, self._text(start, end))
                parsed = scanner.split(line)
                if parsed.own_clock and parsed.ts is not None:
                    first_own = (line, parsed)
                    break
                start, number = end + 1, number + 1
        last_own = None
        end = stop - 1 if self.mm[stop - 1] == 10 else stop
        number = self.number + count - 1
        while end >= first:
            before = self.mm.rfind(b"\n", first, end)
            start = first if before < 0 else before + 1
            line = Line(number, self._text(start, end))
            parsed = scanner.split(line)
            if parsed.own_clock and parsed.ts is not None:
                last_own = (parsed.ts, number)
                if start > first:
                    # dated lines before it went unread: the clock's latest stamp is a guess now
                    self.clock.history_skipped = True
                break
            end, number = start - 1, number - 1
        self._emit(scanner.skip(count, self.number + count - 1, first_own, last_own))
        self._next = stop
        self.number += count

    def _skip_clockless(self, first: int, stop: int, count: int) -> None:
        """`_skip_to` for a format that `skips_decorations`: no unread line has a clock of the
        engine's own, so none moves the last own stamp (nothing to read back, no stamp of a
        skipped line the clock would miss: `Clock.history_skipped` stays false). Such a line changes
        the engine's state only by a collector's stamp, and only while
        `Scanner.collector_stamps_count` (before any own-clock line, or until a run's first
        line is marked): then lines are read, in order, until it no longer does."""
        scanner = self.scanner
        access_rules = self.pre.access_rules
        start, number = first, self.number
        while start < stop and scanner.collector_stamps_count:
            end = self.mm.find(b"\n", start, stop)
            end = stop if end < 0 else end
            for line in self._read(start, end, number):
                self._emit(scanner.quiet_line(line, access_rules))
            start, number = end + 1, number + 1
        self._emit(scanner.skip(count, self.number + count - 1, None, None))
        self._next = stop
        self.number += count

    def _walk(self, first: int, stop: int, count: int) -> None:
        """`_skip_to` during a start-up: every line is read, in order, so that silences are
        measured on the lines the incremental engine sees and unknown lines can be mined
        (`Scanner.quiet_line`). A start-up is a few thousand lines; the runtime traffic after
        `ready`, nearly all of a long log, is still skipped unread."""
        scanner = self.scanner
        access_rules = self.pre.access_rules
        start, number = first, self.number
        while start < stop:
            end = self.mm.find(b"\n", start, stop)
            end = stop if end < 0 else end
            for line in self._read(start, end, number):
                self._emit(scanner.quiet_line(line, access_rules))
            start, number = end + 1, number + 1
            if not scanner.watching and start < stop:
                # the start-up ran past `engine.WATCH_LINES`: the rest of the stretch is skipped unread
                self._emit(scanner.skip(number - self.number, number - 1, None, None))
                self._next = start
                self.number = number
                self._skip_to(stop)
                return
        self._emit(scanner.skip(count, self.number + count - 1, None, None))
        self._next = stop
        self.number += count

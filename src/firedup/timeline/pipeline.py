"""Parse inputs into runs: the library behind `firedup parse` and everything downstream.

One bad input never stops the others: its reason lands in `ParseResult.errors` and the
rest goes on.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import stat
import sys
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import IO, TYPE_CHECKING, Any

from firedup.errors import UsageError
from firedup.formats import Format, all_formats, foreign_engine, get_format, sniff_format
from firedup.formats.base import WRAPPER_STAMP_LINES
from firedup.formats.vocab import (
    HEALTH_FIRST,
    HTTP_FIRST_REQUEST,
    HTTP_RUNNING,
    HTTP_SHUTDOWN,
    HTTP_STARTED,
    REQUEST_FIRST,
)
from firedup.read.clock import Clock, Stamp
from firedup.read.compact import compact
from firedup.read.engine import CLOCK_OUTER_FIRST, Event, LineStats, Scanner, iter_scanned
from firedup.read.sources import InputError, Line, Source, bom_encoding, expand_inputs, file_date, read_lines
from firedup.timeline.build import build_timeline
from firedup.timeline.launch import Launch, LaunchedAt, given_launch, parse_launched_at
from firedup.timeline.records import apply_record_beside
from firedup.timeline.run import Run
from firedup.timeline.silence import TwinFacts, twin_caches, twin_facts, twin_verdicts

if TYPE_CHECKING:
    import hashlib  # sha256 objects in signatures; imported where one is made (OpenSSL, ~3 ms)

SNIFF_LINES = 2000
DEBUG_ENV = "FIREDUP_DEBUG"  # set: a bug while reading a file raises, with its traceback


@dataclass
class SourceReport:
    """What reading one input gave: its engine, runs, line counts and why it stopped early."""

    source: str
    engine: str | None  # None: no known engine's lines (`formats.no_known_engine`)
    runs: int
    lines: dict[str, int]
    date_source: str | None
    # Why reading stopped before the end (a truncated .gz, an endless line); the runs are
    # those of the lines read until then.
    cut_short: InputError | None = None
    content_hash: str | None = None  # sha256 of the file's bytes, when asked for (see parse_source)
    looks_like: str | None = None  # engine None: the engine firedup does not read that it looks like
    # engine None: why the input is not a server log although a format matched a line of it (a
    # poller's record quoting the launch command): listed once as skipped, never a run
    skipped: str | None = None


@dataclass
class ParseResult:
    """A parse's runs, the inputs that failed, and a report per input read."""

    runs: list[Run] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)

    def as_contract(self) -> dict[str, Any]:
        """The JSON object of the `parse --json` contract (docs/contract.md), with its added keys."""
        return {
            "runs": [run.as_contract() for run in self.runs],
            "errors": self.as_contract_errors(),
            "sources": self.as_contract_sources(),
        }

    def as_contract_errors(self) -> list[dict[str, Any]]:
        return [{"source": e.source, "error": e.reason, "line": e.line} for e in self.errors]

    def as_contract_sources(self) -> list[dict[str, Any]]:
        return [{"source": s.source, "engine": s.engine, "runs": s.runs, "lines": s.lines,
                 "date_source": s.date_source, "looks_like": s.looks_like, "skipped": s.skipped}
                for s in self.sources]


def write_contract_json(result: ParseResult, out: IO[str]) -> None:
    """`result.as_contract()` as JSON, one run (and one error, one source) per line.

    Python's C encoder runs only without `indent`; the indented encoder is pure Python and
    was a fifth of the time of `parse --json` over a folder of logs. One object per line
    stays readable, greppable and diffable, and is streamed run by run.
    """
    encode = _encoder()
    _write_json(out, (encode(run.as_contract()) for run in result.runs), result)


@functools.cache
def _strict_encoder() -> Callable[[Any], str]:
    """`_encoder`'s JSON encoder alone: raises where `_encoder` falls back to `json_text`."""
    import json  # not on the start-up path of `parse` without --json

    from firedup.core.safe import json_default

    return json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=json_default).encode


@functools.cache
def _encoder() -> Callable[[Any], str]:
    """One JSON encoder per process (a worker encodes every run it parses): no NaN or Infinity
    (`allow_nan=False`); a value that holds one after all, or a dict key JSON cannot hold (a flag
    printed `{(1, 2): 3}`), is written through `core.safe.json_text`, which writes NaN null and
    the key as its text. What JSON has no type for (a flag printed as a set, bytes) is made JSON
    (`core.safe.json_default`: a set as a sorted list)."""
    from firedup.core.safe import json_text

    encode = _strict_encoder()

    def checked(value: Any) -> str:
        try:
            return encode(value)
        except (ValueError, TypeError):
            return json_text(value)

    return checked


def _write_json(out: IO[str], runs: Iterable[str], result: ParseResult) -> None:
    """The contract's object: the runs (encoded already) as they come, then errors and sources,
    which `result` holds once the runs are through."""
    encode = _encoder()
    out.write(f"{{\n{encode('runs')}: [")
    for j, item in enumerate(runs):
        out.write(f"{',' if j else ''}\n{item}")
    out.write("\n]")
    for key, items in (("errors", result.as_contract_errors), ("sources", result.as_contract_sources)):
        out.write(f",\n{encode(key)}: [")
        for j, obj in enumerate(items()):
            out.write(f"{',' if j else ''}\n{encode(obj)}")
        out.write("\n]")
    out.write("\n}\n")


@dataclass
class StreamedParse(ParseResult):
    """What `write_parse_json` leaves once the runs are written: their count (not the runs),
    the inputs that could not be read and what each source held."""

    run_count: int = 0


def write_parse_json(paths: Iterable[str], out: IO[str], engine: str | None = None, default_date: date | None = None,
                     all_files: bool = False, progress: Callable[[int, int, str], None] | None = None,
                     jobs: int | None = None, launched_at: LaunchedAt = None) -> StreamedParse:
    """`parse_paths` then `write_contract_json`, the same bytes, streamed: each run is encoded
    by the process that parsed it and kept in a temporary file, with the little the twin rules
    read of it (`timeline.silence.twin_verdicts`); once all are read, the runs are written, the
    few whose verdicts those rules change encoded again. Over a folder of thousands of logs the
    main process never unpickles every run (45 kB each) nor encodes it alone while the workers
    wait, and memory stays flat however many files there are."""
    if launched_at is not None:
        launched_at = parse_launched_at(launched_at)
    result = StreamedParse()
    encoded = _parsed(paths, engine, default_date, all_files, progress, "auto", jobs, False, result, encode=True,
                      launched_at=launched_at)

    def runs() -> Iterator[str]:
        # The twin rules read every run, so the encoded runs wait (in a file past `_SPOOL_IN_MEMORY`:
        # memory stays flat) with what those rules read of each; the caches of the few runs whose
        # verdicts they change are encoded again.
        import json

        facts: list[TwinFacts] = []
        spans: list[tuple[int, int] | None] = []
        with _Spool() as spool:
            for items in encoded:
                result.run_count += len(items)
                for text, span, fact in items:
                    spool.write(text)
                    spans.append(span)
                    facts.append(fact)
            changed = twin_verdicts(facts)
            encode = _encoder()
            for i, text in enumerate(spool.texts()):
                if i not in changed:
                    yield text
                    continue
                updates = {kind: v.as_contract() for kind, v in changed[i].items()}
                span = spans[i]
                if span is None:
                    run = json.loads(text)
                    run["caches"].update(updates)
                    yield encode(run)
                    continue
                start, end = span  # the caches' value alone, decoded, updated and encoded in its place
                caches = json.loads(text[start:end])
                caches.update(updates)
                yield text[:start] + encode(caches) + text[end:]

    _write_json(out, runs(), result)
    return result


class _Spool:
    """Texts without a newline, kept in order: in memory up to `_SPOOL_IN_MEMORY` characters,
    then in a temporary file, one a line (a parse of a few logs, most of them, neither imports
    `tempfile` nor creates a file)."""

    def __init__(self) -> None:
        self._held: list[str] = []
        self._chars = 0
        self._file: IO[str] | None = None

    def write(self, text: str) -> None:
        if self._file is None:
            self._held.append(text)
            self._chars += len(text)
            if self._chars <= _SPOOL_IN_MEMORY:
                return
            import tempfile

            self._file = tempfile.TemporaryFile(  # noqa: SIM115 (closed by __exit__)
                "w+", encoding="utf-8", errors="surrogatepass", newline="\n")
            held, self._held = self._held, []
            self._file.writelines(f"{item}\n" for item in held)
            return
        self._file.write(text + "\n")  # one text a line: the encoder writes no newline

    def texts(self) -> Iterator[str]:
        """The texts written, in order (once)."""
        if self._file is None:
            yield from self._held
            return
        self._file.seek(0)
        for line in self._file:
            yield line[:-1]

    def __enter__(self) -> _Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()
        self._held = []


_SPOOL_IN_MEMORY = 8 << 20  # characters of encoded runs held in memory before they go to a file


@dataclass(frozen=True)
class DatePolicy:
    """Where the date of a stamp that lacks one comes from, one order for every command:
    the line's own date > a collector's prefix (the `Clock` reads both per line) > `--date`
    (`given`) > the release of the engine version the log shows (`version`; the file's date
    when it agrees) > the file's modification time > unknown (`date_source` "unknown": views
    say "year unknown" instead of showing 1970)."""

    given: date | None = None
    file_date: date | None = None
    # A file whose modification date is read when reading starts, not before: a live log
    # may not exist yet when `wait` begins.
    source: Source | None = None

    @classmethod
    def of(cls, source: Source, given: date | None = None) -> DatePolicy:
        return cls(given, file_date(source))

    def day_of_file(self) -> date | None:
        if self.file_date is not None or self.source is None:
            return self.file_date
        return file_date(self.source)

    def scanner(self, fmt: Format, sample: str = "") -> Scanner:
        """The incremental engine with these dates (the batch engine's `new_scanner` takes the same).
        `sample`: the log's first lines, whose engine version (`Format.release_hint`) is the
        in-log evidence for a year the stamps do not print, over the file's date."""
        scanner = Scanner(fmt, self.given, file_date=self.day_of_file())
        self.hint(scanner, fmt, sample)
        return scanner

    @staticmethod
    def hint(scanner: Scanner, fmt: Format, sample: str, literals: Container[str] | None = None) -> None:
        """What a log's head tells its scanner before its first line: the engine version's
        release (a date), and a harness's stamp before the engine's (`Format.wrapper_stamp`).
        `literals`: the release hints' literals the head's scan found (`Format.release_hint`)."""
        found = fmt.release_hint(sample, literals) if sample else None
        if found is not None:
            scanner.clock.released = date.fromisoformat(found[0])
        if sample:
            scanner.wrapper_stamp = fmt.wrapper_stamp(_first_lines(sample, WRAPPER_STAMP_LINES))


def _first_lines(text: str, count: int) -> list[str]:
    """The first `count` lines of `text` (what splitting it at its first `count` newlines keeps
    of them), without the copy of the rest a split makes: a head of 2,000 lines was copied
    whole at every log of a folder for its first 64."""
    if count <= 0:
        return []
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
        if end < 0:
            return text.split("\n")[:count]
    return text[:end].split("\n")


def choose_format(texts: list[str], engine: str | None = None, final: bool = True) -> Format | None:
    """The one sniff policy: `engine` when given, else the format whose rules best explain the
    first `SNIFF_LINES` lines (`Format.sniff`). A reader that cannot wait for that many (a live
    log) decides as soon as one format's rule that is evidence matches a line (`final=False`),
    or when forced."""
    if engine is not None:
        return get_format(engine)
    sample = "\n".join(texts[:SNIFF_LINES])
    if not final and len(texts) < SNIFF_LINES and not any(fmt.sniff_score(sample) > 0 for fmt in all_formats().values()):
        return None
    return sniff_format(sample)


def _sniffed(lines: Iterator[Line], engine: str | None) -> tuple[Format | None, Iterable[Line], str]:
    """Pick the format from the first lines, without losing them (stdin cannot rewind);
    None when no known engine's lines are among them. Also the first lines' text, whose
    engine version dates the log (`DatePolicy.scanner`)."""
    head = list(itertools.islice(lines, SNIFF_LINES))
    texts = [line.text for line in head]
    fmt = get_format(engine) if engine is not None else choose_format(texts)
    return fmt, itertools.chain(head, lines), "\n".join(texts)


def _unknown(source: Source, lines: Iterable[Line], reader: _UntilUnreadable) -> tuple[list[Run], SourceReport]:
    """A readable source of no known engine: no runs, its lines counted as `other`."""
    stats = LineStats()
    head: list[str] = []
    for line in lines:
        stats.physical, stats.logical, stats.other = line.number, stats.logical + 1, stats.other + 1
        if len(head) < SNIFF_LINES:
            head.append(line.text)
    report = SourceReport(source.name, None, 0, stats.as_dict(), None, reader.error)
    report.looks_like = foreign_engine("\n".join(head))
    return [], report


class LogReader:
    """bytes -> lines -> events -> runs for one source: the one path behind `parse` (all at
    once, `read`), `wait` (fed as the log grows, `feed`, runs asked for at any time) and
    `replay` (every line's time on the server's clock, `stamps`). One sniff policy
    (`choose_format`) and one date policy (`DatePolicy`) for all three."""

    def __init__(self, name: str, engine: str | None = None, dates: DatePolicy | None = None,
                 max_events: int | None = None, keep_stamps: bool = False) -> None:
        self.name = name
        self.engine = engine
        self.dates = dates or DatePolicy()
        self.max_events = max_events
        self.fmt: Format | None = None
        self.scanner: Scanner | None = None
        self.sample = ""  # the head the format was chosen from (`_mixed_with`)
        self.literals: set[str] | None = None  # the sniff literals in it, where a scan found them (`read_head`)
        self.events: list[Event] = []
        self.pending: list[Line] = []
        # physical line -> the first time a logical line of it has (`Scanner.last_stamp`:
        # the stamp, and whether it is on the server's own clock), for `replay`'s pacing
        self.stamps: dict[int, tuple[Stamp, bool]] | None = {} if keep_stamps else None
        if engine is not None:
            self.fmt = get_format(engine)  # known now; the scanner starts with the first line

    def _start(self, fmt: Format, sample: str = "") -> None:
        self.fmt = fmt
        self.scanner = self.dates.scanner(fmt, sample)
        self.scanner.keep_stamps = self.stamps is not None

    @property
    def date_source(self) -> str | None:
        return self.scanner.clock.date_source if self.scanner is not None else None

    def feed(self, lines: Iterable[Line], force: bool = False) -> bool:
        """Take more lines of a growing log; True when they made events."""
        if self.scanner is None:
            self.pending.extend(lines)
            if not self.decide(force):
                return False
            lines, self.pending = self.pending, []
        assert self.scanner is not None
        before = len(self.events)
        for line in lines:
            events = self.scanner.feed(line)
            self.events.extend(events)
            if self.stamps is not None:
                self._note_stamps(line, events)
        grew = len(self.events) > before
        if self.max_events is not None and len(self.events) > self.max_events:
            starts = [i for i, e in enumerate(self.events) if e.fields.get("starts_run") == "always"]
            if starts and starts[-1] > 0:
                del self.events[: starts[-1]]
            if len(self.events) > self.max_events // 2:
                # a flood of requests (a log probed every second for weeks, or a hostile stream)
                # keeps only the access events a timeline reads (`compact`): memory stays flat
                self.events = list(compact(self.events, self.fmt))
        return grew

    def _note_stamps(self, line: Line, events: list[Event]) -> None:
        assert self.stamps is not None and self.scanner is not None
        if self.scanner.last_stamp is not None:
            self.stamps.setdefault(line.number, self.scanner.last_stamp)
        for event in events:
            # a collector-only line before the first line showing both clocks, moved onto the
            # server's clock once the offset is known: where `parse` starts the run
            if event.name == CLOCK_OUTER_FIRST and event.ts is not None:
                self.stamps[event.line] = (event.ts, True)

    def decide(self, force: bool = False) -> bool:
        """Choose the format from the lines held so far (`choose_format`); True once chosen."""
        if self.scanner is None:
            texts = [line.text for line in self.pending[:SNIFF_LINES]]
            fmt = self.fmt or choose_format(texts, self.engine, final=force)
            if fmt is None:
                return False
            self._start(fmt, "\n".join(texts))
        return True

    def runs(self) -> list[Run]:
        """The runs of everything fed so far (a log still being written: its last run open)."""
        if self.scanner is None:
            if not self.pending:
                return []
            self.feed([], force=True)
        if self.scanner is None:  # no known engine's lines among them: no runs
            return []
        return self.build(self.events + self.scanner.finish(), stats=self.scanner.stats)

    def build(self, events: list[Event], clock: Clock | None = None, stats: LineStats | None = None) -> list[Run]:
        assert self.fmt is not None
        clock = clock or self._clock()
        runs = build_timeline(events, self.name, self.fmt, clock.date_source, stats=stats)
        note = clock.refused_note()
        if note is not None:
            for run in runs:
                run.warnings.append(note)
        return runs

    def _clock(self) -> Clock:
        assert self.scanner is not None
        return self.scanner.clock

    def read(self, fmt: Format, lines: Iterable[Line], sample: str = "") -> tuple[list[Event], LineStats, Clock]:
        """All events of a whole input read with `fmt` (chosen by `_sniffed`, whose first lines
        are `sample`), streamed through `compact` (parse's incremental engine)."""
        self._start(fmt, sample)
        stream = lines
        assert self.scanner is not None
        events = list(compact(iter_scanned(self.scanner, stream), fmt))
        return events, self.scanner.stats, self.scanner.clock


class _UntilUnreadable:
    """The lines of a source up to the point where it turns unreadable, remembering why.

    A log that breaks half-way (a .gz cut by log rotation, binary junk appended) still has a
    startup worth showing in the lines before the break.
    """

    def __init__(self, source: Source, digest: hashlib._Hash | None = None) -> None:
        self.source = source
        self.digest = digest  # an object's sha256, taken while reading it (`read_lines`)
        self.count = 0
        self.error: InputError | None = None
        self.notes: list[str] = []  # what reading dropped and kept on (NUL bytes), for each run's warnings

    def __iter__(self) -> Iterator[Line]:
        try:
            for line in read_lines(self.source, self.digest, self.notes):
                self.count += 1
                yield line
        except InputError as exc:
            if self.count == 0:
                raise  # nothing readable at all: the whole source is the error
            self.error = exc


_NUL_LOOK = 64 << 10  # the head and tail looked at for NUL bytes before the batch engine reads a file
_BATCH_FROM = 4 << 20  # bytes of input from which the batch engine repays its set-up (~60 ms)


def _total_size(sources: list[Source]) -> int:
    total = 0
    for source in sources:
        if source.path is not None:
            with contextlib.suppress(OSError):
                total += source.path.stat().st_size
    return total


def _batch_head(source: Source, scanner: str) -> bytes | None:
    """The file's first `_NUL_LOOK` bytes where the batch engine is worth it: a plain file big
    enough to repay its set-up (see _BATCH_FROM); None for stdin and .gz, which stream through
    the incremental engine. One stat and one open: this runs on every file of a folder."""
    if scanner == "incremental" or source.path is None:
        return None
    try:
        st = os.stat(source.path)
        if not stat.S_ISREG(st.st_mode) or (scanner != "batch" and st.st_size < _BATCH_FROM):
            return None
        with open(source.path, "rb") as fh:
            head = fh.read(_NUL_LOOK)
            if head[:2] == b"\x1f\x8b" or bom_encoding(head) is not None or head.startswith(b"\xef\xbb\xbf"):
                return None  # gzip, UTF-16/32 and a UTF-8 BOM: the incremental engine decodes them
            fh.seek(max(len(head), os.fstat(fh.fileno()).st_size - _NUL_LOOK))
            if b"\x00" in head or b"\x00" in fh.read(_NUL_LOOK):
                return None  # NUL bytes (a power loss's run at the end): the incremental engine drops them, said

    except OSError:
        return None
    from firedup.read import batch

    return head if batch.available() else None


def _events_batch(source: Source, fmt: Format, dates: DatePolicy, normalised: dict[int, list[Line]] | None = None,
                  sample: str = "", cut: list[Any] | None = None, whole: int = 0,
                  literals: Container[str] | None = None) -> tuple[list[Event], LineStats, Clock]:
    from firedup.read import batch

    assert source.path is not None
    scanner = batch.new_scanner(fmt, dates.given, file_date=dates.day_of_file())
    DatePolicy.hint(scanner, fmt, sample, literals)
    events = list(compact(batch.iter_file(source.path, scanner, normalised, cut, whole), fmt))
    return events, scanner.stats, scanner.clock


HASH_BLOCK = 1 << 20  # bytes hashed at a time


def _sha256() -> hashlib._Hash:
    """A fresh sha256, `hashlib` imported only for it (most parses hash nothing)."""
    import hashlib

    return hashlib.sha256()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a log's content: what identifies a log whatever its path, compression or line
    endings (run ids, the store, `check`'s new runs against their history). The bytes as read:
    a gzip file's inflated (by its magic bytes, as `read.sources` reads it), each CRLF as LF, so
    a `.gz` or a CRLF copy of a log is the same log; a plain LF file's hash is its bytes'."""
    digest = _sha256()
    with open(path, "rb") as raw:
        stream: Any = raw
        if raw.peek(2)[:2] == b"\x1f\x8b":
            import gzip
            import zlib

            stream = gzip.GzipFile(fileobj=raw, mode="rb")
            try:
                _digest_lf(stream, digest)
                return digest.hexdigest()
            except (OSError, EOFError, zlib.error):  # not whole gzip: its bytes, as a plain file's
                raw.seek(0)
                digest = _sha256()
                stream = raw
        _digest_lf(stream, digest)
    return digest.hexdigest()


OWN_OUTPUT = "firedup's own output"  # how a skipped source of ours is named (render.answers)
# `firedup wait`'s notes start its stderr (`> x.wait.txt 2>&1`); its `--record` JSON starts
# with the exit code and the headline.
_WAIT_NOTES = b"firedup wait: "
_WAIT_RECORD = re.compile(rb'\A\{\s*"exit_code":\s*-?\d+,\s*"headline":')


def firedup_output(source: Source, head: bytes | None = None) -> str | None:
    """Why a local file is firedup's own output (`wait`'s notes and verdict, or its --record),
    not a server log, or None: its first bytes say (`head`: those of a regular file, read
    already by `_batch_head`; else read here)."""
    if source.path is None or source.is_gzip or source.is_stdin:
        return None
    if head is not None:
        return _own_output(head[:256])
    try:
        if not stat.S_ISREG(os.stat(source.path).st_mode):
            return None  # a FIFO or a device: never opened here (an open would wait for a writer)
        with open(source.path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None  # the reading proper says why, in its one line
    return _own_output(head)


def _own_output(head: bytes) -> str | None:
    if head.startswith(_WAIT_NOTES):
        return f"{OWN_OUTPUT} (what `firedup wait` printed), not a server log; skipped"
    if _WAIT_RECORD.match(head):
        return f"{OWN_OUTPUT} (a `firedup wait --record`), not a server log; skipped"
    return None


def _digest_lf(stream: Any, digest: Any) -> None:
    """Feed `digest` the stream's bytes with every CRLF as LF (a CR at a block's end waits for the next)."""
    pending = b""
    for chunk in iter(lambda: stream.read(HASH_BLOCK), b""):
        chunk = pending + chunk
        pending = b""
        if chunk.endswith(b"\r"):
            chunk, pending = chunk[:-1], b"\r"
        digest.update(chunk.replace(b"\r\n", b"\n") if b"\r" in chunk else chunk)
    digest.update(pending)


def parse_source(source: Source, engine: str | None = None, default_date: date | None = None,
                 scanner: str = "auto", content_hash: bool = False,
                 launched_at: LaunchedAt = None) -> tuple[list[Run], SourceReport]:
    """All runs of one source. Raises InputError when the source cannot be read at all;
    when it breaks part-way, `SourceReport.cut_short` says why.

    `scanner`: "auto" runs the batch engine (firedup.read.batch) on plain files when the input is
    a few MB or more (one big file, or many small ones: `parse_paths`), and the incremental
    engine (firedup.read.engine) on everything else (small inputs, stdin, .gz); "batch" and
    "incremental" force one (tests, benchmarks). Both give the same events; the batch
    engine hands a source back to the incremental one when it cannot prove that.
    Access-log events that cannot change the timeline are dropped (`compact`), so memory
    does not grow with the traffic a log holds.

    `content_hash`: also hash the file's bytes here, by the path just read, and put the hash on
    the report and every run (`Run.content_hash`): what tables and the store identify runs by,
    so a run keeps its id whatever name a view later gives its source. Off by default: `parse`
    and `timeline` need no ids, and hashing costs about as much as reading a big file.

    `launched_at`: when the server of the source's first run was launched, on the log's clock (a
    time of day takes the first line's date): that run's launch is `given` (timeline.launch).
    """
    first = _batch_head(source, scanner)  # None: the incremental engine reads it
    own = firedup_output(source, first)
    if own is not None:  # what `firedup wait` wrote beside the log: never a run of its own
        report = SourceReport(source.name, None, 0, LineStats().as_dict(), None)
        report.skipped = own
        return [], report
    # an object in object storage is hashed as it streams by: it is fetched once
    digest = _sha256() if content_hash and source.url is not None else None
    reader = _UntilUnreadable(source, digest)
    log = LogReader(source.name, engine, DatePolicy.of(source, default_date))
    cut: list[Any] = []  # the batch engine's `Truncated`: the file shrank while it was read
    fmt, result = _read_batch(source, engine, first, log, cut) if first is not None else (None, None)
    if result is None:
        fmt, stream, head = _sniffed(iter(reader), engine)
        if fmt is None:
            return _unknown(source, stream, reader)
        log.sample = head
        result = log.read(fmt, stream, head)
    assert fmt is not None
    events, stats, clock = result
    runs = log.build(events, clock, stats)
    stopped = reader.error or (InputError(source.name, str(cut[0])) if cut else None)
    if runs and not any(r.milestones or r.crash or r.first_ts for r in runs):
        # lines a format matched (a launch command quoted in a README or a poller's record) but
        # no milestone, no error and no time of the server's: not a server log, not a run
        report = SourceReport(source.name, None, 0, stats.as_dict(), None, stopped)
        report.skipped = (f"not a server log: no line of it is a {fmt.display} server's own (no timestamped line, "
                          "milestone or error); skipped")
        return [], report
    report = SourceReport(source.name, fmt.name, len(runs), stats.as_dict(), clock.date_source, stopped)
    report.content_hash = _content_hash(source, content_hash, digest)
    _note_on_runs(runs, report, launched_at)
    for run in runs:
        run.warnings.extend(reader.notes)
    other = _mixed_with(fmt, log.sample, log.literals) if engine is None else None
    if other is not None:
        runs = _both_engines(source, runs, fmt, other, default_date, scanner)
        report.runs = len(runs)
    if source.path is not None and source.url is None:
        apply_record_beside(source.path, runs, fmt)  # `wait --record`'s process evidence, kept beside the log
    return runs, report


# What another engine's lines must weigh in a log's head (`Format.sniff_score`) for the log to
# mix two servers: 0 on every sample, corpus and real-GPU log of one engine; an interleaved
# log of two engines scores 40 and more for both.
MIXED_SCORE = 5.0
_SERVER_ONLY = frozenset({HTTP_STARTED, HTTP_RUNNING, HTTP_FIRST_REQUEST, HEALTH_FIRST, REQUEST_FIRST, HTTP_SHUTDOWN})
_MIXED_LOOK = 64 << 10  # the characters of the head those literals are looked for in (a few lines' worth of each server)
_HEAVY_EVIDENCE = 8.0  # the rules whose literal is looked for first (an engine's banner, its args line)


def _mixed_with(fmt: Format, sample: str, found: set[str] | None = None) -> Format | None:
    """Another engine whose own lines are in this log's head too (two servers' logs in one
    file, interleaved): its heavy rules' literals in the head's first `_MIXED_LOOK` characters
    first (a banner, an args line), its score only where one is there. `found`: the sniff
    literals of the whole head, where its scan found them: one not there is not searched for."""
    if not sample:
        return None
    for other in all_formats().values():
        if other is fmt or not any((found is None or lit in found) and sample.find(lit, 0, _MIXED_LOOK) >= 0
                                   for rule in other.sniff_rules if rule.evidence >= _HEAVY_EVIDENCE
                                   for lit in rule.literals):
            continue
        if other.sniff_score(sample) >= MIXED_SCORE:
            return other
    return None


def _both_engines(source: Source, runs: list[Run], fmt: Format, other: Format, default_date: date | None,
                  scanner: str) -> list[Run]:
    """The runs of a log that mixes two engines' servers: each engine's read as its own (the
    source read again with the other format), in the order of their first lines, each saying
    so; a source that cannot be read twice (stdin) says only that the other's are not read."""
    note = (f"this file mixes the logs of two servers, {fmt.display}'s and {other.display}'s: each engine's "
            "lines are read as its own runs (a line both print counts for each)")
    if source.path is None and source.url is None:
        for run in runs:
            run.warnings.append(f"this file mixes the logs of two servers, {fmt.display}'s and {other.display}'s: "
                                f"only {fmt.display}'s are read from standard input (give the file to read both)")
        return runs
    try:
        theirs, _ = parse_source(source, other.name, default_date, scanner)
    except InputError:
        theirs = []
    # a run made only of the lines every engine's server prints (uvicorn's) is the other
    # server's read by the wrong engine: no run of its own
    both = sorted([run for run in (*runs, *theirs) if run.crash is not None
                   or any(m.name not in _SERVER_ONLY for m in run.milestones)],
                  key=lambda run: (run.first_line or 0, run.engine))
    for i, run in enumerate(both):
        run.run_index = i
        run.warnings.append(note)
    return both


def _read_batch(source: Source, engine: str | None, head: bytes, log: LogReader,
                cut: list[Any]) -> tuple[Format | None, tuple[list[Event], LineStats, Clock] | None]:
    """The source read by the batch engine, where it is worth it (`head`: `_batch_head`'s) and
    can prove its events the incremental engine's: the format and the events; (None, None) else."""
    from firedup.read import batch

    assert source.path is not None
    fmt: Format | None = None
    try:
        whole = _size(source.path)  # a file shorter than this when its scan begins was emptied under it
        if b"\n" not in head:
            # an empty file, a first line longer than the head (endless?): its one-line reason. A
            # head with a line in it, no NUL, BOM or gzip (`_batch_head`) has a first line to read
            next(iter(read_lines(source)), None)
        literals: set[str] = set()
        sample, normalised = batch.read_head(source.path, SNIFF_LINES, refuse_mostly_flagged=True,
                                             until_settled=engine is None, literals=literals)
        # `choose_format` on the same lines, by the sniff literals the head's scan found
        fmt = get_format(engine) if engine is not None else batch.sniff_format(sample, literals)
        if fmt is None:  # the incremental engine finds no engine either, and counts the lines
            return None, None
        log.sample, log.literals = sample, literals
        # the literals of the head's scan (`read_head`): the sniff's, and the release hint's
        result = _events_batch(source, fmt, log.dates, normalised, sample, cut, whole, literals)
        log.fmt = fmt
        return fmt, result
    except batch.NeedExact:
        return fmt, None


def _size(path: str | os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # gone: read_lines says so
        return 0


def _content_hash(source: Source, wanted: bool, digest: hashlib._Hash | None) -> str | None:
    """The sha256 of the source's bytes, when asked for: an object's, taken as it streamed by
    (`digest`), else a file's, read again by its path."""
    found: str | None = None
    if wanted and source.path is not None:
        with contextlib.suppress(OSError):  # gone since it was read: the tables fall back (frames)
            found = file_sha256(source.path)
    if digest is not None:
        found = digest.hexdigest()
    return found


def _note_on_runs(runs: list[Run], report: SourceReport, launched_at: LaunchedAt) -> None:
    """What the source's report says of each run: the content hash and why the input stopped
    early; the launch given for the first run (`launched_at`)."""
    for run in runs:
        if report.content_hash is not None:
            run.content_hash = report.content_hash
        if report.cut_short is not None:
            run.warnings.append(f"the input stops early: {report.cut_short}")
    if launched_at is not None and runs:
        given = given_launch(runs[0].first_ts, runs[0].engine, launched_at)
        if isinstance(given, Launch):
            runs[0].launch = given
        else:
            runs[0].warnings.append(given)


def parse_paths(
    paths: Iterable[str],
    engine: str | None = None,
    default_date: date | None = None,
    all_files: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    scanner: str = "auto",
    jobs: int | None = None,
    content_hash: bool = False,
    launched_at: LaunchedAt = None,
) -> ParseResult:
    """Parse files, directories, globs and "-" (stdin).

    `jobs`: how many processes parse files at once; None chooses one per core for
    `POOL_FROM_FILES` files or more (see `_pool_size`), 1 parses them here, one by one.
    Runs, errors and their order are the same either way. `content_hash`, `launched_at`: see
    `parse_source`.
    """
    if launched_at is not None:
        launched_at = parse_launched_at(launched_at)
    result = ParseResult()
    for runs in _parsed(paths, engine, default_date, all_files, progress, scanner, jobs, content_hash, result,
                        launched_at=launched_at):
        result.runs.extend(runs)
    twin_caches(result.runs)  # a capture several times its same-config twin's was a cold kernel cache
    if launched_at is not None:
        _refuse_untaken_launch(result.runs)
    return result


def _refuse_untaken_launch(runs: Sequence[Run]) -> None:
    """`--launched-at` that no run could take (after every first line, another day): a usage
    error saying why, not a run silently counted from a time that is not its launch."""
    if not runs or any(r.launch is not None and r.launch.source == "given" for r in runs):
        return
    reasons = [w for r in runs for w in r.warnings if w.startswith("--launched-at")]
    if reasons:
        raise UsageError(reasons[0].removesuffix(", left out"))


def _parsed(paths: Iterable[str], engine: str | None, default_date: date | None, all_files: bool,
            progress: Callable[[int, int, str], None] | None, scanner: str, jobs: int | None, content_hash: bool,
            result: ParseResult, encode: bool = False, launched_at: LaunchedAt = None) -> Iterator[list[Any]]:
    """The runs of each source in order (each run's contract JSON with `encode`), while its
    errors and reports go into `result`: the one loop behind `parse_paths` and `write_parse_json`.
    An unknown engine raises here, before anything is read or written, as do arguments of the
    wrong kind (firedup's UsageError, never a TypeError from deep inside)."""
    paths = _path_list(paths)
    if progress is not None and not callable(progress):
        raise UsageError(f"progress: give a function (done, total, name), or None, not {_shown(progress)}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise UsageError(f"jobs: give a whole number of at least 1, or None, not {_shown(jobs)}")
    if engine is not None and not isinstance(engine, str):
        raise UsageError(f"engine: give an engine's name (a str), not {_shown(engine)}")
    if default_date is not None and (not isinstance(default_date, date) or isinstance(default_date, datetime)):
        raise UsageError(f"date: give a datetime.date, or None, not {_shown(default_date)}")
    if launched_at is not None and not isinstance(launched_at, (datetime, time)):
        raise UsageError(f"launched_at: give a datetime or a time of day, or None, not {_shown(launched_at)}")
    if scanner not in SCANNERS:
        raise UsageError(f"scanner: one of {', '.join(SCANNERS)}, not {_shown(scanner)}")
    if engine is not None:
        get_format(engine)  # UnknownEngineError: the caller's mistake, not a file's, so before any file
    sources, errors = expand_inputs(paths, all_files=all_files)
    result.errors.extend(errors)
    if scanner != "incremental":
        total = _total_size(sources)
        if scanner == "auto" and total >= _BATCH_FROM:
            scanner = "batch"  # its one-off set-up (imports, compiling the scan) pays off over the lot
        from firedup.read.windows import count_in_bulk

        count_in_bulk(total)  # here, so that a pool's workers fork with what it imports
    job = functools.partial(_parse_one_encoded if encode else _parse_one, engine=engine, default_date=default_date,
                            scanner=scanner, content_hash=content_hash, launched_at=launched_at)
    return _outcomes(job, sources, _pool_size(sources, jobs), progress, result)


def _outcomes(job: Callable[[Source], _Outcome], sources: list[Source], jobs: int,
              progress: Callable[[int, int, str], None] | None, result: ParseResult) -> Iterator[list[Any]]:
    for i, (source, outcome) in enumerate(zip(sources, _each(job, sources, jobs), strict=True)):
        if progress is not None:
            progress(i, len(sources), source.name)
        if isinstance(outcome, InputError):
            result.errors.append(outcome)
            continue
        runs, report = outcome
        if report.cut_short is not None:
            result.errors.append(report.cut_short)
        result.sources.append(report)
        yield runs
    if progress is not None:
        progress(len(sources), len(sources), "")


def _parse_one(source: Source, engine: str | None, default_date: date | None,
               scanner: str, content_hash: bool = False,
               launched_at: LaunchedAt = None) -> tuple[list[Run], SourceReport] | InputError:
    """`parse_source`, with any failure as the source's error (for a pool's worker too)."""
    try:
        return parse_source(source, engine, default_date, scanner, content_hash, launched_at)
    except InputError as exc:
        return exc
    except Exception as exc:  # a bug must not cost the user the rest of the batch
        if os.environ.get(DEBUG_ENV):
            raise  # a developer chasing it wants the traceback, not one line
        return InputError(source.name, f"internal error ({type(exc).__name__}: {exc}); please report it "
                                       f"(rerun with {DEBUG_ENV}=1 for the traceback)")



def _parse_one_encoded(source: Source, engine: str | None, default_date: date | None,
                       scanner: str, content_hash: bool = False,
                       launched_at: LaunchedAt = None) -> tuple[list[tuple[str, tuple[int, int] | None, TwinFacts]],
                                                                SourceReport] | InputError:
    """`_parse_one`, each run as its contract's JSON text (encoded in the worker: see write_parse_json),
    where in it its caches are (`_encoded_run`) and what the twin rules read of it."""
    outcome = _parse_one(source, engine, default_date, scanner, content_hash, launched_at)
    if isinstance(outcome, InputError):
        return outcome
    runs, report = outcome
    return [(*_encoded_run(run), twin_facts(run)) for run in runs], report


# A text no contract holds but where `_encoded_run` puts it (a private-use character on each side).
_CACHES_MARK = "\ue000firedup caches\ue000"


def _encoded_run(run: Run) -> tuple[str, tuple[int, int] | None]:
    """A run's contract JSON, and where in it the value of its `caches` is: the twin rules may
    change that value alone (`write_parse_json`), which is then decoded and encoded in its place,
    not the whole run (45 kB). The run is encoded with a mark for the value, and the value alone
    put in the mark's place: JSON without indentation encodes a value the same wherever it sits.
    None where the span cannot be told: a value `json_text` writes, or a log that holds the mark."""
    contract = run.as_contract()
    strict = _strict_encoder()
    try:
        marked = strict({**contract, "caches": _CACHES_MARK})  # the same keys, in the same order
        value = strict(contract["caches"])
    except (ValueError, TypeError):
        return _encoder()(contract), None
    mark = strict(_CACHES_MARK)
    head, found, tail = marked.partition(mark)
    if not found or mark in tail:
        return _encoder()(contract), None
    return head + value + tail, (len(head), len(head) + len(value))


# A folder of CI logs is thousands of independent files: from this many on, a pool of
# processes (one per core) parses them, when processes can be forked (Linux). Below it,
# or for stdin, starting the pool costs more than it saves.
SCANNERS = ("auto", "batch", "incremental")
POOL_FROM_FILES = 32
MAX_JOBS = 8


def _pool_size(sources: list[Source], jobs: int | None) -> int:
    """Processes to parse with: `jobs` as asked, but never more than the files nor more than
    `JOBS_PER_CORE` per core (`parse(jobs=10**6)` forked without end); else chosen here."""
    if jobs is not None:
        return max(1, min(jobs, len(sources), JOBS_PER_CORE * _cores()))
    if len(sources) < POOL_FROM_FILES or any(source.is_stdin for source in sources):
        return 1
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or sys.platform != "linux":
        return 1  # a spawned worker would re-run `python -m firedup` itself
    return max(1, min(_cores(), MAX_JOBS, len(sources) // (POOL_FROM_FILES // 2)))


JOBS_PER_CORE = 4


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _shown(value: object) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def _path_list(paths: object) -> list[str]:
    """Paths as a list of str: one path (str or os.PathLike) or an iterable of them; a str is
    one path, never its characters (`parse_paths("x.log")` walked "/" as one of them)."""
    if isinstance(paths, (str, os.PathLike)):
        items: list[object] = [paths]
    elif isinstance(paths, (bytes, bytearray, dict)) or not isinstance(paths, Iterable):
        raise UsageError(f"paths: give a path or a list of paths (str or os.PathLike), not {_shown(paths)}")
    else:
        items = list(paths)
    out = []
    for item in items:
        text = os.fspath(item) if isinstance(item, (str, os.PathLike)) else None
        if not isinstance(text, str) or not text:
            raise UsageError(f"paths: each path must be a non-empty str or os.PathLike of str, not {_shown(item)}")
        out.append(text)
    return out


_Outcome = tuple[list[Any], SourceReport] | InputError


def _each(job: Callable[[Source], _Outcome], sources: list[Source], jobs: int) -> Iterator[_Outcome]:
    """`job` over `sources`, in order; by a pool of `jobs` forked processes when above 1. A
    worker that dies (killed by the OOM killer, say) is the error of the file it was reading,
    and the others are read (`core.pool`)."""
    if jobs <= 1 or any(source.is_stdin for source in sources):
        yield from map(job, sources)
        return
    from firedup.core.pool import ordered_map

    all_formats()  # imported once here, not once per worker
    chunk = max(1, min(16, len(sources) // (jobs * 8)))
    yield from ordered_map(job, sources, jobs, _worker_died, chunksize=chunk)


def _worker_died(source: Source, why: str) -> InputError:
    return InputError(source.name, f"the process reading it died ({why}); the other files were read")


__all__ = ["DatePolicy", "LineStats", "LogReader", "ParseResult", "SourceReport", "StreamedParse", "choose_format",
           "file_sha256", "parse_paths", "parse_source", "write_contract_json", "write_parse_json"]

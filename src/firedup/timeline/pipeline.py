"""Parse inputs into runs: the library behind `firedup parse` and everything downstream.

One bad input never stops the others: its reason lands in `ParseResult.errors` and the
rest goes on.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import IO, Any

from firedup.formats import Format, all_formats, foreign_engine, get_format, sniff
from firedup.read.clock import Clock
from firedup.read.compact import compact
from firedup.read.engine import Event, LineStats, Scanner, iter_scanned
from firedup.read.sources import InputError, Line, Source, expand_inputs, file_date, read_lines
from firedup.timeline.build import Run, build_timeline

SNIFF_LINES = 2000


@dataclass
class SourceReport:
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


@dataclass
class ParseResult:
    runs: list[Run] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)

    def as_contract(self) -> dict[str, Any]:
        """The JSON object of shared/CONTRACT.md (plus added keys)."""
        return {
            "runs": [run.as_contract() for run in self.runs],
            "errors": self.as_contract_errors(),
            "sources": self.as_contract_sources(),
        }

    def as_contract_errors(self) -> list[dict[str, Any]]:
        return [{"source": e.source, "error": e.reason, "line": e.line} for e in self.errors]

    def as_contract_sources(self) -> list[dict[str, Any]]:
        return [{"source": s.source, "engine": s.engine, "runs": s.runs, "lines": s.lines,
                 "date_source": s.date_source, "looks_like": s.looks_like} for s in self.sources]


def write_contract_json(result: ParseResult, out: IO[str]) -> None:
    """`result.as_contract()` as JSON, one run (and one error, one source) per line.

    Python's C encoder runs only without `indent`; the indented encoder is pure Python and
    was a fifth of the time of `parse --json` over a folder of logs. One object per line
    stays readable, greppable and diffable, and is streamed run by run.
    """
    import json  # not on the start-up path of `parse` without --json

    encode = json.JSONEncoder(ensure_ascii=False).encode
    sections: list[tuple[str, Iterable[Any]]] = [
        ("runs", (run.as_contract() for run in result.runs)),
        ("errors", result.as_contract_errors()),
        ("sources", result.as_contract_sources()),
    ]
    out.write("{")
    for i, (key, items) in enumerate(sections):
        out.write(f"{',' if i else ''}\n{encode(key)}: [")
        for j, item in enumerate(items):
            out.write(f"{',' if j else ''}\n{encode(item)}")
        out.write("\n]")
    out.write("\n}\n")


def _sniffed(lines: Iterator[Line], engine: str | None) -> tuple[Format | None, Iterable[Line]]:
    """Pick the format from the first lines, without losing them (stdin cannot rewind);
    None when no known engine's lines are among them."""
    if engine is not None:
        return get_format(engine), lines
    head = list(itertools.islice(lines, SNIFF_LINES))
    fmt = sniff("\n".join(line.text for line in head))
    return fmt, itertools.chain(head, lines)


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


class _UntilUnreadable:
    """The lines of a source up to the point where it turns unreadable, remembering why.

    A log that breaks half-way (a .gz cut by log rotation, binary junk appended) still has a
    startup worth showing in the lines before the break.
    """

    def __init__(self, source: Source) -> None:
        self.source = source
        self.count = 0
        self.error: InputError | None = None

    def __iter__(self) -> Iterator[Line]:
        try:
            for line in read_lines(self.source):
                self.count += 1
                yield line
        except InputError as exc:
            if self.count == 0:
                raise  # nothing readable at all: the whole source is the error
            self.error = exc


_BATCH_FROM = 4 << 20  # bytes of input from which the batch engine repays its set-up (~60 ms)


def _total_size(sources: list[Source]) -> int:
    total = 0
    for source in sources:
        if source.path is not None:
            with contextlib.suppress(OSError):
                total += source.path.stat().st_size
    return total


def _batch_worth_it(source: Source, scanner: str) -> bool:
    """The batch engine for plain files big enough to repay its set-up (see _BATCH_FROM);
    stdin and .gz stream through the incremental engine."""
    if scanner == "incremental" or source.path is None:
        return False
    try:
        if not source.path.is_file() or (scanner != "batch" and source.path.stat().st_size < _BATCH_FROM):
            return False
        with open(source.path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                return False
    except OSError:
        return False
    from firedup.read import batch

    return batch.available()


def _events_batch(source: Source, fmt: Format, default_date: date | None,
                  normalised: dict[int, list[Line]] | None = None) -> tuple[list[Event], LineStats, Clock]:
    from firedup.read import batch

    assert source.path is not None
    scanner = batch.new_scanner(fmt, default_date, file_date=file_date(source))
    events = list(compact(batch.iter_file(source.path, scanner, normalised), fmt))
    return events, scanner.stats, scanner.clock


def _events_incremental(fmt: Format, lines: Iterable[Line], default_date: date | None,
                        source: Source) -> tuple[list[Event], LineStats, Clock]:
    scanner = Scanner(fmt, default_date, file_date=file_date(source))
    events = list(compact(iter_scanned(scanner, lines), fmt))
    return events, scanner.stats, scanner.clock


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes: what identifies a log whatever its path (run ids, the store)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_source(source: Source, engine: str | None = None, default_date: date | None = None,
                 scanner: str = "auto", content_hash: bool = False) -> tuple[list[Run], SourceReport]:
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
    """
    reader = _UntilUnreadable(source)
    result: tuple[list[Event], LineStats, Clock] | None = None
    fmt: Format | None = None
    if _batch_worth_it(source, scanner):
        from firedup.read import batch

        assert source.path is not None
        try:
            next(iter(read_lines(source)), None)  # an empty or binary file: its one-line reason
            normalised: dict[int, list[Line]] | None = None
            if engine is not None:
                fmt = get_format(engine)
            else:
                sample, normalised = batch.read_head(source.path, SNIFF_LINES, refuse_mostly_flagged=True)
                fmt = batch.sniff(sample)
            if fmt is not None:  # else the incremental engine finds no engine either, and counts the lines
                result = _events_batch(source, fmt, default_date, normalised)
        except batch.NeedExact:
            result = None
    if result is None:
        fmt, stream = _sniffed(iter(reader), engine)
        if fmt is None:
            return _unknown(source, stream, reader)
        result = _events_incremental(fmt, stream, default_date, source)
    assert fmt is not None
    events, stats, clock = result
    runs = build_timeline(events, source.name, fmt, clock.date_source)
    report = SourceReport(source.name, fmt.name, len(runs), stats.as_dict(), clock.date_source, reader.error)
    if content_hash and source.path is not None:
        with contextlib.suppress(OSError):  # gone since it was read: the tables fall back (frames)
            report.content_hash = file_sha256(source.path)
        for run in runs:
            run.content_hash = report.content_hash
    if reader.error is not None:
        for run in runs:
            run.warnings.append(f"the input stops early: {reader.error}")
    return runs, report


def parse_paths(
    paths: Iterable[str],
    engine: str | None = None,
    default_date: date | None = None,
    all_files: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    scanner: str = "auto",
    jobs: int | None = None,
    content_hash: bool = False,
) -> ParseResult:
    """Parse files, directories, globs and "-" (stdin).

    `jobs`: how many processes parse files at once; None chooses one per core for
    `POOL_FROM_FILES` files or more (see `_pool_size`), 1 parses them here, one by one.
    Runs, errors and their order are the same either way. `content_hash`: see `parse_source`.
    """
    if engine is not None:
        get_format(engine)  # UnknownEngineError: the caller's mistake, not a file's, so before any file
    sources, errors = expand_inputs(paths, all_files=all_files)
    result = ParseResult(errors=list(errors))
    if scanner == "auto" and _total_size(sources) >= _BATCH_FROM:
        scanner = "batch"  # its one-off set-up (imports, compiling the scan) pays off over the lot
    job = functools.partial(_parse_one, engine=engine, default_date=default_date, scanner=scanner,
                            content_hash=content_hash)
    for i, (source, outcome) in enumerate(zip(sources, _each(job, sources, _pool_size(sources, jobs)), strict=True)):
        if progress is not None:
            progress(i, len(sources), source.name)
        if isinstance(outcome, InputError):
            result.errors.append(outcome)
            continue
        runs, report = outcome
        if report.cut_short is not None:
            result.errors.append(report.cut_short)
        result.runs.extend(runs)
        result.sources.append(report)
    if progress is not None:
        progress(len(sources), len(sources), "")
    return result


def _parse_one(source: Source, engine: str | None, default_date: date | None,
               scanner: str, content_hash: bool = False) -> tuple[list[Run], SourceReport] | InputError:
    """`parse_source`, with any failure as the source's error (for a pool's worker too)."""
    try:
        return parse_source(source, engine, default_date, scanner, content_hash)
    except InputError as exc:
        return exc
    except Exception as exc:  # a bug must not cost the user the rest of the batch
        return InputError(source.name, f"internal error ({type(exc).__name__}: {exc}); please report it")


# A folder of CI logs is thousands of independent files: from this many on, a pool of
# processes (one per core) parses them, when processes can be forked (Linux). Below it,
# or for stdin, starting the pool costs more than it saves.
POOL_FROM_FILES = 32
MAX_JOBS = 8


def _pool_size(sources: list[Source], jobs: int | None) -> int:
    if jobs is not None:
        return max(1, jobs)
    if len(sources) < POOL_FROM_FILES or any(source.path is None for source in sources):
        return 1
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or sys.platform != "linux":
        return 1  # a spawned worker would re-run `python -m firedup` itself
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_JOBS, len(sources) // (POOL_FROM_FILES // 2)))


_Outcome = tuple[list[Run], SourceReport] | InputError


def _each(job: Callable[[Source], _Outcome], sources: list[Source], jobs: int) -> Iterator[_Outcome]:
    """`job` over `sources`, in order; by a pool of `jobs` forked processes when above 1."""
    if jobs <= 1 or any(source.path is None for source in sources):
        yield from map(job, sources)
        return
    import multiprocessing

    all_formats()  # imported once here, not once per worker
    chunk = max(1, min(16, len(sources) // (jobs * 8)))
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        yield from pool.imap(job, sources, chunksize=chunk)


__all__ = ["LineStats", "ParseResult", "SourceReport", "file_sha256", "parse_paths", "parse_source",
           "write_contract_json"]

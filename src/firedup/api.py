"""The public library: one function per thing the CLI does, in the manner of sqlite-utils.

    import firedup
    result = firedup.parse(["sample_logs/"])          # runs, milestones, phases, crashes
    runs = firedup.load(["sample_logs/"])             # polars tables over many runs
    firedup.compare(runs, by=["disable_cuda_graph"]).groups
    firedup.budgets(runs, risk=0.01).budgets[0].budget_seconds
    firedup.plot("timeline", runs, "timeline.svg")
    firedup.report(["sample_logs/"], "reports/samples/")

Each function is a thin layer over the module that does the work (`firedup.timeline.pipeline`,
`firedup.tables.*`, `firedup.render.*`), with the CLI's option names, so `firedup CMD` and
`firedup.CMD(...)` agree. What the user can fix raises a `firedup.FiredupError` (see
`firedup.errors`); an unreadable input is never raised but listed in `.errors`, so one bad file
never costs the rest. polars and matplotlib load only when a function needs them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date as _date
from datetime import datetime as _datetime
from datetime import time as _time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO, TypeAlias

from firedup.errors import InputError, NoStartupError, UsageError

if TYPE_CHECKING:
    from firedup.render.report import Progress, ReportResult
    from firedup.tables.advice import Advice
    from firedup.tables.budget import BudgetReport
    from firedup.tables.check import CheckReport
    from firedup.tables.compare import Comparison
    from firedup.tables.frames import Runs
    from firedup.tables.grouping import Coverage
    from firedup.tables.store import IngestReport, Store
    from firedup.timeline.pipeline import ParseResult, StreamedParse

PathLike: TypeAlias = "str | os.PathLike[str]"
Paths: TypeAlias = "PathLike | Iterable[PathLike]"
StoreArg: TypeAlias = "PathLike | Store | bool | None"  # True (or ""): the default store
FileProgress = Callable[[int, int, str], None]

PLOT_KINDS = ("timeline", "compare", "distribution", "ranks")
SUMMARY_FORMATS = ("table", "csv", "json", "parquet")


# --- the arguments as the functions take them: firedup's own UsageError for a wrong type, never a
# TypeError from deep inside (`parse(123)` was "'int' object is not iterable") -------------------


def _paths(paths: Paths | None, what: str = "paths", required: bool = True) -> list[str]:
    """Paths as a list of str: one path (str or os.PathLike) or an iterable of them. An empty
    path is an error, not the current folder (give "." for that); None is no paths where they
    are optional (`required=False`)."""
    if paths is None and not required:
        return []
    if isinstance(paths, (str, os.PathLike)):
        items: list[object] = [paths]
    elif isinstance(paths, (bytes, bytearray, Mapping)) or not isinstance(paths, Iterable):
        raise UsageError(f"{what}: give a path or a list of paths (str or os.PathLike), not {_type(paths)}")
    else:
        items = list(paths)
    out = []
    for item in items:
        text = os.fspath(item) if isinstance(item, (str, os.PathLike)) else None
        if not isinstance(text, str):
            raise UsageError(f"{what}: each path must be a str or os.PathLike of str, not {_type(item)}")
        if not text:
            raise UsageError(f"{what}: an empty path names no file (give . for the current folder)")
        out.append(text)
    return out


def _type(value: object) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def _path(path: object, what: str) -> str:
    """One path to write to (str or os.PathLike of str, not empty)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str) or not text:
        raise UsageError(f"{what}: give a file or folder path (str or os.PathLike), not {_type(path)}")
    return text


def _by(by: str | Sequence[str] | None) -> list[str]:
    """`--by` as the CLI takes it: a list, or comma-separated names."""
    if by is not None and not isinstance(by, str) and (isinstance(by, Mapping) or not isinstance(by, Iterable)):
        raise UsageError(f"by: give flag names (a str, comma-separated, or a list of str), not {_type(by)}")
    items = [by] if isinstance(by, str) else list(by or ())
    if not all(isinstance(item, str) for item in items):
        raise UsageError(f"by: each flag name must be a str, not {_type(next(i for i in items if not isinstance(i, str)))}")
    # a flag named twice is one column (polars refused a frame with two of one name)
    return list(dict.fromkeys(flag.strip() for item in items for flag in item.split(",") if flag.strip()))


def _progress(progress: object) -> None:
    if progress is not None and not callable(progress):
        raise UsageError(f"progress: give a function, or None, not {_type(progress)}")


def _risk(risk: object) -> float:
    """A risk as a float (0 < risk < 1 is checked where it is used)."""
    if isinstance(risk, bool) or not isinstance(risk, (int, float)) or not math.isfinite(risk):
        raise UsageError(f"risk: give a number between 0 and 1, e.g. 0.01, not {_type(risk)}")
    return float(risk)


def _engine(engine: object) -> str | None:
    if engine is not None and not isinstance(engine, str):
        raise UsageError(f"engine: give an engine's name (a str, one of firedup.formats.known_engines()), not "
                         f"{_type(engine)}")
    return engine


def _day(day: object) -> _date | None:
    """A date (or its ISO text) within the years a log's dates may have (`read.clock.MIN_YEAR`)."""
    from firedup.read.clock import MAX_YEAR, MIN_YEAR

    if isinstance(day, str):
        try:
            day = _date.fromisoformat(day)
        except ValueError:
            raise UsageError(f"date: {day!r} is not a date like 2026-11-30") from None
    if day is None:
        return None
    if not isinstance(day, _date) or isinstance(day, _datetime):
        raise UsageError(f"date: give a datetime.date (or its ISO text), not {_type(day)}")
    if not MIN_YEAR <= day.year <= MAX_YEAR:
        raise UsageError(f"date: {day.isoformat()} is outside the years a log's dates may have ({MIN_YEAR}-{MAX_YEAR})")
    return day


def _count(value: object, what: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UsageError(f"{what}: give a whole number of at least 1, not {_type(value)}")
    return value


def parse(paths: Paths, *, engine: str | None = None, date: _date | None = None, all_files: bool = False,
          progress: FileProgress | None = None, jobs: int | None = None,
          launched_at: _datetime | _time | None = None) -> ParseResult:
    """Files, folders, globs or "-" (stdin) -> `ParseResult`: runs (each with milestones, phases
    and its crash), the inputs that could not be read (`.errors`) and what each source held.

    `engine` forces a format (a name from `firedup.formats.known_engines()`) instead of sniffing it; `date` dates logs that
    print only times; `all_files` reads every file of a folder, not only *.log/.txt/.out/.gz.
    Raises UnknownEngineError for an engine no format knows (before reading anything).
    `launched_at`: when the server was launched, on the log's clock (a `datetime`, a `time` or a
    string such as "22:46:34" or "2026-12-05T22:46:34Z"; a time of day takes the first line's
    date): each source's first run it can be the launch of counts from it (`Run.launch`, source
    "given"; docs/launch.md). Raises UsageError for anything else, or when no run can take it.
    """
    from firedup.timeline.pipeline import parse_paths

    _progress(progress)
    return parse_paths(_paths(paths), engine=_engine(engine), default_date=_day(date), all_files=all_files,
                       progress=progress, jobs=_count(jobs, "jobs"), launched_at=launched_at)


def write_parse_json(paths: Paths, out: IO[str], *, engine: str | None = None, date: _date | None = None,
                     all_files: bool = False, progress: FileProgress | None = None,
                     jobs: int | None = None, launched_at: _datetime | _time | None = None) -> StreamedParse:
    """`parse` written to `out` as the contract's JSON (docs/contract.md), streamed run by run (what
    `firedup parse --json` prints): the same text as `write_contract_json(parse(...))`, without
    holding every run in memory. Returns the errors, the sources and the count of runs."""
    from firedup.timeline.pipeline import write_parse_json as write

    _progress(progress)
    return write(_paths(paths), out, engine=_engine(engine), default_date=_day(date), all_files=all_files,
                 progress=progress, jobs=_count(jobs, "jobs"), launched_at=launched_at)


def open_store(store: StoreArg = True) -> Store:
    """The history store: True or "" for the default ($FIREDUP_STORE, else the user data dir)."""
    from firedup.tables.store import Store
    from firedup.tables.store import open_store as open_at

    if isinstance(store, Store):
        return store
    if not isinstance(store, (str, os.PathLike, bool)) and store is not None:
        raise UsageError(f"store: give a store folder or URL (str or os.PathLike), a Store, or True for the "
                         f"default store, not {_type(store)}")
    if isinstance(store, os.PathLike) and not isinstance(os.fspath(store), str):
        raise UsageError(f"store: give a path of str, not {_type(store)}")
    return open_at(None if store is True or store is None or store is False else store)


def load(paths: Paths | None = None, *, store: StoreArg = None, engine: str | None = None,
         date: _date | None = None, all_files: bool = False, progress: FileProgress | None = None) -> Runs:
    """Logs, the history store, or both -> `Runs`: three polars frames (runs, phases,
    milestones) and the inputs that could not be read (`.errors`).

    `store`: a store folder or `Store`, or True for the default store. A log both given and
    stored counts once. Raises UsageError when given neither.
    """
    from firedup.tables.load import load as load_frames

    wanted = _paths(paths, required=False)
    _progress(progress)
    if not wanted and (store is None or store is False):
        raise UsageError("give log paths, --store for the history, or both")
    return load_frames(wanted or None, store=None if store is None or store is False else open_store(store),
                       engine=_engine(engine), default_date=_day(date), all_files=all_files, progress=progress)


def _runs(runs: Runs | Paths) -> Runs:
    from firedup.tables.frames import Runs

    return runs if isinstance(runs, Runs) else load(runs)


def compare(runs: Runs | Paths, by: str | Sequence[str] | None = None) -> Comparison:
    """Groups of runs (by these flags, else by the flags that differ) and what makes them
    differ: median phases per group and the deltas between groups. Raises UnknownFlagError
    for a flag no run states."""
    from firedup.tables.compare import compare as compare_runs

    return compare_runs(_runs(runs), _by(by))


def advise(runs: Runs | Paths, by: str | Sequence[str] | None = None) -> Advice:
    """What would have made the start-ups ready sooner: per run and per group (grouped as
    `compare` groups them), each cause with its measured seconds, evidence lines, fix and saving
    with its basis (warm twin, physical bound, published figure, or unknown), largest saving
    first (`Advice.runs`, `.groups`, `.top()`; docs/advice.md)."""
    from firedup.tables.advice import advise as advise_runs
    from firedup.tables.grouping import group_runs

    table = _runs(runs)
    return advise_runs(table, group_runs(table, _by(by)))


def budgets(runs: Runs | Paths, by: str | Sequence[str] | None = None, risk: float = 0.01) -> BudgetReport:
    """A start-up timeout per group of runs: an upper prediction bound for the next run at
    `risk` (0 < risk < 1, else UsageError), each with the method and the risk it really carries
    (`Budget.method_label`, `.risk_label`), and every layer's timeout (`.timeouts`)."""
    from firedup.tables.budget import budgets as budgets_of

    return budgets_of(_runs(runs), _by(by), _risk(risk))


def check(new: Runs | Paths, history: Paths | None = None, *, store: StoreArg = None, risk: float = 0.01,
          engine: str | None = None, date: _date | None = None, all_files: bool = False) -> CheckReport:
    """A CI gate: each run of `new` against the ready runs of the same config in `history`
    (logs) and/or `store`. `.failed` is True when time to ready or a phase regressed beyond the
    history's spread (the rule is `firedup.tables.check.RULE`), or a run did not get ready.
    Raises NoStartupError when `new` holds no server startup, UsageError without any history."""
    from firedup.tables.check import check as check_runs
    from firedup.tables.frames import Runs

    if not 0.0 < _risk(risk) < 1.0:
        raise UsageError(f"risk must be between 0 and 1 (exclusive), not {risk}")
    wanted = _paths(history, "history", required=False)
    if not wanted and (store is None or store is False):
        raise UsageError("give the history: --history PATH (earlier logs) and/or --store")
    fresh = new if isinstance(new, Runs) else load(new, engine=engine, date=date, all_files=all_files)
    if not len(fresh):
        raise NoStartupError("no server startup found in the new logs: nothing to check")
    past = load(wanted or None, store=store, engine=engine, date=date, all_files=all_files)
    report = check_runs(fresh, past, risk)
    report.errors = [str(e) for e in (*fresh.errors, *past.errors)]
    return report


def pick_runs(runs: Runs, wanted: Iterable[str]) -> list[str]:
    """Run ids by run id, path or file name, `FILE#N` for the Nth startup in a file."""
    ids: list[str] = []
    rows = runs.runs.select("run_id", "source", "run_index").to_dicts()
    for text in wanted:
        name, _, nth = text.partition("#")
        index = int(nth) - 1 if nth.isascii() and nth.isdigit() and len(nth) < 19 else 0
        match = [r["run_id"] for r in rows if r["run_id"] == text or (
            name in (r["source"], os.path.basename(r["source"])) and r["run_index"] == index)]
        if not match:
            raise UsageError(f"--run: no run {text!r} in these logs (give a file name, path or run id; "
                             "FILE#2 for the second startup in a file)")
        ids.extend(m for m in match if m not in ids)
    return ids


@dataclass(frozen=True)
class Chart:
    """A chart written by `plot`: where, and for compare/distribution which runs it draws."""

    path: Path
    coverage: Coverage | None = None


def plot(kind: str, runs: Runs | Paths, out: PathLike, *, by: str | Sequence[str] | None = None,
         run: str | Iterable[str] = (), ranks: bool = False, risk: float = 0.01) -> Chart:
    """Draw one chart and write it to `out` (.png or .svg; the same chart gives the same bytes).

    Returns the chart's path and, for compare and distribution, how many runs it draws of how
    many and why the others are left out (the chart says so under its axis too).

    `kind`: timeline (Gantt of runs; `ranks`: a row per rank; `run`: only these runs),
    compare (stacked median phases per group, `by`), distribution (time to ready per group
    with the budget line at `risk`), ranks (heatmap of phase duration by rank of `run`, else of
    the run whose ranks differ most). Raises NoStartupError when there is no run to draw and
    DataError when no run has phases on two ranks for `ranks`.
    """
    if kind not in PLOT_KINDS:
        raise UsageError(f"unknown chart kind {kind!r}; the kinds are {', '.join(PLOT_KINDS)}")
    target = _path(out, "out")
    if not target.lower().endswith((".png", ".svg")):  # before the logs are read
        raise UsageError(f"{target}: write the chart to a .png or .svg file")
    if not isinstance(run, (str, Iterable)) or isinstance(run, (bytes, Mapping)):
        raise UsageError(f"run: give a run's file name or id, or a list of them, not {_type(run)}")
    wanted = [run] if isinstance(run, str) else list(run)  # one name, not its characters
    if not all(isinstance(name, str) for name in wanted):
        raise UsageError(f"run: each run's name must be a str, not {_type(wanted)}")
    by = _by(by)
    from firedup.render import charts

    table = _runs(runs)
    if not len(table):
        raise NoStartupError("no server startup found in the input: nothing to draw")
    ids = pick_runs(table, wanted)
    drawn: Coverage | None = None
    if kind == "timeline":
        fig = charts.timeline(table, ids or None, ranks=ranks)
        shown = charts.timeline_data(table, ids or None, ranks=ranks).coverage
        drawn = None if shown.complete else shown  # a timeline draws the runs it is given, up to its row limit
    elif kind == "ranks":
        fig = charts.ranks(table, ids[0] if ids else None)
    elif kind == "compare":  # the comparison computed once and drawn as it is
        comparison = compare(table, by)
        fig, drawn = charts.compare(table, comparison=comparison), charts.compare_data(comparison).coverage
    else:
        report = budgets(table, by, risk=_risk(risk))
        fig = charts.distribution(table, budget_report=report)
        drawn = charts.distribution_data(table, budget_report=report).coverage
    charts.save(fig, out)
    return Chart(Path(out), drawn)


def report(paths: Paths, out_dir: PathLike, *, by: str | Sequence[str] | None = None, risk: float = 0.01,
           engine: str | None = None, date: _date | None = None, all_files: bool = False,
           progress: Progress | None = None) -> ReportResult:
    """Write `out_dir/index.html` (self-contained) and `out_dir/report.md` with its PNG charts:
    the runs `parse` reads, handed to the report (which reads no log itself)."""
    from firedup.render.report import build_report, generation_time
    from firedup.timeline.pipeline import parse_paths

    _progress(progress)
    generated = generation_time()  # a bad SOURCE_DATE_EPOCH fails before anything is read or written
    risk, out, by_ = _risk(risk), _path(out_dir, "out_dir"), _by(by)

    def parsing(done: int, total: int, name: str) -> None:
        if progress is not None:
            progress("parsing logs", done, total)

    given = _paths(paths)
    result = parse_paths(given, engine=_engine(engine), default_date=_day(date), all_files=all_files,
                         progress=parsing, content_hash=True)
    return build_report(result, given, out, by=by_, risk=risk, progress=progress, generated=generated)


def export(runs: Runs | Paths, fmt: str, out: PathLike, *, table: str = "phases") -> None:
    """A Chrome/Perfetto trace (`fmt` "chrome-trace"), or one table ("phases", "runs",
    "milestones") as "csv", "parquet" or "json", to `out` ("-" = stdout for text)."""
    from firedup.tables.export import export as export_runs

    export_runs(_runs(runs), fmt, _path(out, "out"), table)


def summary(runs: Runs | Paths, fmt: str = "table", out: PathLike | None = None,
            width: int | None = None, by_time: bool = False) -> str | None:
    """One row per run (outcome, time to ready, biggest phases, the flags that differ), as a
    text table fitting `width`, CSV or JSON; returned when `out` is None, else written there
    (Parquet only to a file). `by_time` orders the table by when each run began and shows it."""
    if fmt not in SUMMARY_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(SUMMARY_FORMATS)}")
    if fmt == "parquet" and out is None:
        raise UsageError("Parquet is binary: give a file with -o")
    if out is not None:
        out = _path(out, "out")
    if width is not None:
        if isinstance(width, bool) or not isinstance(width, int):
            raise UsageError(f"width: give a number of columns (an int), not {_type(width)}")
        from firedup.core.units import MIN_WIDTH

        width = max(width, MIN_WIDTH)
    from firedup.core.safe import json_text
    from firedup.tables.export import _atomic, csv_safe
    from firedup.tables.frames import summary as summary_frame
    from firedup.tables.runs_text import runs_summary_text

    table = _runs(runs)
    if fmt == "parquet":
        assert out is not None
        frame = summary_frame(table)
        _atomic(Path(out), lambda fh: frame.write_parquet(fh))
        return None
    if fmt == "table":
        text = runs_summary_text(table, width=width, by_time=by_time) if len(table) else "no server startup found in the input"
    elif fmt == "csv":
        text = csv_safe(summary_frame(table)).write_csv().rstrip("\n")
    else:
        text = json_text(summary_frame(table).to_dicts(), indent=1)
    if out is None:
        return text
    _atomic(Path(out), lambda fh: fh.write((text + "\n").encode("utf-8")))
    return None


def ingest(paths: Paths, *, store: StoreArg = True, engine: str | None = None, date: _date | None = None,
           all_files: bool = False, force: bool = False, progress: FileProgress | None = None,
           ray: str | None = None, workers: int | None = None) -> IngestReport:
    """Add the runs of these logs (paths, globs, s3:// gs:// az:// URLs) to the history store
    (True: the default one); a log already there is skipped unless `force`. Raises StoreError
    for a folder that is not a store.

    `ray`: map the parse over a Ray cluster with Ray Data ("auto", "local" or an address; see
    `firedup.tables.fleet`), each worker writing its files into the store; else processes on
    this machine. `workers`: how many files are parsed at once (default: one per core)."""
    target = open_store(store)
    wanted = _paths(paths)
    engine, date, workers = _engine(engine), _day(date), _count(workers, "workers")
    _progress(progress)
    if ray is not None:
        from firedup.tables.fleet import ingest_on_ray

        return ingest_on_ray(target, wanted, ray, engine=engine, default_date=date, all_files=all_files,
                             force=force, workers=workers, progress=progress)
    return target.ingest(wanted, engine=engine, default_date=date, all_files=all_files,
                         force=force, jobs=workers, progress=progress)


# --- a server starting now: wait, replay ---------------------------------------------------------


def _seconds(value: float | str | None, option: str, low: float = 0.0) -> float | None:
    """A number of seconds (or a duration as every option reads them: 90s, 1m30s; `never` or
    math.inf: no limit), at least `low`."""
    if value is None:
        return None
    if isinstance(value, str):
        from firedup.core.units import NEVER, parse_duration

        return math.inf if value.strip().lower() in NEVER else parse_duration(value, option)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < low:
        raise UsageError(f"{option}: give a number of seconds, {low:g} or more, or never")
    return float(value)


def wait(log: PathLike | None = None, *, url: str | None = None, pid: int | None = None,
         timeout: float | str | None = "auto", history: Paths | None = None, store: StoreArg = None,
         stall_after: float | str | None = None, url_grace: float | str = 30.0, engine: str | None = None,
         from_end: bool = False, quiet: bool = False, inspect: bool = True, record: PathLike | None = None,
         ingest: bool = False, out: TextIO | None = None, err: TextIO | None = None,
         style: Callable[..., str] | None = None) -> int:
    """Watch a server start until it is ready, crashed or late, saying so on `out` (the verdict)
    and `err` (what happens meanwhile; default: stdout and stderr); the exit code: 0 ready, 124
    timed out while busy, 4 timed out while stuck, 3 crashed or died, 1 other (the URL never
    answered). `log` "-" reads standard input as it comes; `timeout`: seconds, a duration
    ("15min"), "auto" (from the history, else 30 min), "never" (None) or 0 (check once).
    `history` and `store` (True: the default one) are earlier start-ups of this server."""
    import sys

    from firedup.core.units import plain
    from firedup.live.options import WaitOptions, parse_timeout
    from firedup.live.wait import wait as run_wait

    if isinstance(timeout, str):
        seconds, auto = parse_timeout(timeout)
    else:
        seconds, auto = _seconds(timeout, "--timeout"), False
    engine = _engine(engine)
    if engine is not None:
        from firedup.formats import get_format

        get_format(engine)  # UnknownEngineError before the wait starts
    store_at = None if store is None or store is False else "" if store is True or store == "" else _path(store, "--store")
    if store_at:
        from firedup.read.remote import is_url

        if not is_url(store_at) and not Path(store_at).expanduser().is_dir():
            raise UsageError(f"--store {store_at}: no such directory")
    wanted = _paths(history, "history", required=False) if history is not None else []
    loader = None
    if wanted or store_at is not None:
        from firedup.live.history import load_history

        def loader() -> tuple[list[Any], list[str]]:
            return load_history(wanted, store_at)
    stall = _seconds(stall_after, "--stall-after")
    if stall is not None and stall <= 0:
        raise UsageError("--stall-after: give a number of seconds greater than 0")
    grace = _seconds(url_grace, "--url-grace")
    assert grace is not None
    stream = log is not None and os.fspath(log) == "-"
    if stream and from_end:
        raise UsageError("--from-end: a stream has no end to start from; drop --from-end")
    if stream and _closed_stdin():
        raise InputError("-", "stdin is closed: nothing to read")
    opts = WaitOptions(None if stream or log is None else Path(_path(log, "log")), url=url, pid=pid, timeout=seconds,
                       auto_timeout=auto, history_loader=loader, quiet=quiet, from_end=from_end, engine=engine,
                       stall_after=stall, url_grace=grace, log_stream=sys.stdin.fileno() if stream else None,
                       inspect=inspect, record=Path(_path(record, "record")) if record is not None else None,
                       ingest=(store_at or "") if ingest else None)
    return run_wait(opts, out if out is not None else sys.stdout, err if err is not None else sys.stderr,
                    style=style or plain)


def _closed_stdin() -> bool:
    """Whether there is no standard input at all (`<&-`): Python then has no `sys.stdin`."""
    import sys

    if sys.stdin is None:
        return True
    try:
        os.fstat(sys.stdin.fileno())
    except (OSError, ValueError):
        return True
    return False


def replay(log: PathLike, out: PathLike, *, speed: float = 1.0, port: int | None = None,
           server_version: str | None = None, hold: float | str | None = None, launch_delay: float | str = 0.0,
           split_writes: float | str = 0.0, now: bool = False, engine: str | None = None,
           err: TextIO | None = None) -> int:
    """Re-enact a recorded start-up: write `log`'s lines to `out` at their pace (divided by
    `speed`) and serve its HTTP answers on 127.0.0.1 (`port`: the log's, else the engine's; 0:
    any free one) until `hold` seconds after the last line (None: until interrupted), each line in
    two flushes `split_writes` seconds apart when given (block-buffered output), restamped with
    the moment each is written when `now` (so `wait --pid` of the replay measures its launch); the exit
    code the server had (0 ready, 1 or 137 for a crash: 137 kills this process as the server was)."""
    import sys

    from firedup.live.replay import run_replay

    if isinstance(speed, bool) or not isinstance(speed, (int, float)):
        raise UsageError(f"--speed: give a number, not {_type(speed)}")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535):
        raise UsageError(f"--port {port!r}: give a port from 0 to 65535")
    held = _seconds(hold, "--hold")
    delay = _seconds(launch_delay, "--launch-delay")
    split = _seconds(split_writes, "--split-writes")
    return run_replay(Path(_path(log, "log")), Path(_path(out, "out")), float(speed), port, held, _engine(engine),
                      server_version, err=err if err is not None else sys.stderr, launch_delay=delay or 0.0,
                      split_writes=split or 0.0, now=bool(now))


__all__ = ["PLOT_KINDS", "advise", "budgets", "check", "compare", "export", "ingest", "load", "open_store", "parse",
           "pick_runs", "plot", "replay", "report", "summary", "wait", "write_parse_json"]

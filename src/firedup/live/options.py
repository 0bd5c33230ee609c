"""What `firedup wait` is asked to watch (`WaitOptions`), how its durations are written
(`parse_timeout`; `parse_duration` lives in core.units), and the follower and date policy of its log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from firedup.core.units import NEVER, parse_duration
from firedup.errors import UsageError
from firedup.live.probe import PROBE_INTERVAL_S, PROBE_TIMEOUT_S, check_url
from firedup.live.proc import pid_alive
from firedup.read.follow import Follower, RawLine, StreamFollower
from firedup.read.sources import Source
from firedup.timeline.pipeline import DatePolicy
from firedup.timeline.run import Run

URL_GRACE_S = 30.0  # after the log's ready line, how long the URL may take to answer 200
INSPECT_AFTER_S = 10.0  # a note of what the process tree does names a silence this long (the tree is watched always)


@dataclass
class WaitOptions:
    log: Path | None = None  # None: no log file (a stream in `log_stream`, or the URL and process alone)
    url: str | None = None
    pid: int | None = None
    timeout: float | None = None  # seconds; None: no limit; see `auto_timeout`
    auto_timeout: bool = True
    history: list[Run] = field(default_factory=list)
    # Loads more history off the start path (earlier logs, the store): (runs, notes).
    history_loader: Callable[[], tuple[list[Run], list[str]]] | None = None
    quiet: bool = False
    from_end: bool = False  # wait for a startup that begins after now (a log appended across restarts)
    engine: str | None = None
    default_date: date | None = None  # as parse's --date: the date of a log that prints none
    stall_after: float | None = None  # fixed stall threshold instead of history/default
    url_grace: float = URL_GRACE_S
    probe_interval: float = PROBE_INTERVAL_S
    probe_timeout: float = PROBE_TIMEOUT_S
    log_stream: int | None = None  # a file descriptor to read the log from as it comes (`--log -`: stdin)
    inspect: bool = True  # watch the server's process tree, every second from the start (`live.proc.TreeWatch`)
    inspect_after: float = INSPECT_AFTER_S  # a silence this long is named first in a note of what the tree does
    telemetry: bool = True  # read the engine's own start-up figures from the URL's server
    record: Path | None = None  # also write the outcome there as JSON
    ingest: str | None = None  # add the log's runs to this history store at the end ("": the default store)

    @property
    def log_name(self) -> str | None:
        return "stdin" if self.log_stream is not None else (str(self.log) if self.log is not None else None)


def parse_timeout(text: str) -> tuple[float | None, bool]:
    """`auto`; `never` (no limit); `0` (check once, as `kubectl wait --timeout 0`); else a
    duration (`parse_duration`) -> (seconds, auto)."""
    value = text.strip().lower()
    if value == "auto":
        return None, True
    if value in NEVER:
        return None, False
    if value.startswith("-"):
        raise UsageError(f"--timeout {text!r}: must be 0 (check once) or more; `never` waits without a limit")
    return parse_duration(text, "--timeout"), False


class _NoLog(Follower):
    """No log at all (`wait --url` or `--pid` alone): never exists, never grows."""

    def _check_identity(self, out: list[RawLine], now: float) -> None:
        pass


def follower_of(opts: WaitOptions) -> Follower:
    """What reads the log as it grows: a stream, a file, or nothing."""
    if opts.log_stream is not None:
        return StreamFollower(Path("<stdin>"), fd=opts.log_stream)
    if opts.log is not None:
        return Follower(opts.log, from_end=opts.from_end)
    return _NoLog(Path(""))


def dates_of(opts: WaitOptions) -> DatePolicy:
    """The dates of the log's lines, as `parse` reads them (a stream is written today)."""
    if opts.log_stream is not None or opts.log is None:
        return DatePolicy(opts.default_date, date.today())  # a live stream is written now
    return DatePolicy(opts.default_date, source=Source(str(opts.log), opts.log))


def _has_lines(opts: WaitOptions) -> bool:
    """A log file with something in it (stdin cannot be looked at without reading it)."""
    try:
        return opts.log is not None and opts.log_stream is None and opts.log.is_file() and opts.log.stat().st_size > 0
    except OSError:
        return False


def check_options(opts: WaitOptions) -> None:
    """UsageError for what cannot be waited for, before anything is watched."""
    if opts.url:
        check_url(opts.url)
    if opts.pid is not None and opts.pid <= 0:
        raise UsageError("--pid must be a positive process id")
    if opts.pid is not None and not pid_alive(opts.pid) and not _has_lines(opts):
        # nothing to diagnose: a wrong pid, not a death (with a log, the log may say what happened)
        raise UsageError(f"--pid {opts.pid}: no such process is running (a wrong pid, or it already exited); give "
                         "the server's own pid, e.g. `$!` right after starting it in the background")
    if opts.record is not None and not opts.record.parent.is_dir():
        raise UsageError(f"--record {opts.record}: no such directory {opts.record.parent}")
    if opts.log is None and opts.log_stream is None and not opts.url and opts.pid is None:
        raise UsageError("nothing to wait for: give --log FILE (or --log - for standard input), --url or --pid")
    if opts.log is None:
        pass
    elif opts.log.is_dir():
        raise UsageError(f"--log {opts.log}: is a directory; give the log file the server writes")
    elif opts.log.exists() and not opts.log.is_file():
        raise UsageError(f"--log {opts.log}: not a regular file (a pipe or a device); read it with `--log -` "
                         f"(`... < {opts.log}`) or have the server write "
                         "to a file, e.g. `... 2>&1 | tee server.log`")


__all__ = ["INSPECT_AFTER_S", "URL_GRACE_S", "WaitOptions", "check_options", "dates_of", "follower_of", "parse_duration",
           "parse_timeout"]

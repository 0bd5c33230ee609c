"""`firedup wait`: watch a server start, and say precisely when it is ready, dead or late.

It replaces loops like `until curl -s .../health | grep -q ok; do sleep 5; done`, which
can never succeed on an engine whose /health body is empty, and say nothing while they
spin. Three witnesses are watched at once:

- the log, followed as it grows (`firedup.read.follow`) and read by the same incremental
  engine and timeline as `firedup parse`: it tells the phase, the progress, a crash and
  its diagnosis, and the ready line;
- the URL (optional), probed at most once a second by its status code only: 200 is
  ready, refused or 503 is starting; the body is never read;
- the process (optional `--pid`): its death ends the wait at once.

When the witnesses disagree, the disagreement is the news: a log that says ready while
the URL never answers 200 means a wrong port or URL; a URL that answers 200 while the log
is still warming up means the probe is not a readiness signal on this version.

Exit codes follow `timeout` and `kubectl wait`: 0 ready, 124 timed out, 3 crashed or died
before ready, 2 usage error, 1 anything else.
"""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import math
import os
import re
import shutil
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from firedup.core.health import NOT_READINESS, HealthSemantics, advice, ready_probe
from firedup.core.units import MIN_WIDTH, fmt_duration, fmt_offset, plain
from firedup.errors import (
    EXIT_CRASHED,
    EXIT_OK,
    EXIT_OTHER,
    EXIT_TIMEOUT,
    EXIT_TIMEOUT_STUCK,
    UsageError,
)
from firedup.formats import Format, all_formats, foreign_engine, get_format, no_known_engine
from firedup.formats.base import opens_at
from firedup.formats.vocab import HTTP_RUNNING, HTTP_STARTED, PROGRESS_CUDA_GRAPH, READY
from firedup.live.history import (
    Budget,
    History,
    HistoryLoader,
    config_key,
    select_history,
)
from firedup.live.proc import Activity, GpuWatch, ProcFS, TreeWatch, looks_like_server
from firedup.live.telemetry import Telemetry, TelemetryReader, flatten
from firedup.read.clock import Stamp
from firedup.read.engine import Event, Scanner
from firedup.read.follow import Follower, RawLine, StreamFollower
from firedup.read.sources import Line, Source, normalise
from firedup.render.text import timeline_text
from firedup.timeline.launch import MAX_STATED_GAP, Launch, measured_launch
from firedup.timeline.phases import spanned
from firedup.timeline.pipeline import DatePolicy, LogReader
from firedup.timeline.run import Run
from firedup.timeline.silence import Observed, observed_caches
from firedup.timeline.stages import stage_changes

DEFAULT_TIMEOUT_S = 30 * 60.0  # --timeout auto without history
DEFAULT_STALL_S = 180.0  # silence that earns a warning without history
PROBE_INTERVAL_S = 1.0
PROBE_TIMEOUT_S = 5.0  # per request; an engine's /health may generate a token for >= 1 s
URL_GRACE_S = 30.0  # after the log's ready line, how long the URL may take to answer 200
URL_EARLY_WARNING_S = 10.0
CRASH_QUIET_S = 1.0  # after a crash line, wait this long for the rest of the traceback
CRASH_SETTLE_MAX_S = 5.0
WEAK_CRASH_QUIET_S = 60.0  # a bare traceback is a crash only if the log then falls silent
POLL_MIN_S = 0.1
POLL_MAX_S = 0.5
SNIFF_IDLE_S = 2.0
INSPECT_AFTER_S = 10.0  # a silence this long makes `wait` look at the process tree
INSPECT_EVERY_S = 2.0  # how often, while the silence lasts
TELEMETRY_WAIT_S = 3.0  # at the verdict, how long the engine's figures may still take to come
STREAM_PAUSE_S = 0.3  # `--timeout 0` on a stream: a pause this long ends the one read
STREAM_ONCE_MAX_S = 10.0  # ... and this long at most (a flood never pauses)
SNIFF_NOTE_LINES = 200  # lines that show no engine before `wait` says so (it keeps looking)
SNIFF_KEEP_LINES = 2000  # lines of a log of no known engine kept in case one shows up later
ZONE_STEP_S = 900.0  # a log's stamps and this machine's clock differ by whole quarter hours (time zones)
LAUNCH_SLACK_S = 1.5  # a launch up to this long after the first line: whole-second stamps, not a later start
STALE_LOG_S = 60.0  # a log written longer ago than this dates its newest line by its modification time
ZONE_MAX_S = 26 * 3600.0  # two zones differ by at most this much (UTC-12 and UTC+14)
ZONE_SLACK_S = 90.0  # a live line's stamp is at most this far from the quarter hour (its lag, a skewed clock)
OBSERVED_GAP_S = 6.0  # looks further apart than this start a new stretch
MAX_EVENTS = 50_000
LAST_LINES = 12
REENTRY_S = 5.0  # a stage entered again is news once it lasts this long (log time)
MIN_STAGE_S = 1.0  # a stage left sooner was a guess the next line corrected: never news

# What usually keeps a phase silent for minutes (shown with a stall warning).
STALL_CULPRITS: dict[str, str] = {
    "launch": "downloading the model or reading its config over a network filesystem (HF hub, NFS, S3 mounts)",
    "dist_init": "an NCCL/gloo rendezvous waiting for other ranks or nodes (--dist-init-addr, NCCL_SOCKET_IFNAME, "
                 "a node that never started, a firewall)",
    "load_weights": "a slow network filesystem or object-store mount reading the weights; a progress bar "
                    "redrawing in place still counts as output",
    "kv_cache": "memory profiling; an NCCL collective between ranks",
    "cuda_graph": "JIT compilation (FlashInfer, DeepGEMM, Triton kernels or torch.compile) or an NCCL collective "
                  "in custom all-reduce",
    "http_start": "the scheduler handshake with the tokenizer process",
    "warmup": "JIT compilation on the first request, or a warm-up request that cannot reach the server "
              "(a proxy: set NO_PROXY=127.0.0.1,localhost)",
}
_DEFAULT_CULPRITS = "JIT compilation, an NCCL rendezvous, or a network filesystem"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STAMPED = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")


# --- probing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeResult:
    at: float  # monotonic time the answer came
    status: int | None  # None: no HTTP answer at all
    error: str | None = None

    def describe(self) -> str:
        if self.status is not None:
            return f"HTTP {self.status}" + (f" ({self.error})" if self.error else "")
        return self.error or "no answer"

    @property
    def redirect(self) -> bool:
        return self.status is not None and 300 <= self.status < 400


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "0.0.0.0", "::"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:  # `http://[::1:80/`: an IPv6 host without its closing bracket
        raise UsageError(f"--url {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--url {url!r}: give a full URL such as http://127.0.0.1:30000/health")
    try:
        _ = parts.port
    except ValueError:
        raise UsageError(f"--url {url!r}: the port is not a number") from None
    return parts


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> tuple[int | None, str | None]:
    """The status code of one GET, without reading the body, within `timeout` seconds in all
    (`live.http`: an answer cut off mid-header is no answer, a trickling server cannot hold
    the probe past its deadline, a redirect is an answer, never followed)."""
    from firedup.live.http import HTTPFailure, get

    try:
        answer = get(url, timeout)
    except HTTPFailure as exc:
        return None, str(exc)
    location = answer.headers.get("location") if 300 <= answer.status < 400 else None
    return answer.status, (f"redirect to {location}" if location else None)


class Prober:
    """Probes a URL in a background thread, at most once per `interval`, so that a server
    that accepts connections but never answers cannot stall the log reading."""

    def __init__(self, url: str, interval: float = PROBE_INTERVAL_S, timeout: float = PROBE_TIMEOUT_S,
                 paths: tuple[str, ...] = ()) -> None:
        # A base URL (no path) is probed at the engines' readiness paths in turn (`paths`,
        # the dedicated readiness endpoints first): a 404 moves on to the next one.
        self.base = url.rstrip("/")
        self.paths = list(paths)
        self.url = self.base + self.paths[0] if self.paths else url
        self.interval = interval
        self.timeout = timeout
        self.last: ProbeResult | None = None
        self.counts: collections.Counter[str] = collections.Counter()
        self.notes: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="firedup-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> tuple[ProbeResult | None, collections.Counter[str]]:
        with self._lock:
            return self.last, collections.Counter(self.counts)

    def once(self) -> ProbeResult:
        """One probe now, recorded as the latest answer."""
        status, error = probe(self.url, self.timeout)
        result = ProbeResult(time.monotonic(), status, error)
        with self._lock:
            self.last = result
            self.counts[result.describe()] += 1
            if status == 404 and len(self.paths) > 1:
                gone = self.paths.pop(0)
                self.url = self.base + self.paths[0]
                self.notes.append(f"{self.base}{gone} does not exist there (404); probing {self.url} instead")
        return result

    def take_notes(self) -> list[str]:
        with self._lock:
            notes, self.notes = self.notes, []
        return notes

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.once()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))


# --- the process ------------------------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    """False once the process is gone, zombies included (their parent has not reaped them)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):  # OverflowError: no pid is that large
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        state = stat.rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return True


# --- options and the live view ----------------------------------------------------------------


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
    inspect: bool = True  # look at the server's process tree during a silence (`firedup.live.proc`)
    inspect_after: float = INSPECT_AFTER_S  # the silence after which the process tree is looked at
    telemetry: bool = True  # read the engine's own start-up figures from the URL's server
    record: Path | None = None  # also write the outcome there as JSON
    ingest: str | None = None  # add the log's runs to this history store at the end ("": the default store)

    @property
    def log_name(self) -> str | None:
        return "stdin" if self.log_stream is not None else (str(self.log) if self.log is not None else None)


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
                   "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
                   "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
                   "d": 86400.0, "day": 86400.0, "days": 86400.0}
_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-z]+)\s*")
MAX_DURATION_S = 366 * 86400.0  # a year: more is a typo (and past what a thread can sleep)


def parse_duration(text: str, option: str) -> float:
    """Seconds from `90`, `90s`, `1m30s`, `15min`, `1.5h`, `2 h 30 min` (as kubectl and
    systemd write them). Never inf or NaN: `1e400`, `inf` and `nan` are refused, as is
    anything over a year."""
    value = text.strip().lower()
    hint = f"{option} {text!r}: give seconds (900) or a duration (90s, 1m30s, 15min, 1h)"
    if re.fullmatch(r"\d+(?:\.\d+)?|\.\d+", value):
        seconds = float(value)
    else:
        seconds, at = 0.0, 0
        for m in _DURATION_PART.finditer(value):
            if m.start() != at or m.group(2) not in _DURATION_UNITS:
                raise UsageError(hint)
            seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
            at = m.end()
        if at == 0 or at != len(value):
            raise UsageError(hint)
    if not math.isfinite(seconds) or seconds > MAX_DURATION_S:
        raise UsageError(f"{option} {text!r}: at most a year")
    return seconds


def parse_timeout(text: str) -> tuple[float | None, bool]:
    """`auto`; `never` (no limit); `0` (check once, as `kubectl wait --timeout 0`); else a
    duration (`parse_duration`) -> (seconds, auto)."""
    value = text.strip().lower()
    if value == "auto":
        return None, True
    if value in ("never", "none", "forever"):
        return None, False
    if value.startswith("-"):
        raise UsageError(f"--timeout {text!r}: must be 0 (check once) or more; `never` waits without a limit")
    return parse_duration(text, "--timeout"), False


class _NoLog(Follower):
    """No log at all (`wait --url` or `--pid` alone): never exists, never grows."""

    def _check_identity(self, out: list[RawLine], now: float) -> None:
        pass


def _follower(opts: WaitOptions) -> Follower:
    if opts.log_stream is not None:
        return StreamFollower(Path("<stdin>"), fd=opts.log_stream)
    if opts.log is not None:
        return Follower(opts.log, from_end=opts.from_end)
    return _NoLog(Path(""))


def _dates(opts: WaitOptions) -> DatePolicy:
    if opts.log_stream is not None or opts.log is None:
        return DatePolicy(opts.default_date, date.today())  # a live stream is written now
    return DatePolicy(opts.default_date, source=Source(str(opts.log), opts.log))


def readiness_paths(engine: str | None = None) -> tuple[str, ...]:
    """The paths a base URL is probed at, in order: the engines' dedicated readiness
    endpoints first (a 404 there moves on), then their health endpoints."""
    formats = [get_format(engine)] if engine else list(all_formats().values())
    healths = [f.health for f in formats if f.health is not None]
    ready = [h.ready_endpoint for h in healths if h.ready_endpoint]
    return tuple(dict.fromkeys([*ready, *(h.endpoint for h in healths)]))


def _prober(opts: WaitOptions) -> Prober:
    assert opts.url is not None
    path = urllib.parse.urlsplit(opts.url).path
    paths = readiness_paths(opts.engine) if path in ("", "/") else ()
    return Prober(opts.url, opts.probe_interval, opts.probe_timeout, paths=paths)


@dataclass
class Progress:
    label: str
    n: int
    total: int

    def __str__(self) -> str:
        return f"{self.label} {self.n}/{self.total}".strip()


def _progress_of(event: Event, units: Mapping[str, str]) -> Progress | None:
    """The progress bar of `event`; `units`: each progress kind's unit (`Vocabulary.progress`)."""
    n, total = event.fields.get("n"), event.fields.get("total")
    if not isinstance(n, int) or not isinstance(total, int):
        return None
    label = units.get(event.name, "")
    if event.name == PROGRESS_CUDA_GRAPH:
        desc = str(event.fields.get("desc", ""))
        label = {"Capturing batches": "batches", "Capturing prefill shape": "prefill shapes",
                 "Capturing num tokens": "token sizes", "Compiling num tokens": "compiled sizes"}.get(desc, desc)
    return Progress(label, n, total)


@dataclass
class _Stretch:
    """A stretch of time in which the process tree did one thing (`live.proc.classify`), with
    what showed it: the classification timeline `--record` keeps and the cache verdicts read."""

    kind: str
    text: str
    since: float  # seconds since the epoch (this machine's clock)
    until: float
    phase: str | None
    evidence: list[str] = field(default_factory=list)
    compilers: list[str] = field(default_factory=list)


class Waiter:
    """The wait loop and everything it says. `run()` returns the exit code."""

    def __init__(self, opts: WaitOptions, out: TextIO, err: TextIO, tty: bool,
                 style: Callable[..., str] = plain, now: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, width: int | None = None,
                 procfs: ProcFS | None = None, gpu: Callable[[], GpuWatch | None] | None = None) -> None:
        self.opts = opts
        self.procfs = procfs or ProcFS()  # a fake tree in tests
        self.make_gpu = gpu if gpu is not None else GpuWatch  # the GPUs, read off this thread
        self.width = width  # the terminal's, lines are fitted to it; None: as they are
        self.out = out
        self.err = err
        self.tty = tty
        self.style = style
        self.now = now
        self.sleep = sleep
        self.log_name = opts.log_name
        self.follower = _follower(opts)
        self.log_missing_at_start = opts.log is not None and opts.log_stream is None and not opts.log.exists()
        self.prober = _prober(opts) if opts.url else None
        # The log is read by the pipeline `parse` uses, fed as it grows: the same sniffing,
        # the same dates (the file's modification time when the log has no year; today for a
        # stream), the same runs. Standard input goes through the same reader.
        self.reader = LogReader(self.log_name or "(no log)", opts.engine, _dates(opts), max_events=MAX_EVENTS)
        self.lines_seen = 0  # lines of the run followed (after --from-end's skip)
        self.stream_end_said = False
        # The process tree, looked at during a silence: --pid, else the pid the log names.
        self.watch: TreeWatch | None = None
        self.watch_pid: int | None = None
        self.watch_at = -math.inf
        self.activity: Activity | None = None
        self.activity_said: str | None = None
        self.telemetry: Telemetry | None = None
        self.telemetry_reader: TelemetryReader | None = None
        self.log_pid_line: int | None = None
        self.headline: str | None = None  # the verdict's first line, for --record
        self.dirty = False
        self.run: Run | None = None
        self.last_lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=LAST_LINES)
        self.started = now()
        self.deadline: float | None = None
        self.budget: Budget | None = None
        self.timeout_note = ""
        self.history = History([])
        self.loader = HistoryLoader(opts.history_loader) if opts.history_loader else None
        self.history_line: str | None = None
        self.config_seen: tuple[tuple[str, Any], ...] | None = None
        self.announced: set[str] = set()
        self.announce_key: tuple[str, int | None] | None = None
        self.announced_upto = 0
        self.announce_pending = False
        self.unknown_engine_said = False
        self.pending_looked = 0  # lines of reader.pending `_unread_lines` has looked at
        self.stray_stamp = False  # a stamped line no format's header reads has come
        self.log_began = False  # a line some format's header reads has come
        self.last_announced: str | None = None
        self.status_text = ""
        self.status_at = 0.0
        self.warned: set[str] = set()
        self.stall_warned_for: float | None = None  # last_growth value already warned about
        self.ready_seen_at: float | None = None
        self.http_open_at: float | None = None
        self.crash_seen_at: float | None = None
        self.last_ts: Stamp | None = None
        self.last_ts_at = self.started
        self.pid_checked = 0.0
        self.pid_dead = False
        # The --pid process: its start is the run's launch (measured), and with its pid, its
        # identity (a pid reused by another process is not the server still running).
        self.wall_at_start = time.time()
        self.pid_identity: int | None = None
        self.pid_reused = False
        self.launch_wall: float | None = None  # when --pid started, seconds since the epoch
        if opts.pid is not None:
            self.pid_identity = self.procfs.start_ticks(opts.pid)
            self.launch_wall = self.procfs.start_time(opts.pid)
        # without /proc (another OS) the signal test alone says the pid ran when the wait began
        self.pid_ran = opts.pid is not None and (self.pid_identity is not None or pid_alive(opts.pid))
        self.zone: timedelta | None = None  # the log's clock minus this machine's local clock
        self.launch_run: tuple[str, int | None] | None = None  # the run the pid's start launched
        self.launch_said = False
        self.launch_value: Launch | None = None
        self.observed: list[_Stretch] = []  # what the process tree did, stretch by stretch (--record)
        self.partial_key = 0
        self.partial_progress: Progress | None = None

    # -- output helpers ---------------------------------------------------------------------

    def _clear_status(self) -> None:
        if self.tty and self.status_text:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self.status_text = ""

    def _fit(self, text: str) -> str:
        """Lines no wider than the terminal ($COLUMNS, 80 when piped: a CI log), wrapped at spaces."""
        from firedup.core.units import fit_lines

        return fit_lines(text, self.width)

    def say(self, text: str) -> None:
        """A line on stderr that stays (warnings, notes, phase changes)."""
        self._clear_status()
        print(self._fit(text), file=self.err, flush=True)

    def warn(self, key: str, text: str) -> None:
        if key in self.warned:
            return
        self.warned.add(key)
        self.say(self.style(f"warning: {text}", fg="yellow"))

    def report(self, text: str) -> None:
        self._clear_status()
        if self.headline is None:  # the verdict stays one line, whatever the width: scripts take it with head -1
            self.headline = _ANSI.sub("", text)
            print(text, file=self.out, flush=True)
            return
        print(self._fit(text), file=self.out, flush=True)

    # -- the loop --------------------------------------------------------------------------------

    def run_loop(self) -> int:
        """The wait; its outcome also written to `--record` when asked."""
        code = self._run_loop()
        if self.opts.record is not None:
            self._write_record(code)
        if self.opts.ingest is not None:
            self._ingest()
        return code

    def _ingest(self) -> None:
        """The log's runs into the history store, the followed one with the launch this wait
        measured: budgets and `--timeout auto` from that history then count from measured
        launches. Never a reason to fail the wait: a problem is a note."""
        self._apply_observed()
        runs = self.reader.runs() if self.run is not None else []
        if self.opts.log is None or self.opts.log_stream is not None or not runs:
            self.say("note: --ingest: nothing stored (it stores a log file's start-ups; "
                     + ("this wait read no start-up)" if not runs else "this log is not a file)"))
            return
        if self.run is not None:
            runs[-1] = self.run  # the run followed, with what the process tree showed
        for run in runs:  # the run the pid launched (a restart after it keeps its own launch)
            if self.launch_value is not None and self.launch_run == (run.source, run.first_line):
                run.launch = self.launch_value
        try:
            from firedup.errors import FiredupError
            from firedup.tables.store import open_store

            store = open_store(self.opts.ingest or None)
            store.prepare()
            status, added = store.add(runs)
        except ImportError as exc:  # the store needs polars: a wait installed without it still waits
            self.say(f"note: --ingest: nothing stored ({exc})")
            return
        except (FiredupError, OSError) as exc:
            self.say(f"note: --ingest: nothing stored ({exc})")
            return
        launch = self.run.launch.source if self.run is not None and self.run.launch is not None else "unknown"
        if status == "added":
            self.say(f"note: --ingest: {added} start-up{'s' if added != 1 else ''} of {self.log_name} stored in "
                     f"{store.location} (launch {launch})")
        else:
            self.say(f"note: --ingest: {store.location} already holds these bytes of {self.log_name}; nothing stored")

    def _write_record(self, code: int) -> None:
        """The outcome as JSON, for CI and for keeping beside the log: the exit code and
        headline, the run as `parse --json` shows it, the engine's own start-up figures with
        what they agree and disagree with, and the process tree's last state."""
        from firedup.core.safe import json_text, without_credentials

        assert self.opts.record is not None
        self._apply_observed()
        run, found = self.run, self.telemetry
        telemetry: dict[str, Any] | None = None
        if found is not None:
            health = self._health()
            agree, disagree = (found.compare(run, health.telemetry) if run is not None and health is not None
                               and health.telemetry is not None else ([], []))
            telemetry = {"source": found.source, "phases": found.phases, "agrees": agree, "disagrees": disagree}
        record = {
            "exit_code": code,
            "headline": self.headline,
            "log": self.log_name,
            "url": self.prober.url if self.prober is not None else None,
            "pid": self.opts.pid,
            "waited_s": round(self.now() - self.started, 3),
            "run": run.as_contract() if run is not None else None,
            "telemetry": telemetry,
            "process_tree": None if self.activity is None else {
                "pid": self.watch_pid, "kind": self.activity.kind, "text": self.activity.text,
                "busy": self.activity.busy, "evidence": list(self.activity.evidence)},
            "process_timeline": [self._stretch_json(s) for s in self.observed],
            "gpu": self._gpu_json(),
        }
        from firedup.core.files import write_text

        write_text(self.opts.record, without_credentials(json_text(record, indent=1)) + "\n")

    def _stretch_json(self, s: _Stretch) -> dict[str, Any]:
        """One stretch of the classification timeline: on the log's clock where it is known
        (beside the run's phases), and in seconds from the launch where that was measured."""
        since, until = self._on_log_clock(s.since), self._on_log_clock(s.until)
        launched = self.launch_wall
        return {"kind": s.kind, "text": s.text, "phase": s.phase,
                "since": _stamp(since).iso if since else None, "until": _stamp(until).iso if until else None,
                "since_wall": datetime.fromtimestamp(s.since).astimezone().isoformat(timespec="seconds"),
                "seconds": round(s.until - s.since, 3),
                "since_launch_s": round(s.since - launched, 3) if launched is not None else None,
                "evidence": s.evidence, "compilers": s.compilers}

    def _gpu_json(self) -> dict[str, Any] | None:
        gpu = self.watch.gpu if self.watch is not None else None
        if gpu is None:
            return None
        return {"source": gpu.source.name if gpu.source is not None else None, "off": gpu.off}

    def _run_loop(self) -> int:
        self._set_deadline(initial=True)
        if self.loader is not None:
            self.loader.start()
        if self.prober is not None:
            if self.opts.timeout == 0 and not self.opts.auto_timeout:
                self.prober.once()  # `--timeout 0` checks once: the one probe comes before the verdict
            else:
                self.prober.start()
        if self.opts.pid is not None and self.opts.inspect:
            self._watch(self.opts.pid, f"pid {self.opts.pid}")
        if self.opts.timeout == 0 and not self.opts.auto_timeout:
            self._read_all()
        interval = POLL_MIN_S
        try:
            while True:
                now = self.now()
                got = self._read(now)
                if self.dirty:
                    self._rebuild(now)
                    self._after_rebuild(now)
                elif self.announce_pending:
                    self._announce_stages(now)  # a re-entered stage may have lasted long enough by now
                if self.loader is not None and self.loader.done:
                    self._history_loaded()
                code = self._decide(now)
                if code is not None:
                    return code
                if not self.opts.quiet and self.tty:
                    self._show_status(now)
                interval = POLL_MIN_S if got else min(POLL_MAX_S, interval * 1.5)
                if not self.follower.backlog:  # a backlog is read on at once, its deadline looked at between polls
                    self.sleep(interval)
        finally:
            if self.prober is not None:
                self.prober.stop()
            self.follower.close()
            self._clear_status()

    def _read_all(self) -> None:
        """Everything the log holds now, its unfinished last line included (`--timeout 0`
        decides on it); a stream gets until it pauses for STREAM_PAUSE_S or ends."""
        stream = isinstance(self.follower, StreamFollower)
        quiet_since = began = self.now()
        while True:
            if self._read(self.now()):
                quiet_since = self.now()
                if stream and self.now() - began >= STREAM_ONCE_MAX_S:
                    break
            elif not stream or self.follower.ended or self.now() - quiet_since >= STREAM_PAUSE_S:  # type: ignore[attr-defined]
                break
            else:
                self.sleep(POLL_MIN_S / 2)
        self._final_drain(self.now())

    def _read(self, now: float) -> bool:
        lines = self.follower.poll(now)  # FollowError: the log turned unreadable
        for note in self.follower.take_notes():
            if note.kind != "appeared" or self.log_missing_at_start:
                self.say(f"note: {note.text}")
        if self.prober is not None:
            for text in self.prober.take_notes():
                self.say(f"note: {text}")
        if lines:
            self._take(lines, now)
        elif self.fmt is None and self.reader.pending and self.follower.last_growth is not None \
                and now - self.follower.last_growth >= SNIFF_IDLE_S:
            self._choose_format(force=True)
        self._peek_partial()
        return bool(lines)

    @property
    def fmt(self) -> Format | None:
        return self.reader.fmt

    @property
    def events(self) -> list[Event]:
        return self.reader.events

    def _take(self, lines: list[RawLine], now: float) -> None:
        self._feed(lines)
        if self.fmt is None:
            self._look_at_pending()
            if len(self.reader.pending) >= SNIFF_NOTE_LINES:
                self._choose_format(force=True)  # says once that no engine shows yet

    def _choose_format(self, force: bool) -> None:
        """The format of the log once its lines show one (the pipeline's `choose_format`). When
        enough lines (or a pause) show none, that is said once, and the URL and the process
        decide alone meanwhile."""
        if self.reader.feed([], force=force):
            self.dirty = True
        if self.reader.fmt is None:
            if force and not self.unknown_engine_said and self._unread_lines():
                self.unknown_engine_said = True
                self.say(f"note: {self.log_name}: {no_known_engine(foreign_engine(self._pending_text()))} (until its lines show one, the URL and "
                         "the process decide)")
            kept = len(self.reader.pending)
            del self.reader.pending[:-SNIFF_KEEP_LINES]
            self.pending_looked = max(0, self.pending_looked - (kept - len(self.reader.pending)))

    def _unread_lines(self) -> bool:
        """Lines have come that no format reads: a line stamped in a layout no format's header
        takes, a line of an engine firedup does not read, or SNIFF_NOTE_LINES lines with no
        engine's. What a server prints before its logging starts (Python's warnings, a
        deprecation notice) is none of these: the log has simply not begun."""
        if len(self.reader.pending) >= SNIFF_NOTE_LINES:
            return True
        self._look_at_pending()
        return self.stray_stamp or foreign_engine(self._pending_text()) is not None

    def _look_at_pending(self) -> None:
        """Whether the lines read while no engine shows hold a line some format's header reads
        (the log has begun) or a stamped line none reads; each line looked at once."""
        pending = self.reader.pending
        for line in pending[self.pending_looked:]:
            self.pending_looked += 1
            if _STAMPED.search(line.text[:80]):
                if _readable(line.text):
                    self.log_began = True
                else:
                    self.stray_stamp = True

    def _pending_text(self) -> str:
        """The lines read while no engine shows, for what they look like."""
        return "\n".join(line.text for line in self.reader.pending)

    def _feed(self, lines: Iterable[RawLine]) -> None:
        logical: list[Line] = []
        for raw in lines:
            self.lines_seen += 1
            these = normalise(raw.text, raw.number)
            logical.extend(these)
            if these:
                self.last_lines.append((raw.number, these[-1].text))
        if self.reader.feed(logical):
            self.dirty = True

    def _peek_partial(self) -> None:
        """Progress from a bar still being redrawn on the unfinished last line (display only)."""
        size = self.follower.partial_size
        if size == self.partial_key or self.fmt is None:
            return
        self.partial_key = size
        self.partial_progress = None
        tail = self.follower.partial_tail()
        segments = [s for s in tail.split("\r") if s.strip()]
        if not segments or (len(segments) == 1 and size > len(tail)):
            return  # only the middle of a long line: no whole redraw to read
        units = self.fmt.vocab.progress
        for event in Scanner(self.fmt).feed(Line(0, segments[-1].strip())):
            if event.name in units:
                self.partial_progress = _progress_of(event, units)

    def _rebuild(self, now: float) -> None:
        self.dirty = False
        runs = self.reader.runs()
        self.run = runs[-1] if runs else None
        if self.run is not None and self.run.last_ts != self.last_ts:
            self.last_ts = self.run.last_ts
            self.last_ts_at = now
        self._apply_launch(now)
        self._apply_observed()

    # -- the launch: the --pid process's start, on the log's clock ----------------------------

    def _wall(self, now: float) -> float:
        """This machine's clock (seconds since the epoch) at the loop's `now`."""
        return self.wall_at_start + (now - self.started)

    def since_launch(self, now: float) -> float | None:
        """Seconds since the --pid process was launched (None: not measured)."""
        return None if self.launch_wall is None else max(0.0, self._wall(now) - self.launch_wall)

    def _set_zone(self, now: float) -> None:
        """The log's clock against this machine's: its newest stamp against the wall clock when
        that line was written (now, as lines come; the file's modification time for a log
        written before the wait), rounded to whole quarter hours: the time zone the server
        prints in (a container often prints UTC), not the seconds the line took to come."""
        run = self.run
        if self.zone is not None or run is None or run.last_ts is None:
            return
        written = self._wall(now)
        if self.opts.log is not None and self.opts.log_stream is None:
            with contextlib.suppress(OSError):
                mtime = self.opts.log.stat().st_mtime
                if written - mtime > STALE_LOG_S:
                    written = mtime
        difference = (run.last_ts.dt - datetime.fromtimestamp(written)).total_seconds()
        zone = round(difference / ZONE_STEP_S) * ZONE_STEP_S
        if abs(zone) > ZONE_MAX_S or abs(difference - zone) > ZONE_SLACK_S:
            # not a clock of this moment: an old log copied or replayed, a skewed clock
            self.zone = None
            if self.launch_wall is not None and "zone" not in self.warned:
                self.warned.add("zone")
                self.say(f"note: the log's stamps do not follow this machine's clock (its newest, {run.last_ts.iso}, "
                         f"is {fmt_duration(abs(difference))} from now, not whole quarter hours): pid "
                         f"{self.opts.pid}'s start is not put on the log's clock; the launch stays "
                         f"{run.launch.source if run.launch else 'unknown'}")
            return
        self.zone = timedelta(seconds=zone)

    def _on_log_clock(self, wall: float) -> datetime | None:
        """A moment of this machine's clock on the log's clock (None until a stamped line came)."""
        return None if self.zone is None else datetime.fromtimestamp(wall) + self.zone

    def _zone_text(self) -> str:
        if not self.zone:
            return "the log's clock is this machine's"
        hours = self.zone.total_seconds() / 3600
        return (f"the log's clock runs {fmt_duration(abs(self.zone.total_seconds()))} "
                f"{'ahead of' if hours > 0 else 'behind'} this machine's (its time zone)")

    def _apply_launch(self, now: float) -> None:
        """The --pid process's start is the launch of the run it started (measured): the first
        run of the log whose first line comes after it (a restart later in the log was launched
        by another process). A pid that started long before the first line, or after it, did
        not launch this start: said once, and the run keeps its own launch."""
        run = self.run
        if run is None or run.first_ts is None or self.launch_wall is None:
            return
        self._set_zone(now)
        launched = self._on_log_clock(self.launch_wall)
        if launched is None:
            return
        key = (run.source, run.first_line)
        gap = (run.first_ts.dt - launched).total_seconds()
        if self.launch_run is None:
            self.launch_run = key
            if not -LAUNCH_SLACK_S <= gap <= MAX_STATED_GAP:
                self.launch_run = ("", -1)
                when = "after" if gap < 0 else "before"
                self.say(f"note: pid {self.opts.pid} started {fmt_duration(abs(gap))} {when} the log's first line "
                         f"(line {run.first_line}): not this start's launch, which stays "
                         f"{run.launch.source if run.launch else 'unknown'}")
                return
        if key != self.launch_run:
            return
        at = launched if gap >= 0 else run.first_ts.dt  # whole-second stamps: the same second
        basis = (f"pid {self.opts.pid} started at {datetime.fromtimestamp(self.launch_wall).strftime('%H:%M:%S.%f')[:-4]}"
                 f" by this machine's clock (/proc: its start time after boot); {self._zone_text()}")
        run.launch = self.launch_value = measured_launch(at, run.first_ts, basis)
        if not self.launch_said:
            self.launch_said = True
            if not self.opts.quiet:
                self.say(f"note: pid {self.opts.pid} was launched {self._gap_text(run)} (measured: its start "
                         "time in /proc)")

    def _gap_text(self, run: Run) -> str:
        """`20 s before the log's first line`."""
        gap = run.launch.gap if run.launch is not None else None
        if gap is None:
            return "at an unknown time"
        return "at the log's first line" if gap < 1 else f"{fmt_duration(gap)} before the log's first line"

    @property
    def measured(self) -> bool:
        """Whether the run followed carries the launch this wait measured."""
        run = self.run
        return run is not None and run.launch is not None and run.launch.source == "measured" \
            and self.launch_run == (run.source, run.first_line)

    # -- what the run is doing ----------------------------------------------------------------

    def _first_entries(self) -> list[tuple[str, Stamp | None, int]]:
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

    def _stage_since(self, stage: str | None) -> tuple[Stamp | None, int]:
        for name, ts, line in self._first_entries():
            if name == stage:
                return ts, line
        return None, 0

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
                return _progress_of(event, units)
        return None

    def _in_stage(self, now: float, stage: str | None) -> float | None:
        run = self.run
        since, _ = self._stage_since(stage)
        elapsed = self.elapsed_log(now)
        if run is None or run.first_ts is None or since is None or elapsed is None:
            return None
        return max(0.0, elapsed - since.minus(run.first_ts))

    def _after_rebuild(self, now: float) -> None:
        run = self.run
        if run is None:
            return
        key = config_key(run.config) if run.config.get("model_path") is not None else None
        if key is not None and key != self.config_seen:
            self.config_seen = key
            self._use_history(run)
        self._announce_stages(now)
        self._check_http_open(now)
        self._pid_from_log()

    def _history_loaded(self) -> None:
        assert self.loader is not None and self.loader.runs is not None
        for note in self.loader.notes:
            self.warn(note, note)
        self.opts.history = [*self.opts.history, *self.loader.runs]
        self.loader = None
        if not self.opts.history:
            self.warn("history-empty", "the history holds no runs; no ETA, and --timeout auto keeps its default")
        elif self.run is not None and self.config_seen is not None:
            self._use_history(self.run)

    def _use_history(self, run: Run) -> None:
        if not self.opts.history or self.loader is not None:
            return  # none given, or still loading: used once it is there
        self.history, self.history_line = select_history(self.opts.history, run.config)
        self.budget = self.history.budget()
        if not self.opts.quiet:
            self.say(f"history: {self.history_line}")
        if self.opts.auto_timeout:
            self._set_deadline(initial=False)

    def _set_deadline(self, initial: bool) -> None:
        """The deadline, and one line saying where it comes from (`--timeout auto` says so)."""
        opts = self.opts
        if not opts.auto_timeout:
            self.deadline = None if opts.timeout is None else self.started + opts.timeout
            self.timeout_note = ("no time limit" if opts.timeout is None
                                 else "--timeout 0: one check of what is there now" if opts.timeout == 0
                                 else f"timeout {fmt_duration(opts.timeout)}")
            if initial and not opts.quiet:
                self.say(f"firedup wait: {self._watching()}; {self.timeout_note}")
            return
        budget = self.history.budget()
        if budget is not None:
            self.budget = budget
            self.deadline = self.started + budget.seconds
            self.timeout_note = (f"--timeout auto: {fmt_duration(budget.seconds)} = {budget.method} "
                                 "(counted from the start of the wait)")
        else:
            self.deadline = self.started + DEFAULT_TIMEOUT_S
            if initial:
                given = bool(opts.history or opts.history_loader)
                why = ("no history given (--history PATH or --store)" if not given
                       else "the live config is not known until the server_args line")
                until = " until then" if given else ""
            else:
                why, until = (self.history_line or "no history of this config"), ""
            self.timeout_note = f"--timeout auto: {why}; the default {fmt_duration(DEFAULT_TIMEOUT_S)}{until}"
        if opts.quiet:
            return
        if initial:
            self.say(f"firedup wait: {self._watching()}")
        self.say(self.timeout_note)

    def _watching(self) -> str:
        parts = []
        if self.opts.log_stream is not None:
            parts.append("reading the log from standard input")
        elif self.log_name is not None:
            parts.append(f"following {self.log_name}" + (" from its current end" if self.opts.from_end else ""))
        if self.opts.url:
            url = self.prober.url if self.prober is not None else self.opts.url
            parts.append(f"probing {url} every {self.opts.probe_interval:g} s (status code only)")
        if self.opts.pid:
            parts.append(f"watching pid {self.opts.pid}" + (" and its process tree" if self.opts.inspect else ""))
        return "; ".join(parts)

    def _announce_stages(self, now: float) -> None:
        """One line per change of stage (no TTY), naming the line where the stage began.

        A stage is news only once it has lasted: MIN_STAGE_S for a first entry (an engine's
        graph-capture end line points to http_start, and a piecewise capture begins in the
        same second); REENTRY_S for a stage seen before (ranks interleave their lines, and a
        rank still finishing one stage must not make the list flap) and for a timer around
        steps already shown (an umbrella timer reported only when it ends: its tail is news
        only if it lasts)."""
        run = self.run
        if run is None or run.first_ts is None:
            return
        key = (run.source, run.first_line)
        if key != self.announce_key:
            if self.announce_key is not None and not self.opts.quiet:
                self.say(f"note: a new startup begins at line {run.first_line} (the server restarted)")
            self.announce_key, self.announced, self.announced_upto, self.last_announced = key, set(), 0, None
        changes = stage_changes(run, self.fmt)
        elapsed = self.elapsed_log(now)
        i = self.announced_upto
        while i < len(changes):
            stage, m = changes[i]
            ts = run.first_ts if m is None else m.ts
            if stage is None or stage == self.last_announced or ts is None:
                i += 1
                continue
            again = stage in self.announced
            lasting = REENTRY_S if again or spanned(stage, self.announced) \
                else MIN_STAGE_S if m is not None and stage != "serving" else 0.0
            if lasting:
                back, nxt = changes[i + 1] if i + 1 < len(changes) else (None, None)
                if nxt is not None and nxt.ts is not None:
                    # a first entry is news unless the next line goes straight back
                    corrected = lasting > MIN_STAGE_S or back in self.announced
                    if corrected and nxt.ts.minus(ts) < lasting:
                        i += 1  # a flap between ranks, or a guess the next line corrected
                        continue
                elif run.outcome != "incomplete" and lasting == MIN_STAGE_S:
                    pass  # the stage the run ended in: no next line can correct it
                elif elapsed is None or elapsed - ts.minus(run.first_ts) < lasting:
                    break  # too early to tell; look again on the next pass
            self.announced.add(stage)
            self.last_announced = stage
            i += 1
            if self.opts.quiet or self.tty or stage == "serving":
                continue
            offset = fmt_offset(ts.minus(run.first_ts))
            usual = self.history.typical_stage(stage)
            extra = f"  (usually {fmt_duration(usual) if usual >= 1 else '<1 s'})" if usual is not None and not again \
                else ""
            self.say(f"{offset:>8}  {stage}{' again' if again else ''}{extra}  [line {m.line if m else run.first_line}]")
        self.announced_upto = i
        self.announce_pending = i < len(changes)

    def _check_http_open(self, now: float) -> None:
        run = self.run
        health = self._health()
        if run is None or health is None or self.http_open_at is not None:
            return
        if run.milestone(opens_at(health)) is not None:
            self.http_open_at = now

    def _health(self) -> HealthSemantics | None:
        return self.fmt.health if self.fmt else None

    # -- decisions ----------------------------------------------------------------------------------

    def _decide(self, now: float) -> int | None:
        run = self.run
        if self.opts.pid is not None and now - self.pid_checked >= 0.5:
            self.pid_checked = now
            if not self._pid_alive():
                self._final_drain(now)
                return self._died()
        crash_code = self._crash_settled(now)
        if crash_code is not None:
            return crash_code
        if isinstance(self.follower, StreamFollower) and self.follower.ended:
            code = self._stream_ended(now)
            if code is not None:
                return code
        probe, counts = self.prober.snapshot() if self.prober else (None, collections.Counter())
        url_ok = probe is not None and probe.status == 200
        if probe is not None and probe.redirect:
            self.warn("url-redirect", f"{self.prober.url if self.prober else self.opts.url} answers "
                                      f"{probe.describe()}: a redirect is not readiness (a login page? an ingress's "
                                      "default backend?); probe the server's own address and health path")
        log_ready = run is not None and run.outcome == "ready"
        if log_ready and self.ready_seen_at is None:
            self.ready_seen_at = now
        self._read_telemetry(now, log_ready or url_ok)
        if log_ready and (self.prober is None or url_ok):
            return self._ready(url_note=probe)
        if url_ok and not log_ready:
            if self.log_name is not None and self.lines_seen == 0:
                # a 200 before the run followed printed anything: an older server still on the port
                self.warn("url-before-log", f"{self.prober.url if self.prober else self.opts.url} answers 200 "
                                            f"but {self.log_name} has no line of this startup yet: another "
                                            "process answers there (an older server still on the port?). "
                                            "Waiting for the log (without --log the URL alone decides).")
            elif not self._log_informative():
                return self._ready(url_note=probe, url_only=True)
            else:
                self._trap_url_early()
        if log_ready and self.prober is not None and self.ready_seen_at is not None:
            code = self._trap_wrong_url(now, probe, counts)
            if code is not None:
                return code
        elif self.prober is not None and self.http_open_at is not None and not url_ok:
            self._early_wrong_url(now, probe)
        self._check_stall(now)
        self._inspect(now)
        if self.deadline is not None and now >= self.deadline:
            return self._timed_out(now, probe, counts)
        return None

    def _pid_alive(self) -> bool:
        """The --pid process still runs: not a zombie, and the same process (a pid the kernel gave
        to another process since is not the server still running: their start times differ)."""
        pid = self.opts.pid
        assert pid is not None
        if self.pid_identity is None:  # not running when the wait began, or no /proc: the signal test
            return pid_alive(pid)
        found = self.procfs.state(pid)
        if found is None or found[0] in ("Z", "X"):
            return False
        if found[1] != self.pid_identity:
            self.pid_reused = True
            return False
        return True

    # -- the process tree and the engine's own figures -------------------------------------------

    def _watch(self, pid: int, source: str) -> None:
        self.watch = TreeWatch(pid, self.procfs, self.make_gpu())
        self.watch_pid = pid
        if source != f"pid {pid}" and not self.opts.quiet:
            self.say(f"note: looking at the process tree of pid {pid} during silences ({source})")

    def _silent_for(self, now: float) -> float:
        last = self.follower.last_growth if self.log_name is not None else None
        return now - (last if last is not None else self.started)

    def _inspect_after(self) -> float:
        return min(self.opts.inspect_after, self.opts.stall_after if self.opts.stall_after is not None else math.inf)

    def _inspect(self, now: float, force: bool = False) -> Activity | None:
        """What the process tree does during a silence, sampled every INSPECT_EVERY_S; said
        once per kind of activity (no TTY), shown on the status line (TTY)."""
        watch = self.watch
        if watch is None:
            return None
        silent = self._silent_for(now)
        if silent < self._inspect_after() and not force:
            if watch.samples:  # the log spoke again: the next silence is judged afresh
                watch.samples.clear()
                self.activity = self.activity_said = None
            return None
        if force or now - self.watch_at >= INSPECT_EVERY_S:
            self.watch_at = now
            watch.phase = self.current_stage()
            model = self.run.config.get("model_path") if self.run is not None else None
            watch.model_dirs = (str(model),) if isinstance(model, str) and model.startswith("/") else ()
            watch.sample(now)
            self.activity = watch.activity()
            self._observe(now, self.activity)
            if watch.gpu is not None and watch.gpu.off is not None and watch.gpu.source is not None \
                    and "gpu-off" not in self.warned:
                self.warned.add("gpu-off")  # it answered before: a wedged driver, worth saying
                self.say(f"note: {watch.gpu.off}; the GPUs are no longer consulted")
        activity = self.activity
        if activity is not None and activity.kind != self.activity_said and not force:
            self.activity_said = activity.kind
            if not self.opts.quiet and not self.tty and activity.kind != "gone":
                self.say(f"note: {self._silence_text(now, silent)}; process tree of pid {self.watch_pid}: {activity}")
        return activity

    def _silence_text(self, now: float, silent: float) -> str:
        """`no log output for 12 s in cuda_graph`; before the log's first line, `waiting for the
        server's first log line (launched 12 s ago)`."""
        if self.log_name is None:
            return f"after {_whole(silent)}"
        if self.run is None:
            return self._first_line_text(now)
        stage = self.current_stage()
        return f"no log output for {_whole(silent)}" + (f" in {stage}" if stage else "")

    def _first_line_text(self, now: float) -> str:
        launched = self.since_launch(now)
        ago = f"launched {_whole(launched)} ago" if launched is not None else f"waited {_whole(now - self.started)}"
        if self.log_began:
            return f"the log has begun; waiting for a line that shows its engine ({ago})"
        return f"waiting for the server's first log line ({ago})"

    def _observe(self, now: float, activity: Activity | None) -> None:
        """Adds a look's verdict to the classification timeline: the stretch it continues (same
        class, same phase, looks close together), else a new one."""
        if activity is None or activity.kind == "gone":
            return
        wall = self._wall(now)
        phase = self.current_stage() if self.run is not None else None
        last = self.observed[-1] if self.observed else None
        if last is not None and last.kind == activity.kind and last.phase == phase \
                and wall - last.until <= OBSERVED_GAP_S:
            last.until = wall
            last.compilers = sorted({*last.compilers, *activity.compilers})
            for item in activity.evidence:
                if item not in last.evidence and len(last.evidence) < 6:
                    last.evidence.append(item)
            return
        self.observed.append(_Stretch(activity.kind, activity.text, wall, wall, phase, list(activity.evidence),
                                      list(activity.compilers)))
        del self.observed[:-500]  # a wait of hours keeps its newest stretches

    def _observed_on_log_clock(self) -> list[Observed]:
        out = []
        for s in self.observed:
            since, until = self._on_log_clock(s.since), self._on_log_clock(s.until)
            if since is not None and until is not None:
                out.append(Observed(s.kind, _stamp(since), _stamp(until), s.text, tuple(s.compilers)))
        return out

    def _apply_observed(self) -> None:
        """What the process tree did joins the run's cache verdicts (compilers inside graph
        capture: a cold kernel JIT there)."""
        if self.run is not None and self.fmt is not None and self.observed and self.zone is not None:
            observed_caches(self.run, self._observed_on_log_clock(), self.fmt)

    def _pid_from_log(self) -> None:
        """The server pid a local log names (uvicorn's `Started server process [N]`), when no
        --pid was given: only a process of this machine that runs Python."""
        run = self.run
        if self.watch is not None or not self.opts.inspect or run is None or self.opts.log_stream is not None \
                or self.opts.log is None:
            return
        started = run.milestone(HTTP_STARTED)
        if started is None or started.line == self.log_pid_line:
            return
        self.log_pid_line = started.line  # one look per line naming a pid
        pid = str(started.fields.get("pid", ""))
        if pid.isascii() and pid.isdigit() and len(pid) < 10 and looks_like_server(ProcFS(), int(pid)):
            self._watch(int(pid), f"named by the log, line {started.line}")

    def _read_telemetry(self, now: float, ready: bool) -> None:
        """The engine's own start-up figures from the URL's server, read in the background
        once the server answers (or once its port opens, where the engine serves them then)."""
        if not self.opts.telemetry or not self.opts.url or self.telemetry is not None:
            return
        health = self._health()
        spec = health.telemetry if health is not None else None
        if spec is None:
            return
        open_now = self.http_open_at is not None and spec.served_while_starting
        if not (ready or open_now):
            return
        if self.telemetry_reader is None:
            run = self.run
            version = self._version_pick()
            config = run.all_config if run is not None else {}
            self.telemetry_reader = TelemetryReader(self.opts.url, spec, version, config)
            self.telemetry_reader.start()
        found = self.telemetry_reader.result()
        if found is not None:
            self.telemetry = found
            if not self.opts.quiet and not self.tty:  # the figures themselves: once, in the summary
                self.say(f"engine telemetry read from {found.source} ({len(found.phases)} figures)")

    def _version_pick(self) -> str | None:
        run = self.run
        if run is None or self.fmt is None or self.fmt.version_guess is None:
            return None
        events = [e for e in self.events if run.first_line is not None and e.line >= run.first_line]
        return self.fmt.version_guess(events, run.all_config, run.config_complete).pick()

    def _report_telemetry(self) -> None:
        found = self.telemetry
        if found is None and self.telemetry_reader is not None:
            found = self.telemetry = self.telemetry_reader.result(wait=TELEMETRY_WAIT_S)
        if found is None:
            return
        run = self.run
        health = self._health()
        if run is None or health is None or health.telemetry is None:
            self.report(f"  engine telemetry ({found.source}): {found.summary()}")
            return
        agree, disagree = found.compare(run, health.telemetry)
        printed = flatten(run.engine_timings or {}) if health.telemetry.log_timings else {}
        if agree and not disagree and printed:
            # the same figures as the log's own timings line, which the timeline above shows: said once
            extra = {k: v for k, v in found.phases.items() if k not in printed and v > 0}
            besides = f"; besides it: {Telemetry(found.source, extra).summary()}" if extra else ""
            self.report(f"  engine telemetry ({found.source}): agrees with the log: {', '.join(agree)}{besides}")
            return
        self.report(f"  engine telemetry ({found.source}): {found.summary()}")
        for text in disagree:
            self.report(self.style(f"  disagreement: {text}", fg="yellow"))
        if agree and not disagree:
            self.report(f"  it agrees with the log: {', '.join(agree)}")

    def _stream_ended(self, now: float) -> int | None:
        """The stream's writer closed it (`kubectl logs -f` ends with the container). With no
        URL or process to watch, that ends the wait; else they decide from now on."""
        self._final_drain(now)
        if self._crash_settled(now + CRASH_SETTLE_MAX_S + WEAK_CRASH_QUIET_S) is not None:
            return EXIT_CRASHED
        run = self.run
        if run is not None and run.outcome == "ready" and self.prober is None:
            return None  # _decide goes on to the ready verdict
        if self.prober is not None or self.opts.pid is not None:
            if not self.stream_end_said:
                self.stream_end_said = True
                self.say("note: the log stream ended (its writer closed it); the URL and the process decide from now")
            return None
        stage = self.current_stage() if run is not None else None
        where = f"in {stage} after {fmt_duration(run.seconds_to_end)}" if run is not None else "before any startup line"
        self.report(self.style(f"LOG ENDED: standard input closed {where}, before the server was ready",
                               fg="red", bold=True))
        self.report("  hint:  the container or process writing the log is gone (`kubectl logs -f` ends with it): "
                    "check its exit code and `kubectl describe pod`")
        self._report_last_lines()
        return EXIT_CRASHED

    def _log_informative(self) -> bool:
        """Does the log show the startup's progress (else the URL alone decides)?"""
        return self.run is not None and len(stage_changes(self.run, self.fmt)) > 1

    def _final_drain(self, now: float) -> None:
        lines = self.follower.drain()
        self._feed(lines)
        if self.fmt is None and self.reader.pending:
            self._choose_format(force=True)
        if self.dirty:
            self._rebuild(now)

    def _crash_settled(self, now: float) -> int | None:
        run = self.run
        crashed = run is not None and run.crash is not None and (run.outcome == "crashed" or run.crash.after_ready)
        if not crashed:
            self.crash_seen_at = None
            return None
        assert run is not None and run.crash is not None
        if self.crash_seen_at is None:
            self.crash_seen_at = now
        # A bare traceback ends a startup only if nothing follows it; a fatal line always does.
        fatal = self.fmt.vocab.fatal if self.fmt is not None else frozenset()
        weak = not any(e.name in fatal for e in self.events if e.line >= run.crash.line)
        quiet = now - (self.follower.last_growth or now)
        if weak:
            if quiet < WEAK_CRASH_QUIET_S:
                self.warn(f"weak-crash-{run.crash.line}",
                          f"a traceback at line {run.crash.line} and no startup progress since; if the log stays "
                          f"silent for {fmt_duration(WEAK_CRASH_QUIET_S)} firedup takes it as a crash")
                return None
        elif quiet < CRASH_QUIET_S and now - self.crash_seen_at < CRASH_SETTLE_MAX_S:
            return None  # let the traceback finish
        self._final_drain(now)
        return self._crashed()

    # -- endings ------------------------------------------------------------------------------------

    def _ready(self, url_note: ProbeResult | None, url_only: bool = False) -> int:
        self._apply_observed()
        run = self.run
        waited = fmt_duration(self.now() - self.started)
        if url_only:
            where = ("no log given" if self.log_name is None
                     else f"the log {self.log_name} shows no startup lines" if run is None
                     else f"the log {self.log_name} shows no startup progress (log level above INFO?)")
            url = self.prober.url if self.prober is not None else self.opts.url
            self.report(self.style(f"READY: {url} answered 200 ({where}; waited {waited})",
                                   fg="green", bold=True))
            self._report_telemetry()
            return EXIT_OK
        assert run is not None
        total = fmt_duration(run.seconds_to_end)
        ready = run.milestone(READY)
        line = f" (line {ready.line})" if ready else ""
        url = f"; {self.opts.url} answered 200" if url_note is not None else ""
        launch = ""
        if self.measured and run.launch_to_ready is not None:
            launch = f", {fmt_duration(run.launch_to_ready)} from launch ({self._gap_text(run)})"
        self.report(self.style(f"READY in {total} by the log's clock{line}{launch}{url}; waited {waited}", fg="green",
                               bold=True))
        self.report(timeline_text(run, self.style, verdict=False))
        self._report_telemetry()
        return EXIT_OK

    def _crashed(self, gone: str = "") -> int:
        self._apply_observed()
        run = self.run
        assert run is not None and run.crash is not None
        crash = run.crash
        # the time to the crash as every view states it (`Run.seconds_to_end`; a crash after ready: its own)
        when = ("after its ready line" if crash.after_ready
                else f"in {crash.phase or 'an unknown phase'} after {fmt_duration(run.seconds_to_end)}")
        self.report(self.style(f"CRASHED ({crash.category}) {when}, line {crash.line} of {self.log_name}{gone}",
                               fg="red", bold=True))
        self.report(f"  error: {crash.message}")
        if crash.hint:
            self.report(f"  hint:  {crash.hint}")
        self.report("")
        # the verdict, the error and the hint are said: the timeline under them does not repeat them
        self.report(timeline_text(run, self.style, verdict=False, crash=False))
        return EXIT_CRASHED

    def _died(self) -> int:
        self._apply_observed()
        run = self.run
        pid = self.opts.pid
        if run is not None and run.crash is not None and (run.outcome == "crashed" or run.crash.after_ready):
            return self._crashed(gone=f"; process {pid} is gone")
        if run is not None and run.outcome == "ready":
            ready = run.milestone(READY)
            text = f"DIED: process {pid} is gone after the log's ready line (line {ready.line if ready else '?'})"
            if self.opts.url:
                text += f", before {self.opts.url} answered 200"
            self.report(self.style(text, fg="red", bold=True))
            self.report(timeline_text(run, self.style, verdict=False))
            return EXIT_CRASHED
        stage = self.current_stage() if run is not None else None
        where = (f"the log stops in {stage} after {fmt_duration(run.seconds_to_end)}" if run is not None
                 else f"the log {self.log_name} shows no startup" if self.log_name else "no log given")
        if not self.pid_ran:
            self.report(self.style(f"NO PROCESS: pid {pid} was not running when the wait began (a wrong pid, or it "
                                   f"exited before); {where}", fg="red", bold=True))
            self.report("  hint:  give the server's own pid: `$!` right after starting it in the background")
            self._report_last_lines()
            return EXIT_CRASHED
        reused = " (its pid now belongs to another process)" if self.pid_reused else ""
        self.report(self.style(f"DIED: process {pid} is gone{reused} before the server was ready; {where}, "
                               "with no error line", fg="red", bold=True))
        launched = self.since_launch(self.now())
        if launched is not None:
            self.report(f"  launched {fmt_duration(launched)} ago" + (
                f", {self._gap_text(run)}" if run is not None and self.measured else ""))
        self.report("  hint:  killed by a signal? The OS OOM killer leaves no log line: check "
                    "`dmesg -T | grep -i oom` and the container's exit code (137 = SIGKILL)")
        self._report_last_lines()
        if run is not None:  # the phases it went through, as `firedup timeline` shows them (its verdict said)
            self.report("")
            self.report(timeline_text(run, self.style, verdict=False))
        return EXIT_CRASHED

    def _timed_out(self, now: float, probe: ProbeResult | None, counts: collections.Counter[str]) -> int:
        run = self.run
        waited = now - self.started
        activity = self._inspect(now, force=True)
        self._apply_observed()
        # only a process the user named decides the exit code: a pid read from the log may be reused
        judged = activity is not None and self.opts.pid is not None and self.watch_pid == self.opts.pid
        busy = not judged or activity is None or activity.busy or activity.kind == "gone"
        how = "" if not judged else " while busy" if busy else " while stuck"
        witnesses = [w for w in (self.log_name, self.prober.url if self.prober else None,
                                 f"pid {self.opts.pid}" if self.opts.pid else None) if w]
        self.report(self.style(f"TIMED OUT{how} after {fmt_duration(waited)} waiting for {' and '.join(witnesses)}",
                               fg="red", bold=True))
        self.report(f"  limit: {self.timeout_note}")
        if self.log_name is None:
            pass
        elif run is None:
            state = "has not appeared" if not self.follower.exists else "shows no server startup"
            launched = self.since_launch(now)
            self.report(f"  the log {state}" + (f" (pid {self.opts.pid} was launched {fmt_duration(launched)} ago)"
                                                 if launched is not None else ""))
        else:
            stage = self.current_stage()
            progress = self.progress()
            in_stage = self._in_stage(now, stage)
            since = f" for {fmt_duration(in_stage)}" if in_stage is not None else ""
            detail = f" ({progress})" if progress else ""
            usual = self.history.typical_stage(stage) if stage else None
            usual_text = f"; it usually takes {fmt_duration(usual)}" if usual is not None else ""
            self.report(f"  phase reached: {stage}{detail}{since}{usual_text}")
            elapsed = self.elapsed_log(now)
            launched = self.since_launch(now)
            if elapsed is not None and launched is not None and self.measured:
                self.report(f"  elapsed: {fmt_duration(launched)} since launch ({self._gap_text(run)}), "
                            f"{fmt_duration(elapsed)} since the log's first line")
            elif elapsed is not None:
                self.report(f"  elapsed: {fmt_duration(elapsed)} since the log's first line")
        if self.budget is not None:
            verdict = "over" if (self.elapsed_log(now) or waited) > self.budget.slowest else "within"
            self.report(f"  history: budget {fmt_duration(self.budget.seconds)} ({self.budget.method}); "
                        f"this run is {verdict} the slowest seen")
        elif self.history_line:
            self.report(f"  history: {self.history_line}")
        else:
            self.report("  history: none (give earlier logs of this config with --history to compare)")
        if self.opts.url:
            seen = ", ".join(f"{what} x{n}" for what, n in counts.most_common(4)) or "no answer yet"
            self.report(f"  {self.prober.url if self.prober else self.opts.url}: {seen}")
        last = self.follower.last_growth
        if self.log_name is not None and last is not None and now - last >= 1:
            self.report(f"  silent: no log output for {fmt_duration(now - last)}")
        if activity is not None:
            self.report(f"  process tree of pid {self.watch_pid}: {activity}")
            if not busy:
                self.report("  hint:  nothing in the tree works: check the other ranks or nodes (NCCL_DEBUG=INFO), "
                            "`py-spy dump --pid PID` for where it waits, and `dmesg` for a hung GPU")
        self._report_last_lines()
        return EXIT_TIMEOUT if busy else EXIT_TIMEOUT_STUCK

    def _report_last_lines(self) -> None:
        if not self.last_lines:
            return
        self.report(f"  last lines of {self.log_name}:")
        for number, text in self.last_lines:
            shown = text if len(text) <= 200 else text[:199] + "…"
            self.report(f"  {number:>6}  {shown}")

    # -- traps -------------------------------------------------------------------------------------

    def _trap_url_early(self) -> None:
        """The URL answers 200 while the log says the server is not ready."""
        run = self.run
        health = self._health()
        engine = self.fmt.display if self.fmt else "the server"
        url = self.opts.url or ""
        path = urllib.parse.urlsplit(url).path or "/"
        stage = self.current_stage()
        opened = health is not None and run is not None and run.milestone(opens_at(health)) is not None
        if health is not None and not opened:
            self.warn("url-early-closed",
                      f"{url} answers 200 but the log is still in {stage}, where {engine} has not opened "
                      "its port yet: another process answers on this URL (an older server? a dummy health server "
                      "of a node with --node-rank >= 1?). Waiting for the log's ready line.")
            return
        if path.startswith(NOT_READINESS):
            self.warn("url-early-path",
                      f"{url} answers 200 while the log is in {stage}: {path} answers as soon as the HTTP server "
                      "is up, in every version; it is not a readiness signal. Waiting for the log's ready line"
                      + (f"; {advice(health)}" if health else "") + ".")
            return
        guess = ""
        if run is not None and self.fmt is not None and self.fmt.version_guess is not None:
            events = [e for e in self.events if run.first_line is not None and e.line >= run.first_line]
            version = self.fmt.version_guess(events, run.all_config, run.config_complete)
            if version.low or version.high:
                guess = f" This log looks like {engine} {version.describe()}."
            probe = ready_probe(self.fmt.readiness, version)  # the table the budget snippets use too
            if probe is not None and (version.low or version.high):
                guess += (f" Its readiness route is {probe.route}"
                          + ("; no route tells warm-up from ready there, only the log's ready line" if
                             not probe.http_is_enough else "") + ".")
        self.warn("url-early-health",
                  f"{url} answered 200 while the log is still in {stage} (no ready line yet). "
                  + _early_200_story(engine, health, guess))

    def _early_wrong_url(self, now: float, probe: ProbeResult | None) -> None:
        if self.http_open_at is None or probe is None or probe.status is not None:
            return
        if now - self.http_open_at < URL_EARLY_WARNING_S or probe.at < self.http_open_at + URL_EARLY_WARNING_S / 2:
            return
        self.warn("url-refused-open", f"the log says the server is listening ({self._log_url_text()}) but "
                                      f"{self.opts.url} gets: {probe.describe()}. {self._url_mismatch()}")

    def _trap_wrong_url(self, now: float, probe: ProbeResult | None,
                        counts: collections.Counter[str]) -> int | None:
        assert self.ready_seen_at is not None
        since = now - self.ready_seen_at
        got = probe.describe() if probe is not None else "no answer yet"
        if since >= min(URL_EARLY_WARNING_S, self.opts.url_grace / 2):
            self.warn("url-after-ready", f"the log says ready but {self.opts.url} gets: {got}; giving it "
                                         f"{fmt_duration(self.opts.url_grace)} after the ready line")
        if since < self.opts.url_grace:
            return None
        run = self.run
        assert run is not None
        ready = run.milestone(READY)
        seen = ", ".join(f"{what} x{n}" for what, n in counts.most_common(4)) or "no answer"
        self.report(self.style(f"URL NEVER READY: the log says ready (line {ready.line if ready else '?'}), but "
                               f"{self.opts.url} did not answer 200 in the {fmt_duration(self.opts.url_grace)} "
                               "after it", fg="red", bold=True))
        self.report(f"  probed {self.opts.url}: {seen}; last: {got}")
        self.report(f"  {self._url_mismatch()}")
        self.report("")
        self.report(timeline_text(run, self.style, verdict=False))
        return EXIT_OTHER

    def _log_url_text(self) -> str:
        run = self.run
        running = run.milestone(HTTP_RUNNING) if run is not None else None
        if running is not None and running.fields.get("url"):
            return f"line {running.line}: {running.fields['url']}"
        return "no URL in the log"

    def _url_mismatch(self) -> str:
        """Why the probed URL probably is the wrong one, from what the log says it serves."""
        url = self.opts.url or ""
        probed = urllib.parse.urlsplit(url)
        run = self.run
        running = run.milestone(HTTP_RUNNING) if run is not None else None
        path = probed.path or "/"
        if running is None or not running.fields.get("url"):
            base = "the port or URL is probably wrong"
        else:
            served = urllib.parse.urlsplit(str(running.fields["url"]))
            probed_port = probed.port or (443 if probed.scheme == "https" else 80)
            if served.port is not None and served.port != probed_port:
                base = (f"the port is probably wrong: the log says the server listens on port {served.port} "
                        f"({running.fields['url']}, line {running.line}) and you probed port {probed_port}")
            elif served.hostname in ("127.0.0.1", "localhost") and not _is_loopback(probed.hostname or ""):
                base = (f"the server listens on {served.hostname} only ({running.fields['url']}): it cannot be "
                        f"reached as {probed.hostname}; start it with --host 0.0.0.0")
            else:
                base = (f"the port matches the log ({running.fields['url']}); the host {probed.hostname} may be "
                        "another machine or container, or the path is wrong")
        probe = self.prober.last if self.prober else None
        if probe is not None and probe.status == 404:
            health = self._health()
            base += f"; {path} does not exist there (404)" + (f": {advice(health)}" if health else "")
        return base

    def _check_stall(self, now: float) -> None:
        run = self.run
        last = self.follower.last_growth
        if run is None or last is None or run.outcome != "incomplete":
            return
        stage = self.current_stage() or "launch"
        if self.opts.stall_after is not None:
            threshold, why = self.opts.stall_after, f"--stall-after {self.opts.stall_after:g} s"
        else:
            found = self.history.stall_threshold(stage)
            threshold, why = found if found is not None else (
                DEFAULT_STALL_S, f"no history for this phase; the default is {fmt_duration(DEFAULT_STALL_S)}")
        silent = now - last
        if silent < threshold or self.stall_warned_for == last:
            return
        self.stall_warned_for = last
        culprits = STALL_CULPRITS.get(stage.removeprefix("draft."), _DEFAULT_CULPRITS)
        progress = self.progress()
        at = f" at {progress}" if progress else ""
        activity = self._inspect(now, force=self.watch is not None and not self.watch.samples)
        seen = f" Process tree of pid {self.watch_pid}: {activity}." if activity is not None else ""
        self.say(self.style(f"warning: stall? no log output for {fmt_duration(silent)} in {stage}{at} ({why}). "
                            f"Usual culprits in {stage}: {culprits}.{seen}", fg="yellow"))

    # -- the status line (TTY) ---------------------------------------------------------------

    def status(self, now: float) -> str:
        run = self.run
        if self.log_name is None:
            return self._status_without_log(now)
        launched = self.since_launch(now)
        if not self.follower.exists:
            return f"waiting for {self.log_name} to appear · {_whole(now - self.started)}" + (
                f" · launched {_whole(launched)} ago" if launched is not None else "")
        if run is None:
            return " · ".join([self._first_line_text(now), *([str(self.activity)] if self.activity else [])])
        if run.outcome == "ready" and self.prober is not None and self.ready_seen_at is not None:
            probe = self.prober.last
            return (f"the log says ready; {self.opts.url}: {probe.describe() if probe else '…'} · "
                    f"{_whole(now - self.ready_seen_at)} of {_whole(self.opts.url_grace)}")
        stage = self.current_stage() or "?"
        parts = [stage]
        progress = self.progress()
        if progress:
            parts[0] += f" {progress}"
        elapsed = self.elapsed_log(now)
        if elapsed is not None and launched is not None and self.measured:
            parts.append(f"{fmt_offset(launched)} from launch (log {fmt_offset(elapsed)})")
        elif elapsed is not None:
            parts.append(fmt_offset(elapsed))
        in_stage = self._in_stage(now, stage)
        if self.history.n and in_stage is not None and elapsed is not None:
            remaining = self.history.remaining(stage, in_stage, elapsed)
            if remaining is not None:
                parts.append(f"ETA {_whole(remaining)}" if remaining >= 1
                             else f"{_whole(-remaining)} later than usual" if remaining <= -1 else "ETA any moment")
        if self.prober is not None:
            probe = self.prober.last
            parts.append(f"url: {probe.describe() if probe else '…'}")
        last = self.follower.last_growth
        if last is not None and now - last >= 10:
            parts.append(f"silent {_whole(now - last)}")
        if self.activity is not None:
            parts.append(str(self.activity))
        return " · ".join(parts)

    def _status_without_log(self, now: float) -> str:
        parts = [f"waiting · {_whole(now - self.started)}"]
        if self.prober is not None:
            probe = self.prober.last
            parts.append(f"{self.prober.url}: {probe.describe() if probe else '…'}")
        if self.opts.pid is not None:
            launched = self.since_launch(now)
            parts.append(f"pid {self.opts.pid}" + (f", launched {_whole(launched)} ago" if launched is not None else ""))
        if self.activity is not None:
            parts.append(str(self.activity))
        return " · ".join(parts)

    def _show_status(self, now: float) -> None:
        text = self.status(now)
        if text == self.status_text and now - self.status_at < 1.0:
            return
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        shown = text if len(text) <= width else text[: width - 1] + "…"
        self.err.write("\r\x1b[K" + shown)
        self.err.flush()
        self.status_text = shown
        self.status_at = now


def _early_200_story(engine: str, health: HealthSemantics | None, guess: str) -> str:
    """Why a 200 before the ready line is no readiness signal, from the engine's health data:
    the versions whose health endpoint answered 200 during warm-up, and what to probe instead."""
    early = [(last, older) for last, older in (health.older if health else ())
             if older.starting == str(older.ready_status)]
    if health is None or not early:
        return (f"It is not a readiness signal on this server.{guess} Waiting for the log's ready line"
                + (f"; {advice(health)}." if health else "."))
    last, older = early[-1]
    instead = f"on {health.since}+ probe {health.endpoint}" if health.since else f"probe {health.endpoint}"
    if health.ready_endpoint:
        since = f"on {health.ready_endpoint_since}+ " if health.ready_endpoint_since else ""
        instead += f", {since}{health.ready_endpoint}"
    return (f"On {engine} {last} and older {older.endpoint} is {older.ready_status} during warm-up: it only proves "
            f"the HTTP server is up, so it is not a readiness signal on that version.{guess} Waiting for the log's "
            f"ready line; {instead}.")


def _readable(text: str) -> bool:
    """Some format's header, with a time, takes this line: the server's log has begun, even
    before a line shows which engine writes it."""
    for fmt in all_formats().values():
        for header in fmt.headers:
            if "time" in header.regex.groupindex:
                m = header.regex.match(text)
                if m is not None and m.group("time"):
                    return True
    return False


def _stamp(when: datetime) -> Stamp:
    return Stamp(when, when.isoformat(timespec="milliseconds" if when.microsecond else "seconds"))


def _whole(seconds: float) -> str:
    """A duration for a line that redraws: whole seconds, so it does not flicker."""
    return fmt_duration(float(max(0, round(seconds))) or 0.0) if seconds >= 1 else "0 s"


def _has_lines(opts: WaitOptions) -> bool:
    """A log file with something in it (stdin cannot be looked at without reading it)."""
    try:
        return opts.log is not None and opts.log_stream is None and opts.log.is_file() and opts.log.stat().st_size > 0
    except OSError:
        return False


def wait(opts: WaitOptions, out: TextIO, err: TextIO, tty: bool | None = None,
         style: Callable[..., str] = plain) -> int:
    """Watch the log (and URL, and process) until ready, crashed or timed out; the exit code."""
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
    if tty is None:
        tty = bool(getattr(err, "isatty", lambda: False)())
    import shutil

    waiter = Waiter(opts, out, err, tty, style, width=max(shutil.get_terminal_size().columns, MIN_WIDTH))
    with contextlib.suppress(KeyboardInterrupt):
        return waiter.run_loop()
    return 130


__all__ = ["Prober", "WaitOptions", "Waiter", "parse_duration", "parse_timeout", "pid_alive", "probe",
           "readiness_paths", "wait"]

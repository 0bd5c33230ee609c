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

`Waiter` is the loop: on each pass it reads what the log has grown by, gathers what was seen
into an `Observation`, asks `live.decide` for the verdict (a pure function of it) and hands the
`Decision` to its `Printer` (`live.printer`), which says it. The URL is probed in
`live.probe`, the process tree looked at in `live.proc`, `live.gpu` and `live.activity`.
"""

from __future__ import annotations

import collections
import contextlib
import math
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, TextIO

from firedup.core.health import HealthSemantics
from firedup.core.units import MIN_WIDTH, fmt_duration, plain
from firedup.formats import Format, all_formats, foreign_engine, no_known_engine
from firedup.formats.base import opens_at
from firedup.formats.vocab import HTTP_STARTED
from firedup.live.activity import Activity
from firedup.live.decide import BEFORE_TELEMETRY, CRASHED, DRAIN, TIMED_OUT, Observation, decide
from firedup.live.gpu import GpuWatch
from firedup.live.history import (
    History,
    HistoryLoader,
    WaitBudget,
    config_key,
    select_history,
)
from firedup.live.options import WaitOptions, check_options, dates_of, follower_of
from firedup.live.pidclock import PidClock
from firedup.live.printer import Printer
from firedup.live.probe import prober_for
from firedup.live.proc import ProcFS, TreeWatch, looks_like_server, pid_alive
from firedup.live.record import Stretch, ingest, stamp, write_record
from firedup.live.stages import Progress, StageNews, progress_of
from firedup.live.telemetry import Telemetry, TelemetryReader
from firedup.read.clock import Stamp
from firedup.read.engine import Event, Scanner
from firedup.read.follow import RawLine, StreamFollower
from firedup.read.sources import Line, normalise
from firedup.timeline.pipeline import LogReader
from firedup.timeline.run import Run
from firedup.timeline.silence import Observed, observed_caches
from firedup.timeline.stages import stage_changes

DEFAULT_TIMEOUT_S = 30 * 60.0  # --timeout auto without history
DEFAULT_STALL_S = 180.0  # silence that earns a warning without history
POLL_MIN_S = 0.1
POLL_MAX_S = 0.5
SNIFF_IDLE_S = 2.0
INSPECT_EVERY_S = 2.0  # how often, while the silence lasts
STREAM_PAUSE_S = 0.3  # `--timeout 0` on a stream: a pause this long ends the one read
STREAM_ONCE_MAX_S = 10.0  # ... and this long at most (a flood never pauses)
SNIFF_NOTE_LINES = 200  # lines that show no engine before `wait` says so (it keeps looking)
SNIFF_KEEP_LINES = 2000  # lines of a log of no known engine kept in case one shows up later
OBSERVED_GAP_S = 6.0  # looks further apart than this start a new stretch
MAX_EVENTS = 50_000
LAST_LINES = 12

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
_STAMPED = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")


class Waiter:
    """The wait loop: it follows, probes and looks, decides on what it saw, and has its printer
    say it. `run_loop()` returns the exit code."""

    def __init__(self, opts: WaitOptions, out: TextIO, err: TextIO, tty: bool,
                 style: Callable[..., str] = plain, now: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, width: int | None = None,
                 procfs: ProcFS | None = None, gpu: Callable[[], GpuWatch | None] | None = None) -> None:
        self.opts = opts
        self.procfs = procfs or ProcFS()  # a fake tree in tests
        self.make_gpu = gpu if gpu is not None else GpuWatch  # the GPUs, read off this thread
        self.tty = tty
        self.printer = Printer(self, out, err, tty, style, width)  # everything the wait says
        self.now = now
        self.sleep = sleep
        self.log_name = opts.log_name
        self.follower = follower_of(opts)
        self.log_missing_at_start = opts.log is not None and opts.log_stream is None and not opts.log.exists()
        self.prober = prober_for(opts.url, opts.engine, opts.probe_interval, opts.probe_timeout) if opts.url else None
        # The log is read by the pipeline `parse` uses, fed as it grows: the same sniffing,
        # the same dates (the file's modification time when the log has no year; today for a
        # stream), the same runs. Standard input goes through the same reader.
        self.reader = LogReader(self.log_name or "(no log)", opts.engine, dates_of(opts), max_events=MAX_EVENTS)
        self.lines_seen = 0  # lines of the run followed (after --from-end's skip)
        # The process tree, looked at during a silence: --pid, else the pid the log names.
        self.watch: TreeWatch | None = None
        self.watch_pid: int | None = None
        self.watch_at = -math.inf
        self.activity: Activity | None = None
        self.activity_said: str | None = None
        self.telemetry: Telemetry | None = None
        self.telemetry_reader: TelemetryReader | None = None
        self.log_pid_line: int | None = None
        self.dirty = False
        self.run: Run | None = None
        self.last_lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=LAST_LINES)
        self.started = now()
        self.deadline: float | None = None
        self.budget: WaitBudget | None = None
        self.timeout_note = ""
        self.history = History([])
        self.loader = HistoryLoader(opts.history_loader) if opts.history_loader else None
        self.history_line: str | None = None
        self.config_seen: tuple[tuple[str, Any], ...] | None = None
        self.stages = StageNews()  # which changes of stage are news yet
        self.unknown_engine_said = False
        self.pending_looked = 0  # lines of reader.pending `_unread_lines` has looked at
        self.stray_stamp = False  # a stamped line no format's header reads has come
        self.log_began = False  # a line some format's header reads has come
        self.stall_warned_for: float | None = None  # last_growth value already warned about
        self.ready_seen_at: float | None = None
        self.http_open_at: float | None = None
        self.crash_seen_at: float | None = None
        self.probe_counts: collections.Counter[str] = collections.Counter()  # the answers so far, by kind
        self.last_ts: Stamp | None = None
        self.last_ts_at = self.started
        self.pid_checked = 0.0
        # The --pid process: its start is the run's launch (measured), and with its pid, its
        # identity (a pid reused by another process is not the server still running).
        wall_at_start = time.time()
        self.pid_identity: int | None = None
        self.pid_reused = False
        launch_wall: float | None = None  # when --pid started, seconds since the epoch
        if opts.pid is not None:
            self.pid_identity = self.procfs.start_ticks(opts.pid)
            launch_wall = self.procfs.start_time(opts.pid)
        # without /proc (another OS) the signal test alone says the pid ran when the wait began
        self.pid_ran = opts.pid is not None and (self.pid_identity is not None or pid_alive(opts.pid))
        self.clock = PidClock(opts.pid, launch_wall, self.started, wall_at_start,
                              opts.log if opts.log_stream is None else None, opts.quiet, self.printer)
        self.observed: list[Stretch] = []  # what the process tree did, stretch by stretch (--record)
        self.partial_key = 0
        self.partial_progress: Progress | None = None

    def status(self, now: float) -> str:
        """The status line a terminal shows now (`Printer.status`)."""
        return self.printer.status(now)

    # -- the loop --------------------------------------------------------------------------------

    def run_loop(self) -> int:
        """The wait; its outcome also written to `--record` when asked."""
        code = self._run_loop()
        if self.opts.record is not None:
            write_record(self, code)
        if self.opts.ingest is not None:
            ingest(self)
        return code

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
                elif self.stages.pending:
                    self._announce_stages(now)  # a re-entered stage may have lasted long enough by now
                if self.loader is not None and self.loader.done:
                    self._history_loaded()
                code = self._decide(now)
                if code is not None:
                    return code
                if not self.opts.quiet and self.tty:
                    self.printer.show_status(now)
                interval = POLL_MIN_S if got else min(POLL_MAX_S, interval * 1.5)
                if not self.follower.backlog:  # a backlog is read on at once, its deadline looked at between polls
                    self.sleep(interval)
        finally:
            if self.prober is not None:
                self.prober.stop()
            self.follower.close()
            self.printer.clear_status()

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
                self.printer.say(f"note: {note.text}")
        if self.prober is not None:
            for text in self.prober.take_notes():
                self.printer.say(f"note: {text}")
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
                self.printer.say(f"note: {self.log_name}: {no_known_engine(foreign_engine(self._pending_text()))} (until its lines show one, the URL and "
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
                self.partial_progress = progress_of(event, units)

    def _rebuild(self, now: float) -> None:
        self.dirty = False
        runs = self.reader.runs()
        self.run = runs[-1] if runs else None
        if self.run is not None and self.run.last_ts != self.last_ts:
            self.last_ts = self.run.last_ts
            self.last_ts_at = now
        self.clock.apply(self.run, now)
        self._apply_observed()

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
                return progress_of(event, units)
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
            self.printer.warn(note, note)
        self.opts.history = [*self.opts.history, *self.loader.runs]
        self.loader = None
        if not self.opts.history:
            self.printer.warn("history-empty", "the history holds no runs; no ETA, and --timeout auto keeps its default")
        elif self.run is not None and self.config_seen is not None:
            self._use_history(self.run)

    def _use_history(self, run: Run) -> None:
        if not self.opts.history or self.loader is not None:
            return  # none given, or still loading: used once it is there
        self.history, self.history_line = select_history(self.opts.history, run.config)
        self.budget = self.history.budget()
        if not self.opts.quiet:
            self.printer.say(f"history: {self.history_line}")
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
                self.printer.say(f"firedup wait: {self._watching()}; {self.timeout_note}")
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
            self.printer.say(f"firedup wait: {self._watching()}")
        self.printer.say(self.timeout_note)

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
        """One line per change of stage that is news (no TTY), naming the line where it began."""
        run = self.run
        if run is None or run.first_ts is None:
            return
        if self.stages.restarted(run) and not self.opts.quiet:
            self.printer.say(f"note: a new startup begins at line {run.first_line} (the server restarted)")
        for line in self.stages.news(run, self.fmt, self.elapsed_log(now), self.history):
            if not (self.opts.quiet or self.tty):
                self.printer.say(line)

    def _check_http_open(self, now: float) -> None:
        run = self.run
        health = self._health()
        if run is None or health is None or self.http_open_at is not None:
            return
        if run.milestone(opens_at(health)) is not None:
            self.http_open_at = now

    def _health(self) -> HealthSemantics | None:
        return self.fmt.serving.health if self.fmt else None

    # -- decisions ----------------------------------------------------------------------------------

    def _decide(self, now: float) -> int | None:
        """One pass: what was seen (`_observation`), the decision on it (`live.decide`), and the
        printer's words for it; the exit code once the wait is over."""
        seen = self._observation(now)
        d = decide(seen)
        if d.verdict == DRAIN:  # the stream closed: its rest is read, then it is judged whole
            self.printer.tell(d.first, seen)
            self._final_drain(now)
            seen = replace(self._observation(now), drained=True)
            d = decide(seen)
        self.printer.tell(d.first, seen)
        counts = self.probe_counts
        if d.verdict in BEFORE_TELEMETRY:
            if d.verdict == CRASHED and not d.gone:  # (a process gone had the log read to its end)
                self._final_drain(now)
            return self.printer.conclude(d, seen, counts)
        self._read_telemetry(now, seen.log_ready or seen.url_ok)
        self.printer.tell(d.warnings, seen)
        if d.over and d.verdict != TIMED_OUT:
            return self.printer.conclude(d, seen, counts)
        self._check_stall(now)
        self._inspect(now)
        if d.verdict != TIMED_OUT:
            return None
        # the process tree looked at once more, now: whether the wait timed out while busy or stuck
        seen = replace(seen, activity=self._inspect(now, force=True))
        self._apply_observed()
        return self.printer.conclude(decide(seen), seen, counts)

    def _observation(self, now: float) -> Observation:
        """What the wait has seen at `now`: the --pid process looked at (every half second; once
        it is gone, the log is read to its end first), the crash and ready lines timed."""
        pid_gone = False
        if self.opts.pid is not None and now - self.pid_checked >= 0.5:
            self.pid_checked = now
            if not self._pid_alive():
                self._final_drain(now)
                pid_gone = True
        run = self.run
        crash = run.crash if run is not None else None
        crashed = crash is not None and run is not None and (run.outcome == "crashed" or crash.after_ready)
        fatal_after = False
        if crash is None or not crashed:
            self.crash_seen_at = None
        else:
            if self.crash_seen_at is None:
                self.crash_seen_at = now
            # a bare traceback ends a start-up only if nothing follows it; a fatal line always does
            fatal = self.fmt.vocab.fatal if self.fmt is not None else frozenset()
            fatal_after = any(e.name in fatal for e in self.events if e.line >= crash.line)
        probe, self.probe_counts = self.prober.snapshot() if self.prober is not None else (None, collections.Counter())
        log_ready = run is not None and run.outcome == "ready"
        if log_ready and self.ready_seen_at is None:
            self.ready_seen_at = now
        url_ok = probe is not None and probe.status == 200
        # read only where it decides: a 200 while the log is not ready, after lines of this start
        needed = url_ok and not log_ready and not (self.log_name is not None and self.lines_seen == 0)
        informative = needed and self._log_informative()
        return Observation(
            now, run, log=self.log_name is not None, lines=self.lines_seen, informative=informative,
            fatal_after_crash=fatal_after, last_growth=self.follower.last_growth, crash_seen_at=self.crash_seen_at,
            pid=self.opts.pid is not None, pid_gone=pid_gone, pid_ran=self.pid_ran,
            stream_ended=isinstance(self.follower, StreamFollower) and self.follower.ended,
            url=self.prober is not None, probe=probe, ready_seen_at=self.ready_seen_at,
            http_open_at=self.http_open_at, url_grace=self.opts.url_grace, deadline=self.deadline,
            activity=self.activity, named=self.opts.pid is not None and self.watch_pid == self.opts.pid)

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
            self.printer.say(f"note: looking at the process tree of pid {pid} during silences ({source})")

    def _silent_for(self, now: float) -> float:
        last = self.follower.last_growth if self.log_name is not None else None
        return now - (last if last is not None else self.started)

    def _inspect_after(self) -> float:
        return min(self.opts.inspect_after, self.opts.stall_after if self.opts.stall_after is not None else math.inf)

    def _inspect(self, now: float, force: bool = False) -> Activity | None:
        """What the process tree does, looked at every second from the start whatever the log
        does (`TreeWatch.tick`); a settled change said once (no TTY), shown on the status line (TTY)."""
        watch = self.watch
        if watch is None:
            return None
        model = self.run.config.get("model_path") if self.run is not None else None
        dirs = (str(model),) if isinstance(model, str) and model.startswith("/") else ()
        if watch.tick(now, self.current_stage(), dirs, force=force):
            self.activity = watch.current
            self._observe(now, self.activity)
            if watch.gpu is not None and watch.gpu.off is not None and watch.gpu.source is not None \
                    and "gpu-off" not in self.printer.warned:
                self.printer.warned.add("gpu-off")  # it answered before: a wedged driver, worth saying
                self.printer.say(f"note: {watch.gpu.off}; the GPUs are no longer consulted")
        news = None if force else watch.news()
        if news is not None and not self.opts.quiet and not self.tty and news.kind != "gone":
            silent = self._silent_for(now)
            lead = f"{self.printer.silence_text(now, silent)}; " if silent >= self._inspect_after() else ""
            self.printer.say(f"note: {lead}process tree of pid {self.watch_pid}: {news}")
        return self.activity

    def _observe(self, now: float, activity: Activity | None) -> None:
        """Adds a look's verdict to the classification timeline: the stretch it continues (same
        class, same phase, looks close together), else a new one."""
        if activity is None or activity.kind == "gone":
            return
        wall = self.clock.wall(now)
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
        self.observed.append(Stretch(activity.kind, activity.text, wall, wall, phase, list(activity.evidence),
                                      list(activity.compilers)))
        del self.observed[:-500]  # a wait of hours keeps its newest stretches

    def _observed_on_log_clock(self) -> list[Observed]:
        out = []
        for s in self.observed:
            since, until = self.clock.on_log_clock(s.since), self.clock.on_log_clock(s.until)
            if since is not None and until is not None:
                out.append(Observed(s.kind, stamp(since), stamp(until), s.text, tuple(s.compilers)))
        return out

    def _apply_observed(self) -> None:
        """What the process tree did joins the run's cache verdicts (compilers inside graph
        capture: a cold kernel JIT there)."""
        if self.run is not None and self.fmt is not None and self.observed and self.clock.zone is not None:
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
                self.printer.say(f"engine telemetry read from {found.source} ({len(found.phases)} figures)")

    def _version_pick(self) -> str | None:
        run = self.run
        if run is None or self.fmt is None or self.fmt.serving.version_guess is None:
            return None
        events = [e for e in self.events if run.first_line is not None and e.line >= run.first_line]
        return self.fmt.serving.version_guess(events, run.all_config, run.config_complete).pick()

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
        say, style = self.printer.say, self.printer.style
        say(style(f"warning: stall? no log output for {fmt_duration(silent)} in {stage}{at} ({why}). "
                  f"Usual culprits in {stage}: {culprits}.{seen}", fg="yellow"))

def _readable(text: str) -> bool:
    """Some format's header, with a time, takes this line: the server's log has begun, even
    before a line shows which engine writes it."""
    for fmt in all_formats().values():
        for header in fmt.parsing.headers:
            if "time" in header.regex.groupindex:
                m = header.regex.match(text)
                if m is not None and m.group("time"):
                    return True
    return False


def wait(opts: WaitOptions, out: TextIO, err: TextIO, tty: bool | None = None,
         style: Callable[..., str] = plain) -> int:
    """Watch the log (and URL, and process) until ready, crashed or timed out; the exit code."""
    check_options(opts)
    if tty is None:
        tty = bool(getattr(err, "isatty", lambda: False)())

    waiter = Waiter(opts, out, err, tty, style, width=max(shutil.get_terminal_size().columns, MIN_WIDTH))
    with contextlib.suppress(KeyboardInterrupt):
        return waiter.run_loop()
    return 130


__all__ = ["Waiter", "wait"]

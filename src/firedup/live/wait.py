"""`firedup wait`: watch a server start, and say precisely when it is ready, dead or late.

It replaces loops like `until curl -s .../health | grep -q ok; do sleep 5; done`, which
can never succeed on an engine whose /health body is empty, and say nothing while they
spin. Three witnesses are watched at once:

- the log, followed as it grows (`firedup.read.follow`) and read by the same incremental
  engine and timeline as `firedup parse`: it tells the phase, the progress, a crash and
  its diagnosis, and the ready line;
- the URL (optional), probed at most once a second by its status code only: 200 is
  ready, refused or 503 is starting; the body is never read;
- the process (optional `--pid`, else the pid a local log names): its death ends the wait at
  once, and its tree (with its GPUs) is sampled every second from the start, whatever the log
  does (`live.proc.TreeWatch.tick`), to say what it is doing and whether a timeout is stuck.

When the witnesses disagree, the disagreement is the news: a log that says ready while
the URL never answers 200 means a wrong port or URL; a URL that answers 200 while the log
is still warming up means the probe is not a readiness signal on this version.

Exit codes follow `timeout` and `kubectl wait`: 0 ready, 124 timed out, 3 crashed or died
before ready, 2 usage error, 1 anything else.

`Waiter` is the loop, and the one thing that changes what the wait knows: on each pass it
reads what the log has grown by (`live.logfeed`), gathers what was seen into its record
(`live.sofar.SoFar`) and from it an `Observation`, asks `live.decide` for the verdict (a pure
function of it) and hands the `Decision` and the record to its `Printer` (`live.printer`),
which says it; `--record` (`live.record`) writes the same record. The URL is probed in
`live.probe`, the process tree sampled in `live.proc` (its GPUs in `live.gpu`) and classed by
`live.activity`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TextIO

from firedup.core.config import ConfigKey, config_key
from firedup.core.units import MIN_WIDTH, fmt_duration, plain
from firedup.formats.base import opens_at
from firedup.formats.vocab import HTTP_STARTED
from firedup.formats.vocab import READY as READY_LINE
from firedup.live.activity import Activity
from firedup.live.decide import (
    BEFORE_TELEMETRY,
    CRASHED,
    DRAIN,
    READY,
    READY_URL,
    TIMED_OUT,
    Decision,
    Observation,
    decide,
)
from firedup.live.gpu import GpuWatch
from firedup.live.history import HistoryLoader, select_history
from firedup.live.logfeed import LogFeed
from firedup.live.options import WaitOptions, check_options
from firedup.live.pidclock import PidClock
from firedup.live.printer import TELEMETRY_WAIT_S, Printer
from firedup.live.probe import prober_for
from firedup.live.proc import ProcFS, TreeWatch, looks_like_server, pid_alive
from firedup.live.record import ingest, write_record
from firedup.live.sofar import SoFar, Stretch
from firedup.live.stages import StageNews
from firedup.live.telemetry import TelemetryReader
from firedup.read.clock import Stamp
from firedup.timeline.run import Run
from firedup.timeline.silence import observed_caches

DEFAULT_TIMEOUT_S = 30 * 60.0  # --timeout auto without history
DEFAULT_STALL_S = 180.0  # silence that earns a warning without history
POLL_MIN_S = 0.1
POLL_MAX_S = 0.5
STREAM_PAUSE_S = 0.3  # `--timeout 0` on a stream: a pause this long ends the one read
STREAM_ONCE_MAX_S = 10.0  # ... and this long at most (a flood never pauses)
OBSERVED_GAP_S = 6.0  # looks further apart than this start a new stretch

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


class Waiter:
    """The wait loop: it follows, probes and looks, gathers what it saw into its `SoFar`, decides
    on that (`live.decide`), and has its printer say it. `run_loop()` returns the exit code."""

    def __init__(self, opts: WaitOptions, out: TextIO, err: TextIO, tty: bool,
                 style: Callable[..., str] = plain, now: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, width: int | None = None,
                 procfs: ProcFS | None = None, gpu: Callable[[], GpuWatch | None] | None = None) -> None:
        self.opts = opts
        self.procfs = procfs or ProcFS()  # a fake tree in tests
        self.make_gpu = gpu if gpu is not None else GpuWatch  # the GPUs, read off this thread
        self.tty = tty
        self.printer = Printer(out, err, tty, style, width)  # everything the wait says
        self.now = now
        self.sleep = sleep
        self.log = LogFeed(opts, self.printer.say)
        self.once = opts.timeout == 0 and not opts.auto_timeout  # `--timeout 0`: one check
        self.prober = prober_for(opts.url, opts.engine, opts.probe_interval, opts.probe_timeout) if opts.url else None
        # The process tree, sampled every second: --pid, else the pid the log names.
        self.watch: TreeWatch | None = None
        self.telemetry_reader: TelemetryReader | None = None
        self.log_pid_line: int | None = None
        self.last_ts: Stamp | None = None
        self.loader = HistoryLoader(opts.history_loader) if opts.history_loader else None
        self.config_seen: ConfigKey | None = None
        self.stages = StageNews()  # which changes of stage are news yet
        self.stall_warned_for: float | None = None  # last_growth value already warned about
        self.pid_checked = 0.0
        started = now()
        # The --pid process: its start is the run's launch (measured), and with its pid, its
        # identity (a pid reused by another process is not the server still running).
        wall_at_start = time.time()
        self.pid_identity: int | None = None
        launch_wall: float | None = None  # when --pid started, seconds since the epoch
        if opts.pid is not None:
            self.pid_identity = self.procfs.start_ticks(opts.pid)
            launch_wall = self.procfs.start_time(opts.pid)
        # without /proc (another OS) the signal test alone says the pid ran when the wait began
        self.pid_ran = opts.pid is not None and (self.pid_identity is not None or pid_alive(opts.pid))
        clock = PidClock(opts.pid, launch_wall, started, wall_at_start,
                         opts.log if opts.log_stream is None else None, opts.quiet)
        self.seen = SoFar(clock, started, log_name=opts.log_name, url=opts.url, pid=opts.pid, url_grace=opts.url_grace,
                         probed=self.prober.url if self.prober is not None else None, last_lines=self.log.last_lines,
                         last_ts_at=started, fmt=self.log.fmt)

    def status(self, now: float) -> str:
        """The status line a terminal shows now (`Printer.status`)."""
        return self.printer.status(self.seen, now)

    # -- the loop --------------------------------------------------------------------------------

    def run_loop(self) -> int:
        """The wait; its outcome also written to `--record` and the history store when asked."""
        code = self._run_loop()
        self._apply_observed()
        gpu = self.watch.gpu if self.watch is not None else None
        self.seen.gpu = None if gpu is None else (gpu.source.name if gpu.source is not None else None, gpu.off)
        if self.opts.record is not None:
            write_record(self.seen, self.opts.record, code, self.printer.headline, self.now() - self.seen.started)
        if self.opts.ingest is not None:
            runs = self.log.runs() if self.seen.run is not None else []
            ingest(self.seen, runs, self.opts.log is not None and self.opts.log_stream is None, self.opts.ingest,
                   self.printer.say)
        return code

    def _run_loop(self) -> int:
        self._set_deadline(initial=True)
        if self.loader is not None:
            self.loader.start()
        once = self.once
        if self.prober is not None:
            if once:
                self.prober.check()  # `--timeout 0` checks once: the one check comes before the verdict
            else:
                self.prober.start()
        if self.opts.pid is not None and self.opts.inspect:
            self._watch(self.opts.pid, f"pid {self.opts.pid}")
        if once:
            self._read_all()
        interval = POLL_MIN_S
        try:
            while True:
                now = self.now()
                got = self._read(now)
                if self.log.dirty:
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
                    self.printer.show_status(self.seen, now)
                interval = POLL_MIN_S if got else min(POLL_MAX_S, interval * 1.5)
                if not self.log.follower.backlog:  # a backlog is read on at once, its deadline looked at between polls
                    self.sleep(interval)
        finally:
            if self.prober is not None:
                self.prober.stop()
            self.log.follower.close()
            self.printer.clear_status()

    def _read_all(self) -> None:
        """What the log holds now, its unfinished last line included (`--timeout 0` decides on
        it); a stream gets until it pauses for STREAM_PAUSE_S or ends. As the first passes of a
        long wait, the reading stops at a ready line: a 2 GB log ready at its line 14 is not read
        to its end first."""
        stream = self.log.stream
        quiet_since = began = self.now()
        while True:
            events = self.log.events
            known = events[-1].line if events else 0
            if self._read(self.now()):
                quiet_since = self.now()
                if stream and self.now() - began >= STREAM_ONCE_MAX_S:
                    break
                if self._ready_line_since(known):
                    return
            elif not stream or self.log.stream_ended or self.now() - quiet_since >= STREAM_PAUSE_S:
                break
            else:
                self.sleep(POLL_MIN_S / 2)
        self._final_drain(self.now())

    def _ready_line_since(self, line: int) -> bool:
        """A ready line came after `line`, and the run is ready (the run rebuilt to know)."""
        events = self.log.events
        if not any(e.name == READY_LINE for e in itertools.takewhile(lambda e: e.line > line, reversed(events))):
            return False
        self._rebuild(self.now())
        return self.seen.run is not None and self.seen.run.outcome == "ready"

    def _read(self, now: float) -> bool:
        lines = self.log.poll(now)
        if self.prober is not None:
            for text in self.prober.take_notes():
                self.printer.say(f"note: {text}")
        return self.log.take(lines, now)

    def _final_drain(self, now: float) -> None:
        self.log.drain()
        if self.log.dirty:
            self._rebuild(now)

    def _rebuild(self, now: float) -> None:
        runs = self.log.runs()
        seen = self.seen
        seen.run = runs[-1] if runs else None
        seen.fmt, seen.events = self.log.fmt, self.log.events
        stamped = seen.run is not None and seen.run.last_ts != self.last_ts  # a newer stamp came
        if seen.run is not None and stamped:
            self.last_ts = seen.run.last_ts
            seen.last_ts_at = now
        for note in seen.clock.apply(runs, now, live=stamped and self.log.live):
            self.printer.say(note)
        self._apply_observed()

    def _after_rebuild(self, now: float) -> None:
        run = self.seen.run
        if run is None:
            return
        key = config_key(run.engine, run.config) if run.config.get("model_path") is not None else None
        if key is not None and key != self.config_seen:
            self.config_seen = key
            self._use_history(run)
        self._announce_stages(now)
        health = self.seen.health()
        if health is not None and self.seen.http_open_at is None and run.milestone(opens_at(health)) is not None:
            self.seen.http_open_at = now  # the log says the HTTP port opened
        self._pid_from_log()

    # -- history and the deadline -------------------------------------------------------------------

    def _history_loaded(self) -> None:
        assert self.loader is not None and self.loader.runs is not None
        for note in self.loader.notes:
            self.printer.warn(note, note)
        self.opts.history = [*self.opts.history, *self.loader.runs]
        self.loader = None
        if not self.opts.history:
            self.printer.warn("history-empty", "the history holds no runs; no ETA, and --timeout auto keeps its default")
        elif self.seen.run is not None and self.config_seen is not None:
            self._use_history(self.seen.run)

    def _use_history(self, run: Run) -> None:
        if not self.opts.history or self.loader is not None:
            return  # none given, or still loading: used once it is there
        seen = self.seen
        seen.history, seen.history_line = select_history(self.opts.history, run.config, run.engine)
        seen.budget = seen.history.budget()
        if not self.opts.quiet:
            self.printer.say(f"history: {seen.history_line}")
        if self.opts.auto_timeout:
            self._set_deadline(initial=False)

    def _set_deadline(self, initial: bool) -> None:
        """The deadline, and one line saying where it comes from (`--timeout auto` says so)."""
        opts, seen = self.opts, self.seen
        if not opts.auto_timeout:
            seen.deadline = None if opts.timeout is None else seen.started + opts.timeout
            seen.timeout_note = ("no time limit" if opts.timeout is None
                                 else "--timeout 0: one check of what is there now" if opts.timeout == 0
                                 else f"timeout {fmt_duration(opts.timeout)}")
            if initial and not opts.quiet:
                self.printer.say(f"firedup wait: {watching(opts, seen.probed)}; {seen.timeout_note}")
            return
        budget = seen.history.budget()
        if budget is not None:
            seen.budget = budget
            seen.deadline = seen.started + budget.seconds
            seen.timeout_note = (f"--timeout auto: {fmt_duration(budget.seconds)} = {budget.method} "
                                 "(counted from the start of the wait)")
        else:
            seen.deadline = seen.started + DEFAULT_TIMEOUT_S
            if initial:
                given = bool(opts.history or opts.history_loader)
                why = ("no history given (--history PATH or --store)" if not given
                       else "the live config is not known until the server_args line")
                until = " until then" if given else ""
            else:
                why, until = (seen.history_line or "no history of this config"), ""
            seen.timeout_note = f"--timeout auto: {why}; the default {fmt_duration(DEFAULT_TIMEOUT_S)}{until}"
        if opts.quiet:
            return
        if initial:
            self.printer.say(f"firedup wait: {watching(opts, seen.probed)}")
        self.printer.say(seen.timeout_note)

    def _announce_stages(self, now: float) -> None:
        """One line per change of stage that is news (no TTY), naming the line where it began."""
        run = self.seen.run
        if run is None or run.first_ts is None:
            return
        if self.stages.restarted(run) and not self.opts.quiet:
            self.printer.say(f"note: a new startup begins at line {run.first_line} (the server restarted)")
        for line in self.stages.news(run, self.seen.fmt, self.seen.elapsed_log(now), self.seen.history):
            if not (self.opts.quiet or self.tty):
                self.printer.say(line)

    # -- decisions ----------------------------------------------------------------------------------

    def _decide(self, now: float) -> int | None:
        """One pass: what was seen (`_observation`), the decision on it (`live.decide`), and the
        printer's words for it; the exit code once the wait is over."""
        obs = self._observation(now)
        d = decide(obs)
        if d.verdict == DRAIN:  # the stream closed: its rest is read, then it is judged whole
            self.printer.tell(d.first, self.seen)
            self._final_drain(now)
            obs = replace(self._observation(now), drained=True)
            d = decide(obs)
        self.printer.tell(d.first, self.seen)
        if d.verdict in BEFORE_TELEMETRY:
            if d.verdict == CRASHED and not d.gone:  # (a process gone had the log read to its end)
                self._final_drain(now)
            return self._conclude(d, now)
        self._read_telemetry(now, obs.log_ready or obs.url_ok)
        self.printer.tell(d.warnings, self.seen)
        if d.over and d.verdict != TIMED_OUT:
            return self._conclude(d, now)
        self._check_stall(now)
        self._inspect(now)
        if d.verdict != TIMED_OUT:
            return None
        # the process tree looked at once more, now: whether the wait timed out while busy or stuck
        obs = replace(obs, activity=self._inspect(now, force=True))
        return self._conclude(decide(obs), now)

    def _conclude(self, d: Decision, now: float) -> int:
        """The verdict said, on what the process tree showed too; after a READY, the engine's own
        figures (given a few seconds more to come)."""
        self._apply_observed()
        code = self.printer.conclude(d, self.seen, now)
        if d.verdict in (READY, READY_URL):
            if self.seen.telemetry is None and self.telemetry_reader is not None:
                self.seen.telemetry = self.telemetry_reader.result(wait=TELEMETRY_WAIT_S)
            self.printer.telemetry(self.seen)
        return code

    def _observation(self, now: float) -> Observation:
        """What the wait has seen at `now`, gathered into its `SoFar` and handed to the decision:
        the --pid process looked at (every half second; once it is gone, the log is read to its
        end first), the crash and ready lines timed."""
        seen = self.seen
        pid_gone = False
        if self.opts.pid is not None and now - self.pid_checked >= 0.5:
            self.pid_checked = now
            if not self._pid_alive():
                self._final_drain(now)
                pid_gone = True
        log, run = self.log, seen.run
        seen.fmt, seen.events = log.fmt, log.events
        seen.lines, seen.log_began, seen.partial_progress = log.lines, log.began, log.partial_progress
        seen.last_growth, seen.log_exists = log.follower.last_growth, log.follower.exists
        crashed = run is not None and run.crash is not None and (run.outcome == "crashed" or run.crash.after_ready)
        if not crashed:
            seen.crash_seen_at = None
        elif seen.crash_seen_at is None:
            seen.crash_seen_at = now
        if self.prober is not None:
            seen.probe, seen.probe_counts = self.prober.snapshot()
            *seen.probe_earlier, (seen.probed, _) = self.prober.answers()
        log_ready = run is not None and run.outcome == "ready"
        if log_ready and seen.ready_seen_at is None:
            seen.ready_seen_at = now
        url_ok = seen.probe is not None and seen.probe.status == 200
        # read only where it decides: a 200 while the log is not ready, after lines of this start
        needed = url_ok and not log_ready and not (seen.log_name is not None and seen.lines == 0)
        return Observation(
            now, run, log=seen.log_name is not None, lines=seen.lines, informative=needed and seen.informative(),
            fatal_after_crash=crashed and seen.fatal_after_crash(), last_growth=seen.last_growth,
            crash_seen_at=seen.crash_seen_at, pid=self.opts.pid is not None, pid_gone=pid_gone, pid_ran=self.pid_ran,
            stream_ended=log.stream_ended, url=self.prober is not None, probe=seen.probe,
            ready_seen_at=seen.ready_seen_at, http_open_at=seen.http_open_at, url_grace=self.opts.url_grace,
            deadline=seen.deadline, activity=seen.activity, once=self.once,
            named=self.opts.pid is not None and seen.watch_pid == self.opts.pid)

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
            self.seen.pid_reused = True
            return False
        return True

    # -- the process tree and the engine's own figures -------------------------------------------

    def _watch(self, pid: int, source: str) -> None:
        self.watch = TreeWatch(pid, self.procfs, self.make_gpu())
        self.seen.watch_pid = pid
        if source != f"pid {pid}" and not self.opts.quiet:
            self.printer.say(f"note: watching the process tree of pid {pid} every second ({source})")

    def _inspect(self, now: float, force: bool = False) -> Activity | None:
        """What the process tree does, looked at every second from the start whatever the log
        does (`TreeWatch.tick`); a settled change said once (no TTY), shown on the status line (TTY)."""
        watch, seen = self.watch, self.seen
        if watch is None:
            return None
        model = seen.run.config.get("model_path") if seen.run is not None else None
        dirs = (str(model),) if isinstance(model, str) and model.startswith("/") else ()
        if watch.tick(now, seen.current_stage(), dirs, force=force):
            seen.activity = watch.current
            self._observe(now, seen.activity)
            gpu = watch.gpu
            if gpu is not None and gpu.off is not None and gpu.source is not None:  # it answered before: a wedged driver
                self.printer.note_once("gpu-off", f"{gpu.off}; the GPUs are no longer consulted")
        news = None if force else watch.news()
        if news is not None and not self.opts.quiet and not self.tty and news.kind != "gone":
            last = self.log.follower.last_growth if seen.log_name is not None else None
            silent = now - (last if last is not None else seen.started)
            inspect_after = min(self.opts.inspect_after, self.opts.stall_after if self.opts.stall_after is not None
                                else math.inf)
            lead = f"{self.printer.silence_text(seen, now, silent)}; " if silent >= inspect_after else ""
            self.printer.say(f"note: {lead}process tree of pid {seen.watch_pid}: {news}")
        return seen.activity

    def _observe(self, now: float, activity: Activity | None) -> None:
        """Adds a look's verdict to the classification timeline: the stretch it continues (same
        class, same phase, looks close together), else a new one."""
        if activity is None or activity.kind == "gone":
            return
        seen = self.seen
        wall = seen.clock.wall(now)
        phase = seen.current_stage() if seen.run is not None else None
        last = seen.observed[-1] if seen.observed else None
        if last is not None and last.kind == activity.kind and last.phase == phase \
                and wall - last.until <= OBSERVED_GAP_S:
            last.until = wall
            last.compilers = sorted({*last.compilers, *activity.compilers})
            for item in activity.evidence:
                if item not in last.evidence and len(last.evidence) < 6:
                    last.evidence.append(item)
            return
        seen.observed.append(Stretch(activity.kind, activity.text, wall, wall, phase, list(activity.evidence),
                                     list(activity.compilers)))
        del seen.observed[:-500]  # a wait of hours keeps its newest stretches

    def _apply_observed(self) -> None:
        """What the process tree did joins the run's cache verdicts (compilers inside graph
        capture: a cold kernel JIT there)."""
        seen = self.seen
        if seen.run is not None and seen.fmt is not None and seen.observed and seen.clock.zone is not None:
            observed_caches(seen.run, seen.observed_on_log_clock(), seen.fmt)

    def _pid_from_log(self) -> None:
        """The server pid a local log names (uvicorn's `Started server process [N]`), when no
        --pid was given: only a process of this machine that runs Python."""
        run = self.seen.run
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
        seen = self.seen
        if not self.opts.telemetry or not self.opts.url or seen.telemetry is not None:
            return
        health = seen.health()
        spec = health.telemetry if health is not None else None
        if spec is None:
            return
        open_now = seen.http_open_at is not None and spec.served_while_starting
        if not (ready or open_now):
            return
        if self.telemetry_reader is None:
            config = seen.run.all_config if seen.run is not None else {}
            self.telemetry_reader = TelemetryReader(self.opts.url, spec, seen.version_pick(), config)
            self.telemetry_reader.start()
        found = self.telemetry_reader.result()
        if found is not None:
            seen.telemetry = found
            if not self.opts.quiet and not self.tty:  # the figures themselves: once, in the summary
                self.printer.say(f"engine telemetry read from {found.source} ({len(found.phases)} figures)")

    def _check_stall(self, now: float) -> None:
        seen = self.seen
        run = seen.run
        last = self.log.follower.last_growth
        if run is None or last is None or run.outcome != "incomplete":
            return
        stage = seen.current_stage() or "launch"
        if self.opts.stall_after is not None:
            threshold, why = self.opts.stall_after, f"--stall-after {self.opts.stall_after:g} s"
        else:
            found = seen.history.stall_threshold(stage)
            threshold, why = found if found is not None else (
                DEFAULT_STALL_S, f"no history for this phase; the default is {fmt_duration(DEFAULT_STALL_S)}")
        silent = now - last
        if silent < threshold or self.stall_warned_for == last:
            return
        self.stall_warned_for = last
        culprits = STALL_CULPRITS.get(stage.removeprefix("draft."), _DEFAULT_CULPRITS)
        progress = seen.progress()
        at = f" at {progress}" if progress else ""
        activity = self._inspect(now, force=self.watch is not None and not self.watch.samples)
        tree = f" Process tree of pid {seen.watch_pid}: {activity}." if activity is not None else ""
        say, style = self.printer.say, self.printer.style
        say(style(f"warning: stall? no log output for {fmt_duration(silent)} in {stage}{at} ({why}). "
                  f"Usual culprits in {stage}: {culprits}.{tree}", fg="yellow"))


def watching(opts: WaitOptions, probed: str | None) -> str:
    """`following server.log; probing URL every 1 s (status code only); watching pid N`."""
    parts = []
    if opts.log_stream is not None:
        parts.append("reading the log from standard input")
    elif opts.log_name is not None:
        parts.append(f"following {opts.log_name}" + (" from its current end" if opts.from_end else ""))
    if opts.url:
        parts.append(f"probing {probed or opts.url} every {opts.probe_interval:g} s (status code only)")
    if opts.pid:
        parts.append(f"watching pid {opts.pid}" + (" and its process tree" if opts.inspect else ""))
    return "; ".join(parts)


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


__all__ = ["Waiter", "wait", "watching"]

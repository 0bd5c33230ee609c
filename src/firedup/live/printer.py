"""What `firedup wait` says: its notes and warnings on stderr as the start-up goes, the status
line a terminal redraws, and the verdict on stdout (fitted to the width like every line: its
first line is the answer, `READY in 2 min 05 s ...`, for `head -1`; --record keeps it whole). `Waiter` decides (`live.decide`); the `Printer` words each
`Decision` from what the wait has seen, and nothing it prints changes what is decided.
"""

from __future__ import annotations

import collections
import math
import re
import shutil
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TextIO

from firedup.core.health import NOT_READINESS, HealthSemantics, advice, ready_probe
from firedup.core.units import fmt_duration, fmt_offset
from firedup.formats.base import opens_at
from firedup.formats.vocab import HTTP_RUNNING, READY
from firedup.live.activity import Activity
from firedup.live.decide import (
    CRASHED,
    DIED,
    DIED_READY,
    LOG_ENDED,
    NO_PROCESS,
    READY_URL,
    STREAM_ENDED,
    TIMED_OUT,
    URL_AFTER_READY,
    URL_BEFORE_LOG,
    URL_EARLY,
    URL_NEVER_READY,
    URL_REDIRECT,
    URL_REFUSED_OPEN,
    WEAK_CRASH,
    WEAK_CRASH_QUIET_S,
    Decision,
    Observation,
)
from firedup.live.probe import ProbeResult, is_loopback
from firedup.live.telemetry import Telemetry, flatten
from firedup.render.text import timeline_text
from firedup.timeline.run import Run

if TYPE_CHECKING:
    from firedup.live.wait import Waiter

TELEMETRY_WAIT_S = 3.0  # at the verdict, how long the engine's figures may still take to come
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Printer:
    """Everything `wait` writes, from the state of its `Waiter` (`w`)."""

    def __init__(self, w: Waiter, out: TextIO, err: TextIO, tty: bool, style: Callable[..., str],
                 width: int | None) -> None:
        self.w = w
        self.out = out
        self.err = err
        self.tty = tty
        self.style = style
        self.width = width  # the terminal's, lines are fitted to it; None: as they are
        self.headline: str | None = None  # the verdict's first line, for --record
        self.warned: set[str] = set()
        self.status_text = ""
        self.status_at = 0.0
        self.stream_end_said = False

    # -- output helpers ---------------------------------------------------------------------

    def clear_status(self) -> None:
        if self.tty and self.status_text:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self.status_text = ""

    def fit(self, text: str) -> str:
        """Lines no wider than the terminal ($COLUMNS, 80 when piped: a CI log), wrapped at spaces."""
        from firedup.core.units import fit_lines

        return fit_lines(text, self.width)

    def say(self, text: str) -> None:
        """A line on stderr that stays (warnings, notes, phase changes)."""
        self.clear_status()
        print(self.fit(text), file=self.err, flush=True)

    def warn(self, key: str, text: str) -> None:
        if key in self.warned:
            return
        self.warned.add(key)
        self.say(self.style(f"warning: {text}", fg="yellow"))

    def report(self, text: str) -> None:
        self.clear_status()
        if self.headline is None:  # the verdict, whole for --record; its first line the answer (head -1)
            self.headline = _ANSI.sub("", text)
        print(self.fit(text), file=self.out, flush=True)

    # -- warnings, as the decision names them ------------------------------------------------

    def tell(self, keys: tuple[str, ...], seen: Observation) -> None:
        """The warnings (and notes) a decision names, each said once."""
        for key in keys:
            self._TELL[key](self, seen)

    def _weak_crash(self, seen: Observation) -> None:
        assert seen.run is not None and seen.run.crash is not None
        line = seen.run.crash.line
        self.warn(f"weak-crash-{line}",
                  f"a traceback at line {line} and no startup progress since; if the log stays "
                  f"silent for {fmt_duration(WEAK_CRASH_QUIET_S)} firedup takes it as a crash")

    def _stream_ended(self, seen: Observation) -> None:
        if not self.stream_end_said:
            self.stream_end_said = True
            self.say("note: the log stream ended (its writer closed it); the URL and the process decide from now")

    def _url(self) -> str | None:
        """The URL probed now (a base URL moves on from a readiness path that does not exist)."""
        w = self.w
        return w.prober.url if w.prober else w.opts.url

    def _redirect(self, seen: Observation) -> None:
        assert seen.probe is not None
        self.warn("url-redirect", f"{self._url()} answers "
                                  f"{seen.probe.describe()}: a redirect is not readiness (a login page? an ingress's "
                                  "default backend?); probe the server's own address and health path")

    def _url_before_log(self, seen: Observation) -> None:
        # a 200 before the run followed printed anything: an older server still on the port
        self.warn("url-before-log", f"{self._url()} answers 200 "
                                    f"but {self.w.log_name} has no line of this startup yet: another "
                                    "process answers there (an older server still on the port?). "
                                    "Waiting for the log (without --log the URL alone decides).")

    def _url_early(self, seen: Observation) -> None:
        """The URL answers 200 while the log says the server is not ready."""
        run = self.w.run
        health = self.w._health()
        engine = self.w.fmt.display if self.w.fmt else "the server"
        url = self.w.opts.url or ""
        path = urllib.parse.urlsplit(url).path or "/"
        stage = self.w.current_stage()
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
        if run is not None and self.w.fmt is not None and self.w.fmt.serving.version_guess is not None:
            events = [e for e in self.w.events if run.first_line is not None and e.line >= run.first_line]
            version = self.w.fmt.serving.version_guess(events, run.all_config, run.config_complete)
            if version.low or version.high:
                guess = f" This log looks like {engine} {version.describe()}."
            probe = ready_probe(self.w.fmt.serving.readiness, version)  # the table the budget snippets use too
            if probe is not None and (version.low or version.high):
                guess += (f" Its readiness route is {probe.route}"
                          + ("; no route tells warm-up from ready there, only the log's ready line" if
                             not probe.http_is_enough else "") + ".")
        self.warn("url-early-health",
                  f"{url} answered 200 while the log is still in {stage} (no ready line yet). "
                  + _early_200_story(engine, health, guess))

    def _url_after_ready(self, seen: Observation) -> None:
        got = seen.probe.describe() if seen.probe is not None else "no answer yet"
        grace = self.w.opts.url_grace
        self.warn("url-after-ready", f"the log says ready but {self.w.opts.url} gets: {got}; "
                                     + (f"giving it {fmt_duration(grace)} after the ready line" if math.isfinite(grace)
                                        else "waiting for it (--url-grace never)"))

    def _url_refused_open(self, seen: Observation) -> None:
        assert seen.probe is not None
        self.warn("url-refused-open", f"the log says the server is listening ({self._log_url_text()}) but "
                                      f"{self.w.opts.url} gets: {seen.probe.describe()}. {self._url_mismatch()}")

    _TELL: ClassVar[dict[str, Callable[[Printer, Observation], None]]] = {
        WEAK_CRASH: _weak_crash, STREAM_ENDED: _stream_ended, URL_REDIRECT: _redirect,
        URL_BEFORE_LOG: _url_before_log, URL_EARLY: _url_early, URL_AFTER_READY: _url_after_ready,
        URL_REFUSED_OPEN: _url_refused_open,
    }

    def _log_url_text(self) -> str:
        run = self.w.run
        running = run.milestone(HTTP_RUNNING) if run is not None else None
        if running is not None and running.fields.get("url"):
            return f"line {running.line}: {running.fields['url']}"
        return "no URL in the log"

    def _url_mismatch(self) -> str:
        """Why the probed URL probably is the wrong one, from what the log says it serves."""
        url = self.w.opts.url or ""
        probed = urllib.parse.urlsplit(url)
        run = self.w.run
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
            elif served.hostname in ("127.0.0.1", "localhost") and not is_loopback(probed.hostname or ""):
                base = (f"the server listens on {served.hostname} only ({running.fields['url']}): it cannot be "
                        f"reached as {probed.hostname}; start it with --host 0.0.0.0")
            else:
                base = (f"the port matches the log ({running.fields['url']}); the host {probed.hostname} may be "
                        "another machine or container, or the path is wrong")
        probe = self.w.prober.last if self.w.prober else None
        if probe is not None and probe.status == 404:
            health = self.w._health()
            base += f"; {path} does not exist there (404)" + (f": {advice(health)}" if health else "")
        return base

    # -- the verdict -----------------------------------------------------------------------------

    def conclude(self, d: Decision, seen: Observation, counts: collections.Counter[str]) -> int:
        """The verdict's lines on stdout; the exit code."""
        assert d.code is not None
        verdict = d.verdict
        if verdict == CRASHED:
            if d.gone:
                self.w._apply_observed()
            self._crashed(gone=f"; process {self.w.opts.pid} is gone" if d.gone else "")
        elif verdict in (DIED, DIED_READY, NO_PROCESS):
            self.w._apply_observed()
            {DIED: self._died, DIED_READY: self._died_ready, NO_PROCESS: self._no_process}[verdict]()
        elif verdict == LOG_ENDED:
            self._log_ended()
        elif verdict == URL_NEVER_READY:
            self._url_never_ready(seen.probe, counts)
        elif verdict == TIMED_OUT:
            self._timed_out(seen.now, d, seen.activity, counts)
        else:
            self._ready(seen.probe, url_only=verdict == READY_URL)
        return d.code

    def _ready(self, url_note: ProbeResult | None, url_only: bool = False) -> None:
        self.w._apply_observed()
        run = self.w.run
        waited = fmt_duration(self.w.now() - self.w.started)
        if url_only:
            where = ("no log given" if self.w.log_name is None
                     else f"the log {self.w.log_name} shows no startup lines" if run is None
                     else f"the log {self.w.log_name} shows no startup progress (log level above INFO?)")
            url = self.w.prober.url if self.w.prober is not None else self.w.opts.url
            self.report(self.style(f"READY: {url} answered 200 ({where}; waited {waited})",
                                   fg="green", bold=True))
            self._report_telemetry()
            return
        assert run is not None
        total = fmt_duration(run.seconds_to_end)
        ready = run.milestone(READY)
        line = f" (line {ready.line})" if ready else ""
        url = f"; {self.w.opts.url} answered 200" if url_note is not None else ""
        launch = ""
        if self.w.clock.measured(self.w.run) and run.launch_to_ready is not None:
            launch = f", {fmt_duration(run.launch_to_ready)} from launch ({self.w.clock.gap_text(run)})"
        self.report(self.style(f"READY in {total} by the log's clock{line}{launch}{url}; waited {waited}", fg="green",
                               bold=True))
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))
        self._report_telemetry()

    def _crashed(self, gone: str = "") -> None:
        self.w._apply_observed()
        run = self.w.run
        assert run is not None and run.crash is not None
        crash = run.crash
        # the time to the crash as every view states it (`Run.seconds_to_end`; a crash after ready: its own)
        when = ("after its ready line" if crash.after_ready
                else f"in {crash.phase or 'an unknown phase'} after {fmt_duration(run.seconds_to_end)}")
        self.report(self.style(f"CRASHED ({crash.category}) {when}, line {crash.line} of {self.w.log_name}{gone}",
                               fg="red", bold=True))
        self.report(f"  error: {crash.message}")
        if crash.hint:
            self.report(f"  hint:  {crash.hint}")
        self.report("")
        # the verdict, the error and the hint are said: the timeline under them does not repeat them
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False, crash=False))

    def _died_ready(self) -> None:
        run = self.w.run
        assert run is not None
        ready = run.milestone(READY)
        text = f"DIED: process {self.w.opts.pid} is gone after the log's ready line (line {ready.line if ready else '?'})"
        if self.w.opts.url:
            text += f", before {self.w.opts.url} answered 200"
        self.report(self.style(text, fg="red", bold=True))
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _where_it_stopped(self) -> str:
        run = self.w.run
        stage = self.w.current_stage() if run is not None else None
        return (f"the log stops in {stage} after {fmt_duration(run.seconds_to_end)}" if run is not None
                else f"the log {self.w.log_name} shows no startup" if self.w.log_name else "no log given")

    def _no_process(self) -> None:
        self.report(self.style(f"NO PROCESS: pid {self.w.opts.pid} was not running when the wait began (a wrong pid, "
                               f"or it exited before); {self._where_it_stopped()}", fg="red", bold=True))
        self.report("  hint:  give the server's own pid: `$!` right after starting it in the background")
        self._report_last_lines()

    def _died(self) -> None:
        run = self.w.run
        reused = " (its pid now belongs to another process)" if self.w.pid_reused else ""
        self.report(self.style(f"DIED: process {self.w.opts.pid} is gone{reused} before the server was ready; "
                               f"{self._where_it_stopped()}, with no error line", fg="red", bold=True))
        launched = self.w.clock.since_launch(self.w.now())
        if launched is not None:
            self.report(f"  launched {fmt_duration(launched)} ago" + (
                f", {self.w.clock.gap_text(run)}" if run is not None and self.w.clock.measured(self.w.run) else ""))
        self.report("  hint:  killed by a signal? The OS OOM killer leaves no log line: check "
                    "`dmesg -T | grep -i oom` and the container's exit code (137 = SIGKILL)")
        self._report_last_lines()
        if run is not None:  # the phases it went through, as `firedup timeline` shows them (its verdict said)
            self.report("")
            self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _log_ended(self) -> None:
        run = self.w.run
        stage = self.w.current_stage() if run is not None else None
        where = f"in {stage} after {fmt_duration(run.seconds_to_end)}" if run is not None else "before any startup line"
        self.report(self.style(f"LOG ENDED: standard input closed {where}, before the server was ready",
                               fg="red", bold=True))
        self.report("  hint:  the container or process writing the log is gone (`kubectl logs -f` ends with it): "
                    "check its exit code and `kubectl describe pod`")
        self._report_last_lines()

    def _url_never_ready(self, probe: ProbeResult | None, counts: collections.Counter[str]) -> None:
        run = self.w.run
        assert run is not None
        got = probe.describe() if probe is not None else "no answer yet"
        ready = run.milestone(READY)
        seen = ", ".join(f"{what} x{n}" for what, n in counts.most_common(4)) or "no answer"
        self.report(self.style(f"URL NEVER READY: the log says ready (line {ready.line if ready else '?'}), but "
                               f"{self.w.opts.url} did not answer 200 in the {fmt_duration(self.w.opts.url_grace)} "
                               "after it", fg="red", bold=True))
        self.report(f"  probed {self.w.opts.url}: {seen}; last: {got}")
        self.report(f"  {self._url_mismatch()}")
        self.report("")
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _timed_out(self, now: float, d: Decision, activity: Activity | None, counts: collections.Counter[str]) -> None:
        w = self.w
        waited = now - w.started
        how = "" if not d.judged else " while busy" if d.busy else " while stuck"
        witnesses = [who for who in (w.log_name, w.prober.url if w.prober else None,
                                     f"pid {w.opts.pid}" if w.opts.pid else None) if who]
        self.report(self.style(f"TIMED OUT{how} after {fmt_duration(waited)} waiting for {' and '.join(witnesses)}",
                               fg="red", bold=True))
        self.report(f"  limit: {w.timeout_note}")
        if w.log_name is not None:
            self._where_it_is(now)
        self._history_then(now, waited)
        if w.opts.url:
            seen = ", ".join(f"{what} x{n}" for what, n in counts.most_common(4)) or "no answer yet"
            self.report(f"  {w.prober.url if w.prober else w.opts.url}: {seen}")
        last = w.follower.last_growth
        if w.log_name is not None and last is not None and now - last >= 1:
            self.report(f"  silent: no log output for {fmt_duration(now - last)}")
        if activity is not None:
            self.report(f"  process tree of pid {w.watch_pid}: {activity}")
            if not d.busy:
                self.report("  hint:  nothing in the tree works: check the other ranks or nodes (NCCL_DEBUG=INFO), "
                            "`py-spy dump --pid PID` for where it waits, and `dmesg` for a hung GPU")
        self._report_last_lines()

    def _where_it_is(self, now: float) -> None:
        """The phase the run has reached and how long it has run (a timeout's lines)."""
        w = self.w
        run = w.run
        if run is None:
            state = "has not appeared" if not w.follower.exists else "shows no server startup"
            launched = w.clock.since_launch(now)
            self.report(f"  the log {state}" + (f" (pid {w.opts.pid} was launched {fmt_duration(launched)} ago)"
                                                 if launched is not None else ""))
            return
        stage = w.current_stage()
        progress = w.progress()
        in_stage = w._in_stage(now, stage)
        since = f" for {fmt_duration(in_stage)}" if in_stage is not None else ""
        detail = f" ({progress})" if progress else ""
        usual = w.history.typical_stage(stage) if stage else None
        usual_text = f"; it usually takes {fmt_duration(usual)}" if usual is not None else ""
        self.report(f"  phase reached: {stage}{detail}{since}{usual_text}")
        elapsed = w.elapsed_log(now)
        launched = w.clock.since_launch(now)
        if elapsed is not None and launched is not None and w.clock.measured(w.run):
            self.report(f"  elapsed: {fmt_duration(launched)} since launch ({w.clock.gap_text(run)}), "
                        f"{fmt_duration(elapsed)} since the log's first line")
        elif elapsed is not None:
            self.report(f"  elapsed: {fmt_duration(elapsed)} since the log's first line")

    def _history_then(self, now: float, waited: float) -> None:
        w = self.w
        if w.budget is not None:
            verdict = "over" if (w.elapsed_log(now) or waited) > w.budget.slowest else "within"
            self.report(f"  history: budget {fmt_duration(w.budget.seconds)} ({w.budget.method}); "
                        f"this run is {verdict} the slowest seen")
        elif w.history_line:
            self.report(f"  history: {w.history_line}")
        else:
            self.report("  history: none (give earlier logs of this config with --history to compare)")

    def _report_last_lines(self) -> None:
        if not self.w.last_lines:
            return
        self.report(f"  last lines of {self.w.log_name}:")
        for number, text in self.w.last_lines:
            shown = text if len(text) <= 200 else text[:199] + "…"
            self.report(f"  {number:>6}  {shown}")

    def _report_telemetry(self) -> None:
        found = self.w.telemetry
        if found is None and self.w.telemetry_reader is not None:
            found = self.w.telemetry = self.w.telemetry_reader.result(wait=TELEMETRY_WAIT_S)
        if found is None:
            return
        run = self.w.run
        health = self.w._health()
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

    # -- the status line (TTY) and the notes of a silence ---------------------------------------

    def status(self, now: float) -> str:
        run = self.w.run
        if self.w.log_name is None:
            return self._status_without_log(now)
        launched = self.w.clock.since_launch(now)
        if not self.w.follower.exists:
            return f"waiting for {self.w.log_name} to appear · {whole(now - self.w.started)}" + (
                f" · launched {whole(launched)} ago" if launched is not None else "")
        if run is None:
            return " · ".join([self._first_line_text(now), *([str(self.w.activity)] if self.w.activity else [])])
        if run.outcome == "ready" and self.w.prober is not None and self.w.ready_seen_at is not None:
            probe = self.w.prober.last
            return (f"the log says ready; {self.w.opts.url}: {probe.describe() if probe else '…'} · "
                    f"{whole(now - self.w.ready_seen_at)}"
                    + (f" of {whole(self.w.opts.url_grace)}" if math.isfinite(self.w.opts.url_grace) else ""))
        return " · ".join(self._status_parts(run, now, launched))

    def _status_parts(self, run: Run, now: float, launched: float | None) -> list[str]:
        """`cuda_graph batches 3/8 · +4:12 · ETA 40 s · url: HTTP 503 · silent 12 s · <the tree>`."""
        stage = self.w.current_stage() or "?"
        parts = [stage]
        progress = self.w.progress()
        if progress:
            parts[0] += f" {progress}"
        elapsed = self.w.elapsed_log(now)
        if elapsed is not None and launched is not None and self.w.clock.measured(run):
            parts.append(f"{fmt_offset(launched)} from launch (log {fmt_offset(elapsed)})")
        elif elapsed is not None:
            parts.append(fmt_offset(elapsed))
        in_stage = self.w._in_stage(now, stage)
        if self.w.history.n and in_stage is not None and elapsed is not None:
            remaining = self.w.history.remaining(stage, in_stage, elapsed)
            if remaining is not None:
                parts.append(f"ETA {whole(remaining)}" if remaining >= 1
                             else f"{whole(-remaining)} later than usual" if remaining <= -1 else "ETA any moment")
        if self.w.prober is not None:
            probe = self.w.prober.last
            parts.append(f"url: {probe.describe() if probe else '…'}")
        last = self.w.follower.last_growth
        if last is not None and now - last >= 10:
            parts.append(f"silent {whole(now - last)}")
        if self.w.activity is not None:
            parts.append(str(self.w.activity))
        return parts

    def _status_without_log(self, now: float) -> str:
        parts = [f"waiting · {whole(now - self.w.started)}"]
        if self.w.prober is not None:
            probe = self.w.prober.last
            parts.append(f"{self.w.prober.url}: {probe.describe() if probe else '…'}")
        if self.w.opts.pid is not None:
            launched = self.w.clock.since_launch(now)
            parts.append(f"pid {self.w.opts.pid}" + (f", launched {whole(launched)} ago" if launched is not None else ""))
        if self.w.activity is not None:
            parts.append(str(self.w.activity))
        return " · ".join(parts)

    def show_status(self, now: float) -> None:
        text = self.status(now)
        if text == self.status_text and now - self.status_at < 1.0:
            return
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        shown = text if len(text) <= width else text[: width - 1] + "…"
        self.err.write("\r\x1b[K" + shown)
        self.err.flush()
        self.status_text = shown
        self.status_at = now

    def silence_text(self, now: float, silent: float) -> str:
        """`no log output for 12 s in cuda_graph`; before the log's first line, `waiting for the
        server's first log line (launched 12 s ago)`."""
        if self.w.log_name is None:
            return f"after {whole(silent)}"
        if self.w.run is None:
            return self._first_line_text(now)
        stage = self.w.current_stage()
        return f"no log output for {whole(silent)}" + (f" in {stage}" if stage else "")

    def _first_line_text(self, now: float) -> str:
        launched = self.w.clock.since_launch(now)
        ago = f"launched {whole(launched)} ago" if launched is not None else f"waited {whole(now - self.w.started)}"
        if self.w.log_began:
            return f"the log has begun; waiting for a line that shows its engine ({ago})"
        return f"waiting for the server's first log line ({ago})"


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


def whole(seconds: float) -> str:
    """A duration for a line that redraws: whole seconds, so it does not flicker."""
    return fmt_duration(float(max(0, round(seconds))) or 0.0) if seconds >= 1 else "0 s"


__all__ = ["TELEMETRY_WAIT_S", "Printer", "whole"]

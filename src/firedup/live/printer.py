"""What `firedup wait` says: its notes and warnings on stderr as the start-up goes, the status
line a terminal redraws, and the verdict on stdout (fitted to the width like every line: its
first line is the answer, `READY in 2 min 05 s ...`, for `head -1`; --record keeps it whole).
The loop (`live.wait`) decides (`live.decide`); the `Printer` words each `Decision` from what the
wait has seen (`live.sofar.SoFar`), which it only reads.
"""

from __future__ import annotations

import collections
import math
import re
import shutil
import urllib.parse
from collections.abc import Callable
from typing import ClassVar, TextIO

from firedup.core.health import NOT_READINESS, HealthSemantics, advice, ready_probe
from firedup.core.units import fmt_duration, fmt_offset
from firedup.formats.base import opens_at
from firedup.formats.vocab import HTTP_RUNNING, READY
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
)
from firedup.live.probe import is_loopback
from firedup.live.sofar import SoFar
from firedup.live.telemetry import Telemetry, flatten
from firedup.render.text import timeline_text
from firedup.timeline.run import Run

TELEMETRY_WAIT_S = 3.0  # at the verdict, how long the engine's figures may still take to come
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Printer:
    """Everything `wait` writes, from what it has seen (`SoFar`) and the decision on it."""

    def __init__(self, out: TextIO, err: TextIO, tty: bool, style: Callable[..., str], width: int | None) -> None:
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

    def note_once(self, key: str, text: str) -> None:
        """A note said once per `key` (a wedged GPU driver, a log on another clock)."""
        if key not in self.warned:
            self.warned.add(key)
            self.say(f"note: {text}")

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

    def tell(self, keys: tuple[str, ...], seen: SoFar) -> None:
        """The warnings (and notes) a decision names, each said once."""
        for key in keys:
            self._TELL[key](self, seen)

    def _weak_crash(self, seen: SoFar) -> None:
        assert seen.run is not None and seen.run.crash is not None
        line = seen.run.crash.line
        self.warn(f"weak-crash-{line}",
                  f"a traceback at line {line} and no startup progress since; if the log stays "
                  f"silent for {fmt_duration(WEAK_CRASH_QUIET_S)} firedup takes it as a crash")

    def _stream_ended(self, seen: SoFar) -> None:
        if not self.stream_end_said:
            self.stream_end_said = True
            self.say("note: the log stream ended (its writer closed it); the URL and the process decide from now")

    def _redirect(self, seen: SoFar) -> None:
        assert seen.probe is not None
        self.warn("url-redirect", f"{(seen.probed or seen.url)} answers "
                                  f"{seen.probe.describe()}: a redirect is not readiness (a login page? an ingress's "
                                  "default backend?); probe the server's own address and health path")

    def _url_before_log(self, seen: SoFar) -> None:
        # a 200 before the run followed printed anything: an older server still on the port
        self.warn("url-before-log", f"{(seen.probed or seen.url)} answers 200 "
                                    f"but {seen.log_name} has no line of this startup yet: another "
                                    "process answers there (an older server still on the port?). "
                                    "Waiting for the log (without --log the URL alone decides).")

    def _url_early(self, seen: SoFar) -> None:
        """The URL answers 200 while the log says the server is not ready."""
        run = seen.run
        health = seen.health()
        engine = seen.fmt.display if seen.fmt else "the server"
        url = seen.url or ""
        path = urllib.parse.urlsplit(url).path or "/"
        stage = seen.current_stage()
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
        if run is not None and seen.fmt is not None and seen.fmt.serving.version_guess is not None:
            version = seen.fmt.serving.version_guess(seen.run_events(), run.all_config, run.config_complete)
            if version.low or version.high:
                guess = f" This log looks like {engine} {version.describe()}."
            probe = ready_probe(seen.fmt.serving.readiness, version)  # the table the budget snippets use too
            if probe is not None and (version.low or version.high):
                guess += (f" Its readiness route is {probe.route}"
                          + ("; no route tells warm-up from ready there, only the log's ready line" if
                             not probe.http_is_enough else "") + ".")
        self.warn("url-early-health",
                  f"{url} answered 200 while the log is still in {stage} (no ready line yet). "
                  + _early_200_story(engine, health, guess))

    def _url_after_ready(self, seen: SoFar) -> None:
        got = seen.probe.describe() if seen.probe is not None else "no answer yet"
        self.warn("url-after-ready", f"the log says ready but {seen.url} gets: {got}; "
                                     + (f"giving it {fmt_duration(seen.url_grace)} after the ready line"
                                        if math.isfinite(seen.url_grace) else "waiting for it (--url-grace never)"))

    def _url_refused_open(self, seen: SoFar) -> None:
        assert seen.probe is not None
        self.warn("url-refused-open", f"the log says the server is listening ({self._log_url_text(seen)}) but "
                                      f"{seen.url} gets: {seen.probe.describe()}. {self._url_mismatch(seen)}")

    _TELL: ClassVar[dict[str, Callable[[Printer, SoFar], None]]] = {
        WEAK_CRASH: _weak_crash, STREAM_ENDED: _stream_ended, URL_REDIRECT: _redirect,
        URL_BEFORE_LOG: _url_before_log, URL_EARLY: _url_early, URL_AFTER_READY: _url_after_ready,
        URL_REFUSED_OPEN: _url_refused_open,
    }

    def _log_url_text(self, seen: SoFar) -> str:
        run = seen.run
        running = run.milestone(HTTP_RUNNING) if run is not None else None
        if running is not None and running.fields.get("url"):
            return f"line {running.line}: {running.fields['url']}"
        return "no URL in the log"

    def _url_mismatch(self, seen: SoFar) -> str:
        """Why the probed URL probably is the wrong one, from what the log says it serves."""
        url = seen.url or ""
        probed = urllib.parse.urlsplit(url)
        run = seen.run
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
        probe = seen.probe
        if probe is not None and probe.status == 404:
            health = seen.health()
            base += f"; {path} does not exist there (404)" + (f": {advice(health)}" if health else "")
        return base

    # -- the verdict -----------------------------------------------------------------------------

    def conclude(self, d: Decision, seen: SoFar, now: float) -> int:
        """The verdict's lines on stdout (the engine's figures after a READY are `telemetry`'s);
        the exit code."""
        assert d.code is not None
        verdict = d.verdict
        if verdict == CRASHED:
            self._crashed(seen, gone=f"; process {seen.pid} is gone" if d.gone else "")
        elif verdict == DIED:
            self._died(seen, now)
        elif verdict == DIED_READY:
            self._died_ready(seen)
        elif verdict == NO_PROCESS:
            self._no_process(seen)
        elif verdict == LOG_ENDED:
            self._log_ended(seen)
        elif verdict == URL_NEVER_READY:
            self._url_never_ready(seen)
        elif verdict == TIMED_OUT:
            self._timed_out(seen, now, d)
        else:
            self._ready(seen, now, url_only=verdict == READY_URL)
        return d.code

    def _ready(self, seen: SoFar, now: float, url_only: bool = False) -> None:
        run = seen.run
        waited = fmt_duration(now - seen.started)
        if url_only:
            where = ("no log given" if seen.log_name is None
                     else f"the log {seen.log_name} shows no startup lines" if run is None
                     else f"the log {seen.log_name} shows no startup progress (log level above INFO?)")
            url = seen.probed or seen.url
            self.report(self.style(f"READY: {url} answered 200 ({where}; waited {waited})",
                                   fg="green", bold=True))
            return
        assert run is not None
        total = fmt_duration(run.seconds_to_end)
        ready = run.milestone(READY)
        line = f" (line {ready.line})" if ready else ""
        url = f"; {seen.url} answered 200" if seen.probe is not None else ""
        launch = ""
        if seen.clock.measured(run) and run.launch_to_ready is not None:
            launch = f", {fmt_duration(run.launch_to_ready)} from launch ({seen.clock.gap_text(run)})"
        self.report(self.style(f"READY in {total} by the log's clock{line}{launch}{url}; waited {waited}", fg="green",
                               bold=True))
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _crashed(self, seen: SoFar, gone: str = "") -> None:
        run = seen.run
        assert run is not None and run.crash is not None
        crash = run.crash
        # the time to the crash as every view states it (`Run.seconds_to_end`; a crash after ready: its own)
        when = ("after its ready line" if crash.after_ready
                else f"in {crash.phase or 'an unknown phase'} after {fmt_duration(run.seconds_to_end)}")
        self.report(self.style(f"CRASHED ({crash.category}) {when}, line {crash.line} of {seen.log_name}{gone}",
                               fg="red", bold=True))
        self.report(f"  error: {crash.message}")
        if crash.hint:
            self.report(f"  hint:  {crash.hint}")
        self.report("")
        # the verdict, the error and the hint are said: the timeline under them does not repeat them
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False, crash=False))

    def _died_ready(self, seen: SoFar) -> None:
        run = seen.run
        assert run is not None
        ready = run.milestone(READY)
        text = f"DIED: process {seen.pid} is gone after the log's ready line (line {ready.line if ready else '?'})"
        if seen.url:
            text += f", before {seen.url} answered 200"
        self.report(self.style(text, fg="red", bold=True))
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _where_it_stopped(self, seen: SoFar) -> str:
        run = seen.run
        stage = seen.current_stage() if run is not None else None
        return (f"the log stops in {stage} after {fmt_duration(run.seconds_to_end)}" if run is not None
                else f"the log {seen.log_name} shows no startup" if seen.log_name else "no log given")

    def _no_process(self, seen: SoFar) -> None:
        self.report(self.style(f"NO PROCESS: pid {seen.pid} was not running when the wait began (a wrong pid, "
                               f"or it exited before); {self._where_it_stopped(seen)}", fg="red", bold=True))
        self.report("  hint:  give the server's own pid: `$!` right after starting it in the background")
        self._report_last_lines(seen)

    def _died(self, seen: SoFar, now: float) -> None:
        run = seen.run
        reused = " (its pid now belongs to another process)" if seen.pid_reused else ""
        self.report(self.style(f"DIED: process {seen.pid} is gone{reused} before the server was ready; "
                               f"{self._where_it_stopped(seen)}, with no error line", fg="red", bold=True))
        launched = seen.since_launch(now)
        if launched is not None:
            self.report(f"  launched {fmt_duration(launched)} ago" + (
                f", {seen.clock.gap_text(run)}" if run is not None and seen.clock.measured(run) else ""))
        self.report("  hint:  killed by a signal? The OS OOM killer leaves no log line: check "
                    "`dmesg -T | grep -i oom` and the container's exit code (137 = SIGKILL)")
        self._report_last_lines(seen)
        if run is not None:  # the phases it went through, as `firedup timeline` shows them (its verdict said)
            self.report("")
            self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _log_ended(self, seen: SoFar) -> None:
        run = seen.run
        stage = seen.current_stage() if run is not None else None
        where = f"in {stage} after {fmt_duration(run.seconds_to_end)}" if run is not None else "before any startup line"
        self.report(self.style(f"LOG ENDED: standard input closed {where}, before the server was ready",
                               fg="red", bold=True))
        self.report("  hint:  the container or process writing the log is gone (`kubectl logs -f` ends with it): "
                    "check its exit code and `kubectl describe pod`")
        self._report_last_lines(seen)

    def _url_never_ready(self, seen: SoFar) -> None:
        run = seen.run
        assert run is not None
        got = seen.probe.describe() if seen.probe is not None else "no answer yet"
        ready = run.milestone(READY)
        answers = _answers(seen.probe_counts, "no answer")
        self.report(self.style(f"URL NEVER READY: the log says ready (line {ready.line if ready else '?'}), but "
                               f"{seen.url} did not answer 200 in the {fmt_duration(seen.url_grace)} "
                               "after it", fg="red", bold=True))
        self.report(f"  probed {seen.url}: {answers}; last: {got}")
        self.report(f"  {self._url_mismatch(seen)}")
        self.report("")
        self.report(timeline_text(run, self.style, width=self.width or 80, verdict=False))

    def _timed_out(self, seen: SoFar, now: float, d: Decision) -> None:
        waited = now - seen.started
        how = "" if not d.judged else " while busy" if d.busy else " while stuck"
        self.report(self.style(f"TIMED OUT{how} after {fmt_duration(waited)} waiting for {' and '.join(seen.witnesses())}",
                               fg="red", bold=True))
        self.report(f"  limit: {seen.timeout_note}")
        if seen.log_name is not None:
            self._where_it_is(seen, now)
        self._history_then(seen, now, waited)
        if seen.url:
            for url, counts in seen.probe_earlier:  # each endpoint with its own answers, in the order probed
                self.report(f"  {url}: {_answers(counts, 'no answer')}")
            self.report(f"  {seen.probed or seen.url}: {_answers(seen.probe_counts, 'no answer yet')}")
        last = seen.last_growth
        if seen.log_name is not None and last is not None and now - last >= 1:
            self.report(f"  silent: no log output for {fmt_duration(now - last)}")
        if seen.activity is not None:
            self.report(f"  process tree of pid {seen.watch_pid}: {seen.activity}")
            if not d.busy:
                self.report("  hint:  nothing in the tree works: check the other ranks or nodes (NCCL_DEBUG=INFO), "
                            "`py-spy dump --pid PID` for where it waits, and `dmesg` for a hung GPU")
        self._report_last_lines(seen)

    def _where_it_is(self, seen: SoFar, now: float) -> None:
        """The phase the run has reached and how long it has run (a timeout's lines)."""
        run = seen.run
        if run is None:
            state = "has not appeared" if not seen.log_exists else "shows no server startup"
            launched = seen.since_launch(now)
            self.report(f"  the log {state}" + (f" (pid {seen.pid} was launched {fmt_duration(launched)} ago)"
                                                 if launched is not None else ""))
            return
        stage = seen.current_stage()
        progress = seen.progress()
        in_stage = seen.in_stage(now, stage)
        since = f" for {fmt_duration(in_stage)}" if in_stage is not None else ""
        detail = f" ({progress})" if progress else ""
        usual = seen.history.typical_stage(stage) if stage else None
        usual_text = f"; it usually takes {fmt_duration(usual)}" if usual is not None else ""
        self.report(f"  phase reached: {stage}{detail}{since}{usual_text}")
        elapsed = seen.elapsed_log(now)
        launched = seen.since_launch(now)
        if elapsed is not None and launched is not None and seen.clock.measured(run):
            self.report(f"  elapsed: {fmt_duration(launched)} since launch ({seen.clock.gap_text(run)}), "
                        f"{fmt_duration(elapsed)} since the log's first line")
        elif elapsed is not None:
            self.report(f"  elapsed: {fmt_duration(elapsed)} since the log's first line")

    def _history_then(self, seen: SoFar, now: float, waited: float) -> None:
        if seen.budget is not None:
            slowest = seen.budget.slowest_first_line or seen.budget.slowest  # first line to first line
            verdict = "over" if (seen.elapsed_log(now) or waited) > slowest else "within"
            self.report(f"  history: budget {fmt_duration(seen.budget.seconds)} ({seen.budget.method}); "
                        f"this run is {verdict} the slowest seen")
        elif seen.history_line:
            self.report(f"  history: {seen.history_line}")
        else:
            self.report("  history: none (give earlier logs of this config with --history to compare)")

    def _report_last_lines(self, seen: SoFar) -> None:
        if not seen.last_lines:
            return
        self.report(f"  last lines of {seen.log_name}:")
        for number, text in seen.last_lines:
            shown = text if len(text) <= 200 else text[:199] + "…"
            self.report(f"  {number:>6}  {shown}")

    def telemetry(self, seen: SoFar) -> None:
        """The engine's own start-up figures after a READY verdict, against the log's."""
        found = seen.telemetry
        if found is None:
            return
        run = seen.run
        health = seen.health()
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

    def status(self, seen: SoFar, now: float) -> str:
        run = seen.run
        if seen.log_name is None:
            return self._status_without_log(seen, now)
        launched = seen.since_launch(now)
        if not seen.log_exists:
            return f"waiting for {seen.log_name} to appear · {whole(now - seen.started)}" + (
                f" · launched {whole(launched)} ago" if launched is not None else "")
        if run is None:
            return " · ".join([self._first_line_text(seen, now), *([str(seen.activity)] if seen.activity else [])])
        if run.outcome == "ready" and seen.probed is not None and seen.ready_seen_at is not None:
            probe = seen.probe
            return (f"the log says ready; {seen.url}: {probe.describe() if probe else '…'} · "
                    f"{whole(now - seen.ready_seen_at)}"
                    + (f" of {whole(seen.url_grace)}" if math.isfinite(seen.url_grace) else ""))
        return " · ".join(self._status_parts(seen, run, now, launched))

    def _status_parts(self, seen: SoFar, run: Run, now: float, launched: float | None) -> list[str]:
        """`cuda_graph batches 3/8 · +4:12 · ETA 40 s · url: HTTP 503 · silent 12 s · <the tree>`."""
        stage = seen.current_stage() or "?"
        parts = [stage]
        progress = seen.progress()
        if progress:
            parts[0] += f" {progress}"
        elapsed = seen.elapsed_log(now)
        if elapsed is not None and launched is not None and seen.clock.measured(run):
            parts.append(f"{fmt_offset(launched)} from launch (log {fmt_offset(elapsed)})")
        elif elapsed is not None:
            parts.append(fmt_offset(elapsed))
        in_stage = seen.in_stage(now, stage)
        if seen.history.n and in_stage is not None and elapsed is not None:
            remaining = seen.history.remaining(stage, in_stage, elapsed)
            if remaining is not None:
                parts.append(f"ETA {whole(remaining)}" if remaining >= 1
                             else f"{whole(-remaining)} later than usual" if remaining <= -1 else "ETA any moment")
        if seen.probed is not None:
            probe = seen.probe
            parts.append(f"url: {probe.describe() if probe else '…'}")
        last = seen.last_growth
        if last is not None and now - last >= 10:
            parts.append(f"silent {whole(now - last)}")
        if seen.activity is not None:
            parts.append(str(seen.activity))
        return parts

    def _status_without_log(self, seen: SoFar, now: float) -> str:
        parts = [f"waiting · {whole(now - seen.started)}"]
        if seen.probed is not None:
            probe = seen.probe
            parts.append(f"{seen.probed}: {probe.describe() if probe else '…'}")
        if seen.pid is not None:
            launched = seen.since_launch(now)
            parts.append(f"pid {seen.pid}" + (f", launched {whole(launched)} ago" if launched is not None else ""))
        if seen.activity is not None:
            parts.append(str(seen.activity))
        return " · ".join(parts)

    def show_status(self, seen: SoFar, now: float) -> None:
        text = self.status(seen, now)
        if text == self.status_text and now - self.status_at < 1.0:
            return
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        shown = text if len(text) <= width else text[: width - 1] + "…"
        self.err.write("\r\x1b[K" + shown)
        self.err.flush()
        self.status_text = shown
        self.status_at = now

    def silence_text(self, seen: SoFar, now: float, silent: float) -> str:
        """`no log output for 12 s in cuda_graph`; before the log's first line, `waiting for the
        server's first log line (launched 12 s ago)`."""
        if seen.log_name is None:
            return f"after {whole(silent)}"
        if seen.run is None:
            return self._first_line_text(seen, now)
        stage = seen.current_stage()
        return f"no log output for {whole(silent)}" + (f" in {stage}" if stage else "")

    def _first_line_text(self, seen: SoFar, now: float) -> str:
        launched = seen.since_launch(now)
        ago = f"launched {whole(launched)} ago" if launched is not None else f"waited {whole(now - seen.started)}"
        if seen.log_began:
            return f"the log has begun; waiting for a line that shows its engine ({ago})"
        return f"waiting for the server's first log line ({ago})"


def _answers(counts: collections.Counter[str], none: str) -> str:
    """`HTTP 503 x12, connection refused x3`: the commonest answers of one endpoint."""
    return ", ".join(f"{what} x{n}" for what, n in counts.most_common(4)) or none


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

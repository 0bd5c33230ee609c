"""The decision of `firedup wait`: a pure function of what was seen so far (the log's run, the
URL's latest answer, the process, the clock) that says whether the wait is over, with which
verdict and exit code, and what is worth a warning meanwhile.

`Waiter` gathers an `Observation` on every pass of its loop, calls `decide`, and hands the
`Decision` to the printer (`live.printer`), which words it. Nothing here reads a file, a
socket or a clock, and nothing prints: tests build observations by hand (tests/test_decide.py).

The order of the questions is the order of precedence: a process gone, a crash that has
settled, a log stream that closed, then readiness (the log's ready line, the URL's 200 and
when they disagree), and last the deadline.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from firedup.errors import EXIT_CRASHED, EXIT_OK, EXIT_OTHER, EXIT_TIMEOUT, EXIT_TIMEOUT_STUCK
from firedup.live.activity import Activity
from firedup.live.options import URL_GRACE_S
from firedup.live.probe import ProbeResult
from firedup.timeline.run import Run

CRASH_QUIET_S = 1.0  # after a crash line, wait this long for the rest of the traceback
CRASH_SETTLE_MAX_S = 5.0
WEAK_CRASH_QUIET_S = 60.0  # a bare traceback is a crash only if the log then falls silent
URL_EARLY_WARNING_S = 10.0

# Verdicts: WAITING goes on watching; DRAIN reads what is left of a closed stream, then decides again.
WAITING = "waiting"
DRAIN = "drain"
READY = "ready"  # the log's ready line (and the URL's 200 where one is probed)
READY_URL = "ready-url"  # the URL's 200, the log showing no start-up progress to judge by
CRASHED = "crashed"  # the log's crash, settled: a fatal line, or a bare traceback and then silence
DIED = "died"  # the --pid process is gone before the log says ready
DIED_READY = "died-after-ready"  # ... after the log's ready line, before the URL answered 200
NO_PROCESS = "no-process"  # the --pid process was not running when the wait began
LOG_ENDED = "log-ended"  # the log's stream closed, and nothing else is watched
URL_NEVER_READY = "url-never-ready"  # the log says ready; the URL did not answer 200 within the grace
TIMED_OUT = "timed-out"

# Verdicts decided before the engine's own figures are read (the wait ends on what the log and
# the process showed).
BEFORE_TELEMETRY = frozenset({DRAIN, CRASHED, DIED, DIED_READY, NO_PROCESS, LOG_ENDED})

# What is worth a warning (each said once): `Decision.first` ...
WEAK_CRASH = "weak-crash"  # a bare traceback: a crash only if the log falls silent
STREAM_ENDED = "stream-ended"  # the stream closed; the URL and the process decide
URL_REDIRECT = "url-redirect"  # a redirect is not readiness
# ... and `Decision.warnings`.
URL_BEFORE_LOG = "url-before-log"  # a 200 before the log has a line: another server on the port
URL_EARLY = "url-early"  # a 200 while the log is still starting
URL_AFTER_READY = "url-after-ready"  # the log says ready, the URL does not answer 200 yet
URL_REFUSED_OPEN = "url-refused-open"  # the log says the port is open, the URL is refused


@dataclass(frozen=True)
class Observation:
    """What the wait has seen at `now` (seconds on its monotonic clock)."""

    now: float
    run: Run | None = None  # the log's run so far (the newest start-up)
    log: bool = True  # a log is followed
    lines: int = 0  # lines of the followed start-up read so far
    informative: bool = False  # the log shows the start-up's progress (more than one stage)
    fatal_after_crash: bool = False  # a fatal line at or after the crash's line (else a bare traceback)
    last_growth: float | None = None  # when the log last grew (None: not yet)
    crash_seen_at: float | None = None  # when the crash was first seen
    pid: bool = False  # --pid given
    pid_gone: bool = False  # ... and found gone (not running, a zombie, or its pid reused)
    pid_ran: bool = True  # ... it was running when the wait began
    stream_ended: bool = False  # the log's stream closed
    drained: bool = False  # ... and what was left of it has been read
    once: bool = False  # `--timeout 0`: the log as read in the one check is all there is to judge
    url: bool = False  # a URL is probed
    probe: ProbeResult | None = None  # its latest answer
    ready_seen_at: float | None = None  # when the log's ready line was first seen
    http_open_at: float | None = None  # when the log said the HTTP port opened
    url_grace: float = URL_GRACE_S
    deadline: float | None = None
    activity: Activity | None = None  # what the process tree did, as last looked at
    named: bool = False  # the tree looked at is the --pid process's (a pid read from the log may be reused)

    @property
    def crashed(self) -> bool:
        run = self.run
        return run is not None and run.crash is not None and (run.outcome == "crashed" or run.crash.after_ready)

    @property
    def log_ready(self) -> bool:
        return self.run is not None and self.run.outcome == "ready"

    @property
    def url_ok(self) -> bool:
        return self.probe is not None and self.probe.status == 200


@dataclass(frozen=True)
class Decision:
    verdict: str
    code: int | None = None  # the exit code once the wait is over
    first: tuple[str, ...] = ()  # warnings said before the engine's figures are read
    warnings: tuple[str, ...] = ()  # warnings said after them
    gone: bool = False  # CRASHED: and the --pid process is gone too
    judged: bool = False  # TIMED_OUT: the named process's tree was looked at
    busy: bool = True  # TIMED_OUT: it was working (else stuck: EXIT_TIMEOUT_STUCK)

    @property
    def over(self) -> bool:
        return self.code is not None


def decide(seen: Observation) -> Decision:
    """The verdict on what was seen (see the module's docstring for the order of the questions)."""
    if seen.pid_gone:
        return _process_gone(seen)
    first: tuple[str, ...] = ()
    if not seen.drained:
        # one check (`--timeout 0`) reads no more: its traceback is judged whole, as a stream's end is
        settled, first = _crash(_read_whole(seen) if seen.once else seen)
        if settled:
            return Decision(CRASHED, EXIT_CRASHED, first)
        if seen.stream_ended:
            return Decision(DRAIN, first=first)
    elif seen.stream_ended:
        settled, first = _crash(_read_whole(seen))
        if settled:
            return Decision(CRASHED, EXIT_CRASHED, first)
        if not (seen.log_ready and not seen.url):
            if not (seen.url or seen.pid):
                return Decision(LOG_ENDED, EXIT_CRASHED)
            first = (*first, STREAM_ENDED)
    if seen.probe is not None and seen.probe.redirect:
        first = (*first, URL_REDIRECT)
    return _readiness(seen, first)


def _process_gone(seen: Observation) -> Decision:
    if seen.crashed:
        return Decision(CRASHED, EXIT_CRASHED, gone=True)
    if seen.log_ready:
        return Decision(DIED_READY, EXIT_CRASHED)
    return Decision(DIED if seen.pid_ran else NO_PROCESS, EXIT_CRASHED)


def _read_whole(seen: Observation) -> Observation:
    """The log read as far as it will be (a stream drained, the one check's read): nothing can
    follow the traceback any more, as if the log were long silent."""
    return replace(seen, now=seen.now + CRASH_SETTLE_MAX_S + WEAK_CRASH_QUIET_S)


def _crash(seen: Observation) -> tuple[bool, tuple[str, ...]]:
    """(whether the crash has settled, the warning meanwhile). A fatal line ends a start-up once
    the traceback has finished (the log quiet for CRASH_QUIET_S, or CRASH_SETTLE_MAX_S at most);
    a bare traceback only if the log then stays silent for WEAK_CRASH_QUIET_S."""
    if not seen.crashed:
        return False, ()
    quiet = seen.now - (seen.last_growth or seen.now)
    if not seen.fatal_after_crash:
        return (False, (WEAK_CRASH,)) if quiet < WEAK_CRASH_QUIET_S else (True, ())
    since = seen.now - (seen.crash_seen_at if seen.crash_seen_at is not None else seen.now)
    return not (quiet < CRASH_QUIET_S and since < CRASH_SETTLE_MAX_S), ()


def _readiness(seen: Observation, first: tuple[str, ...]) -> Decision:
    """The log's ready line and the URL's answers, and where they disagree; then the deadline."""
    warnings: tuple[str, ...] = ()
    if seen.log_ready and (not seen.url or seen.url_ok):
        return Decision(READY, EXIT_OK, first)
    if seen.url_ok and not seen.log_ready:
        if seen.log and seen.lines == 0:
            warnings = (URL_BEFORE_LOG,)
        elif not seen.informative:
            return Decision(READY_URL, EXIT_OK, first)
        else:
            warnings = (URL_EARLY,)
    if seen.log_ready and seen.url and seen.ready_seen_at is not None:
        since = seen.now - seen.ready_seen_at
        if since >= min(URL_EARLY_WARNING_S, seen.url_grace / 2):
            warnings = (*warnings, URL_AFTER_READY)
        if since >= seen.url_grace:
            return Decision(URL_NEVER_READY, EXIT_OTHER, first, warnings)
    elif seen.url and seen.http_open_at is not None and not seen.url_ok and _refused_open(seen):
        warnings = (*warnings, URL_REFUSED_OPEN)
    if seen.deadline is not None and seen.now >= seen.deadline:
        return _timed_out(seen, first, warnings)
    return Decision(WAITING, None, first, warnings)


def _refused_open(seen: Observation) -> bool:
    """The log said the port opened URL_EARLY_WARNING_S ago, and the URL is still refused (an
    answer given well after the opening, not one still in flight from before)."""
    probe, opened = seen.probe, seen.http_open_at
    return probe is not None and opened is not None and probe.status is None \
        and seen.now - opened >= URL_EARLY_WARNING_S and probe.at >= opened + URL_EARLY_WARNING_S / 2


def _timed_out(seen: Observation, first: tuple[str, ...], warnings: tuple[str, ...]) -> Decision:
    """Timed out while busy or while stuck: only the tree of the process the user named judges
    (a pid read from the log may be another process's by now); unknown counts as busy."""
    activity = seen.activity
    judged = activity is not None and seen.named
    busy = not judged or activity is None or activity.busy or activity.kind == "gone"
    return Decision(TIMED_OUT, EXIT_TIMEOUT if busy else EXIT_TIMEOUT_STUCK, first, warnings, judged=judged,
                    busy=busy)


__all__ = ["BEFORE_TELEMETRY", "CRASHED", "DIED", "DIED_READY", "DRAIN", "LOG_ENDED", "NO_PROCESS", "READY",
           "READY_URL", "TIMED_OUT", "URL_NEVER_READY", "WAITING", "Decision", "Observation", "decide"]

"""`firedup.live.decide`: the wait's verdict as a pure function of what was seen, called here
directly on observations built by hand (runs read from real fixture logs, probe answers, the
process's state, the clock), with nothing printed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import firedup
from _live import CRASH_OOM, NEW_READY
from firedup.errors import EXIT_CRASHED, EXIT_OK, EXIT_OTHER, EXIT_TIMEOUT, EXIT_TIMEOUT_STUCK
from firedup.live.activity import Activity
from firedup.live.decide import (
    CRASHED,
    DIED,
    DIED_READY,
    DRAIN,
    LOG_ENDED,
    NO_PROCESS,
    READY,
    READY_URL,
    STREAM_ENDED,
    TIMED_OUT,
    URL_AFTER_READY,
    URL_BEFORE_LOG,
    URL_EARLY,
    URL_NEVER_READY,
    URL_REDIRECT,
    URL_REFUSED_OPEN,
    WAITING,
    WEAK_CRASH,
    Decision,
    Observation,
    decide,
)
from firedup.live.probe import ProbeResult
from firedup.timeline.run import Run

NOW = 1000.0
STUCK = Activity("stuck", "idle: no CPU", busy=False)
BUSY = Activity("compiling", "compiling kernels (nvcc)", busy=True)


def _run(path: Path) -> Run:
    return firedup.parse(str(path)).runs[-1]


@pytest.fixture(scope="module")
def ready() -> Run:
    run = _run(NEW_READY)
    assert run.outcome == "ready"
    return run


@pytest.fixture(scope="module")
def starting(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The ready log cut before its ready line: a start-up still under way."""
    lines = NEW_READY.read_text().splitlines(keepends=True)
    cut = tmp_path_factory.mktemp("decide") / "starting.log"
    cut.write_text("".join(lines[:20]))
    run = _run(cut)
    assert run.outcome == "incomplete" and run.crash is None
    return run


@pytest.fixture(scope="module")
def crashed() -> Run:
    run = _run(CRASH_OOM)
    assert run.outcome == "crashed" and run.crash is not None
    return run


def _probe(status: int | None, at: float = NOW - 0.5, error: str | None = None) -> ProbeResult:
    return ProbeResult(at, status, error)


def _decide(seen: Observation, capsys: pytest.CaptureFixture[str]) -> Decision:
    """The decision, and proof that deciding printed nothing."""
    d = decide(seen)
    assert capsys.readouterr() == ("", "")
    return d


def test_nothing_seen_yet_cannot_judge(capsys: pytest.CaptureFixture[str]) -> None:
    d = _decide(Observation(NOW), capsys)
    assert d == Decision(WAITING) and not d.over


def test_ready_by_the_log(ready: Run, capsys: pytest.CaptureFixture[str]) -> None:
    d = _decide(Observation(NOW, ready, lines=35, last_growth=NOW - 1), capsys)
    assert (d.verdict, d.code) == (READY, EXIT_OK)


def test_ready_by_the_log_waits_for_the_url_then_says_it_never_answered(
        ready: Run, capsys: pytest.CaptureFixture[str]) -> None:
    seen = Observation(NOW, ready, lines=35, url=True, probe=_probe(503), ready_seen_at=NOW - 3)
    assert _decide(seen, capsys) == Decision(WAITING)
    late = replace(seen, ready_seen_at=NOW - 12)  # past the warning (10 s), within the grace (30 s)
    assert _decide(late, capsys) == Decision(WAITING, warnings=(URL_AFTER_READY,))
    never = replace(seen, ready_seen_at=NOW - 30)
    d = _decide(never, capsys)
    assert (d.verdict, d.code, d.warnings) == (URL_NEVER_READY, EXIT_OTHER, (URL_AFTER_READY,))
    assert _decide(replace(seen, probe=_probe(200)), capsys).verdict == READY  # both witnesses agree


def test_ready_by_http(starting: Run, capsys: pytest.CaptureFixture[str]) -> None:
    # no log: the URL alone decides
    d = _decide(Observation(NOW, None, log=False, url=True, probe=_probe(200)), capsys)
    assert (d.verdict, d.code) == (READY_URL, EXIT_OK)
    # a log that shows no start-up progress (a log level above INFO): the URL decides
    quiet_log = Observation(NOW, starting, lines=3, informative=False, url=True, probe=_probe(200))
    assert _decide(quiet_log, capsys).verdict == READY_URL
    # a log still starting that shows its progress: a 200 now is a trap, not readiness
    assert _decide(replace(quiet_log, informative=True), capsys) == Decision(WAITING, warnings=(URL_EARLY,))
    # a 200 before the log has a line of this start: another server answers on the port
    assert _decide(Observation(NOW, None, lines=0, url=True, probe=_probe(200)), capsys) == \
        Decision(WAITING, warnings=(URL_BEFORE_LOG,))


def test_crashed(crashed: Run, capsys: pytest.CaptureFixture[str]) -> None:
    # a fatal line: settled once the log is quiet for a second ...
    seen = Observation(NOW, crashed, fatal_after_crash=True, last_growth=NOW - 2, crash_seen_at=NOW - 2)
    assert (_decide(seen, capsys).verdict, decide(seen).code) == (CRASHED, EXIT_CRASHED)
    # ... not while the traceback is still coming, for at most 5 s
    coming = replace(seen, last_growth=NOW - 0.2, crash_seen_at=NOW - 1)
    assert _decide(coming, capsys) == Decision(WAITING)
    assert _decide(replace(coming, crash_seen_at=NOW - 5), capsys).verdict == CRASHED
    # a bare traceback: a warning, and a crash only after a minute of silence
    weak = replace(seen, fatal_after_crash=False)
    assert _decide(weak, capsys) == Decision(WAITING, first=(WEAK_CRASH,))
    assert _decide(replace(weak, last_growth=NOW - 60), capsys).verdict == CRASHED


def test_died(starting: Run, ready: Run, crashed: Run, capsys: pytest.CaptureFixture[str]) -> None:
    gone = Observation(NOW, starting, pid=True, pid_gone=True)
    assert _decide(gone, capsys) == Decision(DIED, EXIT_CRASHED)
    assert _decide(replace(gone, run=None), capsys) == Decision(DIED, EXIT_CRASHED)
    assert _decide(replace(gone, run=ready), capsys) == Decision(DIED_READY, EXIT_CRASHED)
    assert _decide(replace(gone, pid_ran=False), capsys) == Decision(NO_PROCESS, EXIT_CRASHED)
    # the log says why it died: the crash, with the process gone
    assert _decide(replace(gone, run=crashed), capsys) == Decision(CRASHED, EXIT_CRASHED, gone=True)
    # the process alive: nothing ends
    assert _decide(replace(gone, pid_gone=False), capsys).verdict == WAITING


def test_hung(starting: Run, capsys: pytest.CaptureFixture[str]) -> None:
    """Timed out while the process the user named was idle: stuck (its own exit code)."""
    seen = Observation(NOW, starting, pid=True, deadline=NOW, activity=STUCK, named=True)
    d = _decide(seen, capsys)
    assert (d.verdict, d.code, d.judged, d.busy) == (TIMED_OUT, EXIT_TIMEOUT_STUCK, True, False)


def test_timed_out(starting: Run, capsys: pytest.CaptureFixture[str]) -> None:
    seen = Observation(NOW, starting, deadline=NOW - 1)
    d = _decide(seen, capsys)
    assert (d.verdict, d.code, d.judged, d.busy) == (TIMED_OUT, EXIT_TIMEOUT, False, True)
    busy = _decide(replace(seen, pid=True, activity=BUSY, named=True), capsys)
    assert (busy.code, busy.judged, busy.busy) == (EXIT_TIMEOUT, True, True)
    # a tree found through the log's pid cannot judge: it may be another process by now
    unnamed = _decide(replace(seen, activity=STUCK, named=False), capsys)
    assert (unnamed.code, unnamed.judged) == (EXIT_TIMEOUT, False)
    assert _decide(replace(seen, deadline=NOW + 1), capsys).verdict == WAITING


def test_a_closed_stream_is_read_to_its_end_then_judged(
        starting: Run, ready: Run, crashed: Run, capsys: pytest.CaptureFixture[str]) -> None:
    ended = Observation(NOW, starting, lines=20, stream_ended=True, last_growth=NOW)
    assert _decide(ended, capsys) == Decision(DRAIN)
    drained = replace(ended, drained=True)
    assert _decide(drained, capsys) == Decision(LOG_ENDED, EXIT_CRASHED)
    # with a URL or a process still to watch, they decide from now
    assert _decide(replace(drained, url=True, probe=_probe(503)), capsys) == Decision(WAITING, first=(STREAM_ENDED,))
    assert _decide(replace(drained, pid=True), capsys) == Decision(WAITING, first=(STREAM_ENDED,))
    # read whole, a bare traceback at its end is the crash (nothing can follow it any more)
    assert _decide(replace(drained, run=crashed), capsys) == Decision(CRASHED, EXIT_CRASHED)
    assert _decide(replace(drained, run=ready), capsys).verdict == READY


def test_the_witnesses_disagree(starting: Run, capsys: pytest.CaptureFixture[str]) -> None:
    redirect = Observation(NOW, starting, lines=20, url=True, probe=_probe(302, error="redirect to /login"))
    assert _decide(redirect, capsys) == Decision(WAITING, first=(URL_REDIRECT,))
    # the log said the port opened 12 s ago; the URL is still refused, by an answer given since
    refused = Observation(NOW, starting, lines=20, url=True, probe=_probe(None, error="connection refused"),
                          http_open_at=NOW - 12)
    assert _decide(refused, capsys) == Decision(WAITING, warnings=(URL_REFUSED_OPEN,))
    assert _decide(replace(refused, http_open_at=NOW - 5), capsys) == Decision(WAITING)  # not yet
    stale = replace(refused, probe=_probe(None, at=NOW - 9, error="connection refused"))
    assert _decide(stale, capsys) == Decision(WAITING)  # that answer came before the port opened

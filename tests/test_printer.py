"""live/printer.py: what `wait` says, worded from what it has seen (`SoFar`) and the decision,
which it only reads: the verdicts, the warnings said once, the status line."""

from __future__ import annotations

import collections
import copy
import io
import time
from datetime import date
from pathlib import Path

from _live import CRASH_OOM, NEW_READY
from firedup.live.decide import CRASHED, READY, TIMED_OUT, URL_EARLY, WEAK_CRASH, Decision, decide
from firedup.live.pidclock import PidClock
from firedup.live.printer import Printer
from firedup.live.probe import ProbeResult
from firedup.live.sofar import SoFar
from firedup.read.sources import Line
from firedup.timeline.pipeline import DatePolicy, LogReader


def _seen(log: Path | None, upto: int | None = None, **kw: object) -> SoFar:
    seen = SoFar(PidClock(None, None, 0.0, time.time(), None, quiet=True), 0.0,
                 log_name=str(log) if log else None, **kw)  # type: ignore[arg-type]
    if log is not None:
        reader = LogReader(str(log), "sglang", DatePolicy(None, date(2026, 1, 1)))
        reader.feed([Line(i + 1, t) for i, t in enumerate(log.read_text().splitlines()[:upto])])
        runs = reader.runs()
        seen.run, seen.fmt, seen.events, seen.log_exists = runs[-1], reader.fmt, reader.events, True
    return seen


def _printer() -> tuple[Printer, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Printer(out, err, False, lambda text, **_: text, None), out, err


def test_the_verdict_is_one_line_first_and_the_printer_changes_nothing_it_reads() -> None:
    seen = _seen(NEW_READY)
    before = copy.deepcopy(seen.__dict__)
    printer, out, _ = _printer()
    assert printer.conclude(Decision(READY, 0), seen, 12.0) == 0
    first = out.getvalue().splitlines()[0]
    assert first.startswith("READY in ") and first.endswith("waited 12 s") and printer.headline == first
    assert seen.__dict__.keys() == before.keys()
    kept = ("run", "clock", "events", "fmt", "history")  # objects without a value equality: checked by what they hold
    assert {k: v for k, v in seen.__dict__.items() if k not in kept} == {k: v for k, v in before.items() if k not in kept}
    assert seen.run is not None and seen.run.as_contract() == before["run"].as_contract()


def test_a_crash_is_said_with_its_error_and_hint() -> None:
    seen = _seen(CRASH_OOM)
    printer, out, _ = _printer()
    assert printer.conclude(Decision(CRASHED, 3), seen, 1.0) == 3
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("CRASHED (oom) in cuda_graph") and lines[1].startswith("  error: ")


def test_a_timeout_names_each_endpoint_with_its_own_answers() -> None:
    seen = _seen(None, url="http://127.0.0.1:9", probed="http://127.0.0.1:9/health",
                 probe=ProbeResult(1.0, 503), probe_counts=collections.Counter({"HTTP 503": 4}),
                 probe_earlier=[("http://127.0.0.1:9/ready", collections.Counter({"HTTP 404": 1}))],
                 timeout_note="timeout 5 s")
    printer, out, _ = _printer()
    assert printer.conclude(Decision(TIMED_OUT, 124), seen, 5.0) == 124
    text = out.getvalue()
    assert text.startswith("TIMED OUT after 5.0 s waiting for http://127.0.0.1:9/health\n")
    assert "  http://127.0.0.1:9/ready: HTTP 404 x1\n  http://127.0.0.1:9/health: HTTP 503 x4\n" in text


def test_a_warning_is_said_once() -> None:
    seen = _seen(CRASH_OOM)
    printer, _, err = _printer()
    printer.tell((WEAK_CRASH,), seen)
    printer.tell((WEAK_CRASH,), seen)
    assert err.getvalue().count("warning: a traceback at line") == 1
    printer.note_once("gpu-off", "NVML stopped answering")
    printer.note_once("gpu-off", "NVML stopped answering")
    assert err.getvalue().count("note: NVML stopped answering") == 1


def test_a_200_while_the_log_is_starting_is_named() -> None:
    seen = _seen(NEW_READY, upto=20, url="http://127.0.0.1:9/health", probed="http://127.0.0.1:9/health",
                 probe=ProbeResult(1.0, 200))
    printer, _, err = _printer()
    printer.tell((URL_EARLY,), seen)
    assert "http://127.0.0.1:9/health answers 200" in err.getvalue() or "answered 200" in err.getvalue()


def test_the_status_line_says_where_the_start_up_is() -> None:
    printer, _, _ = _printer()
    assert printer.status(_seen(None, url="http://x:1/h", probed="http://x:1/h"), 3.0) == "waiting · 3.0 s · http://x:1/h: …"
    missing = SoFar(PidClock(None, None, 0.0, time.time(), None, quiet=True), 0.0, log_name="server.log")
    assert printer.status(missing, 2.0) == "waiting for server.log to appear · 2.0 s"
    starting = _seen(NEW_READY, upto=20)
    assert printer.status(starting, 0.0).startswith(f"{starting.current_stage()}")


def test_the_decision_and_the_words_agree_on_a_whole_log() -> None:
    seen = _seen(NEW_READY)
    from firedup.live.decide import Observation

    d = decide(Observation(1.0, seen.run, lines=10))
    printer, out, _ = _printer()
    assert printer.conclude(d, seen, 1.0) == 0 and out.getvalue().startswith("READY in ")

"""What a wait leaves behind: `--record`'s JSON (the exit code and headline, the run as
`parse --json` shows it, the engine's own figures, the process tree's last state and the
timeline of what it did, stretch by stretch) and `--ingest`'s runs in the history store."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from firedup.read.clock import Stamp

if TYPE_CHECKING:
    from firedup.live.wait import Waiter


@dataclass
class Stretch:
    """A stretch of time in which the process tree did one thing (`live.activity.classify`), with
    what showed it: the classification timeline `--record` keeps and the cache verdicts read."""

    kind: str
    text: str
    since: float  # seconds since the epoch (this machine's clock)
    until: float
    phase: str | None
    evidence: list[str] = field(default_factory=list)
    compilers: list[str] = field(default_factory=list)


def stamp(when: datetime) -> Stamp:
    return Stamp(when, when.isoformat(timespec="milliseconds" if when.microsecond else "seconds"))


def ingest(w: Waiter) -> None:
    """The log's runs into the history store, the followed one with the launch this wait
    measured: budgets and `--timeout auto` from that history then count from measured
    launches. Never a reason to fail the wait: a problem is a note."""
    w._apply_observed()
    runs = w.reader.runs() if w.run is not None else []
    if w.opts.log is None or w.opts.log_stream is not None or not runs:
        w.printer.say("note: --ingest: nothing stored (it stores a log file's start-ups; "
                      + ("this wait read no start-up)" if not runs else "this log is not a file)"))
        return
    if w.run is not None:
        runs[-1] = w.run  # the run followed, with what the process tree showed
    for run in runs:  # the run the pid launched (a restart after it keeps its own launch)
        if w.clock.launch_value is not None and w.clock.launch_run == (run.source, run.first_line):
            run.launch = w.clock.launch_value
    try:
        from firedup.errors import FiredupError
        from firedup.tables.store import open_store

        store = open_store(w.opts.ingest or None)
        store.prepare()
        status, added = store.add(runs)
    except ImportError as exc:  # the store needs polars: a wait installed without it still waits
        w.printer.say(f"note: --ingest: nothing stored ({exc})")
        return
    except (FiredupError, OSError) as exc:
        w.printer.say(f"note: --ingest: nothing stored ({exc})")
        return
    launch = w.run.launch.source if w.run is not None and w.run.launch is not None else "unknown"
    if status == "added":
        w.printer.say(f"note: --ingest: {added} start-up{'s' if added != 1 else ''} of {w.log_name} stored in "
                      f"{store.location} (launch {launch})")
    else:
        w.printer.say(f"note: --ingest: {store.location} already holds these bytes of {w.log_name}; nothing stored")


def write_record(w: Waiter, code: int) -> None:
    """The outcome as JSON, for CI and for keeping beside the log: the exit code and
    headline, the run as `parse --json` shows it, the engine's own start-up figures with
    what they agree and disagree with, and the process tree's last state."""
    from firedup.core.safe import json_text, without_credentials

    assert w.opts.record is not None
    w._apply_observed()
    run, found = w.run, w.telemetry
    telemetry: dict[str, Any] | None = None
    if found is not None:
        health = w._health()
        agree, disagree = (found.compare(run, health.telemetry) if run is not None and health is not None
                           and health.telemetry is not None else ([], []))
        telemetry = {"source": found.source, "phases": found.phases, "agrees": agree, "disagrees": disagree}
    record = {
        "exit_code": code,
        "headline": w.printer.headline,
        "log": w.log_name,
        "url": w.prober.url if w.prober is not None else None,
        "pid": w.opts.pid,
        "waited_s": round(w.now() - w.started, 3),
        "run": run.as_contract() if run is not None else None,
        "telemetry": telemetry,
        "process_tree": None if w.activity is None else {
            "pid": w.watch_pid, "kind": w.activity.kind, "text": w.activity.text,
            "busy": w.activity.busy, "evidence": list(w.activity.evidence)},
        "process_timeline": [_stretch_json(w, s) for s in w.observed],
        "gpu": _gpu_json(w),
    }
    from firedup.core.files import write_text

    write_text(w.opts.record, without_credentials(json_text(record, indent=1)) + "\n")


def _stretch_json(w: Waiter, s: Stretch) -> dict[str, Any]:
    """One stretch of the classification timeline: on the log's clock where it is known
    (beside the run's phases), and in seconds from the launch where that was measured."""
    since, until = w.clock.on_log_clock(s.since), w.clock.on_log_clock(s.until)
    launched = w.clock.launch_wall
    return {"kind": s.kind, "text": s.text, "phase": s.phase,
            "since": stamp(since).iso if since else None, "until": stamp(until).iso if until else None,
            "since_wall": datetime.fromtimestamp(s.since).astimezone().isoformat(timespec="seconds"),
            "seconds": round(s.until - s.since, 3),
            "since_launch_s": round(s.since - launched, 3) if launched is not None else None,
            "evidence": s.evidence, "compilers": s.compilers}


def _gpu_json(w: Waiter) -> dict[str, Any] | None:
    gpu = w.watch.gpu if w.watch is not None else None
    if gpu is None:
        return None
    return {"source": gpu.source.name if gpu.source is not None else None, "off": gpu.off}


__all__ = ["Stretch", "ingest", "stamp", "write_record"]

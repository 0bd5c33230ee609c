"""What a wait leaves behind: `--record`'s JSON (the exit code and headline, the run as
`parse --json` shows it, the engine's own figures, the process tree's last state and the
timeline of what it did, stretch by stretch) and `--ingest`'s runs in the history store. Both
read what the wait has seen (`live.sofar.SoFar`), nothing else of the loop."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from firedup.live.sofar import SoFar, Stretch, stamp
from firedup.timeline.run import Run


def ingest(seen: SoFar, runs: list[Run], log_is_file: bool, store_at: str, say: Callable[[str], None]) -> None:
    """The log's runs into the history store, the followed one with the launch this wait
    measured: budgets and `--timeout auto` from that history then count from measured
    launches. Never a reason to fail the wait: a problem is a note."""
    if not log_is_file or not runs:
        say("note: --ingest: nothing stored (it stores a log file's start-ups; "
            + ("this wait read no start-up)" if not runs else "this log is not a file)"))
        return
    if seen.run is not None:
        runs[-1] = seen.run  # the run followed, with what the process tree showed
    clock = seen.clock
    for run in runs:  # the run the pid launched (a restart after it keeps its own launch)
        if clock.launch_value is not None and clock.launch_run == (run.source, run.first_line):
            run.launch = clock.launch_value
    try:
        from firedup.errors import FiredupError
        from firedup.tables.store import open_store

        store = open_store(store_at or None)
        store.prepare()
        status, added = store.add(runs)
    except ImportError as exc:  # the store needs polars: a wait installed without it still waits
        say(f"note: --ingest: nothing stored ({exc})")
        return
    except (FiredupError, OSError) as exc:
        say(f"note: --ingest: nothing stored ({exc})")
        return
    launch = seen.run.launch.source if seen.run is not None and seen.run.launch is not None else "unknown"
    if status == "added":
        say(f"note: --ingest: {added} start-up{'s' if added != 1 else ''} of {seen.log_name} stored in "
            f"{store.location} (launch {launch})")
    else:
        say(f"note: --ingest: {store.location} already holds these bytes of {seen.log_name}; nothing stored")


def write_record(seen: SoFar, path: Path, code: int, headline: str | None, waited: float) -> None:
    """The outcome as JSON, for CI and for keeping beside the log: the exit code and
    headline, the run as `parse --json` shows it, the engine's own start-up figures with
    what they agree and disagree with, and the process tree's last state."""
    from firedup.core.safe import json_text, without_credentials

    run, found = seen.run, seen.telemetry
    telemetry: dict[str, Any] | None = None
    if found is not None:
        health = seen.health()
        agree, disagree = (found.compare(run, health.telemetry) if run is not None and health is not None
                           and health.telemetry is not None else ([], []))
        telemetry = {"source": found.source, "phases": found.phases, "agrees": agree, "disagrees": disagree}
    activity = seen.activity
    record = {
        "exit_code": code,
        "headline": headline,
        "log": seen.log_name,
        "url": seen.probed,
        "pid": seen.pid,
        "waited_s": round(waited, 3),
        "run": run.as_contract() if run is not None else None,
        "telemetry": telemetry,
        "process_tree": None if activity is None else {
            "pid": seen.watch_pid, "kind": activity.kind, "text": activity.text,
            "busy": activity.busy, "evidence": list(activity.evidence)},
        "process_timeline": [_stretch_json(seen, s) for s in seen.observed],
        "gpu": None if seen.gpu is None else {"source": seen.gpu[0], "off": seen.gpu[1]},
    }
    from firedup.core.files import write_text

    write_text(path, without_credentials(json_text(record, indent=1)) + "\n")


def _stretch_json(seen: SoFar, s: Stretch) -> dict[str, Any]:
    """One stretch of the classification timeline: on the log's clock where it is known
    (beside the run's phases), and in seconds from the launch where that was measured."""
    since, until = seen.clock.on_log_clock(s.since), seen.clock.on_log_clock(s.until)
    launched = seen.clock.launch_wall
    return {"kind": s.kind, "text": s.text, "phase": s.phase,
            "since": stamp(since).iso if since else None, "until": stamp(until).iso if until else None,
            "since_wall": datetime.fromtimestamp(s.since).astimezone().isoformat(timespec="seconds"),
            "seconds": round(s.until - s.since, 3),
            "since_launch_s": round(s.since - launched, 3) if launched is not None else None,
            "evidence": s.evidence, "compilers": s.compilers}


__all__ = ["Stretch", "ingest", "stamp", "write_record"]

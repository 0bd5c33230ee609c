"""A `wait --record` file kept beside its log (`server.log` -> `server.wait.json`): that run's
process evidence, read by every command that reads the log.

What it adds to the run it recorded (the run whose first line the record names): the launch
`wait --pid` measured, and what the process tree did on the log's clock (`silence.Observed`:
compilers in graph capture make the kernel JIT cold; a tree watched through it with no
compiler, warm). A record that cannot be read, or names another run, changes nothing and
says so on the run: it is evidence, never a reason to fail.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from firedup.core.safe import visible
from firedup.formats.base import Format
from firedup.read.clock import Stamp
from firedup.timeline.launch import Launch
from firedup.timeline.run import Run
from firedup.timeline.silence import Observed, observed_caches

SUFFIX = ".wait.json"
MAX_BYTES = 16 * 1024 * 1024  # a record is a few kB; anything this big is not one


def record_beside(log: Path) -> Path:
    """`dir/server.log` -> `dir/server.wait.json` (the same stem)."""
    return log.with_name(log.stem + SUFFIX) if log.suffix else log.with_name(log.name + SUFFIX)


def apply_record_beside(log: Path, runs: list[Run], fmt: Format) -> None:
    """The record beside `log`, where there is one, applied to the run it recorded."""
    path = record_beside(log)
    if not runs or not path.is_file():
        return
    name = visible(path.name, one_line=True)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ValueError("too large for a wait record")
        record = json.loads(data)
        if not isinstance(record, dict):
            raise ValueError("not a wait record (a JSON object)")
        run = _recorded_run(record, runs)
        if run is None:
            runs[-1].warnings.append(f"{name} beside the log records another run (its first line differs): not read")
            return
        _apply(record, run, fmt, name)
    except (OSError, ValueError, TypeError, KeyError) as exc:  # evidence, never a reason to fail
        runs[-1].warnings.append(f"{name} beside the log could not be read as a wait record ({type(exc).__name__}): "
                                 "not used")


def _recorded_run(record: dict[str, Any], runs: list[Run]) -> Run | None:
    recorded = record.get("run")
    first = recorded.get("first_ts") if isinstance(recorded, dict) else None
    return next((r for r in runs if r.first_ts is not None and first is not None and r.first_ts.iso == first), None)


def _stamp(text: Any) -> Stamp:
    if not isinstance(text, str):
        raise ValueError("a time is not a string")
    return Stamp(datetime.fromisoformat(text), text)


def _apply(record: dict[str, Any], run: Run, fmt: Format, name: str) -> None:
    launch = record["run"].get("launch")
    if isinstance(launch, dict) and launch.get("source") == "measured" and launch.get("ts") and run.first_ts \
            and (run.launch is None or not run.launch.known):
        ts = _stamp(launch["ts"])
        if ts <= run.first_ts:
            run.launch = Launch("measured", f"{visible(str(launch.get('basis') or ''), one_line=True)} "
                                f"(recorded by wait --record in {name})", ts, run.first_ts.minus(ts))
    observed = []
    for item in record.get("process_timeline") or []:
        if not isinstance(item, dict) or not item.get("since") or not item.get("until"):
            continue
        compilers = tuple(str(c) for c in item.get("compilers") or [] if isinstance(c, str))
        observed.append(Observed(str(item.get("kind") or ""), _stamp(item["since"]), _stamp(item["until"]),
                                 str(item.get("text") or ""), compilers))
    if observed:
        observed_caches(run, observed, fmt)


__all__ = ["SUFFIX", "apply_record_beside", "record_beside"]

"""Exports of the tables: Chrome Trace Event JSON (Perfetto, chrome://tracing), CSV, Parquet, JSON.

The trace maps one run to one process (`pid`) and each rank to a thread (`tid`), named by
metadata events. Phases are complete (`X`) events with the source line in `args`; ready
and crash are instant (`i`) events; the free GPU memory a line states becomes a counter
(`C`) per rank. Times are microseconds from each run's first line, so runs line up at 0
and compare at a glance; the wall-clock start is in the process name. When a log begins
mid-startup and a reported duration reaches back before its first line, time 0 moves to
that phase's start (trace times are never negative) and the process name says so.

Duration events on one track must nest (Perfetto moves overlapping ones to an overflow
track; chrome://tracing draws them wrong), so phases that overlap without nesting go to
an extra lane of the same rank, named "TP0 (2)".
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from firedup.core.safe import csv_cell, json_visible
from firedup.errors import OutputError, UsageError, writing
from firedup.tables.frames import Runs

FORMATS = ("chrome-trace", "csv", "parquet", "json")
TABLE_NAMES = ("runs", "phases", "milestones")
RUN_LANE = "run (critical path)"
US = 1_000_000


def _us(seconds: float) -> int:
    return round(seconds * US)


def _lanes(events: list[tuple[int, int, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Assign (start, dur, event) to lanes where every pair either nests or does not overlap."""
    lanes: list[list[tuple[int, int]]] = []  # per lane, the stack of open intervals
    out: list[list[dict[str, Any]]] = []
    for start, dur, event in sorted(events, key=lambda e: (e[0], -e[1])):
        end = start + dur
        for i, stack in enumerate(lanes):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if not stack or (stack[-1][0] <= start and end <= stack[-1][1]):
                stack.append((start, end))
                out[i].append(event)
                break
        else:
            lanes.append([(start, end)])
            out.append([event])
    return out


def chrome_trace(runs: Runs) -> dict[str, Any]:
    """The Trace Event Format object: {"traceEvents": [...], "displayTimeUnit": "ms"}."""
    events: list[dict[str, Any]] = []
    texts = {(r["run_id"], r["line"]): r["text"] for r in
             runs.milestones.select("run_id", "line", "text").iter_rows(named=True)}
    phases_by_run = {key[0]: frame for key, frame in runs.phases.partition_by("run_id", as_dict=True).items()}
    milestones_by_run = {key[0]: frame for key, frame in
                         runs.milestones.partition_by("run_id", as_dict=True).items()}
    for pid, run in enumerate(runs.runs.iter_rows(named=True), start=1):
        run_id = run["run_id"]
        first = run["first_ts"]
        phases = phases_by_run.get(run_id, runs.phases.clear())
        milestones = milestones_by_run.get(run_id, runs.milestones.clear())
        # time 0 is the first line, or the start of a phase whose reported duration reaches
        # back before it (a log that begins mid-startup): trace times must not be negative
        offsets = [0.0, *phases["start_offset"].drop_nulls().to_list(), *milestones["offset"].drop_nulls().to_list()]
        origin = min(offsets)
        where = f" #{run['run_index'] + 1}" if run["run_index"] else ""
        flags = ", ".join(f"{k}={run[k]}" for k in ("tp_size", "disable_cuda_graph", "speculative_algorithm")
                          if run.get(k) is not None)
        title = f"{Path(run['source']).name}{where} [{run['outcome']}]" + (f" ({flags})" if flags else "")
        if first is not None:
            title += f" started {first.isoformat(sep=' ')}"
        if origin < 0:
            title += f" (time 0 is {-origin:.1f} s before the first line)"
        events.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": title}})
        events.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": pid}})
        per_track: dict[str, list[tuple[int, int, dict[str, Any]]]] = defaultdict(list)
        for p in phases.iter_rows(named=True):
            if p["start_offset"] is None or p["start"] is None or p["end"] is None:
                continue
            start = _us(p["start_offset"] - origin)
            dur = max(0, _us((p["end"] - p["start"]).total_seconds()))
            track = RUN_LANE if p["scope"] == "run" else str(p["rank"] or "main")
            name = p["phase"] + (f" ({p['detail']})" if p["detail"] else "")
            args: dict[str, Any] = {"seconds": p["seconds"], "source": p["source_kind"], "file": run["source"]}
            if p["line"] is not None:
                args["line"] = p["line"]
                text = texts.get((run_id, p["line"]))
                if text:
                    args["text"] = text
            if p["open"]:
                args["open"] = True
            per_track[track].append((start, dur, {"ph": "X", "name": name, "cat": "phase", "ts": start,
                                                  "dur": dur, "args": args}))
        ranks = sorted({str(r) for r in milestones["rank"].drop_nulls().to_list()} | set(per_track) - {RUN_LANE},
                       key=_rank_key)
        tids: dict[str, int] = {}
        next_tid = 0
        for track in [RUN_LANE, *ranks]:
            lanes = _lanes(per_track.get(track, [])) or [[]]
            for lane_no, lane in enumerate(lanes):
                tid = next_tid
                next_tid += 1
                if lane_no == 0:
                    tids[track] = tid
                label = track if lane_no == 0 else f"{track} ({lane_no + 1})"
                events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": label}})
                events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                               "args": {"sort_index": tid}})
                for ev in lane:
                    events.append({**ev, "pid": pid, "tid": tid})
        for m in milestones.iter_rows(named=True):
            if m["offset"] is None:
                continue
            ts = _us(m["offset"] - origin)
            tid = tids.get(str(m["rank"]), 0) if m["rank"] else 0
            if m["name"] in ("ready", "crash"):
                scope = "p" if m["name"] == "ready" or not m["rank"] else "t"
                events.append({"ph": "i", "pid": pid, "tid": tid, "name": m["name"], "cat": "outcome", "ts": ts,
                               "s": scope, "args": {"line": m["line"], "text": m["text"], "file": run["source"]}})
            if m["avail_mem_gb"] is not None:
                label = str(m["rank"] or "main")
                events.append({"ph": "C", "pid": pid, "tid": tid, "name": f"avail_mem_gb {label}", "ts": ts,
                               "args": {"GB": m["avail_mem_gb"]}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": "firedup", "time_origin": "each run's first line"}}


def _rank_key(rank: str) -> tuple[Any, ...]:
    import re

    return tuple((tag.rstrip("0123456789"), int(re.sub(r"\D", "", tag) or 0)) for tag in rank.split())


def table(runs: Runs, name: str) -> pl.DataFrame:
    if name not in TABLE_NAMES:
        raise UsageError(f"unknown table {name!r}; choose from {', '.join(TABLE_NAMES)}")
    frame: pl.DataFrame = getattr(runs, name)
    return frame


def export(runs: Runs, fmt: str, out: str | os.PathLike[str], table_name: str = "phases") -> None:
    """Write `runs` as `fmt` to `out` ("-" = stdout for text formats)."""
    import sys

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    to_stdout = os.fspath(out) == "-"
    if fmt == "parquet" and to_stdout:
        raise UsageError("Parquet is binary: give a file with -o")
    if fmt == "chrome-trace":
        text = json_visible(json.dumps(chrome_trace(runs), ensure_ascii=False, default=str))
    elif fmt == "csv":
        text = csv_safe(flat(table(runs, table_name))).write_csv()
    elif fmt == "json":
        text = json_visible(json.dumps(table(runs, table_name).to_dicts(), ensure_ascii=False, default=str, indent=1))
    else:
        _atomic(Path(out), lambda path: table(runs, table_name).write_parquet(path))
        return
    if to_stdout:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    _atomic(Path(out), lambda path: path.write_text(text, encoding="utf-8"))


def flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV cannot hold nested values: turn lists/structs into JSON text."""
    nested = [c for c, dt in frame.schema.items() if isinstance(dt, (pl.List, pl.Struct, pl.Array))]
    return frame.with_columns([pl.col(c).map_elements(lambda v: json.dumps(v, default=str),
                                                      return_dtype=pl.Utf8) for c in nested]) if nested else frame


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Every text cell as a spreadsheet shows it safely (`firedup.core.safe.csv_cell`): a
    model name or crash message written `=HYPERLINK(...)` stays text, not a formula."""
    text = [c for c, dt in frame.schema.items() if dt == pl.Utf8]
    if not text:
        return frame
    return frame.with_columns([pl.col(c).map_elements(csv_cell, return_dtype=pl.Utf8, skip_nulls=True)
                               for c in text])


def _atomic(path: Path, write: Any) -> None:
    """Write next to the target and rename, so a crash never leaves half a file. A target
    that exists and is no regular file (/dev/stdout, /dev/full, a FIFO) is written into, not
    replaced: a rename would put a regular file where the device was. A failed write (a
    missing folder, a full disk; polars says so as a ComputeError) is one OutputError."""
    with writing(path):
        special = path.exists() and not path.is_file() and not path.is_dir()
    tmp = path if special else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with writing(path):
            write(tmp)
            if not special:
                os.replace(tmp, path)
    except pl.exceptions.PolarsError as exc:
        raise OutputError(os.fspath(path), str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        if not special:
            tmp.unlink(missing_ok=True)


__all__ = ["FORMATS", "TABLE_NAMES", "chrome_trace", "csv_safe", "export", "flat"]

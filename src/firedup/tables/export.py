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
import math
import os
from collections import defaultdict
from datetime import UTC
from pathlib import Path
from typing import Any

import polars as pl

from firedup.core.safe import csv_cell, json_text, metric_label, visible
from firedup.errors import OutputError, UsageError
from firedup.formats.vocab import CRASH, READY
from firedup.tables.frames import Runs

FORMATS = ("chrome-trace", "prometheus", "otlp-json", "csv", "parquet", "json")
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
        phases = phases_by_run.get(run["run_id"], runs.phases.clear())
        milestones = milestones_by_run.get(run["run_id"], runs.milestones.clear())
        events.extend(_run_events(pid, run, phases, milestones, texts))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": "firedup", "time_origin": "each run's first line"}}


def _run_events(pid: int, run: dict[str, Any], phases: pl.DataFrame, milestones: pl.DataFrame,
                 texts: dict[tuple[str, int], str]) -> list[dict[str, Any]]:
    """One run as one process: its name, a thread per rank (and lane) with its phases, then the
    ready and crash instants and the free-memory counters."""
    # time 0 is the first line, or the start of a phase whose reported duration reaches
    # back before it (a log that begins mid-startup): trace times must not be negative
    offsets = [0.0, *phases["start_offset"].drop_nulls().to_list(), *milestones["offset"].drop_nulls().to_list()]
    origin = min(offsets)
    events = [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": _process_title(run, origin)}},
              {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": pid}}]
    per_track = _phase_tracks(run, phases, origin, texts)
    ranks = sorted({str(r) for r in milestones["rank"].drop_nulls().to_list()} | set(per_track) - {RUN_LANE},
                   key=_rank_key)
    threads, tids = _thread_events(pid, per_track, [RUN_LANE, *ranks])
    events.extend(threads)
    events.extend(_milestone_events(pid, run, milestones, origin, tids))
    return events


def _process_title(run: dict[str, Any], origin: float) -> str:
    """`server.log #2 [ready] (tp_size=2) started 2025-...`: the process's name in the trace."""
    where = f" #{run['run_index'] + 1}" if run["run_index"] else ""
    flags = ", ".join(f"{k}={run[k]}" for k in ("tp_size", "disable_cuda_graph", "speculative_algorithm")
                      if run.get(k) is not None)
    title = f"{Path(run['source']).name}{where} [{run['outcome']}]" + (f" ({flags})" if flags else "")
    if run["first_ts"] is not None:
        title += f" started {run['first_ts'].isoformat(sep=' ')}"
    if origin < 0:
        title += f" (time 0 is {-origin:.1f} s before the first line)"
    return title


def _phase_tracks(run: dict[str, Any], phases: pl.DataFrame, origin: float,
                  texts: dict[tuple[str, int], str]) -> dict[str, list[tuple[int, int, dict[str, Any]]]]:
    """Each timed phase as a complete (`X`) event, by track: the run's critical path or its rank."""
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
            text = texts.get((run["run_id"], p["line"]))
            if text:
                args["text"] = text
        if p["open"]:
            args["open"] = True
        per_track[track].append((start, dur, {"ph": "X", "name": name, "cat": "phase", "ts": start,
                                              "dur": dur, "args": args}))
    return per_track


def _thread_events(pid: int, per_track: dict[str, list[tuple[int, int, dict[str, Any]]]],
                   tracks: list[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """A thread per lane of each track (`_lanes`: events on one thread must nest), named and in
    order, with its events; and each track's first thread id, where its instants go."""
    events: list[dict[str, Any]] = []
    tids: dict[str, int] = {}
    next_tid = 0
    for track in tracks:
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
    return events, tids


def _milestone_events(pid: int, run: dict[str, Any], milestones: pl.DataFrame, origin: float,
                      tids: dict[str, int]) -> list[dict[str, Any]]:
    """Ready and crash as instant (`i`) events, the free GPU memory a line states as a counter (`C`)."""
    events: list[dict[str, Any]] = []
    for m in milestones.iter_rows(named=True):
        if m["offset"] is None:
            continue
        ts = _us(m["offset"] - origin)
        tid = tids.get(str(m["rank"]), 0) if m["rank"] else 0
        if m["name"] in (READY, CRASH):
            scope = "p" if m["name"] == READY or not m["rank"] else "t"
            events.append({"ph": "i", "pid": pid, "tid": tid, "name": m["name"], "cat": "outcome", "ts": ts,
                           "s": scope, "args": {"line": m["line"], "text": m["text"], "file": run["source"]}})
        if m["avail_mem_gb"] is not None:
            label = str(m["rank"] or "main")
            events.append({"ph": "C", "pid": pid, "tid": tid, "name": f"avail_mem_gb {label}", "ts": ts,
                           "args": {"GB": m["avail_mem_gb"]}})
    return events


# --- metrics out: OpenMetrics text and OTLP/JSON traces --------------------------------------------

# firedup's phase names where the engine's own startup metric has a name for the same span, so a
# dashboard built on `<engine>:startup_time_seconds{phase=...}` reads both (the engine's own gauge
# calls the whole start-up "e2e").
PROMETHEUS_PHASES = {"load_weights": "load_weight", "kv_cache": "kv_cache_allocation"}
STARTUP_METRIC = "startup_time_seconds"
GRAPH_METRIC = "startup_cuda_graph_time_seconds"
RUN_LABELS = ("tp_size", "disable_cuda_graph", "speculative_algorithm")


def _label(value: Any) -> str:
    # controls shown as text first (`\x1b`), which the OpenMetrics escaping then keeps as text
    return metric_label("" if value is None else visible(str(value), one_line=True))


def _labels(items: dict[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in items.items() if v is not None) + "}"


def _number(value: float) -> str:
    """A sample's value as OpenMetrics writes it (`NaN`, `+Inf` for what no log should give)."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(round(value, 6))


def openmetrics(runs: Runs) -> str:
    """OpenMetrics text: per run, `startup_time_seconds{phase=...}` (the run-level phases, and
    "e2e" = first line to ready, as the engine's own gauge names them) and the graph capture per
    graph kind in `startup_cuda_graph_time_seconds{phase=decode|prefill|...}`. Seconds, gauges."""
    head = [f"# TYPE {STARTUP_METRIC} gauge", f"# UNIT {STARTUP_METRIC} seconds",
            f"# HELP {STARTUP_METRIC} Server start-up time by phase, read from the log by firedup."]
    graph_head = [f"# TYPE {GRAPH_METRIC} gauge", f"# UNIT {GRAPH_METRIC} seconds",
                  f"# HELP {GRAPH_METRIC} CUDA graph capture time by graph kind, read from the log by firedup."]
    samples: list[str] = []
    graph_samples: list[str] = []
    per_run = {key[0]: frame for key, frame in runs.phases.partition_by("run_id", as_dict=True).items()}
    for run in runs.runs.iter_rows(named=True):
        base = {"engine": run["engine"], "run_id": run["run_id"], "source": Path(run["source"]).name,
                "run_index": run["run_index"], "model": run.get("model_path"), "outcome": run["outcome"],
                **{k: run.get(k) for k in RUN_LABELS}}
        phases = per_run.get(run["run_id"], runs.phases.clear())
        totals: dict[str, float] = {}
        graphs: dict[str, float] = {}
        for p in phases.filter(pl.col("scope") == "run").iter_rows(named=True):
            if p["seconds"] is None or p["phase"] == "unattributed":
                continue
            name = PROMETHEUS_PHASES.get(p["phase"], p["phase"])
            totals[name] = totals.get(name, 0.0) + float(p["seconds"])
            if p["phase"] == "cuda_graph":
                kind = p["detail"] or "decode"
                graphs[kind] = graphs.get(kind, 0.0) + float(p["seconds"])
        if run["ready_seconds"] is not None:
            totals["e2e"] = float(run["ready_seconds"])
        for name, seconds in totals.items():
            samples.append(f"{STARTUP_METRIC}{_labels({**base, 'phase': name})} {_number(seconds)}")
        for kind, seconds in graphs.items():
            graph_samples.append(f"{GRAPH_METRIC}{_labels({**base, 'phase': kind})} {_number(seconds)}")
    lines = [*head, *samples]
    if graph_samples:
        lines += [*graph_head, *graph_samples]
    return "\n".join(lines) + "\n# EOF\n"


def _hex_id(text: str, length: int) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:length]


MAX_NANOS = 2**64 - 1  # OTLP's fixed64


def _nanos(ts: Any) -> str:
    """A naive log timestamp (the log's own clock) as Unix nanoseconds, read as UTC: OTLP's
    unsigned 64 bits, so never below 0 (a time-only log's placeholder day, 1970-01-01, less a
    phase that reaches back before it, is written as the epoch)."""
    nanos = int(ts.replace(tzinfo=UTC).timestamp() * 1_000_000) * 1000
    return str(min(max(nanos, 0), MAX_NANOS))


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def otlp_json(runs: Runs) -> dict[str, Any]:
    """An OTLP/JSON `ExportTraceServiceRequest`: one trace per run (a root span from the first line
    to ready or the end), a span per rank under it, and one span per phase per rank under that
    (run-level phases where a run has no per-rank ones). Times are the log's clock read as UTC."""
    from firedup import __version__

    resource_spans = []
    per_run = {key[0]: frame for key, frame in runs.phases.partition_by("run_id", as_dict=True).items()}
    for run in runs.runs.iter_rows(named=True):
        if run["first_ts"] is None:
            continue
        trace = _hex_id(run["run_id"], 32)
        root = _hex_id(run["run_id"] + "/root", 16)
        end = run["end_ts"] or run["last_ts"] or run["first_ts"]
        status = {"code": 1} if run["outcome"] == "ready" else {
            "code": 2, "message": str(run.get("crash_message") or run["outcome"])}
        spans: list[dict[str, Any]] = [{
            "traceId": trace, "spanId": root, "name": "startup", "kind": 1,
            "startTimeUnixNano": _nanos(run["first_ts"]), "endTimeUnixNano": _nanos(max(end, run["first_ts"])),
            "attributes": [_attr("firedup.outcome", run["outcome"]), _attr("firedup.source", run["source"]),
                           _attr("firedup.run_index", int(run["run_index"]))], "status": status}]
        phases = per_run.get(run["run_id"], runs.phases.clear()).filter(
            pl.col("start").is_not_null() & pl.col("end").is_not_null() & (pl.col("phase") != "unattributed"))
        ranked = phases.filter(pl.col("scope") == "rank")
        rows = ranked if ranked.height else phases.filter(pl.col("scope") == "run")
        by_rank: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for p in rows.iter_rows(named=True):
            by_rank[str(p["rank"] or "main")].append(p)
        for rank in sorted(by_rank, key=_rank_key):
            items = by_rank[rank]
            rank_id = _hex_id(f"{run['run_id']}/{rank}", 16)
            spans.append({"traceId": trace, "spanId": rank_id, "parentSpanId": root, "name": rank, "kind": 1,
                          "startTimeUnixNano": _nanos(min(p["start"] for p in items)),
                          "endTimeUnixNano": _nanos(max(p["end"] for p in items)),
                          "attributes": [_attr("firedup.rank", rank)]})
            for i, p in enumerate(items):
                attrs = [_attr("firedup.rank", rank), _attr("firedup.phase", p["phase"]),
                         _attr("firedup.seconds", float(p["seconds"] or 0.0)),
                         _attr("firedup.source_kind", p["source_kind"])]
                if p["detail"]:
                    attrs.append(_attr("firedup.detail", p["detail"]))
                if p["line"] is not None:
                    attrs.append(_attr("firedup.line", int(p["line"])))
                spans.append({"traceId": trace, "spanId": _hex_id(f"{run['run_id']}/{rank}/{i}", 16),
                              "parentSpanId": rank_id, "kind": 1,
                              "name": p["phase"] + (f" ({p['detail']})" if p["detail"] else ""),
                              "startTimeUnixNano": _nanos(p["start"]),
                              "endTimeUnixNano": _nanos(max(p["end"], p["start"])), "attributes": attrs})
        resource_spans.append({
            "resource": {"attributes": [_attr("service.name", run["engine"] or "unknown"),
                                        _attr("firedup.run_id", run["run_id"])]},
            "scopeSpans": [{"scope": {"name": "firedup", "version": __version__}, "spans": spans}]})
    return {"resourceSpans": resource_spans}


def _rank_key(rank: str) -> tuple[Any, ...]:
    import re

    return tuple((tag.rstrip("0123456789"), int(re.sub(r"\D", "", tag) or 0)) for tag in rank.split())


def table(runs: Runs, name: str) -> pl.DataFrame:
    if name not in TABLE_NAMES:
        raise UsageError(f"unknown table {name!r}; choose from {', '.join(TABLE_NAMES)}")
    frame: pl.DataFrame = getattr(runs, name)
    return frame


def export(runs: Runs, output_format: str, out: str | os.PathLike[str], table_name: str = "phases") -> None:
    """Write `runs` as `output_format` (one of `FORMATS`) to `out` ("-" = stdout for text formats)."""
    import sys

    if output_format not in FORMATS:
        raise UsageError(f"unknown format {output_format!r}; choose from {', '.join(FORMATS)}")
    to_stdout = os.fspath(out) == "-"
    if output_format == "parquet" and to_stdout:
        raise UsageError("Parquet is binary: give a file with -o")
    if output_format == "chrome-trace":
        text = json_text(chrome_trace(runs))
    elif output_format == "prometheus":
        text = openmetrics(runs)
    elif output_format == "otlp-json":
        text = json_text(otlp_json(runs))
    elif output_format == "csv":
        text = csv_safe(flat(table(runs, table_name))).write_csv()
    elif output_format == "json":
        text = json_text(table(runs, table_name).to_dicts(), indent=1)
    else:
        _atomic(Path(out), lambda fh: table(runs, table_name).write_parquet(fh))
        return
    if to_stdout:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    _atomic(Path(out), lambda fh: fh.write(text.encode("utf-8")))


def flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV cannot hold nested values: turn lists/structs into JSON text."""
    nested = [c for c, dt in frame.schema.items() if isinstance(dt, (pl.List, pl.Struct, pl.Array))]
    return frame.with_columns([pl.col(c).map_elements(lambda v: json.dumps(v, default=str),
                                                      return_dtype=pl.Utf8) for c in nested]) if nested else frame


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Every text cell, and every column name (a flag's key is a log's text), as a spreadsheet
    shows it safely (`firedup.core.safe.csv_cell`): a model name or crash message written
    `=HYPERLINK(...)` stays text, not a formula."""
    text = [c for c, dt in frame.schema.items() if dt == pl.Utf8]
    if text:
        frame = frame.with_columns([pl.col(c).map_elements(csv_cell, return_dtype=pl.Utf8, skip_nulls=True)
                                    for c in text])
    names: dict[str, str] = {}
    taken = set(frame.columns)
    for column in frame.columns:
        safe = csv_cell(visible(column, one_line=True))
        if safe != column:
            while safe in taken:  # two keys that read the same once escaped stay two columns
                safe += "_"
            taken.add(safe)
            names[column] = safe
    return frame.rename(names) if names else frame


def _atomic(path: Path, write: Any) -> None:
    """Write `path` whole (`core.files.write_file`: a temporary file renamed into place, never
    through a link; a FIFO or device the user named is written into). `write` takes a binary
    file object. A failed write (a missing folder, a full disk; polars says so as a
    ComputeError) is one OutputError."""
    from firedup.core.files import write_file

    try:
        write_file(path, write)
    except pl.exceptions.PolarsError as exc:
        raise OutputError(os.fspath(path), str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


__all__ = ["FORMATS", "TABLE_NAMES", "chrome_trace", "csv_safe", "export", "flat", "openmetrics", "otlp_json"]

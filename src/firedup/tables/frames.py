"""Many runs as tidy polars tables: the one data model that compare, budget, store and export share.

`load()` parses logs (and/or reads a history store) into a `Runs` object holding three frames:

* `runs`: one row per startup; identity, outcome, time to ready, crash, and the flags as
  columns (the common flags with fixed types, then every other flag any run states, each in
  the `flag.` namespace: `flag.enforce_eager`, so no key a log states can be one of firedup's
  own columns, such as `outcome` or a phase's `load_weights_s`);
* `phases`: long form, one row per phase per rank, plus the run-level critical path
  (`scope == "run"`, `rank` null) that time-to-ready comparisons use;
* `milestones`: one row per milestone line, with the available GPU memory where the line
  states it.

Every later step is a function over these frames, so the same code serves a folder of logs
today and a store of thousands of runs later. Schemas are fixed (see `RUN_SCHEMA`,
`PHASE_SCHEMA`, `MILESTONE_SCHEMA`) so frames from different sources concatenate and the
store's Parquet files share one layout.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from firedup.core.config import COMMON_FLAGS, SAME_CONFIG_FLAGS, ConfigKey, config_key
from firedup.core.numbers import INT64_MAX, INT64_MIN
from firedup.core.safe import finite, json_default, json_ready, valid_json, valid_text, visible
from firedup.read.sources import InputError
from firedup.tables.launches import settle_launches
from firedup.timeline.findings import cache_start as start_of
from firedup.timeline.phases import PHASE_ORDER
from firedup.timeline.run import Run

# Types of the first-class flags; a value of another type is kept only in `config_json`.
FLAG_TYPES: dict[str, pl.DataType] = {
    "model_path": pl.Utf8(), "tp_size": pl.Int64(), "dp_size": pl.Int64(), "pp_size": pl.Int64(),
    "ep_size": pl.Int64(), "disable_cuda_graph": pl.Boolean(), "cuda_graph_max_bs": pl.Int64(),
    "enable_torch_compile": pl.Boolean(), "speculative_algorithm": pl.Utf8(), "quantization": pl.Utf8(),
    "mem_fraction_static": pl.Float64(), "attention_backend": pl.Utf8(), "load_format": pl.Utf8(),
    "nnodes": pl.Int64(),
}
assert set(FLAG_TYPES) == set(COMMON_FLAGS), "every common flag needs a column type"

RUN_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.Utf8(),  # content hash prefix + "-" + run_index: stable across paths and ingests
    "content_hash": pl.Utf8(),  # sha256 of the source file's bytes
    "source": pl.Utf8(),
    "run_index": pl.Int64(),  # 0 for the first startup in the source, 1 after a restart, ...
    "engine": pl.Utf8(),
    "outcome": pl.Utf8(),  # ready | crashed | incomplete
    "ready_kind": pl.Utf8(),  # server (the ready line) | health | engine (engine up, no server: not ready)
    "ready_seconds": pl.Float64(),  # time to ready; null unless outcome == ready
    "total_seconds": pl.Float64(),  # first line to ready, or to the last line
    "begins_mid_startup": pl.Boolean(),  # the log starts late: total_seconds is only a lower bound
    "first_ts": pl.Datetime("us"),
    "ready_ts": pl.Datetime("us"),
    "last_ts": pl.Datetime("us"),
    "end_ts": pl.Datetime("us"),  # Run.end_ts: the ready line, the crash's first line, or the last line
    "seconds_to_end": pl.Float64(),  # Run.seconds_to_end: what every view shows as the run's time
    "lower_bound": pl.Boolean(),  # Run.lower_bound: seconds_to_end undercounts (the log begins late)
    "stopped_in": pl.Utf8(),  # incomplete runs: the phase the log stops in
    "crash_category": pl.Utf8(),
    "crash_phase": pl.Utf8(),
    "crash_line": pl.Int64(),
    "crash_message": pl.Utf8(),
    "crash_after_ready": pl.Boolean(),
    "crash_ts": pl.Datetime("us"),
    "crash_offset": pl.Float64(),  # seconds from the first line to the crash (Crash.offset)
    "n_ranks": pl.Int64(),
    "health_url": pl.Utf8(),  # where uvicorn said it listens
    "date_source": pl.Utf8(),
    "config_complete": pl.Boolean(),  # False when the args dump was cut short
    "config_inferred": pl.Utf8(),  # JSON {flag: evidence} for flags read from the log's shape
    "config_json": pl.Utf8(),  # JSON of every flag, the source of the extra flag columns
    # Silent time explained (timeline.silence): "cold" when a cache of the engine was cold at this
    # start, "warm" when none was and one was warm, else "unknown"; the verdicts and silences as JSON
    "cache_start": pl.Utf8(),
    "caches_json": pl.Utf8(),  # {kind: {verdict, basis, reason, phase, seconds, evidence}}
    "silent_seconds": pl.Float64(),  # the silences' seconds together
    "silences_json": pl.Utf8(),  # [the contract's silences]
    # The launch (timeline.launch): where a wait loop's clock starts. `launch_gap` is the seconds
    # before the first line, `launch_low`/`launch_high` its range where estimated
    "launch_ts": pl.Datetime("us"),
    "launch_source": pl.Utf8(),  # measured | log | given | estimated | unknown
    "launch_gap": pl.Float64(),
    "launch_low": pl.Float64(),
    "launch_high": pl.Float64(),
    "launch_basis": pl.Utf8(),
    "launch_first_kind": pl.Utf8(),  # own | collector: what the first line's time is (Run.first_from_collector)
    "launch_to_ready": pl.Float64(),  # Run.launch_to_ready: launch -> ready
    "launch_to_end": pl.Float64(),  # Run.launch_to_end: launch -> ready, the crash or the log's end
    "cache_keys_json": pl.Utf8(),  # {cache kind: the key its cache was stored under} (Run.cache_keys)
    "advice_json": pl.Utf8(),  # [the contract's advice items] (Run.advice: timeline.advice)
    **FLAG_TYPES,
}

PHASE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.Utf8(),
    "source": pl.Utf8(),
    "run_index": pl.Int64(),
    "scope": pl.Utf8(),  # run (critical path over ranks) | rank
    "rank": pl.Utf8(),  # null for scope == run
    "phase": pl.Utf8(),  # a name of timeline.PHASE_ORDER
    "detail": pl.Utf8(),  # which graph: decode, piecewise, extend, ...
    "start": pl.Datetime("us"),
    "end": pl.Datetime("us"),
    "start_offset": pl.Float64(),  # seconds after the run's first line
    "seconds": pl.Float64(),
    "source_kind": pl.Utf8(),  # reported (the log states the duration) | timestamps
    "line": pl.Int64(),  # the line that ends the phase or states its duration
    "open": pl.Boolean(),  # began but never ended in the log
}

MILESTONE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.Utf8(),
    "source": pl.Utf8(),
    "run_index": pl.Int64(),
    "name": pl.Utf8(),
    "rank": pl.Utf8(),
    "model": pl.Utf8(),  # target | draft for per-model lines (speculative decoding), else null
    "ts": pl.Datetime("us"),
    "offset": pl.Float64(),  # seconds after the run's first line
    "line": pl.Int64(),
    "avail_mem_gb": pl.Float64(),  # free GPU memory the line states, if any
    "text": pl.Utf8(),  # the line as the server printed it (cut at MAX_TEXT characters)
    "fields_json": pl.Utf8(),  # every value the rule captured
}

MAX_TEXT = 2000
# The namespace of the flags that are not common flags, in every table and export: a key a log
# states (`outcome`, `load_weights_s`, `=HYPERLINK(...)`) is never one of firedup's own columns
# and never starts a spreadsheet formula.
FLAG_PREFIX = "flag."
# Flags that identify a process rather than configure it: never a reason to group runs.
IDENTITY_FLAGS = frozenset({
    "port", "host", "nccl_port", "random_seed", "dist_init_addr", "node_rank", "file_storage_path",
    "log_level", "log_level_http", "log_requests", "log_requests_level", "api_key", "download_dir",
    "tokenizer_path", "served_model_name", "model_path_alias", "metrics_http_port", "bootstrap_port",
    "disaggregation_bootstrap_port", "decode_log_interval", "crash_dump_folder", "weight_version",
})


@dataclass
class Runs:
    """Parsed runs as three polars frames (see the module docstring for the schemas)."""

    runs: pl.DataFrame
    phases: pl.DataFrame
    milestones: pl.DataFrame
    errors: list[InputError] = field(default_factory=list)
    # inputs read fine that hold no server's log (`source: why`): no runs, said once, not errors
    skipped: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return self.runs.height

    @property
    def flag_columns(self) -> list[str]:
        """Columns of `runs` that hold flags: the common ones first, then the rest (`flag.KEY`) by name."""
        return [c for c in self.runs.columns if c in FLAG_TYPES or c.startswith(FLAG_PREFIX)]

    def select(self, run_ids: Iterable[str]) -> Runs:
        """The same tables restricted to some runs."""
        ids = pl.Series(list(run_ids), dtype=pl.Utf8)
        return Runs(self.runs.filter(pl.col("run_id").is_in(ids.implode())),
                    self.phases.filter(pl.col("run_id").is_in(ids.implode())),
                    self.milestones.filter(pl.col("run_id").is_in(ids.implode())), list(self.errors),
                    list(self.skipped))


# --- building the frames from parsed runs ------------------------------------------------


def content_hash(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes: what makes a re-ingested log a no-op."""
    from firedup.timeline.pipeline import file_sha256

    return file_sha256(path)


def _hash_of_source(source: str, runs: Sequence[Run]) -> str:
    """The runs' content hash as taken when their file was read; else (runs parsed without
    `content_hash=True`) the file's at `source`, which must still be the path it was read from;
    else (stdin, a file gone) a hash of the parsed content, which identifies it as well."""
    taken = next((r.content_hash for r in runs if r.content_hash), None)
    if taken is not None:
        return taken
    if source != "-" and Path(source).is_file():
        return content_hash(source)
    contracts = [r.as_contract() for r in runs]
    try:
        payload = json.dumps(contracts, sort_keys=True, default=str)
    except TypeError:  # a flag's dict keyed by a tuple, or by keys of mixed kinds
        payload = json.dumps(json_ready(contracts), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _coerce(value: Any, dtype: pl.DataType) -> Any:
    """A flag value as its column type, or None when it is not of that type (an integer beyond
    64 bits, a float that is not finite: `core.numbers`)."""
    if value is None:
        return None
    if dtype == pl.Boolean():
        return value if isinstance(value, bool) else None
    if dtype == pl.Int64():
        if isinstance(value, bool):
            return None
        if isinstance(value, str) and value.strip().lstrip("-").isdecimal() and value.isascii() and len(value) < 21:
            value = int(value)
        return value if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX else None
    if dtype == pl.Float64():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        number = float(value) if not isinstance(value, int) or abs(value) < 2**1023 else math.inf
        return number if math.isfinite(number) else None
    return valid_text(value if isinstance(value, str) else str(value))


def _json(value: Any) -> str:
    """A value's JSON for a text column: valid UTF-8, no NaN or Infinity (`finite`). A lone
    surrogate (an undecodable byte of a file name) is escaped in the JSON text as a JSON string's
    `\\\\xff` (`valid_json`): `valid_text` there wrote `\\xff`, which no JSON reader takes back,
    and escaping the values first missed a tuple's and a `default=str` object's."""
    try:
        text = json.dumps(value, sort_keys=True, default=json_default, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):  # a NaN, a key JSON cannot hold (a tuple) or keys that do not sort
        text = json.dumps(finite(json_ready(value)), sort_keys=True, default=json_default, ensure_ascii=False,
                          allow_nan=False)
    return valid_json(text)


def row_config_key(row: Mapping[str, Any]) -> ConfigKey:
    """A runs row's `core.config.config_key`: its parsed config (`config_json`), each flag's column
    where the config lacks it (a store's row), so a row and its `Run` are of one config."""
    config = json.loads(row.get("config_json") or "{}")
    return config_key(row.get("engine"), {**{f: row.get(f) for f in SAME_CONFIG_FLAGS}, **config})


def cache_start(run: Run) -> str:
    """The run's `timeline.findings.cache_start`: cold, warm or unknown."""
    return start_of(run.caches)


def _run_row(run: Run, chash: str, source: str) -> dict[str, Any]:
    crash = run.crash
    total = run.total_seconds
    row: dict[str, Any] = {
        "run_id": f"{chash[:16]}-{run.run_index}", "content_hash": chash, "source": source,
        "run_index": run.run_index, "engine": run.engine, "outcome": run.outcome, "ready_kind": run.ready_kind,
        "ready_seconds": total if run.outcome == "ready" else None, "total_seconds": total,
        "begins_mid_startup": run.begins_mid_startup,
        "first_ts": run.first_ts.dt if run.first_ts else None,
        "ready_ts": run.ready_ts.dt if run.ready_ts else None,
        "last_ts": run.last_ts.dt if run.last_ts else None,
        "end_ts": run.end_ts.dt if run.end_ts else None, "seconds_to_end": run.seconds_to_end,
        "lower_bound": run.lower_bound,
        "stopped_in": run.stopped_in,
        "crash_category": crash.category if crash else None, "crash_phase": crash.phase if crash else None,
        "crash_line": crash.line if crash else None, "crash_message": crash.message if crash else None,
        "crash_after_ready": crash.after_ready if crash else None,
        "crash_ts": crash.ts.dt if crash and crash.ts else None, "crash_offset": crash.offset if crash else None,
        "n_ranks": len(run.ranks), "health_url": run.health_url, "date_source": run.date_source,
        "config_complete": run.config_complete, "config_inferred": _json(run.config_inferred),
        "config_json": _json({k: v for k, v in run.config.items() if v is not None}),
        "cache_start": cache_start(run), "caches_json": _json({k: v.as_contract() for k, v in run.caches.items()}),
        "silent_seconds": sum(x.seconds for x in run.silences),
        "silences_json": _json([x.as_contract(run.first_ts) for x in run.silences]),
        **_launch_cells(run),
        "cache_keys_json": _json(run.cache_keys),
        "advice_json": _json([item.as_contract() for item in run.advice]),
    }
    for flag, dtype in FLAG_TYPES.items():
        row[flag] = _coerce(run.config.get(flag), dtype)
    return row


def _launch_cells(run: Run) -> dict[str, Any]:
    launch = run.launch
    if launch is None:
        return {"launch_source": "unknown"}
    return {"launch_ts": launch.ts.dt if launch.ts else None, "launch_source": launch.source,
            "launch_gap": launch.gap, "launch_low": launch.low, "launch_high": launch.high,
            "launch_basis": launch.basis, "launch_to_ready": run.launch_to_ready, "launch_to_end": run.launch_to_end,
            "launch_first_kind": "collector" if run.first_from_collector else "own"}


def _phase_rows(run: Run, run_id: str, source: str) -> list[dict[str, Any]]:
    rows = []
    for p in run.phases:
        rows.append({
            "run_id": run_id, "source": source, "run_index": run.run_index, "scope": p.scope, "rank": p.rank,
            "phase": p.name, "detail": p.detail, "start": p.start.dt if p.start else None,
            "end": p.end.dt if p.end else None,
            "start_offset": p.start.minus(run.first_ts) if p.start and run.first_ts else None,
            "seconds": p.seconds, "source_kind": p.source, "line": p.line, "open": p.open,
        })
    return rows


def _avail_mem(fields: dict[str, Any]) -> float | None:
    for key in ("avail_mem_gb", "available_gpu_mem_gb"):
        value = fields.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _milestone_rows(run: Run, run_id: str, source: str) -> list[dict[str, Any]]:
    rows = []
    for m in run.milestones:
        fields = {k: v for k, v in m.fields.items() if not k.startswith("_") and k not in ("args", "starts_run")}
        rows.append({
            "run_id": run_id, "source": source, "run_index": run.run_index, "name": m.name, "rank": m.rank,
            "model": m.model, "ts": m.ts.dt if m.ts else None,
            "offset": m.ts.minus(run.first_ts) if m.ts and run.first_ts else None,
            "line": m.line, "avail_mem_gb": _avail_mem(m.fields), "text": m.text[:MAX_TEXT],
            "fields_json": _json(fields),
        })
    return rows


def base_frames(runs: Sequence[Run], names: Mapping[str, str] | None = None
                ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Runs -> (runs, phases, milestones) with the fixed schemas (no extra flag columns).

    `names`: source -> how the tables name it (the report's paths without this machine); the
    runs themselves are left as they are, and their ids do not depend on the name."""
    by_source: dict[str, list[Run]] = {}
    for run in runs:
        by_source.setdefault(run.source, []).append(run)
    hashes = {source: _hash_of_source(source, rs) for source, rs in by_source.items()}
    named = names or {}
    run_rows, phase_rows, milestone_rows = [], [], []
    for run in runs:
        # a file name that is no UTF-8 (`\xff` in it): a table holds its bytes as escapes
        source = valid_text(named.get(run.source) or run.source)
        row = _run_row(run, hashes[run.source], source)
        run_rows.append(row)
        phase_rows.extend(_phase_rows(run, row["run_id"], source))
        milestone_rows.extend(_milestone_rows(run, row["run_id"], source))
    return (pl.DataFrame(run_rows, schema=RUN_SCHEMA, orient="row") if run_rows else empty(RUN_SCHEMA),
            pl.DataFrame(phase_rows, schema=PHASE_SCHEMA) if phase_rows else empty(PHASE_SCHEMA),
            pl.DataFrame(milestone_rows, schema=MILESTONE_SCHEMA) if milestone_rows else empty(MILESTONE_SCHEMA))


def empty(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def flag_column(key: str) -> str:
    """The column of a flag a run states: a common flag's own, else `flag.KEY`."""
    return key if key in FLAG_TYPES else FLAG_PREFIX + key


def shown_flag(column: str) -> str:
    """A flag's name as prose shows it (a group's label, a note, a report): the key the log
    states, without the tables' `flag.` namespace, on one line."""
    return visible(column.removeprefix(FLAG_PREFIX), one_line=True)


def _column_type(values: list[Any]) -> pl.DataType:
    """One type per flag across the runs: Boolean, Int64 (every value an int64), Float64 (every
    value a finite number), else text (a value of another type written as its JSON)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pl.Boolean()
    if present and all(isinstance(v, int) and not isinstance(v, bool) and INT64_MIN <= v <= INT64_MAX
                       for v in present):
        return pl.Int64()
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) and _finite_number(v)
                       for v in present):
        return pl.Float64()
    return pl.Utf8()


def _finite_number(value: float) -> bool:
    return abs(value) < 2**1023 if isinstance(value, int) else math.isfinite(value)


def with_flag_columns(runs: pl.DataFrame) -> pl.DataFrame:
    """Add a column `flag.KEY` for every flag in `config_json` that is not a common flag, typed
    per key (`_column_type`: values that mix types across runs, or lists, become JSON text).
    Linear in the number of flags: each key's values are gathered in one pass over the runs."""
    configs = [json.loads(text) if text else {} for text in runs["config_json"].to_list()]
    by_key: dict[str, list[Any]] = {}
    for i, config in enumerate(configs):
        for key, value in config.items():
            if key in FLAG_TYPES:
                continue
            values = by_key.get(key)
            if values is None:
                values = by_key[key] = [None] * len(configs)
            values[i] = value
    columns = []
    for key in sorted(by_key):
        values = by_key[key]
        dtype = _column_type(values)
        if dtype == pl.Utf8():
            values = [v if v is None else valid_text(v) if isinstance(v, str) else _json(v) for v in values]
        elif dtype == pl.Float64():
            values = [None if v is None else float(v) for v in values]
        columns.append(pl.Series(valid_text(flag_column(key)), values, dtype=dtype))
    return runs.with_columns(columns) if columns else runs


def finish(runs: pl.DataFrame, phases: pl.DataFrame, milestones: pl.DataFrame,
           errors: list[InputError]) -> Runs:
    """Frames with the fixed schemas -> a `Runs`, one row per run_id, flags expanded."""
    runs = _finite_floats(runs.unique(subset="run_id", keep="first", maintain_order=True))
    phases, milestones = _finite_floats(phases), _finite_floats(milestones)
    # rows of a store written before these columns: the log's end stands in for the startup's
    runs = runs.with_columns(pl.col("seconds_to_end").fill_null(pl.col("total_seconds")),
                             pl.col("end_ts").fill_null(pl.coalesce("ready_ts", "last_ts")),
                             pl.col("lower_bound").fill_null(pl.col("begins_mid_startup")))
    # the launch as every view reads it: a store's rows from before launches get their engine's estimate
    runs = settle_launches(runs)
    # the same log under two paths (or in a store and on disk): keep the rows of the kept copy
    kept = runs.select("run_id", "source")
    phases = phases.join(kept, on=["run_id", "source"], how="semi", maintain_order="left")
    milestones = milestones.join(kept, on=["run_id", "source"], how="semi", maintain_order="left")
    return Runs(with_flag_columns(runs), phases, milestones, errors)


def _finite_floats(frame: pl.DataFrame) -> pl.DataFrame:
    """NaN and infinities as null: what a store written before the numbers were checked where
    they are read may hold (`core.numbers`), so it poisons no view."""
    floats = [c for c, dt in frame.schema.items() if dt == pl.Float64()]
    return frame.with_columns(pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c) for c in floats) if floats else frame


def from_runs(runs: Sequence[Run], errors: Sequence[InputError] = (), names: Mapping[str, str] | None = None) -> Runs:
    """Parsed `Run` objects -> tables (`names`: see `base_frames`)."""
    return finish(*base_frames(runs, names), list(errors))


# --- views over the frames ----------------------------------------------------------------


def phase_seconds(runs: Runs) -> pl.DataFrame:
    """Wide: one row per run, one column per run-level phase (seconds, details summed).

    A phase that did not happen in a run counts 0 s there, so that medians and deltas
    between groups stay defined (a debug run spends 0 s capturing graphs).
    """
    phases = runs.phases.filter((pl.col("scope") == "run") & (pl.col("phase") != "total"))
    names = [p for p in PHASE_ORDER if p in set(phases["phase"].to_list())]
    extra = sorted(set(phases["phase"].to_list()) - set(names))
    summed = phases.group_by("run_id", "phase").agg(pl.col("seconds").fill_null(0.0).sum())
    ids = runs.runs.select("run_id")
    if summed.is_empty():
        return ids
    wide = summed.pivot(on="phase", index="run_id", values="seconds")
    ordered = [n for n in (*names, *extra) if n in wide.columns]
    return ids.join(wide, on="run_id", how="left").select(
        "run_id", *(pl.col(n).fill_null(0.0) for n in ordered))


def varying_flags(frame: pl.DataFrame, flags: Sequence[str]) -> list[str]:
    """Flags (of `flags`) that take more than one value across the rows, identity flags aside.

    Only the runs of engines that state a flag at all count: one engine's own flag does not
    "differ" because another engine's run beside it has no such flag (a run of the same engine that
    lacks it, say an older version, still counts).
    """
    out = []
    columns = set(frame.columns)  # a set: `frame.columns` builds a list each time (quadratic in flags)
    by_engine = "engine" in columns and frame["engine"].n_unique() > 1
    for flag in flags:
        if flag not in columns or flag.removeprefix(FLAG_PREFIX) in IDENTITY_FLAGS:
            continue
        rows = frame
        if by_engine:
            stating = frame.filter(pl.col(flag).is_not_null())["engine"].unique().implode()
            rows = frame.filter(pl.col("engine").is_in(stating))
        if rows[flag].n_unique() > 1:
            out.append(flag)
    return out


def summary(runs: Runs) -> pl.DataFrame:
    """What `firedup runs` shows: identity, outcome, time to ready (or to the crash or the log's
    end: `seconds_to_end`; from the launch: `launch_to_end`, `launch_source` saying whether it is
    estimated), varying flags, seconds per phase. Not the contract's `total_seconds`: for a crash it
    runs on through the traceback, a second figure for the one fact the views state."""
    flags = varying_flags(runs.runs, runs.flag_columns)
    base = runs.runs.select(
        "run_id", "source", "run_index", "engine", "outcome", "ready_seconds",
        "stopped_in", "ready_kind", "crash_category", "crash_phase", "first_ts", "end_ts", "seconds_to_end",
        "lower_bound", "crash_ts", "crash_offset", "launch_source", "launch_to_end", *flags)
    wide = phase_seconds(runs)
    renamed = wide.rename({c: f"{c}_s" for c in wide.columns if c != "run_id"})
    return base.join(renamed, on="run_id", how="left", maintain_order="left")


__all__ = ["MILESTONE_SCHEMA", "PHASE_SCHEMA", "RUN_SCHEMA", "Runs", "from_runs", "phase_seconds", "row_config_key",
           "summary", "varying_flags"]

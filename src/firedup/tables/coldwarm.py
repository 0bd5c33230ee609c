"""Cold and warm starts of one configuration, told apart so that they are never pooled silently.

A start is cold when a cache the engine keeps across starts was empty (kernels JIT-compiled,
torch.compile run, autotuning redone): the same flags, a different time. One budget over both is
too tight for the next cold start or too loose for a warm one, and a median over both describes
neither. Evidence, strongest first:

* the run's own cache verdicts (`caches`, timeline.silence): a line or a timing says cold;
* a phase many times its twin's: the same phase took `TWIN_RATIO` times as long as in another run
  of the same configuration, and `TWIN_SECONDS` more (a graph capture of 75 s against 10 s while
  the kernel JIT compiled, which no line of the log names): `timeline.twins`' rule, the one the
  run's own cache verdicts and `tables.advice` use;
* the compilers `wait --pid` saw (recorded in the run's cache verdicts as well).

`split` says which run is which and why; `budget` and `compare` give each side its own figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from firedup.core.config import SAME_CONFIG_FLAGS, ConfigKey, model_known
from firedup.core.units import fmt_duration
from firedup.tables.frames import Runs, phase_seconds, row_config_key
from firedup.timeline.twins import TWIN_RATIO, TWIN_SECONDS, SlowerThanTwin, slower_than_twins


@dataclass
class ColdWarm:
    """Runs of one group split into cold and warm starts, each cold one with its reason."""

    cold: list[str]  # run ids
    warm: list[str]
    reasons: dict[str, str] = field(default_factory=dict)  # cold run id -> why
    sources: dict[str, str] = field(default_factory=dict)  # run id -> its log (for the text)

    def as_json(self) -> dict[str, Any]:
        return {"cold": [{"run_id": r, "source": self.sources.get(r), "why": self.reasons.get(r)} for r in self.cold],
                "warm": [{"run_id": r, "source": self.sources.get(r)} for r in self.warm]}


def _cold_by_verdict(row: dict[str, Any]) -> str | None:
    """The reason of the run's own cold cache verdict, if it has one."""
    if row.get("cache_start") != "cold":
        return None
    caches = json.loads(row.get("caches_json") or "{}")
    for kind, verdict in caches.items():
        if verdict.get("verdict") == "cold":
            reason = verdict.get("reason") or "its log says so"
            return f"cold {kind} caches: {reason}"
    return "a cache was cold at this start"


def _cold_by_twin(wide: pl.DataFrame, ids: list[str], sources: dict[str, str]) -> dict[str, str]:
    """Runs with a phase slower than its fastest twin's (`timeline.twins`), the first such phase's reason."""
    out: dict[str, str] = {}
    for found in twin_findings(wide, ids):
        if found.run not in out:
            out[found.run] = (f"{found.phase} took {fmt_duration(found.seconds)}, {found.ratio:.1f} x the "
                              f"{fmt_duration(found.twin_seconds)} of the same configuration in "
                              f"{sources.get(found.twin, found.twin)}: work a warm start skips (a kernel JIT or a "
                              "compile cache) ran here")
    return out


def phase_durations(wide: pl.DataFrame, ids: list[str]) -> dict[str, dict[str, float]]:
    """What the twin rule reads of `ids` (one configuration's runs): each run's seconds per
    phase, from `frames.phase_seconds`' wide table (unattributed time is no phase's work)."""
    rows = wide.filter(pl.col("run_id").is_in(pl.Series(ids, dtype=pl.Utf8).implode())).to_dicts()
    return {r["run_id"]: {k: float(v or 0.0) for k, v in r.items() if k not in ("run_id", "unattributed")}
            for r in rows}


def twin_findings(wide: pl.DataFrame, ids: list[str]) -> list[SlowerThanTwin[str]]:
    """`timeline.twins.slower_than_twins` over the runs `ids` of one configuration."""
    return slower_than_twins(phase_durations(wide, ids))


def split(runs: Runs, run_ids: list[str]) -> ColdWarm | None:
    """The cold and warm starts among `run_ids` (one configuration's ready runs), or None when
    they are not both there."""
    if len(run_ids) < 2:
        return None
    frame = runs.runs.filter(pl.col("run_id").is_in(pl.Series(run_ids, dtype=pl.Utf8).implode()))
    rows = {r["run_id"]: r for r in frame.select("run_id", "source", "run_index", "cache_start", "caches_json",
                                                  "cache_keys_json").to_dicts()}
    sources = {rid: r["source"] + (f" #{r['run_index'] + 1}" if r["run_index"] else "") for rid, r in rows.items()}
    wide = phase_seconds(runs.select(run_ids))
    reasons: dict[str, str] = {}
    for key, same in _configs(frame).items():
        found = {rid: why for rid in same if (why := _cold_by_verdict(rows[rid])) is not None}
        twins = _cold_by_twin(wide, same, sources) if model_known(key) else {}
        for rid, why in twins.items():
            found.setdefault(rid, why)
        if found and len(found) < len(same):  # both cold and warm starts of this configuration
            reasons.update(found)
    cold = [rid for rid in run_ids if rid in reasons]
    warm = [rid for rid in run_ids if rid not in reasons]
    if not cold or not warm:
        return None
    _add_key_changes(reasons, cold, warm, rows)
    return ColdWarm(cold, warm, reasons, sources)


def _configs(frame: pl.DataFrame) -> dict[ConfigKey, list[str]]:
    """The runs of `frame` by configuration (`core.config.config_key`): every flag that changes
    start-up time alike, not only those the runs were grouped by (`--by engine` puts debug and
    production runs together, and production's graph capture is no cache), so cold and warm are of
    one configuration."""
    configs: dict[ConfigKey, list[str]] = {}
    for row in frame.select("run_id", "engine", *(f for f in ("config_json", *SAME_CONFIG_FLAGS)
                                                   if f in frame.columns)).to_dicts():
        configs.setdefault(row_config_key(row), []).append(row["run_id"])
    return configs


def _add_key_changes(reasons: dict[str, str], cold: list[str], warm: list[str],
                     rows: dict[str, dict[str, Any]]) -> None:
    """To each cold start's reason, the cache key it stored that no warm start had: the reason a
    start that should have been warm was cold."""
    keys = {rid: json.loads(r.get("cache_keys_json") or "{}") for rid, r in rows.items()}
    for rid in cold:
        for kind, key in keys.get(rid, {}).items():
            theirs = {keys.get(w, {}).get(kind) for w in warm} - {None}
            if theirs and key not in theirs:
                reasons[rid] += (f"; its {kind} cache key {key} is not the warm starts' ({', '.join(sorted(theirs))}):"
                                 " the key changed, so the cache could not be used")


def key_changes(runs: Runs, run_ids: list[str], label: str) -> list[str]:
    """Notes for a configuration whose runs stored a cache under different keys (a compile cache's
    `torch_compile_cache/<hash>`): the reason a start that should have been warm was cold."""
    if len(run_ids) < 2 or "cache_keys_json" not in runs.runs.columns:
        return []
    frame = runs.runs.filter(pl.col("run_id").is_in(pl.Series(run_ids, dtype=pl.Utf8).implode()))
    by_kind: dict[str, dict[str, list[str]]] = {}
    for row in frame.select("source", "cache_keys_json").to_dicts():
        for kind, key in json.loads(row["cache_keys_json"] or "{}").items():
            by_kind.setdefault(kind, {}).setdefault(key, []).append(row["source"])
    notes = []
    for kind, keys in by_kind.items():
        if len(keys) > 1:
            listed = "; ".join(f"{key} ({', '.join(srcs[:2])}{', ...' if len(srcs) > 2 else ''})"
                               for key, srcs in keys.items())
            notes.append(f"{label}: the {kind} cache key changed between runs of this configuration ({listed}): a "
                         "start under a new key finds no cache and compiles again, the usual reason a start "
                         "expected warm was cold")
    return notes


__all__ = ["TWIN_RATIO", "TWIN_SECONDS", "ColdWarm", "key_changes", "model_known", "phase_durations", "split", "twin_findings"]

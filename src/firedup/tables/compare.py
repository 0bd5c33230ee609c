"""Compare groups of runs by their flags: which configuration starts slower, and which phase is why.

Only runs that reached ready have a time to ready; crashed and incomplete runs are counted
and named but not timed. One population of comparable runs is compared, runs of one engine
and model (a 7B model's start says nothing about a 671B one), unless the grouping itself is
by model or engine. Without `--by`, the one with the most timed ready runs: runs whose model
is unknown (no args line) are compared with each other only when they are the most, which the
output says, and a note states the choice, what else there was and how to compare it. With
`--by`, a known model, the one whose timed ready runs span the most groups (`--by engine`
compares the one model run on both engines), then has the most timed ready runs. Everything
left out is listed with its reason.

Statistics: median, p90 (linear interpolation between order statistics, like numpy's
default) and max of the time to ready. Per phase, the median over the group's ready runs,
where a phase that did not happen counts 0 s. The difference between two groups is the
difference of their medians; the phase whose median moved most explains most of it (never
a phase that spans others, such as an engine_init over compile and graph capture: the step
inside it that moved does).
"""

from __future__ import annotations

import difflib
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from firedup.core.config import value_changes
from firedup.core.safe import visible
from firedup.core.units import cut_end
from firedup.errors import UnknownFlagError
from firedup.tables.coldwarm import ColdWarm, key_changes, split
from firedup.tables.frames import FLAG_PREFIX, FLAG_TYPES, IDENTITY_FLAGS, Runs, phase_seconds, shown_flag
from firedup.tables.launches import from_launch
from firedup.timeline.phases import spanned, umbrella_phases

# Friendly names for well-known contrasts: the motivating story's debug vs production.
GROUP_NAMES: dict[tuple[str, Any], str] = {
    ("disable_cuda_graph", True): "debug",
    ("disable_cuda_graph", False): "production",
    ("enable_torch_compile", True): "torch.compile",
    ("cache_start", "cold"): "cold start",
    ("cache_start", "warm"): "warm start",
}
# Columns besides flags that make sense as a grouping (`cache_start`: cold vs warm starts).
EXTRA_KEYS = ("engine", "cache_start")
# What makes runs comparable at all, unless the user groups by it.
POPULATION_KEYS = ("engine", "model_path")
# Without --by, runs of a known model are compared when at least this many can be timed, even
# if more runs of unknown (maybe different) models could be.
MIN_TIMED_TO_COMPARE = 2
# Parts of a flag's name (split at `_`) that mark a value each run has alone, so no grouping
# by default (identity flags such as `port` are never compared at all).
UNGROUPABLE_NAME_PARTS: dict[str, frozenset[str]] = {
    "a seed": frozenset({"seed"}),
    "a port or address": frozenset({"port", "ports", "host", "addr", "url"}),
    "a path": frozenset({"path", "paths", "dir", "file", "folder"}),
}
PATH_STARTS = ("/", "./", "../", "~/")


@dataclass
class LeftOut:
    run_id: str | None
    source: str
    run_index: int | None
    reason: str
    # The reason in a few words, the same for every run left out alike (`crashed`, `of another
    # model`, ...): what a chart counts when it says why it draws fewer runs than it was given.
    kind: str = "other"

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "source": self.source, "run_index": self.run_index, "reason": self.reason,
                "kind": self.kind}


@dataclass
class Coverage:
    """How many runs a view of a grouping shows (the timed ready runs) of how many it was given,
    and, per short reason, how many it leaves out. Unreadable inputs are no runs: counted apart."""

    shown: int
    total: int
    left_out: dict[str, int]
    unreadable: int = 0

    @property
    def complete(self) -> bool:
        return self.shown == self.total and not self.unreadable

    def text(self, verb: str = "shows") -> str:
        """`shows 2 of 41 runs; left out: 30 crashed, 9 of another model`."""
        out = f"{verb} {self.shown} of {_n(self.total, 'run')}"
        reasons = [f"{n} {kind}" for kind, n in self.left_out.items()]
        if self.unreadable:
            reasons.append(_n(self.unreadable, "unreadable input"))
        return out + (f"; left out: {', '.join(reasons)}" if reasons else "")

    def as_json(self) -> dict[str, Any]:
        return {"shown": self.shown, "total": self.total, "left_out": dict(self.left_out),
                "unreadable": self.unreadable}


def coverage(grouping: Grouping) -> Coverage:
    """What a view of the grouping's timed runs (`plot compare`, `plot distribution`) leaves out."""
    shown = sum(g.n for g in grouping.groups)
    kinds: dict[str, int] = {}
    for lo in grouping.left_out:
        if lo.run_id is not None:
            kinds[lo.kind] = kinds.get(lo.kind, 0) + 1
    ordered = dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    return Coverage(shown, len(grouping.runs), ordered, sum(1 for lo in grouping.left_out if lo.run_id is None))


@dataclass
class Group:
    key: dict[str, Any]
    label: str
    run_ids: list[str]  # the ready runs that are timed
    ready_seconds: list[float]
    not_timed: list[LeftOut] = field(default_factory=list)  # same flags, but crashed or incomplete
    phases: dict[str, float] = field(default_factory=dict)  # phase -> median seconds
    # per timed run, its time from launch as a budget counts it and how (tables.launches.from_launch)
    launch_seconds: list[float] = field(default_factory=list)
    launch_kinds: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ready_seconds)

    @property
    def median(self) -> float | None:
        return quantile(self.ready_seconds, 0.5)

    @property
    def p90(self) -> float | None:
        return quantile(self.ready_seconds, 0.9)

    @property
    def max(self) -> float | None:
        return max(self.ready_seconds) if self.ready_seconds else None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "label": self.label, "n": self.n,
            "total_seconds": {"median": _r(self.median), "p90": _r(self.p90), "max": _r(self.max),
                              "min": _r(min(self.ready_seconds) if self.ready_seconds else None)},
            "phases": {name: {"median": _r(sec)} for name, sec in self.phases.items()},
            "runs": self.run_ids,
            "not_timed": [lo.as_json() for lo in self.not_timed],
        }


@dataclass
class Delta:
    base: Group
    other: Group
    total_seconds: float
    phases: dict[str, float]
    main_phase: str | None
    main_phase_seconds: float | None
    flags_differ: dict[str, tuple[list[Any], list[Any]]]

    def as_json(self) -> dict[str, Any]:
        return {
            "from": self.base.key, "to": self.other.key, "total_seconds": _r(self.total_seconds),
            "phases": {name: _r(sec) for name, sec in self.phases.items()},
            "main_phase": self.main_phase, "main_phase_seconds": _r(self.main_phase_seconds),
            "flags_differ": {flag: {"from": a, "to": b} for flag, (a, b) in self.flags_differ.items()},
        }


@dataclass
class CacheDifference:
    """Runs of one group (the same config) that differ in a cache's state: how much longer the
    phase holding the cold cache's work took in the cold runs, and the lines that say so."""

    group: str
    kind: str
    phase: str | None
    seconds: float | None  # median of `phase` in the cold runs minus in the others
    cold: list[str]  # run ids
    others: list[str]
    others_verdicts: dict[str, int]  # verdict -> runs, for the others
    reason: str  # the cold verdict's, in the slowest cold run
    source: str  # that run's log
    evidence: list[tuple[int, str]]

    def text(self) -> str:
        from firedup.core.units import fmt_duration as dur

        amount = ""
        if self.seconds is not None and self.phase is not None:
            amount = f": {'+' if self.seconds >= 0 else '-'}{dur(abs(self.seconds))} in {self.phase}"
        others = ", ".join(f"{n} {v}" for v, n in sorted(self.others_verdicts.items()))
        cold = "1 cold run" if len(self.cold) == 1 else f"{len(self.cold)} cold runs"
        lines = "; ".join(f"line {n} `{t if len(t) <= 60 else t[:59] + '…'}`" for n, t in self.evidence[:3])
        return (f"cold {self.kind} caches{amount} ({cold} vs {others}; {self.reason}; evidence in "
                f"{visible(self.source, one_line=True)}: {lines})")

    def as_json(self) -> dict[str, Any]:
        return {"group": self.group, "kind": self.kind, "phase": self.phase, "seconds": _r(self.seconds),
                "cold_runs": self.cold, "other_runs": self.others, "others_verdicts": self.others_verdicts,
                "reason": self.reason, "source": self.source,
                "evidence": [{"line": n, "text": t} for n, t in self.evidence], "text": self.text()}


@dataclass
class Grouping:
    """Runs split into groups by flags: what compare and budget both start from."""

    by: list[str]
    by_auto: bool
    population: dict[str, Any]
    groups: list[Group]
    left_out: list[LeftOut]
    notes: list[str]
    runs: Runs


@dataclass
class Comparison:
    grouping: Grouping
    deltas: list[Delta]
    headline: str
    caches: list[CacheDifference] = field(default_factory=list)
    # group label -> its cold and warm starts apart (tables.coldwarm), never pooled silently
    splits: dict[str, ColdWarm] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        g = self.grouping
        return {
            "by": g.by, "by_auto": g.by_auto, "population": g.population,
            "groups": [grp.as_json() for grp in g.groups],
            "deltas": [d.as_json() for d in self.deltas],
            "headline": self.headline,
            "cache_differences": [c.as_json() for c in self.caches],
            "cold_warm": {label: {**split_.as_json(), **self.split_figures(label)}
                          for label, split_ in self.splits.items()},
            "left_out": [lo.as_json() for lo in g.left_out],
            "notes": g.notes,
        }


    def split_figures(self, label: str) -> dict[str, Any]:
        """Median seconds to ready (first line -> ready) of a split group's cold and warm starts."""
        group = next(g for g in self.grouping.groups if g.label == label)
        apart = self.splits[label]
        seconds = dict(zip(group.run_ids, group.ready_seconds, strict=True))
        return {"cold_median_seconds": _r(quantile([seconds[r] for r in apart.cold], 0.5)),
                "warm_median_seconds": _r(quantile([seconds[r] for r in apart.warm], 0.5))}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def quantile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between order statistics (numpy's default, R type 7)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def fmt_value(value: Any) -> str:
    """A flag's value in a label: on one line, control characters escaped (a value decoded
    from an args repr may hold a newline or ESC; a label is shown, pasted and put in snippets)."""
    return "unknown" if value is None else visible(str(value), one_line=True)


def group_label(key: dict[str, Any]) -> str:
    text = ", ".join(f"{shown_flag(k)}={fmt_value(v)}" for k, v in key.items()) or "all runs"
    if len(key) == 1:
        ((flag, value),) = key.items()
        name = GROUP_NAMES.get((flag, value))
        if name:
            return f"{name} ({text})"
    return text


def grouping_keys(runs: Runs) -> list[str]:
    return [*runs.flag_columns, *EXTRA_KEYS]


def flag_names(runs: Runs, by: Sequence[str]) -> list[str]:
    """`--by` names as users type them: a flag as spelled on the engine's command line
    (`--disable-cuda-graph`, `disable-cuda-graph`) names the column `disable_cuda_graph`, and a
    flag that is no common flag (`enforce_eager`) its column `flag.enforce_eager`. A name these
    runs state as typed is kept as it is."""
    known = set(grouping_keys(runs))
    out = []
    for flag in by:
        spelled = flag.strip().removeprefix("--").replace("-", "_")
        # a flag by its key as the log states it, or by its column (`flag.KEY`, frames.flag_column)
        out.append(next((name for name in (flag, spelled, FLAG_PREFIX + flag, FLAG_PREFIX + spelled)
                         if name in known), flag))
    return out


def check_by(runs: Runs, by: Sequence[str]) -> None:
    """An unknown flag is a one-line usage error: the closest names, not every flag these runs state
    (a folder of one engine's logs can state hundreds)."""
    known = grouping_keys(runs)
    for flag in by:
        if flag in known:
            continue
        close = _closest(flag.removeprefix(FLAG_PREFIX), [shown_flag(k) for k in known])
        hint = f"; did you mean {', '.join(close)}?" if close else "; no flag of these runs is close to it"
        raise UnknownFlagError(
            f"unknown flag {flag!r} in --by{hint} (these runs state {len(runs.flag_columns)} flags: "
            "`firedup parse --json PATH` lists them under \"config\")")


def _closest(flag: str, known: Sequence[str], n: int = 3) -> list[str]:
    """The names a user most likely meant: the common flags (`FLAG_TYPES`: what grouping is for)
    that contain what was typed or are close to it, then difflib's closest names, then names
    that contain it (`mem_frac`). `cuda_graph` -> disable_cuda_graph first, not debug_cuda_graph."""
    typed = flag.lower()
    close = difflib.get_close_matches(flag, known, n=n)
    within = sorted((k for k in known if typed in k.lower()), key=len)
    common = [k for k in dict.fromkeys([*within, *close]) if k in FLAG_TYPES]
    return list(dict.fromkeys([*common, *close, *within]))[:n]


def ungroupable(frame: pl.DataFrame, flag: str) -> str | None:
    """Why a flag that differs between runs still makes no useful groups on its own, else None.

    Auto-grouping by such a flag gives one group per run: a continuous float, a seed, a port, a
    path, or values nearly every run has alone. Booleans always make groups; so does any flag
    with two values (debug vs production, on two runs).
    """
    column = frame[flag]
    if column.dtype == pl.Boolean():
        return None
    if column.dtype.is_float():
        return "float values"
    parts = set(flag.removeprefix(FLAG_PREFIX).lower().split("_"))
    for kind, names in UNGROUPABLE_NAME_PARTS.items():
        if parts & names:
            return kind
    values = column.drop_nulls()
    if column.dtype == pl.Utf8() and values.len() and all(
            v.startswith(PATH_STARTS) for v in values.to_list()):
        return "a path"
    counts = values.value_counts()["count"]
    if counts.len() > 2 and (counts == 1).sum() > values.len() / 2:
        return "most runs have a value of their own"
    return None


def auto_flags(frame: pl.DataFrame, runs: Runs) -> tuple[list[str], dict[str, str]]:
    """Flags with more than one known value that make groups (the common flags if any, else any
    flag), and those that differ but were left out, with why."""
    left_out: dict[str, str] = {}

    columns = set(frame.columns)  # once: `frame.columns` builds a list each time

    def varying(cols: Sequence[str]) -> list[str]:
        out = []
        for col in cols:
            if col not in columns or col.removeprefix(FLAG_PREFIX) in IDENTITY_FLAGS:
                continue
            if frame[col].drop_nulls().n_unique() > 1:
                why = ungroupable(frame, col)
                if why is None:
                    out.append(col)
                else:
                    left_out[col] = why
        return out

    common = varying([c for c in runs.flag_columns if c in FLAG_TYPES and c not in POPULATION_KEYS])
    if common:
        return common, left_out
    return varying([c for c in runs.flag_columns if c not in FLAG_TYPES]), left_out


def _auto_left_out_note(left_out: dict[str, str], most: int = 10) -> str:
    """One note: the flags auto-grouping passed over, by reason, and how to group by one anyway."""
    by_reason: dict[str, list[str]] = {}
    for flag, why in left_out.items():
        by_reason.setdefault(why, []).append(flag)
    parts, named = [], 0
    for why, flags in by_reason.items():
        shown = flags[:max(most - named, 0)]
        named += len(shown)
        if shown:
            parts.append(f"{', '.join(map(shown_flag, shown))} ({why})")
    more = f" and {len(left_out) - named} more" if len(left_out) > named else ""
    first = next(iter(left_out))
    return (f"differ too, but not grouped by (such flags give about one group per run): {'; '.join(parts)}{more}; "
            f"`--by {shown_flag(first)}` still groups by it")


def _kind_not_timed(row: dict[str, Any]) -> str:
    return "crashed" if row["outcome"] == "crashed" else "incomplete"


def _why_not_timed(row: dict[str, Any]) -> str:
    if row["outcome"] == "crashed":
        where = f" in {row['crash_phase']}" if row.get("crash_phase") else ""
        return f"crashed ({row.get('crash_category') or 'unknown'}{where}): no time to ready"
    if row.get("ready_kind") == "engine":
        return "the engine is ready but no server is in the log: no time to ready"
    where = f" in {row['stopped_in']}" if row.get("stopped_in") else ""
    return f"incomplete (the log stops{where}): no time to ready"


def _timed(frame: pl.DataFrame) -> pl.Expr:
    """Ready runs with a whole time to ready: those a comparison can time."""
    timed = (pl.col("outcome") == "ready") & pl.col("ready_seconds").is_not_null()
    if "begins_mid_startup" in frame.columns:
        timed = timed & ~pl.col("begins_mid_startup").fill_null(False)
    return timed


def population_label(population: dict[str, Any]) -> str:
    """`engine=NAME, model_path=X`; a population of unknown model says what that means."""
    text = ", ".join(f"{k}={fmt_value(v)}" for k, v in population.items())
    if "model_path" in population and population["model_path"] is None:
        text += " (no args line in their logs, so they may be runs of different models)"
    return text


def _population(frame: pl.DataFrame, by: Sequence[str]
                ) -> tuple[dict[str, Any], pl.DataFrame, list[LeftOut], list[str]]:
    """The engine+model to compare, unless grouped by them; without `by`, notes on why and what else.

    With `by`: a known model first (a difference between runs of unknown, maybe different, models
    would pass for the flag's), then the one whose timed runs span the most groups of `by`, then
    the most timed runs. Without `by`: a known model with at least two timed runs (a comparison of
    runs that may be of different models tells little), then the most timed runs.
    """
    keys = [k for k in POPULATION_KEYS if k not in by and k in frame.columns]
    if not keys or frame.is_empty():
        return {}, frame, [], []
    # how many groups of `by` a population's timed runs fall in (an unknown value is no group to
    # compare with): one that cannot be compared loses
    by_cols = [b for b in by if b in frame.columns]
    timed = _timed(frame)
    known = pl.all_horizontal([pl.col(b).is_not_null() for b in by_cols]) if by_cols else pl.lit(True)
    spread = (pl.struct(by_cols).filter(timed & known).n_unique() if by_cols else pl.lit(0)).alias("_spread")
    order = ["_unknown", "_spread", "timed"] if by else ["_known_pair", "timed", "_unknown"]
    counts = (frame.group_by(keys).agg(pl.len().alias("runs"), (pl.col("outcome") == "ready").sum().alias("ready"),
                                       timed.sum().alias("timed"), spread)
              .with_columns(pl.any_horizontal([pl.col(k).is_null() for k in keys]).alias("_unknown"))
              .with_columns((~pl.col("_unknown") & (pl.col("timed") >= MIN_TIMED_TO_COMPARE)).alias("_known_pair"))
              .sort([*order, "ready", "runs", *keys], descending=[o != "_unknown" for o in order]
                    + [True, True, *([False] * len(keys))], nulls_last=True))
    if counts.height <= 1:
        return {k: counts[k][0] for k in keys} if counts.height else {}, frame, [], []
    chosen = {k: counts[k][0] for k in keys}
    keep = pl.lit(True)
    for k, v in chosen.items():
        keep = keep & (pl.col(k).is_null() if v is None else (pl.col(k) == v).fill_null(False))
    left = []
    for row in frame.filter(~keep).iter_rows(named=True):
        if "model_path" in keys and row["model_path"] is None and chosen.get("model_path") is not None:
            left.append(LeftOut(row["run_id"], row["source"], row["run_index"],
                                "model unknown (no args line in the log), so it cannot be matched to the "
                                f"runs compared (model_path={chosen['model_path']})", "of unknown model"))
            continue
        diffs = [f"{k}={fmt_value(row[k])}" for k in keys if row[k] != chosen[k]]
        other = ' and '.join(k.replace('_path', '') for k in keys if row[k] != chosen[k])
        left.append(LeftOut(row["run_id"], row["source"], row["run_index"],
                            f"other {other} ({', '.join(diffs)}) than the runs compared "
                            f"({', '.join(f'{k}={fmt_value(v)}' for k, v in chosen.items())})",
                            f"of another {other}"))
    notes = [] if by else _choice_notes(counts, keys)
    return chosen, frame.filter(keep), left, notes


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _choice_notes(counts: pl.DataFrame, keys: Sequence[str], most: int = 6) -> list[str]:
    """Why these runs and not others (the rule, what else there was), and how to compare another."""
    what = " and ".join(k.replace("_path", "") for k in keys)
    # others are named by what tells them apart: the model alone when every run is of one engine
    differ = [k for k in keys if counts[k].n_unique() > 1] or list(keys)
    first, *others = counts.iter_rows(named=True)

    def name(row: dict[str, Any]) -> str:
        return " ".join("unknown model" if k == "model_path" and row[k] is None else fmt_value(row[k])
                        for k in differ)

    def ready(row: dict[str, Any]) -> str:
        timed = "" if row["timed"] == row["ready"] else f", {row['timed']} timed"
        return f"{row['ready']} ready{timed}"

    unknown_more = max((row["timed"] for row in others if row["_unknown"]), default=0)
    if not first["_unknown"] and unknown_more > first["timed"]:
        rule = (f"the {what} of known model with the most ready runs to time ({ready(first)}, of "
                f"{_n(first['runs'], 'run')}); runs of unknown model ({unknown_more} timed) may be of "
                "different models, so they are not compared")
    else:
        rule = f"the {what} with the most ready runs to time ({ready(first)}, of {_n(first['runs'], 'run')})"
    tied = sum(1 for row in others if (row["timed"], row["_unknown"]) == (first["timed"], first["_unknown"]))
    if tied:
        rule += f", as many as {_n(tied, 'other')} (then the most runs, then the name decide)"
    if first["_unknown"]:
        known = max((row["timed"] for row in others if not row["_unknown"]), default=0)
        rule += (f", though their model is unknown: no known model has {MIN_TIMED_TO_COMPARE} timed runs"
                 f" (the most: {known})")
    n_left = sum(row["runs"] for row in others)
    listed = ", ".join(f"{name(row)} ({ready(row)})" for row in others[:most])
    more = f" and {len(others) - most} more" if len(others) > most else ""
    kind = " or ".join(k.replace("_path", "") for k in differ)
    return [f"{rule}; left out (listed below): {_n(n_left, 'run')} of {_n(len(others), 'other')}: {listed}{more}",
            f"to compare another {kind}, give only its logs as PATH...; `--by {','.join(differ)}` "
            "compares them side by side"]


def group_runs(runs: Runs, by: Sequence[str] | None = None) -> Grouping:
    """Split runs into comparable groups by flags; everything left out is listed with why."""
    left_out = [LeftOut(None, e.source, None, f"unreadable: {e.reason}", "unreadable") for e in runs.errors]
    by_auto = not by
    if by:
        by = flag_names(runs, by)
        check_by(runs, by)
    population, frame, other, notes = _population(runs.runs, by or [])
    left_out.extend(other)
    ready = frame.filter(pl.col("outcome") == "ready")
    if by_auto:
        by, passed_over = auto_flags(ready, runs)
        if by:
            notes.append(f"grouped by the flags that differ between the ready runs: {', '.join(map(shown_flag, by))}")
        elif passed_over:
            notes.append("no flag that differs between the ready runs makes groups: one group")
        else:
            notes.append("no flag differs between the ready runs: one group")
        if passed_over:
            notes.append(_auto_left_out_note(passed_over))
    by = list(by or [])
    wide = phase_seconds(runs.select(ready["run_id"].to_list()))
    groups: dict[tuple[Any, ...], Group] = {}
    for row in frame.iter_rows(named=True):
        key = {flag: row.get(flag) for flag in by}
        tkey = tuple(key.values())
        group = groups.get(tkey)
        if group is None:
            group = groups[tkey] = Group(key, group_label(key), [], [])
        if row["outcome"] == "ready" and row.get("begins_mid_startup"):
            lo = LeftOut(row["run_id"], row["source"], row["run_index"],
                         "the log begins mid-startup: its time to ready is only a lower bound",
                         "begin mid-startup")
            group.not_timed.append(lo)
            left_out.append(lo)
        elif row["outcome"] == "ready" and row["ready_seconds"] is not None:
            group.run_ids.append(row["run_id"])
            group.ready_seconds.append(float(row["ready_seconds"]))
            counted = from_launch(row)
            assert counted is not None  # a ready run with a time to ready
            group.launch_seconds.append(counted[0])
            group.launch_kinds.append(counted[1])
        else:
            lo = LeftOut(row["run_id"], row["source"], row["run_index"], _why_not_timed(row),
                         _kind_not_timed(row))
            group.not_timed.append(lo)
            left_out.append(lo)
    phase_names = [c for c in wide.columns if c != "run_id"]
    for group in groups.values():
        if not group.run_ids:
            continue
        sub = wide.filter(pl.col("run_id").is_in(pl.Series(group.run_ids).implode()))
        for name in phase_names:
            group.phases[name] = float(quantile(sub[name].to_list(), 0.5) or 0.0)
    ordered = sorted(groups.values(), key=lambda g: (g.median is None, g.median or 0.0, g.label))
    for g in ordered:
        if g.n == 0:
            excerpts = sum(1 for lo in g.not_timed if lo.kind == "begin mid-startup")
            if excerpts:  # ready, as `timeline` says, but an excerpt's time is only a lower bound
                others = len(g.not_timed) - excerpts
                notes.append(f"{g.label}: no timed ready run ({excerpts} ready but an excerpt whose time to ready is "
                             "only a lower bound" + (f"; {others} others not timed" if others else "")
                             + "), so no time to ready")
            else:
                notes.append(f"{g.label}: no ready run ({len(g.not_timed)} not timed), so no time to ready")
    if not by_auto:  # without --by, the note on the choice says what else there was
        notes.extend(_groups_elsewhere(runs.runs, frame, by, population, groups))
    return Grouping(by, by_auto, population, ordered, left_out, notes, runs)


def _groups_elsewhere(everything: pl.DataFrame, kept: pl.DataFrame, by: Sequence[str], population: dict[str, Any],
                      groups: dict[tuple[Any, ...], Group]) -> list[str]:
    """Groups that exist only among runs of another engine or model: say so, or `--by engine`
    on a folder where no model ran on both engines looks like one engine was never there."""
    if not by or not population or everything.height == kept.height or any(b not in everything.columns for b in by):
        return []
    kept_ids = pl.Series(kept["run_id"].to_list()).implode()
    others = everything.filter(~pl.col("run_id").is_in(kept_ids) & (pl.col("outcome") == "ready"))
    notes = []
    counts = others.group_by(list(by)).agg(pl.len().alias("n")).sort(list(by), nulls_last=True)
    for row in counts.iter_rows(named=True):
        key = {flag: row[flag] for flag in by}
        if tuple(key.values()) in groups:
            continue
        runs = "1 ready run" if row["n"] == 1 else f"{row['n']} ready runs"
        pop = ", ".join(f"{k}={fmt_value(v)}" for k, v in population.items())
        notes.append(f"{group_label(key)}: {runs}, none of {pop} (left out below); to compare "
                     f"{', '.join(map(shown_flag, by))}, "
                     "give runs of one model")
    return notes


def _flags_differ(runs: Runs, a: Group, b: Group) -> dict[str, tuple[list[Any], list[Any]]]:
    frame = runs.runs
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    ids_a = pl.Series(a.run_ids).implode()
    ids_b = pl.Series(b.run_ids).implode()
    fa, fb = frame.filter(pl.col("run_id").is_in(ids_a)), frame.filter(pl.col("run_id").is_in(ids_b))
    columns = set(frame.columns)
    for flag in grouping_keys(runs):
        if flag.removeprefix(FLAG_PREFIX) in IDENTITY_FLAGS or flag not in columns or flag == "cache_start":
            continue  # cache_start is no flag: `caches` of the comparison says what differs
        va = sorted(set(fa[flag].drop_nulls().to_list()), key=str)
        vb = sorted(set(fb[flag].drop_nulls().to_list()), key=str)
        if va != vb and va and vb:
            out[flag] = (va, vb)
    return out


def delta(runs: Runs, base: Group, other: Group) -> Delta:
    """How `other` differs from `base`: per phase, in total, and in flags."""
    total = (other.median or 0.0) - (base.median or 0.0)
    names = [n for n in other.phases if n in base.phases] + [n for n in other.phases if n not in base.phases] \
        + [n for n in base.phases if n not in other.phases]
    phases = {n: other.phases.get(n, 0.0) - base.phases.get(n, 0.0) for n in names}
    sign = 1.0 if total >= 0 else -1.0
    present = [n for n in names if base.phases.get(n, 0.0) > 0 or other.phases.get(n, 0.0) > 0]
    candidates = [n for n in phases if not spanned(n, present)] or list(phases)
    main = max(candidates, key=lambda n: sign * phases[n]) if candidates else None
    main_sec = phases[main] if main is not None else None
    if main is not None and sign * phases[main] <= 0:
        main, main_sec = None, None
    return Delta(base, other, total, phases, main, main_sec, _flags_differ(runs, base, other))


def _phase_median(wide: pl.DataFrame, phase: str, run_ids: list[str]) -> float:
    values = wide.filter(pl.col("run_id").is_in(pl.Series(run_ids).implode()))[phase].to_list()
    return float(quantile([v or 0.0 for v in values], 0.5) or 0.0)


def cache_differences(runs: Runs, label: str, run_ids: Sequence[str],
                      cold_within: Sequence[str] | None = None) -> list[CacheDifference]:
    """Among `run_ids`, the caches cold in some runs and not in the others, each with the phase its
    cold work lies in and how much longer it took (medians): the silence itself for a cache judged
    by its silence, else the phase. `cold_within`: only when every cold run is one of these and
    every other run is not (a delta between two groups)."""
    import json

    if len(run_ids) < 2 or "caches_json" not in runs.runs.columns:
        return []
    rows = runs.runs.filter(pl.col("run_id").is_in(pl.Series(list(run_ids)).implode()))
    verdicts: dict[str, dict[str, dict[str, Any]]] = {}
    info: dict[str, tuple[str, float]] = {}
    for row in rows.iter_rows(named=True):
        try:
            verdicts[row["run_id"]] = json.loads(row["caches_json"] or "{}")
        except ValueError:
            verdicts[row["run_id"]] = {}
        info[row["run_id"]] = (row["source"], float(row["ready_seconds"] or 0.0))
    ids = [rid for rid in run_ids if rid in info]
    kinds = list(dict.fromkeys(k for v in verdicts.values() for k in v))
    wide = phase_seconds(runs.select(ids))
    out: list[CacheDifference] = []

    def verdict_of(rid: str, kind: str) -> dict[str, Any]:
        return verdicts.get(rid, {}).get(kind, {})

    def median_of(values: list[float]) -> float:
        return float(quantile(values, 0.5) or 0.0)

    for kind in kinds:
        cold = [rid for rid in ids if verdict_of(rid, kind).get("verdict") == "cold"]
        others = [rid for rid in ids if rid not in cold]
        if not cold or not others:
            continue
        if cold_within is not None and (not set(cold) <= set(cold_within) or set(others) & set(cold_within)
                                        or not any(verdict_of(r, kind).get("verdict") == "warm" for r in others)):
            continue  # between configs, only against runs whose cache is known warm: else the flags explain it
        slowest = max(cold, key=lambda rid: info[rid][1])
        verdict = verdict_of(slowest, kind)
        phase = verdict.get("phase")
        seconds = None
        if verdict.get("basis") == "silence":
            seconds = (median_of([float(verdict_of(r, kind).get("seconds") or 0.0) for r in cold])
                       - median_of([float(verdict_of(r, kind).get("seconds") or 0.0)
                                    if verdict_of(r, kind).get("basis") == "silence" else 0.0 for r in others]))
        elif phase and phase in wide.columns:
            seconds = _phase_median(wide, phase, cold) - _phase_median(wide, phase, others)
        counts: dict[str, int] = {}
        for rid in others:
            v = verdict_of(rid, kind).get("verdict", "unknown")
            counts[v] = counts.get(v, 0) + 1
        evidence = [(int(e["line"]), str(e["text"])) for e in verdict.get("evidence", [])]
        out.append(CacheDifference(label, kind, phase, seconds, cold, others, counts,
                                   str(verdict.get("reason", "")), info[slowest][0], evidence))
    return sorted(out, key=lambda c: -(c.seconds or 0.0))


def compare(runs: Runs, by: Sequence[str] | None = None) -> Comparison:
    """Group runs by flags and explain the difference between the groups, and within a group
    the difference cold caches make."""
    grouping = group_runs(runs, by)
    timed = [g for g in grouping.groups if g.n > 0]
    deltas = [delta(runs, timed[0], g) for g in timed[1:]] if timed else []
    caches = [c for g in timed for c in cache_differences(runs, g.label, g.run_ids)]
    within = list(caches)  # the same config: the headline names the largest
    for d in deltas:  # groups of different flags whose runs also differ in a cache's state
        caches.extend(cache_differences(runs, f"{d.other.label} vs {d.base.label}",
                                        d.base.run_ids + d.other.run_ids, cold_within=d.other.run_ids))
        caches.extend(cache_differences(runs, f"{d.base.label} vs {d.other.label}",
                                        d.base.run_ids + d.other.run_ids, cold_within=d.base.run_ids))
    splits = {g.label: apart for g in timed if (apart := split(runs, g.run_ids)) is not None}
    for g in timed:
        grouping.notes.extend(key_changes(runs, g.run_ids, g.label))
    text = headline(grouping, deltas)
    if len(timed) == 1 and timed[0].label in splits:  # one config: the answer is its cold and warm starts
        text = _split_headline(timed[0], splits[timed[0].label])
    if within:
        c = within[0]
        if c.seconds is not None and c.phase is not None:
            from firedup.core.units import fmt_duration as dur

            text += f"; cold {c.kind} caches: +{dur(c.seconds)} in {c.phase}"
    return Comparison(grouping, deltas, text, caches, splits)


def _split_headline(group: Group, apart: ColdWarm) -> str:
    from firedup.core.units import fmt_duration as dur

    seconds = dict(zip(group.run_ids, group.ready_seconds, strict=True))
    cold = quantile([seconds[r] for r in apart.cold], 0.5)
    warm = quantile([seconds[r] for r in apart.warm], 0.5)
    what = "a median of " if len(apart.cold) > 1 else ""
    return (f"{group.label}: cold starts ready in {what}{dur(cold)} ({len(apart.cold)}), warm starts in "
            f"{'a median of ' if len(apart.warm) > 1 else ''}{dur(warm)} ({len(apart.warm)}); never pooled: see "
            "cold and warm starts below")


def headline(grouping: Grouping, deltas: Sequence[Delta]) -> str:
    from firedup.core.units import fmt_duration as dur

    timed = [g for g in grouping.groups if g.n > 0]
    if not timed:
        return "no run reached ready, so there is no time to ready to compare"
    if len(timed) == 1:
        g = timed[0]
        runs = "1 run" if g.n == 1 else f"{g.n} runs"
        spread = "" if g.n == 1 else f" (p90 {dur(g.p90)}, max {dur(g.max)})"
        return f"{g.label}: {runs} ready in a median of {dur(g.median)}{spread}"
    fast = timed[0]
    slow_delta = max(deltas, key=lambda d: d.total_seconds)
    slow = slow_delta.other
    lead = f"{fast.label} ready in a median of {dur(fast.median)}, {slow.label} in {dur(slow.median)}"
    if len(timed) > 2:
        lead = f"of {len(timed)} groups, {fast.label} is fastest (median {dur(fast.median)}) " \
               f"and {slow.label} slowest ({dur(slow.median)})"
    main_sec = slow_delta.main_phase_seconds
    if slow_delta.main_phase is None or main_sec is None:
        return lead
    text = (f"{lead}; {slow_delta.main_phase} explains {dur(main_sec)} "
            f"of the {dur(slow_delta.total_seconds)} difference")
    offset = main_sec - slow_delta.total_seconds
    if offset >= 1.0:  # other phases got faster and took some back
        text += f" (other phases take back {dur(offset)})"
    return text


def flag_changes(flags_differ: Mapping[str, tuple[list[Any], list[Any]]]) -> list[tuple[str, Any, Any]]:
    """(flag or key path, before, after) per difference: a nested value (an args repr such as
    `cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(...), ...)`) by the key paths that differ
    (`cuda_graph_config.decode.backend`, `core.config.value_changes`); a flag with several values
    on a side as their text joined (`a/b`)."""
    out: list[tuple[str, Any, Any]] = []
    for flag, (a, b) in flags_differ.items():
        if len(a) == 1 and len(b) == 1:
            changes = value_changes(a[0], b[0])
            if changes:
                name = shown_flag(flag)
                out.extend((f"{name}.{visible(path, one_line=True)}" if path else name, x, y) for path, x, y in changes)
                continue
        out.append((shown_flag(flag), "/".join(map(fmt_value, a)), "/".join(map(fmt_value, b))))
    return out


def _shown(value: Any, room: int) -> str:
    """A value in `room` characters: whole if it fits, a long list as its ends and its length
    (`36 values [1 … 256]`: two lists that share their start still read apart), else cut."""
    text = fmt_value(value)
    if len(text) <= room:
        return text
    if isinstance(value, list) and len(value) > 3:
        ends = f"{len(value)} values [{fmt_value(value[0])} … {fmt_value(value[-1])}]"
        if len(ends) <= room:
            return ends
    return cut_end(text, max(room, 8))


def flag_change_lines(flags_differ: Mapping[str, tuple[list[Any], list[Any]]], width: int, verbose: bool = False,
                      indent: str = "    ") -> list[str]:
    """One line per flag change, `cuda_graph_config.decode.backend: full -> disabled`, its values
    shortened (`_shown`) so that the line fits `width`; whole under `verbose` (the caller wraps)."""
    lines = []
    for path, x, y in flag_changes(flags_differ):
        head = f"{indent}{path}: "
        if verbose:
            lines.append(f"{head}{fmt_value(x)} -> {fmt_value(y)}")
            continue
        room = width - len(head) - len(" -> ")
        left = _shown(x, max(room - min(len(fmt_value(y)), room // 2), room // 2))
        lines.append(f"{head}{left} -> {_shown(y, room - len(left))}")
    return lines


def comparison_text(cmp: Comparison, width: int = 100, verbose: bool = False) -> str:
    """The human view: headline, one block per group, deltas, and what was left out; long flag
    values by the parts that differ, cut at the width (`verbose`: whole, and each run left out with
    its whole reason)."""
    from firedup.core.units import fmt_duration as dur

    g = cmp.grouping
    text_width = width
    if not g.groups:
        lines = ["no server startup found in the input"]
        lines.extend(f"  {visible(lo.source, one_line=True)}: {lo.reason}" for lo in g.left_out)
        return "\n".join(lines)
    lines = [cmp.headline, ""]
    if g.population:
        lines.append("comparing runs of " + population_label(g.population))
    lines.extend(f"note: {n}" for n in g.notes)
    lines.append("")
    phase_names: list[str] = []
    for grp in g.groups:
        for name in grp.phases:
            if name not in phase_names:
                phase_names.append(name)
    shown = [n for n in phase_names if any(grp.phases.get(n, 0.0) >= 0.5 for grp in g.groups)]
    # the groups' table fits `width`: columns as wide as their cells, then the labels cut at the end
    stats = [[dur(v) if grp.n else "-" for v in (grp.median, grp.p90, grp.max)] for grp in g.groups]
    w_n = max(len("n"), *(len(str(grp.n)) for grp in g.groups))
    w_t = max(len("median"), *(len(c) for row in stats for c in row))
    w_i = len(str(len(g.groups)))
    longest = max([len(grp.label) for grp in g.groups] + [5])
    gap = " " * (2 if longest + w_i + 3 + w_n + 3 * (2 + w_t) <= text_width else 1)  # one space before a cut
    fixed = w_i + 2 + 1 + w_n + 3 * (len(gap) + w_t)
    width = max(min(longest, text_width - fixed), 12)
    lines.append(f"{'#':>{w_i}}  {'group':<{width}} {'n':>{w_n}}" + "".join(
        f"{gap}{head:>{w_t}}" for head in ("median", "p90", "max")))
    for i, (grp, row) in enumerate(zip(g.groups, stats, strict=True), start=1):
        label = grp.label if len(grp.label) <= width else grp.label[:width - 1] + "…"
        line = f"{i:>{w_i}}  {label:<{width}} {grp.n:>{w_n}}" + "".join(f"{gap}{c:>{w_t}}" for c in row)
        extra = f"  (+{len(grp.not_timed)} not timed)" if grp.not_timed else ""
        if len(line + extra) <= text_width:
            lines.append(line + extra)
        else:
            lines.extend([line, " " * (w_i + 2) + extra.strip()] if extra else [line])
    timed = [grp for grp in g.groups if grp.n]
    launch_note = _launch_note(g)
    if launch_note:
        lines.append(launch_note)
    if shown and timed:
        lines.append("")
        lines.append("median per phase:")
        named = all(" (" in grp.label for grp in timed)
        labels = [grp.label.split(" (")[0][:14] if named else f"#{g.groups.index(grp) + 1}" for grp in timed]
        lines.append(f"  {'phase':<22}" + "".join(f" {lab:>14}" for lab in labels)
                     + ("" if len(timed) < 2 else f" {'delta':>14}"))

        def cell(sec: float) -> str:
            return "-" if sec == 0 else dur(sec)

        for name in shown:
            cells = "".join(f" {cell(grp.phases.get(name, 0.0)):>14}" for grp in timed)
            d = next((x for x in cmp.deltas if x.other is timed[-1]), None)
            diff = ""
            if d is not None:
                sec = d.phases.get(name, 0.0)
                diff = f" {'0' if abs(sec) < 0.0005 else ('+' if sec > 0 else '-') + dur(abs(sec)):>14}"
            lines.append(f"  {name:<22}{cells}{diff}")
        umbrellas = [n for n in shown if spanned(n, shown)]
        if umbrellas:
            spans = umbrella_phases()
            lines.append("  (" + "; ".join(f"{n} spans {', '.join(p for p in spans[n] if p in shown)}"
                                           for n in umbrellas) + ": the rows overlap)")
    for d in cmp.deltas:
        lines.append("")
        lines.append(f"{d.other.label} vs {d.base.label}: {'+' if d.total_seconds >= 0 else '-'}"
                     f"{dur(abs(d.total_seconds))} median time to ready")
        if d.main_phase:
            share = 100 * (d.main_phase_seconds or 0) / d.total_seconds if d.total_seconds else 0.0
            lines.append(f"  most of it: {d.main_phase} {'+' if (d.main_phase_seconds or 0) >= 0 else '-'}"
                         f"{dur(abs(d.main_phase_seconds or 0))} ({share:.0f}% of the difference)")
        if d.flags_differ:
            lines.append("  flags that differ:")
            lines.extend(flag_change_lines(d.flags_differ, text_width, verbose))
    for label, apart in cmp.splits.items():
        figures = cmp.split_figures(label)
        lines.append("")
        lines.append(f"cold and warm starts of {label} (the median above pools them):")
        lines.append(f"  cold: {len(apart.cold)}, median {dur(figures['cold_median_seconds'])}; "
                     f"warm: {len(apart.warm)}, median {dur(figures['warm_median_seconds'])}")
        for rid in apart.cold:
            lines.extend(textwrap.wrap(f"cold: {apart.sources.get(rid, rid)}: {apart.reasons[rid]}", text_width,
                                       initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False))
        lines.extend(f"  warm: {apart.sources.get(rid, rid)}" for rid in apart.warm)
    if cmp.caches:
        lines.append("")
        lines.append("cold vs warm caches:")
        for c in cmp.caches:
            lines.extend(textwrap.wrap(f"{c.group}: {c.text()}", text_width, initial_indent="  ",
                                       subsequent_indent="    ", break_on_hyphens=False))
    lines.extend(left_out_lines(g.left_out, "left out of the timing", verbose))
    return "\n".join(lines)


def _launch_note(grouping: Grouping) -> str | None:
    """The second clock under the groups' table: how much earlier the timed runs were launched."""
    from firedup.core.units import fmt_duration as dur

    ids = [rid for grp in grouping.groups for rid in grp.run_ids]
    if not ids:
        return None
    frame = grouping.runs.runs.filter(pl.col("run_id").is_in(pl.Series(ids, dtype=pl.Utf8).implode()))
    gaps = frame.filter(pl.col("launch_gap").is_not_null())
    if gaps.is_empty():
        return "(times from each log's first line; when the servers were launched is not known)"
    low, high = float(gaps["launch_gap"].min()), float(gaps["launch_gap"].max())  # type: ignore[arg-type]
    sources = sorted(set(gaps["launch_source"].to_list()))
    how = "estimated, docs/launch.md" if sources == ["estimated"] else ", ".join(sources)
    span = dur(low) if abs(high - low) < 1.0 else f"{dur(low)}-{dur(high)}"
    unknown = frame.height - gaps.height
    return (f"(times from each log's first line; the servers were launched {'~' if 'estimated' in sources else ''}"
            f"{span} before it ({how}){f'; {unknown} launch(es) unknown' if unknown else ''}: `budget` counts "
            "from launch)")


def left_out_lines(left_out: Sequence[LeftOut], title: str, verbose: bool = False) -> list[str]:
    """The runs a computation did not use: one line per reason with a count and the first files
    (each run with its whole reason under `verbose`); nothing when none."""
    if not left_out:
        return []
    if verbose:
        lines = ["", f"{title} ({len(left_out)}):"]
        for lo in left_out:
            where = f" #{lo.run_index + 1}" if lo.run_index else ""
            lines.append(f"  {visible(lo.source, one_line=True)}{where}: {lo.reason}")
        return lines
    by_kind: dict[str, list[LeftOut]] = {}
    for lo in left_out:
        by_kind.setdefault(lo.kind, []).append(lo)
    lines = ["", f"{title} ({_n(len(left_out), 'run')}; -v lists each with its reason):"]
    for kind, items in sorted(by_kind.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        names = [visible(Path(lo.source).name, one_line=True) + (f" #{lo.run_index + 1}" if lo.run_index else "")
                 for lo in items]
        shown = ", ".join(names[:2]) + (f", {len(names) - 2} more" if len(names) > 2 else "")
        lines.append(f"  {len(items)} {kind}: {shown}")
    return lines


__all__ = ["CacheDifference", "Comparison", "Coverage", "Delta", "Group", "Grouping", "LeftOut", "UnknownFlagError", "compare",
           "comparison_text", "coverage", "group_runs", "population_label", "quantile"]

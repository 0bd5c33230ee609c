"""Group runs by their flags: which runs are comparable, and which configuration each belongs to.

Only runs that reached ready have a time to ready; crashed and incomplete runs are counted
and named but not timed. One population of comparable runs is compared, runs of one engine
and model (a 7B model's start says nothing about a 671B one), unless the grouping itself is
by model or engine. Without `--by`, the one with the most timed ready runs: runs whose model
is unknown (no args line) are compared with each other only when they are the most, which the
output says, and a note states the choice, what else there was and how to compare it. With
`--by`, a known model, the one whose timed ready runs span the most groups (`--by engine`
compares the one model run on both engines), then has the most timed ready runs. Everything
left out is listed with its reason. `compare` and `budget` both start from this grouping.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from firedup.core.safe import visible
from firedup.errors import UnknownFlagError, UsageError
from firedup.tables.frames import FLAG_PREFIX, FLAG_TYPES, IDENTITY_FLAGS, Runs, phase_seconds, shown_flag
from firedup.tables.launches import (
    NO_MEASURED,
    MeasuredAtHand,
    budget_margin,
    from_launch,
    margin_basis,
    measured_at_hand,
)
from firedup.timeline.launch import KNOWN

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
    # per timed run, its time from launch (`launch.seconds_to_ready`) and how (tables.launches.from_launch)
    launch_seconds: list[float] = field(default_factory=list)
    launch_kinds: list[str] = field(default_factory=list)
    # per timed run, how much earlier its launch may have come than counted (tables.launches.budget_margin)
    launch_margins: list[float] = field(default_factory=list)
    # where the margin comes from the measured launches at hand: their line (tables.launches.margin_basis)
    margin_basis: str | None = None

    @property
    def launch_margin(self) -> float:
        """What a budget of these runs adds for a slower launch: the largest of theirs."""
        return max(self.launch_margins, default=0.0)

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

    def place(self, row: dict[str, Any], at_hand: MeasuredAtHand = NO_MEASURED) -> LeftOut | None:
        """Count one run of this group's flags: timed when ready with a whole time to ready, else
        not timed, with why (returned too: the grouping lists every run left out)."""
        if row["outcome"] == "ready" and row.get("begins_mid_startup"):
            lo = LeftOut(row["run_id"], row["source"], row["run_index"],
                         "the log begins mid-startup: its time to ready is only a lower bound",
                         "begin mid-startup")
        elif row["outcome"] == "ready" and row["ready_seconds"] is not None:
            self.run_ids.append(row["run_id"])
            self.ready_seconds.append(float(row["ready_seconds"]))
            counted = from_launch(row)
            assert counted is not None  # a ready run with a time to ready
            self.launch_seconds.append(counted[0])
            self.launch_kinds.append(counted[1])
            self.launch_margins.append(budget_margin(row, at_hand))
            if self.margin_basis is None:
                self.margin_basis = margin_basis([row], at_hand)
            return None
        else:
            lo = LeftOut(row["run_id"], row["source"], row["run_index"], _why_not_timed(row),
                         _kind_not_timed(row))
        self.not_timed.append(lo)
        return lo

    def no_time_note(self) -> str:
        """Why a group with no timed run has no time to ready."""
        excerpts = sum(1 for lo in self.not_timed if lo.kind == "begin mid-startup")
        if excerpts:  # ready, as `timeline` says, but an excerpt's time is only a lower bound
            others = len(self.not_timed) - excerpts
            return (f"{self.label}: no timed ready run ({excerpts} ready but an excerpt whose time to ready is "
                    "only a lower bound" + (f"; {others} others not timed" if others else "")
                    + "), so no time to ready")
        return f"{self.label}: no ready run ({len(self.not_timed)} not timed), so no time to ready"

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "label": self.label, "n": self.n,
            "total_seconds": {"median": rounded(self.median), "p90": rounded(self.p90), "max": rounded(self.max),
                              "min": rounded(min(self.ready_seconds) if self.ready_seconds else None)},
            "phases": {name: {"median": rounded(sec)} for name, sec in self.phases.items()},
            "runs": self.run_ids,
            "not_timed": [lo.as_json() for lo in self.not_timed],
        }

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

def rounded(value: float | None) -> float | None:
    """Seconds as the JSON views write them: to the millisecond."""
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


def parse_group_selector(text: str) -> dict[str, str]:
    """`--group KEY=VALUE[,KEY=VALUE]` as {key: value}. Every part must be KEY=VALUE and name
    each key once: a part without `=` (a typo) or a key given twice with two values would
    otherwise be dropped or overwritten, and the snippet written for a group nobody asked for."""
    wanted: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise UsageError(f"--group {text!r}: {part.strip()!r} is not KEY=VALUE")
        if key in wanted and wanted[key].lower() != value.lower():
            raise UsageError(f"--group {text!r}: {key} is given twice ({wanted[key]} and {value}); a group has one "
                             "value of each flag")
        wanted[key] = value
    return wanted


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
    counts = _population_counts(frame, keys, by)
    if counts.height <= 1:
        return {k: counts[k][0] for k in keys} if counts.height else {}, frame, [], []
    chosen = {k: counts[k][0] for k in keys}
    keep = pl.lit(True)
    for k, v in chosen.items():
        keep = keep & (pl.col(k).is_null() if v is None else (pl.col(k) == v).fill_null(False))
    left = [_not_of_population(row, keys, chosen) for row in frame.filter(~keep).iter_rows(named=True)]
    notes = [] if by else _choice_notes(counts, keys)
    return chosen, frame.filter(keep), left, notes


def _population_counts(frame: pl.DataFrame, keys: list[str], by: Sequence[str]) -> pl.DataFrame:
    """Each population (a value of `keys`) with its runs, ready and timed runs, best first by the
    rule of `_population`."""
    # how many groups of `by` a population's timed runs fall in (an unknown value is no group to
    # compare with): one that cannot be compared loses
    by_cols = [b for b in by if b in frame.columns]
    timed = _timed(frame)
    known = pl.all_horizontal([pl.col(b).is_not_null() for b in by_cols]) if by_cols else pl.lit(True)
    spread = (pl.struct(by_cols).filter(timed & known).n_unique() if by_cols else pl.lit(0)).alias("_spread")
    order = ["_unknown", "_spread", "timed"] if by else ["_known_pair", "timed", "_unknown"]
    return (frame.group_by(keys).agg(pl.len().alias("runs"), (pl.col("outcome") == "ready").sum().alias("ready"),
                                     timed.sum().alias("timed"), spread)
            .with_columns(pl.any_horizontal([pl.col(k).is_null() for k in keys]).alias("_unknown"))
            .with_columns((~pl.col("_unknown") & (pl.col("timed") >= MIN_TIMED_TO_COMPARE)).alias("_known_pair"))
            .sort([*order, "ready", "runs", *keys], descending=[o != "_unknown" for o in order]
                  + [True, True, *([False] * len(keys))], nulls_last=True))


def _not_of_population(row: dict[str, Any], keys: Sequence[str], chosen: dict[str, Any]) -> LeftOut:
    """A run of another population than the one compared, with what sets it apart."""
    if "model_path" in keys and row["model_path"] is None and chosen.get("model_path") is not None:
        return LeftOut(row["run_id"], row["source"], row["run_index"],
                       "model unknown (no args line in the log), so it cannot be matched to the "
                       f"runs compared (model_path={chosen['model_path']})", "of unknown model")
    diffs = [f"{k}={fmt_value(row[k])}" for k in keys if row[k] != chosen[k]]
    other = ' and '.join(k.replace('_path', '') for k in keys if row[k] != chosen[k])
    return LeftOut(row["run_id"], row["source"], row["run_index"],
                   f"other {other} ({', '.join(diffs)}) than the runs compared "
                   f"({', '.join(f'{k}={fmt_value(v)}' for k, v in chosen.items())})",
                   f"of another {other}")


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
        by, auto_notes = _auto_by(ready, runs)
        notes.extend(auto_notes)
    by = list(by or [])
    wide = phase_seconds(runs.select(ready["run_id"].to_list()))
    groups: dict[tuple[Any, ...], Group] = {}
    # the launches measured among every run at hand: the budgets' launch margins (tables.launches)
    at_hand = measured_at_hand(runs.runs.filter(pl.col("launch_source").is_in(sorted(KNOWN))).to_dicts()
                               if "launch_source" in runs.runs.columns else [])
    for row in frame.iter_rows(named=True):
        key = {flag: row.get(flag) for flag in by}
        tkey = tuple(key.values())
        group = groups.get(tkey)
        if group is None:
            group = groups[tkey] = Group(key, group_label(key), [], [])
        lo = group.place(row, at_hand)
        if lo is not None:
            left_out.append(lo)
    _phase_medians(wide, groups.values())
    ordered = sorted(groups.values(), key=lambda g: (g.median is None, g.median or 0.0, g.label))
    notes.extend(g.no_time_note() for g in ordered if g.n == 0)
    if not by_auto:  # without --by, the note on the choice says what else there was
        notes.extend(_groups_elsewhere(runs.runs, frame, by, population, groups))
    return Grouping(by, by_auto, population, ordered, left_out, notes, runs)


def _auto_by(ready: pl.DataFrame, runs: Runs) -> tuple[list[str], list[str]]:
    """Without --by: the flags to group by, and notes on what was chosen and what passed over."""
    by, passed_over = auto_flags(ready, runs)
    if by:
        notes = [f"grouped by the flags that differ between the ready runs: {', '.join(map(shown_flag, by))}"]
    elif passed_over:
        notes = ["no flag that differs between the ready runs makes groups: one group"]
    else:
        notes = ["no flag differs between the ready runs: one group"]
    if passed_over:
        notes.append(_auto_left_out_note(passed_over))
    return by, notes


def _phase_medians(wide: pl.DataFrame, groups: Iterable[Group]) -> None:
    """Each group's median per phase over its timed runs (a phase a run did not have counts 0 s)."""
    phase_names = [c for c in wide.columns if c != "run_id"]
    for group in groups:
        if not group.run_ids:
            continue
        sub = wide.filter(pl.col("run_id").is_in(pl.Series(group.run_ids).implode()))
        for name in phase_names:
            group.phases[name] = float(quantile(sub[name].to_list(), 0.5) or 0.0)


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


__all__ = ["Coverage", "Group", "Grouping", "LeftOut", "check_by", "coverage", "flag_names", "fmt_value", "group_runs",
           "left_out_lines", "parse_group_selector", "population_label", "quantile", "rounded"]

"""Charts of startups: the data behind each picture, then the picture (a matplotlib `Figure`).

Each chart has two halves so the numbers can be tested without looking at pixels:

* a `*_data` function over the polars tables (`firedup.tables.frames.Runs`) that returns tidy
  frames: what is drawn where, in seconds;
* a drawing function of the same name without `_data` that turns them into a `Figure`.

The kinds (`KINDS`): `timeline` (a Gantt chart of runs, optionally one row per rank),
`compare` (stacked median phases per group), `distribution` (time to ready per group with
its budget) and `ranks` (a heatmap of phase duration by rank: stragglers).

matplotlib is imported inside the drawing functions only, so `import firedup` stays cheap;
figures are built with `matplotlib.figure.Figure` (no pyplot, no global backend state) and
saved through Agg. Every phase has one colour in every chart (`PHASE_COLOURS`, Paul Tol's
colour-blind-safe "muted" scheme); time axes read minutes:seconds.
"""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from firedup.core.safe import visible
from firedup.core.units import fmt_clock, fmt_duration, fmt_time_to_end
from firedup.errors import DataError, UsageError
from firedup.tables.frames import Runs
from firedup.timeline.phases import PHASE_ORDER, spanned
from firedup.timeline.ranks import (
    NO_STRAGGLERS,
    STRAGGLER_SECONDS,
    STRAGGLER_SHARE,
    late_arrival,
    rank_sort_key,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from firedup.tables.budget import BudgetReport
    from firedup.tables.compare import Comparison, Coverage

# --- colours: one table for every chart ------------------------------------------------------

# Paul Tol's "muted" scheme (colour-blind safe, distinct in print), plus his grey for launch.
TOL_MUTED = {
    "indigo": "#332288", "cyan": "#88CCEE", "teal": "#44AA99", "green": "#117733", "olive": "#999933",
    "sand": "#DDCC77", "rose": "#CC6677", "wine": "#882255", "purple": "#AA4499", "grey": "#BBBBBB",
}
PHASE_COLOURS: dict[str, str] = {
    "launch": TOL_MUTED["grey"],
    "dist_init": TOL_MUTED["indigo"],
    "load_weights": TOL_MUTED["cyan"],
    "model_loading": TOL_MUTED["teal"],
    "torch_compile": TOL_MUTED["olive"],
    "kv_cache": TOL_MUTED["green"],
    "cuda_graph": TOL_MUTED["rose"],
    "engine_init": TOL_MUTED["purple"],
    "http_start": TOL_MUTED["wine"],
    "warmup": TOL_MUTED["sand"],
    "unattributed": "#FFFFFF",  # white, hatched: time no log line accounts for
}
UNATTRIBUTED_HATCH = "////"
UNATTRIBUTED_EDGE = "#777777"
READY_COLOUR = "#000000"
CRASH_COLOUR = "#CC3311"  # Tol's vibrant red; the marker shape (X) carries the meaning too
_FALLBACK = ("#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99", "#BBCC33", "#AAAA00")


def _tint(hex_colour: str, amount: float = 0.5) -> str:
    """The colour mixed with white: a draft model's phase is a lighter copy of the target's."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#{:02X}{:02X}{:02X}".format(*mix)


def phase_colour(phase: str) -> str:
    """The fill colour of a phase, the same in every chart (stable for unknown names too)."""
    if phase in PHASE_COLOURS:
        return PHASE_COLOURS[phase]
    if phase.startswith("draft.") and phase.removeprefix("draft.") in PHASE_COLOURS:
        return _tint(PHASE_COLOURS[phase.removeprefix("draft.")])
    return _FALLBACK[zlib.crc32(phase.encode()) % len(_FALLBACK)]


def phase_style(phase: str) -> dict[str, Any]:
    """Keyword arguments for a bar of this phase (fill, edge, hatch)."""
    if phase == "unattributed":
        return {"facecolor": PHASE_COLOURS["unattributed"], "edgecolor": UNATTRIBUTED_EDGE,
                "hatch": UNATTRIBUTED_HATCH, "linewidth": 0.6}
    if phase.startswith("draft."):
        return {"facecolor": phase_colour(phase), "edgecolor": phase_colour(phase.removeprefix("draft.")),
                "linewidth": 0.8}
    return {"facecolor": phase_colour(phase), "edgecolor": "white", "linewidth": 0.5}


def phase_rank(phase: str) -> int:
    """Order of phases in legends and stacks: startup order, unknown names last."""
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else len(PHASE_ORDER)


def text_colour_on(hex_colour: str) -> str:
    """Black or white text, whichever reads better on this fill (WCAG relative luminance)."""
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(hex_colour[i:i + 2], 16)) for i in (1, 3, 5))
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.18 else "#FFFFFF"


# --- time on axes ------------------------------------------------------------------------------

TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400)


def tick_step(span: float, max_ticks: int = 9) -> int:
    """The smallest round step (1 s ... 4 h) that puts at most `max_ticks` ticks on the span."""
    for step in TICK_STEPS:
        if span / step <= max_ticks:
            return step
    return TICK_STEPS[-1] * math.ceil(span / (TICK_STEPS[-1] * max_ticks))


def _time_axis(axis: Any, lo: float, hi: float, max_ticks: int = 9) -> None:
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    axis.set_major_locator(MultipleLocator(tick_step(hi - lo, max_ticks)))
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: fmt_clock(x)))


# --- labels -------------------------------------------------------------------------------------


def run_labels(runs: pl.DataFrame) -> dict[str, str]:
    """run_id -> a short readable label: the file name (unique within the set), `#2` for a restart."""
    sources = runs["source"].to_list()
    names = [os.path.basename(s.rstrip("/")) or s for s in sources]
    clash = {n for n in names if names.count(n) > 1 and len({s for s, m in zip(sources, names, strict=True)
                                                             if m == n}) > 1}
    out = {}
    for row, name in zip(runs.iter_rows(named=True), names, strict=True):
        label = _short_path(row["source"]) if name in clash else name
        if row["run_index"]:
            label += f" #{row['run_index'] + 1}"
        out[row["run_id"]] = visible(label, one_line=True)  # a file name may hold any character
    return out


def _short_path(path: str, keep: int = 2) -> str:
    parts = Path(path).parts
    return os.path.join(*parts[-keep:]) if len(parts) > keep else path


def _ellipsize(text: str, width: int) -> str:
    """Cut in the middle: the start and end of a file name tell runs apart, not its middle."""
    if len(text) <= width:
        return text
    half = (width - 1) // 2
    return text[:half] + "…" + text[-(width - 1 - half):]


def _wrap(text: str, width: int, max_lines: int = 2) -> str:
    lines = textwrap.wrap(text, width, break_on_hyphens=False) or [text]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines - 1], _ellipsize(" ".join(lines[max_lines - 1:]), width)]
    return "\n".join(lines)


# --- timeline -----------------------------------------------------------------------------------


@dataclass
class TimelineData:
    """Bars (one per phase span) and marks (ready, crash, end of log) on rows.

    Bars are ordered longest first within a row: drawn in that order, a phase that overlaps
    a longer one (an engine_init spanning compile and graph capture) stays visible on top.
    """

    bars: pl.DataFrame  # row, run_id, rank, phase, detail, start, end, seconds, open; drawn in this order
    marks: pl.DataFrame  # row, run_id, kind (ready|crash|end), at, label
    rows: list[str]  # row labels, top to bottom
    title: str
    coverage: Coverage  # how many runs are drawn of how many (the slowest, up to TIMELINE_MAX_ROWS rows)
    # row, run_id, start, end, seconds, cause: the run's silences (timeline.silence), under its bars
    silences: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_SILENCE_SCHEMA))


_BAR_SCHEMA = {"row": pl.Int64(), "run_id": pl.Utf8(), "rank": pl.Utf8(), "phase": pl.Utf8(), "detail": pl.Utf8(),
               "start": pl.Float64(), "end": pl.Float64(), "seconds": pl.Float64(), "open": pl.Boolean()}
_MARK_SCHEMA = {"row": pl.Int64(), "run_id": pl.Utf8(), "kind": pl.Utf8(), "at": pl.Float64(), "label": pl.Utf8()}
_SILENCE_SCHEMA: dict[str, Any] = {"row": pl.Int64(), "run_id": pl.Utf8(), "start": pl.Float64(), "end": pl.Float64(),
                   "seconds": pl.Float64(), "cause": pl.Utf8()}
SILENCE_COLOUR = "#222222"


def _silence_spans(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A run row's silences (the `silences_json` column) as spans after its first line."""
    import json

    try:
        items = json.loads(run.get("silences_json") or "[]")
    except ValueError:
        return []
    return [{"start": float(x["offset"]), "end": float(x["offset"]) + float(x["seconds"]),
             "seconds": float(x["seconds"]), "cause": x.get("cause")}
            for x in items if isinstance(x, dict) and x.get("offset") is not None]
def _phase_spans(phases: pl.DataFrame, run_end: float) -> list[dict[str, Any]]:
    """Phase rows -> spans in seconds after the run's first line (open phases run to the end)."""
    out = []
    for p in phases.iter_rows(named=True):
        if p["start_offset"] is None:
            continue
        start = float(p["start_offset"])
        if p["end"] is not None and p["start"] is not None:
            end = start + (p["end"] - p["start"]).total_seconds()
        elif p["seconds"] is not None:
            end = start + float(p["seconds"])
        else:
            end = run_end
        out.append({"rank": p["rank"], "phase": p["phase"], "detail": p["detail"], "start": start,
                    "end": max(start, end), "seconds": p["seconds"], "open": bool(p["open"])})
    return out


def _status(row: dict[str, Any]) -> tuple[str, float | None, str]:
    """(kind, where, text) of a run's end: ready, crash or the end of an incomplete log, at
    `seconds_to_end` (a crash at its first line, as every view places it)."""
    total = row["seconds_to_end"]
    if row["outcome"] == "ready":
        return "ready", total, f"ready {fmt_time_to_end(total, bool(row['lower_bound']))}"
    if row["outcome"] == "crashed":
        what = row["crash_category"] or "unknown"
        where = f" in {row['crash_phase']}" if row["crash_phase"] else ""
        return "crash", total, f"crash ({what}{where}) {fmt_time_to_end(total, bool(row['lower_bound']))}"
    if row.get("ready_kind") == "engine":
        return "end", total, f"engine ready {fmt_duration(total)}, no server"
    where = f" in {row['stopped_in']}" if row["stopped_in"] else ""
    return "end", total, f"log ends{where} {fmt_duration(total)}"


# A chart stays readable, and its image bounded, at any number of runs: at most this many
# rows (runs, or runs and their ranks with `ranks`) are drawn, the slowest runs first chosen,
# and the chart says how many of how many it draws (1,343 runs made a 68,778 px tall image).
TIMELINE_MAX_ROWS = 60
# ... and at most this many groups in compare and distribution (the groups with most runs).
MAX_GROUPS = 24


def _slowest_first(frame: pl.DataFrame, ranks: bool, phases: pl.DataFrame) -> pl.DataFrame:
    """The runs the timeline draws: all if they fit in `TIMELINE_MAX_ROWS`, else the slowest
    (by time to their end) that fit, in the frame's own order."""
    if ranks:
        per_run = (phases.filter(pl.col("scope") == "rank").group_by("run_id").agg(pl.col("rank").n_unique().alias("n")))
        rows_of = dict(zip(per_run["run_id"].to_list(), per_run["n"].to_list(), strict=True))
    else:
        rows_of = {}
    if sum(1 + rows_of.get(rid, 0) for rid in frame["run_id"].to_list()) <= TIMELINE_MAX_ROWS:
        return frame
    order = frame.with_row_index("_at").sort(pl.col("seconds_to_end").fill_null(0.0), descending=True)
    keep: list[int] = []
    used = 0
    for at, rid in zip(order["_at"].to_list(), order["run_id"].to_list(), strict=True):
        need = 1 + rows_of.get(rid, 0)
        if used + need > TIMELINE_MAX_ROWS:
            if keep:
                break
            need = min(need, TIMELINE_MAX_ROWS)  # one run with more ranks than rows: its first ones
        keep.append(at)
        used += need
    return frame.with_row_index("_at").filter(pl.col("_at").is_in(keep)).drop("_at")


def _biggest_groups(groups: Sequence[Any], seen: Coverage) -> tuple[set[int], Coverage]:
    """The indexes of the `MAX_GROUPS` timed groups with most runs, and the coverage once the
    others are not drawn (their runs counted as left out, with why)."""
    from firedup.tables.compare import Coverage

    timed = [i for i, g in enumerate(groups) if g.n > 0]
    if len(timed) <= MAX_GROUPS:
        return set(timed), seen
    keep = set(sorted(timed, key=lambda i: (-groups[i].n, i))[:MAX_GROUPS])
    dropped = [groups[i] for i in timed if i not in keep]
    runs = sum(g.n for g in dropped)
    left = {**seen.left_out, f"in {len(dropped)} smaller groups": runs}
    return keep, Coverage(seen.shown - runs, seen.total, left, seen.unreadable)


def timeline_data(runs: Runs, run_ids: Sequence[str] | None = None, ranks: bool = False) -> TimelineData:
    """Gantt rows: one per run (its critical path), plus one per rank when `ranks`; at most
    `TIMELINE_MAX_ROWS` rows (the slowest runs), `coverage` says how many of how many."""
    from firedup.tables.compare import Coverage

    frame = runs.runs if run_ids is None else runs.select(run_ids).runs
    if run_ids is not None:  # keep the caller's order
        order = {rid: i for i, rid in enumerate(run_ids)}
        frame = frame.sort(pl.col("run_id").replace_strict(order, default=len(order), return_dtype=pl.Int64))
    given = frame.height
    frame = _slowest_first(frame, ranks, runs.phases)
    coverage = Coverage(frame.height, given, {"faster, not drawn": given - frame.height} if given > frame.height else {})
    labels = run_labels(frame)
    rows: list[str] = []
    bars: list[dict[str, Any]] = []
    marks: list[dict[str, Any]] = []
    quiet: list[dict[str, Any]] = []
    phases = runs.phases.filter((pl.col("phase") != "total") & pl.col("run_id").is_in(frame["run_id"].to_list()))
    by_run = {key[0]: part for key, part in phases.group_by("run_id")} if phases.height else {}
    for run in frame.iter_rows(named=True):
        rid = run["run_id"]
        run_end = float(run["seconds_to_end"] or 0.0)  # the phases tile the run, to its end (`Run.end_ts`)
        mine = by_run.get(rid, phases.clear())
        groups: list[tuple[str, pl.DataFrame]] = [(labels[rid], mine.filter(pl.col("scope") == "run"))]
        if ranks:
            per_rank = mine.filter(pl.col("scope") == "rank")
            names = sorted({r for r in per_rank["rank"].to_list() if r is not None}, key=rank_sort_key)
            groups.extend((f"    {name}", per_rank.filter(pl.col("rank") == name)) for name in names)
        for i, (label, part) in enumerate(groups):
            if len(rows) >= TIMELINE_MAX_ROWS:
                break
            row = len(rows)
            rows.append(label)
            spans = sorted(_phase_spans(part, run_end), key=lambda s: (s["start"] - s["end"], s["start"]))
            bars.extend({"row": row, "run_id": rid, **span} for span in spans)
            if i == 0:
                kind, at, text = _status(run)
                marks.append({"row": row, "run_id": rid, "kind": kind, "at": at, "label": text})
                quiet.extend({"row": row, "run_id": rid, **span} for span in _silence_spans(run))
    what = "rows per rank" if ranks else "critical path over ranks"
    title = (f"Startup timeline of {labels[frame['run_id'][0]]} ({what})" if frame.height == 1 and given == 1
             else f"Startup timelines of {frame.height} runs ({what})" if given == frame.height
             else f"Startup timelines of the {frame.height} slowest of {given} runs ({what})")
    return TimelineData(pl.DataFrame(bars, schema=_BAR_SCHEMA) if bars else pl.DataFrame(schema=_BAR_SCHEMA),
                        pl.DataFrame(marks, schema=_MARK_SCHEMA) if marks else pl.DataFrame(schema=_MARK_SCHEMA),
                        rows, title, coverage,
                        pl.DataFrame(quiet, schema=_SILENCE_SCHEMA) if quiet else pl.DataFrame(schema=_SILENCE_SCHEMA))


# --- compare ------------------------------------------------------------------------------------


@dataclass
class CompareData:
    """Stacked segments (median seconds per phase and group) and the per-group totals."""

    segments: pl.DataFrame  # group_index, group, phase, seconds, left
    groups: pl.DataFrame  # group_index, group, n, not_timed, median, p90, max, stacked
    headline: str
    left_out: int
    coverage: Coverage  # how many runs the bars stand for, of how many, and why not the rest


def compare_data(cmp: Comparison) -> CompareData:
    """Median phases per timed group, in startup order, stacked left to right."""
    from firedup.tables.compare import coverage

    segments: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    keep, drawn = _biggest_groups(cmp.grouping.groups, coverage(cmp.grouping))
    timed = [g for i, g in enumerate(cmp.grouping.groups) if i in keep]
    present = {p for g in timed for p, sec in g.phases.items() if sec > 0}
    # an umbrella (a phase spanning others, such as engine_init) is stacked only where nothing it spans is
    names = sorted({p for g in timed for p in g.phases if not spanned(p, present)}, key=lambda p: (phase_rank(p), p))
    for i, g in enumerate(timed):
        left = 0.0
        for name in names:
            sec = g.phases.get(name, 0.0)
            if sec <= 0:
                continue
            segments.append({"group_index": i, "group": g.label, "phase": name, "seconds": sec, "left": left})
            left += sec
        groups.append({"group_index": i, "group": g.label, "n": g.n, "not_timed": len(g.not_timed),
                       "median": g.median, "p90": g.p90, "max": g.max, "stacked": left})
    seg_schema = {"group_index": pl.Int64(), "group": pl.Utf8(), "phase": pl.Utf8(), "seconds": pl.Float64(),
                  "left": pl.Float64()}
    grp_schema = {"group_index": pl.Int64(), "group": pl.Utf8(), "n": pl.Int64(), "not_timed": pl.Int64(),
                  "median": pl.Float64(), "p90": pl.Float64(), "max": pl.Float64(), "stacked": pl.Float64()}
    return CompareData(pl.DataFrame(segments, schema=seg_schema) if segments else pl.DataFrame(schema=seg_schema),
                       pl.DataFrame(groups, schema=grp_schema) if groups else pl.DataFrame(schema=grp_schema),
                       cmp.headline, len(cmp.grouping.left_out), drawn)


# --- distribution -------------------------------------------------------------------------------


@dataclass
class DistributionData:
    """Times to ready per group (with a deterministic vertical spread) and each group's budget."""

    points: pl.DataFrame  # group_index, group, run_id, label, seconds, offset
    budgets: pl.DataFrame  # group_index, group, n, not_timed, budget_seconds, risk, method, median
    risk: float
    coverage: Coverage  # how many runs are points, of how many, and why not the rest


def spread_offsets(values: Sequence[float], width: float = 0.5) -> list[float]:
    """Vertical offsets for a strip of points: by rank order, evenly over `width`, no randomness."""
    n = len(values)
    if n <= 1:
        return [0.0] * n
    order = sorted(range(n), key=lambda i: values[i])
    out = [0.0] * n
    for position, i in enumerate(order):
        # alternate above and below so neighbours in time are apart in height
        k = (position % 4)
        out[i] = (-0.75 + 0.5 * k) * width / 2
    return out


def distribution_data(runs: Runs, by: Sequence[str] | None = None, risk: float = 0.01,
                      budget_report: BudgetReport | None = None) -> DistributionData:
    """Points and budget lines of `budget_report` (the computed `tables.budget.budgets(runs, by, risk)`;
    computed here from `by` and `risk` when not given)."""
    from firedup.tables.budget import budgets
    from firedup.tables.compare import coverage

    report = budget_report if budget_report is not None else budgets(runs, by, risk)
    risk = report.budgets[0].risk if report.budgets else risk
    labels = run_labels(runs.runs)
    points: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    index = 0
    keep, drawn = _biggest_groups(report.grouping.groups, coverage(report.grouping))
    for at, (group, b) in enumerate(zip(report.grouping.groups, report.budgets, strict=True)):
        if at not in keep:
            continue
        offsets = spread_offsets(group.ready_seconds)
        for rid, sec, off in zip(group.run_ids, group.ready_seconds, offsets, strict=True):
            points.append({"group_index": index, "group": group.label, "run_id": rid, "label": labels[rid],
                           "seconds": sec, "offset": off})
        rows.append({"group_index": index, "group": group.label, "n": group.n, "not_timed": len(group.not_timed),
                     "budget_seconds": b.budget_seconds, "risk": b.risk, "method": b.method,
                     "method_label": b.method_label, "risk_label": b.risk_label,
                     "median": group.median, "slowest": b.slowest})
        index += 1
    pt_schema = {"group_index": pl.Int64(), "group": pl.Utf8(), "run_id": pl.Utf8(), "label": pl.Utf8(),
                 "seconds": pl.Float64(), "offset": pl.Float64()}
    b_schema = {"group_index": pl.Int64(), "group": pl.Utf8(), "n": pl.Int64(), "not_timed": pl.Int64(),
                "budget_seconds": pl.Int64(), "risk": pl.Float64(), "method": pl.Utf8(), "method_label": pl.Utf8(),
                "risk_label": pl.Utf8(), "median": pl.Float64(), "slowest": pl.Float64()}
    return DistributionData(pl.DataFrame(points, schema=pt_schema) if points else pl.DataFrame(schema=pt_schema),
                            pl.DataFrame(rows, schema=b_schema) if rows else pl.DataFrame(schema=b_schema), risk,
                            drawn)


# --- ranks --------------------------------------------------------------------------------------


@dataclass
class RanksData:
    """Seconds per rank and phase, how far each is above the fastest rank, and the stragglers."""

    cells: pl.DataFrame  # rank, column, phase, seconds, excess, straggler, late (barrier phases)
    ranks: list[str]  # rows, in rank order (at most RANKS_MAX_ROWS: those furthest above the fastest)
    columns: list[str]  # phase (detail) columns, in startup order
    run_id: str
    label: str
    total_ranks: int = 0  # the run's ranks, drawn or not

    @property
    def shown_text(self) -> str:
        """`64 of 2,000 ranks shown (those furthest above the fastest)`, or "" when all are."""
        if self.total_ranks <= len(self.ranks):
            return ""
        return (f"{len(self.ranks)} of {self.total_ranks:,} ranks shown (those furthest above the fastest "
                "or last in at a barrier)")


# A rank heatmap taller than this many rows is no picture (2,000 ranks drew 72,220 px; 10,000
# ran out of memory): the ranks furthest above the fastest are drawn, and it says how many.
RANKS_MAX_ROWS = 64




def _rank_cells(phases: pl.DataFrame) -> pl.DataFrame:
    rank_phases = phases.filter((pl.col("scope") == "rank") & pl.col("rank").is_not_null()
                                & pl.col("seconds").is_not_null())
    return (rank_phases
            .with_columns(pl.when(pl.col("detail").is_null()).then(pl.col("phase"))
                          .otherwise(pl.col("phase") + " (" + pl.col("detail") + ")").alias("column"))
            .group_by("rank", "column", "phase").agg(pl.col("seconds").sum(), pl.col("start_offset").min()))


def _with_excess(cells: pl.DataFrame) -> pl.DataFrame:
    """`excess` over the fastest rank, and `straggler`: a phase's slow rank (timeline.ranks.is_straggler);
    at a barrier phase (NO_STRAGGLERS) the rank that arrived last (`late_arrival`, `is_late`), never
    the one that waited longest. `late`: seconds a barrier's rank arrived after the median rank."""
    barrier = pl.col("phase").is_in(list(NO_STRAGGLERS))
    # the last rank in at each barrier column, by the one rule the text view uses
    last_in: dict[tuple[str, str], float] = {}
    for (column,), group in cells.filter(barrier & pl.col("start_offset").is_not_null()).group_by(["column"]):
        late = late_arrival(dict(zip(group["rank"].to_list(), group["start_offset"].to_list(), strict=True)))
        if late is not None:
            last_in[(str(column), late[0])] = late[1]
    lates = [last_in.get((c, r)) for c, r in zip(cells["column"].to_list(), cells["rank"].to_list(), strict=True)]
    return (cells
            .with_columns(pl.col("seconds").min().over("column").alias("_min"),
                          pl.col("seconds").median().over("column").alias("_median"),
                          pl.len().over("column").alias("_ranks"),
                          pl.Series("late", lates, dtype=pl.Float64()))
            .with_columns((pl.col("seconds") - pl.col("_min")).alias("excess"),
                          ((pl.col("_ranks") >= 2)
                           & pl.when(barrier).then(pl.col("late") >= STRAGGLER_SECONDS)
                           .otherwise(pl.col("seconds") - pl.col("_median")
                                      >= pl.max_horizontal(pl.lit(STRAGGLER_SECONDS), STRAGGLER_SHARE * pl.col("_median"))))
                          .fill_null(False).alias("straggler"))
            .drop("_min", "_median", "_ranks", "start_offset"))


def straggler_spread(runs: Runs) -> pl.DataFrame:
    """Per run with two or more ranks: the largest (slowest - fastest rank) seconds over its phases."""
    out = []
    phases = runs.phases.filter(pl.col("scope") == "rank")
    for rid in runs.runs["run_id"].to_list():
        cells = _rank_cells(phases.filter(pl.col("run_id") == rid))
        if cells.is_empty() or cells["rank"].n_unique() < 2:
            continue
        out.append({"run_id": rid, "spread": float(cast(float, _with_excess(cells)["excess"].max()) or 0.0)})
    return pl.DataFrame(out, schema={"run_id": pl.Utf8(), "spread": pl.Float64()})


def ranks_data(runs: Runs, run_id: str | None = None) -> RanksData:
    """The heatmap of one run: by default the run whose ranks differ most (its worst straggler)."""
    if run_id is None:
        spread = straggler_spread(runs)
        if spread.is_empty():
            raise DataError("no run has phases on two or more ranks, so there is no rank heatmap to draw")
        run_id = str(spread.sort("spread", descending=True, maintain_order=True)["run_id"][0])
    elif run_id not in set(runs.runs["run_id"].to_list()):
        raise UsageError(f"no run {run_id!r} in these logs")
    cells = _rank_cells(runs.phases.filter(pl.col("run_id") == run_id))
    if cells.is_empty():
        raise DataError(f"run {run_id} has no per-rank phases")
    cells = _with_excess(cells)
    total = cells["rank"].n_unique()
    if total > RANKS_MAX_ROWS:
        score = dict(cells.group_by("rank").agg(
            pl.max_horizontal(pl.col("excess").max(), pl.col("late").max().fill_null(0))).iter_rows())
        kept = sorted(score, key=lambda r: (-score[r], rank_sort_key(r)))[:RANKS_MAX_ROWS]
        cells = cells.filter(pl.col("rank").is_in(kept))
    ranks = sorted(set(cells["rank"].to_list()), key=rank_sort_key)
    firsts = (runs.phases.filter((pl.col("run_id") == run_id) & (pl.col("scope") == "rank"))
              .group_by("phase", "detail").agg(pl.col("start_offset").min()))
    first_at = {(r["phase"], r["detail"]): r["start_offset"] for r in firsts.iter_rows(named=True)}
    col_phase = dict(zip(cells["column"].to_list(), cells["phase"].to_list(), strict=True))

    def col_key(col: str) -> tuple[Any, ...]:
        phase = col_phase[col]
        detail = col[len(phase) + 2:-1] if col != phase else None
        start = first_at.get((phase, detail))
        return (phase_rank(phase.removeprefix("draft.")), phase.startswith("draft."),
                start if start is not None else math.inf, col)

    columns = sorted(set(cells["column"].to_list()), key=col_key)
    row = runs.runs.filter(pl.col("run_id") == run_id)
    label = run_labels(row)[run_id]
    cells = cells.sort(pl.col("rank").replace_strict({r: i for i, r in enumerate(ranks)}, return_dtype=pl.Int64),
                       pl.col("column").replace_strict({c: i for i, c in enumerate(columns)}, return_dtype=pl.Int64))
    return RanksData(cells.select("rank", "column", "phase", "seconds", "excess", "straggler", "late"), ranks, columns,
                     run_id, label, total)


# --- drawing ------------------------------------------------------------------------------------

STYLE: dict[str, Any] = {
    "font.size": 10, "axes.titlesize": 12, "axes.titleweight": "bold", "axes.labelsize": 10,
    "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "axes.spines.top": False,
    "axes.spines.right": False, "svg.fonttype": "none", "svg.hashsalt": "firedup",
    "font.family": "DejaVu Sans", "hatch.linewidth": 0.6, "figure.dpi": 100,
    # every label is a log's text (a file, model or flag name): `$x^2$` in it is shown as written,
    # never read as mathtext (which raised on `$` alone) or TeX
    "text.parse_math": False, "text.usetex": False,
}
# What the labels drawn while saving (ticks are made then) need as well.
SAVE_STYLE: dict[str, Any] = {"svg.hashsalt": "firedup", "svg.fonttype": "none", "text.parse_math": False,
                              "text.usetex": False}
WIDTH = 11.0  # inches at 100 dpi: 1100 px, fits a report column and a laptop screen


def _figure(height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH, height), layout="constrained")


def _styled(draw: Callable[..., Figure]) -> Callable[..., Figure]:
    """Run a drawing function under the shared style (no global matplotlib state changes)."""
    import functools

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        import matplotlib

        with matplotlib.rc_context(cast(Any, STYLE)):
            return draw(*args, **kwargs)

    return wrapper


def _phase_legend(fig: Figure, ax: Axes, phases: Sequence[str], extra: Sequence[Any] = (),
                  title: str = "phase") -> None:
    from matplotlib.patches import Patch

    handles = [Patch(label=p, **phase_style(p)) for p in sorted(set(phases), key=lambda p: (phase_rank(p), p))]
    handles.extend(extra)
    ncol = min(len(handles), 6) or 1
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, title=title,
               title_fontsize=9, handlelength=1.6, columnspacing=1.4)


@_styled
def timeline(runs: Runs, run_ids: Sequence[str] | None = None, ranks: bool = False) -> Figure:
    """Gantt chart: phases on a minutes:seconds axis, ready and crash marked, gaps hatched."""
    from matplotlib.lines import Line2D

    data = timeline_data(runs, run_ids, ranks)
    n_rows = len(data.rows)
    fig = _figure(1.9 + 0.34 * n_rows + (0.3 if n_rows < 4 else 0.0))
    ax = fig.add_subplot()
    height = 0.72
    for bar in data.bars.iter_rows(named=True):
        y = bar["row"] - height / 2
        style = phase_style(bar["phase"])
        if bar["open"]:
            style = {**style, "alpha": 0.55}
        # a zero-length phase still shows as a sliver
        ax.broken_barh([(bar["start"], max(bar["end"] - bar["start"], 0.0))], (y, height), **style)
    # silences: a dark band along the bottom of the run's row (no log line of the server's own)
    for q in data.silences.iter_rows(named=True):
        ax.broken_barh([(q["start"], q["end"] - q["start"])], (q["row"] + height / 2 - 0.12, 0.12),
                       facecolor=SILENCE_COLOUR, edgecolor="none", zorder=3)
    ready = data.marks.filter(pl.col("kind") == "ready")
    crash = data.marks.filter(pl.col("kind") == "crash")
    ax.scatter(ready["at"].to_list(), ready["row"].to_list(), marker="|", s=260, linewidths=2.4,
               color=READY_COLOUR, zorder=4)
    ax.scatter(crash["at"].to_list(), crash["row"].to_list(), marker="X", s=110, color=CRASH_COLOUR, clip_on=False,
               edgecolors="black", linewidths=0.6, zorder=4)
    ended = data.marks.filter(pl.col("kind") == "end")
    ax.scatter(ended["at"].to_list(), ended["row"].to_list(), marker=">", s=60, color="white",
               edgecolors="#555555", linewidths=1.2, zorder=4, clip_on=False)
    ends = [*data.bars["end"].to_list(), *[m for m in data.marks["at"].to_list() if m is not None]]
    hi = max(ends, default=1.0) * 1.02 or 1.0
    ax.set_xlim(0, hi)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_yticks(range(n_rows), [_ellipsize(r, 34) for r in data.rows])
    for row, (tick, label) in enumerate(zip(ax.get_yticklabels(), data.rows, strict=True)):
        if not label.startswith(" ") and ranks:
            tick.set_fontweight("bold")
            if row:  # a rule between one run's ranks and the next run
                ax.axhline(row - 0.5, color="#888888", linewidth=0.8)
    # the outcome of each run in a column right of the plot: never on top of a bar
    for mark in data.marks.iter_rows(named=True):
        colour = CRASH_COLOUR if mark["kind"] == "crash" else "black"
        ax.annotate(mark["label"], xy=(1.01, mark["row"]), xycoords=("axes fraction", "data"), va="center",
                    ha="left", fontsize=8.5, color=colour, annotation_clip=False)
    _time_axis(ax.xaxis, 0, hi)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(with_coverage("time since the run's first log line (minutes:seconds)", data.coverage))
    ax.set_title(data.title, loc="left")
    extra = []
    if ready.height:
        extra.append(Line2D([], [], marker="|", markersize=14, markeredgewidth=2.4, linestyle="none",
                            color=READY_COLOUR, label="ready"))
    if crash.height:
        extra.append(Line2D([], [], marker="X", markersize=9, linestyle="none", color=CRASH_COLOUR,
                            markeredgecolor="black", markeredgewidth=0.6, label="crash"))
    if ended.height:
        extra.append(Line2D([], [], marker=">", markersize=8, linestyle="none", color="white",
                            markeredgecolor="#555555", markeredgewidth=1.2, label="log ends (not ready)"))
    if data.silences.height:
        extra.append(Line2D([], [], linewidth=4, color=SILENCE_COLOUR, label="silence (no log line)"))
    _phase_legend(fig, ax, data.bars["phase"].unique().to_list(), extra)
    return fig


def with_coverage(label: str, coverage: Coverage, width: int = 100) -> str:
    """`label`, and below it, for a chart that draws fewer runs than it was given, how many of
    how many and why (in the axis label, so the layout keeps the legend clear of it)."""
    if coverage.complete:
        return label
    text = coverage.text("drawn:") + " (`firedup compare` lists them)"
    return f"{label}\n{_wrap(text[:1].upper() + text[1:], width, 3)}"


@_styled
def compare(runs: Runs, by: Sequence[str] | None = None, comparison: Comparison | None = None) -> Figure:
    """Horizontal stacked bars of the median phases per group, the median total at each bar's end.

    `comparison`: the computed `tables.compare.compare(runs, by)`, drawn as it is (computed here
    from `by` when not given). Runs it leaves out are counted under the chart, with why."""
    from firedup.tables.compare import compare as compare_runs

    cmp = comparison if comparison is not None else compare_runs(runs, by)
    data = compare_data(cmp)
    n = data.groups.height
    fig = _figure(2.3 + 0.75 * max(n, 1))
    ax = fig.add_subplot()
    if n == 0:
        ax.text(0.5, 0.5, with_coverage("no run reached ready: nothing to compare", data.coverage, 80),
                ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        ax.set_title("Median startup phases per group", loc="left")
        return fig
    hi = max([*data.groups["stacked"].to_list(), *data.groups["median"].to_list()]) * 1.2
    for seg in data.segments.iter_rows(named=True):
        style = phase_style(seg["phase"])
        ax.barh(seg["group_index"], seg["seconds"], left=seg["left"], height=0.6, **style)
        if seg["seconds"] >= 0.09 * hi:  # room for its duration inside the bar
            ax.text(seg["left"] + seg["seconds"] / 2, seg["group_index"], fmt_duration(seg["seconds"]),
                    ha="center", va="center", fontsize=8.5, color=text_colour_on(style["facecolor"]))
    for g in data.groups.iter_rows(named=True):
        note = f"  median of {g['n']} run{'s' if g['n'] != 1 else ''}"
        ax.text(g["stacked"] + 0.01 * hi, g["group_index"], fmt_duration(g["median"]), ha="left", va="center",
                fontsize=10, fontweight="bold")
        ax.text(g["stacked"] + 0.01 * hi, g["group_index"] + 0.36, note.strip(), ha="left", va="center",
                fontsize=8, color="#444444")
    labels = []
    for g in data.groups.iter_rows(named=True):
        extra = f"\n(+{g['not_timed']} not timed)" if g["not_timed"] else ""
        labels.append(_group_label(g["group"]) + extra)
    ax.set_yticks(range(n), labels)
    ax.set_ylim(n - 0.45, -0.6)
    ax.set_xlim(0, hi)
    _time_axis(ax.xaxis, 0, hi)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(with_coverage("median seconds per phase, stacked (minutes:seconds); the bold figure is the median "
                                "time to ready", data.coverage))
    fig.suptitle("Where the startup time goes: median phases per group", x=0.01, ha="left", fontsize=12,
                 fontweight="bold")
    ax.set_title(_wrap(data.headline[:1].upper() + data.headline[1:], 125, 3), loc="left", fontsize=9.5,
                 fontweight="normal")
    _phase_legend(fig, ax, data.segments["phase"].unique().to_list())
    return fig


PANELS_UP_TO = 4  # groups drawn as panels with their own scale; more share one axis (an overview)


def _group_label(label: str, width: int = 30, max_lines: int = 3) -> str:
    """`tp_size=2, disable_cuda_graph=False, ...` on lines of whole `flag=value` items."""
    items = label.split(", ")
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    if len(lines) > max_lines:
        lines = [*lines[:max_lines - 1], _ellipsize(", ".join(lines[max_lines - 1:]), width)]
    return "\n".join(_ellipsize(line, width + 8) for line in lines)


def _box(ax: Axes, secs: list[float], position: float) -> None:
    ax.boxplot(secs, orientation="horizontal", positions=[position], widths=0.55, whis=(0, 100),
               patch_artist=True, manage_ticks=False, boxprops={"facecolor": "#EEEEEE", "edgecolor": "#555555"},
               medianprops={"color": "black", "linewidth": 2}, whiskerprops={"color": "#555555"},
               capprops={"color": "#555555"})


@_styled
def distribution(runs: Runs, by: Sequence[str] | None = None, risk: float = 0.01,
                 budget_report: BudgetReport | None = None) -> Figure:
    """Time to ready per group: every run as a point over a box, the budget as a dashed line.

    Up to `PANELS_UP_TO` groups get a panel each with its own scale, so the spread of a
    4-minute group stays visible beside a 15-minute one; more groups share one axis.
    `budget_report`: the computed `tables.budget.budgets(runs, by, risk)`, drawn as it is. Runs it
    leaves out are counted under the chart, with why.
    """
    data = distribution_data(runs, by, risk, budget_report)
    risk = data.risk
    n = data.budgets.height
    if n == 0:
        fig = _figure(2.5)
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, with_coverage("no run reached ready: no time to ready to show", data.coverage, 80),
                ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    if n > PANELS_UP_TO:
        return _distribution_shared(data)
    from matplotlib.lines import Line2D

    fig = _figure(1.5 + 1.55 * n)
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    for ax, g in zip(axes, data.budgets.iter_rows(named=True), strict=True):
        pts = data.points.filter(pl.col("group_index") == g["group_index"])
        secs = pts["seconds"].to_list()
        budget = g["budget_seconds"]
        lo = min([*secs, *([budget] if budget else [])])
        hi = max([*secs, *([budget] if budget else [])])
        pad = max((hi - lo) * 0.12, 5.0)
        if len(secs) >= 2:
            _box(ax, secs, 0)
        ax.scatter(secs, pts["offset"].to_list(), s=36, color=POINT_COLOUR, edgecolors="white", linewidths=0.6,
                   zorder=3)
        handles = [Line2D([], [], marker="o", linestyle="none", color=POINT_COLOUR, label="a run (time to ready)")]
        if len(secs) >= 2:
            handles.append(Line2D([], [], color="black", linewidth=2,
                                  label=f"median {fmt_duration(g['median'])}; box: middle half; whiskers: min-max"))
        if budget:
            ax.axvline(budget, color=CRASH_COLOUR, linestyle="--", linewidth=1.8, zorder=2)
            handles.append(Line2D([], [], color=CRASH_COLOUR, linestyle="--", linewidth=1.8,
                                  label=f"budget {fmt_duration(budget)}: {g['method_label']};\n"
                                        f"{g['risk_label']}"))
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(-0.6, 0.6)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        _time_axis(ax.xaxis, lo - pad, hi + pad, 10)
        ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
        ax.set_axisbelow(True)
        extra = f", {g['not_timed']} not timed (crashed/incomplete)" if g["not_timed"] else ""
        ax.set_title(_ellipsize(f"{g['group']}: {g['n']} run{'s' if g['n'] != 1 else ''} ready{extra}", 110),
                     loc="left", fontsize=10, fontweight="bold")
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8.5)
    # the label is centred under a panel that the legends beside it narrow: wrapped to fit there
    axes[-1].set_xlabel(with_coverage("time to ready (minutes:seconds); each panel has its own scale", data.coverage,
                                      60))
    fig.suptitle(f"Time to ready per group, and the budget asked for a {_pct(risk)} risk (legends: the risk it carries)",
                 x=0.01, ha="left", fontsize=12, fontweight="bold")
    return fig


POINT_COLOUR = "#332288"


def _distribution_shared(data: DistributionData) -> Figure:
    """Many groups: one row each on a shared time axis, the budget as a dashed tick on its row."""
    from matplotlib.lines import Line2D

    n = data.budgets.height
    fig = _figure(2.0 + 0.62 * n)
    ax = fig.add_subplot()
    hi = 0.0
    for g in data.budgets.iter_rows(named=True):
        row = g["group_index"]
        pts = data.points.filter(pl.col("group_index") == row)
        secs = pts["seconds"].to_list()
        if len(secs) >= 2:
            _box(ax, secs, row)
        ax.scatter(secs, [row + o for o in pts["offset"].to_list()], s=30, color=POINT_COLOUR,
                   edgecolors="white", linewidths=0.6, zorder=3)
        budget = g["budget_seconds"]
        if budget:
            ax.plot([budget, budget], [row - 0.38, row + 0.38], color=CRASH_COLOUR, linestyle="--", linewidth=1.8)
        hi = max(hi, *secs, budget or 0)
        text = f"budget {fmt_duration(budget)} ({g['method_label']}; {g['risk_label']})" if budget else "no budget"
        ax.annotate(text, xy=(1.01, row), xycoords=("axes fraction", "data"), va="center", ha="left",
                    fontsize=8.5, annotation_clip=False)
    labels = [_group_label(g["group"]) + f" (n={g['n']})" for g in data.budgets.iter_rows(named=True)]
    ax.set_yticks(range(n), labels, fontsize=8.5)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0, hi * 1.05)
    _time_axis(ax.xaxis, 0, hi * 1.05)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(with_coverage("time to ready (minutes:seconds), one scale for every group", data.coverage))
    ax.set_title(f"Time to ready per group, and the budget asked for a {_pct(data.risk)} risk", loc="left")
    handles = [Line2D([], [], marker="o", linestyle="none", color=POINT_COLOUR, label="a run (time to ready)"),
               Line2D([], [], color="black", linewidth=2, label="median; box: middle half; whiskers: min-max"),
               Line2D([], [], color=CRASH_COLOUR, linestyle="--", linewidth=1.8,
                      label=f"budget (asked risk {_pct(data.risk)}; each row says what it carries)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    return fig


def _pct(risk: float) -> str:
    text = f"{risk * 100:.2f}".rstrip("0").rstrip(".")
    return f"{text} %"


@_styled
def ranks(runs: Runs, run_id: str | None = None) -> Figure:
    """Heatmap of phase duration by rank: colour = seconds above the fastest rank, text = duration."""
    import numpy as np
    from matplotlib.colors import Normalize
    from matplotlib.patches import Patch, Rectangle

    data = ranks_data(runs, run_id)
    n_rows, n_cols = len(data.ranks), len(data.columns)
    grid = np.full((n_rows, n_cols), np.nan)
    seconds = np.full((n_rows, n_cols), np.nan)
    strag = np.zeros((n_rows, n_cols), dtype=bool)
    r_index = {r: i for i, r in enumerate(data.ranks)}
    c_index = {c: i for i, c in enumerate(data.columns)}
    for cell in data.cells.iter_rows(named=True):
        i, j = r_index[cell["rank"]], c_index[cell["column"]]
        grid[i, j], seconds[i, j], strag[i, j] = cell["excess"], cell["seconds"], cell["straggler"]
    fig = _figure(2.2 + 0.36 * n_rows)
    ax = fig.add_subplot()
    vmax = max(float(np.nanmax(grid)) if np.isfinite(grid).any() else 0.0, 1.0)
    cmap = _sequential_cmap()
    norm = Normalize(0, vmax)
    masked = np.ma.masked_invalid(grid)
    image = ax.imshow(masked, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_facecolor("#F4F4F4")
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isnan(seconds[i, j]):
                ax.text(j, i, "–", ha="center", va="center", fontsize=8, color="#999999")
                continue
            fill = cmap(norm(grid[i, j]))
            hex_fill = "#{:02X}{:02X}{:02X}".format(*(round(255 * c) for c in fill[:3]))
            ax.text(j, i, _cell_text(float(seconds[i, j])), ha="center", va="center", fontsize=8,
                    color=text_colour_on(hex_fill), fontweight="bold" if strag[i, j] else "normal")
            if strag[i, j]:
                ax.add_patch(Rectangle((j - 0.48, i - 0.46), 0.96, 0.92, fill=False, edgecolor="black",
                                       linewidth=2.0))
    ax.set_xticks(range(n_cols), [column_label(c) for c in data.columns], fontsize=8.5)
    ax.set_yticks(range(n_rows), data.ranks)
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False, length=0)
    ax.tick_params(axis="y", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xticks(np.arange(-0.5, n_cols, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, n_rows, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    bar = fig.colorbar(image, ax=ax, location="right", shrink=0.9, pad=0.02)
    _time_axis(bar.ax.yaxis, 0, vmax, 6)
    bar.set_label("time above the phase's fastest rank (m:ss)")
    shown = f" {data.shown_text}." if data.shown_text else ""
    ax.set_title(_wrap(f"Phase duration by rank: {data.label}. {worst_rank_text(data)}{shown}", 110, 3 if shown else 2),
                 loc="left")
    fig.legend(handles=[Patch(facecolor="white", edgecolor="black", linewidth=2.0,
                              label=f"straggler: ≥ {STRAGGLER_SECONDS:g} s and ≥ {STRAGGLER_SHARE:.0%} "
                                    "over the median rank"),
                        Patch(facecolor="#F4F4F4", edgecolor="#CCCCCC", label="– phase not seen on that rank")],
               loc="outside lower center", ncol=2, frameon=False)
    return fig


def _cell_text(seconds: float) -> str:
    """A whole-second timestamp difference of 0 means under a second, not 0 ms."""
    return "<1 s" if seconds == 0 else fmt_duration(seconds)


def column_label(column: str) -> str:
    """`draft.cuda_graph (decode)` -> three short lines: heatmap columns stay narrow."""
    name, _, detail = column.partition(" (")
    lines = name.replace("draft.", "draft\n").split("\n")
    if detail:
        lines.append("(" + detail)
    return "\n".join(lines)


def worst_rank_text(data: RanksData) -> str:
    """The rank furthest over the median rank of its phase, in words."""
    cells = data.cells.with_columns((pl.col("seconds") - pl.col("seconds").median().over("column")).alias("over"))
    if cells.is_empty() or cells["rank"].n_unique() < 2:
        return ""
    # at a barrier the longest wait is the first to arrive: such a column names the last to arrive
    barrier = pl.col("phase").is_in(list(NO_STRAGGLERS))
    durations = cells.filter(~barrier).sort("over", descending=True, maintain_order=True)
    late = cells.filter(barrier & pl.col("late").is_not_null()).sort("late", descending=True, maintain_order=True)
    worst = durations.row(0, named=True) if not durations.is_empty() else None
    latest = late.row(0, named=True) if not late.is_empty() else None
    if latest is not None and latest["late"] >= 1.0 and (worst is None or latest["late"] > worst["over"]):
        return (f"Last in: {latest['rank']} at {latest['column']}, {fmt_duration(latest['late'])} after the other "
                f"ranks (they waited for it: their {latest['column']} is the longer)"
                + (", a straggler." if latest["straggler"] else "."))
    if worst is None or worst["over"] < 1.0:
        return "The ranks agree within a second."
    return (f"Slowest: {worst['rank']} in {worst['column']}, {fmt_duration(worst['over'])} over the median rank"
            + (" (a straggler)." if worst["straggler"] else "."))


def _sequential_cmap() -> Any:
    """Tol's YlOrBr sequential scheme (colour-blind safe, light = fast, dark = slow)."""
    from matplotlib.colors import LinearSegmentedColormap

    colours = ["#FFFFE5", "#FFF7BC", "#FEE391", "#FEC44F", "#FB9A29", "#EC7014", "#CC4C02", "#993404", "#662506"]
    return LinearSegmentedColormap.from_list("tol_ylorbr", colours)


# --- kinds and saving ---------------------------------------------------------------------------

KINDS: dict[str, str] = {
    "timeline": "Gantt chart of runs: phases in time, ready and crash marked",
    "compare": "stacked median phases per group, the median time to ready at each bar's end",
    "distribution": "time to ready per group as points and a box, with the budget line",
    "ranks": "heatmap of phase duration by rank (stragglers)",
}


def plot(kind: str, runs: Runs, by: Sequence[str] | None = None, **options: Any) -> Figure:
    """One chart by name (see `KINDS`): what `firedup plot KIND` draws."""
    if kind == "timeline":
        return timeline(runs, ranks=bool(options.get("ranks", False)))
    if kind == "compare":
        return compare(runs, by)
    if kind == "distribution":
        return distribution(runs, by, float(options.get("risk", 0.01)))
    if kind == "ranks":
        return ranks(runs, options.get("run_id"))
    raise UsageError(f"unknown chart kind {kind!r}; the kinds are {', '.join(KINDS)}")


def save(fig: Figure, path: str | os.PathLike[str], dpi: float = 100) -> None:
    """Write PNG or SVG with no date or version in the file: the same chart gives the same bytes."""
    import matplotlib

    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise UsageError(f"{os.fspath(path)}: write charts as .png or .svg, not {Path(path).suffix or 'no suffix'}")
    metadata: dict[str, Any] = {"Software": None} if fmt == "png" else {"Date": None, "Creator": "firedup"}
    from firedup.core.files import write_file

    with matplotlib.rc_context(cast(Any, SAVE_STYLE)), _no_glyph_warnings():
        write_file(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi, metadata=metadata, facecolor="white"))


def to_bytes(fig: Figure, fmt: str = "png", dpi: float = 100) -> bytes:
    """The chart as PNG or SVG bytes (for embedding)."""
    import io

    import matplotlib

    buffer = io.BytesIO()
    metadata: dict[str, Any] = {"Software": None} if fmt == "png" else {"Date": None, "Creator": "firedup"}
    with matplotlib.rc_context(cast(Any, SAVE_STYLE)), _no_glyph_warnings():
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata, facecolor="white")
    return buffer.getvalue()


@contextlib.contextmanager
def _no_glyph_warnings() -> Iterator[None]:
    """A label holds what a log wrote, in any script: a character the font lacks is drawn as a
    box, without a warning per character on stderr."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        yield


__all__ = ["KINDS", "PHASE_COLOURS", "CompareData", "DistributionData", "RanksData", "TimelineData",
           "compare", "compare_data", "distribution", "distribution_data", "fmt_clock",
           "phase_colour", "plot", "ranks", "ranks_data", "save", "tick_step", "timeline", "timeline_data",
           "to_bytes"]

"""The timeline chart: a Gantt chart of runs (optionally a row per rank), ready and crash
marked, silences under the bars."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from firedup.core.units import fmt_duration, fmt_time_to_end
from firedup.render.charts.style import (
    CRASH_COLOUR,
    READY_COLOUR,
    ellipsize,
    new_figure,
    phase_legend,
    phase_style,
    run_labels,
    styled,
    time_axis,
    with_coverage,
)
from firedup.tables.frames import Runs
from firedup.timeline.ranks import rank_sort_key

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from firedup.tables.grouping import Coverage

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


def timeline_data(runs: Runs, run_ids: Sequence[str] | None = None, ranks: bool = False) -> TimelineData:
    """Gantt rows: one per run (its critical path), plus one per rank when `ranks`; at most
    `TIMELINE_MAX_ROWS` rows (the slowest runs), `coverage` says how many of how many."""
    from firedup.tables.grouping import Coverage

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
    ranks_cut: list[tuple[int, int]] = []  # (drawn, of) per run whose ranks did not all fit
    for run in frame.iter_rows(named=True):
        rid = run["run_id"]
        run_end = float(run["seconds_to_end"] or 0.0)  # the phases tile the run, to its end (`Run.end_ts`)
        room = TIMELINE_MAX_ROWS - len(rows)
        if room <= 0:
            break
        groups, n_ranks = _row_phases(labels[rid], by_run.get(rid, phases.clear()), ranks, room)
        if ranks and len(groups) - 1 < n_ranks:
            ranks_cut.append((len(groups) - 1, n_ranks))
        for i, (label, part) in enumerate(groups):
            row = len(rows)
            rows.append(label)
            spans = sorted(_phase_spans(part, run_end), key=lambda s: (s["start"] - s["end"], s["start"]))
            bars.extend({"row": row, "run_id": rid, **span} for span in spans)
            if i == 0:
                kind, at, text = _status(run)
                marks.append({"row": row, "run_id": rid, "kind": kind, "at": at, "label": text})
                quiet.extend({"row": row, "run_id": rid, **span} for span in _silence_spans(run))
    return TimelineData(_frame(bars, _BAR_SCHEMA), _frame(marks, _MARK_SCHEMA), rows,
                        _title(labels, frame, given, ranks, ranks_cut), coverage, _frame(quiet, _SILENCE_SCHEMA))


def _row_phases(label: str, mine: pl.DataFrame, ranks: bool, room: int) -> tuple[list[tuple[str, pl.DataFrame]], int]:
    """A run's rows and their phases, at most `room` of them: its critical path, then (`ranks`)
    one row per rank in rank order; and how many ranks the run has. The ranks' phases are split
    in one pass (a filter per rank made 100,000 ranks quadratic: 64 s to draw 60 rows)."""
    groups: list[tuple[str, pl.DataFrame]] = [(label, mine.filter(pl.col("scope") == "run"))]
    if not ranks:
        return groups, 0
    per_rank = mine.filter((pl.col("scope") == "rank") & pl.col("rank").is_not_null())
    names = sorted(per_rank["rank"].unique().to_list(), key=rank_sort_key)
    drawn = names[:max(room - 1, 0)]
    chosen = per_rank.filter(pl.col("rank").is_in(drawn))
    parts = chosen.partition_by("rank", as_dict=True, maintain_order=True) if chosen.height else {}
    groups.extend((f"    {name}", parts[(name,)]) for name in drawn)
    return groups, len(names)


def _title(labels: dict[str, str], frame: pl.DataFrame, given: int, ranks: bool,
           ranks_cut: Sequence[tuple[int, int]] = ()) -> str:
    """`Startup timelines of the 60 slowest of 1343 runs (critical path over ranks)` and the like;
    where a run's ranks did not all fit, how many are drawn of how many."""
    what = "rows per rank" if ranks else "critical path over ranks"
    if ranks_cut:
        drawn, of = sum(d for d, _ in ranks_cut), sum(n for _, n in ranks_cut)
        what = f"rows per rank: the first {drawn:,} of {of:,} ranks in rank order"
    if frame.height == 1 and given == 1:
        return f"Startup timeline of {labels[frame['run_id'][0]]} ({what})"
    if given == frame.height:
        return f"Startup timelines of {frame.height} runs ({what})"
    return f"Startup timelines of the {frame.height} slowest of {given} runs ({what})"


def _frame(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


@styled
def timeline(runs: Runs, run_ids: Sequence[str] | None = None, ranks: bool = False) -> Figure:
    """Gantt chart: phases on a minutes:seconds axis, ready and crash marked, gaps hatched."""
    from matplotlib.lines import Line2D

    data = timeline_data(runs, run_ids, ranks)
    n_rows = len(data.rows)
    fig = new_figure(1.9 + 0.34 * n_rows + (0.3 if n_rows < 4 else 0.0))
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
    ax.set_yticks(range(n_rows), [ellipsize(r, 34) for r in data.rows])
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
    time_axis(ax.xaxis, 0, hi)
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
    phase_legend(fig, ax, data.bars["phase"].unique().to_list(), extra)
    return fig

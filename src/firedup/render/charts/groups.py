"""The charts of groups of runs: `compare` (stacked median phases per group) and `distribution`
(time to ready per group with its budget)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from firedup.core.units import fmt_duration
from firedup.render.charts.style import (
    CRASH_COLOUR,
    ellipsize,
    new_figure,
    phase_legend,
    phase_rank,
    phase_style,
    run_labels,
    styled,
    text_colour_on,
    time_axis,
    with_coverage,
    wrap_label,
)
from firedup.tables.frames import Runs
from firedup.timeline.phases import spanned

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from firedup.tables.budget import BudgetReport
    from firedup.tables.compare import Comparison
    from firedup.tables.grouping import Coverage

# A chart stays readable at any number of runs: at most this many groups in compare and
# distribution (the groups with most runs); the chart says how many runs it leaves out.
MAX_GROUPS = 24


def _biggest_groups(groups: Sequence[Any], seen: Coverage) -> tuple[set[int], Coverage]:
    """The indexes of the `MAX_GROUPS` timed groups with most runs, and the coverage once the
    others are not drawn (their runs counted as left out, with why)."""
    from firedup.tables.grouping import Coverage

    timed = [i for i, g in enumerate(groups) if g.n > 0]
    if len(timed) <= MAX_GROUPS:
        return set(timed), seen
    keep = set(sorted(timed, key=lambda i: (-groups[i].n, i))[:MAX_GROUPS])
    dropped = [groups[i] for i in timed if i not in keep]
    runs = sum(g.n for g in dropped)
    left = {**seen.left_out, f"in {len(dropped)} smaller groups": runs}
    return keep, Coverage(seen.shown - runs, seen.total, left, seen.unreadable)


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
    from firedup.tables.grouping import coverage

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
    from firedup.tables.grouping import coverage, quantile

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
        # from launch, as the budget line beside them counts (`launch.seconds_to_ready`, as `runs` shows it)
        offsets = spread_offsets(group.launch_seconds)
        for rid, sec, off in zip(group.run_ids, group.launch_seconds, offsets, strict=True):
            points.append({"group_index": index, "group": group.label, "run_id": rid, "label": labels[rid],
                           "seconds": sec, "offset": off})
        rows.append({"group_index": index, "group": group.label, "n": group.n, "not_timed": len(group.not_timed),
                     "budget_seconds": b.budget_seconds, "risk": b.risk, "method": b.method,
                     "method_label": b.method_label, "risk_label": b.risk_label,
                     "median": quantile(group.launch_seconds, 0.5), "slowest": b.slowest})
        index += 1
    pt_schema = {"group_index": pl.Int64(), "group": pl.Utf8(), "run_id": pl.Utf8(), "label": pl.Utf8(),
                 "seconds": pl.Float64(), "offset": pl.Float64()}
    b_schema = {"group_index": pl.Int64(), "group": pl.Utf8(), "n": pl.Int64(), "not_timed": pl.Int64(),
                "budget_seconds": pl.Int64(), "risk": pl.Float64(), "method": pl.Utf8(), "method_label": pl.Utf8(),
                "risk_label": pl.Utf8(), "median": pl.Float64(), "slowest": pl.Float64()}
    return DistributionData(pl.DataFrame(points, schema=pt_schema) if points else pl.DataFrame(schema=pt_schema),
                            pl.DataFrame(rows, schema=b_schema) if rows else pl.DataFrame(schema=b_schema), risk,
                            drawn)


@styled
def compare(runs: Runs, by: Sequence[str] | None = None, comparison: Comparison | None = None) -> Figure:
    """Horizontal stacked bars of the median phases per group, the median total at each bar's end.

    `comparison`: the computed `tables.compare.compare(runs, by)`, drawn as it is (computed here
    from `by` when not given). Runs it leaves out are counted under the chart, with why."""
    from firedup.tables.compare import compare as compare_runs

    cmp = comparison if comparison is not None else compare_runs(runs, by)
    data = compare_data(cmp)
    n = data.groups.height
    fig = new_figure(2.3 + 0.75 * max(n, 1))
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
    time_axis(ax.xaxis, 0, hi)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(with_coverage("median seconds per phase, stacked (minutes:seconds); the bold figure is the median "
                                "time to ready", data.coverage))
    fig.suptitle("Where the startup time goes: median phases per group", x=0.01, ha="left", fontsize=12,
                 fontweight="bold")
    ax.set_title(wrap_label(data.headline[:1].upper() + data.headline[1:], 125, 3), loc="left", fontsize=9.5,
                 fontweight="normal")
    phase_legend(fig, ax, data.segments["phase"].unique().to_list())
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
        lines = [*lines[:max_lines - 1], ellipsize(", ".join(lines[max_lines - 1:]), width)]
    return "\n".join(ellipsize(line, width + 8) for line in lines)


def _box(ax: Axes, secs: list[float], position: float) -> None:
    ax.boxplot(secs, orientation="horizontal", positions=[position], widths=0.55, whis=(0, 100),
               patch_artist=True, manage_ticks=False, boxprops={"facecolor": "#EEEEEE", "edgecolor": "#555555"},
               medianprops={"color": "black", "linewidth": 2}, whiskerprops={"color": "#555555"},
               capprops={"color": "#555555"})


@styled
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
        fig = new_figure(2.5)
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, with_coverage("no run reached ready: no time to ready to show", data.coverage, 80),
                ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    if n > PANELS_UP_TO:
        return _distribution_shared(data)
    from matplotlib.lines import Line2D

    fig = new_figure(1.5 + 1.55 * n)
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
        handles = [Line2D([], [], marker="o", linestyle="none", color=POINT_COLOUR, label="a run (time to ready from launch)")]
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
        time_axis(ax.xaxis, lo - pad, hi + pad, 10)
        ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
        ax.set_axisbelow(True)
        extra = f", {g['not_timed']} not timed (crashed/incomplete)" if g["not_timed"] else ""
        ax.set_title(ellipsize(f"{g['group']}: {g['n']} run{'s' if g['n'] != 1 else ''} ready{extra}", 110),
                     loc="left", fontsize=10, fontweight="bold")
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8.5)
    # the label is centred under a panel that the legends beside it narrow: wrapped to fit there
    axes[-1].set_xlabel(with_coverage("time to ready from launch (minutes:seconds);\neach panel has its own scale",
                                      data.coverage, 60))
    fig.suptitle(f"Time to ready per group, and the budget asked for a {_pct(risk)} risk (legends: the risk it carries)",
                 x=0.01, ha="left", fontsize=12, fontweight="bold")
    return fig


POINT_COLOUR = "#332288"


def _distribution_shared(data: DistributionData) -> Figure:
    """Many groups: one row each on a shared time axis, the budget as a dashed tick on its row."""
    from matplotlib.lines import Line2D

    n = data.budgets.height
    fig = new_figure(2.0 + 0.62 * n)
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
    time_axis(ax.xaxis, 0, hi * 1.05)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(with_coverage("time to ready from launch (minutes:seconds), one scale for every group",
                                data.coverage))
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

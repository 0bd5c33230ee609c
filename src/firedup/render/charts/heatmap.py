"""The ranks chart: a heatmap of phase duration by rank, stragglers boxed."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from firedup.core.units import fmt_duration
from firedup.errors import DataError, UsageError
from firedup.render.charts.style import (
    new_figure,
    phase_rank,
    run_labels,
    styled,
    text_colour_on,
    time_axis,
    wrap_label,
)
from firedup.tables.frames import Runs
from firedup.timeline.ranks import (
    NO_STRAGGLERS,
    STRAGGLER_SECONDS,
    STRAGGLER_SHARE,
    late_arrival,
    rank_sort_key,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
    # the title's sentence (slowest rank over its phase's median, or the last in at a barrier),
    # computed over every rank before the rows are cut to RANKS_MAX_ROWS: true of all the data
    summary: str = ""

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
    by_run = phases.partition_by("run_id", as_dict=True) if phases.height else {}  # one pass, not one per run
    for rid in runs.runs["run_id"].to_list():
        mine = by_run.get((rid,))
        if mine is None:
            continue
        cells = _rank_cells(mine)
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
    summary = _summary(cells)  # over every rank, before the rows drawn are chosen
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
                     run_id, label, total, summary)


@styled
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
    fig = new_figure(2.2 + 0.36 * n_rows)
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
    time_axis(bar.ax.yaxis, 0, vmax, 6)
    bar.set_label("time above the phase's fastest rank (m:ss)")
    shown = f" {data.shown_text}." if data.shown_text else ""
    ax.set_title(wrap_label(f"Phase duration by rank: {data.label}. {data.summary}{shown}", 110, 3 if shown else 2),
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


def _summary(cells: pl.DataFrame) -> str:
    """The rank furthest over the median rank of its phase, in words, over all the `cells` given
    (every rank of the run: a median over only the rows drawn made 2,000 ranks that span 4-11 s
    "agree within a second")."""
    cells = cells.with_columns((pl.col("seconds") - pl.col("seconds").median().over("column")).alias("over"))
    if cells.is_empty() or cells["rank"].n_unique() < 2:
        return ""
    # at a barrier the longest wait is the first to arrive: such a column names the last to arrive
    barrier = pl.col("phase").is_in(list(NO_STRAGGLERS))
    # ties (whole-second stamps, two-decimal elapsed) go to the first rank by name: the same title every time
    durations = cells.filter(~barrier).sort(["over", "rank", "column"], descending=[True, False, False])
    late = cells.filter(barrier & pl.col("late").is_not_null()).sort(["late", "rank", "column"],
                                                                      descending=[True, False, False])
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

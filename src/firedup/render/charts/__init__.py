"""Charts of startups: the data behind each picture, then the picture (a matplotlib `Figure`).

Each chart has two halves so the numbers can be tested without looking at pixels:

* a `*_data` function over the polars tables (`firedup.tables.frames.Runs`) that returns tidy
  frames: what is drawn where, in seconds;
* a drawing function of the same name without `_data` that turns them into a `Figure`.

One module per job: `gantt` (timeline), `groups` (compare, distribution), `heatmap` (ranks),
`style` (colours, axes, labels, the matplotlib style, saving); this package is their face.

The kinds (`KINDS`): `timeline` (a Gantt chart of runs, optionally one row per rank),
`compare` (stacked median phases per group), `distribution` (time to ready per group with
its budget) and `ranks` (a heatmap of phase duration by rank: stragglers).

matplotlib is imported inside the drawing functions only, so `import firedup` stays cheap;
figures are built with `matplotlib.figure.Figure` (no pyplot, no global backend state) and
saved through Agg. Every phase has one colour in every chart (`PHASE_COLOURS`, Paul Tol's
colour-blind-safe "muted" scheme); time axes read minutes:seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from firedup.errors import UsageError
from firedup.render.charts.gantt import TimelineData, timeline, timeline_data
from firedup.render.charts.groups import (
    CompareData,
    DistributionData,
    compare,
    compare_data,
    distribution,
    distribution_data,
)
from firedup.render.charts.heatmap import RanksData, ranks, ranks_data
from firedup.render.charts.style import PHASE_COLOURS, phase_colour, save, tick_step, to_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from firedup.tables.frames import Runs

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


__all__ = ["KINDS", "PHASE_COLOURS", "CompareData", "DistributionData", "RanksData", "TimelineData",
           "compare", "compare_data", "distribution", "distribution_data",
           "phase_colour", "plot", "ranks", "ranks_data", "save", "tick_step", "timeline", "timeline_data",
           "to_bytes"]

"""Launches over many runs: estimates from the history's measured launches, each run's time from
launch, and the launch margin a budget adds.

A run whose log states no launch carries its engine's documented gap (timeline.launch). Where
the runs at hand (logs and the history store together) hold launches that were measured, stated
by a line or given, those are better evidence of this machine's imports: the gap of the other
runs of the same engine (and the same configuration, where it has some) is re-estimated from
them, and the basis says so. Every view counts a run from the same launch: its time to ready plus
the gap (known, or the estimate); a budget adds, as a second named fact, a launch margin: how
much earlier than estimated a launch may have come (the top of the range less the estimate: see
docs/launch.md). Polars only where frames are handled, so that `wait` counts the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from firedup.timeline.findings import cache_start
from firedup.timeline.launch import KNOWN
from firedup.timeline.launch import launch_margin as margin_of

# The flags that make "the same launch" for measured launches: a key of its own, deliberately
# coarser than `core.config.config_key` (the imports before the first line differ with the engine,
# the model and the parallelism; they do not with graphs, a port or a backend).
LAUNCH_FLAGS = ("model_path", "tp_size", "pp_size", "dp_size")

if TYPE_CHECKING:
    import polars as pl

    from firedup.tables.risk import Budget


@dataclass(frozen=True)
class MeasuredGaps:
    """Known gaps before the first line in the runs at hand: (low, typical, high) and how many."""

    low: float
    typical: float
    high: float
    n: int
    scope: str  # "engine" | "config"

    def basis(self, engine: str) -> str:
        where = "this configuration's" if self.scope == "config" else f"{engine}'s"
        runs = "launch" if self.n == 1 else "launches"
        return (f"no line states the launch; {self.n} measured {runs} of {where} runs at hand (measured by wait "
                f"--pid, stated by a line or given) put the first line {self.low:.0f}-{self.high:.0f} s after the "
                f"launch (typically {self.typical:.0f} s)")


def _gaps(rows: list[dict[str, Any]]) -> MeasuredGaps | None:
    values = sorted(float(r["launch_gap"]) for r in rows)
    if not values:
        return None
    return MeasuredGaps(values[0], float(median(values)), values[-1], len(values), "engine")


def launch_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """The runs whose measured launches re-estimate each other first (`LAUNCH_FLAGS`; the engine
    and the first line's kind are added where it is used)."""
    return tuple(row.get(flag) for flag in LAUNCH_FLAGS)


def settle_launches(runs: pl.DataFrame) -> pl.DataFrame:
    """Every row's launch as budgets read it: rows of a store written before runs carried one get
    their engine's estimate; estimated ones are re-estimated from the measured launches at hand."""
    return with_measured_estimates(_with_format_estimates(runs))


def _with_format_estimates(runs: pl.DataFrame) -> pl.DataFrame:
    """Rows with no launch at all (a store from before launches): the engine's documented gap."""
    import polars as pl

    if runs.is_empty() or runs["launch_source"].null_count() == 0:
        return runs
    from firedup.formats import all_formats
    from firedup.timeline.launch import launch_gap_text

    formats = all_formats()
    updated = []
    for row in runs.to_dicts():
        if row["launch_source"] is None:
            gap = formats[row["engine"]].timeouts.launch_gap if row["engine"] in formats else None
            if gap is None or row["first_ts"] is None or row["begins_mid_startup"]:
                row = {**row, "launch_source": "unknown",
                       "launch_basis": "no launch recorded with this run, and none can be estimated"}
            else:
                row = _re_estimated(row, MeasuredGaps(gap.low, gap.typical, gap.high, 0, "engine"))
                row["launch_source"] = "estimated"
                row["launch_basis"] = f"no line states the launch; {gap.basis} {launch_gap_text(gap)} (docs/launch.md)"
        updated.append(row)
    return pl.DataFrame(updated, schema=runs.schema, orient="row")


def with_measured_estimates(runs: pl.DataFrame) -> pl.DataFrame:
    """`runs` with each estimated launch re-estimated from the known launches of the same engine
    (of the same configuration where it has some), where there are any; the rest unchanged."""
    import polars as pl

    if runs.is_empty() or "launch_source" not in runs.columns:
        return runs
    if runs.filter(pl.col("launch_source").is_in(list(KNOWN)) & pl.col("launch_gap").is_not_null()).is_empty():
        return runs
    return pl.DataFrame(re_estimated_rows(runs.to_dicts()), schema=runs.schema, orient="row")


def re_estimated_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`with_measured_estimates` over plain rows (`wait`'s history has no frames)."""
    runs = rows
    rows = [r for r in rows if r.get("launch_source") in KNOWN and r.get("launch_gap") is not None]
    if not rows:
        return runs
    kind = "launch_first_kind"
    # a gap counts only for runs whose first line is of the same kind: one measured before a
    # collector-stamped line printed during the imports (`docker logs -t`: a second) says
    # nothing of the gap before a server's own first stamp (twenty)
    by_engine: dict[tuple[str, str], list[dict[str, Any]]] = {}
    by_config: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        first = row.get(kind) or "own"
        by_engine.setdefault((row["engine"], first), []).append(row)
        by_config.setdefault((row["engine"], first, *launch_key(row)), []).append(row)
    updated = []
    for row in runs:
        if row["launch_source"] == "estimated" and row["first_ts"] is not None:
            first = row.get(kind) or "own"
            same = by_config.get((row["engine"], first, *launch_key(row)))
            gaps = _gaps(same) if same else _gaps(by_engine.get((row["engine"], first), []))
            if gaps is not None and same:
                gaps = MeasuredGaps(gaps.low, gaps.typical, gaps.high, gaps.n, "config")
            if gaps is not None:
                row = _re_estimated(row, gaps)
        updated.append(row)
    return updated


def _re_estimated(row: dict[str, Any], gaps: MeasuredGaps) -> dict[str, Any]:
    from datetime import timedelta

    row = dict(row)
    row["launch_gap"], row["launch_low"], row["launch_high"] = gaps.typical, gaps.low, gaps.high
    row["launch_basis"] = gaps.basis(row["engine"])
    row["launch_ts"] = row["first_ts"] - timedelta(seconds=gaps.typical)
    row["launch_to_ready"] = None if row["ready_seconds"] is None else row["ready_seconds"] + gaps.typical
    row["launch_to_end"] = None if row["seconds_to_end"] is None else row["seconds_to_end"] + gaps.typical
    return row


def allowance(row: dict[str, Any]) -> float | None:
    """Seconds before this run's first line that every view counts: its gap, known or estimated
    (`launch.seconds_before_first_line`); None where nothing is known (an engine with no typical
    gap, a log without times)."""
    if row.get("launch_source") in (*KNOWN, "estimated"):
        return row.get("launch_gap")
    return None


def launch_margin(row: dict[str, Any]) -> float:
    """Seconds a budget adds for this run's launch coming earlier than estimated: the row's cells
    through `timeline.launch.launch_margin`, the formula `Launch.margin` uses. A separate fact
    from the run's time."""
    gap, high = row.get("launch_gap"), row.get("launch_high")
    return margin_of(row.get("launch_source"), None if gap is None else float(gap),
                     None if high is None else float(high))


def from_launch(row: dict[str, Any]) -> tuple[float, str] | None:
    """A ready run's time from launch, as `parse --json`'s `launch.seconds_to_ready` says it, and
    how: `measured`, `log`, `given`, `estimated` (first line to ready plus the estimated gap) or
    `first line` (no launch known: the log's own time, an undercount the derivation names). None
    when it has no time to ready."""
    ready = row.get("ready_seconds")
    if ready is None:
        return None
    extra = allowance(row)
    if extra is None:
        return float(ready), "first line"
    return float(ready) + float(extra), str(row["launch_source"])


def budget_from_launch(rows: list[dict[str, Any]], risk: float) -> Budget:
    """The budget `firedup budget` gives ready runs' rows of one config (`run_row` for `Run`s): their
    times from launch, re-estimated from the measured launches among them, plus the largest launch
    margin; where they hold cold and warm starts (`cache_start`), the cold starts' (`tables.budget`)."""
    from firedup.tables.risk import budget_for

    rows = re_estimated_rows(rows)
    margin = max((launch_margin(r) for r in rows), default=0.0)
    cold = [r for r in rows if r.get("cache_start") == "cold"]
    if cold and len(cold) < len(rows):  # never pooled: the cold starts' budget, as `budget` gives it
        rows = cold
    counted = [c[0] for c in (from_launch(r) for r in rows) if c is not None]
    return budget_for(counted, risk, launch_margin=margin)


def run_row(run: Any) -> dict[str, Any]:
    """A `timeline.run.Run` as the launch cells of a runs row (what `frames` writes), for `wait`."""
    launch = run.launch
    ready = run.ready_ts.minus(run.first_ts) if run.ready_ts is not None and run.first_ts is not None else None
    row = {"engine": run.engine, "ready_seconds": ready, "first_ts": run.first_ts.dt if run.first_ts else None,
           "seconds_to_end": None, "launch_source": launch.source if launch else "unknown",
           "launch_gap": launch.gap if launch else None, "launch_low": launch.low if launch else None,
           "launch_high": launch.high if launch else None, "launch_basis": launch.basis if launch else None,
           "launch_ts": launch.ts.dt if launch and launch.ts else None,
           "launch_first_kind": "collector" if run.first_from_collector else "own",
           "cache_start": cache_start(run.caches)}
    row.update({flag: run.config.get(flag) for flag in LAUNCH_FLAGS})
    return row


__all__ = ["LAUNCH_FLAGS", "MeasuredGaps", "allowance", "budget_from_launch", "from_launch", "launch_key", "launch_margin", "re_estimated_rows",
           "run_row", "settle_launches", "with_measured_estimates"]

"""Launches over many runs: each run's time from launch, and the launch margin a budget adds.

A run whose log states no launch carries its engine's documented gap (timeline.launch), and every
view counts it from that one launch: its time to ready plus the gap (known, or the estimate), the
number `parse` prints. A budget adds, as a second named fact, a launch margin: how much earlier
than counted a launch may have come. Where the runs at hand (logs and the history store together)
hold launches that were measured, stated by a line or given, those are better evidence of this
machine's imports: an estimated run's margin is how far their longest gap (of the same engine, and
the same configuration where it has some) reaches beyond its own, else the top of the documented
range less the estimate (docs/launch.md). Polars only where frames are handled, so that `wait`
counts the same way.
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
    """Every row's launch as every view reads it: rows of a store written before runs carried one
    get their engine's estimate; the rest stay as `parse` gave them (measured launches of other
    runs are the budget's margin, `budget_margin`, never a rewrite of a run's own time)."""
    return _with_format_estimates(runs)


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


@dataclass(frozen=True)
class MeasuredAtHand:
    """The launches measured, stated by a line or given among the runs at hand, by engine and by
    launch configuration (`launch_key`), each of one kind of first line."""

    by_engine: dict[tuple[str, str], MeasuredGaps]
    by_config: dict[tuple[Any, ...], MeasuredGaps]

    def of(self, row: dict[str, Any]) -> MeasuredGaps | None:
        """The measured gaps that speak for this run: its configuration's, else its engine's; only
        those before the same kind of first line (one measured before a collector-stamped line
        printed during the imports, `docker logs -t`: a second, says nothing of the gap before a
        server's own first stamp: twenty)."""
        first = row.get("launch_first_kind") or "own"
        same = self.by_config.get((row["engine"], first, *launch_key(row)))
        return same if same is not None else self.by_engine.get((row["engine"], first))


def measured_at_hand(rows: list[dict[str, Any]]) -> MeasuredAtHand:
    """The known launches among `rows` (a runs table's rows, or `run_row`s for `wait`)."""
    by_engine: dict[tuple[str, str], list[dict[str, Any]]] = {}
    by_config: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("launch_source") in KNOWN and row.get("launch_gap") is not None:
            first = row.get("launch_first_kind") or "own"
            by_engine.setdefault((row["engine"], first), []).append(row)
            by_config.setdefault((row["engine"], first, *launch_key(row)), []).append(row)
    engines = {k: g for k, v in by_engine.items() if (g := _gaps(v)) is not None}
    configs = {k: MeasuredGaps(g.low, g.typical, g.high, g.n, "config")
               for k, v in by_config.items() if (g := _gaps(v)) is not None}
    return MeasuredAtHand(engines, configs)


NO_MEASURED = MeasuredAtHand({}, {})


def budget_margin(row: dict[str, Any], at_hand: MeasuredAtHand = NO_MEASURED) -> float:
    """Seconds a budget adds for this run's launch coming earlier than counted (`Budget.launch_margin`).
    Its own (`launch_margin`: the estimate's range) unless measured launches of its engine (its
    configuration) are at hand and its launch is estimated: then how far their longest gap reaches
    beyond the gap the run is counted with, never below 0. The run's time stays its own."""
    if row.get("launch_source") != "estimated" or row.get("launch_gap") is None or row.get("first_ts") is None:
        return launch_margin(row)
    measured = at_hand.of(row)
    if measured is None:
        return launch_margin(row)
    return max(0.0, measured.high - float(row["launch_gap"]))


def margin_basis(rows: list[dict[str, Any]], at_hand: MeasuredAtHand) -> str | None:
    """Where a budget's margin comes from measured launches: their line (the first such run's), else None."""
    for row in rows:
        if row.get("launch_source") == "estimated" and row.get("first_ts") is not None:
            measured = at_hand.of(row)
            if measured is not None:
                return measured.basis(row["engine"]).removeprefix("no line states the launch; ")
    return None


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


def budget_from_launch(rows: list[dict[str, Any]], risk: float, at_hand: MeasuredAtHand = NO_MEASURED) -> Budget:
    """The budget `firedup budget` gives ready runs' rows of one config (`run_row` for `Run`s): their
    times from launch, plus the largest launch margin (`budget_margin`, from the measured launches
    `at_hand` where there are some); where they hold cold and warm starts (`cache_start`), the cold starts' (`tables.budget`)."""
    from firedup.tables.risk import budget_for

    margin = max((budget_margin(r, at_hand) for r in rows), default=0.0)
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


__all__ = ["LAUNCH_FLAGS", "NO_MEASURED", "MeasuredAtHand", "MeasuredGaps", "allowance", "budget_from_launch", "budget_margin",
           "from_launch", "launch_key", "launch_margin", "margin_basis", "measured_at_hand", "run_row", "settle_launches"]

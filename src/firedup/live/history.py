"""What earlier startups of the same config did: the ETA, the auto timeout and the stall
threshold of `firedup wait` come from here.

Its sources are log files (`--history`) and the history store (`--store`, rebuilt into
`Run`s from its tables); both load in a thread so that a wait starts at once.
"""

from __future__ import annotations

import collections
import statistics
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firedup.core.config import SAME_CONFIG_FLAGS, config_key
from firedup.core.units import fmt_duration
from firedup.errors import FiredupError, StoreError
from firedup.formats.vocab import CRASH
from firedup.read.clock import Stamp
from firedup.tables.launches import budget_from_launch, measured_at_hand, run_row
from firedup.timeline.phases import spanned
from firedup.timeline.run import Run
from firedup.timeline.stages import next_stage, stage_changes

MIN_STALL_S = 30.0  # never warn on a shorter silence, whatever history says
AUTO_RISK = 0.01  # --timeout auto: the budget `firedup budget` gives for this risk

CONFIG_FLAGS = SAME_CONFIG_FLAGS  # runs agreeing on all of them are one config


def describe_config(config: Mapping[str, Any]) -> str:
    parts = [f"{flag}={config.get(flag)}" for flag in CONFIG_FLAGS if config.get(flag) is not None]
    return ", ".join(parts) or "no flags known"


@dataclass
class RunProfile:
    """One finished history run seen the way `wait` sees a live one: stage by stage."""

    ready_s: float  # first line to the ready line
    entered: dict[str, float]  # stage -> seconds after the first line it was first entered
    stage_s: dict[str, float]  # stage -> its phase's seconds, else first entry to the next stage
    gaps: dict[str, float]  # stage -> longest stretch between two milestones within it

    @classmethod
    def of(cls, run: Run) -> RunProfile | None:
        """None for runs that tell nothing about a full startup's length: not ready through
        the HTTP server, or a log that begins after the startup did."""
        if run.outcome != "ready" or run.ready_kind != "server" or run.first_ts is None or run.ready_ts is None \
                or run.begins_mid_startup:
            return None
        first = run.first_ts
        entered: dict[str, float] = {}
        for stage, milestone in stage_changes(run):
            ts = first if milestone is None else milestone.ts
            if stage is not None and ts is not None and stage not in entered:
                entered[stage] = max(0.0, ts.minus(first))
        ready_s = max(0.0, run.ready_ts.minus(first))
        order = sorted(entered.items(), key=lambda kv: kv[1])
        # A phase's own duration where the run has one (as the phase table shows it), else
        # the span from entering the stage to entering the next.
        stage_s: dict[str, float] = run.phase_seconds()
        stage_s.pop("unattributed", None)
        for i, (stage, at) in enumerate(order):
            # A timer around steps entered before it (an umbrella reported when it ends, after its graph
            # capture) is live only for its tail: what is usual is the tail, not the timer.
            if stage == "serving" or (stage in stage_s and not spanned(stage, entered)):
                continue
            end = order[i + 1][1] if i + 1 < len(order) else ready_s
            stage_s[stage] = max(0.0, end - at)
        gaps: dict[str, float] = {}
        current: str | None = "launch"
        previous = first
        for m in run.milestones:
            if m.ts is None or m.name == CRASH:
                continue
            gap = m.ts.minus(previous)
            if current is not None and gap > gaps.get(current, 0.0):
                gaps[current] = gap
            previous = max(previous, m.ts)
            current = next_stage(run, current, m)
            if current == "serving":
                break
        return cls(ready_s, entered, stage_s, gaps)


@dataclass(frozen=True)
class WaitBudget:
    """What `wait` allows a start-up of this config: `firedup budget`'s figure over the history
    (`tables.risk.Budget`), with the count and slowest run it says it from."""

    seconds: float
    n: int
    slowest: float
    method: str
    slowest_first_line: float | None = None  # the same run by the log's clock (first line -> ready)


class History:
    """ETA and budget inputs from finished runs of one config (ready server runs only).

    The source does not matter: today `--history PATH...` (logs parsed by
    `firedup.timeline.pipeline`), later the history store. Everything here is a median or a maximum
    over `RunProfile`s, so one odd run cannot drag an ETA far.
    """

    def __init__(self, runs: Iterable[Run], at_hand: Iterable[Run] = ()) -> None:
        """`runs`: this config's; `at_hand`: every run of the history, of any config or outcome,
        whose measured launches set the budget's launch margin as they do in `budget`."""
        profiled = [(r, RunProfile.of(r)) for r in runs]
        self.profiles = [p for _, p in profiled if p is not None]
        # for the budget, as `budget` counts: each run's own time from launch, and the launch margin
        # from every launch measured at hand
        own = [run_row(r) for r, p in profiled if p is not None]
        counted = {id(r) for r, p in profiled if p is not None}
        others = [run_row(r) for r in at_hand if id(r) not in counted]
        self.launch_rows = own
        self.measured = measured_at_hand(own + others)

    @property
    def n(self) -> int:
        return len(self.profiles)

    def budget(self) -> WaitBudget | None:
        """The budget `firedup budget` gives these runs (one rule for both commands)."""
        if not self.profiles:
            return None
        found = budget_from_launch(self.launch_rows, AUTO_RISK, self.measured)
        assert found.budget_seconds is not None and found.slowest is not None
        n = found.n  # the cold starts, where the history holds cold and warm ones (as `budget` counts)
        runs = f"{n} history run{'s' if n != 1 else ''} of this config"
        if n < self.n:
            runs = f"the {n} cold start{'s' if n != 1 else ''} of {self.n} history runs of this config"
        method = (f"the budget of `firedup budget` over {runs} "
                  f"(slowest {fmt_duration(found.slowest)} from launch): {found.method_label}, {found.risk_label}")
        return WaitBudget(float(found.budget_seconds), n, found.slowest, method, max(p.ready_s for p in self.profiles))

    def median_ready(self) -> float | None:
        return statistics.median(p.ready_s for p in self.profiles) if self.profiles else None

    def typical_stage(self, stage: str) -> float | None:
        values = [p.stage_s[stage] for p in self.profiles if stage in p.stage_s]
        return statistics.median(values) if values else None

    def remaining(self, stage: str, in_stage: float, elapsed: float) -> float | None:
        """Seconds until ready: the median time from entering `stage` to ready, minus the
        time already spent in it (history runs that never entered it: total minus elapsed)."""
        spans = [p.ready_s - p.entered[stage] for p in self.profiles if stage in p.entered]
        if spans:
            return statistics.median(spans) - in_stage
        median = self.median_ready()
        return None if median is None else median - elapsed

    def stall_threshold(self, stage: str) -> tuple[float, str] | None:
        gaps = [p.gaps[stage] for p in self.profiles if stage in p.gaps]
        if not gaps:
            return None
        longest = max(gaps)
        threshold = max(longest, MIN_STALL_S)
        why = (f"the longest silence in {stage} over {len(gaps)} history run{'s' if len(gaps) != 1 else ''} "
               f"of this config is {fmt_duration(longest)}")
        if threshold > longest:
            why += f"; firedup never warns under {fmt_duration(MIN_STALL_S)}"
        return threshold, why


def select_history(runs: Sequence[Run], config: Mapping[str, Any], engine: str | None) -> tuple[History, str]:
    """The runs of `runs` with the same config as the live one (`core.config.config_key`, the key
    `check` and the cold/warm split group by), and a sentence saying so."""
    key = config_key(engine, config)
    same = [r for r in runs if config_key(r.engine, r.config) == key]
    history = History(same, runs)
    if history.n:
        return history, f"{history.n} of {len(runs)} history runs have this config ({describe_config(config)})"
    ready = sum(1 for r in runs if r.outcome == "ready")
    return history, (f"none of the {len(runs)} history runs ({ready} ready) has this config "
                     f"({describe_config(config)})")


def load_history(paths: Sequence[str] = (), store: str | None = None) -> tuple[list[Run], list[str]]:
    """Runs of earlier logs and/or the history store, and notes on what could not be read.

    Unreadable inputs are reported, never fatal: a wait must not fail over its history.
    `store` is a directory, or "" for the default store (FIREDUP_STORE, else the user's
    data directory). Reading the store needs polars, so this runs off the wait's start path.
    """
    runs: list[Run] = []
    notes: list[str] = []
    if paths:
        from firedup.timeline.pipeline import parse_paths

        result = parse_paths(paths)
        runs.extend(result.runs)
        notes.extend(f"history: {error}" for error in result.errors)
    if store is not None:
        try:
            runs.extend(store_runs(store))
        except FiredupError as exc:
            notes.append(f"history: {exc}")
    return runs, notes


def store_runs(store: str) -> list[Run]:
    """The runs of the history store (`firedup ingest`), rebuilt from its tables."""
    from firedup.tables.load import load
    from firedup.tables.store import MARKER, open_store

    opened = open_store(store or None)
    if not opened.is_store():
        raise StoreError(f"{opened.root}: not a firedup history store (no {MARKER}; fill one with "
                           "`firedup ingest`)")
    return runs_from_tables(load(opened))


def runs_from_tables(tables: Any) -> list[Run]:
    """`firedup.tables.frames.Runs` frames -> the `Run` objects `History` reads (only what it needs:
    outcome, times, config, run-level phases and milestones, the launch)."""
    import json

    from firedup.timeline.findings import CacheVerdict
    from firedup.timeline.launch import SOURCES, Launch
    from firedup.timeline.run import Milestone, Phase

    def stamp(value: Any) -> Stamp | None:
        return None if value is None else Stamp(value, value.isoformat())

    phases: dict[str, list[Phase]] = collections.defaultdict(list)
    for row in tables.phases.iter_rows(named=True):
        phases[row["run_id"]].append(Phase(row["phase"], row["rank"], stamp(row["start"]), stamp(row["end"]),
                                           row["seconds"], row["source_kind"], row["scope"], row["detail"],
                                           row["line"], bool(row["open"])))
    milestones: dict[str, list[Milestone]] = collections.defaultdict(list)
    for row in tables.milestones.iter_rows(named=True):
        milestones[row["run_id"]].append(Milestone(row["name"], stamp(row["ts"]), row["rank"], row["line"],
                                                   json.loads(row["fields_json"] or "{}"), row["text"] or "",
                                                   row["model"]))
    runs = []
    for row in tables.runs.iter_rows(named=True):
        config = json.loads(row["config_json"] or "{}")
        for flag in CONFIG_FLAGS:
            config.setdefault(flag, row.get(flag))
        run = Run(source=row["source"], run_index=row["run_index"], engine=row["engine"], outcome=row["outcome"],
                  first_ts=stamp(row["first_ts"]), ready_ts=stamp(row["ready_ts"]), last_ts=stamp(row["last_ts"]),
                  config=config, ready_kind=row["ready_kind"],
                  begins_mid_startup=bool(row.get("begins_mid_startup")))
        run.milestones = sorted(milestones.get(row["run_id"], []), key=lambda m: m.line)
        run.phases = phases.get(row["run_id"], [])
        caches = json.loads(row.get("caches_json") or "{}")  # cold or warm: a budget never pools them
        run.caches = {kind: CacheVerdict.of(kind, v) for kind, v in caches.items() if isinstance(v, dict)}
        if row.get("launch_source") in SOURCES:  # a launch `wait --pid` measured stays measured
            run.launch = Launch(row["launch_source"], row.get("launch_basis") or "", stamp(row.get("launch_ts")),
                                row.get("launch_gap"), row.get("launch_low"), row.get("launch_high"))
        runs.append(run)
    return runs


class HistoryLoader:
    """Loads the history in a thread so that the wait starts at once (polars, many logs)."""

    def __init__(self, load: Callable[[], tuple[list[Run], list[str]]]) -> None:
        self._load = load
        self.runs: list[Run] | None = None
        self.notes: list[str] = []
        self._thread = threading.Thread(target=self._run, name="firedup-history", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            runs, notes = self._load()
        except Exception as exc:  # the history is a help, never a reason to fail the wait
            runs, notes = [], [f"history: could not be read ({type(exc).__name__}: {exc})"]
        self.notes = notes
        self.runs = runs

    @property
    def done(self) -> bool:
        return self.runs is not None

"""Events -> runs: the steps that turn one source's events into its runs, in their order.

A source can hold several engines and several startups (restarts): `split` cuts them. Each
run then gets its config (`config`), milestones (`milestones`), outcome and crash (`outcome`),
phases per rank (`rank_phases`) and for the run as its critical path, where whatever time no
phase explains becomes `unattributed` (`critical_path`), its silences (`silence`) and its
launch (`launch`): computed once here, read by every view.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from firedup.formats import Format
from firedup.formats.vocab import LOAD_WEIGHT_TOOK, SERVER_ARGS
from firedup.read.clock import Stamp
from firedup.read.engine import (
    CLOCK_EVENTS,
    CLOCK_FIRST,
    CLOCK_LAST,
    CLOCK_OUTER_FIRST,
    Event,
    Gap,
    LineStats,
    Unmatched,
)
from firedup.read.events import ACCESS, access_time_counts, own_time_headers
from firedup.timeline.config import infer_config, note_dropped, read_config
from firedup.timeline.critical_path import run_level_phases
from firedup.timeline.launch import Launch, estimate, stated_launch
from firedup.timeline.milestones import collect_milestones
from firedup.timeline.outcome import decide_outcome
from firedup.timeline.rank_phases import rank_phases, timestamp_phases
from firedup.timeline.ranks import rank_sort_key
from firedup.timeline.run import Milestone, Phase, Run
from firedup.timeline.silence import explain
from firedup.timeline.split import split_source
from firedup.timeline.stages import stage_rules


def build_timeline(events: Sequence[Event], source: str, fmt: Format, date_source: str | None = None,
                   config_defaults: Mapping[str, Any] | None = None, stats: LineStats | None = None) -> list[Run]:
    """The runs of one source read with `fmt`: everything engine-specific comes from it.
    `config_defaults`: the flags a launch command leaves out (None: the format's). `stats`:
    the reader's line accounting, whose gaps and unmatched lines each run takes from its own
    lines (`split_source`). A source with several engines (`split_engines`) has the runs of
    each, in the order of their first lines."""
    engines, pieces = split_source(events, fmt, stats)
    several = len(engines.events) > 1
    runs = []
    last_of: dict[int, Stamp | None] = {}  # the previous run's last line, per engine
    for i, piece in enumerate(pieces):
        k = piece.engine
        run = build_run(piece.events, source, i, fmt, date_source, config_defaults, piece.gaps, piece.unmatched)
        run.launch = _launch_of(run, piece.events, fmt, last_of.get(k), k in last_of)
        last_of[k] = run.last_ts
        if several:
            run.warnings.append(engines.note(k))
        runs.append(run)
    return runs


def build_run(events: Sequence[Event], source: str, run_index: int, fmt: Format,
              date_source: str | None = None, config_defaults: Mapping[str, Any] | None = None,
              gaps: Sequence[Gap] = (), unmatched: Sequence[Unmatched] = ()) -> Run:
    """One run of `fmt`'s engine; `config_defaults` (else the format's) fill flags a launch
    command leaves out. `gaps` and `unmatched`: what the reader recorded of this run's lines
    (`LineStats`), for its silences and unknown lines."""
    run = Run(source=source, run_index=run_index, engine=fmt.name, date_source=date_source)
    _bounds(run, events, fmt)
    read_config(run, events, fmt.parsing.config_defaults if config_defaults is None else config_defaults, fmt)
    note_dropped(run, events)
    collect_milestones(run, events, fmt)
    decide_outcome(run, events, fmt)
    _build_phases(run, events, fmt)
    _note_late_start(run)
    _note_excerpt(run, events, fmt)
    infer_config(run, events, fmt, unmatched)
    run.ranks = sorted({m.rank for m in run.milestones if m.rank}, key=rank_sort_key)
    keyed = fmt.vocab.cache_keys
    run.cache_keys = {keyed[e.name]: str(e.fields["cache_key"]) for e in events
                      if e.name in keyed and e.fields.get("cache_key")}
    explain(run, events, gaps, unmatched, fmt)
    return run


def _bounds(run: Run, events: Sequence[Event], fmt: Format) -> None:
    """The run's first and last lines and times: the reader's clock marks first, then every
    stamped line (an access line only where its time is the server's own), and a collector's
    stamp before the server's first one."""
    lines = [e.line for e in events if e.name != CLOCK_OUTER_FIRST and e.name not in fmt.vocab.launch]
    lines = lines or [e.line for e in events if e.name != CLOCK_OUTER_FIRST]
    run.first_line, run.last_line = (min(lines), max(lines)) if lines else (None, None)
    firsts = [e.ts for e in events if e.name == CLOCK_FIRST and e.ts]
    lasts = [e.ts for e in events if e.name == CLOCK_LAST and e.ts]
    own_time = own_time_headers(fmt)
    launch = fmt.vocab.launch  # a launcher's line: the run's launch (timeline.launch), not its first line
    stamped = [e.ts for e in events if e.ts is not None and e.name not in CLOCK_EVENTS and e.name not in launch
               and (e.name != ACCESS or access_time_counts(e, own_time))]
    run.first_ts = firsts[0] if firsts else (min(stamped) if stamped else None)
    early = _collector_start(events, firsts[0]) if firsts else None
    if early is not None and early.ts is not None:
        run.first_ts = early.ts
        run.first_from_collector = True
        run.first_line = early.line if run.first_line is None else min(run.first_line, early.line)
    candidates = lasts + stamped
    run.last_ts = max(candidates) if candidates else None


def _collector_start(events: Sequence[Event], first_own: Stamp) -> Event | None:
    """Where the run began when its first lines carry only a collector's stamp (glog lines,
    `print` output, `kubectl logs --timestamps`): the first of them, on the server's clock
    (engine.CLOCK_OUTER_FIRST), if that is before the server's first stamp of its own."""
    early = next((e for e in events if e.name == CLOCK_OUTER_FIRST), None)
    return early if early is not None and early.ts is not None and early.ts < first_own else None


def _note_late_start(run: Run) -> None:
    """Say so when the log begins after the startup did (an excerpt, a tail, a rotated log).

    A phase whose reported duration reaches back before the first line proves it; the time
    to ready measured from the first line is then only a lower bound.
    """
    if run.first_ts is None:
        return
    starts = [(p.start, p.name) for p in run.run_phases() if p.start is not None and p.name != "total"]
    if not starts:
        return
    earliest, name = min(starts)
    lead = run.first_ts.minus(earliest)
    if lead >= 1.0:
        run.begins_mid_startup = True
        run.excerpt_lead = lead
        run.warnings.append(f"the log begins mid-startup: {name} had already run {lead:.0f} s before its first "
                            "line, so the time to ready is a lower bound")


def _note_excerpt(run: Run, events: Sequence[Event], fmt: Format) -> None:
    """An excerpt that no reported duration reaches back from still says what it is: a log
    whose first lines show no process start (no args line, no banner, no first runner line)
    begins mid-startup, and the time before its first line is unknown."""
    if run.begins_mid_startup or not run.milestones:
        return
    if any(e.fields.get("starts_run") for e in events if e.name not in CLOCK_EVENTS):
        return
    first = run.milestones[0]
    if first.key == SERVER_ARGS or first.key in fmt.vocab.opens_runner or first.key in fmt.meaning.runner_opens:
        return
    run.begins_mid_startup = True
    where = f" (its first milestone is {first.key}, at line {first.line})"
    run.warnings.append(f"the log is an excerpt: it begins mid-startup{where}, so only the durations its lines "
                        "report are known and the time to its end is a lower bound")


def _build_phases(run: Run, events: Sequence[Event], fmt: Format) -> None:
    """Each rank's phases, then the run's (its critical path over them)."""
    ms = run.milestones
    phases: list[Phase] = []
    by_rank: dict[str | None, list[Milestone]] = defaultdict(list)
    for m in ms:
        by_rank[m.rank].append(m)

    took = [e for e in events if e.name == LOAD_WEIGHT_TOOK]
    # A phase still open when the run crashed lasted until the crash, not zero seconds.
    cutoff = run.crash.ts if run.outcome == "crashed" and run.crash is not None else None
    stage_table, _ = stage_rules(fmt)
    for rank, rms in by_rank.items():
        phases.extend(rank_phases(rank, rms, took, stage_table, fmt.meaning.reported_phases, cutoff))
        phases.extend(timestamp_phases(rank, rms, fmt.meaning.timestamp_phases))
    phases.extend(run_level_phases(run, phases, fmt))
    run.phases = phases


def _launch_of(run: Run, events: Sequence[Event], fmt: Format, previous_end: Stamp | None, restart: bool) -> Launch:
    """The run's launch as its own lines show it: a line that states it, else the format's
    estimate (capped, for a restart, by the previous run's last line)."""
    note = None
    if run.first_ts is not None:
        stated = stated_launch(events, run.first_ts, fmt)
        if stated.launch is not None:
            return stated.launch
        note = stated.note
    return estimate(run.first_ts, fmt.timeouts.launch_gap, fmt.display, previous_end if restart else None,
                    run.begins_mid_startup, note)

"""Events -> runs: the steps that turn one source's events into its runs, in their order.

A source can hold several engines and several startups (restarts): `split` cuts them. Each
run then gets its config (`config`), milestones (`milestones`), outcome and crash (`outcome`),
phases per rank (`rank_phases`) and for the run as its critical path, where whatever time no
phase explains becomes `unattributed` (`critical_path`), its silences (`silence`) and its
launch (`launch`): computed once here, read by every view.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from firedup.core.units import fmt_duration
from firedup.formats import Format
from firedup.formats.vocab import LOAD_WEIGHT_TOOK, READY, SERVER_ARGS
from firedup.formats.wrappers import WRAPPER_CHARS
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
from firedup.timeline.advice import advise_run
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
    mixed = next((run for run in runs if run.clock_mixed), None)
    for run in runs:
        if mixed is not None and not run.clock_mixed:
            run.clock_mixed = True
            run.warnings.append(f"this file mixes servers whose lines nothing tells apart (the times of its run "
                                f"#{mixed.run_index + 1} step back): this run may be a piece of one")
    return runs


# A leap forward between two lines of a start-up no server makes (a day): another server's lines.
FORWARD_LEAP_S = 86400.0
INTERLEAVED_BEFORE_START = 3  # lines dated before a run's first that make it two servers' (one is a clock set back)


def _note_steps_back(run: Run, events: Sequence[Event], before_start: int) -> None:
    """A run whose own times step back by more than `BACKWARD_TOLERANCE_S` between its lines
    is two servers' logs interleaved with nothing on their lines (no collector's tag, no
    process tag) to tell them apart, or a clock set back mid-start: said, and no duration is
    taken from its first and last times (two untagged servers read as "ready in 3911 h").
    `before_start`: its lines dated before its first (`_without_backward_times`), of which
    several are the same sign."""
    steps, last, most = 0, None, 0.0
    # lines before the engine's first own time carry a collector's (another clock, another zone)
    own_from = next((e.line for e in events if e.name == CLOCK_FIRST), None)
    for event in events:
        if own_from is None or event.line < own_from:
            continue
        if event.name == READY:
            break  # after ready: a server's traffic, days of it, decides no duration of its start-up
        # access lines: `read.compact` leaves most of them out, and their times are traffic's
        if event.ts is None or event.inherited or event.name in CLOCK_EVENTS or event.name == ACCESS:
            continue
        if last is not None and ((back := last.minus(event.ts)) > BACKWARD_TOLERANCE_S
                                 or -back > FORWARD_LEAP_S):  # a day without a line: another server's
            steps += 1
            most = max(most, abs(back))
        last = event.ts
    if steps or before_start >= INTERLEAVED_BEFORE_START:
        steps = max(steps, before_start)
        run.clock_mixed = True
        run.warnings.append(f"its times step back (or leap a day ahead) {steps:,} time{'s' if steps > 1 else ''} (by up to "
                            f"{fmt_duration(most)}): this file mixes servers whose lines nothing tells apart "
                            "(two logs interleaved), or a clock was set back; no duration is taken from its times")


def build_run(events: Sequence[Event], source: str, run_index: int, fmt: Format,
              date_source: str | None = None, config_defaults: Mapping[str, Any] | None = None,
              gaps: Sequence[Gap] = (), unmatched: Sequence[Unmatched] = ()) -> Run:
    """One run of `fmt`'s engine; `config_defaults` (else the format's) fill flags a launch
    command leaves out. `gaps` and `unmatched`: what the reader recorded of this run's lines
    (`LineStats`), for its silences and unknown lines."""
    run = Run(source=source, run_index=run_index, engine=fmt.name, date_source=date_source)
    _bounds(run, events, fmt)
    kept = _without_backward_times(run, events)
    _note_steps_back(run, kept, sum(1 for a, b in zip(events, kept, strict=True) if a is not b and a.name != ACCESS))
    events = kept
    read_config(run, events, fmt.parsing.config_defaults if config_defaults is None else config_defaults, fmt)
    note_dropped(run, events)
    collect_milestones(run, events, fmt)
    decide_outcome(run, events, fmt)
    _build_phases(run, events, fmt)
    _note_late_start(run)
    _note_excerpt(run, events, fmt)
    _note_times_out_of_reach(run, events)
    infer_config(run, events, fmt, unmatched)
    run.ranks = sorted({m.rank for m in run.milestones if m.rank}, key=rank_sort_key)
    keyed = fmt.vocab.cache_keys
    run.cache_keys = {keyed[e.name]: str(e.fields["cache_key"]) for e in events
                      if e.name in keyed and e.fields.get("cache_key")}
    explain(run, events, gaps, unmatched, fmt)
    run.advice = advise_run(run, events, fmt)
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


# A date and time as most headers write it, opening a header: `[2026-06-02 14:21:10`, `[2026-06-02T14:21:10`.
_WRITTEN_TIME = re.compile(r"\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")


def _note_times_out_of_reach(run: Run, events: Sequence[Event]) -> None:
    """Say so where the lines write a time further in than a header is looked for (behind a
    harness's prefix of `WRAPPER_CHARS` characters or more): a run without any time, or one
    timed by what opens its lines (a harness's clock, which need not be the engine's) while
    its lines' messages carry another time. "Ready" with no time, or a harness's times, are
    then not taken for the engine's."""
    hits: list[tuple[Event, re.Match[str]]] = []
    for event in events[:_OUT_OF_REACH_EVENTS]:
        if run.first_ts is not None and (event.ts is None or event.inherited):
            continue
        m = _WRITTEN_TIME.search(event.text, 0, 4096)
        if m is not None:
            hits.append((event, m))
            if run.first_ts is None or len(hits) >= _OUT_OF_REACH_HITS:
                break
    if not hits or (run.first_ts is not None and len(hits) < _OUT_OF_REACH_HITS):
        return
    event, m = hits[0]
    whose = "no line's time is read, so no duration" if run.first_ts is None else \
        "the times read are those of what opens the line (a harness's clock?), not the engine's"
    run.warnings.append(f"line {event.line}: a time ({m.group(0)[1:]}) is written {m.start():,} characters into the "
                        f"message, behind a prefix longer than the {WRAPPER_CHARS} characters firedup looks past for "
                        f"a header: {whose}")


_OUT_OF_REACH_EVENTS = 2000  # the events of a run looked at for a time out of reach
_OUT_OF_REACH_HITS = 2  # of a timed run: so many such lines (one may quote a header)


# How far before the run's first time a line may be dated and still count: ranks and processes
# write a line or two out of order by a second or so; a clock set back (a ready line dated 2020
# after 2026 start lines) is minutes or years off.
BACKWARD_TOLERANCE_S = 60.0


def _without_backward_times(run: Run, events: Sequence[Event]) -> Sequence[Event]:
    """The events with every time more than `BACKWARD_TOLERANCE_S` before the run's first
    one taken away, said in a warning: a time that goes backwards is never a duration (a
    ready line dated 2020 after 2026 start lines was "ready in 0 ms"). The warning names no
    access line: compaction leaves most of them out, and the timeline must not change with it."""
    start = run.first_ts
    own_from = next((e.line for e in events if e.name == CLOCK_FIRST), None)
    if start is None or own_from is None:
        return events
    floor = start.plus(-BACKWARD_TOLERANCE_S)
    # lines before the engine's first own time carry a collector's (another clock, another zone)
    back = [i for i, e in enumerate(events)
            if e.ts is not None and not e.inherited and e.ts < floor and e.line >= own_from]
    if not back:
        return events
    out = list(events)
    for i in back:
        out[i] = replace(out[i], ts=None, inherited=False)
    # Said of the lines every reader keeps: an access line may be one `read.compact` leaves out
    # (those the timeline reads are kept, their times taken away all the same).
    said = [i for i in back if events[i].name != ACCESS]
    if not said:
        return out
    back = said
    first = events[back[0]]
    assert first.ts is not None
    more = f" (and {len(back) - 1} more line{'s' if len(back) > 2 else ''})" if len(back) > 1 else ""
    run.warnings.append(f"line {first.line}: its time {first.ts.iso} is before the run's first "
                        f"({start.iso}): the clock stepped back{more}; no duration counts from it")
    return out


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

"""The phases of each rank: begin and end lines paired, durations the lines report, the KV
cache from the line before the pool's end."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from firedup.formats.vocab import (
    DRAFT_KV_CACHE_ALLOCATED,
    DRAFT_PREFIX,
    KV_CACHE_ALLOCATED,
    MEMORY_POOL_END,
    SHARED,
)
from firedup.read.clock import Stamp
from firedup.read.engine import Event
from firedup.timeline.run import Milestone, Phase

# Per-rank phases: (name, begin event, end event) (`Kind.phase`). Ends are paired with the
# latest open begin of the same model and detail on the same rank.
PAIRED_PHASES = SHARED.paired_phases

def rank_phases(rank: str | None, rms: list[Milestone], took: Sequence[Event], stage_table: Mapping[str, str],
                reported: Mapping[str, str], cutoff: Stamp | None = None) -> list[Phase]:
    """The phases of one rank from its milestones `rms`: paired begins and ends, then the KV
    cache, of the target then the draft model; then the durations lines report, and the weight
    load's from its own line (`took`). `cutoff`: where a phase still open ends (the crash)."""
    out: list[Phase] = []
    keys = [m.key for m in rms]  # a property: read once, not once for each pair of names
    where: dict[str, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        where[key].append(i)
    for model_prefix in ("", DRAFT_PREFIX):
        for name, begin_name, end_name in PAIRED_PHASES:
            bname, ename = model_prefix + begin_name, model_prefix + end_name
            mine = sorted({*where.get(bname, ()), *where.get(ename, ())})  # a pair no milestone names makes none
            if mine:
                out.extend(_paired_phases(model_prefix + name, bname, ename, rank, rms, keys, mine, stage_table,
                                          cutoff))
        out.extend(_kv_cache(model_prefix, rank, rms, keys))
    out.extend(_reported(rank, rms, reported))
    _weights_took(rank, took, out)
    return out


def _paired_phases(name: str, bname: str, ename: str, rank: str | None, rms: Sequence[Milestone],
                   keys: Sequence[str], mine: Sequence[int], stage_table: Mapping[str, str],
                   cutoff: Stamp | None) -> list[Phase]:
    """Each end paired with the earliest open begin of the same detail (or of none); a begin
    never ended lasts to the next milestone that changes the stage, else to `cutoff`, open.
    `keys`: each milestone's `key`; `mine`: the places in `rms` of those named `bname` or `ename`."""
    out: list[Phase] = []
    open_begins: dict[str | None, list[Milestone]] = defaultdict(list)
    for i in mine:
        m, key = rms[i], keys[i]
        detail = m.fields.get("detail")
        if key == bname:
            open_begins[detail].append(m)
        elif key == ename:
            queue = open_begins.get(detail) or (open_begins.get(None) if detail else None)
            begin = queue.pop(0) if queue else None
            out.append(_paired(name, rank, begin, m, detail))
    for detail, queue in open_begins.items():
        for begin in queue:
            nxt = next((m for m, key in zip(rms, keys, strict=True)
                        if m.line > begin.line and key in stage_table and key != bname), None)
            end = nxt.ts if nxt else cutoff
            out.append(Phase(name, rank, begin.ts, end, end.minus(begin.ts) if end and begin.ts else None,
                             "timestamps", detail=detail, line=nxt.line if nxt else begin.line, open=nxt is None))
    return out


def _kv_cache(model_prefix: str, rank: str | None, rms: Sequence[Milestone], keys: Sequence[str]) -> list[Phase]:
    """kv_cache: from the milestone before the pool's end to the pool's end. `keys`: each
    milestone's `key` (a property: read once per rank, not once per milestone and pool end)."""
    out: list[Phase] = []
    pool_end = model_prefix + MEMORY_POOL_END
    for m, key in zip(rms, keys, strict=True):
        if key != pool_end:
            continue
        before = [p for p, k in zip(rms, keys, strict=True)
                  if p.line < m.line and k not in (KV_CACHE_ALLOCATED, DRAFT_KV_CACHE_ALLOCATED)]
        prev = before[-1] if before else None
        if prev is None or prev.ts is None or m.ts is None:
            continue
        out.append(Phase(model_prefix + "kv_cache", rank, prev.ts, m.ts, m.ts.minus(prev.ts), "timestamps",
                         line=m.line))
    return out


def _reported(rank: str | None, rms: Sequence[Milestone], reported: Mapping[str, str]) -> list[Phase]:
    """Phases a milestone reports the duration of (`Format.meaning.reported_phases`), ending at it."""
    out: list[Phase] = []
    for m in rms:
        secs = m.fields.get("elapsed_s")
        if m.name in reported and isinstance(secs, (int, float)) and m.ts is not None:
            out.append(Phase(reported[m.name], rank, m.ts.plus(-float(secs)), m.ts, float(secs), "reported",
                             line=m.line))
    return out


def _weights_took(rank: str | None, took: Sequence[Event], out: list[Phase]) -> None:
    """A weight load with its duration on a separate line ("Loading weights took X seconds"):
    the duration of the load timed from its lines when it ends there, else a phase of its own."""
    for event in took:
        if event.rank != rank:
            continue
        name = "draft.load_weights" if event.fields.get("_model") == "draft" else "load_weights"
        secs = float(event.fields["elapsed_s"])
        existing = next((p for p in out if p.name == name and p.source == "timestamps"
                         and p.end is not None and event.ts is not None and abs(p.end.minus(event.ts)) <= 2), None)
        if existing is not None:
            existing.seconds, existing.source, existing.line = secs, "reported", event.line
        elif not any(p.name == name for p in out) and event.ts is not None:
            out.append(Phase(name, rank, event.ts.plus(-secs), event.ts, secs, "reported", line=event.line))


def timestamp_phases(rank: str | None, rms: Sequence[Milestone],
                     spans: Sequence[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> list[Phase]:
    """Phases the log prints no duration for, from the last begin to the first end after it."""
    out: list[Phase] = []
    for name, begins, ends in spans:
        begin: Milestone | None = None
        for m in rms:
            if m.name in begins:
                begin = m
            elif m.name in ends and begin is not None:
                if begin.ts is not None and m.ts is not None:
                    out.append(Phase(name, rank, begin.ts, m.ts, m.ts.minus(begin.ts), "timestamps", line=m.line))
                begin = None
    return out


def _paired(name: str, rank: str | None, begin: Milestone | None, end: Milestone, detail: str | None) -> Phase:
    reported = end.fields.get("elapsed_s")
    if isinstance(reported, (int, float)):
        start = begin.ts if begin and begin.ts else (end.ts.plus(-float(reported)) if end.ts else None)
        return Phase(name, rank, start, end.ts, float(reported), "reported", detail=detail, line=end.line)
    if begin is None or begin.ts is None or end.ts is None:
        return Phase(name, rank, begin.ts if begin else None, end.ts, None, "timestamps", detail=detail, line=end.line)
    return Phase(name, rank, begin.ts, end.ts, end.ts.minus(begin.ts), "timestamps", detail=detail, line=end.line)

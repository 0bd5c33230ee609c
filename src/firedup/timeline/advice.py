"""What would have made a start-up ready sooner: its causes, ranked by what fixing each saves.

Each item names a cause the log shows (a cold cache, graph capture, the weight load, a slow rank,
a peer late at distributed init, the warm-up, a draft model, time nothing accounts for), the
seconds it cost (measured), the lines that show it, the fix (the engine's: `Format.advice.
remedies`), and the saving with its basis:

* `published figure (source)`: the remedy's published cost once fixed (`Remedy.warm`);
* `physical bound (limit: source)`: the phase against the fastest storage class (`core.limits`);
* `this log (...)`: the log's own figures (the other ranks' median, the draft's own phases);
* `unknown`: nothing to base it on; never a guess.

`tables.advice` adds what one run cannot know: a warm twin of the same configuration, measured
(basis `warm twin`), and a compile-cache key that changed between runs. The facts are the run's
(phases, silences, cache verdicts: `timeline.silence`); nothing is read again here. Every item
has evidence, and every evidence line says what its `shows` remedy's `proves` regex says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from firedup.core.limits import WEIGHTS_BOUND, weight_bounds
from firedup.core.units import fmt_duration
from firedup.formats.base import Format, Remedy
from firedup.formats.vocab import DRAFT_PREFIX, PROGRESS_CUDA_GRAPH
from firedup.read.engine import Event
from firedup.timeline.findings import Evidence, Item
from firedup.timeline.ranks import is_late, is_straggler, late_arrival

if TYPE_CHECKING:
    from firedup.timeline.run import Run

# The engine-neutral causes a format's remedies name (`Remedy.cause`): `cache:<kind>` for each
# cache kind it keeps, and these.
CAUSES = ("graph_capture", "load_weights", "serial_shards", "slow_rank", "dist_init", "warmup", "draft",
          "unaccounted")
CACHE = "cache:"
WARM_TWIN = "warm twin"
BOUND = "physical bound"
THIS_LOG = "this log"
UNKNOWN = "unknown"
GIB = 1.073741824  # GB per GiB: engines print GiB as "GB"
TEXT_CHARS = 160
DIST_INIT_WAIT = 30.0  # a distributed init this long waited on a peer (an 8-rank NCCL init takes ~16 s: docs/advice.md)


def ranked(items: Iterable[Item]) -> list[Item]:
    """Largest saving first; items whose saving is unknown after, longest first."""
    return sorted(items, key=lambda i: (i.saving_seconds is None, -(i.saving_seconds or 0.0), -i.seconds))


def cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…"


def prove(fmt: Format, remedy: Remedy, source: str, lines: Iterable[tuple[int, str]]) -> list[Evidence]:
    """The lines that one of the format's remedies proves (the item's own first), each once, as
    evidence; a line none proves is no evidence."""
    out: list[Evidence] = []
    seen: set[int] = set()
    for number, text in lines:
        if number in seen or not text:
            continue
        shows = next((r for r in (remedy, *fmt.advice.remedies) if r.regex.search(text)), None)
        if shows is not None:
            seen.add(number)
            out.append(Evidence(source, number, cut(text), shows.cause))
    return out


class _Lines:
    """Evidence lines of one run: each kept only where one of the format's remedies proves it."""

    def __init__(self, run: Run, fmt: Format) -> None:
        self.run, self.fmt = run, fmt
        self.texts = {m.line: m.text for m in run.milestones}

    def evidence(self, remedy: Remedy, lines: Iterable[tuple[int, str]]) -> list[Evidence]:
        return prove(self.fmt, remedy, self.run.source, lines)

    def at(self, numbers: Iterable[int | None]) -> list[tuple[int, str]]:
        return [(n, self.texts[n]) for n in numbers if n is not None and n in self.texts]


def advise_run(run: Run, events: Sequence[Event], fmt: Format) -> list[Item]:
    """The run's items, ranked (`build_run` calls it once the run's facts are known)."""
    if not fmt.advice.remedies or run.first_ts is None:
        return []
    lines = _Lines(run, fmt)
    floor = run.silence_threshold or 10.0
    inside = [e for e in events if (run.first_line or 0) <= e.line <= (run.last_line or 0)]
    items = [i for i in _caches(run, fmt, lines, inside) if i.seconds >= floor]
    items += _graph_capture(run, fmt, lines, items, inside, floor)
    items += _weights(run, fmt, lines, inside, floor)
    items += _dist_init(run, fmt, lines, floor)
    items += _warmup(run, fmt, lines, items, floor)
    items += _draft(run, fmt, lines, floor)
    items += _unaccounted(run, fmt, lines, floor)
    return ranked(i for i in items if i.evidence)


def _rank_phases(run: Run, name: str) -> list[Any]:
    return [p for p in run.phases if p.scope == "rank" and p.name == name]


def _phase_total(run: Run, name: str) -> float:
    return sum(p.seconds or 0.0 for p in run.run_phases() if p.name == name)


def _phase_lines(run: Run, name: str) -> list[int | None]:
    """The lines ending each detail of a phase on the run level, then those of every rank."""
    return [p.line for p in run.run_phases() if p.name == name] + [p.line for p in _rank_phases(run, name)]


def _caches(run: Run, fmt: Format, lines: _Lines, events: Sequence[Event]) -> list[Item]:
    """Each cache the run's verdicts call cold (`timeline.silence`), at the seconds they measured."""
    out: list[Item] = []
    for kind, verdict in run.caches.items():
        remedy = fmt.advice.remedy(CACHE + kind)
        if verdict.verdict != "cold" or remedy is None:
            continue
        seconds = verdict.seconds
        if seconds is None and verdict.phase is not None:
            seconds = _phase_total(run, verdict.phase) or None
        if seconds is None:
            continue
        saving, basis = _published(remedy, seconds, events)
        evidence = lines.evidence(remedy, verdict.evidence)
        out.append(Item(remedy.cause, remedy.what, seconds, evidence, remedy.fix, saving, basis, verdict.phase))
    return out


def _published(remedy: Remedy, seconds: float, events: Sequence[Event]) -> tuple[float | None, str]:
    """The saving a remedy's published figure gives: the seconds less what the work costs fixed."""
    warm = remedy.warm
    if warm is None:
        return None, UNKNOWN
    if warm.per == "run":
        cost = warm.seconds
    else:
        per = re.compile(warm.per)
        cost = warm.seconds * sum(1 for e in events if per.search(e.text))
    return max(seconds - cost, 0.0), f"published figure ({warm.source})"


def _graph_capture(run: Run, fmt: Format, lines: _Lines, items: Sequence[Item], events: Sequence[Event],
                   floor: float) -> list[Item]:
    """Graph capture, less the cold caches whose work lies in it (an item of their own); where the
    capture's progress bars time each size, the saving of trimming the largest sizes."""
    remedy = fmt.advice.remedy("graph_capture")
    total = _phase_total(run, "cuda_graph")
    own = total - sum(i.seconds for i in items if i.phase == "cuda_graph")
    if remedy is None or own < floor:
        return []
    found = lines.at(_phase_lines(run, "cuda_graph"))[:2]
    # the target's capture bars, but those inside a cold cache's span (its time is that item's)
    spans = [(min(e.line for e in i.evidence), max(e.line for e in i.evidence)) for i in items
             if i.phase == "cuda_graph" and i.evidence]
    windows = [(p.start, p.end) for p in run.run_phases() if p.name == "cuda_graph" and p.start and p.end]
    bars = [e for e in events if e.name == PROGRESS_CUDA_GRAPH and e.fields.get("_redraws") and e.ts is not None
            and any(a <= e.ts < b for a, b in windows) and not any(a <= e.line <= b for a, b in spans)]
    costs = [c for c in (_size_costs(remedy, e) for e in bars) if c]
    item = Item(remedy.cause, remedy.what, own, [], remedy.fix, None, UNKNOWN, "cuda_graph")
    if costs:
        halves = [max(s for s, _ in bar) / 2 for bar in costs]  # once a bar: a capture times hundreds of sizes
        trimmed = [(size, secs) for bar, half in zip(costs, halves, strict=True) for size, secs in bar if size > half]
        saving = min(sum(secs for _, secs in trimmed), own)
        largest = sorted({size for size, _ in trimmed}, reverse=True)
        item.saving_seconds, item.basis = saving, THIS_LOG
        item.basis_detail = (f"the capture's progress timed each size; the sizes above half the largest "
                             f"({', '.join(map(str, largest[:8]))}{', ...' if len(largest) > 8 else ''}) took "
                             f"{fmt_duration(saving)} (the first size's one-time work not counted)")
        found += [(e.line, e.text) for e in bars[:2]]
    item.evidence = lines.evidence(remedy, found)
    return [item]


_STEP = re.compile(r"\|\s*(?P<n>\d+)/(?P<total>\d+) \[(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)<")


def _size_costs(remedy: Remedy, bar: Event) -> list[tuple[int, float]]:
    """(size, seconds) for each size a progress bar captured: the size its description names
    until its count steps, timed by tqdm's elapsed clock (whole seconds). The first size counts
    no more than the slowest other: what only the first capture does (kernels compiling on first
    use) is not saved by trimming it, it moves to the next."""
    sizes = remedy.sizes_regex
    if sizes is None:
        return []
    out: list[tuple[int, float]] = []
    last_n, last_t, size = 0, 0.0, None
    step_in, size_in = _STEP.search, sizes.search
    for text in (*bar.fields.get("_redraws", ()), bar.text):  # a capture's bar: a hundred redraws and more
        step = step_in(text)
        if step is None:
            continue
        named = size_in(text)
        n = int(step["n"])
        if n != last_n:  # the clock counts only where the count steps
            h, m, s = step.group("h", "m", "s")
            t = float(3600 * int(h or 0) + 60 * int(m) + int(s))
            if n > last_n and size is not None:
                out.append((size, max(t - last_t, 0.0)))
            last_n, last_t = n, t
        if named is not None:
            size = int(named["size"])
    if len(out) > 1:  # one-time work (a kernel JIT) lands on the first size and would move to the next
        out[0] = (out[0][0], min(out[0][1], max(secs for _, secs in out[1:])))
    return out


def _weights(run: Run, fmt: Format, lines: _Lines, events: Sequence[Event], floor: float) -> list[Item]:
    """The weight load against the fastest storage class for its bytes; shards read one after
    another; one rank slower than the others."""
    out: list[Item] = []
    seconds = _phase_total(run, "load_weights")
    remedy = fmt.advice.remedy("load_weights")
    per_rank = {p.rank: p for p in _rank_phases(run, "load_weights") if p.seconds is not None}
    if remedy is not None and seconds >= floor:
        evidence = lines.evidence(remedy, lines.at(_phase_lines(run, "load_weights")[:3]))
        per_gpu = _weights_gb(run, per_rank)
        saving, basis, efficiency, bounds, detail = None, UNKNOWN, None, [], None
        if per_gpu is not None:
            nodes = run.config.get("nnodes") if isinstance(run.config.get("nnodes"), int) else 1
            per_node = per_gpu * max(len(per_rank), 1) / max(nodes or 1, 1)
            bounds = weight_bounds(per_node, per_gpu, seconds)
            bound = WEIGHTS_BOUND.bound_seconds(per_node) or 0.0
            efficiency = min(bound / seconds, 9.99)
            saving = max(seconds - bound, 0.0)
            basis = BOUND
            detail = (f"{per_node:.0f} GB per node at {WEIGHTS_BOUND.gb_per_s:.1f} GB/s, {WEIGHTS_BOUND.name}: "
                      f"{WEIGHTS_BOUND.source}")
        out.append(Item(remedy.cause, remedy.what, seconds, evidence, remedy.fix, saving, basis, "load_weights",
                        efficiency, bounds, basis_detail=detail))
        serial = fmt.advice.remedy("serial_shards")
        bars = [e for e in events if serial.regex.search(e.text)] if serial is not None else []
        if serial is not None and bars:
            out.append(Item(serial.cause, serial.what, seconds, lines.evidence(serial, [(bars[-1].line, bars[-1].text)]),
                            serial.fix, None, UNKNOWN, "load_weights"))
    slow = fmt.advice.remedy("slow_rank")
    if slow is not None and len(per_rank) >= 2:
        rank, phase = max(per_rank.items(), key=lambda kv: kv[1].seconds or 0.0)
        median = _median([p.seconds or 0.0 for p in per_rank.values()])
        late = (phase.seconds or 0.0) - median
        if is_straggler(phase.seconds or 0.0, median, "load_weights") and late >= floor:
            usual = min(per_rank.values(), key=lambda p: abs((p.seconds or 0.0) - median))
            evidence = lines.evidence(slow, lines.at([phase.line, usual.line]))
            out.append(Item(slow.cause, f"{slow.what} ({rank})", late, evidence, slow.fix, late, THIS_LOG,
                            "load_weights", basis_detail=f"the ranks' median load, {fmt_duration(median)}"))
    return out


def _median(values: list[float]) -> float:
    """`statistics.median`, the same arithmetic: that module (with fractions and decimal) is
    5-9 ms of every start's imports."""
    data = sorted(values)
    half = len(data) // 2
    return data[half] if len(data) % 2 else (data[half - 1] + data[half]) / 2


def _weights_gb(run: Run, per_rank: dict[str | None, Any]) -> float | None:
    """GB of weights one GPU holds, where the lines ending the load state it (GiB, printed "GB")."""
    lines = {p.line for p in per_rank.values()} | {p.line for p in run.run_phases() if p.name in
                                                   ("load_weights", "model_loading")}
    sizes = [float(v) for m in run.milestones if m.line in lines and m.model != "draft"
             for k, v in m.fields.items() if k in ("mem_usage_gb", "weights_gb") and isinstance(v, (int, float))]
    return max(sizes) * GIB if sizes and max(sizes) > 0 else None


def _dist_init(run: Run, fmt: Format, lines: _Lines, floor: float) -> list[Item]:
    """A rank that came last to distributed init, or an init so long it waited on a peer."""
    remedy = fmt.advice.remedy("dist_init")
    if remedy is None:
        return []
    phases = _rank_phases(run, "dist_init")
    starts = {p.rank: p.start.minus(run.first_ts) for p in phases if p.rank and p.start is not None
              and run.first_ts is not None}
    late = late_arrival(starts)
    if late is not None and is_late(late[1]) and late[1] >= floor:
        mine = next(p for p in phases if p.rank == late[0])
        other = next(p for p in phases if p.rank != late[0])
        evidence = lines.evidence(remedy, lines.at([_began(run, mine), _began(run, other)]))
        return [Item(remedy.cause, f"{remedy.what} ({late[0]} came {fmt_duration(late[1])} after the others)",
                     late[1], evidence, remedy.fix, late[1], THIS_LOG, "dist_init",
                     basis_detail="the other ranks were there that much earlier")]
    seconds = _phase_total(run, "dist_init")
    if seconds >= max(DIST_INIT_WAIT, floor):
        evidence = lines.evidence(remedy, lines.at(_phase_lines(run, "dist_init")[:2]))
        return [Item(remedy.cause, remedy.what, seconds, evidence, remedy.fix, None, UNKNOWN, "dist_init")]
    return []


def _began(run: Run, phase: Any) -> int | None:
    """The line a rank's phase began at: its milestone at the phase's start, before its end."""
    return next((m.line for m in run.milestones if m.rank == phase.rank and m.ts == phase.start
                 and m.line < (phase.line or m.line + 1)), phase.line)


def _warmup(run: Run, fmt: Format, lines: _Lines, items: Sequence[Item], floor: float) -> list[Item]:
    remedy = fmt.advice.remedy("warmup")
    seconds = _phase_total(run, "warmup") - sum(i.seconds for i in items if i.phase == "warmup")
    if remedy is None or seconds < floor:
        return []
    starts = {p.start for p in run.run_phases() if p.name == "warmup"}
    opened = [m.line for m in run.milestones if m.ts is not None and m.ts in starts]
    evidence = lines.evidence(remedy, lines.at([*opened[-1:], *_phase_lines(run, "warmup")]))
    return [Item(remedy.cause, remedy.what, seconds, evidence, remedy.fix, None, UNKNOWN, "warmup")]


def _draft(run: Run, fmt: Format, lines: _Lines, floor: float) -> list[Item]:
    """The draft model's phases together: serving without it saves them (its speed is not in the log)."""
    remedy = fmt.advice.remedy("draft")
    names = sorted({p.name for p in run.run_phases() if p.name.startswith(DRAFT_PREFIX)})
    seconds = sum(_phase_total(run, name) for name in names)
    if remedy is None or seconds < floor:
        return []
    numbers = [n for name in names for n in _phase_lines(run, name)]
    evidence = lines.evidence(remedy, lines.at(numbers)[:3])
    return [Item(remedy.cause, remedy.what, seconds, evidence, remedy.fix, seconds, THIS_LOG,
                 names[0] if names else None, basis_detail=f"the draft's own phases: {', '.join(names)}")]


def _unaccounted(run: Run, fmt: Format, lines: _Lines, floor: float) -> list[Item]:
    """Unattributed time: the lines on either side of each stretch, or of its silences."""
    remedy = fmt.advice.remedy("unaccounted")
    stretches = [p for p in run.run_phases() if p.name == "unattributed" and (p.seconds or 0.0) > 0]
    seconds = sum(p.seconds or 0.0 for p in stretches)
    if remedy is None or seconds < floor:
        return []
    found: list[tuple[int, str]] = []
    for s in run.silences:
        if s.phase == "unattributed":
            found += [(s.since_line, s.since_text), (s.line, s.text)]
    for p in stretches:
        before = [m for m in run.milestones if m.ts is not None and p.start is not None and m.ts <= p.start]
        after = [m for m in run.milestones if m.ts is not None and p.end is not None and m.ts >= p.end]
        found += [(m.line, m.text) for m in (before[-1:] + after[:1])]
    return [Item(remedy.cause, remedy.what, seconds, lines.evidence(remedy, found[:4]), remedy.fix, None, UNKNOWN,
                 "unattributed")]


__all__ = ["BOUND", "CACHE", "CAUSES", "THIS_LOG", "UNKNOWN", "WARM_TWIN", "Evidence", "Item", "advise_run", "cut", "prove", "ranked"]

"""Silent time explained: the spans of a start-up with no log line, what they probably were,
whether each cache the engine keeps across starts was cold or warm, and the lines no rule
knows, mined into templates where they fill unexplained time.

The readers record the raw facts during a start-up (`engine.Gap`: two consecutive own-clock
lines far apart, access lines not counted, they are the outside world's; `engine.Unmatched`:
lines no rule matched). This module turns them into the run's facts, once, in `build_run`;
views only render them. Everything engine-specific comes from the format: its cache kinds,
the lines that prove a cache cold or warm (`Format.caches.cache_lines`), and what a phase does
without printing (`Format.caches.silent_work`). Nothing is claimed that the log does not show:
each verdict says its basis (a line, a timing, a silence) and the lines behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firedup.core.drain import mine
from firedup.core.safe import visible
from firedup.core.units import fmt_duration
from firedup.formats.base import Format
from firedup.read.clock import Stamp
from firedup.read.engine import GAP_SECONDS, Event, Gap, Unmatched
from firedup.timeline.findings import CacheVerdict, Silence, UnknownSpan
from firedup.timeline.twins import slower, slower_than_twins, twin_key

if TYPE_CHECKING:
    from firedup.timeline.run import Phase, Run

# A silence is a gap of at least max(GAP_SECONDS, SILENCE_SHARE x the run's time to its end):
# 10 s in a short start-up, 5 % of a long one (a 30-minute start has 90 s gaps that explain little).
SILENCE_SHARE = 0.05
# A cache's work that only says it ran ("timed" lines): cold when it took this long or more,
# warm when it took at most WARM_SECONDS; in between the log does not tell.
COLD_SECONDS = 30.0
# A silent phase (Format.caches.silent_work) this short, with no silence in it, found its caches warm.
WARM_SECONDS = 10.0
TEMPLATES_SHOWN = 5
TEXT_CHARS = 160


def silence_threshold(run: Run) -> float:
    total = run.seconds_to_end or 0.0
    return max(GAP_SECONDS, SILENCE_SHARE * total)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…"


@dataclass
class WorkSpan:
    """One piece of a cache's work the log times itself (a `spans` cache line's begin and end,
    by the times their own logger printed): a kernel JIT-compiling for 22 s."""

    kind: str
    begin: Event
    end: Event
    seconds: float


def explain(run: Run, events: Sequence[Event], gaps: Iterable[Gap], unmatched: Sequence[Unmatched],
            fmt: Format) -> None:
    """Set the run's silences, cache verdicts and mined unknown lines (`build_run` calls it)."""
    run.silence_threshold = silence_threshold(run)
    cache_hits = _cache_hits(events, fmt)
    spans = _work_spans(run, events, fmt)
    run.silences = _silences(run, gaps, unmatched, fmt, cache_hits, spans)
    run.caches = _caches(run, events, fmt, spans)
    run.unknown = _unknown(run, unmatched)


def _work_spans(run: Run, events: Sequence[Event], fmt: Format) -> list[WorkSpan]:
    """The pieces of cached work the log times itself: each `spans` cache line's begin paired with
    the next end of the same key, within the run (`CacheLine`)."""
    wanted = {c.event: c.kind for c in fmt.caches.cache_lines if c.verdict == "spans"}
    if not wanted:
        return []
    first, last = run.first_line or 0, run.last_line or 0
    open_: dict[tuple[str, str], Event] = {}
    out: list[WorkSpan] = []
    for e in events:
        kind = wanted.get(e.name)
        if kind is None or not first <= e.line <= last or not isinstance(e.fields.get("at"), float):
            continue
        key = (kind, str(e.fields.get("key", "")))
        if e.fields.get("step") == "begin":
            open_[key] = e
        elif key in open_:
            begin = open_.pop(key)
            seconds = (float(e.fields["at"]) - float(begin.fields["at"])) % 86400.0  # past midnight
            out.append(WorkSpan(kind, begin, e, seconds))
    return out


# --- silences ----------------------------------------------------------------------------


def _cache_hits(events: Sequence[Event], fmt: Format) -> list[tuple[Event, str]]:
    """The events that are cache lines of `fmt`, with their cache kind, in order."""
    out: list[tuple[Event, str]] = []
    for e in events:
        for c in fmt.caches.cache_lines:
            if e.name == c.event and (c.contains is None or c.contains in e.text):
                out.append((e, c.kind))
                break
    return out


def _silences(run: Run, gaps: Iterable[Gap], unmatched: Sequence[Unmatched], fmt: Format,
              cache_hits: Sequence[tuple[Event, str]], spans: Sequence[WorkSpan] = ()) -> list[Silence]:
    first, end = run.first_ts, run.end_ts
    if first is None or end is None:
        return []
    out: list[Silence] = []
    for gap in gaps:
        start, stop = max(gap.since, first), min(gap.ts, end)
        seconds = stop.minus(start)
        if seconds < (run.silence_threshold or GAP_SECONDS):
            continue
        inside = [u for u in unmatched if gap.since_line < u.line < gap.line]
        s = Silence(start, stop, seconds, gap.since_line, gap.line,
                    _cut(gap.since_text), _cut(gap.text),
                    lines_inside=len(inside),
                    templates=mine((u.line, u.text) for u in inside)[:TEMPLATES_SHOWN])
        s.after = next((m.name for m in reversed(run.milestones) if m.line <= gap.since_line), None)
        s.before = next((m.name for m in run.milestones if m.line >= gap.line), None)
        s.phase, s.umbrella = _place(run, start, stop, fmt)
        _name_cause(run, s, fmt, cache_hits, [w for w in spans if gap.since_line < w.begin.line < gap.line])
        out.append(s)
    return out


def _overlap(a0: Stamp, a1: Stamp, b0: Stamp, b1: Stamp) -> float:
    return max(0.0, min(a1, b1).minus(max(a0, b0)))


def _place(run: Run, start: Stamp, end: Stamp, fmt: Format) -> tuple[str | None, str | None]:
    """The phase and the umbrella timer holding most of [start, end] (at least half of it)."""
    seconds = end.minus(start)
    phase: tuple[float, float, str] | None = None
    umbrella: tuple[float, str] | None = None
    for p in run.run_phases():
        if p.name == "total" or p.start is None or p.end is None:
            continue
        if seconds > 0:
            overlap = _overlap(start, end, p.start, p.end)
            if overlap < 0.5 * seconds or overlap <= 0:
                continue
        elif not (p.start <= start <= p.end):
            continue
        else:  # a point (a line's time): the shortest phase holding it, a named one first
            overlap = -(p.seconds or 0.0) - (1e9 if p.name == "unattributed" else 0.0)
        if p.name in fmt.meaning.umbrella_phases:
            if umbrella is None or overlap > umbrella[0]:
                umbrella = (overlap, p.name)
        elif phase is None or (overlap, -(p.seconds or 0.0)) > (phase[0], phase[1]):
            phase = (overlap, -(p.seconds or 0.0), p.name)
    return (phase[2] if phase else None), (umbrella[1] if umbrella else None)


def _name_cause(run: Run, s: Silence, fmt: Format, cache_hits: Sequence[tuple[Event, str]],
                spans: Sequence[WorkSpan] = ()) -> None:
    """What the silence was: cached work the log times itself inside it (its own lines say so, no
    guess), else probably the work a phase does without printing (Format.caches.silent_work), else the
    cached work whose line comes right before it, else the phase it lies in (`_CAUSES`, in order).
    The lines without the server's own time printed inside it are added."""
    if spans:
        _timed_by_own_lines(s, spans)
        return
    # the last cache line before the silence with no milestone between them
    last_milestone = max((m.line for m in run.milestones if m.line <= s.since_line), default=0)
    near = [(e, kind) for e, kind in cache_hits if last_milestone <= e.line <= s.since_line]
    cached = near[-1] if near else None
    for cause in _CAUSES:
        if s.cause is None:
            cause(s, fmt, cached)
    if s.templates:
        top = s.templates[0]
        lines = (f"{s.lines_inside} line{'s' if s.lines_inside != 1 else ''} without the server's own time, "
                 f"most `{top.text}`")
        s.cause = f"{s.cause}; {lines}" if s.cause else lines


def _timed_by_own_lines(s: Silence, spans: Sequence[WorkSpan]) -> None:
    """The cache whose work inside the silence the log's own lines time longest."""
    busy = max({w.kind for w in spans}, key=lambda k: sum(w.seconds for w in spans if w.kind == k))
    mine_ = [w for w in spans if w.kind == busy]
    took = sum(w.seconds for w in mine_)
    s.evidence = [(e.line, _first_line(e)) for w in mine_[:2] for e in (w.begin, w.end)]
    lines = ", ".join(str(n) for n, _ in s.evidence)
    s.cause, s.cache = f"{busy}: {fmt_duration(took)} of it by the log's own lines (line {lines})", busy


def _probably_silent_work(s: Silence, fmt: Format, cached: tuple[Event, str] | None) -> None:
    """The work the phase holding the silence does without printing (the umbrella timer's only
    when no phase holds it)."""
    name = s.phase if s.phase not in (None, "unattributed") else s.umbrella
    if name is None or name not in fmt.caches.silent_work:
        return
    work, kind = fmt.caches.silent_work[name]
    s.cause, s.cache = f"probably {work}", kind
    s.evidence = [(s.since_line, s.since_text), (s.line, s.text)]
    if cached is not None and cached[0].line != s.since_line:
        s.evidence.insert(0, (cached[0].line, _first_line(cached[0])))


def _probably_cached_work(s: Silence, fmt: Format, cached: tuple[Event, str] | None) -> None:
    """The cached work whose line comes right before the silence."""
    if cached is None:
        return
    event, kind = cached
    s.cause, s.cache = f"probably {kind}: {fmt.caches.cache_kinds.get(kind, kind)}", kind
    s.evidence = [(event.line, _first_line(event))]
    if event.line != s.since_line:
        s.evidence.append((s.since_line, s.since_text))
    s.evidence.append((s.line, s.text))


def _the_phases_work(s: Silence, fmt: Format, cached: tuple[Event, str] | None) -> None:
    if s.phase not in (None, "unattributed"):
        s.cause = f"the {s.phase} phase's own work"


# What a silence no line inside times probably was, asked in order until one answers.
_CAUSES: tuple[Callable[[Silence, Format, tuple[Event, str] | None], None], ...] = (
    _probably_silent_work, _probably_cached_work, _the_phases_work)


# --- caches ------------------------------------------------------------------------------


def _caches(run: Run, events: Sequence[Event], fmt: Format, spans: Sequence[WorkSpan] = ()
            ) -> dict[str, CacheVerdict]:
    out: dict[str, CacheVerdict] = {}
    stamps: dict[int, Stamp] | None = None  # each line's time, once a verdict needs one (a long log has many events)
    for kind in fmt.caches.cache_kinds:
        verdict = (_from_spans(run, kind, spans, fmt) or _from_lines(run, kind, events, fmt)
                   or _from_silence(run, kind, fmt))
        if verdict is not None and verdict.phase is None and verdict.evidence:
            if stamps is None:
                stamps = {e.line: e.ts for e in events if e.ts is not None}
            at = stamps.get(verdict.evidence[0][0])
            if at is not None:
                phase, umbrella = _place(run, at, at, fmt)
                verdict.phase = phase or umbrella
        out[kind] = verdict or CacheVerdict(kind, "unknown", "none", "no line of this log shows it")
    return out


def _first_line(e: Event) -> str:
    return _cut(e.text.splitlines()[0]) if e.text else ""


def _from_spans(run: Run, kind: str, spans: Sequence[WorkSpan], fmt: Format) -> CacheVerdict | None:
    """A cache whose work the log times itself: `22 s in cuda_graph, 32 s in warmup` by its lines."""
    mine_ = [w for w in spans if w.kind == kind]
    if not mine_:
        return None
    where: dict[str, float] = {}
    for w in mine_:
        # where it ran: the silence it fills (the lines' own times are another logger's), else its line's time
        held = next((x for x in run.silences if x.since_line < w.begin.line < x.line), None)
        phase = held.phase if held is not None else (
            _place(run, w.begin.ts, w.begin.ts, fmt)[0] if w.begin.ts is not None else None)
        where[phase or "an unknown phase"] = where.get(phase or "an unknown phase", 0.0) + w.seconds
    total = sum(where.values())
    said = ", ".join(f"{fmt_duration(secs)} in {phase}" for phase, secs in where.items())
    took = f"the log's own lines time its work: {said}"
    evidence = [(e.line, _first_line(e)) for w in mine_[:2] for e in (w.begin, w.end)]
    main = max(where, key=lambda k: where[k])
    if total >= COLD_SECONDS:
        return CacheVerdict(kind, "cold", "line", f"{took}; at least {fmt_duration(COLD_SECONDS)} in all",
                            evidence, total, main)
    if total <= WARM_SECONDS:
        return CacheVerdict(kind, "warm", "line", f"{took}; at most {fmt_duration(WARM_SECONDS)} in all",
                            evidence, total, main)
    return CacheVerdict(kind, "unknown", "line", f"{took}; neither clearly short nor long", evidence, total, main)


def _from_lines(run: Run, kind: str, events: Sequence[Event], fmt: Format) -> CacheVerdict | None:
    """A cache whose lines say it was cold or warm, or only that its work ran (then timed to
    the next milestone)."""
    lines = [c for c in fmt.caches.cache_lines if c.kind == kind and c.verdict != "spans"]
    hits: list[tuple[Event, str]] = []
    for e in events:
        for c in lines:
            if e.name == c.event and (c.contains is None or c.contains in e.text):
                hits.append((e, c.verdict))
                break
    if not hits:
        return None
    cold = [e for e, v in hits if v == "cold"]
    warm = [e for e, v in hits if v == "warm"]
    if cold:
        shown = cold[:3] + warm[:1]
        reason = "the log says the cache was not used" + (" (and was for other parts)" if warm else "")
        return CacheVerdict(kind, "cold", "line", reason, [(e.line, _first_line(e)) for e in shown])
    if warm:
        return CacheVerdict(kind, "warm", "line", "the log says the cache was used",
                            [(e.line, _first_line(e)) for e in warm[:3]])
    return _timed_to_next_milestone(run, kind, [e for e, _ in hits])


def _timed_to_next_milestone(run: Run, kind: str, timed: Sequence[Event]) -> CacheVerdict:
    """A cache's work that only says it ran: from its first line to the next milestone after
    its last one, cold when that is long, warm when short."""
    first, last = timed[0], timed[-1]
    after = next((m for m in run.milestones if m.line > last.line and m.ts is not None), None)
    evidence = [(first.line, _first_line(first))]
    if first.ts is None or after is None or after.ts is None:
        return CacheVerdict(kind, "unknown", "timing", "its work ran; the log does not show for how long", evidence)
    seconds = after.ts.minus(first.ts)
    evidence.append((after.line, _cut(after.text)))
    took = f"its work ran {fmt_duration(seconds)} (to the next milestone)"
    if seconds >= COLD_SECONDS:
        return CacheVerdict(kind, "cold", "timing", f"{took}: at least {fmt_duration(COLD_SECONDS)}, "
                            "a cache would have made it short", evidence, seconds)
    if seconds <= WARM_SECONDS:
        return CacheVerdict(kind, "warm", "timing", f"{took}: at most {fmt_duration(WARM_SECONDS)}", evidence, seconds)
    return CacheVerdict(kind, "unknown", "timing", f"{took}: neither clearly short nor long", evidence, seconds)


def _from_silence(run: Run, kind: str, fmt: Format) -> CacheVerdict | None:
    """A cache no line speaks of, judged by the phase whose silent work it does: its longest
    silence, else the phase's time with no silence of its own."""
    phases = [name for name, (_, k) in fmt.caches.silent_work.items() if k == kind]
    if not phases:
        return None
    silent = [s for s in run.silences if s.cache == kind]
    if silent:
        return _from_longest_silence(kind, max(silent, key=lambda x: x.seconds), phases, fmt)
    for p in run.run_phases():
        # 0 s: whole-second stamps on both ends, or an excerpt that saw only its end: no measure
        if p.name not in phases or p.seconds is None or p.open or p.end is None or p.seconds <= 0:
            continue
        verdict = _from_quiet_phase(run, kind, p)
        if verdict is not None:
            return verdict
    return None


def _from_longest_silence(kind: str, s: Silence, phases: Sequence[str], fmt: Format) -> CacheVerdict:
    """Cold when the silence of the cache's silent work was long; else neither clearly cold nor warm."""
    where = s.phase if s.phase in phases else s.umbrella
    said = f"{where} was silent for {fmt_duration(s.seconds)}"
    if s.seconds >= COLD_SECONDS:
        return CacheVerdict(kind, "cold", "silence", f"{said}, at least {fmt_duration(COLD_SECONDS)}: probably "
                            f"{fmt.caches.silent_work[where or phases[0]][0]}", list(s.evidence), s.seconds, where)
    return CacheVerdict(kind, "unknown", "silence", f"{said}: longer than a warm start's "
                        f"{fmt_duration(WARM_SECONDS)}, shorter than a cold one's {fmt_duration(COLD_SECONDS)}, "
                        "so neither clearly cold nor warm", list(s.evidence), s.seconds, where)


def _from_quiet_phase(run: Run, kind: str, p: Phase) -> CacheVerdict | None:
    """Warm when the phase whose silent work the cache does was short, or when it had no silence
    that could be that work (every gap of COLD_SECONDS would have been one)."""
    assert p.seconds is not None
    line = p.line if p.line is not None else 0
    text = next((m.text for m in run.milestones if m.line == line), "")
    # A short quiet phase is no sign of a warm cache: a cold one may compile where lines keep
    # coming (a graph capture's own progress). "warm" needs a positive sign (a cache-hit line, a
    # warm twin, a process record with no compiler); without one the verdict is "unknown".
    if p.seconds <= WARM_SECONDS:
        return CacheVerdict(kind, "unknown", "timing",
                            f"{p.name} took {fmt_duration(p.seconds)} (at most {fmt_duration(WARM_SECONDS)}) "
                            "with no silence, but nothing says the cache was used (no cache-hit line, warm twin "
                            "or process record)", [(line, _cut(text))], p.seconds, p.name)
    if (run.silence_threshold or GAP_SECONDS) > COLD_SECONDS:
        return None
    # every gap of COLD_SECONDS would be a silence here, and none in this phase is its silent work
    others = [x for x in run.silences if p.name in (x.phase, x.umbrella)]
    if not others:
        said = (f"{p.name} took {fmt_duration(p.seconds)} with no {fmt_duration(run.silence_threshold)} "
                "silence in it: nothing was compiled for long without a line")
    else:  # the silences inside it are other phases' (each listed with its cause)
        held = list(dict.fromkeys(x.phase or "unattributed" for x in others))
        said = (f"{p.name} took {fmt_duration(p.seconds)}; {_its(len(others))} in {_and(held)}, none "
                "elsewhere in it: nothing else was compiled for long without a line")
    said += ", but nothing says the cache was used (no cache-hit line, warm twin or process record)"
    return CacheVerdict(kind, "unknown", "timing", said, [(line, _cut(text))], p.seconds, p.name)


def _its(n: int) -> str:
    """`its silence lies` / `its 3 silences lie`."""
    return "its silence lies" if n == 1 else f"its {n} silences lie"


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- what the process tree showed (wait --pid) ---------------------------------------------

# The cache kind whose cold start compiler processes prove, where the format declares it, and
# the phases where a cold one compiles: graph capture, and the phases whose silent work it is.
PROCESS_JIT = "kernel_jit"
JIT_PHASES = frozenset({"cuda_graph", "draft.cuda_graph"})


@dataclass(frozen=True)
class Observed:
    """A stretch of time in which `wait --pid` saw the server's process tree do one thing
    (`live.proc`), on the log's clock: `compilers` are the compiler processes it saw."""

    kind: str
    start: Stamp
    end: Stamp
    text: str
    compilers: tuple[str, ...] = ()


def observed_caches(run: Run, observed: Sequence[Observed], fmt: Format) -> None:
    """Compiler processes seen in the server's tree during graph capture (or a phase whose
    silent work is the kernel JIT) make the run's kernel JIT verdict cold: a warm cache
    compiles nothing. Only a line saying the cache was cold already says more."""
    if PROCESS_JIT not in fmt.caches.cache_kinds:
        return
    found = _compilers_in_jit_phases(run, observed, fmt)
    current = run.caches.get(PROCESS_JIT)
    if not found:
        _watched_without_compilers(run, observed, fmt)
        return
    if current is not None and current.verdict == "cold" and current.basis == "line":
        return
    phase, line, _, first = found[0]
    names = sorted({c for *_, o in found for c in o.compilers})
    seconds = sum(s for _, _, s, _ in found)
    seen = (f"for about {fmt_duration(seconds)} from {first.start.iso[11:19]}" if seconds >= 1
            else f"at {first.start.iso[11:19]}")
    text = next((m.text for m in run.milestones if m.line == line), "") if line is not None else ""
    run.caches[PROCESS_JIT] = CacheVerdict(
        PROCESS_JIT, "cold", "process",
        f"compilers ran in the server's process tree in {phase} ({', '.join(names)}; seen by wait --pid {seen}): "
        "a warm cache compiles nothing", [(line, _cut(text))] if line is not None else [], seconds or None, phase)


def _watched_without_compilers(run: Run, observed: Sequence[Observed], fmt: Format) -> None:
    """A process record that watched every phase where a cold kernel JIT compiles and saw no
    compiler there: a positive sign of a warm cache, where nothing else says either way."""
    current = run.caches.get(PROCESS_JIT)
    if current is not None and current.verdict != "unknown":
        return
    phases = [p for p in run.run_phases() if p.name in JIT_PHASES and p.start is not None and p.end is not None
              and p.seconds]
    if not phases or not observed:
        return
    first, last = min(o.start for o in observed), max(o.end for o in observed)
    if any(p.start is not None and p.end is not None and (p.start < first or p.end > last) for p in phases):
        return  # the record did not watch all of it
    names = _and([p.name for p in phases])
    run.caches[PROCESS_JIT] = CacheVerdict(
        PROCESS_JIT, "warm", "process",
        f"wait --pid watched the server's process tree through {names} and saw no compiler: a cold cache compiles",
        [(p.line, _cut(next((m.text for m in run.milestones if m.line == p.line), ""))) for p in phases[:1]
         if p.line is not None], None, phases[0].name)


@dataclass
class TwinFacts:
    """What the twin rules read of one run (small, so a worker can send it with the run's JSON)."""

    key: tuple[Any, ...] | None  # the engine and the same-config flags; None: the config is not known
    ready: bool
    capture: float | None  # cuda_graph's seconds
    capture_line: int | None
    capture_text: str
    where: str  # `source` or `source #2`
    caches: dict[str, CacheVerdict]


def twin_facts(run: Run) -> TwinFacts:
    key = twin_key(run.engine, run.config)
    p = next((x for x in run.run_phases() if x.name == "cuda_graph"), None)
    line = p.line if p is not None else None
    text = next((m.text for m in run.milestones if m.line == line), "") if line is not None else ""
    return TwinFacts(key, run.outcome == "ready", run.phase_seconds().get("cuda_graph"), line, _cut(text),
                     run.source + (f" #{run.run_index + 1}" if run.run_index else ""), dict(run.caches))


def twin_caches(runs: Sequence[Run]) -> None:
    """The twin rules (`twin_verdicts`) applied to runs read together."""
    for i, changed in twin_verdicts([twin_facts(r) for r in runs]).items():
        runs[i].caches.update(changed)


def twin_verdicts(facts: Sequence[TwinFacts]) -> dict[int, dict[str, CacheVerdict]]:
    """Runs of the same inputs and config compared, the verdicts that change (by run index):

    * a run whose cache work was short and quiet ("unknown" by its own lines) beside a twin whose
      same cache was cold, the twin's work `slower` than its own (TWIN_RATIO times and
      TWIN_SECONDS more: `timeline.twins`), found the cache: warm (a positive sign, the twin named);
    * a run whose graph capture (cuda_graph) was `slower` than its fastest twin's compiled its
      kernels in it: its kernel JIT was cold, whatever its own lines leave unsaid (a line saying
      so stays). The same rule marks it cold in `tables.coldwarm` and measures its saving in
      `tables.advice`."""
    changed: dict[int, dict[str, CacheVerdict]] = {}
    by_config: dict[tuple[Any, ...], list[int]] = {}
    for i, f in enumerate(facts):
        if f.key is not None:
            by_config.setdefault(f.key, []).append(i)
    for twins in by_config.values():
        for i in twins:
            for kind, v in facts[i].caches.items():
                if v.verdict != "unknown" or v.basis != "timing" or v.seconds is None or v.seconds > WARM_SECONDS:
                    continue
                cold = [j for j in twins if j != i and (c := facts[j].caches.get(kind)) is not None
                        and c.verdict == "cold" and c.seconds is not None and slower(c.seconds, v.seconds)]
                if not cold:
                    continue
                c = facts[cold[0]].caches[kind]
                assert c.seconds is not None
                changed.setdefault(i, {})[kind] = CacheVerdict(
                    kind, "warm", "twin",
                    f"{v.phase or 'its work'} took {fmt_duration(v.seconds)}, where its same-config twin's cold "
                    f"cache took {fmt_duration(c.seconds)} ({visible(facts[cold[0]].where, one_line=True)}): this "
                    "start found the cache", list(v.evidence), v.seconds, v.phase)
        captures = {i: {"cuda_graph": facts[i].capture} for i in twins
                    if facts[i].ready and facts[i].capture and PROCESS_JIT in facts[i].caches}
        for found in slower_than_twins(captures):
            f = facts[found.run]
            if f.caches[PROCESS_JIT].verdict == "cold":
                continue
            changed.setdefault(found.run, {})[PROCESS_JIT] = CacheVerdict(
                PROCESS_JIT, "cold", "twin",
                f"cuda_graph took {fmt_duration(found.seconds)}, {found.ratio:.1f} x its same-config twin's "
                f"({fmt_duration(found.twin_seconds)} in {visible(facts[found.twin].where, one_line=True)}): the "
                "kernels were compiled in it", [(f.capture_line, f.capture_text)] if f.capture_line is not None else [],
                found.seconds, "cuda_graph")
    return changed


def _compilers_in_jit_phases(run: Run, observed: Sequence[Observed],
                             fmt: Format) -> list[tuple[str, int | None, float, Observed]]:
    """Each stretch with compilers that overlaps a phase where a cold kernel JIT compiles: the
    phase, its line, the seconds they overlap and the stretch, in the run's phase order."""
    phases = JIT_PHASES | {name for name, (_, kind) in fmt.caches.silent_work.items() if kind == PROCESS_JIT}
    found: list[tuple[str, int | None, float, Observed]] = []
    for p in run.run_phases():
        if p.name not in phases or p.start is None:
            continue
        for o in observed:
            # an unfinished phase lasts as long as what was seen in it: the compilers after its
            # last stamped line are its (the line that would end it has not come)
            end = p.end or max(run.last_ts or p.start, o.end)
            if o.compilers and o.start <= end and o.end >= p.start:
                found.append((p.name, p.line, _overlap(o.start, o.end, p.start, end), o))
    return found


# --- unknown lines -----------------------------------------------------------------------


def _unknown(run: Run, unmatched: Sequence[Unmatched]) -> list[UnknownSpan]:
    """Unattributed spans of at least the silence threshold, with the unknown lines in them."""
    out: list[UnknownSpan] = []
    threshold = run.silence_threshold or GAP_SECONDS
    for p in run.run_phases():
        if p.name != "unattributed" or p.start is None or p.end is None or (p.seconds or 0) < threshold:
            continue
        start, end = p.start, p.end
        inside = [u for u in unmatched if u.ts is not None and start <= u.ts <= end]
        if not inside:
            continue
        after = next((m.name for m in reversed(run.milestones) if m.ts is not None and m.ts <= start), None)
        before = next((m.name for m in run.milestones if m.ts is not None and m.ts >= end), None)
        out.append(UnknownSpan(start, end, p.seconds or 0.0, after, before, len(inside),
                               mine((u.line, u.text) for u in inside)[:TEMPLATES_SHOWN]))
    return out

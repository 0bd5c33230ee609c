"""Events -> runs -> milestones, phases, outcome and crash.

A source can hold several startups (restarts). Within a run, every rank prints its own
milestones; a speculative-decoding run loads and captures a second (draft) model, which
is not a restart. Phases are built per rank first, then for the run as its critical path
(the slowest rank), and whatever time no phase explains becomes `unattributed`.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from firedup.core.config import COMMON_FLAGS, checked_flags, read_server_args
from firedup.core.health import REFUSED
from firedup.formats import Format, all_formats, get_format
from firedup.formats.convert import DROPPED
from firedup.formats.vocab import (
    CONFIG_STATED,
    CRASH,
    DRAFT_KV_CACHE_ALLOCATED,
    DRAFT_PREFIX,
    ENGINE_TIMINGS,
    ERROR_FRAME,
    ERROR_PREFIX,
    ERROR_TRACEBACK,
    HEALTH_FIRST,
    HTTP_FIRST_REQUEST,
    HTTP_PREFIX,
    HTTP_RUNNING,
    HTTP_SHUTDOWN,
    HTTP_STARTED,
    HTTP_STARTUP_FAILED,
    KV_CACHE_ALLOCATED,
    LOAD_WEIGHT_BEGIN,
    LOAD_WEIGHT_END,
    LOAD_WEIGHT_TOOK,
    MEMORY_POOL_END,
    READY,
    REQUEST_FIRST,
    RUN_BANNER,
    SCHEDULER_READY,
    SERVER_ARGS,
    SHARED,
    Vocabulary,
)
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
from firedup.read.events import (
    ACCESS,
    PROBE_PATHS,
    access_time_counts,
    own_time_headers,
)
from firedup.timeline.crash import diagnose_error, is_exception_line
from firedup.timeline.launch import Launch, estimate, stated_launch
from firedup.timeline.silence import CacheVerdict, Silence, UnknownSpan, explain

# The shared milestone names (the contract's, plus the draft names that extend them); a
# format adds its own (`Format.vocab.milestones`).
MILESTONES = SHARED.milestones

# The stage a run is in right after a milestone (`Kind.stage_after`): how a crash or a cut-off
# log is placed. A format adds or overrides entries (`Format.stage_after`).
_STAGE_AFTER = dict(SHARED.stage_after)

# A stage the run's config turned off is skipped (overridden per format by `Format.stage_skips`).
_STAGE_SKIPS: dict[str, tuple[str, Any, str]] = {"cuda_graph": ("disable_cuda_graph", True, "http_start")}


def format_of(run: Run) -> Format | None:
    """The format a run was read with, for callers that hold only the run (its engine's
    name, say from the history store); None when no registered format has that name."""
    try:
        return get_format(run.engine)
    except KeyError:
        return None


# Per-rank phases: (name, begin event, end event) (`Kind.phase`). Ends are paired with the
# latest open begin of the same model and detail on the same rank.
PAIRED_PHASES = SHARED.paired_phases

# A rank is a straggler in a phase when it takes this much longer than the median rank:
# at least STRAGGLER_SECONDS and STRAGGLER_SHARE of the median. Every view uses this rule.
STRAGGLER_SECONDS = 5.0
STRAGGLER_SHARE = 0.1


# Phases measured from the rank's previous line (no begin line of their own) include the
# wait for slower ranks at the barrier before them: their longest rank is the one that
# finished the phase before *first*, never a straggler.
NO_STRAGGLERS = frozenset({"kv_cache", "draft.kv_cache"})


def is_straggler(seconds: float, median: float, phase: str | None = None) -> bool:
    if phase in NO_STRAGGLERS:
        return False
    return seconds - median >= max(STRAGGLER_SECONDS, STRAGGLER_SHARE * median)


def late_arrival(starts: Mapping[str, float]) -> tuple[str, float] | None:
    """At a barrier phase (NO_STRAGGLERS), the rank that arrived last and how many seconds
    after the others: it made the others wait, so it is the one to blame, while the rank
    that waited longest arrived first. `starts`: rank -> the phase's start (any common origin);
    the lateness is measured against the median of the other ranks. None with fewer than two ranks."""
    if len(starts) < 2:
        return None
    rank = max(starts, key=lambda r: (starts[r], r))
    others = sorted(t for r, t in starts.items() if r != rank)
    return rank, starts[rank] - others[len(others) // 2]


def is_late(lateness: float) -> bool:
    """A rank arriving this late at a barrier is a straggler (the same threshold as durations)."""
    return lateness >= STRAGGLER_SECONDS


PHASE_ORDER = ("launch", "dist_init", "load_weights", "model_loading", "torch_compile", "kv_cache", "cuda_graph",
               "draft.dist_init", "draft.load_weights", "draft.kv_cache", "draft.cuda_graph", "engine_init",
               "http_start", "warmup", "unattributed", "total")

_UMBRELLAS: dict[tuple[int, ...], dict[str, tuple[str, ...]]] = {}  # by the registered formats


def umbrella_phases() -> dict[str, tuple[str, ...]]:
    """Phases that span others (`Format.umbrella_phases`), over every registered format:
    cross-run views show runs of any engine side by side. Stacked with the phases inside,
    an umbrella counts the same seconds twice, and it never says which step inside was slow."""
    formats = tuple(all_formats().values())
    key = tuple(id(fmt) for fmt in formats)
    found = _UMBRELLAS.get(key)
    if found is None:
        found = {}
        for fmt in formats:
            for phase, inner in fmt.umbrella_phases.items():
                found[phase] = tuple(dict.fromkeys((*found.get(phase, ()), *inner)))
        _UMBRELLAS.clear()
        _UMBRELLAS[key] = found
    return found


def spanned(phase: str, present: Iterable[str]) -> bool:
    """True when `phase` is an umbrella and one of the phases it spans is among `present`."""
    inner = umbrella_phases().get(phase, ())
    return any(p in inner for p in present)


def spans_note(phase: str, present: Iterable[str]) -> str:
    """` (spans torch_compile, cuda_graph)` for an umbrella over phases listed beside it, else ``."""
    listed = set(present)
    inner = [p for p in umbrella_phases().get(phase, ()) if p in listed]
    return f" (spans {', '.join(inner)})" if inner else ""


@dataclass
class Milestone:
    name: str
    ts: Stamp | None
    rank: str | None
    line: int
    fields: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    model: str | None = None  # "target" | "draft" for per-model lines, else None

    @property
    def key(self) -> str:
        """The name with the model made explicit (`draft.memory_pool.end`), for phase logic.

        The contract names only load_weight and cuda_graph separately for the draft; its
        dist_init, kv_cache and memory_pool lines keep their plain names and say `model`.
        """
        if self.model == "draft" and not self.name.startswith(DRAFT_PREFIX):
            return DRAFT_PREFIX + self.name
        return self.name

    def as_contract(self) -> dict[str, Any]:
        return {"name": self.name, "ts": self.ts.iso if self.ts else None, "rank": self.rank, "line": self.line,
                "model": self.model}


@dataclass
class Phase:
    name: str
    rank: str | None  # None for the run-level (critical path) phase
    start: Stamp | None
    end: Stamp | None
    seconds: float | None
    source: str  # "reported" | "timestamps"
    scope: str = "rank"  # "rank" | "run"
    detail: str | None = None  # which graph: decode, piecewise, verify, ...
    line: int | None = None  # the line that ends the phase (or states its duration)
    open: bool = False  # began but never ended in this log

    def as_contract(self) -> dict[str, Any]:
        return {
            "name": self.name, "rank": self.rank,
            "start": self.start.iso if self.start else None, "end": self.end.iso if self.end else None,
            "seconds": None if self.seconds is None else round(self.seconds, 3), "source": self.source,
            "scope": self.scope, "detail": self.detail, "line": self.line, "open": self.open,
        }


@dataclass
class Crash:
    category: str
    ts: Stamp | None
    line: int
    message: str
    phase: str | None
    hint: str | None
    first_line: str
    after_ready: bool = False
    # Seconds from the run's first line to `ts` (set in build): the crash's own time, which a
    # crash after ready keeps although the run's end is its ready line.
    offset: float | None = None

    def as_contract(self) -> dict[str, Any]:
        return {"category": self.category, "ts": self.ts.iso if self.ts else None, "line": self.line,
                "message": self.message, "phase": self.phase, "hint": self.hint, "first_line": self.first_line,
                "after_ready": self.after_ready,
                # additions beyond the contract's required keys
                "offset": None if self.offset is None else round(self.offset, 3)}


@dataclass
class Run:
    """One startup, from its first line to ready, a crash, or the end of the log."""

    source: str
    run_index: int
    engine: str
    outcome: str = "incomplete"
    first_ts: Stamp | None = None
    ready_ts: Stamp | None = None
    last_ts: Stamp | None = None
    first_line: int | None = None
    last_line: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    config_complete: bool = True
    config_inferred: dict[str, str] = field(default_factory=dict)  # flag -> the evidence
    milestones: list[Milestone] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    crash: Crash | None = None
    stopped_in: str | None = None  # for incomplete runs: the phase the log stops in
    # "server" (the ready line) | "health" (no ready line, but the health endpoint answered its
    # ready status: `ready_evidence` says which line) | "engine" (the engine's own ready line and
    # no server in the log: an offline engine, a benchmark, a worker another process serves; the
    # outcome stays "incomplete", as nothing serves, and the run ends at `engine_ready_ts`)
    ready_kind: str | None = None
    ready_evidence: str | None = None
    engine_ready_ts: Stamp | None = None
    ranks: list[str] = field(default_factory=list)
    engine_timings: dict[str, Any] | None = None
    date_source: str | None = None
    warnings: list[str] = field(default_factory=list)
    health_url: str | None = None
    all_config: dict[str, Any] = field(default_factory=dict)
    begins_mid_startup: bool = False  # the log starts after the startup did: times are lower bounds
    excerpt_lead: float = 0.0  # seconds a reported phase reaches back before the first line
    # sha256 of the source's bytes, taken where the source was read (`parse_paths(content_hash=True)`);
    # None for stdin or when not asked for. Run ids come from it, never from re-reading `source`.
    content_hash: str | None = None
    # Silent time explained (timeline.silence): spans with no log line, a verdict per cache kind
    # of the engine, and the unknown lines mined where they fill unattributed time.
    silence_threshold: float | None = None
    silences: list[Silence] = field(default_factory=list)
    caches: dict[str, CacheVerdict] = field(default_factory=dict)
    unknown: list[UnknownSpan] = field(default_factory=list)
    # When the server process was launched (timeline.launch): measured, stated by a line, given,
    # or estimated with its basis. None only for a run built outside `build_timeline`.
    launch: Launch | None = None
    # cache kind -> the key its cache was stored under at this start (`formats.vocab.Kind.cache_key`)
    cache_keys: dict[str, str] = field(default_factory=dict)

    @property
    def total_seconds(self) -> float | None:
        """The contract's `total_seconds`: first line to ready, else to the log's last line."""
        end = self.ready_ts if self.ready_ts is not None else self.last_ts
        if self.first_ts is None or end is None:
            return None
        return max(0.0, end.minus(self.first_ts))

    @property
    def end_ts(self) -> Stamp | None:
        """Where the startup ended, the one definition every view shows: the ready line for a
        ready run, the crash's first line (when it has a time) for a crashed run, else the log's
        last line. A crash after ready does not move the end: the startup had succeeded."""
        if self.ready_ts is not None:
            return self.ready_ts
        if self.outcome == "crashed" and self.crash is not None and self.crash.ts is not None:
            return self.crash.ts
        if self.ready_kind == "engine" and self.engine_ready_ts is not None:
            return self.engine_ready_ts  # the engine initialised: its start-up ends there
        return self.last_ts

    @property
    def seconds_to_end(self) -> float | None:
        """First line to `end_ts`: the time to ready, to the crash, or to the end of the log.

        It differs from `total_seconds` only for a crash: the lines after the crash's first
        one (its traceback, other ranks shutting down) are not time the startup took."""
        end = self.end_ts
        if self.first_ts is None or end is None:
            return None
        # an excerpt: the phases its lines report reach back before its first line, and that
        # much is known of the time before it
        return max(0.0, end.minus(self.first_ts)) + self.excerpt_lead

    @property
    def launch_to_ready(self) -> float | None:
        """Seconds from the launch to ready: what a wait loop started with the server waits.
        The launch's gap plus `total_seconds`, the one sum every view shows."""
        if self.launch is None or self.launch.gap is None or self.outcome != "ready":
            return None
        total = self.total_seconds
        return None if total is None else self.launch.gap + total

    @property
    def launch_to_end(self) -> float | None:
        """Seconds from the launch to `end_ts` (ready, the crash, the log's end)."""
        if self.launch is None or self.launch.gap is None or self.seconds_to_end is None:
            return None
        return self.launch.gap + self.seconds_to_end

    @property
    def lower_bound(self) -> bool:
        """True when `seconds_to_end` undercounts: the log begins after the startup did."""
        return self.begins_mid_startup

    def open_phases(self) -> list[str]:
        """Run-level phases that began and never ended in this log (details apart, in order)."""
        return list(dict.fromkeys(p.name for p in self.run_phases() if p.open))

    def run_phases(self) -> list[Phase]:
        return [p for p in self.phases if p.scope == "run"]

    def phase_seconds(self) -> dict[str, float]:
        """Run-level seconds per phase name (details summed), without `total`."""
        out: dict[str, float] = defaultdict(float)
        for p in self.run_phases():
            if p.seconds is not None and p.name != "total":
                out[p.name] += p.seconds
        return dict(out)

    def milestone(self, name: str) -> Milestone | None:
        return next((m for m in self.milestones if m.name == name), None)

    def as_contract(self) -> dict[str, Any]:
        total = self.total_seconds
        return {
            "source": self.source, "run_index": self.run_index, "engine": self.engine, "outcome": self.outcome,
            "first_ts": self.first_ts.iso if self.first_ts else None,
            "ready_ts": self.ready_ts.iso if self.ready_ts else None,
            "total_seconds": None if total is None else round(total, 3),
            "config": self.config,
            "milestones": [m.as_contract() for m in self.milestones],
            "phases": [p.as_contract() for p in self.phases],
            "crash": self.crash.as_contract() if self.crash else None,
            # additions beyond the contract's required keys
            "last_ts": self.last_ts.iso if self.last_ts else None,
            "lines": [self.first_line, self.last_line],
            "stopped_in": self.stopped_in,
            "ready_kind": self.ready_kind,
            "ready_evidence": self.ready_evidence,
            "ranks": self.ranks,
            "config_inferred": self.config_inferred,
            "config_complete": self.config_complete,
            "engine_timings": self.engine_timings,
            "date_source": self.date_source,
            "unattributed_seconds": round(sum(p.seconds or 0 for p in self.run_phases() if p.name == "unattributed"), 3),
            "warnings": self.warnings,
            "begins_mid_startup": self.begins_mid_startup,
            "end_ts": self.end_ts.iso if self.end_ts else None,
            "seconds_to_end": None if self.seconds_to_end is None else round(self.seconds_to_end, 3),
            "lower_bound": self.lower_bound,
            "open_phases": self.open_phases(),
            "silence_threshold_seconds": None if self.silence_threshold is None else round(self.silence_threshold, 3),
            "silences": [x.as_contract(self.first_ts) for x in self.silences],
            "caches": {kind: v.as_contract() for kind, v in self.caches.items()},
            "unknown_lines": [u.as_contract() for u in self.unknown],
            "launch": (self.launch.as_contract(self.launch_to_ready, self.launch_to_end) if self.launch is not None
                       else None),
            "cache_keys": self.cache_keys,
        }


# --- splitting a source into runs --------------------------------------------------------


def split_runs(events: Sequence[Event], fmt: Format) -> list[list[Event]]:
    """Cut the event stream where a new startup begins."""
    vocab = fmt.vocab
    milestones, fatal, restarts = vocab.milestones, vocab.fatal, vocab.watch_on
    segments: list[list[Event]] = [[]]
    ended = False
    substantive = False
    dist_ranks: set[str | None] = set()
    cut_line = 0  # the line the current segment was cut at
    for event in events:
        if event.name == CLOCK_OUTER_FIRST and event.line < cut_line:
            continue  # the collector-stamped start of the run before, which never showed its own clock
        # Ray's "[repeated Nx across cluster]" summarises lines already printed: never a restart.
        starts = None if event.fields.get("repeated") else event.fields.get("starts_run")
        # A rank that starts distributed init again after the run ended is a new process.
        begins_after_end = starts == "after_end" or (
            event.name in restarts and ended and event.rank in dist_ranks
            and not event.fields.get("repeated"))
        if substantive and (starts == "always" or (begins_after_end and ended)):
            current = segments[-1]
            carried: list[Event] = []
            while current and current[-1].name == CLOCK_FIRST and current[-1].line == event.line:
                carried.insert(0, current.pop())
            segments.append(carried)
            cut_line = event.line
            ended = False
            substantive = False
            dist_ranks = set()
        segments[-1].append(event)
        if event.name in restarts:
            dist_ranks.add(event.rank)
        if event.name in milestones or event.name in fatal:
            substantive = True  # a banner or a warning alone does not make a startup
        if event.name == READY or event.name in fatal:
            ended = True
    return [s for s in segments if any(e.name not in CLOCK_EVENTS for e in s)]


# --- telling engines apart ---------------------------------------------------------------


# Whose engine a line is, when one log holds several: (process id, None) for a launcher's
# process tag, (None, tag) for a wrapper's source tag (`Event.wrapper`).
EngineKey = tuple[int | None, str | None]


@dataclass(frozen=True)
class Engines:
    """The engines one source holds: the events of each, and whose every line is.

    A launcher that runs several engines in one job (Ray, as verl and other RL trainers use
    it) prints all their lines in one log, each behind the tag of the process that printed
    it (`(WorkerDict pid=26107) `). Each engine numbers its ranks from TP0, so the same
    rank under two process tags is two engines, and each such process is an engine of its
    own. A harness that re-logs several servers behind its own prefix tags each line with
    its server (`[worker_0]`, `Event.wrapper`): the same milestone of the same rank under two
    such tags is two servers. Lines of other processes, or without a tag, belong to the
    engine whose line came last before them (the first engine before any): a launcher's own
    lines, the job's start, other workers' notices.
    """

    events: list[list[Event]]
    keys: list[EngineKey | None]  # the source of each engine (None: one engine, not told apart)
    owners: list[tuple[int, int]]  # (line, engine) of the lines the engines' processes printed

    def owner(self, line: int) -> int:
        """The engine that a line with no process of an engine belongs to (see above)."""
        at = bisect.bisect_right(self.owners, (line, len(self.keys))) - 1
        return self.owners[at][1] if at >= 0 else 0

    def note(self, k: int) -> str:
        """What a run of engine `k` says of the others (several engines only)."""
        wrapped = any(key is not None and key[1] is not None for key in self.keys)
        names = [f"[{key[1]}]" if wrapped else str(key[0]) for key in self.keys if key is not None]
        told = "the tags of the wrapper in front of their lines" if wrapped else "their process tags"
        mine, others = names[k], ", ".join(n for j, n in enumerate(names) if j != k)
        if not wrapped:
            mine, others = f"pid {mine}", f"pid {others}"
        return (f"this log holds {len(self.keys)} engines told apart by {told}: this run is the one of {mine} "
                f"(the others: {others})")


def split_engines(events: Sequence[Event], fmt: Format) -> Engines:
    """The engines of a source (`Engines`): one, unless two sources print the same rank.

    A wrapper's tag counts when two tags print the same milestone on the same rank (a rank
    tag or none). A process tag counts when the format does not read it as one of its own
    processes (a launcher's, such as Ray's actor tag: an engine's own `(EngineCore_DP1 pid=N)`
    is a rank of one engine), by the ranks of the lines the process printed itself: Ray's
    "[repeated Nx across cluster]" summarises lines of several processes under the tag of one
    of them.
    """
    milestones = fmt.vocab.milestones
    marks_of: dict[EngineKey, set[tuple[str, str | None]]] = {}
    ranks_of: dict[EngineKey, set[str]] = {}
    for event in events:
        if event.fields.get("repeated") or event.name in CLOCK_EVENTS:
            continue
        if event.wrapper is not None:
            if event.name in milestones:
                marks_of.setdefault((None, event.wrapper), set()).add((event.name, event.rank))
        elif (event.pid is not None and event.rank is not None
              and fmt.rank_from_proc(event.proc, event.pid) is None):
            ranks_of.setdefault((event.pid, None), set()).add(event.rank)
    for found in (marks_of, ranks_of):
        if _shared(found):
            return _split_by(events, list(found))
    return Engines([list(events)], [None], [])


def _shared(found: Mapping[EngineKey, set[Any]]) -> bool:
    """Whether two sources have something in common (the same rank, the same milestone)."""
    seen: set[Any] = set()
    for items in found.values():
        if seen & items:
            return True
        seen |= items
    return False


def _source_key(event: Event) -> EngineKey | None:
    if event.wrapper is not None:
        return (None, event.wrapper)
    return (event.pid, None) if event.pid is not None else None


def _split_by(events: Sequence[Event], keys: list[EngineKey]) -> Engines:
    """The events of each source of `keys` (in the order of their first telling line), and the
    others with the engine whose line came last before them."""
    index = {key: k for k, key in enumerate(keys)}
    split: list[list[Event]] = [[] for _ in keys]
    owners: list[tuple[int, int]] = []
    current = 0
    for event in events:
        key = _source_key(event)
        k = index.get(key) if key is not None else None
        if k is not None:
            current = k
            if not owners or owners[-1] != (event.line, k):
                owners.append((event.line, k))
        split[current].append(event)
    return Engines(split, list(keys), owners)


# --- building one run --------------------------------------------------------------------


def _model_of(event: Event, counts: dict[tuple[str | None, str], int], loads: dict[str | None, int],
              draft_types: re.Pattern[str] | None, vocab: Vocabulary) -> str:
    """'target' or 'draft' for a per-model event on its rank."""
    explicit = event.fields.get("model")
    if explicit in ("target", "draft"):
        return str(explicit)
    rank = event.rank
    name = event.name
    if event.fields.get("repeated"):
        # Ray's "[repeated Nx across cluster]" restates what other processes (often other
        # engines, whose ranks have the same names) printed: never this rank's second model
        return "target"
    if name in vocab.per_model_repeat:
        key = (rank, name)
        counts[key] = counts.get(key, 0) + 1
        if name == LOAD_WEIGHT_BEGIN:
            loads[rank] = counts[key]
        if (name == LOAD_WEIGHT_END and draft_types is not None
                and draft_types.search(str(event.fields.get("model_type", "")))):
            return "draft"
        if name == LOAD_WEIGHT_END and loads.get(rank):
            return "draft" if loads[rank] >= 2 else "target"
        return "draft" if counts[key] >= 2 else "target"
    if name in vocab.per_model_load:
        return "draft" if loads.get(rank, 0) >= 2 else "target"
    return "target"


def build_run(events: Sequence[Event], source: str, run_index: int, fmt: Format,
              date_source: str | None = None, config_defaults: Mapping[str, Any] | None = None,
              gaps: Sequence[Gap] = (), unmatched: Sequence[Unmatched] = ()) -> Run:
    """One run of `fmt`'s engine; `config_defaults` (else the format's) fill flags a launch
    command leaves out. `gaps` and `unmatched`: what the reader recorded of this run's lines
    (`LineStats`), for its silences and unknown lines."""
    run = Run(source=source, run_index=run_index, engine=fmt.name, date_source=date_source)
    lines = [e.line for e in events if e.name != CLOCK_OUTER_FIRST]
    run.first_line, run.last_line = (min(lines), max(lines)) if lines else (None, None)

    firsts = [e.ts for e in events if e.name == CLOCK_FIRST and e.ts]
    lasts = [e.ts for e in events if e.name == CLOCK_LAST and e.ts]
    own_time = own_time_headers(fmt)
    stamped = [e.ts for e in events if e.ts is not None and e.name not in CLOCK_EVENTS
               and (e.name != ACCESS or access_time_counts(e, own_time))]
    run.first_ts = firsts[0] if firsts else (min(stamped) if stamped else None)
    early = _collector_start(events, firsts[0]) if firsts else None
    if early is not None and early.ts is not None:
        run.first_ts = early.ts
        run.first_line = early.line if run.first_line is None else min(run.first_line, early.line)
    candidates = lasts + stamped
    run.last_ts = max(candidates) if candidates else None

    _read_config(run, events, fmt.config_defaults if config_defaults is None else config_defaults, fmt)
    _note_dropped(run, events)
    _collect_milestones(run, events, fmt)
    _decide_outcome(run, events, fmt)
    _build_phases(run, events, fmt)
    _note_late_start(run)
    _note_excerpt(run, events, fmt)
    _infer_config(run, events, fmt, unmatched)
    run.ranks = sorted({m.rank for m in run.milestones if m.rank}, key=_rank_sort_key)
    keyed = fmt.vocab.cache_keys
    run.cache_keys = {keyed[e.name]: str(e.fields["cache_key"]) for e in events
                      if e.name in keyed and e.fields.get("cache_key")}
    explain(run, events, gaps, unmatched, fmt)
    return run


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
    if first.key == SERVER_ARGS or first.key in fmt.vocab.opens_runner or first.key in fmt.runner_opens:
        return
    run.begins_mid_startup = True
    where = f" (its first milestone is {first.key}, at line {first.line})"
    run.warnings.append(f"the log is an excerpt: it begins mid-startup{where}, so only the durations its lines "
                        "report are known and the time to its end is a lower bound")


def _rank_sort_key(rank: str) -> tuple[Any, ...]:
    return tuple((tag.rstrip("0123456789"), int(re.sub(r"\D", "", tag) or 0)) for tag in rank.split())


def _read_config(run: Run, events: Sequence[Event], defaults: Mapping[str, Any], fmt: Format) -> None:
    """Flags from the args dump; else from an echoed launch command (plus the defaults it implies)."""
    stated: dict[str, Any] = {}
    defaults_line: int | None = None  # an args line that lists only the non-default flags
    for event in events:
        from_line = event.fields.get("config_stated")
        if isinstance(from_line, dict):  # a milestone line that also states flags (engine config, version)
            for key, value in from_line.items():
                stated.setdefault(key, value)
        if event.name == SERVER_ARGS and not run.all_config:
            text = str(event.fields.get("args", ""))
            if fmt.read_args is not None:
                dump = fmt.read_args(text)
                fields, complete = dump.fields, dump.complete
                if dump.only_non_defaults:
                    defaults_line = event.line
            else:
                fields, complete = read_server_args(text)
            run.all_config = fields
            run.config_complete = complete
            if not complete:
                run.warnings.append(f"line {event.line}: the args dump is cut short; flags after the cut are unknown")
        elif isinstance(event.fields.get("argv"), dict):  # an echoed launch command
            argv = event.fields["argv"]
            for key, value in argv.items():
                stated.setdefault(key, value)
            for key, value in defaults.items():
                if key not in argv and key not in stated:
                    stated[key] = value
                    run.config_inferred[key] = f"default: the launch command on line {event.line} does not set it"
        elif event.name == CONFIG_STATED:
            for key, value in event.fields.items():
                if key not in ("level", "starts_run", "repeated"):
                    stated.setdefault(key, value)
    if run.all_config:
        for key in list(run.config_inferred):
            if key in run.all_config:
                del run.config_inferred[key]
    for key, value in stated.items():
        run.all_config.setdefault(key, value)
    if defaults_line is not None:
        for key, value in defaults.items():
            if run.all_config.get(key) is None:
                run.all_config[key] = value
                run.config_inferred[key] = f"default: the args line {defaults_line} lists only non-default flags"
    dropped = checked_flags(run.all_config)
    if dropped:
        run.warnings.append(_dropped_note("flag values", dropped, "not finite, beyond 64 bits or, for a count, not whole"))
    if fmt.derive_config is not None:
        fmt.derive_config(run.all_config, run.config_inferred)
    config = {flag: run.all_config.get(flag) for flag in COMMON_FLAGS}
    for key, value in run.all_config.items():
        config.setdefault(key, value)
    run.config = config


DROPPED_SHOWN = 5  # values named in a note on values dropped; the rest are counted


def _dropped_note(what: str, items: Sequence[str], why: str) -> str:
    named = ", ".join(items[:DROPPED_SHOWN]) + (f" and {len(items) - DROPPED_SHOWN} more" if len(items) > DROPPED_SHOWN else "")
    return f"{what} ignored ({why}): {named}"


def _note_dropped(run: Run, events: Sequence[Event]) -> None:
    """One note for the numbers the lines of this run held that were refused where they were
    read (`formats.base.convert_field`: not finite, too big, not ASCII digits, a port out of range)."""
    items = [f"line {e.line}: {item}" for e in events for item in e.fields.get(DROPPED, ())]
    if items:
        run.warnings.append(_dropped_note("values read from the log", items,
                                          "a number not finite, too big or not in ASCII digits, or a port out of range"))


def _collect_milestones(run: Run, events: Sequence[Event], fmt: Format) -> None:
    counts: dict[tuple[str | None, str], int] = {}
    loads: dict[str | None, int] = {}
    ready_line = next((e.line for e in events if e.name == READY), None)
    seen_access = seen_health = seen_request = False
    draft_by_repeat = fmt.draft_by_repeat
    draft_types = re.compile(fmt.draft_model_types) if fmt.draft_model_types else None
    vocab = fmt.vocab
    milestones, per_model, draft_only, draft_twin = (vocab.milestones, vocab.per_model, vocab.draft_only,
                                                     vocab.draft_twin)
    crashy, if_stuck, if_bare = vocab.fatal, vocab.fatal_if_stuck, vocab.fatal_if_bare
    # Begins still open per (rank, name) -> the line that opened them: an engine that names no
    # draft by repeats may announce one begin with two different lines (the 0.9-0.11 runner's
    # "Starting to load model" then "Loading model from scratch"); the second is no new milestone.
    open_begins: dict[tuple[str | None, str], str] = {}
    for event in events:
        name = event.name
        model: str | None = None
        if not draft_by_repeat and name.endswith(".begin"):
            opened = open_begins.get((event.rank, name))
            if opened is not None and opened != event.text:
                continue
            open_begins[(event.rank, name)] = event.text
        elif not draft_by_repeat and name.endswith(".end"):
            open_begins.pop((event.rank, name[:-len(".end")] + ".begin"), None)
        if name in per_model:
            # an engine whose repeats are the same model on another process names no draft by count
            model = _model_of(event, counts, loads, draft_types, vocab) if draft_by_repeat else "target"
            if model == "draft" and name in draft_twin:
                name = draft_twin[name]
            event.fields["_model"] = model
        elif name in draft_only:
            model = event.fields["_model"] = "draft"
        if name == ACCESS:
            path = str(event.fields.get("path", ""))
            if not seen_access:
                run.milestones.append(Milestone(HTTP_FIRST_REQUEST, event.ts, event.rank, event.line, event.fields, event.text))
                seen_access = True
            if not seen_health and path.startswith("/health"):
                run.milestones.append(Milestone(HEALTH_FIRST, event.ts, event.rank, event.line, event.fields, event.text))
                seen_health = True
            if (not seen_request and ready_line is not None and event.line > ready_line
                    and not path.startswith(PROBE_PATHS)):
                run.milestones.append(Milestone(REQUEST_FIRST, event.ts, event.rank, event.line, event.fields, event.text))
                seen_request = True
            continue
        if name in crashy or name in if_stuck or (name in if_bare and event.header == "bare"):
            # Kept only if the run turns out to have crashed (see _decide_outcome).
            run.milestones.append(Milestone(CRASH, event.ts, event.rank, event.line, event.fields, event.text))
            continue
        if name in milestones:
            run.milestones.append(Milestone(name, event.ts, event.rank, event.line, event.fields, event.text, model))
            if name == ENGINE_TIMINGS:
                run.engine_timings = event.fields.get("timings")
            if name == HTTP_RUNNING and event.fields.get("url"):
                run.health_url = str(event.fields["url"])
    run.milestones.sort(key=lambda m: m.line)


StageRules = tuple[Mapping[str, str], Mapping[str, tuple[str, Any, str]]]


def _stage_rules(fmt: Format | None) -> StageRules:
    """The shared stage table with the format's entries over it (None: the shared one only)."""
    if fmt is None:
        return _STAGE_AFTER, _STAGE_SKIPS
    return {**_STAGE_AFTER, **fmt.stage_after}, fmt.stage_skips or _STAGE_SKIPS


def next_stage(run: Run, stage: str | None, m: Milestone, rules: StageRules | None = None,
               fmt: Format | None = None) -> str | None:
    """The stage `run` is in right after milestone `m`, given the stage before it.

    One function for the batch view (where a crash or a cut-off log is placed) and the
    live view (`firedup wait`), so both name the same phase for the same lines.
    """
    table, skips = rules or _stage_rules(fmt or format_of(run))
    nxt = m.fields.get("next_stage") or table.get(m.key)
    if nxt is None:
        return stage
    skip = skips.get(nxt)
    # a stage the config turned off (no graphs, no compile) is skipped, unless it visibly began
    if skip is not None and not m.key.endswith(".begin") and run.config.get(skip[0]) == skip[1]:
        nxt = skip[2]
    return str(nxt)


def stage_changes(run: Run, fmt: Format | None = None) -> list[tuple[str | None, Milestone | None]]:
    """Every change of stage in line order, with the milestone that caused it (None: the start).
    `fmt`: the format the run was read with (else the registry's format of its engine)."""
    rules = _stage_rules(fmt or format_of(run))
    changes: list[tuple[str | None, Milestone | None]] = [("launch", None)]
    stage: str | None = "launch"
    for m in run.milestones:
        new = next_stage(run, stage, m, rules)
        if new != stage:
            changes.append((new, m))
            stage = new
    return changes


def _stage_at(run: Run, line: int, fmt: Format) -> str | None:
    """The phase the run was in at `line`: the stage after the last milestone before it."""
    rules = _stage_rules(fmt)
    stage: str | None = "launch"
    for m in run.milestones:
        if m.line > line:
            break
        stage = next_stage(run, stage, m, rules)
    return stage


def _engine_only(events: Sequence[Event], fmt: Format) -> bool:
    """bench_one_batch / offline Engine: a model runner with no HTTP server to wait for."""
    if any(e.name.startswith(HTTP_PREFIX) or e.name == READY for e in events):
        return False
    offline = fmt.vocab.offline
    if any(e.name in offline for e in events):
        return True
    args = next((e for e in events if e.name == SERVER_ARGS), None)
    if args is not None:
        return args.header in fmt.offline_headers  # an offline engine's own log layout
    if fmt.offline_ready is not None:
        # no args line and no server banner: an engine used as a library
        return (any(e.name == fmt.offline_ready for e in events)
                and not any(e.name == RUN_BANNER for e in events))
    # bench prints its summary with print(), so the line has no header at all
    return any(e.name == SCHEDULER_READY and e.header == "bare" for e in events)


def _decide_outcome(run: Run, events: Sequence[Event], fmt: Format) -> None:
    ready = run.milestone(READY)
    failed_http = next((e for e in events if e.name == HTTP_STARTUP_FAILED), None)
    ready_line: int | None = None
    if ready is not None and (failed_http is None or failed_http.line > ready.line):
        run.outcome, run.ready_ts, run.ready_kind = "ready", ready.ts, "server"
        ready_line = ready.line
    elif _engine_only(events, fmt):
        engine_ready = [m for m in run.milestones if m.name in (SCHEDULER_READY, fmt.offline_ready)]
        if engine_ready:
            # The engine initialised, but nothing in this log serves (an offline engine, a
            # benchmark, a disaggregated worker another process serves): not "ready".
            last = engine_ready[-1]
            run.ready_kind, run.engine_ready_ts = "engine", last.ts
            run.ready_evidence = f"line {last.line}: the engine's own ready line; no server in this log"
            ready_line = last.line
    if run.outcome != "ready" and failed_http is None:
        probe = _health_ready(events, fmt)
        if probe is not None:
            run.outcome, run.ready_ts, run.ready_kind = "ready", probe.ts, "health"
            ready_line = probe.line
            run.ready_evidence = (f"line {probe.line}: `{probe.fields.get('method', 'GET')} {probe.fields.get('path')}` "
                                  f"answered {probe.fields.get('status')}")
            run.warnings.append(f"no ready line: ready from the health endpoint ({run.ready_evidence})")
    crash = _find_crash(run, events, ready_line, fmt)
    if crash is not None:
        if ready_line is not None and crash.line > ready_line:
            crash.after_ready = True
        elif run.outcome != "ready" or crash.line < (ready_line or 0):
            if run.ready_kind == "engine":
                run.engine_ready_ts = run.ready_evidence = None
            run.outcome, run.ready_ts, run.ready_kind = "crashed", None, None
        if crash.ts is not None and run.first_ts is not None:
            crash.offset = max(0.0, crash.ts.minus(run.first_ts))
        run.crash = crash
    if run.outcome == "incomplete":
        run.stopped_in = _stage_at(run, run.last_line or 0, fmt)
    # The contract's crash milestone: the first line of each fatal error.
    if run.crash is None:
        run.milestones = [m for m in run.milestones if m.name != CRASH]


def _health_ready(events: Sequence[Event], fmt: Format) -> Event | None:
    """The first access line where the health endpoint (or an alias) answered its ready
    status, when that status proves readiness: no version of the engine answers it while
    starting, or this log shows the endpoint answering its starting status first."""
    health = fmt.health
    if health is None:
        return None
    paths = {health.endpoint, *(r.path for r in health.routes if r.health_alias)}
    versions = (health, *(semantics for _, semantics in health.older))
    ambiguous = any(s.starting == str(s.ready_status) for s in versions)
    saw_starting = False
    for event in events:
        if event.name != ACCESS or str(event.fields.get("path", "")).split("?", 1)[0] not in paths:
            continue
        status = event.fields.get("status")
        if status == health.ready_status and (not ambiguous or saw_starting):
            return event
        if health.starting != REFUSED and str(status) == health.starting:
            saw_starting = True
    return None


def _fatal_index(events: Sequence[Event], ready_line: int | None, fmt: Format) -> int | None:
    vocab = fmt.vocab
    milestones = vocab.milestones
    for i, event in enumerate(events):
        if event.name == HTTP_SHUTDOWN and ready_line is not None and event.line > ready_line:
            return None  # asked to stop once ready: what dies after that is the shutdown, not a crash
        if event.name in vocab.fatal:
            return i
        stuck = event.name in vocab.fatal_if_stuck or (event.name in vocab.fatal_if_bare and event.header == "bare")
        if (stuck and (ready_line is None or event.line < ready_line)
                and not any(e.name in milestones for e in events[i + 1:])):
            return i  # the startup made no progress after this error
    return None


def _traceback_of(events: Sequence[Event], index: int) -> tuple[list[Event], list[Event]]:
    """The events of the fatal error at `index`: its traceback (to the exception that ends it,
    chained tracebacks included) and what follows it (the error's aftermath).

    A log cut to its tail can start inside the traceback; then the frames and the exception
    just before the fatal line are its traceback.
    """
    first = events[index]
    traceback: list[Event] = [first]
    rest = events[index + 1: index + 400]
    end = len(rest)
    seen_exception = ended = is_exception_line(first.text)
    last = first
    for i, event in enumerate(rest):
        # "During handling of the above exception, another exception occurred:" prints a new
        # bare traceback from the same process; another process's traceback is not the chain.
        chained = event.name == ERROR_TRACEBACK and event.header == "bare" and event.proc == last.proc
        if ended and not chained:
            end = i
            break
        traceback.append(event)
        if is_exception_line(event.text):
            ended, last = True, event
        elif chained:
            ended = False
        seen_exception = seen_exception or ended
    if not seen_exception:
        before: list[Event] = []
        for event in reversed(events[:index]):
            if event.name in CLOCK_EVENTS:
                continue
            if event.header != "bare" or not event.name.startswith(ERROR_PREFIX):
                break
            before.insert(0, event)
        if any(is_exception_line(e.text) for e in before):
            return [*before, first], list(rest)
    return traceback, list(rest[end:])


def _stage_from_frames(traceback: Sequence[Event], stage: str | None, fmt: Format) -> str | None:
    """The phase the traceback's deepest recognised frame belongs to (`Format.frame_stages`), else `stage`."""
    for event in reversed(traceback):
        if event.name != ERROR_FRAME:
            continue
        for phase, pattern in fmt.frame_stages:
            if re.search(pattern, event.text):
                return (DRAFT_PREFIX + phase) if stage and stage.startswith(DRAFT_PREFIX) else phase
    return stage


def _find_crash(run: Run, events: Sequence[Event], ready_line: int | None, fmt: Format) -> Crash | None:
    """The first fatal error, its message (the exception's last line) and its category."""
    index = _fatal_index(events, ready_line, fmt)
    if index is None:
        return None
    first = events[index]
    traceback, aftermath = _traceback_of(events, index)
    exceptions = [e.text for e in traceback if is_exception_line(e.text)]
    if "\n" in first.text:  # a record that carries its own traceback (JSON log records)
        exceptions += [ln.strip() for ln in first.text.splitlines() if is_exception_line(ln)]
    message = exceptions[-1] if exceptions else first.text
    stage = _stage_from_frames(traceback, _stage_at(run, first.line, fmt), fmt)
    diagnosis = diagnose_error(message, first.text, [e.text for e in traceback],
                               [e.text for e in aftermath if e.name.startswith(ERROR_PREFIX)], stage,
                               has_exception=bool(exceptions), warmup=first.name in fmt.vocab.warmup_failed,
                               fmt=fmt, flags=run.all_config)
    ts = _crash_time(first, traceback, aftermath, fmt.vocab.milestones)
    first_text = first.text.strip().splitlines()[0] if first.text.strip() else ""
    return Crash(diagnosis.category, ts, first.line, message.strip(), stage, diagnosis.hint, first_text)


def _crash_time(first: Event, traceback: Sequence[Event], aftermath: Sequence[Event],
                milestones: frozenset[str]) -> Stamp | None:
    """The crash's own time: its first line's stamp, or, when that line has none of its own (a
    bare `Traceback` borrows the last stamp before it, often seconds earlier), the first
    stamped line of the same error: its traceback, then the error lines after it up to the
    next milestone. The borrowed time only when none of them has a stamp."""
    if first.ts is not None and not first.inherited:
        return first.ts
    after: list[Event] = []
    for event in aftermath:
        if event.name in milestones:
            break
        if event.name.startswith(ERROR_PREFIX):
            after.append(event)
    own = next((e.ts for e in (*traceback, *after) if e.ts is not None and not e.inherited), None)
    return own or first.ts or next((e.ts for e in (*traceback, *aftermath) if e.ts is not None), None)


def _build_phases(run: Run, events: Sequence[Event], fmt: Format) -> None:
    ms = run.milestones
    phases: list[Phase] = []
    by_rank: dict[str | None, list[Milestone]] = defaultdict(list)
    for m in ms:
        by_rank[m.rank].append(m)

    took = [e for e in events if e.name == LOAD_WEIGHT_TOOK]
    # A phase still open when the run crashed lasted until the crash, not zero seconds.
    cutoff = run.crash.ts if run.outcome == "crashed" and run.crash is not None else None
    stage_table, _ = _stage_rules(fmt)
    for rank, rms in by_rank.items():
        phases.extend(_rank_phases(rank, rms, took, stage_table, fmt.reported_phases, cutoff))
        phases.extend(_timestamp_phases(rank, rms, fmt.timestamp_phases))
    phases.extend(_run_level(run, phases, fmt))
    run.phases = phases


def _rank_phases(rank: str | None, rms: list[Milestone], took: Sequence[Event], stage_table: Mapping[str, str],
                 reported: Mapping[str, str], cutoff: Stamp | None = None) -> list[Phase]:
    out: list[Phase] = []
    for model_prefix in ("", DRAFT_PREFIX):
        for name, begin_name, end_name in PAIRED_PHASES:
            bname, ename = model_prefix + begin_name, model_prefix + end_name
            open_begins: dict[str | None, list[Milestone]] = defaultdict(list)
            for m in rms:
                detail = m.fields.get("detail")
                if m.key == bname:
                    open_begins[detail].append(m)
                elif m.key == ename:
                    queue = open_begins.get(detail) or (open_begins.get(None) if detail else None)
                    begin = queue.pop(0) if queue else None
                    out.append(_paired(model_prefix + name, rank, begin, m, detail))
            for detail, queue in open_begins.items():
                for begin in queue:
                    nxt = next((m for m in rms if m.line > begin.line and m.key in stage_table
                                and m.key != bname), None)
                    end = nxt.ts if nxt else cutoff
                    out.append(Phase(model_prefix + name, rank, begin.ts, end,
                                     end.minus(begin.ts) if end and begin.ts else None,
                                     "timestamps", detail=detail, line=nxt.line if nxt else begin.line,
                                     open=nxt is None))
        # kv_cache: from the milestone before the pool's end to the pool's end.
        for m in rms:
            if m.key != model_prefix + MEMORY_POOL_END:
                continue
            before = [p for p in rms if p.line < m.line and p.key not in (KV_CACHE_ALLOCATED, DRAFT_KV_CACHE_ALLOCATED)]
            prev = before[-1] if before else None
            if prev is None or prev.ts is None or m.ts is None:
                continue
            out.append(Phase(model_prefix + "kv_cache", rank, prev.ts, m.ts, m.ts.minus(prev.ts), "timestamps",
                             line=m.line))
    for m in rms:
        secs = m.fields.get("elapsed_s")
        if m.name in reported and isinstance(secs, (int, float)) and m.ts is not None:
            out.append(Phase(reported[m.name], rank, m.ts.plus(-float(secs)), m.ts, float(secs), "reported",
                             line=m.line))
    # A weight load with its duration on a separate line ("Loading weights took X seconds").
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
    return out


def _timestamp_phases(rank: str | None, rms: Sequence[Milestone],
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


def _run_level(run: Run, rank_phases: Sequence[Phase], fmt: Format) -> list[Phase]:
    """The critical path: per phase (and detail), the slowest rank; then the gaps."""
    groups: dict[tuple[str, str | None], list[Phase]] = defaultdict(list)
    for p in rank_phases:
        groups[(p.name, p.detail)].append(p)
    out: list[Phase] = []
    for (name, detail), ps in groups.items():
        timed = [p for p in ps if p.seconds is not None]
        worst = max(timed, key=lambda p: p.seconds or 0.0) if timed else ps[0]
        starts = [p.start for p in ps if p.start is not None]
        ends = [p.end for p in ps if p.end is not None]
        arrived = [p for p in timed if p.start is not None and p.end is not None]
        if name in NO_STRAGGLERS and len(arrived) >= 2:
            # a barrier: the run waits for the last rank to arrive, not for the rank that waited longest
            last = max(arrived, key=lambda p: (p.start, p.line))
            assert last.start is not None and last.end is not None
            barrier_end = max(p.end for p in arrived if p.end is not None)
            out.append(Phase(name, None, last.start, barrier_end, max(0.0, barrier_end.minus(last.start)), last.source,
                             scope="run", detail=detail, line=last.line, open=any(p.open for p in ps)))
            continue
        out.append(Phase(name, None, min(starts) if starts else None, max(ends) if ends else None,
                         worst.seconds, worst.source, scope="run", detail=detail, line=worst.line,
                         open=any(p.open for p in ps)))

    ms = run.milestones
    # the model runner's lines (`Kind.runner`; the draft's too, and the format's own milestones)
    vocab = fmt.vocab
    runner = vocab.runner
    first_sched = next((m for m in ms if m.key in runner), None)
    # Launch is only seen when the log shows the process start (args) or the first
    # scheduler line opens a phase; an excerpt that begins later never saw it.
    saw_start = run.milestone(SERVER_ARGS) is not None or (
        first_sched is not None and (first_sched.key in vocab.opens_runner or first_sched.key in fmt.runner_opens))
    if (run.first_ts is not None and first_sched is not None and first_sched.ts is not None and saw_start
            and first_sched.line > (run.first_line or 0)):
        out.append(_span("launch", run.first_ts, first_sched.ts, first_sched.line))
    sched_end_names = set(vocab.runner_last)
    if fmt.offline_ready is not None:
        sched_end_names.add(fmt.offline_ready)
    http = next((m for m in ms if m.name == HTTP_RUNNING), None) or next(
        (m for m in ms if m.name == HTTP_STARTED), None)
    sched_done = [m for m in ms if m.key in sched_end_names and (http is None or m.line < http.line)]
    if http is not None and http.ts is not None and sched_done and sched_done[-1].ts is not None:
        out.append(_span("http_start", sched_done[-1].ts, http.ts, http.line))
    ready = run.milestone(READY)
    after_http = fmt.after_http_phase
    if http is not None and http.ts is not None and ready is not None and ready.ts is not None \
            and run.ready_kind == "server":
        started = next((p for p in out if p.name == after_http and p.scope == "run"), None)
        if started is not None and started.end is not None and started.start is not None:
            # the same phase goes on to ready (routes, the HTTP server starting): one span, not two
            started.end, started.line = max(started.end, ready.ts), ready.line
            started.seconds = max(0.0, started.end.minus(started.start))
        else:
            out.append(_span(after_http, http.ts, ready.ts, ready.line))
    crash = run.crash
    if (http is not None and http.ts is not None and run.outcome == "crashed" and crash is not None
            and crash.phase == after_http and crash.ts is not None and crash.line is not None
            and crash.line > http.line and not any(p.name == after_http for p in out)):
        # the phase the crash names ran from the HTTP server's start to the crash (a failed warm-up)
        out.append(_span(after_http, http.ts, crash.ts, crash.line))
    # the run's end as every view states it (`Run.end_ts`: ready, the crash, else the last line):
    # the crash's traceback and the other ranks shutting down are no phase of the start-up
    end = run.end_ts
    if run.first_ts is not None and end is not None:
        out.extend(_gaps(run.first_ts, end, out))
        out.append(Phase("total", None, run.first_ts, end, max(0.0, end.minus(run.first_ts)), "timestamps",
                         scope="run", line=_end_line(run, ready)))
    return out


def _end_line(run: Run, ready: Milestone | None) -> int | None:
    """The line of `Run.end_ts`: the ready line, the crash's first line, else the log's last."""
    if ready is not None and run.ready_kind == "server":
        return ready.line
    crash = run.crash
    if run.outcome == "crashed" and crash is not None and crash.ts is not None:
        return crash.line
    return run.last_line


def _span(name: str, start: Stamp, end: Stamp, line: int) -> Phase:
    return Phase(name, None, start, end, max(0.0, end.minus(start)), "timestamps", scope="run", line=line)


def _gaps(first: Stamp, end: Stamp, phases: Iterable[Phase]) -> list[Phase]:
    """Stretches of [first, end] that no run-level phase covers."""
    intervals = sorted((p.start, p.end) for p in phases if p.start is not None and p.end is not None
                       and p.name != "total")
    gaps: list[Phase] = []
    cursor = first
    for start, stop in intervals:
        if start > cursor and start <= end:
            gaps.append(Phase("unattributed", None, cursor, start, start.minus(cursor), "timestamps", scope="run"))
        if stop > cursor:
            cursor = stop
    if end > cursor:
        gaps.append(Phase("unattributed", None, cursor, end, end.minus(cursor), "timestamps", scope="run"))
    return [g for g in gaps if (g.seconds or 0) > 0]


def _every_rank_era(run: Run, events: Sequence[Event], fmt: Format) -> bool:
    """True when the scheduler finished in a log whose every rank prints every per-rank line.

    In the versions (and bench runs) of an engine that tags ranks only when parallel where
    every rank prints the scheduler's ready line, that line has no `available_gpu_mem`.
    """
    ready = [e for e in events if e.name == SCHEDULER_READY]
    if not ready:
        return False
    return _engine_only(events, fmt) or all("available_gpu_mem_gb" not in e.fields for e in ready)


# What `config_inferred` says a flag was read from, when no line states it.
RANK_TAGS = "inferred from rank tags"
GRAPH_CAPTURE = "inferred from graph capture"


def _tp_numbers(ranks: Iterable[str | None]) -> list[int]:
    """The tensor-parallel ranks among rank tags (`DP0 TP3` -> 3); "[gpu_id=N]" (the oldest
    versions) numbers them the same way."""
    return sorted({int(t[3:] if t.startswith("GPU") else t[2:]) for rank in ranks if rank for t in rank.split()
                   if (t[:2] == "TP" and t[2:].isdigit()) or (t[:3] == "GPU" and t[3:].isdigit())})


def _infer_config(run: Run, events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched] = ()) -> None:
    """Fill flags the log proves without stating them, and say what proved them. A flag any
    line states is never changed. Rank tags count on every line of the run, those no rule
    knows too (`unmatched`): an excerpt's ranks often show only there."""
    names = {m.name for m in run.milestones}
    for kind in fmt.vocab.implying:  # lines that prove flags (`Kind.implies`)
        if kind.name in names:
            for flag, value in kind.implies.items():
                if run.config.get(flag) is None:
                    run.config[flag] = value
                    run.config_inferred[flag] = kind.implies_why
    if run.config.get("tp_size") is None and not fmt.rank_tags_only_when_parallel:
        _infer_tp_from_processes(run, events, fmt, unmatched)
    if run.config.get("disable_cuda_graph") is None:
        traced = fmt.capture_trace is not None and any(
            e.name.startswith(ERROR_PREFIX) and re.search(fmt.capture_trace, e.text) for e in events)
        if any(e.name in fmt.vocab.graph_capture for e in events):
            run.config["disable_cuda_graph"] = False
            run.config_inferred["disable_cuda_graph"] = f"{GRAPH_CAPTURE}: the log shows a CUDA graph capture"
        elif traced:
            run.config["disable_cuda_graph"] = False
            run.config_inferred["disable_cuda_graph"] = f"{GRAPH_CAPTURE}: the crash happened inside CUDA graph capture"
        else:
            pool = next((m for m in run.milestones if m.key == MEMORY_POOL_END), None)
            after = fmt.vocab.past_capture
            if pool is not None and any(m.name in after and m.line > pool.line for m in run.milestones):
                run.config["disable_cuda_graph"] = True
                run.config_inferred["disable_cuda_graph"] = "the scheduler became ready without capturing a graph"
    if run.config.get("tp_size") is None and fmt.rank_tags_only_when_parallel:
        # Access lines (runtime traffic) do not count: compaction drops most of them; nor do
        # lines without a header or with another logger's clock.
        served = [e for e in events if e.name != ACCESS]
        skip = {"bare"} | {h.name for h in fmt.headers if h.clock == "foreign"}
        own = [e for e in served if e.header not in skip and e.ts is not None and not e.inherited]
        scheduler = fmt.vocab.scheduler
        sched = [e for e in own if e.name in scheduler]
        tps = _tp_numbers([*(e.rank for e in (own or served)), *(u.rank for u in unmatched if u.own or not own)])
        if sched and not tps and not any(e.rank for e in sched):
            run.config["tp_size"] = 1
            run.config_inferred["tp_size"] = (f"{RANK_TAGS}: scheduler lines carry no TP tag, which {fmt.display} "
                                              "prints only when tp_size > 1")
        elif len(tps) >= 2 and tps == list(range(len(tps))):
            run.config["tp_size"] = len(tps)
            run.config_inferred["tp_size"] = (f"{RANK_TAGS}: ranks TP0..TP{len(tps) - 1} print lines (on a "
                                              "multi-node run this counts this node's ranks only)")
        elif tps == [0] and _every_rank_era(run, events, fmt):
            run.config["tp_size"] = 1
            run.config_inferred["tp_size"] = (f"{RANK_TAGS}: only TP0 prints the per-rank lines of a complete "
                                              "startup, in a version where every rank prints them")


def _infer_tp_from_processes(run: Run, events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched] = ()) -> None:
    """tp_size from the processes that print per-rank lines, for engines whose lines always
    carry a process tag: ranks TP0..TPn-1, or n processes printing a line every rank prints."""
    tps = _tp_numbers([*(e.rank for e in events if e.name != ACCESS), *(u.rank for u in unmatched)])
    if len(tps) >= 2 and tps == list(range(len(tps))):
        run.config["tp_size"] = len(tps)
        run.config_inferred["tp_size"] = f"{RANK_TAGS}: processes of ranks TP0..TP{len(tps) - 1} print lines"
        return
    for name in fmt.every_rank_prints:
        # data-parallel engine cores (`DP1`) are replicas, not tensor-parallel ranks
        procs = {e.rank for e in events if e.name == name and not (e.rank or "").startswith("DP")}
        if len(procs) >= 2:
            run.config["tp_size"] = len(procs)
            run.config_inferred["tp_size"] = (f"{len(procs)} processes print {name!r}, which every rank prints "
                                              "(the world size: tensor x pipeline parallel)")
            return


def _engine_gaps(gaps: Sequence[Gap], process_gaps: Sequence[Gap], key: EngineKey | None) -> list[Gap]:
    """The silences of one engine among several: a time no line at all came is silent for it
    too (`gaps`, each kept by the engine whose line ended it), and so is a time its own
    source printed nothing while another engine did (`process_gaps` of its source), which
    holds the first where both end on the same line."""
    own = [g for g in process_gaps if (g.pid, g.wrapper) == key]
    ends = {g.line for g in own}
    return sorted([*own, *(g for g in gaps if g.line not in ends)], key=lambda g: (g.line, g.since_line))


def _by_run(items: Sequence[Any], starts: list[int], mine: Any) -> list[list[Any]]:
    """The items (gaps, unmatched lines: anything with a `line`) of each run whose first lines
    are `starts`: run i takes the lines from its first to the next run's (the first run, all
    before too), of this engine only where `mine` says. One bisection an item, so 10,000
    restarts in one log cost 10,000 steps per item, not 10,000 passes over every item."""
    out: list[list[Any]] = [[] for _ in starts]
    ordered = all(a <= b for a, b in itertools.pairwise(starts))
    for item in items:
        if mine is not None and not mine(item.line):
            continue
        if ordered:
            out[max(bisect.bisect_right(starts, item.line) - 1, 0)].append(item)
            continue
        for i in range(len(starts)):  # a run without a line of its own (start 0): the ranges overlap
            if (i == 0 or item.line >= starts[i]) and (i + 1 >= len(starts) or item.line < starts[i + 1]):
                out[i].append(item)
    return out


def build_timeline(events: Sequence[Event], source: str, fmt: Format, date_source: str | None = None,
                   config_defaults: Mapping[str, Any] | None = None, stats: LineStats | None = None) -> list[Run]:
    """The runs of one source read with `fmt`: everything engine-specific comes from it.
    `config_defaults`: the flags a launch command leaves out (None: the format's). `stats`:
    the reader's line accounting, whose gaps and unmatched lines each run takes from its own
    lines (from its first line to the next run's of the same engine; an engine among several,
    the gaps between its own process's lines). A source with several
    engines (`split_engines`) has the runs of each, in the order of their first lines."""
    engines = split_engines(events, fmt)
    gaps = stats.gaps if stats is not None else []
    process_gaps = stats.process_gaps if stats is not None else []
    unmatched = stats.unmatched if stats is not None else []
    several = len(engines.events) > 1
    pieces: list[tuple[int, list[Event], list[Gap], list[Unmatched], int]] = []
    for k, (engine_events, key) in enumerate(zip(engines.events, engines.keys, strict=True)):
        segments = split_runs(engine_events, fmt)
        starts = [min((e.line for e in seg if e.name != CLOCK_OUTER_FIRST), default=0) for seg in segments]
        engine_gaps = _engine_gaps(gaps, process_gaps, key) if several else gaps
        mine = (lambda line, k=k: engines.owner(line) == k) if several else None
        gaps_of, unmatched_of = _by_run(engine_gaps, starts, mine), _by_run(unmatched, starts, mine)
        for i, seg in enumerate(segments):
            pieces.append((starts[i], seg, gaps_of[i], unmatched_of[i], k))
    pieces.sort(key=lambda piece: piece[0])  # stable: one engine's runs keep their order
    runs = []
    last_of: dict[int, Stamp | None] = {}  # the previous run's last line, per engine
    for i, (_, seg, run_gaps, run_unmatched, k) in enumerate(pieces):
        run = build_run(seg, source, i, fmt, date_source, config_defaults, run_gaps, run_unmatched)
        run.launch = _launch_of(run, seg, fmt, last_of.get(k), k in last_of)
        last_of[k] = run.last_ts
        if several:
            run.warnings.append(engines.note(k))
        runs.append(run)
    return runs


def _launch_of(run: Run, events: Sequence[Event], fmt: Format, previous_end: Stamp | None, restart: bool) -> Launch:
    """The run's launch as its own lines show it: a line that states it, else the format's
    estimate (capped, for a restart, by the previous run's last line)."""
    if run.first_ts is not None:
        stated = stated_launch(events, run.first_ts, fmt)
        if stated is not None:
            return stated
    launch = estimate(run.first_ts, fmt.launch_gap, fmt.display, previous_end if restart else None,
                      run.begins_mid_startup)
    return launch

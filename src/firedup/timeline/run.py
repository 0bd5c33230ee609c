"""A run: one startup of one source, and the facts computed on it once (milestones, phases,
crash, outcome). Every view, export and the library read this type (`firedup.Run`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from firedup.formats.vocab import DRAFT_PREFIX
from firedup.read.clock import Stamp
from firedup.timeline.findings import CacheVerdict, Item, Silence, UnknownSpan
from firedup.timeline.launch import Launch


@dataclass
class Milestone:
    """A line that marks a point of the start-up (its name, stamp, rank, line and fields)."""

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
    """A stretch of the start-up on one rank (or the run), with where its length comes from."""

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
    """Why a run died: the line that says so, its category and the phase it ended."""

    category: str
    ts: Stamp | None
    line: int
    message: str
    phase: str | None
    hint: str | None
    first_line: str
    after_ready: bool = False
    # Seconds from the run's first line to `ts` (set by `outcome.decide_outcome`): the crash's own time, which a
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
    # flag -> the least value the log proves where it proves no exact one (ranks TP0, TP3, TP7
    # tagging lines: tp_size >= 8); the evidence is in `config_inferred`
    config_at_least: dict[str, int] = field(default_factory=dict)
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
    # the first line's time is a collector's stamp (`docker logs -t`, kubectl's) on a line the
    # server printed without its own, not the server's own first stamp: a gap measured before
    # such a line says nothing of one before a server's own first stamp (tables.launches)
    first_from_collector: bool = False
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
    # What would have made it ready sooner (timeline.advice), largest saving first.
    advice: list[Item] = field(default_factory=list)

    # its own times step back between its lines (two untagged servers interleaved, a clock set
    # back): no duration is taken from them (`timeline.build._note_steps_back`)
    clock_mixed: bool = False

    @property
    def total_seconds(self) -> float | None:
        """The contract's `total_seconds`: first line to ready, else to the log's last line;
        None for a ready run whose ready line has no time (a clock that stepped back)."""
        end = self.ready_ts if self.ready_ts is not None else self.last_ts
        if self.first_ts is None or end is None or self.clock_mixed or (self.ready_ts is None and self.outcome == "ready"):
            return None
        return max(0.0, end.minus(self.first_ts))

    @property
    def end_ts(self) -> Stamp | None:
        """Where the startup ended, the one definition every view shows: the ready line for a
        ready run, the crash's first line (when it has a time) for a crashed run, else the log's
        last line. A crash after ready does not move the end: the startup had succeeded."""
        if self.ready_ts is not None or self.outcome == "ready":
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
        if self.first_ts is None or end is None or self.clock_mixed:
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
            "config_at_least": self.config_at_least,
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
            "advice": [item.as_contract() for item in self.advice],
        }

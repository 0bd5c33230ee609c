"""The event vocabulary: every kind of event, declared once with what it means.

A rule of a format turns a line into an event of some kind (`dist_init.begin`); the reader
adds a few kinds of its own (the clock marks) and the timeline derives others (a draft
model's `draft.load_weight.begin`, the first request, the crash). What a kind means to the
rest of firedup (a milestone or not, fatal, whose model it belongs to, the stage a run is
in after it, ...) is data on its `Kind`, and every set the reader, the timeline and `wait`
use is derived from these declarations (`Vocabulary`), never written out again.

The kinds every engine shares, or that shared code must know by name, are declared here,
each with a constant (`READY`, `DIST_INIT_BEGIN`): code outside `formats/` names a kind only
through them, so a typo is an import error, not a set that silently never matches
(tests/test_vocab.py reads every module for string literals that are kind names). A kind only
one engine prints is declared in that engine's module (`Format.kinds`), and a rule may only
name a declared kind: `Format` checks that when it is built.

This module imports nothing else of firedup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

# --- who makes a kind ------------------------------------------------------------------------
RULE: Final = "rule"  # a format's rule, from a line
READER: Final = "reader"  # the reading engine itself (the clock marks around run boundaries)
TIMELINE: Final = "timeline"  # the timeline, from other events: no rule may name it

# --- when a kind ends a start-up --------------------------------------------------------------
ALWAYS: Final = "always"  # for good: the start-up failed
IF_STUCK: Final = "if_stuck"  # only when no milestone follows (the server declaring itself stuck)
IF_STUCK_BARE: Final = "if_stuck_bare"  # as IF_STUCK, and only a line without any header (a bare traceback)

# --- whose model a per-model line is about (speculative decoding loads a draft model too) ----
REPEAT: Final = "repeat"  # a second such line on a rank is the draft's (an engine that repeats its runner)
LOAD: Final = "load"  # the draft's once its rank began loading weights a second time
DRAFT: Final = "draft"  # always the draft's

# --- a start-up under way or over (`Kind.watch`) ----------------------------------------------
# ON: a (re)started model runner begins: the reader records silences and unmatched lines again
# (`read.engine.Scanner`), compaction looks for a run's first requests again (`read.compact`),
# and the same rank beginning again after its run ended is a new run (`timeline.build.split_runs`).
ON: Final = "on"
# OFF: the server is ready, what follows is runtime traffic: stop recording; the first real
# request comes after it.
OFF: Final = "off"

# The prefix of a draft model's twin of a per-model kind (`draft.load_weight.begin`).
DRAFT_PREFIX: Final = "draft."
# The prefix of every kind of the HTTP server's lines (`http.running`): a log with one is a server's.
HTTP_PREFIX: Final = "http."
# The prefix of every kind of error line (`error.traceback`): what a crash's aftermath is read from.
ERROR_PREFIX: Final = "error."

_NAME = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*")


@dataclass(frozen=True)
class Kind:
    """One kind of event and what it means; every field but `name` and `means` defaults to
    "no special meaning"."""

    name: str
    means: str  # what the line says, in a few words (for readers of the table)
    by: str = RULE
    milestone: bool = False  # kept as a milestone of its run (`parse --json`'s `milestones`)
    fatal: str | None = None  # ALWAYS | IF_STUCK | IF_STUCK_BARE
    model: str | None = None  # REPEAT | LOAD | DRAFT: a per-model line
    draft_named: bool = False  # the draft's line is named apart (`draft.` + name, declared as well)
    stage_after: str | None = None  # the phase a run is in right after it (a format may override)
    runner: bool = False  # a line of the model runner's work: the launch phase ends at the first
    opens_runner: bool = False  # the runner's first line: a log that shows it saw the process start
    scheduler: bool = False  # printed by the scheduler of every rank, behind its rank tag when parallel
    runner_last: bool = False  # may be the runner's last start-up line: the HTTP server's start counts from it
    # comes after graph capture would have: seen after a memory pool and no capture, graphs were off
    past_capture: bool = False
    # shows graphs being captured (a capture's begin or end, its batch sizes, its progress bar):
    # graphs were on, where no line states `disable_cuda_graph`
    graph_capture: bool = False
    watch: str | None = None  # ON | OFF
    access: bool = False  # one HTTP request of an access log (runtime traffic)
    offline: bool = False  # printed only by an engine run without an HTTP server (a benchmark)
    warmup_failed: bool = False  # the server's warm-up request failed: the crash is the warm-up's
    progress: str | None = None  # a progress bar; its unit ("shards", "" when the bar names none)
    phase: tuple[str, str] | None = None  # ("begin" | "end", phase): a per-rank phase between two lines
    reports: str | None = None  # the phase whose duration the line states (it ends that phase)
    implies: Mapping[str, Any] = field(default_factory=dict)  # flags the line proves, with `implies_why`
    implies_why: str = ""
    # the line, with its own time, states when the server process was launched (timeline.launch)
    launch: bool = False
    # the cache kind (a `Format.caches.cache_kinds` key) whose storage key the line names in its `cache_key`
    # field: two starts under different keys cannot share that cache (timeline: Run.cache_keys)
    cache_key: str | None = None

    def __post_init__(self) -> None:
        where = f"event kind {self.name!r}"
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"{where}: a name is lower-case words joined by dots")
        checks = (("by", self.by, (RULE, READER, TIMELINE)),
                  ("fatal", self.fatal, (None, ALWAYS, IF_STUCK, IF_STUCK_BARE)),
                  ("model", self.model, (None, REPEAT, LOAD, DRAFT)), ("watch", self.watch, (None, ON, OFF)))
        for attr, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{where}: {attr} must be one of {', '.join(map(repr, allowed))}, not {value!r}")
        if self.phase is not None and self.phase[0] not in ("begin", "end"):
            raise ValueError(f"{where}: phase is ('begin' | 'end', phase name)")
        if bool(self.implies) != bool(self.implies_why):
            raise ValueError(f"{where}: `implies` and `implies_why` come together")


class Vocabulary:
    """A set of declared kinds, and every set and table derived from their meanings.

    `SHARED` holds the kinds every engine shares; a format's (`Format.vocab`) adds its own.
    Lookups of a name that is not declared fail loudly (`kind`, `check`).
    """

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._kinds: dict[str, Kind] = {}
        for kind in kinds:
            if kind.name in self._kinds:
                raise ValueError(f"event kind {kind.name!r} is declared twice")
            self._kinds[kind.name] = kind
        for name in self.draft_twin.values():
            self.check(name, f"the draft's twin of {name.removeprefix(DRAFT_PREFIX)!r}")

    def extend(self, kinds: Iterable[Kind]) -> Vocabulary:
        """This vocabulary and `kinds` (a kind may not be declared again, even the same way)."""
        return Vocabulary((*self._kinds.values(), *kinds))

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __iter__(self) -> Iterator[Kind]:
        return iter(self._kinds.values())

    def __len__(self) -> int:
        return len(self._kinds)

    def kind(self, name: str) -> Kind:
        """The declared kind called `name`; a KeyError that names the closest ones otherwise."""
        found = self._kinds.get(name)
        if found is None:
            raise KeyError(self._unknown(name))
        return found

    def check(self, name: str, where: str) -> str:
        """`name` if it is a declared kind, else a ValueError saying `where` it was named."""
        if name not in self._kinds:
            raise ValueError(f"{where}: {self._unknown(name)}")
        return name

    def _unknown(self, name: str) -> str:
        import difflib  # only for a name that is not declared: not on every start's import path

        close = difflib.get_close_matches(name, list(self._kinds), n=3)
        hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
        return (f"{name!r} is no declared event kind{hint}; declare it in the format's `kinds` "
                f"(firedup.formats.vocab.Kind) or use a shared one")

    def _names(self, keep: Any) -> frozenset[str]:
        return frozenset(k.name for k in self._kinds.values() if keep(k))

    # --- the derived sets ------------------------------------------------------------------
    @cached_property
    def milestones(self) -> frozenset[str]:
        return self._names(lambda k: k.milestone)

    @cached_property
    def fatal(self) -> frozenset[str]:
        """Lines that end a start-up for good."""
        return self._names(lambda k: k.fatal == ALWAYS)

    @cached_property
    def fatal_if_stuck(self) -> frozenset[str]:
        """Errors that end a start-up only when no progress follows them."""
        return self._names(lambda k: k.fatal == IF_STUCK)

    @cached_property
    def fatal_if_bare(self) -> frozenset[str]:
        """As `fatal_if_stuck`, for lines without a header only (a bare traceback)."""
        return self._names(lambda k: k.fatal == IF_STUCK_BARE)

    @cached_property
    def crashy(self) -> frozenset[str]:
        """Every line that can end a start-up, whatever the condition."""
        return self._names(lambda k: k.fatal is not None)

    @cached_property
    def per_model_repeat(self) -> frozenset[str]:
        return self._names(lambda k: k.model == REPEAT)

    @cached_property
    def per_model_load(self) -> frozenset[str]:
        return self._names(lambda k: k.model == LOAD)

    @cached_property
    def per_model(self) -> frozenset[str]:
        """Lines whose model (target or draft) the timeline tells from repeats or loads."""
        return self.per_model_repeat | self.per_model_load

    @cached_property
    def draft_only(self) -> frozenset[str]:
        return self._names(lambda k: k.model == DRAFT)

    @cached_property
    def draft_twin(self) -> Mapping[str, str]:
        """A per-model kind the draft's line is named apart for -> that name."""
        return {k.name: DRAFT_PREFIX + k.name for k in self._kinds.values() if k.draft_named}

    @cached_property
    def stage_after(self) -> Mapping[str, str]:
        return {k.name: k.stage_after for k in self._kinds.values() if k.stage_after is not None}

    @cached_property
    def runner(self) -> frozenset[str]:
        return self._names(lambda k: k.runner)

    @cached_property
    def opens_runner(self) -> frozenset[str]:
        return self._names(lambda k: k.opens_runner)

    @cached_property
    def scheduler(self) -> frozenset[str]:
        return self._names(lambda k: k.scheduler)

    @cached_property
    def runner_last(self) -> frozenset[str]:
        return self._names(lambda k: k.runner_last)

    @cached_property
    def past_capture(self) -> frozenset[str]:
        return self._names(lambda k: k.past_capture)

    @cached_property
    def graph_capture(self) -> frozenset[str]:
        """Lines that prove graphs were captured (`Kind.graph_capture`)."""
        return self._names(lambda k: k.graph_capture)

    @cached_property
    def watch_on(self) -> frozenset[str]:
        return self._names(lambda k: k.watch == ON)

    @cached_property
    def watch_off(self) -> frozenset[str]:
        return self._names(lambda k: k.watch == OFF)

    @cached_property
    def offline(self) -> frozenset[str]:
        return self._names(lambda k: k.offline)

    @cached_property
    def warmup_failed(self) -> frozenset[str]:
        return self._names(lambda k: k.warmup_failed)

    @cached_property
    def progress(self) -> Mapping[str, str]:
        """Progress-bar kinds -> the unit their count is in."""
        return {k.name: k.progress for k in self._kinds.values() if k.progress is not None}

    @cached_property
    def paired_phases(self) -> tuple[tuple[str, str, str], ...]:
        """(phase, begin kind, end kind) of the per-rank phases between two lines, in the
        order their begin kinds were declared."""
        ends = {k.phase[1]: k.name for k in self._kinds.values() if k.phase is not None and k.phase[0] == "end"}
        return tuple((k.phase[1], k.name, ends[k.phase[1]]) for k in self._kinds.values()
                     if k.phase is not None and k.phase[0] == "begin" and k.phase[1] in ends)

    @cached_property
    def reported_phases(self) -> Mapping[str, str]:
        return {k.name: k.reports for k in self._kinds.values() if k.reports is not None}

    @cached_property
    def launch(self) -> frozenset[str]:
        """Lines that state the server's launch with their own time."""
        return self._names(lambda k: k.launch)

    @cached_property
    def cache_keys(self) -> Mapping[str, str]:
        """Kinds whose line names the key a cache is stored under -> that cache's kind."""
        return {k.name: k.cache_key for k in self._kinds.values() if k.cache_key is not None}

    @cached_property
    def implying(self) -> tuple[Kind, ...]:
        """Kinds whose line proves flags of the run's config (`Kind.implies`)."""
        return tuple(k for k in self._kinds.values() if k.implies)


_SHARED: list[Kind] = []


def _shared(kind: Kind) -> str:
    """Declare a shared kind; its name is the constant code outside `formats/` uses."""
    _SHARED.append(kind)
    return kind.name


# --- the shared kinds, in start-up order ---------------------------------------------------------
# Marks the reader itself emits around every possible run boundary (`read.engine`).
CLOCK_FIRST: Final = _shared(Kind("clock.first", "the first line with the engine's own clock since a boundary",
                                  by=READER))
CLOCK_LAST: Final = _shared(Kind("clock.last", "the last line with the engine's own clock before a boundary",
                                 by=READER))
CLOCK_OUTER_FIRST: Final = _shared(Kind(
    "clock.outer_first", "the first line since a boundary with only a collector's stamp, moved onto the engine's clock",
    by=READER))

# Process start and configuration.
RUN_BANNER: Final = _shared(Kind("run.banner", "the server's banner (its process starts)"))
RUN_SERVICE: Final = _shared(Kind("run.service", "systemd starts the server's unit", launch=True))
RUN_CONTAINER: Final = _shared(Kind("run.container", "a container runtime starts the server's container",
                                    launch=True))
SERVER_ARGS: Final = _shared(Kind("server_args", "the engine's arguments, dumped as it starts", milestone=True,
                                  stage_after="launch"))
CONFIG_STATED: Final = _shared(Kind("config.stated", "a line that states flags of the run (in its fields)"))

# The model runner, on every rank; a speculative run repeats it for the draft model.
DIST_INIT_BEGIN: Final = _shared(Kind(
    "dist_init.begin", "distributed init begins", milestone=True, model=REPEAT, stage_after="dist_init", runner=True,
    opens_runner=True, scheduler=True, watch=ON, phase=("begin", "dist_init")))
DIST_INIT_END: Final = _shared(Kind(
    "dist_init.end", "distributed init ends", milestone=True, model=REPEAT, stage_after="load_weights", runner=True,
    scheduler=True, phase=("end", "dist_init")))
LOAD_WEIGHT_BEGIN: Final = _shared(Kind(
    "load_weight.begin", "the weights begin to load", milestone=True, model=REPEAT, draft_named=True,
    stage_after="load_weights", runner=True, opens_runner=True, scheduler=True, phase=("begin", "load_weights")))
LOAD_WEIGHT_END: Final = _shared(Kind(
    "load_weight.end", "the weights are loaded", milestone=True, model=REPEAT, draft_named=True,
    stage_after="kv_cache", runner=True, scheduler=True, phase=("end", "load_weights")))
LOAD_WEIGHT_TOOK: Final = _shared(Kind(
    "load_weight.took", "how long the weight load took, on a line of its own (`elapsed_s`)", model=LOAD,
    stage_after="kv_cache"))
KV_CACHE_ALLOCATED: Final = _shared(Kind(
    "kv_cache.allocated", "the KV cache is sized or allocated", milestone=True, model=REPEAT, stage_after="kv_cache",
    runner=True, scheduler=True))
# After a memory pool the next stage is unknown (the draft's pool, a capture, or the
# scheduler's ready): a capture is entered on its own begin line.
MEMORY_POOL_END: Final = _shared(Kind(
    "memory_pool.end", "the memory pool is set up", milestone=True, model=REPEAT, stage_after="kv_cache",
    runner=True, scheduler=True, runner_last=True))
CUDA_GRAPH_BEGIN: Final = _shared(Kind(
    "cuda_graph.begin", "graph capture begins (CUDA or another device's)", milestone=True, model=LOAD,
    draft_named=True, stage_after="cuda_graph", runner=True, scheduler=True, phase=("begin", "cuda_graph"),
    graph_capture=True))
CUDA_GRAPH_END: Final = _shared(Kind(
    "cuda_graph.end", "graph capture ends", milestone=True, model=LOAD, draft_named=True, stage_after="http_start",
    runner=True, scheduler=True, runner_last=True, phase=("end", "cuda_graph"), graph_capture=True))
PROGRESS_WEIGHTS: Final = _shared(Kind("progress.weights", "a progress bar of the weight load", progress="shards"))
PROGRESS_CUDA_GRAPH: Final = _shared(Kind("progress.cuda_graph", "a progress bar of graph capture", progress="",
                                          graph_capture=True))

# The draft model's lines: the runner's repeated for the draft, named apart by the timeline
# (only load_weight and cuda_graph in `parse --json`; the others are the `key` of a milestone
# that keeps its plain name and says `model: draft`). An engine may print the graph lines itself.
DRAFT_DIST_INIT_BEGIN: Final = _shared(Kind(
    "draft.dist_init.begin", "the draft model's distributed init begins", by=TIMELINE, model=DRAFT,
    stage_after="draft.dist_init", runner=True))
DRAFT_DIST_INIT_END: Final = _shared(Kind(
    "draft.dist_init.end", "the draft model's distributed init ends", by=TIMELINE, model=DRAFT,
    stage_after="draft.load_weights", runner=True))
DRAFT_LOAD_WEIGHT_BEGIN: Final = _shared(Kind(
    "draft.load_weight.begin", "the draft model's weights begin to load", by=TIMELINE, milestone=True, model=DRAFT,
    stage_after="draft.load_weights", runner=True))
DRAFT_LOAD_WEIGHT_END: Final = _shared(Kind(
    "draft.load_weight.end", "the draft model's weights are loaded", by=TIMELINE, milestone=True, model=DRAFT,
    stage_after="draft.kv_cache", runner=True))
DRAFT_KV_CACHE_ALLOCATED: Final = _shared(Kind(
    "draft.kv_cache.allocated", "the draft model's KV cache is allocated", by=TIMELINE, model=DRAFT,
    stage_after="draft.kv_cache", runner=True))
DRAFT_MEMORY_POOL_END: Final = _shared(Kind(
    "draft.memory_pool.end", "the draft model's memory pool is set up", by=TIMELINE, model=DRAFT,
    stage_after="draft.kv_cache", runner=True, runner_last=True))
DRAFT_CUDA_GRAPH_BEGIN: Final = _shared(Kind(
    "draft.cuda_graph.begin", "the draft model's graph capture begins", milestone=True, model=DRAFT,
    stage_after="draft.cuda_graph", runner=True, graph_capture=True))
DRAFT_CUDA_GRAPH_END: Final = _shared(Kind(
    "draft.cuda_graph.end", "the draft model's graph capture ends", milestone=True, model=DRAFT,
    stage_after="http_start", runner=True, runner_last=True, graph_capture=True))

# The scheduler is up; the engine's own account of its start-up.
SCHEDULER_READY: Final = _shared(Kind(
    "scheduler.ready", "the scheduler is ready (it states the token budget)", milestone=True,
    stage_after="http_start", scheduler=True, runner_last=True, past_capture=True))
ENGINE_TIMINGS: Final = _shared(Kind(
    "engine.timings", "the engine's own start-up timings (`timings`: phase -> seconds)", milestone=True,
    stage_after="http_start", runner_last=True, past_capture=True))

# The HTTP server.
HTTP_STARTED: Final = _shared(Kind("http.started", "the HTTP server's process started", milestone=True,
                                   stage_after="http_start", past_capture=True))
HTTP_RUNNING: Final = _shared(Kind("http.running", "the HTTP server listens (`url`)", milestone=True,
                                   stage_after="http_start", past_capture=True))
HTTP_ACCESS: Final = _shared(Kind("http.access", "one HTTP request of the access log", access=True))
HTTP_FIRST_REQUEST: Final = _shared(Kind("http.first_request", "the first access line of any kind", by=TIMELINE,
                                         milestone=True, stage_after="http_start"))
HEALTH_FIRST: Final = _shared(Kind("health.first", "the first access line of a /health request", by=TIMELINE,
                                   milestone=True))
READY: Final = _shared(Kind("ready", "the server is ready", milestone=True, stage_after="serving", watch=OFF,
                            past_capture=True))
REQUEST_FIRST: Final = _shared(Kind(
    "request.first", "the first request after ready that is neither a warm-up nor a probe", by=TIMELINE,
    milestone=True))
HTTP_STARTUP_FAILED: Final = _shared(Kind("http.startup_failed", "the HTTP application failed to start",
                                          fatal=ALWAYS))
HTTP_SHUTDOWN: Final = _shared(Kind("http.shutdown", "the server was asked to stop (what dies after is no crash)"))

# Failures.
CRASH: Final = _shared(Kind("crash", "the first line of a fatal error (kept when the run crashed)", by=TIMELINE,
                            milestone=True))
ERROR_INIT_FAILED: Final = _shared(Kind("error.init_failed", "the server says its initialization failed",
                                        fatal=ALWAYS))
ERROR_CHILD_DIED: Final = _shared(Kind("error.child_died", "a child process of the server died", fatal=ALWAYS))
ERROR_KILLED: Final = _shared(Kind("error.killed", "the shell reports the server killed", fatal=ALWAYS))
ERROR_TRACEBACK: Final = _shared(Kind(
    "error.traceback", "a Python traceback begins (alone, with nothing after it, it is the crash)",
    fatal=IF_STUCK_BARE))
ERROR_NCCL: Final = _shared(Kind("error.nccl", "an NCCL error or a collective's timeout"))
ERROR_DETAIL: Final = _shared(Kind("error.detail", "the detail NCCL prints after the exception it explains"))
ERROR_FRAME: Final = _shared(Kind("error.frame", "a traceback frame (`file`, `lineno`, `func`)"))
ERROR_EXCEPTION: Final = _shared(Kind("error.exception", "an exception's line (`exc_type`, `exc_msg`)"))
ERROR_CUDA: Final = _shared(Kind("error.cuda", "a CUDA error or out-of-memory message"))
ERROR_NATIVE_ABORT: Final = _shared(Kind(
    "error.native_abort", "a native library's check failed and it exited the process (no Python exception)",
    fatal=ALWAYS))

SHARED: Final = Vocabulary(_SHARED)

"""How a run ended: ready (the server's line, or its health endpoint), the engine's own ready
line, crashed (the first fatal error, its traceback, time and diagnosis) or incomplete."""

from __future__ import annotations

import re
from collections.abc import Sequence

from firedup.core.health import REFUSED
from firedup.formats import Format
from firedup.formats.vocab import (
    CRASH,
    DRAFT_PREFIX,
    ERROR_FRAME,
    ERROR_PREFIX,
    ERROR_TRACEBACK,
    HTTP_PREFIX,
    HTTP_SHUTDOWN,
    HTTP_STARTUP_FAILED,
    READY,
    RUN_BANNER,
    SCHEDULER_READY,
    SERVER_ARGS,
)
from firedup.read.clock import Stamp
from firedup.read.engine import CLOCK_EVENTS, Event
from firedup.read.events import ACCESS
from firedup.timeline.crash import diagnose_error, is_exception_line
from firedup.timeline.run import Crash, Run
from firedup.timeline.stages import stage_at


def engine_only(events: Sequence[Event], fmt: Format) -> bool:
    """bench_one_batch / offline Engine: a model runner with no HTTP server to wait for."""
    if any(e.name.startswith(HTTP_PREFIX) or e.name == READY for e in events):
        return False
    offline = fmt.vocab.offline
    if any(e.name in offline for e in events):
        return True
    args = next((e for e in events if e.name == SERVER_ARGS), None)
    if args is not None:
        return args.header in fmt.meaning.offline_headers  # an offline engine's own log layout
    if fmt.meaning.offline_ready is not None:
        # no args line and no server banner: an engine used as a library
        return (any(e.name == fmt.meaning.offline_ready for e in events)
                and not any(e.name == RUN_BANNER for e in events))
    # bench prints its summary with print(), so the line has no header at all
    return any(e.name == SCHEDULER_READY and e.header == "bare" for e in events)


def decide_outcome(run: Run, events: Sequence[Event], fmt: Format) -> None:
    """Ready (how, and on which line), crashed (the first fatal error, unless after ready) or
    incomplete (and the stage the log stops in); the candidate crash milestones go unless the
    run crashed."""
    ready_line = _ready(run, events, fmt)
    crash = _find_crash(run, events, ready_line, fmt)
    if crash is not None:
        _crashed(run, crash, ready_line)
    if run.outcome == "incomplete":
        run.stopped_in = stage_at(run, run.last_line or 0, fmt)
    # The contract's crash milestone: the first line of each fatal error.
    if run.crash is None:
        run.milestones = [m for m in run.milestones if m.name != CRASH]


def _ready(run: Run, events: Sequence[Event], fmt: Format) -> int | None:
    """Set how the run became ready: the server's ready line (unless the HTTP server failed to
    start before it), else the health endpoint's answer, else, with no server in the log, the
    engine's own ready line. The line it became ready on."""
    ready = run.milestone(READY)
    failed_http = next((e for e in events if e.name == HTTP_STARTUP_FAILED), None)
    if ready is not None and (failed_http is None or failed_http.line > ready.line):
        run.outcome, run.ready_ts, run.ready_kind = "ready", ready.ts, "server"
        return ready.line
    engine_line = _engine_ready(run, fmt) if engine_only(events, fmt) else None
    if failed_http is None:
        probe = _health_ready(events, fmt)
        if probe is not None:
            run.outcome, run.ready_ts, run.ready_kind = "ready", probe.ts, "health"
            run.ready_evidence = (f"line {probe.line}: `{probe.fields.get('method', 'GET')} {probe.fields.get('path')}` "
                                  f"answered {probe.fields.get('status')}")
            run.warnings.append(f"no ready line: ready from the health endpoint ({run.ready_evidence})")
            return probe.line
    return engine_line


def _engine_ready(run: Run, fmt: Format) -> int | None:
    """The engine initialised, but nothing in this log serves (an offline engine, a benchmark,
    a disaggregated worker another process serves): not "ready". Its last ready line."""
    engine_ready = [m for m in run.milestones if m.name in (SCHEDULER_READY, fmt.meaning.offline_ready)]
    if not engine_ready:
        return None
    last = engine_ready[-1]
    run.ready_kind, run.engine_ready_ts = "engine", last.ts
    run.ready_evidence = f"line {last.line}: the engine's own ready line; no server in this log"
    return last.line


def _crashed(run: Run, crash: Crash, ready_line: int | None) -> None:
    """The run's crash: after ready it leaves the outcome alone, else the run crashed."""
    if ready_line is not None and crash.line > ready_line:
        crash.after_ready = True
    elif run.outcome != "ready" or crash.line < (ready_line or 0):
        if run.ready_kind == "engine":
            run.engine_ready_ts = run.ready_evidence = None
        run.outcome, run.ready_ts, run.ready_kind = "crashed", None, None
    if crash.ts is not None and run.first_ts is not None:
        crash.offset = max(0.0, crash.ts.minus(run.first_ts))
    run.crash = crash


def _health_ready(events: Sequence[Event], fmt: Format) -> Event | None:
    """The first access line where the health endpoint (or an alias) answered its ready
    status, when that status proves readiness: no version of the engine answers it while
    starting, or this log shows the endpoint answering its starting status first."""
    health = fmt.serving.health
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
    """The phase the traceback's deepest recognised frame belongs to (`Format.meaning.frame_stages`), else `stage`."""
    for event in reversed(traceback):
        if event.name != ERROR_FRAME:
            continue
        for phase, pattern in fmt.meaning.frame_stages:
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
    stage = _stage_from_frames(traceback, stage_at(run, first.line, fmt), fmt)
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

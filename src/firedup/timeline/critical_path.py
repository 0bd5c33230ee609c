"""The run-level phases: per phase the slowest rank (at a barrier, the last to arrive), the
spans between the server's own lines, the gaps no phase explains, and the total."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from firedup.formats import Format
from firedup.formats.vocab import HTTP_RUNNING, HTTP_STARTED, READY, SERVER_ARGS
from firedup.read.clock import Stamp
from firedup.timeline.ranks import NO_STRAGGLERS
from firedup.timeline.run import Milestone, Phase, Run


def run_level_phases(run: Run, per_rank: Sequence[Phase], fmt: Format) -> list[Phase]:
    """The critical path: per phase (and detail), the slowest rank; then the spans between the
    server's own lines (`_SPANS`, in order), the gaps and the total."""
    groups: dict[tuple[str, str | None], list[Phase]] = defaultdict(list)
    for p in per_rank:
        groups[(p.name, p.detail)].append(p)
    out = [_across_ranks(name, detail, ps) for (name, detail), ps in groups.items()]
    lines = _Lines.of(run, fmt)
    for span in _SPANS:
        span(lines, out)
    # the run's end as every view states it (`Run.end_ts`: ready, the crash, else the last line):
    # the crash's traceback and the other ranks shutting down are no phase of the start-up
    end = run.end_ts
    if run.first_ts is not None and end is not None:
        out.extend(_gaps(run.first_ts, end, out))
        out.append(Phase("total", None, run.first_ts, end, max(0.0, end.minus(run.first_ts)), "timestamps",
                         scope="run", line=_end_line(run, lines.ready)))
    return out


def _across_ranks(name: str, detail: str | None, ps: Sequence[Phase]) -> Phase:
    """One phase (and detail) of the run from its ranks': the slowest rank's time, from the
    first start to the last end; at a barrier (NO_STRAGGLERS), from the last rank to arrive."""
    timed = [p for p in ps if p.seconds is not None]
    arrived = [p for p in timed if p.start is not None and p.end is not None]
    if name in NO_STRAGGLERS and len(arrived) >= 2:
        # a barrier: the run waits for the last rank to arrive, not for the rank that waited longest
        last = max(arrived, key=lambda p: (p.start, p.line))
        assert last.start is not None and last.end is not None
        barrier_end = max(p.end for p in arrived if p.end is not None)
        return Phase(name, None, last.start, barrier_end, max(0.0, barrier_end.minus(last.start)), last.source,
                     scope="run", detail=detail, line=last.line, open=any(p.open for p in ps))
    worst = max(timed, key=lambda p: p.seconds or 0.0) if timed else ps[0]
    starts = [p.start for p in ps if p.start is not None]
    ends = [p.end for p in ps if p.end is not None]
    return Phase(name, None, min(starts) if starts else None, max(ends) if ends else None,
                 worst.seconds, worst.source, scope="run", detail=detail, line=worst.line,
                 open=any(p.open for p in ps))


@dataclass(frozen=True)
class _Lines:
    """The server's own lines the run-level spans run between."""

    run: Run
    fmt: Format
    http: Milestone | None  # the HTTP server running (else started)
    ready: Milestone | None

    @classmethod
    def of(cls, run: Run, fmt: Format) -> _Lines:
        ms = run.milestones
        http = next((m for m in ms if m.name == HTTP_RUNNING), None) or next(
            (m for m in ms if m.name == HTTP_STARTED), None)
        return cls(run, fmt, http, run.milestone(READY))


def _launch(at: _Lines, out: list[Phase]) -> None:
    """From the first line to the model runner's first line (`Kind.runner`; the draft's too, and
    the format's own milestones)."""
    run, fmt = at.run, at.fmt
    vocab = fmt.vocab
    first_sched = next((m for m in run.milestones if m.key in vocab.runner), None)
    if run.first_ts is None or first_sched is None or first_sched.ts is None:
        return
    # Launch is only seen when the log shows the process start (args) or the first
    # scheduler line opens a phase; an excerpt that begins later never saw it.
    saw_start = (run.milestone(SERVER_ARGS) is not None or first_sched.key in vocab.opens_runner
                 or first_sched.key in fmt.meaning.runner_opens)
    if saw_start and first_sched.line > (run.first_line or 0):
        out.append(_span("launch", run.first_ts, first_sched.ts, first_sched.line))


def _http_start(at: _Lines, out: list[Phase]) -> None:
    """From the model runner's last line (or the offline engine's ready line) to the HTTP server."""
    http, fmt = at.http, at.fmt
    if http is None or http.ts is None:
        return
    sched_end_names = set(fmt.vocab.runner_last)
    if fmt.meaning.offline_ready is not None:
        sched_end_names.add(fmt.meaning.offline_ready)
    sched_done = [m for m in at.run.milestones if m.key in sched_end_names and m.line < http.line]
    if sched_done and sched_done[-1].ts is not None:
        out.append(_span("http_start", sched_done[-1].ts, http.ts, http.line))


def _after_http_to_ready(at: _Lines, out: list[Phase]) -> None:
    """The format's phase after the HTTP server (`Format.meaning.after_http_phase`), to the ready line."""
    http, ready, after_http = at.http, at.ready, at.fmt.meaning.after_http_phase
    if http is None or http.ts is None or ready is None or ready.ts is None or at.run.ready_kind != "server":
        return
    started = next((p for p in out if p.name == after_http and p.scope == "run"), None)
    if started is not None and started.end is not None and started.start is not None:
        # the same phase goes on to ready (routes, the HTTP server starting): one span, not two
        started.end, started.line = max(started.end, ready.ts), ready.line
        started.seconds = max(0.0, started.end.minus(started.start))
    else:
        out.append(_span(after_http, http.ts, ready.ts, ready.line))


def _after_http_to_crash(at: _Lines, out: list[Phase]) -> None:
    """The phase the crash names, when it is the one after the HTTP server: from the server's
    start to the crash (a failed warm-up)."""
    http, crash, after_http = at.http, at.run.crash, at.fmt.meaning.after_http_phase
    if (http is not None and http.ts is not None and at.run.outcome == "crashed" and crash is not None
            and crash.phase == after_http and crash.ts is not None and crash.line is not None
            and crash.line > http.line and not any(p.name == after_http for p in out)):
        out.append(_span(after_http, http.ts, crash.ts, crash.line))


# The run-level spans between the server's own lines, in order: each adds its phase to the
# run's (or, the phase after the HTTP server, extends the one already there).
_SPANS: tuple[Callable[[_Lines, list[Phase]], None], ...] = (
    _launch, _http_start, _after_http_to_ready, _after_http_to_crash)


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

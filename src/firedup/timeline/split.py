"""A source's events cut into engines (several in one log: a Ray job's, a harness's) and each
engine's into runs (restarts); the reader's records of gaps and unknown lines to each run."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firedup.formats import Format
from firedup.formats.vocab import READY
from firedup.read.engine import CLOCK_EVENTS, CLOCK_FIRST, CLOCK_OUTER_FIRST, Event, Gap, LineStats, Unmatched

# --- splitting a source into runs --------------------------------------------------------


def split_runs(events: Sequence[Event], fmt: Format) -> list[list[Event]]:
    """Cut the event stream where a new startup begins. A launch line (a unit's `Started`, a
    container's start) between two starts is the next one's, even where the start before
    printed no end (killed without a word); one after the last start with nothing of a server
    after it opens no run."""
    vocab = fmt.vocab
    milestones, fatal, restarts, launch = vocab.milestones, vocab.fatal, vocab.watch_on, vocab.launch
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
            # the launch lines after the last line of the start before are this start's (the
            # clock marks among them stay with the start before: its last line)
            tail = len(current)
            while tail and (current[tail - 1].name in launch or current[tail - 1].name in CLOCK_EVENTS):
                tail -= 1
            moved = [e for e in current[tail:] if e.name in launch]
            current[tail:] = [e for e in current[tail:] if e.name not in launch]
            carried[:0] = moved
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
    out: list[list[Event]] = []
    for segment in segments:
        if not any(e.name not in CLOCK_EVENTS for e in segment):
            continue
        if out and all(e.name in CLOCK_EVENTS or e.name in launch for e in segment):
            out[-1].extend(segment)  # launch lines and nothing of a server after them: no run
            continue
        out.append(segment)
    return out


# --- telling engines apart ---------------------------------------------------------------


# Which engine a line is of, when one log holds several, by where the line came from:
# (process id, None) for a launcher's process tag, (None, tag) for a wrapper's source tag
# (`Event.wrapper`).
EngineKey = tuple[int | None, str | None]


@dataclass(frozen=True)
class Engines:
    """The engines one source holds: the events of each, and whose every line is.

    A launcher that runs several engines in one job (Ray, as verl and other RL trainers use
    it) prints all their lines in one log, each behind the tag of the process that printed
    it (`(WorkerDict pid=26107) `). Each engine numbers its ranks from TP0, so the same
    rank under two process tags is two engines, and each such process runs an engine of its
    own (its key, `EngineKey`, is the process, not the engine's name). A harness that re-logs several servers behind its own prefix tags each line with
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


# --- each run's pieces ------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """One run of a source before it is built: its events, the gaps and the lines no rule knows
    among its lines (the reader's `LineStats`), and which engine of the source it is of."""

    events: list[Event]
    gaps: list[Gap]
    unmatched: list[Unmatched]
    engine: int  # the index of its engine in `Engines`


def split_source(events: Sequence[Event], fmt: Format, stats: LineStats | None = None) -> tuple[Engines, list[Piece]]:
    """The engines of a source (`split_engines`) and the runs of each (`split_runs`), in the order
    of their first lines (one engine's runs keep their order). Each run takes the gaps and
    unmatched lines from its first line to the next run's of the same engine; an engine among
    several, the gaps between its own process's lines."""
    engines = split_engines(events, fmt)
    gaps = stats.gaps if stats is not None else []
    process_gaps = stats.process_gaps if stats is not None else []
    unmatched = stats.unmatched if stats is not None else []
    several = len(engines.events) > 1
    pieces: list[tuple[int, Piece]] = []
    for k, (engine_events, key) in enumerate(zip(engines.events, engines.keys, strict=True)):
        segments = split_runs(engine_events, fmt)
        starts = [min((e.line for e in seg if e.name != CLOCK_OUTER_FIRST), default=0) for seg in segments]
        own_gaps = _engine_gaps(gaps, process_gaps, key) if several else gaps
        mine = (lambda line, k=k: engines.owner(line) == k) if several else None
        gaps_of, unmatched_of = _by_run(own_gaps, starts, mine), _by_run(unmatched, starts, mine)
        for i, seg in enumerate(segments):
            pieces.append((starts[i], Piece(seg, gaps_of[i], unmatched_of[i], k)))
    pieces.sort(key=lambda piece: piece[0])  # stable: one engine's runs keep their order
    return engines, [piece for _, piece in pieces]


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
    if not starts:  # no run (a log whose lines read had no event): the items are no run's
        return out
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

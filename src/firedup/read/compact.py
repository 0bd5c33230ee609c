"""Drop the access-log events a timeline does not read, so memory stays flat and the batch
engine may leave most access lines unread.

A server that ran for days logs millions of `GET /health` and `POST /v1/...` lines after
each startup; every one is an access event (`vocab.HTTP_ACCESS`). The timeline
(`timeline.build`) reads only these of them, and this module's contract is to keep exactly those:

1. of each run, the first access event (`http.first_request`), the first `/health` one
   (`health.first`) and the first non-probe request after `ready` (`request.first`);
2. the last access event before any other event, and the last of the stream: a run's last
   line can be one, and a crash's traceback is read backwards up to the first event that is
   not a bare error line;
3. every event within `CRASH_WINDOW` after an error that can end a startup (the crash
   reader looks that far);
4. of each stretch of consecutive access events, the first with the earliest and the first
   with the latest time among those whose time counts for a run's span
   (`timeline.access_time_counts`: a collector's stamp; the engine's own clock does not);
5. every access event from the first event behind an unknown wrapper on (`Event.wrapper`):
   one harness may re-log several servers, and which server a line belongs to is only known
   once the whole log is read (`timeline.split_engines`). The batch engine reads every line
   such an event may come from (its scan marks them), so both engines keep the same.

Nothing else of them is read: not their ranks, not their own-clock stamps. Runs are cut by
`timeline.split_runs` from the whole stream, so here the needs of (1) start again at every
event that may open a run (a `starts_run` line, a `dist_init.begin`), and a first request
is also looked for after each such restart; keeping a few more events than needed is
harmless. `AccessNeeds` holds that state. The batch engine (firedup.read.batch) keeps an
`AccessNeeds` of its own, fed with the same events, to know which access lines it must read
at all: both engines' compacted streams are the same (tests/test_batch.py), and so are the
timelines built with and without compaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from firedup.formats.base import Format
from firedup.formats.vocab import SHARED, Vocabulary
from firedup.read.engine import Event
from firedup.read.events import (
    ACCESS,
    PROBE_PATHS,
    access_time_counts,
    own_time_headers,
)

HEALTH_PATH = "/health"  # timeline.build: `health.first` is the first path starting with it
# The crash reader looks at the 400 events after a fatal line (timeline.build._traceback_of).
CRASH_WINDOW = 400

__all__ = ["ACCESS", "CRASH_WINDOW", "AccessNeeds", "compact"]


class AccessNeeds:
    """Which access events to come the timeline may still read (points 1, 3 and 5 above).

    `step` takes every event in stream order and says whether an access event must be kept
    for those reasons. While `every_line` is true any access line may be needed; while
    only `health` is, only a `/health` request may be; else none is, for these reasons.
    """

    def __init__(self, vocab: Vocabulary = SHARED) -> None:
        self.first = self.health = self.request = True
        self.window = 0  # events left in a crash window
        # the kinds that open a crash window (any that can end a start-up), restart the needs
        # of a run (with a `starts_run` line) and make a first request worth reading again
        self._crashy, self._restart, self._ready = vocab.crashy, vocab.watch_on, vocab.watch_off
        self.wrapped = False  # an event behind an unknown wrapper came (point 5)

    @property
    def every_line(self) -> bool:
        return self.any_path or self.request

    @property
    def any_path(self) -> bool:
        """Whether an access line may be needed whatever its path: `every_line` but for the wait
        for the first request, which a scan that tells requests from probes can do unread."""
        return self.first or self.window > 0 or self.wrapped

    def step(self, event: Event) -> bool:
        in_window = self.window > 0
        if in_window:
            self.window -= 1
        if event.wrapper is not None:
            self.wrapped = True
        if event.name == ACCESS:
            keep = in_window or self.first or self.wrapped
            self.first = False
            path = str(event.fields.get("path", ""))
            if self.health and path.startswith(HEALTH_PATH):
                self.health, keep = False, True
            if self.request and not path.startswith(PROBE_PATHS):
                self.request, keep = False, True
            return keep
        if event.fields.get("starts_run") or event.name in self._restart:
            self.first = self.health = self.request = True
        if event.name in self._ready:
            self.request = True
        if event.name in self._crashy:
            self.window = CRASH_WINDOW
        return True


def compact(events: Iterable[Event], fmt: Format | None = None) -> Iterator[Event]:
    """`events` without the access events the timeline does not read (the module's
    contract). Order is preserved; `fmt` says which headers carry the engine's own clock."""
    own_time = own_time_headers(fmt)
    needs = AccessNeeds(fmt.vocab if fmt is not None else SHARED)
    kept: dict[int, Event] = {}  # position in the current stretch -> event kept
    last: tuple[int, Event] | None = None
    earliest: tuple[int, Event] | None = None
    latest: tuple[int, Event] | None = None
    position = 0
    for event in events:
        if event.name == ACCESS:
            if needs.step(event):
                kept[position] = event
            last = (position, event)
            ts = event.ts
            if ts is not None and access_time_counts(event, own_time):
                if earliest is None or ts.dt < earliest[1].ts.dt:  # type: ignore[union-attr]
                    earliest = (position, event)
                if latest is None or ts.dt > latest[1].ts.dt:  # type: ignore[union-attr]
                    latest = (position, event)
            position += 1
            continue
        if last is not None:
            yield from _stretch(kept, last, earliest, latest)
            kept, last, earliest, latest, position = {}, None, None, None, 0
        needs.step(event)
        yield event
    if last is not None:
        yield from _stretch(kept, last, earliest, latest)


def _stretch(kept: dict[int, Event], *extra: tuple[int, Event] | None) -> list[Event]:
    for item in extra:
        if item is not None:
            kept[item[0]] = item[1]
    return [kept[p] for p in sorted(kept)]

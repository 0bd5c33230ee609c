"""Drop the access-log events that cannot change a timeline, so memory stays flat.

A server that ran for days logs millions of `GET /health` and `POST /v1/...` lines after
each startup; every one is an `http.access` event. The timeline reads few of them: the
first access of a run, the first health probe, the first user request after ready, the
run's first and last line and time, the ranks that printed, and the events near a crash.
`compact` keeps exactly the ones that can matter for those and drops the rest, streaming,
so a 1 GiB log holds a few hundred events, not millions. Both engines' events go through
it (`parse.parse_source`); tests/test_batch.py checks that the timelines built from the
compacted and the full event streams are identical on every sample, corpus and generated
log. If the timeline starts reading access events some other way, extend `_Stretch.keep`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from firedup.clock import Stamp
from firedup.engine import Event
from firedup.timeline import _FATAL, _FATAL_IF_STUCK, _PROBE_PATHS

ACCESS = "http.access"
# The crash reader looks at the 400 events after a fatal line (timeline._traceback_of).
CRASH_WINDOW = 400
_CRASHY = _FATAL | _FATAL_IF_STUCK | {"error.traceback"}


class Deferred(Protocol):
    """An access event not built yet (the batch engine's): what `compact` reads of it, and
    how to build the real `Event` if it is kept."""

    name: str
    line: int
    ts: Stamp | None
    rank: str | None
    fields: dict[str, Any]
    header: str
    proc: str | None
    inherited: bool

    def materialise(self) -> Event: ...


AnyEvent = Event | Deferred


def _real(event: AnyEvent) -> Event:
    return event if isinstance(event, Event) else event.materialise()


def _key(event: AnyEvent) -> tuple[Any, ...]:
    """What else the timeline reads of an access event: ranks, header family, own clock."""
    return (event.rank, event.header, event.proc, event.inherited, event.ts is None)


class _Stretch:
    """Consecutive access events, with nothing else in between: only its notable ones kept."""

    def __init__(self) -> None:
        self.count = 0
        self.firsts: list[tuple[int, AnyEvent]] = []  # (position, event) kept for good
        self.health = self.request = False
        self.keys: set[tuple[Any, ...]] = set()
        self.last: tuple[int, AnyEvent] | None = None
        self.top: tuple[int, AnyEvent] | None = None  # first event with the latest time
        self.bottom: tuple[int, AnyEvent] | None = None  # first event with the earliest time

    def add(self, event: AnyEvent) -> None:
        position = self.count
        self.count += 1
        first = position == 0
        path = str(event.fields.get("path", ""))
        if not self.health and path.startswith("/health"):
            self.health = first = True
        if not self.request and not path.startswith(_PROBE_PATHS):
            self.request = first = True
        key = _key(event)
        if key not in self.keys:
            self.keys.add(key)
            first = True
        if first:
            self.firsts.append((position, event))
        self.last = (position, event)
        ts = event.ts
        if ts is not None:
            if self.top is None or ts.dt > self.top[1].ts.dt:  # type: ignore[union-attr]
                self.top = (position, event)
            if self.bottom is None or ts.dt < self.bottom[1].ts.dt:  # type: ignore[union-attr]
                self.bottom = (position, event)

    def kept(self) -> list[Event]:
        chosen = dict(self.firsts)
        for extra in (self.top, self.bottom, self.last):
            if extra is not None:
                chosen[extra[0]] = extra[1]
        return [_real(chosen[p]) for p in sorted(chosen)]


def compact(events: Iterable[AnyEvent]) -> Iterator[Event]:
    """`events` without the access events a timeline cannot tell apart from their neighbours.

    Kept: every event that is not an access line; of each stretch of consecutive access
    events, the first and the last, the first health probe, the first non-probe request,
    the first of each (rank, header, process, clock) kind, the first with the stretch's
    earliest and the first with its latest time; and every event within 400 after an error
    that can end a startup. Order is preserved.
    """
    stretch: _Stretch | None = None
    window = 0
    for event in events:
        if event.name == ACCESS and window == 0:
            if stretch is None:
                stretch = _Stretch()
            stretch.add(event)
            continue
        if stretch is not None:
            yield from stretch.kept()
            stretch = None
        if window:
            window -= 1
        if event.name in _CRASHY:
            window = CRASH_WINDOW
        yield _real(event)
    if stretch is not None:
        yield from stretch.kept()

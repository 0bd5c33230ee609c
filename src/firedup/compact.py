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
ACCESS_BLOCK = "http.access*"  # many access events in one object (the batch engine's)
PROBE_PATHS = _PROBE_PATHS
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


class Block(Protocol):
    """Consecutive access events not built yet: `compact` builds only the `notable` ones."""

    name: str

    def __len__(self) -> int: ...

    def notable(self) -> list[int]: ...

    def member(self, i: int) -> Deferred: ...


AnyEvent = Event | Deferred | Block


def _real(event: Event | Deferred) -> Event:
    return event if isinstance(event, Event) else event.materialise()


def _key(event: Event | Deferred) -> tuple[Any, ...]:
    """What else the timeline reads of an access event: ranks, header family, own clock."""
    return (event.rank, event.header, event.proc, event.inherited, event.ts is None)


class _Stretch:
    """Consecutive access events, with nothing else in between: only its notable ones kept."""

    def __init__(self) -> None:
        self.count = 0
        self.firsts: list[tuple[int, Event | Deferred]] = []  # (position, event) kept for good
        self.health = self.request = False
        self.keys: set[tuple[Any, ...]] = set()
        self.last: tuple[int, Event | Deferred] | None = None
        self.top: tuple[int, Event | Deferred] | None = None  # first event with the latest time
        self.bottom: tuple[int, Event | Deferred] | None = None  # first event with the earliest time

    def add_block(self, block: Block) -> None:
        """The block's members as if added one by one: those that are not `notable` could
        change nothing (the block chose them by the same tests as `add`)."""
        base = self.count
        for i in block.notable():
            self.add(block.member(i), base + i)
        self.count = base + len(block)

    def add(self, event: Event | Deferred, position: int | None = None) -> None:
        if position is None:
            position = self.count
        self.count = max(self.count, position + 1)
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


class _Tail:
    """A block without its first `skip` members."""

    name = ACCESS_BLOCK

    def __init__(self, block: Block, skip: int) -> None:
        self.block = block
        self.skip = skip

    def __len__(self) -> int:
        return len(self.block) - self.skip

    def notable(self) -> list[int]:
        return list(range(len(self)))  # rare (a crash window ends inside a block): build them all

    def member(self, i: int) -> Deferred:
        return self.block.member(i + self.skip)


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
    for item in events:
        if item.name == ACCESS_BLOCK:
            block: Block = item  # type: ignore[assignment]
            size = len(block)
            if window >= size:
                members: list[Event | Deferred] = [block.member(i) for i in range(size)]
            elif window:
                members = [block.member(i) for i in range(window)]
            else:
                members = []
            for member in members:  # the crash reader's window: every event counts
                if stretch is not None:
                    yield from stretch.kept()
                    stretch = None
                window -= 1
                yield _real(member)
            if len(members) < size:
                if stretch is None:
                    stretch = _Stretch()
                stretch.add_block(_Tail(block, len(members)) if members else block)
            continue
        event: Event | Deferred = item  # type: ignore[assignment]
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

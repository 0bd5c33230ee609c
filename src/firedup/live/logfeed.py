"""The log side of `firedup wait`: the log followed as it grows (`read.follow`) and fed to the
reader `parse` uses (`timeline.pipeline.LogReader`), its engine found as soon as its lines show
one, the last lines kept for a verdict, and a progress bar still being redrawn read for the
status line. The loop (`live.wait`) asks it for what came and for the runs so far."""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterable

from firedup.formats import Format, all_formats, foreign_engine, no_known_engine
from firedup.live.options import WaitOptions, dates_of, follower_of
from firedup.live.sofar import LAST_LINES
from firedup.live.stages import Progress, progress_of
from firedup.read.engine import Event, Scanner
from firedup.read.follow import Follower, RawLine, StreamFollower
from firedup.read.sources import Line, normalise
from firedup.timeline.pipeline import LogReader
from firedup.timeline.run import Run

SNIFF_IDLE_S = 2.0
SNIFF_NOTE_LINES = 200  # lines that show no engine before `wait` says so (it keeps looking)
SNIFF_KEEP_LINES = 2000  # lines of a log of no known engine kept in case one shows up later
MAX_EVENTS = 50_000
_STAMPED = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")


class LogFeed:
    """The followed log and its reader. `dirty` says lines changed what the reader holds since
    `runs()` was last asked for."""

    def __init__(self, opts: WaitOptions, say: Callable[[str], None]) -> None:
        self.say = say
        self.log_name = opts.log_name
        self.follower: Follower = follower_of(opts)
        self.missing_at_start = opts.log is not None and opts.log_stream is None and not opts.log.exists()
        # The log is read by the pipeline `parse` uses, fed as it grows: the same sniffing,
        # the same dates (the file's modification time when the log has no year; today for a
        # stream), the same runs. Standard input goes through the same reader.
        self.reader = LogReader(self.log_name or "(no log)", opts.engine, dates_of(opts), max_events=MAX_EVENTS)
        self.lines = 0  # lines of the run followed (after --from-end's skip)
        self.last_lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=LAST_LINES)
        self.dirty = False
        self.unknown_engine_said = False
        self.pending_looked = 0  # lines of reader.pending `_unread_lines` has looked at
        self.stray_stamp = False  # a stamped line no format's header reads has come
        self.began = False  # a line some format's header reads has come
        self.caught_up = False  # what the log held when the wait began has been read
        self.live = False  # the lines of the latest poll came after that
        self.partial_key = 0
        self.partial_progress: Progress | None = None

    @property
    def fmt(self) -> Format | None:
        return self.reader.fmt

    @property
    def events(self) -> list[Event]:
        return self.reader.events

    @property
    def stream(self) -> bool:
        return isinstance(self.follower, StreamFollower)

    @property
    def stream_ended(self) -> bool:
        return isinstance(self.follower, StreamFollower) and self.follower.ended

    def runs(self) -> list[Run]:
        self.dirty = False
        return self.reader.runs()

    def poll(self, now: float) -> list[RawLine]:
        """What the log has grown by (FollowError: it turned unreadable), its notes said."""
        self.live = self.caught_up  # these lines were written as the wait watched
        lines = self.follower.poll(now)
        self.caught_up = self.caught_up or not self.follower.backlog
        for note in self.follower.take_notes():
            if note.kind != "appeared" or self.missing_at_start:
                self.say(f"note: {note.text}")
        return lines

    def take(self, lines: list[RawLine], now: float) -> bool:
        """The lines `poll` gave read (and, with none, an engine chosen after a pause); whether
        lines came."""
        if lines:
            self._feed(lines)
            if self.fmt is None:
                self._look_at_pending()
                if len(self.reader.pending) >= SNIFF_NOTE_LINES:
                    self._choose_format(force=True)  # says once that no engine shows yet
        elif self.fmt is None and self.reader.pending and self.follower.last_growth is not None \
                and now - self.follower.last_growth >= SNIFF_IDLE_S:
            self._choose_format(force=True)
        self._peek_partial()
        return bool(lines)

    def drain(self) -> None:
        """The rest of the log, read to its end (a closed stream, a process gone)."""
        self._feed(self.follower.drain())
        if self.fmt is None and self.reader.pending:
            self._choose_format(force=True)

    def _choose_format(self, force: bool) -> None:
        """The format of the log once its lines show one (the pipeline's `choose_format`). When
        enough lines (or a pause) show none, that is said once, and the URL and the process
        decide alone meanwhile."""
        if self.reader.feed([], force=force):
            self.dirty = True
        if self.reader.fmt is None:
            if force and not self.unknown_engine_said and self._unread_lines():
                self.unknown_engine_said = True
                self.say(f"note: {self.log_name}: {no_known_engine(foreign_engine(self._pending_text()))} (until its "
                         "lines show one, the URL and the process decide)")
            kept = len(self.reader.pending)
            del self.reader.pending[:-SNIFF_KEEP_LINES]
            self.pending_looked = max(0, self.pending_looked - (kept - len(self.reader.pending)))

    def _unread_lines(self) -> bool:
        """Lines have come that no format reads: a line stamped in a layout no format's header
        takes, a line of an engine firedup does not read, or SNIFF_NOTE_LINES lines with no
        engine's. What a server prints before its logging starts (Python's warnings, a
        deprecation notice) is none of these: the log has simply not begun."""
        if len(self.reader.pending) >= SNIFF_NOTE_LINES:
            return True
        self._look_at_pending()
        return self.stray_stamp or foreign_engine(self._pending_text()) is not None

    def _look_at_pending(self) -> None:
        """Whether the lines read while no engine shows hold a line some format's header reads
        (the log has begun) or a stamped line none reads; each line looked at once."""
        pending = self.reader.pending
        for line in pending[self.pending_looked:]:
            self.pending_looked += 1
            if _STAMPED.search(line.text[:80]):
                if _readable(line.text):
                    self.began = True
                else:
                    self.stray_stamp = True

    def _pending_text(self) -> str:
        """The lines read while no engine shows, for what they look like."""
        return "\n".join(line.text for line in self.reader.pending)

    def _feed(self, lines: Iterable[RawLine]) -> None:
        logical: list[Line] = []
        for raw in lines:
            self.lines += 1
            these = normalise(raw.text, raw.number)
            logical.extend(these)
            if these:
                self.last_lines.append((raw.number, these[-1].text))
        if self.reader.feed(logical):
            self.dirty = True

    def _peek_partial(self) -> None:
        """Progress from a bar still being redrawn on the unfinished last line (display only)."""
        size = self.follower.partial_size
        if size == self.partial_key or self.fmt is None:
            return
        self.partial_key = size
        self.partial_progress = None
        tail = self.follower.partial_tail()
        segments = [s for s in tail.split("\r") if s.strip()]
        if not segments or (len(segments) == 1 and size > len(tail)):
            return  # only the middle of a long line: no whole redraw to read
        units = self.fmt.vocab.progress
        for event in Scanner(self.fmt).feed(Line(0, segments[-1].strip())):
            if event.name in units:
                self.partial_progress = progress_of(event, units)


def _readable(text: str) -> bool:
    """Some format's header, with a time, takes this line: the server's log has begun, even
    before a line shows which engine writes it."""
    for fmt in all_formats().values():
        for header in fmt.parsing.headers:
            if "time" in header.regex.groupindex:
                m = header.regex.match(text)
                if m is not None and m.group("time"):
                    return True
    return False


__all__ = ["MAX_EVENTS", "LogFeed"]

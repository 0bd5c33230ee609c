"""The batch engine's windows: a plain file read a window at a time, each scanned for its
candidate lines (`prefilter.Prefilter`) and its newlines counted, by forked processes for big
files, before any engine state comes in (`batch` feeds the engine in file order).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Iterator
from typing import Any, cast

from firedup.read.prefilter import Prefilter
from firedup.read.sources import MAX_LINE_BYTES

WINDOW = 16 << 20  # bytes scanned per step; pages are released after each step

# What a window's bytes come in: read into a buffer (this process), or mapped (a worker).
Scannable = bytes | bytearray | mmap.mmap


class NeedExact(Exception):
    """The batch engine cannot prove this source's events equal; read it incrementally."""



class Truncated(Exception):
    """The file got shorter while it was read (logrotate's copytruncate): the events of the
    windows read before stand; `parse` says so in one line."""

    def __init__(self, at: int, size: int) -> None:
        super().__init__(f"the file shrank while it was read (rotated with copytruncate?): it ends at byte {at:,} "
                         f"of the {size:,} it had; what was read before is kept")
        self.at, self.size = at, size

    def __reduce__(self) -> tuple[type, tuple[int, int]]:
        return type(self), (self.at, self.size)


def _read_at(fd: int, pos: int, size: int, whole: int) -> bytes:
    """`size` bytes of the file at `pos`, read (not mapped: a mapped page that a truncation
    removes is a SIGBUS, a read of it is short); Truncated when the file has fewer now.
    `whole`: the file's size when reading began."""
    data = os.pread(fd, size, pos)
    while len(data) < size:
        more = os.pread(fd, size - len(data), pos + len(data))
        if not more:
            raise Truncated(pos + len(data), whole)
        data += more
    return data


class WindowBuffer:
    """One buffer the windows are read into, in turn: a fresh 16 MB object per window costs
    its pages' faults and zeroing each time (more than the read itself)."""

    def __init__(self, largest: int) -> None:
        self.data = bytearray(largest)  # its allocation stays: a window no larger only shortens it

    def read(self, fd: int, pos: int, size: int, whole: int) -> bytearray:
        """`_read_at` into the buffer, which holds only these bytes after; the caller has let go
        of the previous window's (a view of it still alive means a new buffer)."""
        data = self.data
        try:
            if len(data) > size:
                del data[size:]
            elif len(data) < size:
                data += bytes(size - len(data))
        except BufferError:
            data = self.data = bytearray(size)
        view = memoryview(data)
        try:
            got = 0
            while got < size:
                more = os.preadv(fd, [view[got:]], pos + got) if _PREADV else _readinto(fd, view[got:], pos + got)
                if not more:
                    raise Truncated(pos + got, whole)
                got += more
        finally:
            view.release()
        return data


_PREADV = hasattr(os, "preadv")


def _readinto(fd: int, view: memoryview, pos: int) -> int:
    """`os.preadv` where the platform has none."""
    data = os.pread(fd, len(view), pos)
    view[:len(data)] = data
    return len(data)


class Window:
    """What the scan of one window [base, end) of the file found, before any engine state
    comes in: the candidate lines and how many lines precede each (so the window can be
    scanned in another process). Offsets inside it count from `base`."""

    __slots__ = ("base", "candidates", "end", "newlines")

    def __init__(self, base: int, end: int, candidates: list[tuple[int, int, int, list[int]]], newlines: int) -> None:
        self.base, self.end = base, end
        self.candidates = candidates  # (line start, line end, newlines from the window's start, patterns)
        self.newlines = newlines  # in the whole window


# From this size on, windows are scanned by a pool of forked processes, one per core, while
# this one feeds the engine in order: the scan is nearly all of a long log's time.
PARALLEL_FROM = 64 << 20
_TAIL = 1 << 16  # bytes read back at a time to find a window's last line end


def _bounds(fd: int, size: int) -> list[tuple[int, int]]:
    """The windows: `WINDOW` bytes each, cut after their last newline."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    while pos < size:
        end = min(size, pos + WINDOW)
        if end < size:
            cut, high = -1, end
            while cut < 0 and high > pos:
                low = max(pos, high - _TAIL)
                found = _read_at(fd, low, high - low, size).rfind(b"\n")
                cut, high = (low + found if found >= 0 else -1), low
            if cut < 0:  # no line ends in a whole window: longer than any log line
                raise NeedExact("a line longer than the scan window")
            end = cut + 1
        bounds.append((pos, end))
        pos = end
    return bounds


def scanned(fd: int, size: int, pre: Prefilter) -> Iterator[tuple[Window, bytearray]]:
    """Each window's scan and its bytes, in order."""
    bounds = _bounds(fd, size)
    jobs = scan_jobs(size)
    buffer = WindowBuffer(max(end - pos for pos, end in bounds))
    if jobs <= 1:
        for pos, end in bounds:
            data = buffer.read(fd, pos, end - pos, size)
            yield scan_window(data, pre, pos), data
        return
    from firedup.core.pool import ordered_map

    # The workers scan the file mapped (no copy); this process never touches the mapping, so a
    # truncation's SIGBUS ends only a worker, whose window is then read here (`_scan_here`).
    mapped: mmap.mmap | None
    try:  # the size read first: a file shorter now has no mapping of that length
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except ValueError:
        raise Truncated(os.fstat(fd).st_size, size) from None
    except OSError:  # a file system that maps nothing: the workers read their windows
        mapped = None
    _FORKED[:] = [(fd, size, pre, mapped)]  # what the forked workers scan with
    try:
        # a worker that dies scans nothing: its window is scanned here instead
        for (pos, end), found in zip(bounds, ordered_map(_scan_forked, bounds, jobs, _scan_here), strict=True):
            yield found, buffer.read(fd, pos, end - pos, size)
    finally:
        _FORKED.clear()
        if mapped is not None:
            with contextlib.suppress(BufferError):
                mapped.close()


_FORKED: list[tuple[int, int, Prefilter, mmap.mmap | None]] = []

# Linux 5.14+: map a window's pages (already in the page cache) in one call, not a fault
# per page as the scan first touches them.
_MADV_POPULATE_READ = 22
_populate = [hasattr(mmap.mmap, "madvise")]


def _scan_forked(bounds: tuple[int, int]) -> Window:
    """A worker's scan of one window, on the mapped file."""
    _fd, _size, pre, mapped = _FORKED[0]
    if mapped is None:
        return _scan_here(bounds, "")
    pos, end = bounds
    page = pos - pos % mmap.PAGESIZE
    if _populate[0]:
        try:
            mapped.madvise(_MADV_POPULATE_READ, page, end - page)
        except OSError:  # an older kernel, or pages gone: they fault in one by one
            _populate[0] = False
    found = scan_window(mapped, pre, pos, pos, end)
    with contextlib.suppress(OSError, ValueError):  # the pages leave this worker's resident set
        mapped.madvise(mmap.MADV_DONTNEED, page, end - page)
    return found


def _scan_here(bounds: tuple[int, int], _why: str) -> Window:
    """A window read, then scanned: where its worker died (a SIGBUS of a truncated file, the
    OOM killer), here."""
    fd, size, pre, _mapped = _FORKED[0]
    pos, end = bounds
    return scan_window(_read_at(fd, pos, end - pos, size), pre, pos)


def scan_jobs(size: int) -> int:
    """Processes to scan a file of `size` bytes with: one per core for big files, where
    processes can be forked (Linux), and not from inside a pool's worker (parse's own)."""
    if size < PARALLEL_FROM or sys.platform != "linux":
        return 1
    import multiprocessing

    from firedup.core.pool import in_worker

    if multiprocessing.current_process().daemon or in_worker():
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return min(cores, 8)


def scan_window(mm: Scannable, pre: Prefilter, base: int, pos: int = 0, end: int | None = None) -> Window:
    """Scan the window `mm[pos:end]` (whole lines, at `base` in the file): its candidate lines,
    and the line count up to each, at offsets from `pos`.

    The window is scanned piece by piece (`_SCAN_PIECE`, cut at line ends), and each piece's
    newlines are counted right after its scan, while its bytes are still in the CPU cache:
    a tenth less time than scanning the whole window and then reading it again to count."""

    end = len(mm) if end is None else end
    _check_line_lengths(mm, pos, end)
    hits: list[int] = []
    ids: list[int] = []

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        hits.append(stop)
        ids.append(pattern)

    counter = NewlineCounter(mm, pos, end)
    candidates: list[tuple[int, int, int, list[int]]] = []
    line_end = pos - 1
    counted, newlines = pos, 0
    view = memoryview(mm)
    try:
        low = pos
        while low < end:
            high = min(end, low + _SCAN_PIECE)
            if high < end:
                cut = mm.rfind(b"\n", low, high)
                high = cut + 1 if cut >= 0 else mm.find(b"\n", high, end) + 1 or end
            piece = view[low:high]
            try:
                pre.database.scan(cast(bytes, piece), match_event_handler=on_match)  # any buffer will do
            finally:
                piece.release()
            for stop, pattern in sorted(zip(hits, ids, strict=True)):
                at = low + max(stop - 1, 0)  # the match's last byte
                if at > line_end:  # on a line after the last candidate's
                    before = mm.rfind(b"\n", low, at)
                    after = mm.find(b"\n", at, high)
                    start, line_end = (low if before < 0 else before + 1), (high if after < 0 else after)
                    newlines += counter.count(counted, start)
                    counted = start
                    candidates.append((start, line_end, newlines, []))
                candidates[-1][3].append(pattern)
            hits.clear()
            ids.clear()
            newlines += counter.count(counted, high)
            counted = low = high
    finally:
        view.release()
    if pos:
        candidates = [(start - pos, stop - pos, count, patterns) for start, stop, count, patterns in candidates]
    return Window(base, base + end - pos, candidates, newlines)


# Bytes scanned at a time inside a window: small enough that counting its newlines right
# after finds them in the CPU cache.
_SCAN_PIECE = 1 << 18
_COUNT_PIECE = 1 << 18  # bytes compared at a time when counting newlines


class NewlineCounter:
    """Newlines in byte ranges of the window [base, end) of `mm`: a short range by a copy and
    `bytes.count` (a numpy call costs a microsecond before it compares a byte: six times a
    copy of a few lines), a long one in pieces whose comparison stays in the CPU cache (a
    third faster than comparing a whole window at once)."""

    def __init__(self, mm: Scannable, base: int, end: int) -> None:
        import numpy as np

        self.mm, self.base = mm, base
        self.chunk = np.frombuffer(mm, dtype=np.uint8, count=end - base, offset=base)
        self.flags = np.empty(_COUNT_PIECE, dtype=bool)
        self.equal, self.count_nonzero = np.equal, np.count_nonzero

    def count(self, start: int, stop: int) -> int:
        if stop - start <= _COPY_COUNT:
            return self.mm[start:stop].count(b"\n")
        total = 0
        chunk, out, stop = self.chunk, self.flags, stop - self.base
        for at in range(start - self.base, stop, _COUNT_PIECE):
            part = chunk[at: min(at + _COUNT_PIECE, stop)]
            flags = out[: len(part)]
            self.equal(part, 10, out=flags)
            total += int(self.count_nonzero(flags))
        return total


_COPY_COUNT = 4096  # bytes up to which a range's newlines are counted on a copy


def _check_line_lengths(mm: Scannable, pos: int, end: int) -> None:
    """NeedExact if a line of [pos, end) is longer than `MAX_LINE_BYTES` (the incremental
    engine reports it). Such a line holds a whole block of half that size with no newline,
    so only a window with such a block is measured line by line."""
    block = MAX_LINE_BYTES // 2
    if all(mm.find(b"\n", at, min(at + block, end)) >= 0 for at in range(pos, end, block) if end - at >= block):
        return
    import numpy as np

    chunk = np.frombuffer(mm, dtype=np.uint8, count=end - pos, offset=pos)
    newlines = np.flatnonzero(chunk == 10)
    if mm[end - 1] != 10:
        newlines = np.append(newlines, end - pos - 1)
    if int(np.diff(newlines, prepend=-1).max()) > MAX_LINE_BYTES:
        raise NeedExact("a line longer than the limit")

"""The batch engine's windows: a plain file read a window at a time, each scanned for its
candidate lines (`prefilter.Prefilter`) and its newlines counted, by forked processes for big
files where there are cores for them, before any engine state comes in (`batch` feeds the
engine in file order).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Iterator, Sequence
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

    @classmethod
    def at_read(cls, fd: int, at: int, size: int) -> Truncated:
        """A read at `at` came back short: the file ends at `at` or before (a read may begin past its end)."""
        return cls(min(at, os.fstat(fd).st_size), size)


def _read_at(fd: int, pos: int, size: int, whole: int) -> bytes:
    """`size` bytes of the file at `pos`, read (not mapped: a mapped page that a truncation
    removes is a SIGBUS, a read of it is short); Truncated when the file has fewer now.
    `whole`: the file's size when reading began."""
    data = os.pread(fd, size, pos)
    while len(data) < size:
        more = os.pread(fd, size - len(data), pos + len(data))
        if not more:
            raise Truncated.at_read(fd, pos + len(data), whole)
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
                    raise Truncated.at_read(fd, pos + got, whole)
                got += more
        finally:
            view.release()
        return data


_PREADV = hasattr(os, "preadv")


class LazyWindow:
    """A window of the file read only where it is looked at, a block at a time: what a
    process that did not scan the window needs of it (the lines around its candidates, a few
    searches back from them) is a small part of 16 MB, and reading all of it was most of that
    process's share of a long log. Offers what `batch` asks of a window's bytes; a block the
    file no longer has is `Truncated`."""

    __slots__ = ("_blocks", "_fd", "_whole", "base", "size")

    def __init__(self, fd: int, base: int, size: int, whole: int) -> None:
        self._fd, self.base, self.size, self._whole = fd, base, size, whole
        self._blocks: dict[int, bytes] = {}

    def __len__(self) -> int:
        return self.size

    def _block(self, index: int) -> bytes:
        block = self._blocks.get(index)
        if block is None:
            low = index * _LAZY_BLOCK
            high = min(self.size, low + _LAZY_BLOCK)
            block = self._blocks[index] = _read_at(self._fd, self.base + low, high - low, self._whole)
        return block

    def range(self, low: int, high: int) -> bytes:
        """The bytes [low, high) of the window."""
        high = min(high, self.size)
        if high <= low:
            return b""
        first, last = low // _LAZY_BLOCK, (high - 1) // _LAZY_BLOCK
        if first == last:
            origin = first * _LAZY_BLOCK
            return self._block(first)[low - origin:high - origin]
        return b"".join([self._block(first)[low - first * _LAZY_BLOCK:],
                         *(self._block(i) for i in range(first + 1, last)),
                         self._block(last)[:high - last * _LAZY_BLOCK]])

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            start, stop, _step = key.indices(self.size)
            return self.range(start, stop)
        if key < 0:
            key += self.size
        if not 0 <= key < self.size:
            raise IndexError("window index out of range")
        return self._block(key // _LAZY_BLOCK)[key % _LAZY_BLOCK]

    def find(self, sub: bytes, low: int, high: int) -> int:
        """`bytes.find(sub, low, high)`, reading block by block from `low`."""
        return self.find_any((sub,), low, high)

    def rfind(self, sub: bytes, low: int, high: int) -> int:
        """`bytes.rfind(sub, low, high)`, reading block by block back from `high`."""
        return self.rfind_any((sub,), low, high)

    def find_any(self, subs: Sequence[bytes], low: int, high: int) -> int:
        """Where the first of `subs` in [low, high) starts, -1 if none: block by block from
        `low`, all of them in each block (one pass, however many). Each block is searched in
        place; only the few bytes where two blocks meet are copied, for a match across them."""
        if not subs:
            return -1
        high, overlap = min(high, self.size), max(map(len, subs)) - 1
        index = low // _LAZY_BLOCK
        while index * _LAZY_BLOCK < high:
            origin = index * _LAZY_BLOCK
            block = self._block(index)
            first, stop = max(low - origin, 0), min(high - origin, len(block))
            found = [at for sub in subs if (at := block.find(sub, first, stop)) >= 0]
            block_end = origin + len(block)
            if overlap and block_end < high:  # a match that starts here and ends in the next block
                seam_low = max(low, block_end - overlap)
                seam = self.range(seam_low, min(high, block_end + overlap))
                found += [at + seam_low - origin for sub in subs
                          if 0 <= (at := seam.find(sub)) < block_end - seam_low]
            if found:
                return origin + min(found)
            index += 1
        return -1

    def rfind_any(self, subs: Sequence[bytes], low: int, high: int) -> int:
        """Where the last of `subs` in [low, high) starts, -1 if none: block by block back
        from `high`, each in place (see `find_any`)."""
        high = min(high, self.size)
        if high <= low or not subs:
            return -1
        overlap = max(map(len, subs)) - 1
        index = (high - 1) // _LAZY_BLOCK
        while index >= 0 and (index + 1) * _LAZY_BLOCK > low:
            origin = index * _LAZY_BLOCK
            block = self._block(index)
            first, stop = max(low - origin, 0), min(high - origin, len(block))
            found = [at for sub in subs if (at := block.rfind(sub, first, stop)) >= 0]
            if found:
                return origin + max(found)
            if overlap and origin > low:  # a match that starts in the block before and ends here
                seam_low = max(low, origin - overlap)
                seam = self.range(seam_low, min(high, origin + overlap))
                found = [at for sub in subs if 0 <= (at := seam.rfind(sub)) < origin - seam_low]
                if found:
                    return seam_low + max(found)
            index -= 1
        return -1

    def newlines(self, start: int, stop: int) -> int:
        """Newlines in [start, stop): `NewlineCounter.count` for a lazy window."""
        total, index, stop = 0, start // _LAZY_BLOCK, min(stop, self.size)
        while index * _LAZY_BLOCK < stop:
            origin = index * _LAZY_BLOCK
            total += self._block(index).count(b"\n", max(start - origin, 0), stop - origin)
            index += 1
        return total

    def read_end(self) -> None:
        """Read the window's last block (`Truncated` if the file ends before)."""
        if self.size:
            self._block((self.size - 1) // _LAZY_BLOCK)

    @property
    def blocks_read(self) -> int:
        return len(self._blocks)


def find_any(data: bytes | bytearray | LazyWindow, subs: Sequence[bytes], low: int, high: int) -> int:
    """Where the first of `subs` in data[low:high] starts, -1 if none."""
    if isinstance(data, LazyWindow):
        return data.find_any(subs, low, high)
    found = [at for sub in subs if (at := data.find(sub, low, high)) >= 0]
    return min(found) if found else -1


def rfind_any(data: bytes | bytearray | LazyWindow, subs: Sequence[bytes], low: int, high: int) -> int:
    """Where the last of `subs` in data[low:high] starts, -1 if none."""
    if isinstance(data, LazyWindow):
        return data.rfind_any(subs, low, high)
    found = [at for sub in subs if (at := data.rfind(sub, low, high)) >= 0]
    return max(found) if found else -1


_LAZY_BLOCK = 1 << 16  # bytes read at a time from a lazy window


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


# From this size on, windows are scanned by forked processes, one per core (`forked_scans`), while
# this one feeds the engine in order: the scan is nearly all of a long log's time. (On one
# core, by this process, a piece at a time: `scan_read`.)
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


def scanned(fd: int, size: int, pre: Prefilter) -> Iterator[tuple[Window, bytearray | LazyWindow]]:
    """Each window's scan and its bytes, in order: read whole where this process scans it,
    read where they are looked at (`LazyWindow`) where a worker did."""
    bounds = _bounds(fd, size)
    jobs = scan_jobs(size)
    if jobs <= 1 and size < PARALLEL_FROM:
        buffer = WindowBuffer(max((end - pos for pos, end in bounds), default=0))
        for pos, end in bounds:
            data = buffer.read(fd, pos, end - pos, size)
            yield scan_window(data, pre, pos), data
        return
    if jobs <= 1:  # a big file and one core: scanned here, read a piece at a time, never mapped
        buffer = WindowBuffer(_READ_PIECE)
        for pos, end in bounds:
            found = scan_read(fd, pos, end, size, pre, buffer)
            yield found, LazyWindow(fd, pos, end - pos, size)
        return
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
        # the workers scan on, taking window after window, while this process reads a
        # start-up's lines, as it does most of its time
        for (pos, end), found in zip(bounds, forked_scans(bounds, jobs), strict=True):
            window = LazyWindow(fd, pos, end - pos, size)
            # A worker that mapped the file after it shrank read zeros, not a SIGBUS, up to the
            # end of the page where it ends now: this process reads what it looks at only, so the
            # window's end is read here, which a shorter file makes `Truncated`.
            window.read_end()
            yield found, window
    finally:
        _FORKED.clear()
        if mapped is not None:
            with contextlib.suppress(BufferError):
                mapped.close()


_FORKED: list[tuple[int, int, Prefilter, mmap.mmap | None]] = []


def forked_scans(bounds: Sequence[tuple[int, int]], jobs: int) -> Iterator[Window]:
    """`_scan_forked` of each window, in order, by `jobs` forked processes. The windows' numbers
    wait in a pipe that each process takes the next from (whole 4-byte records, written before
    any fork), so a process slowed by this one's work takes fewer; each says which window it
    takes, then sends its scan, down a pipe of its own (`_scan_in_child`). A process that dies
    (a SIGBUS of a truncated file, the OOM killer) sends no more: the window it had taken is
    scanned here (`_scan_here`), and so is every window left once all have ended. An exception
    a scan raises (NeedExact) is raised here, in its window's turn.

    Plain `fork` and pipes, not `core.pool`: a long log's scan is one round of equal windows,
    and the pool's imports, threads and queues (concurrent.futures, multiprocessing: ~10 ms
    before the first window) were a sixtieth of the 1 GiB log's time on 2 cores."""
    import select

    tasks_read, tasks_write = os.pipe()
    with open(tasks_write, "wb") as tasks:  # 4 bytes a window: far below a pipe's 64 kB
        tasks.write(b"".join(i.to_bytes(4, "little") for i in range(len(bounds))))
    children: dict[int, int] = {}  # result pipe -> pid
    try:
        for _k in range(jobs):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: it never returns
                _scan_in_child(bounds, tasks_read, write_end, [read_end, *children])
            os.close(write_end)
            children[read_end] = pid
        os.close(tasks_read)
        tasks_read = -1
        pending: dict[int, bytearray] = {fd: bytearray() for fd in children}
        taken: dict[int, int | None] = {fd: None for fd in children}  # the window each is on
        done: dict[int, Any] = {}  # window -> its message, until its turn
        lost: set[int] = set()  # taken by a process that died
        for i, window in enumerate(bounds):
            while i not in done and i not in lost and pending:
                ready, _, _ = select.select(list(pending), [], [])
                for fd in ready:
                    data = os.read(fd, 1 << 16)
                    buffer = pending[fd]
                    if not data:  # it ended: finished, or died on the window it had taken
                        if (on := taken[fd]) is not None:
                            lost.add(on)
                        del pending[fd]
                        continue
                    buffer += data
                    for message in _whole_messages(buffer):
                        if message[0] == "taking":
                            taken[fd] = message[1]
                        else:
                            taken[fd] = None
                            done[message[1]] = message
            message = done.pop(i, None)
            if message is None:  # lost, or left when every process had ended
                yield _scan_here(window)
            elif message[0] == "raised":
                import pickle

                raise pickle.loads(message[2])
            else:
                yield Window(*message[2:])
    finally:
        import signal

        if tasks_read >= 0:
            os.close(tasks_read)
        for fd, pid in children.items():
            os.close(fd)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # done already, or no longer needed
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _scan_in_child(bounds: Sequence[tuple[int, int]], tasks: int, write_end: int, inherited: list[int]) -> None:
    """A forked scanner: takes the next window's number from `tasks` until none is left, and
    for each sends, down `write_end`, that it takes it, then its scan (a scan's exception
    pickled instead, and no more taken), each a length and a marshalled tuple; then `_exit`
    (no atexit, no buffered output of the parent's flushed twice)."""
    code = 0
    try:
        import faulthandler

        faulthandler.disable()  # a SIGBUS here is said by the parent, not dumped as a fatal error
        for fd in inherited:  # the other processes' result pipes: their ends are the parent's
            os.close(fd)
        import marshal

        def send(message: tuple[Any, ...]) -> None:
            data = marshal.dumps(message)
            _write_all(write_end, len(data).to_bytes(4, "little") + data)

        while len(record := os.read(tasks, 4)) == 4:
            i = int.from_bytes(record, "little")
            send(("taking", i))
            try:
                found = _scan_forked(bounds[i])
            except Exception as exc:  # handed to the parent, which raises it in its turn
                import pickle

                send(("raised", i, pickle.dumps(exc)))
                break
            send(("scanned", i, found.base, found.end, found.candidates, found.newlines))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _whole_messages(buffer: bytearray) -> Iterator[Any]:
    """The messages `_scan_in_child` sent that `buffer` holds whole (a length, then a marshalled
    tuple), each taken out of it; a message still arriving stays."""
    import marshal

    while len(buffer) >= 4:
        size = int.from_bytes(buffer[:4], "little")
        if len(buffer) < 4 + size:
            return
        message = marshal.loads(bytes(buffer[4:4 + size]))
        del buffer[:4 + size]
        yield message


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` down `fd` (a pipe takes a long message a part at a time)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# Linux 5.14+: map a window's pages (already in the page cache) in one call, not a fault
# per page as the scan first touches them.
_MADV_POPULATE_READ = 22
_populate = [hasattr(mmap.mmap, "madvise")]


def _scan_forked(bounds: tuple[int, int]) -> Window:
    """A worker's scan of one window, on the mapped file."""
    _fd, _size, pre, mapped = _FORKED[0]
    if mapped is None:
        return _scan_here(bounds)
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


def _scan_here(bounds: tuple[int, int]) -> Window:
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
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    if cores <= 1:
        return 1
    # A worker of a pool was forked from a process that had imported the pool: where its
    # module is absent, this is no worker, and nothing is imported to say so (~10 ms).
    pool, processes = sys.modules.get("firedup.core.pool"), sys.modules.get("multiprocessing")
    if (pool is not None and pool.in_worker()) or (processes is not None and processes.current_process().daemon):
        return 1
    return min(cores, 8)


def scan_read(fd: int, pos: int, end: int, whole: int, pre: Prefilter, buffer: WindowBuffer) -> Window:
    """`scan_window` of the file's window [pos, end), read into `buffer` a piece at a time
    (`_READ_PIECE` bytes cut after their last line end, a longer line read whole): on one core
    a big file is scanned by this process, from pieces that stay in the CPU cache between their
    read and their scan (which costs what mapping the window's pages costs), and read, not
    mapped: a truncation is a short read (`Truncated`), never a SIGBUS."""
    candidates: list[tuple[int, int, int, list[int]]] = []
    newlines, at = 0, pos
    while at < end:
        size = min(_READ_PIECE, end - at)
        data = buffer.read(fd, at, size, whole)
        cut = size if at + size == end else data.rfind(b"\n") + 1
        while not cut:  # no line ends in the piece: read on to its line's end
            if size > MAX_LINE_BYTES:
                raise NeedExact("a line longer than the limit")
            size = min(2 * size, end - at, MAX_LINE_BYTES + 1)
            data = buffer.read(fd, at, size, whole)
            cut = size if at + size == end else data.rfind(b"\n") + 1
        found = scan_window(data, pre, at, 0, cut)
        shift = at - pos
        candidates += [(start + shift, stop + shift, count + newlines, patterns)
                       for start, stop, count, patterns in found.candidates]
        newlines += found.newlines
        at += cut
    return Window(pos, end, candidates, newlines)


# Bytes read at a time by `scan_read`: a piece stays in the CPU cache for its scan and count.
_READ_PIECE = 1 << 20


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
                at = low + (stop - 1 if stop else 0)  # the match's last byte
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
    if pre.verify:
        candidates = _verified(mm, pre, candidates)
    if pos:
        candidates = [(start - pos, stop - pos, count, patterns) for start, stop, count, patterns in candidates]
    return Window(base, base + end - pos, candidates, newlines)


def _verified(mm: Scannable, pre: Prefilter, candidates: list[tuple[int, int, int, list[int]]]
              ) -> list[tuple[int, int, int, list[int]]]:
    """The candidates without the marks of patterns that only lead to a line to check
    (`Prefilter.verify`) where the line fails the check; a line left with no mark is none."""
    kept = []
    for start, stop, count, patterns in candidates:
        if not pre.verify.keys().isdisjoint(patterns):
            line = mm[start:stop]
            patterns = [p for p in patterns if p not in pre.verify or pre.verify[p].search(line) is not None]
            if not patterns:
                continue
        kept.append((start, stop, count, patterns))
    return kept


# Bytes scanned at a time inside a window: small enough that counting its newlines right
# after finds them in the CPU cache.
_SCAN_PIECE = 1 << 18
_COUNT_PIECE = 1 << 18  # bytes compared at a time when counting newlines


class NewlineCounter:
    """Newlines in byte ranges of the window [base, end) of `mm`. With numpy (`count_in_bulk`),
    a long range in pieces whose comparison stays in the CPU cache (a third faster than
    comparing a whole window at once); a short range, and every range without numpy, by
    `bytes.count` (a numpy call costs a microsecond before it compares a byte: six times a
    copy of a few lines)."""

    def __init__(self, mm: Scannable, base: int, end: int) -> None:
        self.mm, self.base = mm, base
        # a buffer counts in place; a mapping has no `count`: a piece of it is copied first
        self.in_place = isinstance(mm, (bytes, bytearray))
        self.chunk: Any = None
        if _NUMPY:
            np = _NUMPY[0]
            self.chunk = np.frombuffer(mm, dtype=np.uint8, count=end - base, offset=base)
            # one scratch array a process: a fresh 256 kB one a counter is a mapping of its own
            # (malloc's), faulted in and unmapped again for every piece `scan_read` scans
            flags = _SCRATCH.get(_COUNT_PIECE)
            if flags is None:
                flags = _SCRATCH[_COUNT_PIECE] = np.empty(_COUNT_PIECE, dtype=bool)
            self.flags = flags
            self.equal, self.count_nonzero = np.equal, np.count_nonzero

    def count(self, start: int, stop: int) -> int:
        if self.chunk is None or stop - start <= _COPY_COUNT:
            return _count_plain(self.mm, start, stop, self.in_place)
        total = 0
        chunk, out, stop = self.chunk, self.flags, stop - self.base
        for at in range(start - self.base, stop, _COUNT_PIECE):
            part = chunk[at: min(at + _COUNT_PIECE, stop)]
            flags = out[: len(part)]
            self.equal(part, 10, out=flags)
            total += int(self.count_nonzero(flags))
        return total


def _count_plain(mm: Scannable, start: int, stop: int, in_place: bool) -> int:
    """Newlines in mm[start:stop] by `bytes.count`: in place in a buffer, a piece at a time
    (in the CPU cache) from a mapping."""
    if in_place:
        return cast(bytes, mm).count(b"\n", start, stop)
    return sum(mm[at:min(at + _COUNT_PIECE, stop)].count(b"\n") for at in range(start, stop, _COUNT_PIECE))


_COPY_COUNT = 4096  # bytes up to which a range's newlines are counted without numpy
# Newlines are counted with numpy once this many bytes are to be read: it compares a long
# range three times as fast as `bytes.count`, but importing it costs ~45 ms (as long as
# scanning 60 MB), which counting less than this does not repay.
NUMPY_FROM = 256 << 20
_SCRATCH: dict[int, Any] = {}  # piece size -> the bool array its comparisons are written to
_NUMPY: list[Any] = []  # numpy, once `count_in_bulk` has imported it


def count_in_bulk(total: int) -> None:
    """Count newlines with numpy where `total` bytes are to be read, here and in the workers
    forked after, enough to repay its import (`NUMPY_FROM`). Imported here, before any fork: a
    worker that imports it after the fork pays more than this process does (its pages copied
    on write), and each of them would (the 286 MB log on 2 cores: 0.45 s against 0.41)."""
    if total >= NUMPY_FROM and not _NUMPY:
        try:
            import numpy
        except ImportError:
            return
        _NUMPY.append(numpy)


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

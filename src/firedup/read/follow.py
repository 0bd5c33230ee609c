"""Follow a log file that another process is still writing, like `tail -F`.

`firedup wait` starts before, during or after the server writes its log, and loggers
rotate or truncate files under it. The follower hands out only complete physical lines
(a half-written line is never parsed), keeps numbering them across rotations so that
events stay in order, and never blocks: the caller decides how long to sleep.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from firedup.errors import FollowError
from firedup.read.sources import GZIP_RATIO_ENV, GZIP_RATIO_FROM, bom_encoding, gzip_max_ratio

READ_CHUNK = 1 << 20  # bytes per read; a poll returns after at most `max_bytes`
# A line that has stopped growing for this long without a newline is taken as complete:
# a log that ends without a final newline must still be read to its end.
PARTIAL_GRACE_S = 3.0
PEEK_BYTES = 4096
# An unfinished line longer than this is no log line: keep only its newest part (a bar that
# redraws itself without newlines for hours would otherwise grow without bound).
MAX_PARTIAL = 8 * READ_CHUNK
# Bytes one poll hands out at most: a big backlog (a log of hundreds of MB, a flood on stdin)
# is read over several polls, so the caller's deadline is looked at in between.
POLL_BYTES = READ_CHUNK
POLL_LINES = 20_000  # ... and lines (a megabyte of blank lines is a million of them)
POLL_PIECE = 64 * 1024  # bytes read at a time within a poll
# Bytes of a stream read ahead of the caller at most: a writer faster than the reading blocks
# (as it would on a full pipe) instead of growing memory without bound.
STREAM_AHEAD = 4 * READ_CHUNK


@dataclass(frozen=True, slots=True)
class RawLine:
    number: int  # 1-based, counted across rotations and truncations
    text: str
    # True when this is the rest of a line already handed out as complete after
    # PARTIAL_GRACE_S (its number is the same as that line's).
    continued: bool = False


@dataclass
class FollowNote:
    """Something about the file the caller should tell the user."""

    kind: str  # "appeared" | "rotated" | "truncated" | "vanished"
    text: str


# An HTTP server's access line for a GET or HEAD (uvicorn's `127.0.0.1:47550 - "GET /health
# HTTP/1.1" 200 OK`): the server answering a probe, this wait's or another's, never progress of
# its start-up (a server that logs each /health would otherwise never fall silent). The engine's
# own warm-up request is a POST.
_PROBE_ANSWER = re.compile(rb' - "(?:GET|HEAD) /[^ "]{0,400} HTTP/[0-9.]{1,5}" [0-9]{3}')
_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
_SNIFF = 4  # bytes that name what a log is written in: a gzip header, a UTF-16/32 byte-order mark


class Decoder:
    """What a followed log's bytes are, decided on its first bytes as `parse` decides
    (`read.sources`): gzip (inflated as it comes, bounded as `parse` bounds it), UTF-16/32 with a
    byte-order mark (decoded), else UTF-8 as is; `feed` hands out UTF-8 bytes. A stream that
    stops inflating well ends there, with `error` saying why."""

    def __init__(self) -> None:
        self.head = b""
        self.kind: str | None = None  # "plain" | "gzip" | an encoding
        self.error: str | None = None
        self._gz: zlib._Decompress | None = None
        self._text: codecs.IncrementalDecoder | None = None
        self._bom = False
        self._packed = 0
        self._inflated = 0
        self._ratio = gzip_max_ratio()

    def feed(self, chunk: bytes, final: bool = False) -> bytes:
        if self.kind is None:
            self.head += chunk
            if len(self.head) < _SNIFF and not final:
                return b""
            chunk, self.head = self.head, b""
            self._decide(chunk)
        if self.error is not None:
            return b""
        if self.kind == "gzip":
            return self._inflate(chunk, final)
        if self._text is not None:
            return self._decode(chunk, final)
        return chunk

    def _decide(self, head: bytes) -> None:
        encoding = bom_encoding(head) if b"\x00" in head else None
        if head.startswith(_GZIP_MAGIC):
            self.kind, self._gz = "gzip", zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding is not None:
            self.kind, self._text, self._bom = encoding, codecs.getincrementaldecoder(encoding)("replace"), True
        else:
            self.kind = "plain"

    def _decode(self, chunk: bytes, final: bool) -> bytes:
        assert self._text is not None
        text = self._text.decode(chunk, final)
        if self._bom and text:
            text, self._bom = text.removeprefix("\ufeff"), False
        return text.encode("utf-8", errors="replace")

    def _inflate(self, chunk: bytes, final: bool) -> bytes:
        out = bytearray()
        while chunk and self._gz is not None:
            self._packed += len(chunk)
            try:
                out += self._gz.decompress(chunk)
            except zlib.error as exc:
                self.error = f"a broken gzip stream ({exc}); read up to there"
                break
            chunk = self._gz.unused_data if self._gz.eof else b""
            if self._gz.eof:  # a member ended: another may follow, else the rest is garbage
                self._packed -= len(chunk)
                if chunk and not chunk.startswith(_GZIP_MAGIC[:len(chunk)]):
                    self.error = "garbage after the gzip stream's end; read up to there"
                    break
                self._gz = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._inflated += len(out)
        if self._ratio and self._inflated > GZIP_RATIO_FROM and self._inflated > self._ratio * max(self._packed, 1):
            self.error = (f"inflates to more than {self._ratio:g} times its compressed size (a gzip bomb?), so "
                          f"reading stopped after {self._inflated >> 20} MB ({GZIP_RATIO_ENV}=0 reads it whole)")
        return bytes(out)  # a stream cut short: what inflated stands


@dataclass
class Follower:
    """Reads new complete lines of `path` on each `poll()`.

    - a file that does not exist yet: polls return nothing until it appears;
    - rotation (the path now names another inode): the old file is read to its end, then
      the new one from its start;
    - truncation (the file got shorter than what was read, as with copytruncate): reading
      restarts at offset 0 (like `tail -F`, a truncation followed by more writes than were
      read before the next poll cannot be told from growth);
    - a partial last line stays buffered until its newline arrives (or it has not grown for
      `partial_grace` seconds, for logs whose last line has no newline);
    - a path that is, or becomes, something other than a regular file (a FIFO swapped in) is
      never opened, so a poll never blocks on it: it is said once and waited out like a
      missing file;
    - a poll hands out at most `max_bytes`; `backlog` says more was there.
    """

    path: Path
    partial_grace: float = PARTIAL_GRACE_S
    # Skip what the file already holds when first opened (numbering its lines all the same):
    # for a log that collects several startups, only a new one counts.
    from_end: bool = False
    max_bytes: int = POLL_BYTES
    max_lines: int = POLL_LINES
    number: int = 0  # last line number handed out
    backlog: bool = False  # the last poll stopped at `max_bytes`: more is there to read
    notes: list[FollowNote] = field(default_factory=list)
    _file: BinaryIO | None = None
    _ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the open file
    _offset: int = 0
    _partial: bytearray = field(default_factory=bytearray)
    _partial_since: float = 0.0  # monotonic time the partial last grew
    _flushed_partial: bool = False  # the partial was handed out; its rest continues it
    _ever_opened: bool = False
    _vanished: bool = False
    _not_regular: bool = False  # said once: the path is not a regular file
    # monotonic time the log last grew (for stall checks): any byte, but lines that are the
    # server's answers to probes (`_PROBE_ANSWER`)
    last_growth: float | None = None
    bytes_read: int = 0
    decoder: Decoder = field(default_factory=Decoder)  # gzip, UTF-16/32: decoded as `parse` does

    @property
    def exists(self) -> bool:
        return self._file is not None

    @property
    def partial(self) -> str:
        """The unfinished last line as it stands (for progress bars redrawn with `\\r`)."""
        return self._partial.decode("utf-8", errors="replace")

    @property
    def partial_size(self) -> int:
        return len(self._partial)

    def partial_tail(self, max_bytes: int = PEEK_BYTES) -> str:
        """The end of the unfinished last line: enough for the newest redraw of a bar, cheap
        even when a bar has redrawn itself thousands of times on one line."""
        return bytes(self._partial[-max_bytes:]).decode("utf-8", errors="replace")

    def take_notes(self) -> list[FollowNote]:
        notes, self.notes = self.notes, []
        return notes

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def poll(self, now: float | None = None) -> list[RawLine]:
        """New complete lines since the last poll; never blocks."""
        now = time.monotonic() if now is None else now
        out: list[RawLine] = []
        self._check_identity(out, now)
        if not self.exists:
            return out
        self._read_available(out, now)
        if self._partial and not self._flushed_partial and now - self._partial_since >= self.partial_grace:
            out.append(self._emit(self._partial, continued=False))
            self._partial = bytearray()
            self._flushed_partial = True
        return out

    def drain(self) -> list[RawLine]:
        """Everything left, the unfinished last line included: the writer is gone."""
        out = self.poll()
        self._take(b"", out, time.monotonic(), final=True)
        if self._partial:
            out.append(self._emit(self._partial, continued=self._flushed_partial))
            self._partial = bytearray()
            self._flushed_partial = False
        return out

    # -- internals -----------------------------------------------------------------------

    def _check_identity(self, out: list[RawLine], now: float) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._file is not None and not self._vanished:
                self._vanished = True
                self.notes.append(FollowNote("vanished", f"{self.path} was removed; waiting for a new file"))
            return
        except OSError:
            return
        ident = (st.st_dev, st.st_ino)
        self._vanished = False
        if not stat.S_ISREG(st.st_mode):
            if self._file is not None and ident != self._ident:  # swapped for a FIFO: finish the old file
                self._read_available(out, now)
                if self._partial:
                    out.append(self._emit(self._partial, continued=self._flushed_partial))
                    self._partial, self._flushed_partial = bytearray(), False
                self.close()
            self._say_not_regular(st.st_mode)
            return
        self._not_regular = False
        if self._file is None:
            self._open(ident, now)
            return
        if ident != self._ident:
            # Rotated: finish the old file first (its last lines were written before the
            # rename), then follow the new one from its start.
            self._read_available(out, now)
            if self._partial:
                out.append(self._emit(self._partial, continued=self._flushed_partial))
                self._partial, self._flushed_partial = bytearray(), False
            self.close()
            self.notes.append(FollowNote("rotated", f"{self.path} was rotated (a new file took its name); "
                                                    "following the new file from its start"))
            self._open(ident, now)
            return
        if st.st_size < self._offset:
            self.notes.append(FollowNote("truncated", f"{self.path} was truncated (size {st.st_size} < "
                                                      f"{self._offset} bytes read); reading it again from the start"))
            if self._partial:
                out.append(self._emit(self._partial, continued=self._flushed_partial))
                self._partial, self._flushed_partial = bytearray(), False
            assert self._file is not None
            self._file.seek(0)
            self._offset = 0
            self.decoder = Decoder()

    def _say_not_regular(self, mode: int) -> None:
        if not self._not_regular:
            self._not_regular = True
            what = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
            self.notes.append(FollowNote("not-regular", f"{self.path} is {what} now, not a log file: not opened "
                                                        "(pipe a stream to `--log -`); waiting for a regular file"))

    def _open(self, ident: tuple[int, int], now: float) -> None:
        try:
            # O_NONBLOCK: a FIFO swapped in between the stat and this open must not block it
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise FollowError(f"{self.path}: cannot read it ({exc.strerror or exc})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            self._say_not_regular(st.st_mode)
            return
        os.set_blocking(fd, True)
        self._file = os.fdopen(fd, "rb")
        self._ident = (st.st_dev, st.st_ino)
        self._offset = 0
        self.decoder = Decoder()  # a new file: what it is written in is decided afresh
        if self.from_end and not self._ever_opened:
            self._skip_existing(now)
        if not self._ever_opened:
            self.notes.append(FollowNote("appeared", f"{self.path} appeared"))
        self._ever_opened = True
        self.last_growth = now

    def _skip_existing(self, now: float) -> None:
        """Count the complete lines already there and keep only an unfinished last one, decoded as
        what follows will be: a UTF-16/32 log's newlines are whole code units (a 0x0a byte inside
        a character is none), its BOM is at offset 0 only (the decoder, which saw it, reads on), and
        an end cut inside a code unit keeps its first bytes for the rest to come."""
        assert self._file is not None
        tail = b""
        while chunk := self._file.read(READ_CHUNK):
            self._offset += len(chunk)
            text = self.decoder.feed(chunk)
            self.number += text.count(b"\n")
            tail = (tail + text).rsplit(b"\n", 1)[-1] if b"\n" in text else tail + text
        if self.decoder.error is not None:
            self.notes.append(FollowNote("undecodable", f"{self.path}: {self.decoder.error}"))
        self._partial, self._partial_since = bytearray(tail), now

    def _read_available(self, out: list[RawLine], now: float) -> None:
        assert self._file is not None
        budget = self.max_bytes
        self.backlog = False
        while budget > 0 and len(out) < self.max_lines:
            chunk = self._file.read(min(POLL_PIECE, budget))
            if not chunk:
                return
            budget -= len(chunk)
            self._offset += len(chunk)
            self._take(chunk, out, now)
        self.backlog = True

    def _take(self, chunk: bytes, out: list[RawLine], now: float, final: bool = False) -> None:
        """Cut newly read bytes (decoded: `Decoder`) into complete lines, keeping an unfinished last one."""
        if chunk:
            self.bytes_read += len(chunk)
            self._partial_since = now
        had_error = self.decoder.error is not None
        chunk = self.decoder.feed(chunk, final)
        if self.decoder.error is not None and not had_error:
            self.notes.append(FollowNote("undecodable", f"{self.path}: {self.decoder.error}"))
        if not chunk:
            return
        if b"\n" not in chunk or not _PROBE_ANSWER.search(chunk) or any(
                not _PROBE_ANSWER.search(line) for line in (bytes(self._partial) + chunk).split(b"\n")[:-1]):
            self.last_growth = now  # bytes other than the server's answers to probes
        if b"\n" not in chunk:  # a bar redrawn in place: the line only grows
            self._partial += chunk
            if len(self._partial) > MAX_PARTIAL:
                del self._partial[: len(self._partial) - MAX_PARTIAL // 8]  # keep the newest redraws
            return
        lines = chunk.split(b"\n")
        lines[0] = bytes(self._partial) + lines[0]
        self._partial = bytearray(lines.pop())
        for raw in lines:
            out.append(self._emit(raw, continued=self._flushed_partial))
            self._flushed_partial = False

    def _emit(self, raw: bytes | bytearray, continued: bool) -> RawLine:
        if not continued:
            self.number += 1
        return RawLine(self.number, bytes(raw).decode("utf-8", errors="replace"), continued)


@dataclass
class StreamFollower(Follower):
    """Reads a stream as it comes: standard input behind `kubectl logs -f pod | firedup wait
    --log -`. A thread blocks on the reads so `poll()` never does; the lines, the partial
    last line and `last_growth` behave as with a file. `ended` turns True once the writer
    closed its end and everything it wrote was handed out (then `drain()` gives the rest)."""

    fd: int = 0
    ended: bool = False
    ahead: int = STREAM_AHEAD  # bytes read ahead at most (the reader thread waits beyond)
    _chunks: deque[bytes | None] = field(default_factory=deque)
    _buffered: int = 0
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _reader: threading.Thread | None = None

    @property
    def exists(self) -> bool:
        return True

    def _check_identity(self, out: list[RawLine], now: float) -> None:
        if self._reader is None:
            self._ever_opened = True
            self.last_growth = now  # the wait starts the clock of the first silence
            self._reader = threading.Thread(target=self._read_stream, name="firedup-stdin", daemon=True)
            self._reader.start()

    def _read_stream(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, READ_CHUNK // 16)
            except OSError:
                chunk = b""
            with self._lock:
                self._chunks.append(chunk or None)
                self._buffered += len(chunk)
                while self._buffered > self.ahead:  # the caller is behind: wait for it, as a full pipe would
                    self._lock.wait()
            if not chunk:
                return

    def _read_available(self, out: list[RawLine], now: float) -> None:
        taken: list[bytes | None] = []
        size = lines = 0
        with self._lock:
            while self._chunks and size < self.max_bytes and lines < self.max_lines:
                chunk = self._chunks.popleft()
                taken.append(chunk)
                size += len(chunk or b"")
                lines += chunk.count(b"\n") if chunk else 0
            self._buffered -= size
            self.backlog = bool(self._chunks)
            self._lock.notify_all()
        for chunk in taken:
            if chunk is None:
                self.ended = True
            else:
                self._take(chunk, out, now)

    def close(self) -> None:
        pass  # the stream is the caller's; its reader thread ends with the writer


__all__ = ["FollowError", "FollowNote", "Follower", "RawLine", "StreamFollower"]

"""Open log inputs and turn raw bytes into clean logical lines.

Real logs reach us through collectors that decorate every line (docker, kubectl,
journald, compose, Ray), through terminals that redraw progress bars with `\\r`, and
through notebooks that indent everything. Each of those is undone here, once, so that the
format rules only ever see what the server itself printed.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from firedup.core.lazy import lazy_regex
from firedup.errors import InputError as InputError  # re-exported: it was defined here
from firedup.read.collectors import BRACKET, BY_FIRST, LETTER, Collector, OuterStamp, first_key
from firedup.read.source import Source as Source  # re-exported: it was defined here

if TYPE_CHECKING:
    import hashlib  # sha256 objects in signatures; imported where one is made (OpenSSL, ~3 ms)

LOG_SUFFIXES = (".log", ".txt", ".out", ".gz")
MAX_LINE_BYTES = 8 * 1024 * 1024  # a server_args dump is ~13 kB; 8 MB is not a log line
SNIFF_BYTES = 64 * 1024

@dataclass(frozen=True, slots=True)
class Line:
    """One logical line: what the server printed, without collector decoration."""

    number: int  # 1-based physical line number in the source
    text: str
    outer: OuterStamp | None = None
    proc: str | None = None  # process tag such as "EngineCore_DP0" or "Worker rank=1"
    repeated: int = 1  # Ray's "[repeated Nx across cluster]"
    pid: int | None = None  # the process id of the tag, "(EngineCore_DP0 pid=241)" -> 241
    # The earlier redraws of a progress bar whose description carries what it works on ("Capturing
    # batches (bs=64 ...)"), which a terminal overwrote: each step's time (timeline.advice reads
    # what each graph size took); at most MAX_REDRAWS, the first of each.
    redraws: tuple[str, ...] = ()
    tag: str | None = None  # the service a collector names ("server-1  | " -> "server-1": `Collector.source_tag`)


# --- normalisation -----------------------------------------------------------------------

# Each alternative starts with one character (ESC, "#", "["), which lets `re` skip to where
# one may match: three times quicker on a coloured line than with `(?:\x1b|#033)` first.
# The last alternative, a colour code that lost its ESC ("[1;36m"), is the only one a line without
# ESC and "#033[" can hold: such a line (a progress bar's, hundreds of "[00:03<..." deep) is
# searched for it alone (`_ANSI_BARE`), which skips from "[" to "[" instead of testing each character.
_BARE_SGR = r"\[[0-9]{1,2}(?:;[0-9]{1,2})*m"
ANSI_PATTERN = r"\x1b\[[0-9;?]*[A-Za-z]|#033\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-B]|" + _BARE_SGR
_ANSI = lazy_regex(ANSI_PATTERN)
_ANSI_BARE = re.compile(_BARE_SGR)
_RAY_REPEATED = lazy_regex(r" \[repeated (?P<n>\d+)x across cluster\]\s*$")
# Every repeat below is bounded, so a long line that almost is a bar (a million digits, a bar
# drawn half-way) costs time linear in its length: an unbounded `[\d:?]+[^\]\[]*` tried every
# split of a run of digits, and a `\d+%` searched a run of digits from each of its positions.
_BAR = re.compile(r"\d{1,3}%(?:\||\s{0,4}Completed \|)")
_BAR_END = re.compile(r"\| {0,16}\d{1,9}/(?P<total>\d{1,9}) \[[\d:]{1,12}<[\d:?]{1,12}[^\]\[]{0,200}\]")
# What changes between redraws of one bar inside its description: "(bs=4 avail_mem=3.1 GB)".
_BAR_PARAMS = re.compile(r"\([^()]*\)")
_BLOB = re.compile(r"^\[\d+B blob data\]$")


def strip_outer(text: str) -> tuple[str, OuterStamp | None, str | None, int | None]:
    """Remove collector prefixes (possibly nested, `collectors.COLLECTORS`) and return what
    they said: the first stamp, the first process tag's name and pid."""
    text, outer, proc, pid, _tag = strip_tagged(text)
    return text, outer, proc, pid


def strip_tagged(text: str) -> tuple[str, OuterStamp | None, str | None, int | None, str | None]:
    """`strip_outer`, and the first service a collector named (`Collector.source_tag`).

    Only the collectors whose prefix may start with the text's first character are tried
    (`collectors.first_key`), and none where one pattern of all theirs does not match
    (`_any_prefix`): every line's stripping ends on text that starts with no prefix (a
    server's `[2026-...` header, an engine's `INFO 11-01 ...` after its process tag), which had to
    fail each collector's pattern in turn. (The loop is written out: it runs for every line.)"""
    outer: OuterStamp | None = None
    proc: str | None = None
    pid: int | None = None
    tag: str | None = None
    for _ in range(4):
        first = text[:1]
        key = _FIRST_KEYS.get(first)
        if key is None:
            key = first_key(first)
            if len(_FIRST_KEYS) < _MEMO_KEYS:
                _FIRST_KEYS[first] = key
        tries = _TRIES.get(key)
        if tries is None:
            tries = _TRIES[key] = _tries(key)
        screen, matchers = tries
        if screen is not None and screen(text) is None:
            break
        for match, collector in matchers:
            m = match(text)
            if m is not None and (collector.accepts is None or collector.accepts(text, m.end())):
                break
        else:
            break
        if collector.stamp is not None:
            outer = outer or collector.stamp(m)
        elif collector.process_tag:  # the first pid and name stand
            if proc is None and pid is None:
                pid = int(m["pid"])
            named = m["proc"]
            proc = proc or (named.rsplit(" pid=", 1)[0].strip() if "pid=" in named else named)
            if proc.startswith("pid="):
                proc = None
        elif collector.source_tag and tag is None:
            tag = m["service"]
        text = text[m.end():]
    return text, outer, proc, pid, tag


def _any_prefix(key: str, collectors: tuple[Collector, ...]) -> Callable[[str], re.Match[str] | None] | None:
    """One pattern's `match` that finds a prefix where one of `collectors` (those of `first_key`
    `key`) would: theirs as alternatives, groups unnamed. Only where lines usually start with no
    prefix of that kind (`_SCREENED`): where a digit starts the line, kubectl's stamp usually
    matches, and the screen would be one call more."""
    if key not in _SCREENED or len(collectors) < 2:
        return None
    return re.compile("|".join(f"(?:{_UNNAMED.sub('(?:', c.pattern)})" for c in collectors)).match


_SCREENED = (BRACKET, LETTER)  # a server's own `[2026-...` header; a level word after a process tag
_UNNAMED = re.compile(r"\(\?P<\w+>")
_FIRST_KEYS: dict[str, str] = {}  # a line's first character -> its `first_key`, remembered
_MEMO_KEYS = 512
_Matcher = Callable[[str], "re.Match[str] | None"]


def _tries(key: str) -> tuple[_Matcher | None, tuple[tuple[_Matcher, Collector], ...]]:
    """What `strip_tagged` tries on a line whose first character has `first_key` `key`: the
    screen, then each collector's `match`. Made on first use: a log's lines start with a few
    kinds of character, and compiling the patterns of all cost ~5 ms a run."""
    collectors = BY_FIRST.get(key, ())
    return _any_prefix(key, collectors), tuple((c.regex.match, c) for c in collectors)


_TRIES: dict[str, tuple[_Matcher | None, tuple[tuple[_Matcher, Collector], ...]]] = {}


def _split_glued(segment: str) -> list[str]:
    """Split a tqdm bar from a log line printed right after it on the same line."""
    pieces: list[str] = []
    _split_bars(segment, pieces, [])
    return pieces


_Key = tuple[str, str] | None
_NON_SPACE = re.compile(r"\S")


def _split_bars(segment: str, pieces: list[str], keys: list[_Key]) -> None:
    """`_split_glued` onto `pieces`, and each piece's `_bar_key` (of the piece stripped) onto
    `keys`, read from the searches that split it instead of searching each piece again. A piece
    ends at a bar's end; its key's bar start is the first in the piece, since a later one would
    hold the "|" the bar end starts with inside it (a bar match ends at its only "|"). Searches
    by position, not on slices: a line of hundreds of redraws is not copied once per redraw.

    A redraw costs a few microseconds, hundreds of them a log (a capture's bars): the bar start
    is searched from 3 characters before the first `%` (a match is 1 to 3 digits and a `%`, so
    none starts earlier: the search does not try every character of the description), and a
    description already seen is looked up here (`_key_of`'s memo) without a call."""
    begin = 0
    memo = _DESCRIPTIONS
    while True:
        m = _BAR_END.search(segment, begin)
        bar = None
        if m is not None:
            stop = m.start() + 1
            percent = segment.find("%", begin, stop)
            if percent >= 0:
                bar = _BAR.search(segment, max(begin, percent - 3), stop)
        if m is None or bar is None:
            piece = segment[begin:]
            pieces.append(piece)
            keys.append(_bar_key(piece.strip()) if m is not None and "%" in piece else None)
            return
        description = segment[begin: bar.start()]
        words = memo.get(description)
        keys.append((words, m["total"]) if words is not None else _key_of(description, m["total"]))
        end = m.end()
        if end == len(segment) or _NON_SPACE.search(segment, end) is None:  # the common case first: nothing after it
            pieces.append(segment[begin:])
            return
        pieces.append(segment[begin: end])
        begin = end


def _key_of(description: str, total: str) -> tuple[str, str]:
    """A bar's key from its description (`_bar_key`). A line of redraws repeats each description
    (tqdm draws a step at its `set_description` and again at its update), and a log its bars'
    descriptions: the words of the short ones are remembered (`_KEY_MEMO` at most at a time)."""
    words = _DESCRIPTIONS.get(description)
    if words is None:
        words = " ".join(_BAR_PARAMS.sub("", description).rstrip(": ").split())
        if len(description) <= _KEY_MEMO_CHARS:
            if len(_DESCRIPTIONS) >= _KEY_MEMO:
                _DESCRIPTIONS.clear()
            _DESCRIPTIONS[description] = words
    return words, total


_KEY_MEMO, _KEY_MEMO_CHARS = 4096, 256
_DESCRIPTIONS: dict[str, str] = {}


def _bar_key(segment: str) -> tuple[str, str] | None:
    """Which bar a tqdm redraw belongs to, or None if the segment is not a bar.

    A bar is its description without the parameters it updates on every redraw
    ("Capturing batches (bs=4 avail_mem=3.1 GB)" -> "Capturing batches") and its total.
    """
    m = _BAR.search(segment)
    end = _BAR_END.search(segment) if m else None
    if m is None or end is None:
        return None
    return _key_of(segment[: m.start()], end["total"])


def _same_bar(earlier: tuple[str, str], later: tuple[str, str]) -> bool:
    """True when `later` redraws `earlier`. tqdm's first draw often has no description yet."""
    return earlier[1] == later[1] and (earlier[0] == later[0] or not earlier[0])


MAX_REDRAWS = 512


def _last_redraws(pieces: list[str], keys: list[_Key]) -> list[tuple[str, tuple[str, ...]]]:
    """The non-empty pieces of one physical line but the bar redraws that a later piece
    redraws again (`_same_bar`); `keys[i]` is piece i's bar key. One pass from the end, so
    a line of thousands of redraws costs thousands of steps, not millions. Each kept piece
    comes with the redraws it overwrote where its description carries parameters (`Line.redraws`)."""
    later_bars: set[tuple[str, str]] = set()
    later_totals: set[str] = set()  # a redraw without a description is redrawn by any same total
    kept: list[tuple[str, list[str]]] = []
    dropped: dict[tuple[str, str], list[str]] = {}
    for piece, key in zip(reversed(pieces), reversed(keys), strict=True):
        if not piece:
            continue
        if key is not None:
            if key in later_bars or (not key[0] and key[1] in later_totals):
                earlier = dropped.get(key)
                if earlier is not None and len(earlier) < MAX_REDRAWS:
                    earlier.append(piece)
                continue
            later_bars.add(key)
            later_totals.add(key[1])
            if "(" in piece.split("%", 1)[0]:  # a description with parameters: keep its steps
                dropped[key] = []
        kept.append((piece, dropped.get(key, []) if key is not None else []))
    kept.reverse()
    return [(piece, tuple(reversed(steps))) for piece, steps in kept]


def _uncoloured(text: str) -> str:
    """`text` without colour codes: ESC[..m, CloudWatch's "#033[..m", bare "[1;36m" remnants."""
    if "\x1b" in text or "#033[" in text:
        return _ANSI().sub("", text)
    return _ANSI_BARE.sub("", text) if "[" in text else text


def normalise(raw: str, number: int) -> list[Line]:
    """One physical line of a log -> the logical lines the server printed on it."""
    text = raw.rstrip("\n").rstrip("\r")
    if "\x00" in text:  # what `read_lines` drops; `wait` and the batch engine's candidates come here
        text = text.replace("\x00", "")
    if text.startswith("\ufeff"):  # `cat a.log b.log`: b.log's byte-order mark starts one line
        text = text[1:]
    text = _uncoloured(text)
    # Notebook and markdown exports indent every line (by 3 or 4 spaces, mixed): undo it before
    # looking for collector prefixes, which are anchored at the start of the line.
    text = text.lstrip()
    text, outer, proc, pid, tag = strip_tagged(text)
    repeated = 1
    if "repeated" in text:
        m = _RAY_REPEATED().search(text)
        if m:
            repeated = int(m["n"])
            text = text[: m.start()]
    segments = text.split("\r") if "\r" in text else [text]
    pieces: list[str] = []
    keys: list[_Key] = []
    for seg in segments:
        if "<" in seg and "%" in seg:
            _split_bars(seg, pieces, keys)
        else:
            pieces.append(seg)
            keys.append(None)  # a bar's end has "<" and its start "%"
    stripped = [piece.strip() for piece in pieces]
    # A terminal shows only the final state of a bar: drop a redraw that a later piece of the
    # same physical line redraws again. Log lines glued in between are kept.
    kept = [(stripped[0], ())] if len(stripped) == 1 else _last_redraws(stripped, keys)
    if not kept:
        kept = [("", ())]
    return [Line(number, piece, outer, proc, repeated, pid, steps, tag) for piece, steps in kept]


# --- opening inputs ----------------------------------------------------------------------


def _has_magic(arg: str) -> bool:
    """`glob.has_magic`, without importing glob for the common case of plain paths."""
    return any(ch in arg for ch in "*?[")


def expand_inputs(args: Iterable[str], all_files: bool = False) -> tuple[list[Source], list[InputError]]:
    """Paths, directories (recursive) and globs -> sources, in a stable order.

    Directories contribute files with a log suffix, or every file with `all_files`.
    A path that does not exist is an error for that path only.
    """
    sources: list[Source] = []
    errors: list[InputError] = []
    seen: set[str] = set()
    for arg in args:
        found, failed = _expand_one(arg, all_files)
        errors.extend(failed)
        for source in found:
            if source.name not in seen:
                seen.add(source.name)
                sources.append(source)
    return sources, errors


def _expand_one(arg: str, all_files: bool) -> tuple[list[Source], list[InputError]]:
    """The sources one argument names: an object store URL, stdin, a directory, a file, a glob."""
    if "://" in arg:
        from firedup.read import remote

        if remote.is_url(arg):
            return remote.expand_url(arg, all_files, LOG_SUFFIXES)
    if arg == "-":
        return [Source("-", None)], []
    path = Path(arg)
    if path.is_dir():
        found = sorted(
            p for p in path.rglob("*")
            if p.is_file() and (all_files or p.name.endswith(LOG_SUFFIXES))
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not found:
            return [], [InputError(arg, "directory holds no log files (*.log, *.txt, *.out, *.gz; --all takes any file)")]
        return [Source(str(p), p) for p in found], []
    if path.exists() or path.is_symlink():
        return [Source(str(path), path)], []
    if _has_magic(arg):
        return _glob_sources(arg)
    return [], [InputError(arg, "no such file or directory")]


def _glob_sources(arg: str) -> tuple[list[Source], list[InputError]]:
    """The regular files a glob matches; an error when it matches none."""
    import glob

    matches = sorted(glob.glob(arg, recursive=True))
    files = [Path(m) for m in matches if Path(m).is_file()]
    errors: list[InputError] = []
    if not matches:
        errors.append(InputError(arg, "no file matches this pattern"))
    elif not files:  # said, not silently dropped: the pattern meant files
        errors.append(InputError(arg, f"the pattern matches {len(matches)} entr"
                                 f"{'y' if len(matches) == 1 else 'ies'} but no regular file "
                                 "(name the folders themselves to read the logs inside)"))
    return [Source(str(mp), mp) for mp in files], errors


_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _refuse_special(source: Source) -> None:
    """A FIFO, socket or device is refused before it is opened: opening a FIFO blocks until a
    writer comes, and /dev/zero never ends. Its data can still come in as stdin (`-`)."""
    assert source.path is not None
    try:
        mode = os.stat(source.path).st_mode
    except OSError:
        return  # open() says why, below
    for test, what in _NOT_REGULAR:
        if test(mode):
            raise InputError(source.name, f"not a regular file but {what}; to read it, pipe it to `firedup ... -`")


def _open_binary(source: Source, digest: hashlib._Hash | None = None) -> BinaryIO:
    if source.url is not None:
        from firedup.read.remote import open_url

        stream: BinaryIO = open_url(source, digest)
    elif source.path is None:
        stdin = sys.stdin
        if stdin is None or getattr(stdin, "buffer", None) is None:  # started with stdin closed (`<&-`)
            raise InputError(source.name, "stdin is closed: nothing to read")
        stream = stdin.buffer
    else:
        _refuse_special(source)
        try:
            stream = open(source.path, "rb")  # noqa: SIM115 - closed by the caller
        except PermissionError:
            raise InputError(source.name, "permission denied") from None
        except IsADirectoryError:
            raise InputError(source.name, "is a directory") from None
        except OSError as exc:
            raise InputError(source.name, exc.strerror or str(exc)) from None
    # The magic bytes decide, not the name: a plain log saved as .gz is still read.
    head = stream.peek(2)[:2] if hasattr(stream, "peek") else b""
    if head == b"\x1f\x8b":
        return _Inflated(source.name, stream)  # type: ignore[return-value]
    return stream


GZIP_RATIO_ENV = "FIREDUP_GZIP_MAX_RATIO"
GZIP_MAX_RATIO = 250  # real logs inflate 10-30 times (a log of blank lines ~1000: the most deflate does)
GZIP_RATIO_FROM = 16 << 20  # inflated bytes before the ratio is looked at


def gzip_max_ratio() -> float:
    """`FIREDUP_GZIP_MAX_RATIO` (0: no limit), else `GZIP_MAX_RATIO`."""
    text = os.environ.get(GZIP_RATIO_ENV, "").strip()
    try:
        value = float(text) if text else GZIP_MAX_RATIO
    except ValueError:
        value = GZIP_MAX_RATIO
    return value if value >= 0 and value == value else GZIP_MAX_RATIO


class _Counted(io.RawIOBase):
    """A binary stream that counts the bytes read from it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


class _Inflated(io.RawIOBase):
    """A gzip stream read as far as it reads well. A member that ends in a bad CRC, garbage
    after the last member, a cut or corrupt stream: the bytes inflated before stand and the
    stream ends there, with `error` saying why (`read_lines` turns it into the source's note).
    A stream that inflates past `GZIP_MAX_RATIO` times the compressed bytes read so far (after
    its first `GZIP_RATIO_FROM` bytes) is a gzip bomb: it ends there too, said so."""

    def __init__(self, name: str, raw: BinaryIO) -> None:
        import gzip  # only for .gz inputs: not worth its import on every start

        self.name = name
        self.fileobj = raw  # the compressed stream, as GzipFile names it (`_finish_object`)
        self.packed = _Counted(raw)  # compressed bytes read so far (an object's stream may not `tell`)
        self.gz = gzip.GzipFile(fileobj=self.packed, mode="rb")
        self.error: str | None = None
        self.inflated = 0
        self.lines_hint = 0
        self.ratio = gzip_max_ratio()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        if self.error is not None:
            return 0
        try:
            data = self.gz.read1(len(buffer))
        except (EOFError, OSError, zlib.error) as exc:
            self.error = _gzip_reason(exc, -1)
            return 0
        n = len(data)
        buffer[:n] = data
        self.inflated += n
        if self.ratio and self.inflated > GZIP_RATIO_FROM and self.inflated > self.ratio * max(self.packed.count, 1):
            self.error = (f"inflates to more than {self.ratio:g} times its compressed size (a gzip bomb?), so "
                          f"reading stopped after {self.inflated >> 20} MB ({GZIP_RATIO_ENV}=0 reads it whole)")
        return n

    def read1(self, size: int = -1) -> bytes:
        buffer = bytearray(size if size > 0 else 1 << 16)
        n = self.readinto(buffer)
        return bytes(buffer[:n])

    def peek(self, size: int = 0) -> bytes:
        return b""

    def close(self) -> None:
        self.gz.close()
        self.fileobj.close()
        super().close()


def read_lines(source: Source, digest: hashlib._Hash | None = None, notes: list[str] | None = None) -> Iterator[Line]:
    """Yield the logical lines of a source, or raise InputError with a one-line reason.

    Lines are streamed: the whole file is never held in memory. A binary file, an empty
    file, an endless line and a broken gzip are refused with a reason that names the file.
    `digest` (objects in object storage only): fed every byte of the object as it is read,
    the rest too when reading stops early, so its id costs no second download. NUL bytes in
    a text log (a file cut by a power loss ends in a run of them; one inside a line) are
    dropped, each line's said in `notes`.
    """
    stream = _open_binary(source, digest)
    try:
        inflated = stream if isinstance(stream, _Inflated) else None
        first = _first_block(source, stream, inflated)
        # UTF-16/32 text of a log always holds NULs (ASCII digits and spaces): two bytes that
        # happen to look like a BOM in front of a UTF-8 line are not one
        encoding = bom_encoding(first) if b"\x00" in first else None
        if encoding is None and b"\x00" in first:
            offset = first.index(b"\x00")
            if not text_before_nul(first, offset):
                raise InputError(source.name, f"not a text log: binary data (NUL byte at offset {offset})")
        buffered = io.BufferedReader(_Prepend(first, stream), buffer_size=1 << 20)  # type: ignore[type-var]
        if encoding is not None:  # UTF-16/32 (a Windows tool's redirect): decoded, the BOM dropped
            yield from _decoded_lines(source, buffered, encoding)
            return
        if first.startswith(_UTF8_BOM):
            buffered.read(len(_UTF8_BOM))
        yield from _utf8_lines(source, stream, buffered, inflated, notes)
    finally:
        if source.url is not None:
            _finish_object(stream, digest)
        elif source.path is not None:
            stream.close()


def _first_block(source: Source, stream: BinaryIO, inflated: _Inflated | None) -> bytes:
    """The first `SNIFF_BYTES` of a source (what tells text from binary and names a BOM);
    InputError for an empty one or a gzip that breaks before it."""
    try:
        first = stream.read(SNIFF_BYTES)
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError(source.name, _gzip_reason(exc, 0)) from None
    while inflated is not None and first and len(first) < SNIFF_BYTES:  # a raw read gives one block
        more = stream.read(SNIFF_BYTES - len(first))
        if not more:
            break
        first += more
    if not first:
        raise InputError(source.name, _after_lines(inflated.error, 0) if inflated is not None and inflated.error
                         else "empty file")
    return first


def text_before_nul(head: bytes, offset: int) -> bool:
    """Whether a log's head, whose first NUL is at `offset`, is text with NUL bytes in it: at
    least one whole line before that NUL, and its bytes without the NULs valid UTF-8 of
    printable characters (tab, CR, ESC and a rare bell aside). A file that starts as binary
    (ELF, PNG, SQLite, zip, UTF-16 without its BOM) has its first NUL in its first line, and
    binary junk after a log has control bytes besides its NULs."""
    if head.rfind(b"\n", 0, offset) < 0:
        return False
    text = head.replace(b"\x00", b"")
    try:
        text[:text.rfind(b"\n") + 1].decode("utf-8")  # whole lines: a character the block's end cut is no error
    except UnicodeDecodeError:
        return False
    controls = sum(text.count(bytes((c,))) for c in range(32) if c not in (9, 10, 13, 27))
    return controls * 100 <= len(text)


def _nul_note(number: int, count: int, inside: bool) -> str:
    nuls = f"{count:,} NUL byte{'s' if count > 1 else ''}"
    if inside:
        return f"line {number:,}: {nuls} dropped; the rest of the line is read"
    return f"after line {number - 1:,}: {nuls} dropped (a file cut short by a power loss or a crash ends in them)"


def _utf8_lines(source: Source, stream: BinaryIO, buffered: BinaryIO,
                inflated: _Inflated | None, notes: list[str] | None = None) -> Iterator[Line]:
    """The lines of a UTF-8 input, each bounded by `MAX_LINE_BYTES`; a plain file that shrinks
    or a gzip that breaks ends in InputError after the lines read before. NUL bytes are
    dropped, said in `notes` (at most `_NUL_NOTES` lines named, then a count)."""
    number = 0
    nul_lines = 0
    blank = _BLANK_LINES
    size = _plain_size(source, stream)
    while True:
        try:
            raw = buffered.readline(MAX_LINE_BYTES + 1)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(source.name, _gzip_reason(exc, number)) from None
        if not raw:
            if size is not None:
                _check_whole(source, stream, size)
            if inflated is not None and inflated.error is not None:
                raise InputError(source.name, _after_lines(inflated.error, number))
            return
        if inflated is not None and inflated.error is not None and not raw.endswith(b"\n"):
            raise InputError(source.name, _after_lines(inflated.error, number))  # a line the break cut: unread
        number += 1
        if raw in blank:  # a blank line: the same Line every time, no decoding or normalising
            yield Line(number, "")
            continue
        if b"\x00" in raw:
            nuls, raw = raw.count(b"\x00"), raw.replace(b"\x00", b"")
            nul_lines += 1
            if notes is not None and nul_lines <= _NUL_NOTES:
                notes.append(_nul_note(number, nuls, bool(raw)))
            elif notes is not None and nul_lines == _NUL_NOTES + 1:
                notes.append("more lines held NUL bytes, dropped too")
            if not raw or raw in blank:
                if not raw:
                    number -= 1  # NULs to the end of the file or of a piece of a line: no line
                else:
                    yield Line(number, "")
                continue
        if len(raw) > MAX_LINE_BYTES:
            mb = MAX_LINE_BYTES // (1024 * 1024)
            raise InputError(source.name, f"a line longer than {mb} MB: not a line-oriented text log", number)
        yield from normalise(raw.decode("utf-8", errors="replace"), number)


def _plain_size(source: Source, stream: BinaryIO) -> int | None:
    """The size of a plain file being read, when reading starts (to tell a truncation)."""
    if source.path is None or source.url is not None or hasattr(stream, "fileobj"):  # stdin, an object, a .gz
        return None
    try:
        return os.fstat(stream.fileno()).st_size
    except (OSError, ValueError, AttributeError):
        return None


def _check_whole(source: Source, stream: BinaryIO, size: int) -> None:
    """At the end of a plain file: InputError when it ended before the size it had when
    reading began (logrotate's copytruncate emptied it under the reader); the lines read
    before stand (`pipeline._UntilUnreadable`)."""
    try:
        at = stream.tell()
    except (OSError, ValueError):
        return
    if at < size:
        raise InputError(source.name, f"the file shrank while it was read (rotated with copytruncate?): it ends at "
                                      f"byte {at:,} of the {size:,} it had; what was read before is kept")


def _finish_object(stream: BinaryIO, digest: hashlib._Hash | None) -> None:
    """Feed an object's digest the bytes not read yet (reading stopped early: a cut .gz, an
    endless line), so its id is that of the whole object, and close it."""
    base: BinaryIO = getattr(stream, "fileobj", None) or stream  # under a GzipFile: the object itself
    try:
        while digest is not None and base.read(1 << 20):
            pass
    except (OSError, ValueError):
        pass
    finally:
        stream.close()
        base.close()


_UTF8_BOM = b"\xef\xbb\xbf"
_NUL_NOTES = 3  # lines with NUL bytes named in a note, then only "more"
_BLANK_LINES = frozenset((b"\n", b"\r\n", b"\r", b" \n", b"\t\n"))
# Longest first: the UTF-32LE BOM starts with the UTF-16LE one.
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def bom_encoding(head: bytes) -> str | None:
    """The UTF-16/32 encoding a byte-order mark at the start of `head` names, else None."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def _decoded_lines(source: Source, buffered: BinaryIO, encoding: str) -> Iterator[Line]:
    """The lines of a UTF-16/32 input, bounded as UTF-8 lines are (`MAX_LINE_BYTES`)."""
    text = io.TextIOWrapper(buffered, encoding=encoding, errors="replace", newline="\n")
    if text.read(1) not in ("\ufeff", ""):
        raise InputError(source.name, f"not a text log: a {encoding} byte-order mark that does not decode")
    number = 0
    while True:
        try:
            raw = text.readline(MAX_LINE_BYTES + 1)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(source.name, _gzip_reason(exc, number)) from None
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            mb = MAX_LINE_BYTES // (1024 * 1024)
            raise InputError(source.name, f"a line longer than {mb} MB: not a line-oriented text log", number)
        yield from normalise(raw, number)


def _after_lines(reason: str, lines_read: int) -> str:
    """A gzip reason with where reading stopped (`_Inflated` does not know the lines)."""
    if reason.startswith("truncated gzip"):
        return f"truncated gzip: the stream ends after line {lines_read}" if lines_read else \
            "truncated gzip: the stream ends before the first line"
    return f"{reason}; read up to line {lines_read:,}" if lines_read else reason


def _gzip_reason(exc: BaseException, lines_read: int) -> str:
    if isinstance(exc, EOFError):
        if lines_read < 0:
            return "truncated gzip"
        return f"truncated gzip: the stream ends after line {lines_read}" if lines_read else \
            "truncated gzip: the stream ends before the first line"
    import gzip

    if isinstance(exc, gzip.BadGzipFile):
        text = str(exc)
        if "CRC check failed" in text:
            return "gzip CRC check failed: the data may be damaged"
        if "Not a gzipped file" in text:
            return "garbage after the gzip data, ignored"
        return f"not a valid gzip file ({exc})"
    if isinstance(exc, zlib.error):
        return f"corrupt gzip data ({str(exc).split(': ', 1)[-1]})"
    return f"unreadable: {exc}"


class _Prepend(io.RawIOBase):
    """A raw stream that first returns `head`, then the rest of `tail`."""

    def __init__(self, head: bytes, tail: BinaryIO) -> None:
        self._head = memoryview(head)
        self._tail = tail

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        if self._head.nbytes:
            n = min(len(buffer), self._head.nbytes)
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        # read1: what is there now, so a stream that breaks (a truncated .gz) loses only its
        # last, unfinished line, not the block being read when it broke.
        read1 = getattr(self._tail, "read1", None)
        data = read1(len(buffer)) if read1 is not None else self._tail.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n


def file_date(source: Source) -> date | None:
    """The local date of a file's modification time: logs without years end before it."""
    if source.mtime is not None:
        return date.fromtimestamp(source.mtime)
    if source.path is None:
        return None
    try:
        return date.fromtimestamp(os.stat(source.path).st_mtime)
    except (OSError, OverflowError, ValueError):
        return None


def file_year(source: Source) -> int | None:
    """The year of a file's modification time: the last resort for logs without years."""
    if source.mtime is not None:
        return date.fromtimestamp(source.mtime).year
    if source.path is None:
        return None
    try:
        import time

        return time.localtime(os.stat(source.path).st_mtime).tm_year
    except OSError:
        return None

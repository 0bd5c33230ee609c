"""Every file firedup writes goes through here: whole or not at all, never through a link.

A file is written under a short temporary name in its own folder, created with O_EXCL and
O_NOFOLLOW (no file and no link an attacker planted under that name is ever opened), then
renamed over the target. A rename replaces the target's directory entry itself: a symlink
planted at `OUT/index.html` or at the `-o` path is *replaced* by the new file, and what it
pointed to is never opened or changed. The temporary name is 25 characters whatever the
target's, so a 250-character file name (255 is the limit of most file systems) works.

Only a path the user named on the command line (`-o FILE`) that already is a FIFO, a
character device or a socket, itself or behind a link (`/dev/stdout`, `/dev/null`, a named
pipe), is written into instead, since replacing it would put a regular file where the user's
device was; a FIFO without a reader for 5 s is refused instead of hanging. Files firedup names
inside a folder (a report's pages and charts, a generated sample's logs) are always replaced.

`folder_lock` serialises writers of one folder (two `report -o SAME` at once): flock on the
folder itself, so nothing is left behind in it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from firedup.errors import OutputError

TEMP_PREFIX = ".firedup-"
TEMP_SUFFIX = ".tmp"
_SPECIAL = (stat.S_ISFIFO, stat.S_ISCHR, stat.S_ISSOCK)


def _special(path: Path) -> bool:
    """Whether `path` (links followed) is a FIFO, a character device or a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return any(test(mode) for test in _SPECIAL)


def temp_name() -> str:
    """A short hidden name for a file being written (25 characters)."""
    return f"{TEMP_PREFIX}{secrets.token_hex(6)}{TEMP_SUFFIX}"


def _open_new(folder: Path) -> tuple[Path, int]:
    """A new file under a fresh temporary name in `folder`: created here, never followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = folder / temp_name()
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


FIFO_READER_WAIT_S = 5.0  # how long a FIFO the user named may go without a reader


def _open_special(path: Path) -> BinaryIO:
    """A FIFO or device the user named, opened for writing into it. A FIFO that no process
    reads would block the open forever: after `FIFO_READER_WAIT_S` without a reader it is
    refused instead."""
    import time

    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    if stat.S_ISFIFO(os.stat(path).st_mode):
        deadline = time.monotonic() + FIFO_READER_WAIT_S
        while True:
            try:
                fd = os.open(path, flags | os.O_NONBLOCK)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                if time.monotonic() >= deadline:
                    raise OSError(errno.ENXIO, f"a FIFO that no process reads (waited {FIFO_READER_WAIT_S:g} s)") from None
                time.sleep(0.05)
        os.set_blocking(fd, True)
    else:
        fd = os.open(path, flags)
    return os.fdopen(fd, "wb")


def write_file(path: str | os.PathLike[str], write: Callable[[BinaryIO], object], *, named: bool = True) -> None:
    """Write `path` whole with `write(fh)` (a binary file object), as the module says. `named`:
    the user named this path (`-o`), so a FIFO or device there is written into; False for the
    files firedup names inside a folder, which are always replaced. Any OSError is an
    OutputError naming `path`."""
    target = Path(path)
    try:
        if named and _special(target):
            with _open_special(target) as fh:
                write(fh)
            return
        with contextlib.suppress(OSError):
            if stat.S_ISBLK(os.stat(target).st_mode):
                raise OSError(errno.EPERM, "a block device: firedup writes no disk")
        if target.is_dir() and not target.is_symlink():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
        tmp, fd = _open_new(target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise OutputError(os.fspath(path), exc.strerror or str(exc) or type(exc).__name__) from None


def write_bytes(path: str | os.PathLike[str], data: bytes, *, named: bool = True) -> None:
    write_file(path, lambda fh: fh.write(data), named=named)


def write_text(path: str | os.PathLike[str], text: str, *, named: bool = True) -> None:
    """`text` as UTF-8 (newlines as given)."""
    write_bytes(path, text.encode("utf-8"), named=named)


def open_log(path: str | os.PathLike[str], *, append: bool) -> BinaryIO:
    """A log written line by line while another program follows it (`replay --out`): no
    temporary file then, but the same rule for links. A symlink at `path` is replaced (removed,
    and the file created in its place with O_NOFOLLOW), a FIFO or device the user named is
    written into, a regular file is truncated (or appended to, `append`). OSError as is."""
    target = Path(path)
    if _special(target):
        return _open_special(target)
    if target.is_symlink():
        target.unlink()
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else os.O_TRUNC
    return os.fdopen(os.open(target, flags, 0o666), "ab" if append else "wb")


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock on `folder` for the block (flock on the folder itself: released by
    the kernel if the process dies, and nothing left in the folder). No lock where flock
    does not exist (not POSIX) or the file system refuses it (some network file systems)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise OutputError(os.fspath(folder), exc.strerror or str(exc)) from None
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


__all__ = ["TEMP_PREFIX", "folder_lock", "open_log", "temp_name", "write_bytes", "write_file", "write_text"]

"""Exit codes and the errors that carry them: one place, so every command agrees.

The library raises only these for what the user can fix (a path, an option, a store); the
CLI prints each as one line, `firedup: <message>`, and exits with its `exit_code`. Anything
else that escapes is a bug and keeps its traceback.

    FiredupError                 exit 1
    +-- InputError               a log that cannot be read (`file[:line]: reason`)
    +-- FollowError              the log `wait` follows turned unreadable
    +-- StoreError               a history store that cannot be read or written
    +-- OutputError              a file or folder firedup was asked to write cannot be
    +-- ClusterError             the Ray cluster of `ingest --ray` cannot be reached or started
    +-- UsageError               exit 2: a wrong option value (also a ValueError)
    |   +-- UnknownEngineError   --engine names no format (also a KeyError)
    |   +-- UnknownFlagError     --by names no flag of these runs
    +-- DataError                exit 5: read fine, but nothing to do this with (also a
                                 ValueError): no server startup, no run with two ranks

The ValueError/KeyError bases keep `except ValueError` in callers of the library working.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_OK = 0
EXIT_SOME_INPUTS_BAD = 1  # some inputs could not be read; the rest was processed
EXIT_USAGE = 2
EXIT_REGRESSED = 1  # `check`: a run regressed against its history (or did not get ready), like pytest's failed
EXIT_CRASHED = 3  # `wait`: the server died before it was ready
EXIT_TIMEOUT_STUCK = 4  # `wait`: timed out while the server's process tree sat idle (stuck, or waiting on a peer)
EXIT_NO_DATA = 5  # like pytest's "no tests collected": no server startup (or none to draw) in the inputs
EXIT_CANNOT_JUDGE = 6  # `check`: a run has too little history of its config to be judged (never a pass)
EXIT_TIMEOUT = 124  # `wait`: like GNU timeout (timed out while the server was busy, or not inspected)

EXIT_OTHER = 1


class FiredupError(Exception):
    """An error meant for the user: `str()` is the whole message, one line; no traceback is shown."""

    exit_code = EXIT_OTHER

    def __init__(self, message: str) -> None:
        # one line whatever it quotes (a polars error, a traceback's last words): stderr stays greppable
        message = "; ".join(part.strip() for part in message.splitlines() if part.strip())
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return self.message

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return type(self), (self.message,)  # from a worker process, whole


class InputError(FiredupError):
    """An input that cannot be read as a text log. `str()` is `source[:line]: reason`."""

    def __init__(self, source: str, reason: str, line: int | None = None) -> None:
        self.source = source
        self.reason = reason
        self.line = line
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, str, int | None]]:  # type: ignore[override]
        return type(self), (self.source, self.reason, self.line)


class FollowError(FiredupError):
    """The followed file exists but cannot be read (permissions): waiting will not help."""


class StoreError(FiredupError):
    """The history store cannot be read, or a folder that is not one would be written into."""


class ClusterError(FiredupError):
    """`ingest --ray`: no Ray installed, or no cluster at the address given (a file's failure
    on a worker is that file's InputError, never this)."""


class OutputError(FiredupError):
    """A path the user asked firedup to write cannot be written. Only the write itself maps
    here (see `writing`): an OSError anywhere else is a bug and keeps its traceback."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot write {path}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # type: ignore[override]
        return type(self), (self.path, self.reason)


class UsageError(FiredupError, ValueError):
    """A wrong option or argument value: exit 2, like click's own usage errors."""

    exit_code = EXIT_USAGE


class UnknownEngineError(UsageError, KeyError):
    """An engine name the format registry does not know."""


class UnknownFlagError(UsageError):
    """A --by flag that none of the runs states."""


class DataError(FiredupError, ValueError):
    """The inputs were read, but hold nothing this asks for (no startup, no per-rank phases):
    a fact about the data, not a mistake in the command, so no `Usage:`."""

    exit_code = EXIT_NO_DATA


class NoStartupError(DataError):
    """No server startup in the inputs at all."""

    def __init__(self, message: str = "no server startup found in the input") -> None:
        super().__init__(message)


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Around a write to a path the user chose: its OSError becomes an OutputError naming it."""
    try:
        yield
    except OSError as exc:
        raise OutputError(os.fspath(path), exc.strerror or str(exc) or type(exc).__name__) from None


def exit_code_for(errors: int, runs: int) -> int:
    """The exit code of a command that read logs: 1 when some could not be read (the rest is
    still shown), else 5 when none held a server startup, else 0."""
    if errors:
        return EXIT_SOME_INPUTS_BAD
    return EXIT_OK if runs else EXIT_NO_DATA


__all__ = ["EXIT_CANNOT_JUDGE", "EXIT_CRASHED", "EXIT_NO_DATA", "EXIT_OK", "EXIT_OTHER", "EXIT_REGRESSED", "EXIT_SOME_INPUTS_BAD", "EXIT_TIMEOUT",
           "EXIT_TIMEOUT_STUCK", "EXIT_USAGE", "ClusterError", "DataError", "FiredupError", "FollowError", "InputError", "NoStartupError", "OutputError",
           "StoreError", "UnknownEngineError", "UnknownFlagError", "UsageError", "exit_code_for", "writing"]

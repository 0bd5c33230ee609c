"""Exit codes and the errors that carry them: one place, so every command agrees."""

from __future__ import annotations

EXIT_OK = 0
EXIT_SOME_INPUTS_BAD = 1  # some inputs could not be read; the rest was processed
EXIT_USAGE = 2
EXIT_CRASHED = 3  # `wait`: the server died before it was ready
EXIT_TIMEOUT = 124  # `wait`: like GNU timeout

EXIT_OTHER = 1


class FiredupError(Exception):
    """An error meant for the user: its text is the whole message; no traceback is shown."""

    exit_code = EXIT_OTHER


class UsageError(FiredupError):
    exit_code = EXIT_USAGE

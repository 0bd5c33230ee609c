"""Regexes compiled on first use.

Compiling a pattern costs 0.1-1 ms, and a module-level `re.compile` pays it at import in
every run, whether the run meets a line that needs the pattern or not: the patterns of
collector prefixes, colour codes, multi-node signs and units together were ~10 ms of a
plain log's parse (docs/speed.md). A pattern a typical run never uses is made here instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable


def lazy_regex(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A function that returns `re.compile(pattern, flags)`, compiled on its first call."""

    @functools.cache
    def compiled() -> re.Pattern[str]:
        return re.compile(pattern, flags)

    MADE.append(compiled)
    return compiled


# Every lazy regex of the modules imported so far: what the linearity tests check.
MADE: list[Callable[[], re.Pattern[str]]] = []

__all__ = ["MADE", "lazy_regex"]

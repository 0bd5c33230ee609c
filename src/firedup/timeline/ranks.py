"""Ranks compared: their order, and the one rule every view uses for a straggler (a slow rank)
or, at a barrier, a late arrival."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A rank is a straggler in a phase when it takes this much longer than the median rank:
# at least STRAGGLER_SECONDS and STRAGGLER_SHARE of the median. Every view uses this rule.
STRAGGLER_SECONDS = 5.0
STRAGGLER_SHARE = 0.1


# Phases measured from the rank's previous line (no begin line of their own) include the
# wait for slower ranks at the barrier before them: their longest rank is the one that
# finished the phase before *first*, never a straggler.
NO_STRAGGLERS = frozenset({"kv_cache", "draft.kv_cache"})


def is_straggler(seconds: float, median: float, phase: str | None = None) -> bool:
    if phase in NO_STRAGGLERS:
        return False
    return seconds - median >= max(STRAGGLER_SECONDS, STRAGGLER_SHARE * median)


def late_arrival(starts: Mapping[str, float]) -> tuple[str, float] | None:
    """At a barrier phase (NO_STRAGGLERS), the rank that arrived last and how many seconds
    after the others: it made the others wait, so it is the one to blame, while the rank
    that waited longest arrived first. `starts`: rank -> the phase's start (any common origin);
    the lateness is measured against the median of the other ranks. None with fewer than two ranks."""
    if len(starts) < 2:
        return None
    rank = max(starts, key=lambda r: (starts[r], r))
    others = sorted(t for r, t in starts.items() if r != rank)
    return rank, starts[rank] - others[len(others) // 2]


def is_late(lateness: float) -> bool:
    """A rank arriving this late at a barrier is a straggler (the same threshold as durations)."""
    return lateness >= STRAGGLER_SECONDS


def rank_sort_key(rank: str) -> tuple[Any, ...]:
    return tuple((tag.rstrip("0123456789"), int(re.sub(r"\D", "", tag) or 0)) for tag in rank.split())

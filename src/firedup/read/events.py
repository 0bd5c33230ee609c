"""What several layers read of the access lines: which requests are probes, and when an
access line's time counts. Defined below the timeline so that the batch engine's compaction
and the timeline agree on it without importing upward. Which lines end a startup, and every
other meaning of a kind of event, is declared in `firedup.formats.vocab` (`Format.vocab`).
"""

from __future__ import annotations

from functools import cache

from firedup.formats.base import Format
from firedup.formats.vocab import HTTP_ACCESS
from firedup.read.engine import Event

# Paths the server or probes request on their own; not a user's first request.
PROBE_PATHS = ("/health", "/ready", "/get_model_info", "/model_info", "/v1/models", "/get_server_info",
                "/server_info", "/metrics", "/freeze_gc", "/ping", "/version")

# Access-log lines (one per HTTP request): runtime traffic, read for three milestones only.
ACCESS = HTTP_ACCESS


def own_time_headers(fmt: Format | None) -> frozenset[str]:
    """Names of the headers that carry the engine's own clock (and a time)."""
    if fmt is None:
        return frozenset()
    return _own_time_headers(fmt.name, tuple((h.name, h.clock, h.pattern) for h in fmt.parsing.headers))


@cache
def _own_time_headers(_name: str, headers: tuple[tuple[str, str, str], ...]) -> frozenset[str]:
    return frozenset(name for name, clock, pattern in headers if clock == "own" and "(?P<time>" in pattern)


def access_time_counts(event: Event, own_time: frozenset[str]) -> bool:
    """Whether an access event's time stretches its run's span (first_ts, last_ts).

    Access lines are runtime traffic, like batch lines: when they carry the engine's own
    clock (or inherit it), the run's span is that clock's first and last line (the
    clock.first / clock.last events), not the stamp of whichever request came last. A
    collector's stamp on an access line (kubectl, journald) does count: during a hang the
    health probes may be the only lines that show time passing. This is what lets
    `compact` drop the access lines after the few a timeline reads (see compact.py).
    """
    return not event.inherited and event.header not in own_time



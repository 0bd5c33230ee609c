"""The twin rule, decided once: a run whose phase took several times what another run of the same
configuration took in it did work there that the faster start skipped (a cache it found cold: a
kernel JIT, a compile cache, an autotune). No line of the log need say so.

Every view that says "cold because a same-configuration twin did it several times faster" asks
this module: the cache verdicts of runs read together (`timeline.silence.twin_verdicts`, what
`timeline`, `parse --json` and the `cache_start` column show), the cold/warm split of `budget` and
`compare` (`tables.coldwarm`) and the saving a warm twin measures (`tables.advice`). Pure
functions over seconds, so each caller hands in what it holds (runs, rows of a table) and
renders the result.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from firedup.core.config import config_key, model_known

# A phase is slower than its twin's when it took at least TWIN_RATIO times as long and TWIN_SECONDS
# more: both, so that a 2 s phase against a 0.5 s one is noise, and a 90 s one against 75 s spread.
TWIN_RATIO = 3.0
TWIN_SECONDS = 20.0

K = TypeVar("K", bound=Hashable)


def twin_key(engine: str, config: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The configuration twins share: the engine and every flag that changes start-up time alike
    (`SAME_CONFIG_FLAGS`); None where no line names the model (two unknown models are no twins)."""
    key = config_key(engine, config)
    return key if model_known(key) else None


def slower(seconds: float, twin_seconds: float) -> bool:
    """Whether `seconds` of a phase is several times a twin's `twin_seconds` of it (the rule)."""
    return twin_seconds > 0 and seconds >= TWIN_RATIO * twin_seconds and seconds - twin_seconds >= TWIN_SECONDS


@dataclass(frozen=True)
class SlowerThanTwin(Generic[K]):
    """One run's phase that took several times its fastest twin's."""

    run: K
    phase: str
    seconds: float
    twin: K
    twin_seconds: float

    @property
    def ratio(self) -> float:
        return self.seconds / self.twin_seconds

    @property
    def saving(self) -> float:
        """What the run would have saved had it done the phase as fast as its twin."""
        return self.seconds - self.twin_seconds


def slower_than_twins(durations: Mapping[K, Mapping[str, float | None]]) -> list[SlowerThanTwin[K]]:
    """Over the runs of one configuration (`durations`: each run's seconds per phase), every phase
    of a run that was `slower` than the fastest twin's; a run without the phase (absent, or 0 s)
    is no twin for it. Phases in the order first seen, runs in the order given; of two equally
    fast twins, the first."""
    phases: dict[str, None] = {}
    for seconds in durations.values():
        phases.update(dict.fromkeys(seconds))
    out: list[SlowerThanTwin[K]] = []
    for phase in phases:
        timed = [(float(s), run) for run, by_phase in durations.items() if (s := by_phase.get(phase))]
        if len(timed) < 2:
            continue
        fast, twin = min(timed, key=lambda t: t[0])
        out.extend(SlowerThanTwin(run, phase, seconds, twin, fast) for seconds, run in timed
                   if run != twin and slower(seconds, fast))
    return out


__all__ = ["TWIN_RATIO", "TWIN_SECONDS", "SlowerThanTwin", "slower", "slower_than_twins", "twin_key"]

"""The stage a run is in after each milestone: where a crash or a cut-off log is placed, and
what `firedup wait` says the server is doing. One table for the batch and the live views."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from firedup.formats import Format, get_format
from firedup.formats.vocab import SHARED
from firedup.timeline.run import Milestone, Run

# The stage a run is in right after a milestone (`Kind.stage_after`): how a crash or a cut-off
# log is placed. A format adds or overrides entries (`Format.meaning.stage_after`).
_STAGE_AFTER = dict(SHARED.stage_after)

# A stage the run's config turned off is skipped (overridden per format by `Format.meaning.stage_skips`).
_STAGE_SKIPS: dict[str, tuple[str, Any, str]] = {"cuda_graph": ("disable_cuda_graph", True, "http_start")}


def format_of(run: Run) -> Format | None:
    """The format a run was read with, for callers that hold only the run (its engine's
    name, say from the history store); None when no registered format has that name."""
    try:
        return get_format(run.engine)
    except KeyError:
        return None

StageRules = tuple[Mapping[str, str], Mapping[str, tuple[str, Any, str]]]


def stage_rules(fmt: Format | None) -> StageRules:
    """The shared stage table with the format's entries over it (None: the shared one only)."""
    if fmt is None:
        return _STAGE_AFTER, _STAGE_SKIPS
    return {**_STAGE_AFTER, **fmt.meaning.stage_after}, fmt.meaning.stage_skips or _STAGE_SKIPS


def next_stage(run: Run, stage: str | None, m: Milestone, rules: StageRules | None = None,
               fmt: Format | None = None) -> str | None:
    """The stage `run` is in right after milestone `m`, given the stage before it.

    One function for the batch view (where a crash or a cut-off log is placed) and the
    live view (`firedup wait`), so both name the same phase for the same lines.
    """
    table, skips = rules or stage_rules(fmt or format_of(run))
    nxt = m.fields.get("next_stage") or table.get(m.key)
    if nxt is None:
        return stage
    skip = skips.get(nxt)
    # a stage the config turned off (no graphs, no compile) is skipped, unless it visibly began
    if skip is not None and not m.key.endswith(".begin") and run.config.get(skip[0]) == skip[1]:
        nxt = skip[2]
    return str(nxt)


def _walk(run: Run, rules: StageRules) -> Iterator[tuple[str | None, Milestone]]:
    """The stage after each milestone, in line order, with the final table's rule (the
    critical path: a phase lasts until its slowest rank ends it): a rank's `X.end` moves the run
    on only once every rank that printed `X.begin` (of the same model) has printed its `X.end`.
    While one rank is still loading, the run is still loading, live and after the fact."""
    stage: str | None = "launch"
    begun: dict[tuple[str, str | None], set[str]] = {}
    ended: dict[tuple[str, str | None], set[str]] = {}
    for m in run.milestones:
        if m.rank is not None and "." in m.name:
            base, _, edge = m.name.rpartition(".")
            if edge == "begin":
                begun.setdefault((base, m.model), set()).add(m.rank)
            elif edge == "end":
                done = ended.setdefault((base, m.model), set())
                done.add(m.rank)
                if begun.get((base, m.model), set()) - done:
                    yield stage, m  # another rank is still in it: the run is too
                    continue
        stage = next_stage(run, stage, m, rules)
        yield stage, m


def stage_changes(run: Run, fmt: Format | None = None) -> list[tuple[str | None, Milestone | None]]:
    """Every change of stage in line order, with the milestone that caused it (None: the start).
    `fmt`: the format the run was read with (else the registry's format of its engine)."""
    rules = stage_rules(fmt or format_of(run))
    changes: list[tuple[str | None, Milestone | None]] = [("launch", None)]
    stage: str | None = "launch"
    for new, m in _walk(run, rules):
        if new != stage:
            changes.append((new, m))
            stage = new
    return changes


def stage_at(run: Run, line: int, fmt: Format) -> str | None:
    """The phase the run was in at `line`: the stage after the last milestone before it (the
    slowest rank's, as `stage_changes` and the final table say)."""
    stage: str | None = "launch"
    for new, m in _walk(run, stage_rules(fmt)):
        if m.line > line:
            break
        stage = new
    return stage

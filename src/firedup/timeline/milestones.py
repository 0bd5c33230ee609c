"""A run's milestones from its events. Every rank prints its own; a speculative-decoding run
loads and captures a second (draft) model, which is not a restart: each per-model line says
which model it is of. Access lines give the first request milestones; fatal lines become
candidate crash milestones, kept only if the run crashed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from firedup.formats import Format
from firedup.formats.vocab import (
    CRASH,
    ENGINE_TIMINGS,
    HEALTH_FIRST,
    HTTP_FIRST_REQUEST,
    HTTP_RUNNING,
    LOAD_WEIGHT_BEGIN,
    LOAD_WEIGHT_END,
    READY,
    REQUEST_FIRST,
    SHARED,
)
from firedup.read.engine import Event
from firedup.read.events import ACCESS, PROBE_PATHS
from firedup.timeline.run import Milestone, Run

# The shared milestone names (the contract's, plus the draft names that extend them); a
# format adds its own (`Format.vocab.milestones`).
MILESTONES = SHARED.milestones


class _Models:
    """Which model (target or draft) each per-model line is of, on its rank, as the lines come."""

    def __init__(self, fmt: Format) -> None:
        self.vocab = fmt.vocab
        self.by_repeat = fmt.meaning.draft_by_repeat
        self.draft_types = re.compile(fmt.meaning.draft_model_types) if fmt.meaning.draft_model_types else None
        self.counts: dict[tuple[str | None, str], int] = {}  # (rank, name) -> lines seen
        self.loads: dict[str | None, int] = {}  # rank -> weight loads begun
        # Begins still open per (rank, name) -> the line that opened them: an engine that names no
        # draft by repeats may announce one begin with two different lines (the 0.9-0.11 runner's
        # "Starting to load model" then "Loading model from scratch"); the second is no new milestone.
        self.open_begins: dict[tuple[str | None, str], str] = {}

    def repeats_a_begin(self, event: Event) -> bool:
        """True for a second line announcing a begin still open (engines with no draft by repeats)."""
        if self.by_repeat:
            return False
        name = event.name
        if name.endswith(".begin"):
            opened = self.open_begins.get((event.rank, name))
            if opened is not None and opened != event.text:
                return True
            self.open_begins[(event.rank, name)] = event.text
        elif name.endswith(".end"):
            self.open_begins.pop((event.rank, name[:-len(".end")] + ".begin"), None)
        return False

    def name_and_model(self, event: Event) -> tuple[str, str | None]:
        """The milestone's name (a draft's twin name for a draft's line) and its model, noted on
        the event (`_model`) for the phases; None for a line of no model."""
        name, vocab = event.name, self.vocab
        if name in vocab.per_model:
            # an engine whose repeats are the same model on another process names no draft by count
            model = self.model_of(event) if self.by_repeat else "target"
            if model == "draft" and name in vocab.draft_twin:
                name = vocab.draft_twin[name]
            event.fields["_model"] = model
            return name, model
        if name in vocab.draft_only:
            event.fields["_model"] = "draft"
            return name, "draft"
        return name, None

    def model_of(self, event: Event) -> str:
        """'target' or 'draft' for a per-model event on its rank."""
        explicit = event.fields.get("model")
        if explicit in ("target", "draft"):
            return str(explicit)
        if event.fields.get("repeated"):
            # Ray's "[repeated Nx across cluster]" restates what other processes (often other
            # engines, whose ranks have the same names) printed: never this rank's second model
            return "target"
        rank, name = event.rank, event.name
        if name in self.vocab.per_model_repeat:
            return self._counted(event, rank, name)
        if name in self.vocab.per_model_load:
            return "draft" if self.loads.get(rank, 0) >= 2 else "target"
        return "target"

    def _counted(self, event: Event, rank: str | None, name: str) -> str:
        """A line each model prints once: the second on a rank is the draft's (a weight load's
        end: the draft's by its model type, else by the loads begun)."""
        counts, loads = self.counts, self.loads
        key = (rank, name)
        counts[key] = counts.get(key, 0) + 1
        if name == LOAD_WEIGHT_BEGIN:
            loads[rank] = counts[key]
        if (name == LOAD_WEIGHT_END and self.draft_types is not None
                and self.draft_types.search(str(event.fields.get("model_type", "")))):
            return "draft"
        if name == LOAD_WEIGHT_END and loads.get(rank):
            return "draft" if loads[rank] >= 2 else "target"
        return "draft" if counts[key] >= 2 else "target"


class _FirstRequests:
    """The milestones access lines make: the first request, the first health check, and the
    first real request after the ready line."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.ready_line = next((e.line for e in events if e.name == READY), None)
        self.seen_access = self.seen_health = self.seen_request = False

    def add(self, run: Run, event: Event) -> None:
        path = str(event.fields.get("path", ""))
        if not self.seen_access:
            run.milestones.append(Milestone(HTTP_FIRST_REQUEST, event.ts, event.rank, event.line, event.fields,
                                            event.text))
            self.seen_access = True
        if not self.seen_health and path.startswith("/health"):
            run.milestones.append(Milestone(HEALTH_FIRST, event.ts, event.rank, event.line, event.fields, event.text))
            self.seen_health = True
        if (not self.seen_request and self.ready_line is not None and event.line > self.ready_line
                and not path.startswith(PROBE_PATHS)):
            run.milestones.append(Milestone(REQUEST_FIRST, event.ts, event.rank, event.line, event.fields, event.text))
            self.seen_request = True


def collect_milestones(run: Run, events: Sequence[Event], fmt: Format) -> None:
    """The run's milestones in line order, with the model of each per-model one, the first
    requests, and a candidate crash milestone for each fatal line (`outcome.decide_outcome`
    keeps them only if the run crashed)."""
    models = _Models(fmt)
    requests = _FirstRequests(events)
    vocab = fmt.vocab
    milestones, crashy, if_stuck, if_bare = vocab.milestones, vocab.fatal, vocab.fatal_if_stuck, vocab.fatal_if_bare
    for event in events:
        if models.repeats_a_begin(event):
            continue
        name, model = models.name_and_model(event)
        if name == ACCESS:
            requests.add(run, event)
        elif name in crashy or name in if_stuck or (name in if_bare and event.header == "bare"):
            run.milestones.append(Milestone(CRASH, event.ts, event.rank, event.line, event.fields, event.text))
        elif name in milestones:
            run.milestones.append(Milestone(name, event.ts, event.rank, event.line, event.fields, event.text, model))
            if name == ENGINE_TIMINGS:
                run.engine_timings = event.fields.get("timings")
            if name == HTTP_RUNNING and event.fields.get("url"):
                run.health_url = str(event.fields["url"])
    run.milestones.sort(key=lambda m: m.line)

"""Where a followed start-up is, for `wait`'s live view: its progress bars (`Progress`) and which
changes of stage are news yet (`StageNews`).

A stage is news only once it has lasted: MIN_STAGE_S for a first entry (an engine's
graph-capture end line points to http_start, and a piecewise capture begins in the same
second); REENTRY_S for a stage seen before (ranks interleave their lines, and a rank still
finishing one stage must not make the list flap) and for a timer around steps already shown
(an umbrella timer reported only when it ends: its tail is news only if it lasts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from firedup.core.units import fmt_duration, fmt_offset
from firedup.formats import Format
from firedup.formats.vocab import PROGRESS_CUDA_GRAPH
from firedup.live.history import History
from firedup.read.clock import Stamp
from firedup.read.engine import Event
from firedup.timeline.phases import spanned
from firedup.timeline.run import Milestone, Run
from firedup.timeline.stages import stage_changes

REENTRY_S = 5.0  # a stage entered again is news once it lasts this long (log time)
MIN_STAGE_S = 1.0  # a stage left sooner was a guess the next line corrected: never news


@dataclass
class Progress:
    label: str
    n: int
    total: int

    def __str__(self) -> str:
        return f"{self.label} {self.n}/{self.total}".strip()


def progress_of(event: Event, units: Mapping[str, str]) -> Progress | None:
    """The progress bar of `event`; `units`: each progress kind's unit (`Vocabulary.progress`)."""
    n, total = event.fields.get("n"), event.fields.get("total")
    if not isinstance(n, int) or not isinstance(total, int):
        return None
    label = units.get(event.name, "")
    if event.name == PROGRESS_CUDA_GRAPH:
        desc = str(event.fields.get("desc", ""))
        label = {"Capturing batches": "batches", "Capturing prefill shape": "prefill shapes",
                 "Capturing num tokens": "token sizes", "Compiling num tokens": "compiled sizes"}.get(desc, desc)
    return Progress(label, n, total)


@dataclass
class StageNews:
    """The stage list of one start-up as told so far: `news` gives the lines of the changes
    that have become news since the last call (`pending`: some are still too young to tell)."""

    key: tuple[str, int | None] | None = None  # the start-up told (a restart begins a new list)
    announced: set[str] = field(default_factory=set)
    upto: int = 0  # changes looked at
    last: str | None = None  # the stage told last
    pending: bool = False

    def restarted(self, run: Run) -> bool:
        """A new start-up in the log (its list begins afresh); False for the first one."""
        key = (run.source, run.first_line)
        if key == self.key:
            return False
        again = self.key is not None
        self.key, self.announced, self.upto, self.last = key, set(), 0, None
        return again

    def news(self, run: Run, fmt: Format | None, elapsed: float | None, history: History) -> list[str]:
        """`   +1:05  load_weights  (usually 40 s)  [line 12]` for each change now news;
        `elapsed`: seconds since the run's first line by the log's clock."""
        assert run.first_ts is not None
        changes = stage_changes(run, fmt)
        lines: list[str] = []
        i = self.upto
        while i < len(changes):
            stage, m = changes[i]
            ts = run.first_ts if m is None else m.ts
            if stage is None or stage == self.last or ts is None:
                i += 1
                continue
            verdict = self._lasted(run, changes, i, ts, elapsed)
            if verdict == "wait":
                break  # too early to tell; look again on the next pass
            i += 1
            if verdict == "news":
                again = stage in self.announced
                self.announced.add(stage)
                self.last = stage
                if stage != "serving":
                    lines.append(_line(run, stage, m, ts, again, history))
        self.upto = i
        self.pending = i < len(changes)
        return lines

    def _lasted(self, run: Run, changes: list[tuple[str | None, Milestone | None]], i: int, ts: Stamp,
                elapsed: float | None) -> str:
        """"news", "skip" (a flap between ranks, or a guess the next line corrected) or "wait"."""
        assert run.first_ts is not None
        stage, m = changes[i]
        assert stage is not None
        lasting = REENTRY_S if stage in self.announced or spanned(stage, self.announced) \
            else MIN_STAGE_S if m is not None and stage != "serving" else 0.0
        if not lasting:
            return "news"
        back, nxt = changes[i + 1] if i + 1 < len(changes) else (None, None)
        if nxt is not None and nxt.ts is not None:
            # a first entry is news unless the next line goes straight back
            corrected = lasting > MIN_STAGE_S or back in self.announced
            return "skip" if corrected and nxt.ts.minus(ts) < lasting else "news"
        if run.outcome != "incomplete" and lasting == MIN_STAGE_S:
            return "news"  # the stage the run ended in: no next line can correct it
        if elapsed is None or elapsed - ts.minus(run.first_ts) < lasting:
            return "wait"
        return "news"


def _line(run: Run, stage: str, m: Milestone | None, ts: Stamp, again: bool, history: History) -> str:
    assert run.first_ts is not None
    offset = fmt_offset(ts.minus(run.first_ts))
    usual = history.typical_stage(stage)
    extra = f"  (usually {fmt_duration(usual) if usual >= 1 else '<1 s'})" if usual is not None and not again else ""
    return f"{offset:>8}  {stage}{' again' if again else ''}{extra}  [line {m.line if m else run.first_line}]"


__all__ = ["MIN_STAGE_S", "REENTRY_S", "Progress", "StageNews", "progress_of"]

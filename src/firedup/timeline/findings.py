"""What the timeline finds in a run beside its milestones and phases, as values: its silences,
cache verdicts and unknown spans (computed by `silence.py`), the causes of a slow start and
their evidence (`advice.py`), each with its contract form. `Run` holds them, and the modules that
compute them read a `Run`: the values live here, below both, so that no module of the timeline
imports one that imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from firedup.core.drain import Template
from firedup.core.units import fmt_duration
from firedup.read.clock import Stamp


@dataclass
class Silence:
    """No line with the engine's own time between `since_line` and `line`."""

    start: Stamp
    end: Stamp
    seconds: float
    since_line: int
    line: int
    since_text: str  # the line before the silence (a line without a rule keeps its text too)
    text: str  # the line that ended it
    after: str | None = None  # the last milestone before it
    before: str | None = None  # the first milestone after it
    phase: str | None = None  # the run-level phase it lies in ("unattributed" included)
    umbrella: str | None = None  # the umbrella timer around it (Format.meaning.umbrella_phases)
    lines_inside: int = 0  # lines without the server's own time (bars, other loggers) printed inside it
    templates: list[Template] = field(default_factory=list)
    cause: str | None = None  # what it probably was (None: the log does not say)
    cache: str | None = None  # the cache kind whose cold start it suggests
    evidence: list[tuple[int, str]] = field(default_factory=list)  # lines behind `cause`

    def as_contract(self, first: Stamp | None) -> dict[str, Any]:
        return {
            "start": self.start.iso, "end": self.end.iso, "seconds": round(self.seconds, 3),
            "offset": None if first is None else round(self.start.minus(first), 3),
            "since_line": self.since_line, "line": self.line, "since_text": self.since_text, "text": self.text,
            "after": self.after, "before": self.before, "phase": self.phase, "umbrella": self.umbrella,
            "lines_inside": self.lines_inside, "templates": [t.as_contract() for t in self.templates],
            "cause": self.cause, "cache": self.cache,
            "evidence": [{"line": n, "text": t} for n, t in self.evidence],
        }


@dataclass
class CacheVerdict:
    """Whether one cache was cold or warm at this start, and why firedup says so."""

    kind: str
    verdict: str  # "cold" | "warm" | "unknown"
    basis: str  # "line" (a line says so) | "timing" | "silence" | "none"
    reason: str
    evidence: list[tuple[int, str]] = field(default_factory=list)
    seconds: float | None = None  # the time the cached work (or the silence) took, when measured
    phase: str | None = None  # the run-level phase the cached work (or the silence) lies in

    def as_contract(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "basis": self.basis, "reason": self.reason, "phase": self.phase,
                "seconds": None if self.seconds is None else round(self.seconds, 3),
                "evidence": [{"line": n, "text": t} for n, t in self.evidence]}

    @classmethod
    def of(cls, kind: str, d: dict[str, Any]) -> CacheVerdict:
        """`as_contract`'s dict back (a store's `caches_json`), so a stored run splits cold from warm."""
        return cls(kind, str(d.get("verdict") or "unknown"), str(d.get("basis") or "none"), str(d.get("reason") or ""),
                   [(int(e["line"]), str(e.get("text") or "")) for e in d.get("evidence") or [] if e.get("line")],
                   None if d.get("seconds") is None else float(d["seconds"]), d.get("phase"))


@dataclass
class UnknownSpan:
    """Unattributed time and the lines no rule knows printed in it, as templates."""

    start: Stamp
    end: Stamp
    seconds: float
    after: str | None
    before: str | None
    lines: int
    templates: list[Template]

    def as_contract(self) -> dict[str, Any]:
        return {"start": self.start.iso, "end": self.end.iso, "seconds": round(self.seconds, 3),
                "after": self.after, "before": self.before, "lines": self.lines,
                "templates": [t.as_contract() for t in self.templates]}


@dataclass
class Evidence:
    """A line of a log behind an item: its source, number and text (the message, cut), and the
    remedy (`Remedy.cause`) whose `proves` regex it matches."""

    source: str
    line: int
    text: str
    shows: str

    def as_contract(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "text": self.text, "shows": self.shows}

    @classmethod
    def of(cls, d: dict[str, Any]) -> Evidence:
        return cls(str(d["source"]), int(d["line"]), str(d["text"]), str(d["shows"]))


@dataclass
class Item:
    """One cause: what it cost, the lines that show it, its fix, and what fixing it saves."""

    kind: str  # the remedy's cause: "cache:deepgemm_jit", "graph_capture", ...
    cause: str  # in words
    seconds: float  # what it cost (measured)
    evidence: list[Evidence]
    fix: str
    saving_seconds: float | None  # None: unknown
    basis: str  # "warm twin" | "physical bound" | "published figure (source)" | "this log" | "unknown"
    phase: str | None = None
    efficiency: float | None = None  # bound time / measured, where the phase has a bound
    bounds: list[dict[str, Any]] = field(default_factory=list)
    runs: str | None = None  # a group's item: "6 of 6 runs"
    basis_detail: str | None = None  # which twin, which limit, which of the log's figures

    def as_contract(self) -> dict[str, Any]:
        return {"kind": self.kind, "cause": self.cause, "seconds": round(self.seconds, 3),
                "evidence": [e.as_contract() for e in self.evidence], "fix": self.fix,
                "saving_seconds": None if self.saving_seconds is None else round(self.saving_seconds, 3),
                "basis": self.basis, "phase": self.phase,
                "efficiency": None if self.efficiency is None else round(self.efficiency, 3),
                "bounds": self.bounds, "runs": self.runs, "basis_detail": self.basis_detail}

    @classmethod
    def of(cls, d: dict[str, Any]) -> Item:
        return cls(str(d["kind"]), str(d["cause"]), float(d["seconds"]), [Evidence.of(e) for e in d["evidence"]],
                   str(d["fix"]), None if d.get("saving_seconds") is None else float(d["saving_seconds"]),
                   str(d["basis"]), d.get("phase"), d.get("efficiency"), list(d.get("bounds") or []), d.get("runs"),
                   d.get("basis_detail"))

    def basis_text(self) -> str:
        """`published figure: its source`, `physical bound: which`, `warm twin: which run`."""
        basis = self.basis
        if basis.endswith(")") and " (" in basis:
            basis = basis[:-1].replace(" (", ": ", 1)
        return basis + (f": {self.basis_detail}" if self.basis_detail else "")

    def line(self) -> str:
        """One line: `cold DeepGEMM kernel cache: 8 min 46 s; fixing it saves ~8 min 44 s (published
        figure ...): fill the cache ...`."""
        saving = (f"fixing it saves {fmt_duration(self.saving_seconds)} ({self.basis_text()})"
                  if self.saving_seconds is not None else "saving unknown")
        return f"{self.cause}: {fmt_duration(self.seconds)}; {saving}; fix: {self.fix}"


def cache_start(caches: Mapping[str, CacheVerdict]) -> str:
    """`cold` when any cache of the engine was cold at this start, `warm` when none was and one was
    warm, else `unknown`: what cold-start and warm-start budgets split on (`budget`, `check`, `wait`)."""
    verdicts = {v.verdict for v in caches.values()}
    return "cold" if "cold" in verdicts else "warm" if "warm" in verdicts else "unknown"


__all__ = ["CacheVerdict", "Evidence", "Item", "Silence", "UnknownSpan", "cache_start"]

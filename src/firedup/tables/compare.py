"""Compare groups of runs by their flags: which configuration starts slower, and which phase is why.

The runs are grouped as `tables.grouping` says (one population of comparable runs, everything
left out listed with its reason); this module computes what differs between the groups: the
time to ready, each phase, the flags, and within a group the caches cold in some runs.

Statistics: median, p90 (linear interpolation between order statistics, like numpy's
default) and max of the time to ready. Per phase, the median over the group's ready runs,
where a phase that did not happen counts 0 s. The difference between two groups is the
difference of their medians; the phase whose median moved most explains most of it (never
a phase that spans others, such as an engine_init over compile and graph capture: the step
inside it that moved does). The text view is `tables.compare_text`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from firedup.core.config import value_changes
from firedup.core.safe import visible
from firedup.formats.vocab import DRAFT_PREFIX
from firedup.tables.advice import Advice, advise
from firedup.tables.coldwarm import ColdWarm, key_changes, split
from firedup.tables.frames import FLAG_PREFIX, IDENTITY_FLAGS, Runs, phase_seconds, shown_flag
from firedup.tables.grouping import Group, Grouping, fmt_value, group_runs, grouping_keys, quantile, rounded
from firedup.timeline.phases import spanned


@dataclass
class Delta:
    base: Group
    other: Group
    total_seconds: float
    phases: dict[str, float]
    main_phase: str | None
    main_phase_seconds: float | None
    flags_differ: dict[str, tuple[list[Any], list[Any]]]

    @property
    def explained(self) -> tuple[list[str], float | None]:
        """The phases the difference is in: the main phase and its other model's twin (the target's
        graphs and the draft's, which one flag turns on or off together) where it moved the same
        way, and their seconds together: the one figure the headline and the text view give."""
        if self.main_phase is None or self.main_phase_seconds is None:
            return [], None
        base = self.main_phase.removeprefix(DRAFT_PREFIX)
        names = [self.main_phase] + [
            name for name, sec in self.phases.items() if name != self.main_phase
            and name.removeprefix(DRAFT_PREFIX) == base and sec * self.main_phase_seconds > 0]
        return names, sum(self.phases.get(n, 0.0) if n != self.main_phase else self.main_phase_seconds
                          for n in names)

    def as_json(self) -> dict[str, Any]:
        names, seconds = self.explained
        return {
            "from": self.base.key, "to": self.other.key, "total_seconds": rounded(self.total_seconds),
            "phases": {name: rounded(sec) for name, sec in self.phases.items()},
            "main_phase": self.main_phase, "main_phase_seconds": rounded(self.main_phase_seconds),
            "explained_by": names, "explained_seconds": rounded(seconds),
            "flags_differ": {flag: {"from": a, "to": b} for flag, (a, b) in self.flags_differ.items()},
        }


@dataclass
class CacheDifference:
    """Runs of one group (the same config) that differ in a cache's state: how much longer the
    phase holding the cold cache's work took in the cold runs, and the lines that say so."""

    group: str
    kind: str
    phase: str | None
    seconds: float | None  # median of `phase` in the cold runs minus in the others
    cold: list[str]  # run ids
    others: list[str]
    others_verdicts: dict[str, int]  # verdict -> runs, for the others
    reason: str  # the cold verdict's, in the slowest cold run
    source: str  # that run's log
    evidence: list[tuple[int, str]]

    def text(self) -> str:
        from firedup.core.units import fmt_duration as dur

        amount = ""
        if self.seconds is not None and self.phase is not None:
            amount = f": {'+' if self.seconds >= 0 else '-'}{dur(abs(self.seconds))} in {self.phase}"
        others = ", ".join(f"{n} {v}" for v, n in sorted(self.others_verdicts.items()))
        cold = "1 cold run" if len(self.cold) == 1 else f"{len(self.cold)} cold runs"
        lines = "; ".join(f"line {n} `{t if len(t) <= 60 else t[:59] + '…'}`" for n, t in self.evidence[:3])
        return (f"cold {self.kind} caches{amount} ({cold} vs {others}; {self.reason}; evidence in "
                f"{visible(self.source, one_line=True)}: {lines})")

    def as_json(self) -> dict[str, Any]:
        return {"group": self.group, "kind": self.kind, "phase": self.phase, "seconds": rounded(self.seconds),
                "cold_runs": self.cold, "other_runs": self.others, "others_verdicts": self.others_verdicts,
                "reason": self.reason, "source": self.source,
                "evidence": [{"line": n, "text": t} for n, t in self.evidence], "text": self.text()}


@dataclass
class Comparison:
    grouping: Grouping
    deltas: list[Delta]
    headline: str
    caches: list[CacheDifference] = field(default_factory=list)
    # group label -> its cold and warm starts apart (tables.coldwarm), never pooled silently
    splits: dict[str, ColdWarm] = field(default_factory=dict)
    # what would have made each group start sooner (tables.advice), largest saving first
    advice: Advice | None = None

    def text(self, width: int = 100, verbose: bool = False) -> str:
        """What `firedup compare` prints: the headline, a block per group, the deltas and what
        was left out, fitted to `width` (`verbose`: long values whole, every run left out). The
        library's face of the command (the notebook prints it); the view stays in compare_text,
        imported here only when asked for."""
        from firedup.tables.compare_text import comparison_text

        return comparison_text(self, width=width, verbose=verbose)

    def as_json(self) -> dict[str, Any]:
        g = self.grouping
        return {
            "by": g.by, "by_auto": g.by_auto, "population": g.population,
            "groups": [grp.as_json() for grp in g.groups],
            "deltas": [d.as_json() for d in self.deltas],
            "headline": self.headline,
            "cache_differences": [c.as_json() for c in self.caches],
            "cold_warm": {label: {**split_.as_json(), **self.split_figures(label)}
                          for label, split_ in self.splits.items()},
            "left_out": [lo.as_json() for lo in g.left_out],
            "notes": g.notes,
            "advice": [] if self.advice is None else [grp.as_json() for grp in self.advice.groups],
        }


    def split_figures(self, label: str) -> dict[str, Any]:
        """Median seconds to ready (first line -> ready) of a split group's cold and warm starts."""
        group = next(g for g in self.grouping.groups if g.label == label)
        apart = self.splits[label]
        seconds = dict(zip(group.run_ids, group.ready_seconds, strict=True))
        return {"cold_median_seconds": rounded(quantile([seconds[r] for r in apart.cold], 0.5)),
                "warm_median_seconds": rounded(quantile([seconds[r] for r in apart.warm], 0.5))}

def _flags_differ(runs: Runs, a: Group, b: Group) -> dict[str, tuple[list[Any], list[Any]]]:
    frame = runs.runs
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    ids_a = pl.Series(a.run_ids).implode()
    ids_b = pl.Series(b.run_ids).implode()
    fa, fb = frame.filter(pl.col("run_id").is_in(ids_a)), frame.filter(pl.col("run_id").is_in(ids_b))
    columns = set(frame.columns)
    for flag in grouping_keys(runs):
        if flag.removeprefix(FLAG_PREFIX) in IDENTITY_FLAGS or flag not in columns or flag == "cache_start":
            continue  # cache_start is no flag: `caches` of the comparison says what differs
        va = sorted(set(fa[flag].drop_nulls().to_list()), key=str)
        vb = sorted(set(fb[flag].drop_nulls().to_list()), key=str)
        if va != vb and va and vb:
            out[flag] = (va, vb)
    return out


def delta(runs: Runs, base: Group, other: Group) -> Delta:
    """How `other` differs from `base`: per phase, in total, and in flags."""
    total = (other.median or 0.0) - (base.median or 0.0)
    names = [n for n in other.phases if n in base.phases] + [n for n in other.phases if n not in base.phases] \
        + [n for n in base.phases if n not in other.phases]
    phases = {n: other.phases.get(n, 0.0) - base.phases.get(n, 0.0) for n in names}
    sign = 1.0 if total >= 0 else -1.0
    present = [n for n in names if base.phases.get(n, 0.0) > 0 or other.phases.get(n, 0.0) > 0]
    candidates = [n for n in phases if not spanned(n, present)] or list(phases)
    main = max(candidates, key=lambda n: sign * phases[n]) if candidates else None
    main_sec = phases[main] if main is not None else None
    if main is not None and sign * phases[main] <= 0:
        main, main_sec = None, None
    return Delta(base, other, total, phases, main, main_sec, _flags_differ(runs, base, other))


def _phase_median(wide: pl.DataFrame, phase: str, run_ids: list[str]) -> float:
    values = wide.filter(pl.col("run_id").is_in(pl.Series(run_ids).implode()))[phase].to_list()
    return float(quantile([v or 0.0 for v in values], 0.5) or 0.0)


@dataclass
class _CacheVerdicts:
    """The cache verdicts (`caches_json`, timeline.silence) of some runs, with each run's log and
    time to ready: what `cache_differences` compares."""

    by_run: dict[str, dict[str, dict[str, Any]]]  # run id -> cache kind -> verdict
    info: dict[str, tuple[str, float]]  # run id -> (its log, its time to ready)

    @classmethod
    def read(cls, rows: pl.DataFrame) -> _CacheVerdicts:
        by_run: dict[str, dict[str, dict[str, Any]]] = {}
        info: dict[str, tuple[str, float]] = {}
        for row in rows.iter_rows(named=True):
            try:
                by_run[row["run_id"]] = json.loads(row["caches_json"] or "{}")
            except ValueError:
                by_run[row["run_id"]] = {}
            info[row["run_id"]] = (row["source"], float(row["ready_seconds"] or 0.0))
        return cls(by_run, info)

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(k for v in self.by_run.values() for k in v))

    def of(self, rid: str, kind: str) -> dict[str, Any]:
        return self.by_run.get(rid, {}).get(kind, {})

    def apart(self, kind: str, cold: Sequence[str], others: Sequence[str], cold_within: Sequence[str]) -> bool:
        """Between configs, a cache explains a difference only when every cold run is of `cold_within`,
        no other run is, and some other run's cache is known warm: else the flags explain it."""
        return (set(cold) <= set(cold_within) and not set(others) & set(cold_within)
                and any(self.of(r, kind).get("verdict") == "warm" for r in others))

    def silence_seconds(self, kind: str, cold: Sequence[str], others: Sequence[str]) -> float:
        """For a cache judged by its silence: the silence itself, cold runs' median minus the others'."""
        def median_of(values: list[float]) -> float:
            return float(quantile(values, 0.5) or 0.0)

        return (median_of([float(self.of(r, kind).get("seconds") or 0.0) for r in cold])
                - median_of([float(self.of(r, kind).get("seconds") or 0.0)
                             if self.of(r, kind).get("basis") == "silence" else 0.0 for r in others]))

    def difference(self, label: str, kind: str, cold: list[str], others: list[str],
                   wide: pl.DataFrame) -> CacheDifference:
        """The cache `kind` cold in `cold` and not in `others`: the phase of its work (the slowest
        cold run's verdict says which), how much longer it took, and the lines that say so."""
        slowest = max(cold, key=lambda rid: self.info[rid][1])
        verdict = self.of(slowest, kind)
        phase = verdict.get("phase")
        seconds = None
        if verdict.get("basis") == "silence":
            seconds = self.silence_seconds(kind, cold, others)
        elif phase and phase in wide.columns:
            seconds = _phase_median(wide, phase, cold) - _phase_median(wide, phase, others)
        counts: dict[str, int] = {}
        for rid in others:
            v = self.of(rid, kind).get("verdict", "unknown")
            counts[v] = counts.get(v, 0) + 1
        evidence = [(int(e["line"]), str(e["text"])) for e in verdict.get("evidence", [])]
        return CacheDifference(label, kind, phase, seconds, cold, others, counts,
                               str(verdict.get("reason", "")), self.info[slowest][0], evidence)


def cache_differences(runs: Runs, label: str, run_ids: Sequence[str],
                      cold_within: Sequence[str] | None = None) -> list[CacheDifference]:
    """Among `run_ids`, the caches cold in some runs and not in the others, each with the phase its
    cold work lies in and how much longer it took (medians): the silence itself for a cache judged
    by its silence, else the phase. `cold_within`: only when every cold run is one of these and
    every other run is not (a delta between two groups)."""
    if len(run_ids) < 2 or "caches_json" not in runs.runs.columns:
        return []
    verdicts = _CacheVerdicts.read(runs.runs.filter(pl.col("run_id").is_in(pl.Series(list(run_ids)).implode())))
    ids = [rid for rid in run_ids if rid in verdicts.info]
    wide = phase_seconds(runs.select(ids))
    out: list[CacheDifference] = []
    for kind in verdicts.kinds():
        cold = [rid for rid in ids if verdicts.of(rid, kind).get("verdict") == "cold"]
        others = [rid for rid in ids if rid not in cold]
        if cold and others and (cold_within is None or verdicts.apart(kind, cold, others, cold_within)):
            out.append(verdicts.difference(label, kind, cold, others, wide))
    return sorted(out, key=lambda c: -(c.seconds or 0.0))


def compare(runs: Runs, by: Sequence[str] | None = None) -> Comparison:
    """Group runs by flags and explain the difference between the groups, and within a group
    the difference cold caches make."""
    grouping = group_runs(runs, by)
    timed = [g for g in grouping.groups if g.n > 0]
    deltas = [delta(runs, timed[0], g) for g in timed[1:]] if timed else []
    caches = [c for g in timed for c in cache_differences(runs, g.label, g.run_ids)]
    within = list(caches)  # the same config: the headline names the largest
    for d in deltas:  # groups of different flags whose runs also differ in a cache's state
        caches.extend(cache_differences(runs, f"{d.other.label} vs {d.base.label}",
                                        d.base.run_ids + d.other.run_ids, cold_within=d.other.run_ids))
        caches.extend(cache_differences(runs, f"{d.base.label} vs {d.other.label}",
                                        d.base.run_ids + d.other.run_ids, cold_within=d.base.run_ids))
    splits = {g.label: apart for g in timed if (apart := split(runs, g.run_ids)) is not None}
    for g in timed:
        grouping.notes.extend(key_changes(runs, g.run_ids, g.label))
    text = headline(grouping, deltas)
    if len(timed) == 1 and timed[0].label in splits:  # one config: the answer is its cold and warm starts
        text = _split_headline(timed[0], splits[timed[0].label])
    if within:
        c = within[0]
        if c.seconds is not None and c.phase is not None:
            from firedup.core.units import fmt_duration as dur

            text += f"; cold {c.kind} caches: +{dur(c.seconds)} in {c.phase}"
    return Comparison(grouping, deltas, text, caches, splits, advise(runs, grouping))


def _split_headline(group: Group, apart: ColdWarm) -> str:
    from firedup.core.units import fmt_duration as dur

    seconds = dict(zip(group.run_ids, group.ready_seconds, strict=True))
    cold = quantile([seconds[r] for r in apart.cold], 0.5)
    warm = quantile([seconds[r] for r in apart.warm], 0.5)
    what = "a median of " if len(apart.cold) > 1 else ""
    return (f"{group.label}: cold starts ready in {what}{dur(cold)} ({len(apart.cold)}), warm starts in "
            f"{'a median of ' if len(apart.warm) > 1 else ''}{dur(warm)} ({len(apart.warm)}); never pooled: see "
            "cold and warm starts below")


def headline(grouping: Grouping, deltas: Sequence[Delta]) -> str:
    from firedup.core.units import fmt_duration as dur

    timed = [g for g in grouping.groups if g.n > 0]
    if not timed:
        return "no run reached ready, so there is no time to ready to compare"
    if len(timed) == 1:
        g = timed[0]
        runs = "1 run" if g.n == 1 else f"{g.n} runs"
        spread = "" if g.n == 1 else f" (p90 {dur(g.p90)}, max {dur(g.max)})"
        return f"{g.label}: {runs} ready in a median of {dur(g.median)}{spread}"
    fast = timed[0]
    slow_delta = max(deltas, key=lambda d: d.total_seconds)
    slow = slow_delta.other
    lead = f"{fast.label} ready in a median of {dur(fast.median)}, {slow.label} in {dur(slow.median)}"
    if len(timed) > 2:
        lead = f"of {len(timed)} groups, {fast.label} is fastest (median {dur(fast.median)}) " \
               f"and {slow.label} slowest ({dur(slow.median)})"
    names, main_sec = slow_delta.explained
    if not names or main_sec is None:
        return lead
    text = (f"{lead}; {' and '.join(names)} explain{'s' if len(names) == 1 else ''} {dur(main_sec)} "
            f"of the {dur(slow_delta.total_seconds)} difference")
    offset = main_sec - slow_delta.total_seconds
    if offset >= 1.0:  # other phases got faster and took some back
        text += f" (other phases take back {dur(offset)})"
    return text


def flag_changes(flags_differ: Mapping[str, tuple[list[Any], list[Any]]]) -> list[tuple[str, Any, Any]]:
    """(flag or key path, before, after) per difference: a nested value (an args repr such as
    `cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(...), ...)`) by the key paths that differ
    (`cuda_graph_config.decode.backend`, `core.config.value_changes`); a flag with several values
    on a side as their text joined (`a/b`)."""
    out: list[tuple[str, Any, Any]] = []
    for flag, (a, b) in flags_differ.items():
        if len(a) == 1 and len(b) == 1:
            changes = value_changes(a[0], b[0])
            if changes:
                name = shown_flag(flag)
                out.extend((f"{name}.{visible(path, one_line=True)}" if path else name, x, y) for path, x, y in changes)
                continue
        out.append((shown_flag(flag), "/".join(map(fmt_value, a)), "/".join(map(fmt_value, b))))
    return out


__all__ = ["CacheDifference", "Comparison", "Delta", "cache_differences", "compare", "delta", "flag_changes",
           "headline"]

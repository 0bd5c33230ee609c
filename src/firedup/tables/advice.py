"""What would have made a group of start-ups ready sooner: each run's causes (`timeline.advice`)
with what only many runs show, then per group, ranked by saving.

What many runs add:

* a warm twin: another run of the same configuration (`coldwarm._configs`: the model and every
  flag that changes start-up time alike; never two runs whose model no line names) whose phase
  took `TWIN_RATIO` times less and `TWIN_SECONDS` less (`timeline.twins`' rule, the one the cache
  verdicts and `tables.coldwarm` use) measures what a cold cache cost in that phase: the saving, basis
  `warm twin`. The cause is the engine's remedy for a cache that works in that phase without a
  line of its own (`Remedy.phases`: the kernel JIT inside graph capture); a cold cache the run's
  own lines already showed there gets the twin's saving instead;
* a compile-cache key that changed between runs of one configuration: a cold run under a key no
  warm run had says so (the reason a start expected warm was cold);
* per group, each cause over the group's runs: the median seconds and saving, in how many runs,
  the evidence of the run where it cost most.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from firedup.core.units import fmt_duration
from firedup.formats import all_formats
from firedup.formats.base import Format
from firedup.tables.coldwarm import _configs, model_known, twin_findings
from firedup.tables.frames import Runs, phase_seconds
from firedup.tables.grouping import Grouping
from firedup.timeline.advice import CACHE, UNKNOWN, WARM_TWIN, prove, ranked
from firedup.timeline.findings import Item


@dataclass
class GroupAdvice:
    """One group's causes, largest saving first."""

    label: str
    run_ids: list[str]
    items: list[Item]

    def as_json(self) -> dict[str, Any]:
        return {"group": self.label, "runs": self.run_ids, "advice": [i.as_contract() for i in self.items]}


@dataclass
class Advice:
    """Every run's causes (with their twins) and every group's."""

    runs: dict[str, list[Item]]  # run id -> its items
    sources: dict[str, str]  # run id -> its log
    groups: list[GroupAdvice] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"runs": [{"run_id": rid, "source": self.sources.get(rid), "advice": [i.as_contract() for i in items]}
                         for rid, items in self.runs.items()],
                "groups": [g.as_json() for g in self.groups]}

    def line(self) -> str | None:
        """The one line `compare` prints after its headline (`advice_line`)."""
        return advice_line(self)

    def top(self) -> tuple[str, Item] | None:
        """The group's item that saves most (known savings first), with the group's label."""
        best = [(g.label, g.items[0]) for g in self.groups if g.items]
        if not best:
            return None
        order = ranked(item for _, item in best)
        return next((label, item) for label, item in best if item is order[0])


def run_items(runs: Runs, run_ids: Sequence[str] | None = None) -> dict[str, list[Item]]:
    """Each run's items (`Run.advice`), with what its warm twins and cache keys add."""
    frame = runs.runs if run_ids is None else runs.runs.filter(
        pl.col("run_id").is_in(pl.Series(list(run_ids), dtype=pl.Utf8).implode()))
    if "advice_json" not in frame.columns:
        return {}
    rows = {r["run_id"]: r for r in frame.select("run_id", "source", "engine", "outcome", "advice_json",
                                                  "cache_keys_json").to_dicts()}
    out = {rid: [Item.of(d) for d in json.loads(r["advice_json"] or "[]")] for rid, r in rows.items()}
    formats = all_formats()
    ready = [rid for rid, r in rows.items() if r["outcome"] == "ready"]
    if len(ready) >= 2:
        wide = phase_seconds(runs.select(ready))
        texts = _phase_texts(runs, ready)
        ready_frame = frame.filter(pl.col("run_id").is_in(pl.Series(ready, dtype=pl.Utf8).implode()))
        for key, same in _configs(ready_frame).items():
            fmt = formats.get(str(rows[same[0]]["engine"]))
            if fmt is not None and len(same) >= 2 and model_known(key):
                _twins(out, same, wide, texts, rows, fmt)
    return {rid: ranked(items) for rid, items in out.items()}


def _phase_texts(runs: Runs, ids: Sequence[str]) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(run id, phase) -> the lines ending the phase on the run level, with their text."""
    chosen = pl.Series(list(ids), dtype=pl.Utf8).implode()
    phases = runs.phases.filter(pl.col("run_id").is_in(chosen) & (pl.col("scope") == "run")
                                & pl.col("line").is_not_null())
    texts = {(r["run_id"], int(r["line"])): str(r["text"] or "") for r in runs.milestones.filter(
        pl.col("run_id").is_in(chosen)).select("run_id", "line", "text").to_dicts()}
    out: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for r in phases.select("run_id", "phase", "line").to_dicts():
        text = texts.get((r["run_id"], int(r["line"])))
        if text:
            out.setdefault((r["run_id"], r["phase"]), []).append((int(r["line"]), text))
    return out


def _twins(out: dict[str, list[Item]], same: Sequence[str], wide: pl.DataFrame,
           texts: dict[tuple[str, str], list[tuple[int, str]]], rows: dict[str, dict[str, Any]], fmt: Format) -> None:
    """Each run of one configuration whose phase was slower than its fastest twin's
    (`timeline.twins`): the cold cache that works in that phase unseen, saving the difference."""
    for found in twin_findings(wide, list(same)):
        _twin_item(out[found.run], found.phase, found.seconds, found.twin_seconds, rows[found.run], rows[found.twin],
                   texts, fmt, found.run, found.twin)


def _twin_item(items: list[Item], phase: str, seconds: float, fast: float, row: dict[str, Any],
               twin_row: dict[str, Any], texts: dict[tuple[str, str], list[tuple[int, str]]], fmt: Format,
               rid: str, twin: str) -> None:
    saving = seconds - fast
    detail = f"{twin_row['source']}: {phase} {fmt_duration(fast)}"
    known = next((i for i in items if i.kind.startswith(CACHE) and i.phase == phase), None)
    if known is not None:  # its own lines showed the cache cold: the twin measures the saving
        known.saving_seconds, known.basis, known.basis_detail = min(saving, known.seconds), WARM_TWIN, detail
        known.cause += _key_change(row, twin_row, known.kind)
        return
    remedy = next((r for r in fmt.advice.remedies if r.cause.startswith(CACHE) and phase in r.phases), None)
    if remedy is None:
        return
    evidence = (prove(fmt, remedy, str(row["source"]), texts.get((rid, phase), [])[:2])
                + prove(fmt, remedy, str(twin_row["source"]), texts.get((twin, phase), [])[:1]))
    if not evidence:
        return
    cause = f"{remedy.what}, inside {phase} ({fmt_duration(seconds)}; {fmt_duration(fast)} in a warm twin)"
    cause += _key_change(row, twin_row, remedy.cause)
    for other in items:  # the phase's own item keeps what the twin also spent
        if other.phase == phase and not other.kind.startswith(CACHE):
            other.seconds = max(other.seconds - saving, 0.0)
            if other.saving_seconds is not None:
                other.saving_seconds = min(other.saving_seconds, other.seconds)
    items[:] = [i for i in items if i.seconds > 0]
    items.append(Item(remedy.cause, cause, saving, evidence, remedy.fix, saving, WARM_TWIN, phase,
                      basis_detail=detail))


def _key_change(row: dict[str, Any], twin_row: dict[str, Any], cause: str) -> str:
    """`; its torch_compile cache key a1 is not the twin's b2`: why a start expected warm was cold."""
    kind = cause.removeprefix(CACHE)
    mine = json.loads(row.get("cache_keys_json") or "{}").get(kind)
    theirs = json.loads(twin_row.get("cache_keys_json") or "{}").get(kind)
    if mine and theirs and mine != theirs:
        return f"; its {kind} cache key {mine} is not the twin's {theirs}: the key changed"
    return ""


def group_items(items: dict[str, list[Item]], run_ids: Sequence[str]) -> list[Item]:
    """A group's causes: per cause, the median seconds and saving over the runs that show it,
    the evidence of the run where it cost most."""
    by_kind: dict[str, list[Item]] = {}
    for rid in run_ids:
        for item in items.get(rid, []):
            by_kind.setdefault(item.kind, []).append(item)
    out: list[Item] = []
    for found in by_kind.values():
        worst = max(found, key=lambda i: i.seconds)
        savings = [i.saving_seconds for i in found]
        known = [s for s in savings if s is not None]
        twin = [i for i in found if i.basis == WARM_TWIN]
        saving = statistics.median(known) if known and len(known) == len(found) else None
        shown = (twin[0] if twin else worst) if saving is not None else None
        out.append(Item(worst.kind, worst.cause, statistics.median(i.seconds for i in found), worst.evidence,
                        worst.fix, saving, shown.basis if shown else UNKNOWN, worst.phase, worst.efficiency,
                        worst.bounds, f"{len(found)} of {len(run_ids)} runs", shown.basis_detail if shown else None))
    return ranked(out)


def advise(runs: Runs, grouping: Grouping | None = None) -> Advice:
    """Every run's items and, for each group of `grouping` (else one of all runs), its causes."""
    items = run_items(runs)
    sources = dict(zip(runs.runs["run_id"].to_list(), runs.runs["source"].to_list(), strict=True))
    if grouping is None:
        groups = [GroupAdvice("all runs", list(items), group_items(items, list(items)))]
    else:
        groups = [GroupAdvice(g.label, g.run_ids, group_items(items, g.run_ids)) for g in grouping.groups if g.n]
    return Advice(items, sources, groups)


def advice_line(advice: Advice) -> str | None:
    """The line after `compare`'s headline: the one change that saves most, with its basis."""
    top = advice.top()
    if top is None:
        return None
    label, item = top
    basis = item.basis.split(" (")[0]  # the source is in the JSON and the report
    saving = (f"fixing it saves {fmt_duration(item.saving_seconds)} ({basis})" if item.saving_seconds is not None
              else "what fixing it saves is unknown")
    return (f"start sooner: {label}: {item.cause}: {fmt_duration(item.seconds)} in {item.runs}; {saving}; "
            f"fix: {item.fix}")


__all__ = ["Advice", "GroupAdvice", "advice_line", "advise", "group_items", "run_items"]

"""The text view of a comparison (`firedup compare`): the answer, the groups' table, the median
per phase, each difference with the flags behind it, cold and warm starts, and what was left out.

Every part fits the terminal's width: the groups' table by its columns, long labels cut at the
end, long flag values by the parts that differ (`verbose`: whole, and each run left out with its
whole reason). The numbers are `tables.compare`'s; nothing is computed here but the layout.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from firedup.core.safe import visible
from firedup.core.units import cut_end, fmt_column
from firedup.core.units import fmt_duration as dur
from firedup.tables.advice import advice_line
from firedup.tables.coldwarm import ColdWarm
from firedup.tables.compare import Comparison, Delta, flag_changes
from firedup.tables.grouping import Group, Grouping, fmt_value, left_out_lines, population_label
from firedup.timeline.phases import spanned, umbrella_phases

# The median-per-phase table: the phase's name and each group's cell.
PHASE_NAME_WIDTH = 22
PHASE_CELL_WIDTH = 14


def _shown(value: Any, room: int) -> str:
    """A value in `room` characters: whole if it fits, a long list as its ends and its length
    (`36 values [1 … 256]`: two lists that share their start still read apart), else cut."""
    text = fmt_value(value)
    if len(text) <= room:
        return text
    if isinstance(value, list) and len(value) > 3:
        ends = f"{len(value)} values [{fmt_value(value[0])} … {fmt_value(value[-1])}]"
        if len(ends) <= room:
            return ends
    return cut_end(text, max(room, 8))


def flag_change_lines(flags_differ: Mapping[str, tuple[list[Any], list[Any]]], width: int, verbose: bool = False,
                      indent: str = "    ") -> list[str]:
    """One line per flag change, `cuda_graph_config.decode.backend: full -> disabled`, its values
    shortened (`_shown`) so that the line fits `width`; whole under `verbose` (the caller wraps)."""
    lines = []
    for path, x, y in flag_changes(flags_differ):
        head = f"{indent}{path}: "
        if verbose:
            lines.append(f"{head}{fmt_value(x)} -> {fmt_value(y)}")
            continue
        room = width - len(head) - len(" -> ")
        left = _shown(x, max(room - min(len(fmt_value(y)), room // 2), room // 2))
        lines.append(f"{head}{left} -> {_shown(y, room - len(left))}")
    return lines


def comparison_text(cmp: Comparison, width: int = 100, verbose: bool = False) -> str:
    """The human view: headline, one block per group, deltas, and what was left out; long flag
    values by the parts that differ, cut at the width (`verbose`: whole, and each run left out with
    its whole reason)."""
    g = cmp.grouping
    if not g.groups:
        lines = ["no server startup found in the input"]
        lines.extend(f"  {visible(lo.source, one_line=True)}: {lo.reason}" for lo in g.left_out)
        return "\n".join(lines)
    lines = [cmp.headline, *_advice_line(cmp), ""]
    if g.population:
        lines.append("comparing runs of " + population_label(g.population))
    lines.extend(f"note: {n}" for n in g.notes)
    lines.append("")
    lines.extend(_groups_table(g.groups, width))
    launch_note = _launch_note(g)
    if launch_note:
        lines.append(launch_note)
    lines.extend(_phase_table(cmp))
    for d in cmp.deltas:
        lines.extend(_delta_lines(d, width, verbose))
    for label, apart in cmp.splits.items():
        lines.extend(_split_lines(cmp, label, apart, width))
    if cmp.caches:
        lines.append("")
        lines.append("cold vs warm caches:")
        for c in cmp.caches:
            lines.extend(_wrapped(f"{c.group}: {c.text()}", width))
    lines.extend(left_out_lines(g.left_out, "left out of the timing", verbose))
    return "\n".join(lines)


def _advice_line(cmp: Comparison) -> list[str]:
    """Right after the headline (as long, fitted to the width as it is): the change that would
    have saved most (tables.advice)."""
    line = advice_line(cmp.advice) if cmp.advice is not None else None
    return [] if line is None else [line]


def _wrapped(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)


def _groups_table(groups: Sequence[Group], text_width: int) -> list[str]:
    """One row per group (n, median, p90, max of the time to ready), fitting `text_width`: columns
    as wide as their cells, then the labels cut at the end."""
    timed = [grp for grp in groups if grp.n]
    columns = [iter(fmt_column([getattr(grp, stat) for grp in timed])) for stat in ("median", "p90", "max")]
    stats = [[next(col) if grp.n else "-" for col in columns] for grp in groups]  # one unit per column
    w_n = max(len("n"), *(len(str(grp.n)) for grp in groups))
    w_t = max(len("median"), *(len(c) for row in stats for c in row))
    w_i = len(str(len(groups)))
    longest = max([len(grp.label) for grp in groups] + [5])
    gap = " " * (2 if longest + w_i + 3 + w_n + 3 * (2 + w_t) <= text_width else 1)  # one space before a cut
    fixed = w_i + 2 + 1 + w_n + 3 * (len(gap) + w_t)
    width = max(min(longest, text_width - fixed), 12)
    lines = [f"{'#':>{w_i}}  {'group':<{width}} {'n':>{w_n}}" + "".join(
        f"{gap}{head:>{w_t}}" for head in ("median", "p90", "max"))]
    for i, (grp, row) in enumerate(zip(groups, stats, strict=True), start=1):
        label = grp.label if len(grp.label) <= width else grp.label[:width - 1] + "…"
        line = f"{i:>{w_i}}  {label:<{width}} {grp.n:>{w_n}}" + "".join(f"{gap}{c:>{w_t}}" for c in row)
        extra = f"  (+{len(grp.not_timed)} not timed)" if grp.not_timed else ""
        if len(line + extra) <= text_width:
            lines.append(line + extra)
        else:
            lines.extend([line, " " * (w_i + 2) + extra.strip()] if extra else [line])
    return lines


def _phase_table(cmp: Comparison) -> list[str]:
    """The median per phase of each timed group (phases of half a second or more in some group),
    and the last group's difference from the first; nothing when no group is timed."""
    groups = cmp.grouping.groups
    phase_names = list(dict.fromkeys(name for grp in groups for name in grp.phases))
    shown = [n for n in phase_names if any(grp.phases.get(n, 0.0) >= 0.5 for grp in groups)]
    timed = [grp for grp in groups if grp.n]
    if not shown or not timed:
        return []
    lines = ["", "median per phase:", _phase_head(groups, timed)]
    last = next((x for x in cmp.deltas if x.other is timed[-1]), None)
    # one unit per column (`7.4 s` over `-685 ms` read as the bigger number)
    columns = [_phase_column([grp.phases.get(name, 0.0) for name in shown]) for grp in timed]
    if last is not None:
        columns.append(_signed_column([last.phases.get(name, 0.0) for name in shown]))
    for i, name in enumerate(shown):
        cells = "".join(f" {column[i]:>{PHASE_CELL_WIDTH}}" for column in columns)
        lines.append(f"  {name:<{PHASE_NAME_WIDTH}}{cells}")
    umbrellas = [n for n in shown if spanned(n, shown)]
    if umbrellas:
        spans = umbrella_phases()
        lines.append("  (" + "; ".join(f"{n} spans {', '.join(p for p in spans[n] if p in shown)}"
                                       for n in umbrellas) + ": the rows overlap)")
    return lines


def _phase_head(groups: Sequence[Group], timed: Sequence[Group]) -> str:
    """The phase table's header: each timed group by its friendly name when all have one (`debug`),
    else by its number in the groups' table; `delta` over the difference column."""
    named = all(" (" in grp.label for grp in timed)
    labels = [grp.label.split(" (")[0][:PHASE_CELL_WIDTH] if named else f"#{groups.index(grp) + 1}"
              for grp in timed]
    return (f"  {'phase':<{PHASE_NAME_WIDTH}}" + "".join(f" {lab:>{PHASE_CELL_WIDTH}}" for lab in labels)
            + ("" if len(timed) < 2 else f" {'delta':>{PHASE_CELL_WIDTH}}"))


def _phase_column(seconds: Sequence[float]) -> list[str]:
    """A group's medians in one unit; `-` where the group has no such phase."""
    return ["-" if sec == 0 else cell for sec, cell in zip(seconds, fmt_column(seconds), strict=True)]


def _signed_column(seconds: Sequence[float]) -> list[str]:
    """The differences in one unit, signed; `0` where there is none."""
    return ["0" if abs(sec) < 0.0005 else cell for sec, cell in zip(seconds, fmt_column(seconds, signed=True),
                                                                    strict=True)]


def _delta_lines(d: Delta, width: int, verbose: bool) -> list[str]:
    """One group against the fastest: the difference in time to ready, the phase most of it is in,
    and the flags that differ."""
    lines = ["", f"{d.other.label} vs {d.base.label}: {'+' if d.total_seconds >= 0 else '-'}"
                 f"{dur(abs(d.total_seconds))} median time to ready"]
    names, seconds = d.explained
    if names and seconds is not None:  # the headline's figure, phase by phase
        share = 100 * seconds / d.total_seconds if d.total_seconds else 0.0
        parts = " and ".join(f"{n} {'+' if d.phases.get(n, 0.0) >= 0 else '-'}{dur(abs(d.phases.get(n, 0.0)))}"
                             for n in names)
        lines.append(f"  most of it: {parts} ({share:.0f}% of the difference)")
    if d.flags_differ:
        lines.append("  flags that differ:")
        lines.extend(flag_change_lines(d.flags_differ, width, verbose))
    return lines


def _split_lines(cmp: Comparison, label: str, apart: ColdWarm, width: int) -> list[str]:
    """A group's cold and warm starts apart: their medians, each cold run with why."""
    figures = cmp.split_figures(label)
    lines = ["", f"cold and warm starts of {label} (the median above pools them):",
             f"  cold: {len(apart.cold)}, median {dur(figures['cold_median_seconds'])}; "
             f"warm: {len(apart.warm)}, median {dur(figures['warm_median_seconds'])}"]
    for rid in apart.cold:
        lines.extend(_wrapped(f"cold: {apart.sources.get(rid, rid)}: {apart.reasons[rid]}", width))
    lines.extend(f"  warm: {apart.sources.get(rid, rid)}" for rid in apart.warm)
    return lines


def _launch_note(grouping: Grouping) -> str | None:
    """The second clock under the groups' table: how much earlier the timed runs were launched."""
    ids = [rid for grp in grouping.groups for rid in grp.run_ids]
    if not ids:
        return None
    frame = grouping.runs.runs.filter(pl.col("run_id").is_in(pl.Series(ids, dtype=pl.Utf8).implode()))
    gaps = frame.filter(pl.col("launch_gap").is_not_null())
    if gaps.is_empty():
        return "(times from each log's first line; when the servers were launched is not known)"
    low, high = float(gaps["launch_gap"].min()), float(gaps["launch_gap"].max())  # type: ignore[arg-type]
    sources = sorted(set(gaps["launch_source"].to_list()))
    how = "estimated, docs/launch.md" if sources == ["estimated"] else ", ".join(sources)
    span = dur(low) if abs(high - low) < 1.0 else f"{dur(low)}-{dur(high)}"
    unknown = frame.height - gaps.height
    return (f"(times from each log's first line; the servers were launched {'~' if 'estimated' in sources else ''}"
            f"{span} before it ({how}){f'; {unknown} launch(es) unknown' if unknown else ''}: `budget` counts "
            "from launch)")


__all__ = ["comparison_text", "flag_change_lines"]

"""The `firedup runs` table: one line per run, its outcome, time to ready, biggest phases, and
the flags that differ, fitted to the terminal's width.

The figures are `tables.frames.summary`'s; this module lays them out. A table that would be
wider than the terminal gives way in a fixed order (source, outcome and time to ready always
stay), and a line says what was left out and where to find it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from firedup.core.safe import visible
from firedup.core.units import (
    MIN_SOURCE_WIDTH,
    count_line,
    cut_end,
    cut_middle,
    fmt_duration,
    fmt_time_to_end,
    outcome_word,
    without_common_folder,
)
from firedup.tables.frames import FLAG_PREFIX, FLAG_TYPES, Runs, summary, varying_flags
from firedup.timeline.phases import spanned


@dataclass
class _Column:
    """One column of a text table: its header, its cells, and which side it aligns to."""

    head: str
    cells: list[str]
    right: bool = False

    @property
    def width(self) -> int:
        return max(len(cell) for cell in [self.head, *self.cells])


def _table_width(columns: Sequence[_Column]) -> int:
    return sum(c.width for c in columns) + 2 * (len(columns) - 1)


def _table_lines(columns: Sequence[_Column]) -> list[str]:
    widths = [c.width for c in columns]
    rows = zip(*([c.head, *c.cells] for c in columns), strict=True)
    return ["  ".join(cell.rjust(w) if c.right else cell.ljust(w) for cell, w, c in zip(row, widths, columns,
                                                                                       strict=True)).rstrip()
            for row in rows]


# The identifying columns give up no more than this to make a table fit a narrow terminal.
MIN_OUTCOME_WIDTH = 16
MIN_OUTCOME_WIDTH_FOR_FLAG = 14  # `crashed: oom …`: the timeline says the rest
SOURCE_WIDTH_FOR_PHASE = 32  # and no more than this to make room for the biggest phase

def runs_summary_text(runs: Runs, top: int = 3, width: int | None = None, by_time: bool = False) -> str:
    """The `firedup runs` table: one line per run, biggest phases, the flags that differ.

    With a `width` (the terminal's), a table that would be wider is fitted to it: source,
    outcome and time to ready always stay (their folder said once, long names cut in the
    middle), then the biggest phase, then the flag columns that fit, then more phases. One
    line counts what was left out and names the formats that hold every column. `by_time` (the
    history store: runs from many days and machines) orders the rows by when each run began and
    shows that date and time beside the source.
    """
    frame = summary(runs)
    if by_time:
        frame = frame.sort("first_ts", "source", "run_index", nulls_last=True)
    every = varying_flags(runs.runs, runs.flag_columns)
    flags = _table_flags(frame, every)
    rows = _Rows.of(frame, top)
    # a flag's key and value, and a file's name, each on its row's line (a newline would forge a row)
    flag_columns = [_Column(visible(f, one_line=True), ["-" if v is None else visible(str(v), one_line=True)
                                                        for v in frame[f].to_list()]) for f in flags]
    when = [_Column("started", rows.started)] if by_time else []
    columns = [*when, _Column("source", [n + w for n, w in zip(rows.names, rows.wheres, strict=True)]),
               _Column("outcome", rows.states), _Column("to ready", rows.to_ready, right=True), rows.phases(top),
               *flag_columns]
    notes: list[str] = []
    if width is not None and _table_width(columns) > width:
        fitted, notes = _fit(rows.names, rows.wheres, columns[len(when) + 1:len(when) + 3], rows.phases, top,
                             flag_columns, width - (_table_width(when) + 2 if when else 0))
        columns = [*when, *fitted]
    notes.insert(0, _launch_note(frame))
    lines = [_answer(runs, width), *_table_lines(columns)]
    if not flags and frame.height > 1:
        lines.append("(no flag differs between these runs)")
    lines.extend(notes)
    phases_shown = len(columns) > 3 + len(when) and columns[3 + len(when)].head.startswith("biggest phase")
    heads = {visible(f, one_line=True): f for f in flags}
    shown = [heads[c.head] for c in columns if c.head in heads]
    hidden = list(dict.fromkeys(f for f in [*flags, *every] if f not in shown))
    if hidden or not phases_shown:
        lines.append(_left_out_line(hidden, phases_shown, width))
    if any(t.startswith("(") for t in rows.to_ready):
        lines.append("(time in parentheses: to the crash or the end of the log, not to ready)")
    return "\n".join(lines)


def _table_flags(frame: pl.DataFrame, every: list[str]) -> list[str]:
    """The flags the table shows: the first-class ones (the rest are in --format csv/json/parquet),
    on/off switches first (disable_cuda_graph: what a debug and a production run differ by), then
    those that split the runs most: the more runs differ from the most common value, the sooner."""
    return sorted([f for f in every if f in FLAG_TYPES] or every[:4],
                  key=lambda f: (frame[f].dtype != pl.Boolean(), frame[f].value_counts()["count"].max() or 0))


def _answer(runs: Runs, width: int | None) -> str:
    """The line above the table: how many runs got ready, how long they took, what became of the rest."""
    return count_line([("engine" if outcome_word(row["outcome"], None, row["ready_kind"]) == "engine"
                        else row["outcome"], row["crash_category"], row["seconds_to_end"], bool(row["lower_bound"]),
                        _from_launch_cell(row)) for row in runs.runs.iter_rows(named=True)], width)


def _state(row: dict[str, Any]) -> str:
    """A run's outcome cell: `ready`, `crashed: oom in load_weights`, `hung in cuda_graph`, ..."""
    state = outcome_word(row["outcome"], row["crash_category"])
    if state == "hung":
        return state + (f" in {row['crash_phase']}" if row["crash_phase"] else "")
    if row["outcome"] == "crashed":
        return state + f": {row['crash_category'] or 'unknown'}" + (
            f" in {row['crash_phase']}" if row["crash_phase"] else "")
    if row["ready_kind"] == "engine":
        return "engine ready"  # no server in the log: not ready
    if row["outcome"] == "incomplete" and row["stopped_in"]:
        return state + f" in {row['stopped_in']}"
    return state


@dataclass
class _Rows:
    """The cells of each run's row that the table's columns are made of."""

    names: list[str]  # the source, on one line
    wheres: list[str]  # ` #2` for a log's second run
    started: list[str]
    states: list[str]
    to_ready: list[str]
    biggest: list[list[tuple[float, str]]]  # (seconds, phase), the `top` biggest

    @classmethod
    def of(cls, frame: pl.DataFrame, top: int) -> _Rows:
        # a phase's seconds, never a flag that ends in `_s` (`flag.watchdog_s='abc'`: a TypeError)
        phase_cols = [c for c in frame.columns if c.endswith("_s") and c != "total_s" and c != "unattributed_s"
                      and not c.startswith(FLAG_PREFIX) and c not in FLAG_TYPES]
        rows = cls([], [], [], [], [], [])
        for row in frame.iter_rows(named=True):
            rows.started.append(row["first_ts"].strftime("%Y-%m-%d %H:%M") if row["first_ts"] else "-")
            time = fmt_time_to_end(row["seconds_to_end"], bool(row["lower_bound"]))
            rows.to_ready.append(time if row["outcome"] == "ready" else f"({time})")
            rows.states.append(_state(row))
            present = [c[:-2] for c in phase_cols if row[c]]
            # an umbrella (a phase spanning others, `umbrella_phases`) is not listed beside the steps it spans
            rows.biggest.append(sorted(((row[c] or 0.0, c[:-2]) for c in phase_cols if not spanned(c[:-2], present)),
                                       reverse=True)[:top])
            rows.names.append(visible(row["source"], one_line=True))
            rows.wheres.append(f" #{row['run_index'] + 1}" if row["run_index"] else "")
        return rows

    def phases(self, k: int) -> _Column:
        """The column of each run's `k` biggest phases."""
        head = "biggest phase" if k == 1 else f"biggest phases (top {k})"
        return _Column(head, [", ".join(f"{name} {fmt_duration(sec)}" for sec, name in b[:k] if sec > 0) or "-"
                              for b in self.biggest])


def _from_launch_cell(row: dict[str, Any]) -> str | None:
    """The time from launch to a run's end as `parse` prints it (`~15 min 37 s`: estimated)."""
    seconds = row.get("launch_to_end")
    if seconds is None or row.get("lower_bound"):
        return None
    return ("~" if row.get("launch_source") == "estimated" else "") + fmt_duration(seconds)


def _launch_note(frame: pl.DataFrame) -> str:
    """The second clock under a table of times from each log's first line: how much earlier the
    servers were launched (`launch_to_end` in --format csv/json/parquet has each run's)."""
    gaps = (frame["launch_to_end"] - frame["seconds_to_end"]).drop_nulls()
    if gaps.is_empty():
        return "(times from each log's first line; launches not known)"
    low, high = float(gaps.min()), float(gaps.max())  # type: ignore[arg-type]
    estimated = "estimated" in frame["launch_source"].to_list()
    span = fmt_duration(low) if high - low < 1.0 else (
        f"{low:.0f}-{high:.0f} s" if high < 60 else f"{fmt_duration(low)}-{fmt_duration(high)}")
    return f"(from launch add {'~' if estimated else ''}{span}{', estimated' if estimated else ''}: docs/launch.md)"


def _fit(names: list[str], wheres: list[str], outcome_and_time: list[_Column], phases: Callable[[int], _Column],
         top: int, flag_columns: list[_Column], width: int) -> tuple[list[_Column], list[str]]:
    """The columns of a table that is too wide, fitted to `width`, and a note on the shared folder."""
    outcome, to_ready = outcome_and_time
    names, folder_note = without_common_folder(names)
    notes = [folder_note] if folder_note else []

    def source(cap: int) -> _Column:
        return _Column("source", [cut_middle(n, cap - len(w)) + w for n, w in zip(names, wheres, strict=True)])

    ident = [source(max(width - outcome.width - to_ready.width - 4, MIN_SOURCE_WIDTH))]
    ident.append(_Column("outcome", [cut_end(state, max(width - ident[0].width - to_ready.width - 4,
                                                         MIN_OUTCOME_WIDTH)) for state in outcome.cells]))
    ident.append(to_ready)
    if flag_columns:  # the flag that splits the runs most is kept: the outcome, then the names give way to it
        full = source(max(len(n) + len(w) for n, w in zip(names, wheres, strict=True)))
        short = _table_width([full, outcome, to_ready, flag_columns[0]]) - width
        cut = min(max(short, 0), outcome.width - MIN_OUTCOME_WIDTH_FOR_FLAG)
        kept = _Column("outcome", [cut_end(state, outcome.width - cut) for state in outcome.cells])
        room = width - _table_width([kept, to_ready, flag_columns[0]]) - 2
        if room >= MIN_SOURCE_WIDTH:
            ident[0], ident[1] = source(min(full.width, room)), kept
    over = _table_width([*ident, phases(1)]) - width
    if 0 < over <= ident[0].width - SOURCE_WIDTH_FOR_PHASE:  # long names give way to the biggest phase
        ident[0] = source(ident[0].width - over)
    columns = list(ident)
    if _table_width([*columns, phases(1)]) <= width and (
            not flag_columns or _table_width([*columns, phases(1), flag_columns[0]]) <= width):
        columns.append(phases(1))
    for column in flag_columns:  # in their order, each that still fits
        if _table_width([*columns, column]) <= width:
            columns.append(column)
    if len(columns) > 3 and columns[3].head == phases(1).head:
        for k in range(top, 1, -1):
            wider = [*columns[:3], phases(k), *columns[4:]]
            if _table_width(wider) <= width:
                return wider, notes
    return columns, notes


def _left_out_line(hidden: Sequence[str], phases_shown: bool, width: int | None) -> str:
    """`(left out: 24 flags that differ (a, b, ...); see --format csv/json/parquet)`, within `width`."""
    what = [] if phases_shown else ["biggest phases"]
    if hidden:
        what.append(f"{len(hidden)} flag{'s that differ' if len(hidden) != 1 else ' that differs'}")
    lead, tail = f"(left out: {', '.join(what)}", "; see --format csv/json/parquet)"
    named: list[str] = []
    for i, flag in enumerate(hidden):
        more = ", ..." if i + 1 < len(hidden) else ""
        if (width is None and i >= 8) or (
                width is not None and len(f"{lead} ({', '.join([*named, flag])}{more}){tail}") > width):
            break
        named.append(flag)
    listed = f" ({', '.join(named)}{', ...' if len(named) < len(hidden) else ''})" if named else ""
    return f"{lead}{listed}{tail}"


__all__ = ["runs_summary_text"]

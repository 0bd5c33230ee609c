"""Plain-text views of runs for an 80-column terminal.

Pure functions from runs to strings; the CLI decides where they go and whether to colour
them. Styling is passed in as a function so that tests see plain text.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Sequence

from firedup.core.safe import visible
from firedup.core.units import (
    MIN_PHASE_WIDTH,
    MIN_SOURCE_WIDTH,
    PHASE_WIDTH,
    Style,
    count_line,
    cut_end,
    cut_middle,
    fit_lines,
    fmt_duration,
    fmt_offset,
    fmt_time_to_end,
    plain,
    without_common_folder,
    wrap,
)
from firedup.core.units import outcome_word as units_outcome_word
from firedup.formats.vocab import ENGINE_TIMINGS
from firedup.read.clock import Stamp
from firedup.timeline.findings import CacheVerdict, Item, Silence
from firedup.timeline.phases import spanned, umbrella_phases
from firedup.timeline.ranks import NO_STRAGGLERS, is_late, is_straggler, late_arrival
from firedup.timeline.run import Crash, Phase, Run

_SHOWN_FLAGS = ("tp_size", "dp_size", "pp_size", "ep_size", "disable_cuda_graph", "enable_torch_compile",
                "speculative_algorithm", "quantization", "cuda_graph_max_bs", "mem_fraction_static")


def flag_summary(run: Run) -> str:
    parts: list[str] = []
    for flag in _SHOWN_FLAGS:
        value = run.config.get(flag)
        if value is None and flag in run.config_at_least:  # the log proves a bound only
            parts.append(f"{flag}~>={run.config_at_least[flag]}")
            continue
        if value is None or (flag in ("dp_size", "pp_size", "ep_size") and value == 1):
            continue
        if flag == "enable_torch_compile" and value is False:
            continue
        mark = "~" if flag in run.config_inferred else ""
        parts.append(f"{flag}={mark}{visible(str(value), one_line=True)}")
    return " ".join(parts)


def from_launch(run: Run) -> str:
    """`~58 s` from the launch to the run's end (`~`: the launch is estimated), or "?"."""
    seconds = run.launch_to_end
    if seconds is None or run.launch is None:
        return "?"
    return ("" if run.launch.known else "~") + fmt_duration(seconds)


def _launch_clause(run: Run) -> str:
    """`, ~58 s from launch`: the second clock, where a launch is known or estimated."""
    if run.launch is None or run.launch_to_end is None or run.lower_bound or (run.launch.gap or 0.0) < 1.0:
        return ""  # the two clocks agree
    return f", {from_launch(run)} from launch"


def launch_line(run: Run) -> str | None:
    """How the launch was found, in one line: `launch: ~22:46:34, 21 s before the first line
    (estimated: 19-27 s is typical)`; the whole basis is in the JSON (`launch.basis`)."""
    launch = run.launch
    if launch is None:
        return None
    if launch.ts is None or launch.gap is None:
        return f"launch: unknown ({launch.basis})"
    when = shown_stamp(launch.ts, run.date_source)
    if launch.known:
        how = f"{launch.source}: {launch.basis}"
    elif launch.low is not None and launch.high is not None:
        how = f"estimated: {launch.low:.0f}-{launch.high:.0f} s is usual, see docs/launch.md"
    else:
        how = "estimated"
    before = "at the first line" if launch.gap < 1.0 else f"{fmt_duration(launch.gap)} before the first line"
    return f"launch: {'' if launch.known else '~'}{when}, {before} ({how})"


def verdict_word(run: Run) -> str:
    """The one word every text view gives a run's outcome: READY, `CRASHED (oom)`, HUNG (a crash of
    category `hang`: the server said it is stuck and did not die), ENGINE READY (the engine
    initialised, nothing in the log serves) or INCOMPLETE; `parse` and `runs` print it in lower case. The contract's `outcome` stays ready | crashed | incomplete."""
    if run.outcome == "crashed":
        cat = run.crash.category if run.crash else "unknown"
        return "HUNG" if cat == "hang" else f"CRASHED ({cat})"
    if run.ready_kind == "engine":
        return "ENGINE READY"
    return run.outcome.upper()


def outcome_word(run: Run) -> str:
    """`parse`'s outcome cell: ready, crashed, hung, incomplete or engine (the engine initialised,
    nothing in the log serves): `core.units.outcome_word`."""
    return units_outcome_word(run.outcome, run.crash.category if run.crash else None, run.ready_kind)


def outcome_line(run: Run, style: Style = plain, launch: bool = True) -> str:
    """READY / CRASHED / HUNG / ENGINE READY / INCOMPLETE with `Run.seconds_to_end`, the one time
    every view shows, counted from the first line, then (`launch`) from the launch
    (`Run.launch_to_end`) where it differs. HUNG is a crash of category `hang`: the server said
    it is stuck and did not die."""
    head, tail, fg = _verdict(run)
    return style(head + (_launch_clause(run) if launch else "") + tail, fg=fg, bold=True)


def _verdict(run: Run) -> tuple[str, str, str]:
    """(the verdict and its time, what follows the second clock, the colour)."""
    total = fmt_duration(run.seconds_to_end)
    excerpt = run.lower_bound and (run.seconds_to_end is None or run.seconds_to_end < 1.0)
    if run.lower_bound:
        total = f"at least {total} (an excerpt)"
    crash_where = f" in {run.crash.phase}" if run.crash and run.crash.phase else ""
    stop_where = f" in {run.stopped_in}" if run.stopped_in else ""
    if excerpt or run.seconds_to_end is None:
        # how long it took is not in the log: an excerpt that reports no duration, or no line with a time
        why = "an excerpt: time unknown" if excerpt else \
            "its ready line has no time" if run.outcome == "ready" and run.first_ts else "no line has a time"
        if run.outcome == "ready":
            return f"READY ({'an excerpt: time to ready unknown' if excerpt else why})", "", "green"
        if run.outcome == "crashed":
            return f"{verdict_word(run)}{crash_where} ({why})", "", "red"
        if run.ready_kind == "engine":
            return f"ENGINE READY ({why})", ": no server in this log", "yellow"
        return f"INCOMPLETE: the log stops{stop_where} ({why})", "", "yellow"
    if run.outcome == "ready":
        kind = f" (no ready line; {run.ready_evidence})" if run.ready_kind == "health" else ""
        return f"READY in {total}{kind}", "", "green"
    if run.outcome == "crashed":
        if verdict_word(run) == "HUNG":  # the server declared itself stuck: alive, not dead
            return f"HUNG{crash_where}: no progress, stuck after {total}", "", "red"
        return f"{verdict_word(run)}{crash_where} after {total}", "", "red"
    if run.ready_kind == "engine":  # the engine initialised; nothing in this log serves
        return f"ENGINE READY in {total}", ": no server in this log", "yellow"
    return f"INCOMPLETE: the log stops{stop_where} after {total}", "", "yellow"


def _phase_rows(run: Run) -> list[tuple[str, float, Phase]]:
    """Run-level phases, details kept apart, longest first (like systemd-analyze blame)."""
    rows = []
    for p in run.run_phases():
        if p.name == "total" or p.seconds is None:
            continue
        label = p.name + (f" ({p.detail})" if p.detail else "")
        rows.append((label, p.seconds, p))
    rows.sort(key=lambda r: -r[1])
    return rows


def shown_stamp(stamp: Stamp, date_source: str | None) -> str:
    """A stamp as views show it: without its placeholder year when the year is unknown."""
    return stamp.iso[5:] if date_source == "unknown" else stamp.iso


def _dates_note(date_source: str | None) -> str:
    if date_source == "unknown":
        return " (year unknown: no year in the log, no --date, no file date)"
    guessed = {"version": " (year guessed: engine version)", "mtime": " (year guessed: file date)"}
    if date_source in guessed:  # no line states the year: say it is a guess, and from what
        return guessed[date_source]
    return f" (dates: {date_source})" if date_source not in (None, "log") else ""


def timeline_text(run: Run, style: Style = plain, width: int = 80, verdict: bool = True, crash: bool = True) -> str:
    """One run: the answer first (`READY in 4 min 10 s, ~4 min 31 s from launch`), then where it
    came from, its launch, its phases longest first, its silences and caches, its ranks, its crash.
    `verdict=False` leaves the first line out and `crash=False` the crash's block (its error and
    hint), for a caller that has just said them (`wait`): each fact once."""
    lines: list[str] = _verdict_lines(run, style, width) if verdict else []
    lines.extend(_head_lines(run, style, width))
    lines.extend(_clock_lines(run, width))
    # each block after a blank line, where the run has one
    blocks = [_phase_lines(run, style, width), silences_text(run, style, width), advice_lines(run.advice, width),
              engine_timings_lines(run, width) if run.engine_timings else [], ranks_text(run),
              _crash_lines(run.crash, style, width) if run.crash is not None and crash else []]
    for block in blocks:
        if block:
            lines.append("")
            lines.extend(block)
    for warning in run.warnings:
        for i, text in enumerate(textwrap.wrap(warning, width - 8)):
            lines.append(style(("  note: " if i == 0 else "        ") + text, dim=True))
    return "\n".join(lines)


def _verdict_lines(run: Run, style: Style, width: int) -> list[str]:
    """The answer: the outcome and its two clocks, the second on a line of its own where one
    line is too narrow for both."""
    if len(outcome_line(run)) <= width:
        return [outcome_line(run, style)]
    return [outcome_line(run, style, launch=False), "  " + _launch_clause(run).lstrip(", ")]


def _head_lines(run: Run, style: Style, width: int) -> list[str]:
    """Where the run came from: its file and engine, its model, the flags that matter."""
    # a file or model name with a newline in it would start a line of its own: one line each
    head = visible(run.source, one_line=True) + (f"  (startup #{run.run_index + 1} in this file)" if run.run_index else "")
    lines = ["  " + style(head, bold=True) + f"  [{run.engine}]"]
    model = run.config.get("model_path") or "model unknown (no args line)"
    lines.append(f"  model: {visible(str(model), one_line=True)}")
    flags = flag_summary(run)
    if flags:
        lines.extend(_wrap_items("  flags: ", flags.split(" "), width, sep=" ", indent=" " * 9))
    if run.config_inferred:
        lines.append("         (~ = read from the log's shape, not from an args line)")
    return lines


def _clock_lines(run: Run, width: int) -> list[str]:
    """When: the launch (how it was found), then the run's first and last stamps."""
    lines: list[str] = []
    launched = launch_line(run)
    if launched is not None:
        lines.extend(fit_lines("  " + visible(launched), width).split("\n"))
    if run.first_ts is not None:
        end = run.end_ts
        lines.append(f"  from {shown_stamp(run.first_ts, run.date_source)} to "
                     f"{shown_stamp(end, run.date_source) if end else '?'}" + _dates_note(run.date_source))
        total = run.total_seconds
        if run.crash is not None and total is not None and run.seconds_to_end is not None \
                and fmt_duration(total) != fmt_duration(run.seconds_to_end):
            # two facts, each named: the crash's time (above) and the contract's total_seconds
            lines.extend(fit_lines(f"  the log's last line came {fmt_duration(total)} after its first, after the "
                                   "crash (total_seconds in parse --json)", width).split("\n"))
    return lines


def _phase_lines(run: Run, style: Style, width: int) -> list[str]:
    """The phase table, longest first, an umbrella (a phase spanning others) starred and noted.
    Shares are of the time the header shows (to ready, to the crash, or to the log's end; an
    excerpt's from where its reported phases begin), not of the lines after a crash."""
    rows = _phase_rows(run)
    if not rows:
        return []
    total = run.seconds_to_end or 0.0
    present = [p.name for _, _, p in rows]
    umbrellas = [name for name in dict.fromkeys(present) if spanned(name, present)]
    lines = [style(f"  {'duration':>12}  {'share':>6}  {'start':>7}  {'phase':<28} source", dim=True)]
    for label, secs, p in rows:
        text = _phase_row(run, label + (" *" if p.name in umbrellas else ""), secs, p, total)
        if p.name == "unattributed":
            text = style(text, fg="yellow")
        lines.append(text[:width] if len(text) > width else text)
    if umbrellas:
        spans = umbrella_phases()
        note = "; ".join(f"{name} spans {', '.join(q for q in spans[name] if q in present)}"
                         for name in umbrellas)
        lines.extend(style(text, dim=True) for text in textwrap.wrap(
            f"* {note}: timers around steps also listed here, so the shares overlap",
            width - 4, initial_indent="  ", subsequent_indent="    "))
    return lines


def _phase_row(run: Run, label: str, secs: float, p: Phase, total: float) -> str:
    """One row of the phase table: duration, share, start, phase, and where the time came from."""
    share = f"{100 * secs / total:5.1f}%" if 0 < secs <= total else (">100%" if 0 < total < secs else "-")
    offset = fmt_offset(p.start.minus(run.first_ts)) if p.start and run.first_ts else ""
    src = "reported" if p.source == "reported" else "timestamps"
    if p.open:
        src += ", no end"  # fits 80 columns: the phase began and never ended
    shown = "<1 s" if secs == 0 and p.source == "timestamps" else fmt_duration(secs)
    return f"  {shown:>12}  {share:>6}  {offset:>7}  {label[:28]:<28} {src}"


def _crash_lines(c: Crash, style: Style, width: int) -> list[str]:
    """The crash: its category, phase and line, its first line, its error and the hint."""
    when = "after ready" if c.after_ready else f"in {c.phase or 'an unknown phase'}"
    lines = [style(f"  crash: {c.category}, {when}, line {c.line}", fg="red", bold=True)]
    lines.extend(_labelled("first line", _clip(c.first_line, 3 * (width - 16)), width))
    if c.message and c.message != c.first_line:
        lines.extend(_labelled("error", _clip(c.message, 3 * (width - 16)), width))
    if c.hint:
        lines.extend(_labelled("hint", c.hint, width))
    return lines


def silence_place(s: Silence) -> str:
    """Where a silence lies: `in warmup (inside engine_init), between http.running and ready`."""
    where = f"in {s.phase}" if s.phase else ""
    if s.umbrella:
        where += f" (inside {s.umbrella})" if where else f"inside {s.umbrella}"
    between = f"between {s.after or 'the start'} and {s.before or 'the end'}"
    return f"{where}, {between}" if where else between


def cache_summary(verdict: CacheVerdict) -> str:
    """`kernel_jit cold (probably: ...; lines 28, 295)`."""
    lines = ", ".join(str(n) for n, _ in verdict.evidence)
    return f"{verdict.kind} {verdict.verdict}: {verdict.reason}" + (f" (line {lines})" if lines else "")


def silences_text(run: Run, style: Style = plain, width: int = 80) -> list[str]:
    """The run's silences, cache verdicts and mined unknown lines (timeline.silence)."""
    return [*_silence_lines(run, style, width), *_cache_lines(run, style, width), *_unknown_lines(run, width)]


def _silence_lines(run: Run, style: Style, width: int) -> list[str]:
    """Each silence: how long, where, its cause, and the lines on either side of it."""
    if not run.silences:
        return []
    ranks = {m.line: m.rank for m in run.milestones if m.rank} if len(run.ranks) > 1 else {}
    threshold = fmt_duration(run.silence_threshold)
    out = [style(f"  silences (no log line for {threshold} or more):", bold=True)]
    for s in run.silences:
        offset = fmt_offset(s.start.minus(run.first_ts)) if run.first_ts else ""
        out.extend(wrap(f"{fmt_duration(s.seconds)} at {offset} {silence_place(s)}", width - 4,
                                 initial_indent="    ", subsequent_indent="      "))
        if s.cause:
            out.extend(style(t, fg="yellow") for t in wrap(
                s.cause, width - 6, initial_indent="      ", subsequent_indent="      "))
        # the lines quoted are one rank's: its figures (`elapsed=187.20 s`) are that rank's, not the table's
        since = f" ({ranks[s.since_line]})" if s.since_line in ranks else ""
        until = f" ({ranks[s.line]})" if s.line in ranks else ""
        out.append(style("      " + _clip(f"after line {s.since_line}{since}: {s.since_text}", width - 6), dim=True))
        out.append(style("      " + _clip(f"until line {s.line}{until}: {s.text}", width - 6), dim=True))
    return out


def _cache_lines(run: Run, style: Style, width: int) -> list[str]:
    """The cache verdicts some line supports, then the caches no line shows."""
    known = [v for v in run.caches.values() if v.verdict != "unknown" or v.basis != "none"]
    if not known:
        return []
    out = [style("  caches:", bold=True)]
    for v in known:
        out.extend(wrap(cache_summary(v), width - 4, initial_indent="    ", subsequent_indent="      "))
    rest = [v.kind for v in run.caches.values() if v not in known]
    if rest:
        out.extend(style(t, dim=True) for t in wrap(
            f"no line shows: {', '.join(rest)}", width - 4, initial_indent="    ", subsequent_indent="      "))
    return out


def _unknown_lines(run: Run, width: int) -> list[str]:
    """Unattributed stretches and the templates of the lines no rule knows in them."""
    out: list[str] = []
    for u in run.unknown:
        head = (f"  {fmt_duration(u.seconds)} unattributed between {u.after or 'the start'} and "
                f"{u.before or 'the end'}: {u.lines} line{'s' if u.lines != 1 else ''} no rule knows")
        out.extend(wrap(head, width - 2, subsequent_indent="    "))
        for t in u.templates:
            out.append("    " + _clip(f"{t.count:>5} x {t.text}", width - 4))
    return out


def advice_lines(items: Sequence[Item], width: int = 80, shown: int = 5) -> list[str]:
    """What would have made the start-up ready sooner (timeline.advice), largest saving first:
    each cause with its seconds, its saving and basis, its fix, the efficiency against a bound
    where the phase has one, and the lines that show it."""
    if not items:
        return []
    out = ["  start sooner (largest saving first):"]
    for n, item in enumerate(items[:shown], start=1):
        saving = (f"saves {fmt_duration(item.saving_seconds)} ({item.basis_text()})"
                  if item.saving_seconds is not None else "saving unknown")
        out.extend(wrap(f"{n}. {item.cause}: {fmt_duration(item.seconds)}; {saving}", width - 4,
                        initial_indent="    ", subsequent_indent="       "))
        if item.efficiency is not None and item.bounds:
            bound = item.bounds[0]
            out.extend(wrap(f"efficiency {item.efficiency:.0%}: {bound['limit']} would take "
                            f"{fmt_duration(float(bound['seconds']))} (the other bounds: --json)", width - 7,
                            initial_indent="       ", subsequent_indent="         "))
        out.extend(wrap(f"fix: {item.fix}", width - 7, initial_indent="       ", subsequent_indent="         "))
        for e in item.evidence[:2]:
            out.append("       " + _clip(f"line {e.line}: {e.text}", width - 7))
    if len(items) > shown:
        out.append(f"    ({len(items) - shown} more in --json)")
    return out


def _wrap_items(head: str, items: Sequence[str], width: int, sep: str = "; ", indent: str = "    ") -> list[str]:
    """Join items into lines no wider than `width`, never breaking inside an item."""
    out: list[str] = []
    current = head
    for i, item in enumerate(items):
        piece = item + (sep.rstrip() if i < len(items) - 1 else "")
        if len(current) + len(piece) + 1 > width and current.strip():
            out.append(current.rstrip())
            current = indent
        current += piece + " "
    out.append(current.rstrip())
    return out


def engine_timings_lines(run: Run, width: int = 80) -> list[str]:
    """The engine's own `Engine startup timings`, labelled as what they are: a second source. The
    phase table is primary (each rank's reported durations, else timestamps: docs/timeline.md);
    a figure that covers phases of the table says which and their sum (`load_weight 3 min 30 s
    (the table's load_weights + draft.load_weights: 3 min 31 s)`: the engine's figure is one
    clock, the table's each rank's own lines)."""
    from firedup.formats import all_formats

    fmt = all_formats().get(run.engine)
    spec = fmt.serving.health.telemetry if fmt is not None and fmt.serving.health is not None else None
    phases = run.phase_seconds()
    sources = {p.name: p.source for p in run.run_phases()}
    mapped, rest = [], []
    for key, seconds in _flat_timings(run.engine_timings or {}):
        covered = spec.ours(key, phases) if spec is not None else []
        if covered:
            names = " + ".join(name for name, _ in covered)
            table = fmt_duration(sum(secs for _, secs in covered))
            # a phase the table only times between whole-second stamps: the engine's figure is the finer
            coarse = " by timestamps" if all(sources.get(name) == "timestamps" for name, _ in covered) else ""
            same = table == fmt_duration(seconds)
            text = f"{key} {fmt_duration(seconds)} " + (f"(as the table's {names})" if same
                                                       else f"(the table's {names}: {table}{coarse})")
            mapped.extend(wrap(text, width, initial_indent="    ", subsequent_indent="      "))
        else:
            rest.append(f"{key} {fmt_duration(seconds)}")
    timings = run.milestone(ENGINE_TIMINGS)
    where = f"line {timings.line}; " if timings is not None else ""
    out = [f"  the engine's own timings ({where}a second source, the table is primary):", *mapped]
    if rest:
        out.extend(_wrap_items("    ", rest, width, indent="    "))
    return out


def _flat_timings(timings: dict[str, object]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for key, value in timings.items():
        if isinstance(value, dict):
            out.extend((f"{key}.{k}", float(v)) for k, v in value.items() if float(v) > 0)
        elif isinstance(value, (int, float)) and value > 0:
            out.append((key, float(value)))
    return out


def _labelled(label: str, text: str, width: int) -> list[str]:
    """`    label:      text` wrapped under itself: a hint cut at 80 columns helps nobody."""
    head = f"    {label + ':':<12}"
    return textwrap.wrap(" ".join(text.split()), width, initial_indent=head, subsequent_indent=" " * len(head),
                         break_on_hyphens=False) or [head]


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def ranks_text(run: Run, max_ranks: int = 16) -> list[str]:
    """Per-rank spread of each phase, where ranks differ; the slowest rank is a straggler."""
    per: dict[str, dict[str, float]] = defaultdict(dict)
    starts: dict[str, dict[str, float]] = defaultdict(dict)
    names: dict[str, str] = {}
    for p in run.phases:
        if p.scope == "rank" and p.rank and p.seconds is not None:
            label = p.name + (f" ({p.detail})" if p.detail else "")
            per[label][p.rank] = per[label].get(p.rank, 0.0) + p.seconds
            names[label] = p.name
            if p.start is not None and run.first_ts is not None and p.rank not in starts[label]:
                starts[label][p.rank] = p.start.minus(run.first_ts)
    rows = []
    for label, by_rank in per.items():
        if len(by_rank) < 2:
            continue
        lo, hi = min(by_rank.values()), max(by_rank.values())
        if hi - lo < 1.0:
            continue
        slowest = max(by_rank, key=lambda r: by_rank[r])
        if names[label] in NO_STRAGGLERS:
            # a barrier: the longest wait is the rank that arrived first; blame the last to arrive
            late = late_arrival(starts[label])
            if late is None:
                continue
            who = f"{late[0]} last in" + (f", +{fmt_duration(late[1])}" if late[1] >= 1.0 else "")
            rows.append((label, lo, hi, who, is_late(late[1])))
            continue
        median = sorted(by_rank.values())[len(by_rank) // 2]
        rows.append((label, lo, hi, slowest, is_straggler(hi, median, names[label])))
    if not rows:
        return []
    width = min(28, max(len("phase"), *(len(row[0]) for row in rows[:max_ranks])))
    out = [f"  per rank ({len(run.ranks)} ranks; phases where ranks differ by 1 s or more):",
           f"  {'phase':<{width}} {'fastest':>11} {'slowest':>11}  slowest rank"]
    for label, lo, hi, who, straggler in rows[:max_ranks]:
        mark = "  <- straggler" if straggler else ""
        out.append(f"  {label[:width]:<{width}} {_rank_seconds(lo):>11} {_rank_seconds(hi):>11}  {who}{mark}")
    if any(names.get(row[0]) in NO_STRAGGLERS for row in rows[:max_ranks]):
        out.append("  (at a barrier the rank that waits longest came first: blame the last in)")
    return out


def _rank_seconds(seconds: float) -> str:
    """A per-rank duration; 0 from whole-second timestamps means under a second, not none."""
    return "<1 s" if seconds == 0 else fmt_duration(seconds)


def timelines_text(runs: Sequence[Run], style: Style = plain, width: int = 80) -> str:
    return "\n\n".join(timeline_text(run, style, width) for run in runs)


def parse_table_text(runs: Sequence[Run], width: int | None = None) -> str:
    """One line per run: what `firedup parse` prints without --json.

    Two clocks: `to ready` from the log's first line, `from launch` from the process's launch
    (`~`: estimated, see docs/launch.md). With a `width` (the terminal's), lines that would be
    wider are fitted to it (`_SummaryColumns.fit`).
    """
    rows = [_summary_row(run) for run in runs]
    cols = _SummaryColumns(rows, [f"#{run.run_index + 1} " if run.run_index else "" for run in runs],
                           [visible(run.source, one_line=True) for run in runs])  # a newline in a name would forge a row
    if width is not None:
        cols.fit(width)
    answer = count_line([("engine" if outcome_word(run) == "engine" else run.outcome,
                          run.crash.category if run.crash else None, run.seconds_to_end,
                          run.lower_bound, None if launched == "?" else launched)
                         for run, (_, _, launched, _) in zip(runs, rows, strict=True)], width)
    out = [answer, cols.line("outcome", "to ready", "from launch", "biggest phase", "source")]
    for (outcome, total, launched, big), where, name in zip(rows, cols.wheres, cols.names, strict=True):
        out.append(cols.line(outcome, total, launched, big, where + name))
    notes = list(cols.notes)
    if any(row[2].lstrip("(").startswith("~") for row in rows):
        notes.insert(0, "(~: launch estimated, see docs/launch.md)")
    return "\n".join(out + notes)


def _summary_row(run: Run) -> tuple[str, str, str, str]:
    """(outcome, to ready, from launch, biggest phase) of one run."""
    # Graph kinds (prefill, decode, verify) add up: the phase is what a reader compares.
    seconds = run.phase_seconds()
    # an umbrella (a phase spanning others) is never the answer when a step inside it is listed
    named = {name: secs for name, secs in seconds.items() if name != "unattributed" and not spanned(name, seconds)}
    top = max(named, key=lambda name: named[name], default=None)
    big = f"{top} {fmt_duration(named[top])}" if top is not None else "-"
    total = fmt_time_to_end(run.seconds_to_end, run.lower_bound)
    launched = "?" if run.lower_bound else from_launch(run)
    word = outcome_word(run)  # ready, crashed, hung, incomplete, or engine: engine ready, no server
    return word, total if run.outcome == "ready" else f"({total})", launched, big


_SUMMARY_HEADS = ("outcome", "to ready", "from launch", "biggest phase")


class _SummaryColumns:
    """The widths of the summary's columns and the source names they leave room for."""

    def __init__(self, rows: list[tuple[str, str, str, str]], wheres: list[str], names: list[str]) -> None:
        self.rows, self.wheres, self.names = rows, wheres, names
        # outcome, the two times, biggest phase: fixed widths, so that one run's line reads like another's
        self.widths = [10, 14, max(13, *(len(row[2]) for row in rows)) if rows else 13, PHASE_WIDTH]
        self.notes: list[str] = []

    def fixed(self) -> int:
        """The columns before the source, and the spaces between them."""
        return sum(self.widths) + 2 * len([w for w in self.widths if w]) - 2

    def widest(self) -> int:
        return max((len(w) + len(n) for w, n in zip(self.wheres, self.names, strict=True)), default=0)

    def too_wide(self, width: int) -> bool:
        return self.fixed() + self.widest() > width

    def fit(self, width: int) -> None:
        """Lines no wider than `width`: the folder all sources share said once below, then the
        columns as wide as their cells, long names cut in the middle (down to MIN_SOURCE_WIDTH),
        then the biggest phase cut at its end, or left out."""
        if not self.too_wide(width):
            return
        self.names, folder_note = without_common_folder(self.names)
        self.notes = [folder_note] if folder_note else []
        if not self.too_wide(width):
            return
        rows, widths = self.rows, self.widths
        widths[:] = [max(len(head), *(len(row[i]) for row in rows)) for i, head in enumerate(_SUMMARY_HEADS)]
        widths[3] = min(widths[3] + 1, PHASE_WIDTH)  # a space more: the phase is not the name's start
        # long names are cut in the middle first, then the biggest phase gives way (to nothing
        # where even its shortest leaves the names too little room)
        if self.too_wide(width):  # the biggest phase's name without its time
            widths[3] = max(len(_SUMMARY_HEADS[3]), *(len(_cut_phase(row[3], 0)) for row in rows)) + 1
        cap = max(width - self.fixed(), MIN_SOURCE_WIDTH)
        self.names = [cut_middle(n, cap - len(w)) for w, n in zip(self.wheres, self.names, strict=True)]
        widths[3] = max(widths[3] - max(self.fixed() + self.widest() - width, 0), MIN_PHASE_WIDTH)
        if self.too_wide(width):
            widths[3] = 0

    def line(self, outcome: str, total: str, launched: str, big: str, source: str) -> str:
        w_out, w_total, w_launch, w_big = self.widths
        phase = f"{_cut_phase(big, w_big):<{w_big}} " if w_big else ""
        return f"{outcome:<{w_out}} {total:>{w_total}} {launched:>{w_launch}}  {phase}{source}"


def _cut_phase(cell: str, width: int) -> str:
    """A biggest-phase cell in `width`: whole, else the phase's name alone (a cut time would
    read as another number), else its name cut at the end."""
    if len(cell) <= width:
        return cell
    name = cell.split(" ", 1)[0]
    return name if len(name) <= width or width == 0 else cut_end(name, width)

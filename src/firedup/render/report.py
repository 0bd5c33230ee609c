"""The team report: one self-contained `index.html` and a `report.md` with PNG charts beside it.

`build_report(result, paths, out_dir)` compares and budgets the parsed runs as `firedup
compare`/`budget` do, draws the four charts, and renders one context through two Jinja2
templates (`templates/report.html.j2` with autoescaping, `templates/report.md.j2` with
Markdown escaping), so both files say the same thing.

Everything the log wrote (file names, flags, crash lines, messages) is text to the page:
the HTML template escapes it (Jinja2 autoescape) and a Content-Security-Policy forbids any
script or fetch; the Markdown puts log lines in code blocks and escapes the rest.

Byte for byte reproducible apart from the "generated" line: stable ordering, charts
saved without dates or versions, no random ids, and paths shown relative to the working
directory (or to the inputs' common folder), never as absolute paths of this machine.
`SOURCE_DATE_EPOCH` (the reproducible-builds convention: Unix seconds) fixes that line too,
so two reports of the same logs are the same bytes; unset or empty, it is the current time;
anything else is an error before a file is written (`generation_time`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from firedup import __version__
from firedup.core.safe import visible
from firedup.core.units import fmt_duration, fmt_offset
from firedup.errors import DataError, UsageError, writing
from firedup.render.text import flag_summary, launch_line, outcome_line, ranks_text
from firedup.timeline.phases import spans_note

if TYPE_CHECKING:
    from firedup.tables.budget import BudgetReport
    from firedup.tables.compare import Comparison
    from firedup.tables.frames import Runs
    from firedup.timeline.pipeline import ParseResult
    from firedup.timeline.run import Run

Progress = Callable[[str, int, int], None]  # (stage, done, total)

TEMPLATES = Path(__file__).parent / "templates"
CHART_DPI = 150  # PNG pixels per inch: 1650 px wide, shown at 1100 px (sharp on high-density screens)
CHART_FILES = {"compare": "compare.png", "distribution": "distribution.png", "timeline": "timeline.png",
               "ranks": "ranks.png"}
GENERATED_PREFIX = "Generated "  # the one line that differs between two runs of the same report


@dataclass
class ReportResult:
    out_dir: Path
    files: list[Path]
    runs: int
    errors: list[str] = field(default_factory=list)


# --- paths without the machine --------------------------------------------------------------------


def display_paths(sources: Sequence[str], cwd: str | None = None) -> dict[str, str]:
    """Source -> how the report names it: relative to the working directory, or to the inputs'
    common folder when they lie outside it. Never an absolute path of this machine."""
    cwd = os.path.abspath(cwd or os.getcwd())
    real = [s for s in sources if s != "-"]
    absolute = {s: os.path.normpath(os.path.join(cwd, s)) for s in real}
    outside = [a for a in absolute.values() if os.path.commonpath([a, cwd]) != cwd]
    base = cwd
    if outside:
        base = os.path.commonpath(list(absolute.values())) if len(absolute) > 1 else os.path.dirname(
            next(iter(absolute.values())))
        if base in absolute.values():  # one file: name it by its folder and name
            base = os.path.dirname(base)
        base = os.path.dirname(base) or base  # keep the common folder's own name in view
    out = {"-": "stdin"}
    for source, path in absolute.items():
        rel = os.path.relpath(path, base)
        out[source] = rel.replace(os.sep, "/")
    return out


# --- escaping for Markdown ------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # what changes meaning anywhere in a line
_MD_LINE_START = re.compile(r"^(#|[-+*] |\d+[.)] )")  # a heading or list marker at a line start
# A word GitHub's Markdown (and others) would turn into a link by itself, an "autolink literal":
# a URL with a scheme, `www.`, an e-mail address. Such a word goes in a code span, where no
# renderer makes links.
_MD_LINKISH = ("://", "www.", "@")


def md_text(value: Any) -> str:
    """Log text as literal Markdown on one line: HTML characters as entities, Markdown marks
    escaped, and a URL or e-mail address in it a code span, never a live link."""
    words = str(value).split()
    out = [md_code(w) if any(mark in w.lower() for mark in _MD_LINKISH) else _md_word(w) for w in words]
    text = " ".join(out)
    marker = _MD_LINE_START.match(text) if out and not out[0].startswith("`") else None
    if marker is None:
        return text
    at = 0 if marker.group(1)[0] in "#-+*" else len(marker.group(1)) - 2  # before '#', '-', or the '.' of '1.'
    return text[:at] + "\\" + text[at:]


def _md_word(word: str) -> str:
    word = word.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", word)


def md_fence(value: Any, lang: str = "text") -> str:
    """A fenced code block that no backtick run in the text can close early."""
    text = str(value).rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def md_code(value: Any) -> str:
    """Inline code for short log text (a line); a pipe cannot break a table cell."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


# --- the context both templates render ------------------------------------------------------------


def _pct(value: float) -> str:
    text = f"{value * 100:.2f}".rstrip("0").rstrip(".")
    return f"{text} %"


def _secs(seconds: float) -> str:
    """A phase's seconds in a table; 0 = the phase did not happen in that run (or took under 1 s)."""
    return fmt_duration(seconds) if seconds > 0 else "-"


def _where(source: str, run_index: int | None) -> str:
    return source + (f" #{run_index + 1}" if run_index else "")


def _crash_after(run: Run) -> float | None:
    """When the crash happened after the run's first line: its own time (`Crash.offset`), for a
    crash after ready too; without a time of its own, the crashed run's `seconds_to_end`."""
    c = run.crash
    if c is None:
        return None
    if c.offset is not None:
        return c.offset
    return run.seconds_to_end if run.outcome == "crashed" else None


def _outcomes(runs: Sequence[Run]) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.outcome] = counts.get(run.outcome, 0) + 1
    return [{"outcome": k, "n": counts[k]} for k in ("ready", "crashed", "incomplete") if k in counts]


def _group_tables(runs: Runs, cmp: Comparison) -> list[dict[str, Any]]:
    """Per group: n, median/p90/max, and per phase the median, fastest, slowest and share."""
    from firedup.tables.frames import phase_seconds
    from firedup.tables.grouping import quantile

    out = []
    for i, group in enumerate(cmp.grouping.groups, start=1):
        rows = []
        if group.run_ids:
            wide = phase_seconds(runs.select(group.run_ids))
            names = [c for c in wide.columns if c != "run_id"]
            present = [n for n in names if max(wide[n].to_list(), default=0.0) > 0]
            for name in names:
                values = [float(v) for v in wide[name].to_list()]
                median = quantile(values, 0.5) or 0.0
                if max(values, default=0.0) <= 0:
                    continue
                rows.append({"phase": name + spans_note(name, present), "median": _secs(median), "fastest": _secs(min(values)),
                             "slowest": _secs(max(values)),
                             "share": f"{100 * median / group.median:.1f} %" if group.median and median else "-"})
        out.append({
            "index": i, "label": group.label, "n": group.n,
            "median": fmt_duration(group.median) if group.n else "-",
            "p90": fmt_duration(group.p90) if group.n else "-",
            "max": fmt_duration(group.max) if group.n else "-",
            "not_timed": [{"where": _where(lo.source, lo.run_index), "reason": lo.reason} for lo in group.not_timed],
            "phases": rows,
        })
    return out


def _deltas(cmp: Comparison) -> list[dict[str, Any]]:
    from firedup.tables.compare import flag_changes
    from firedup.tables.grouping import fmt_value

    out = []
    for d in cmp.deltas:
        phases = [{"phase": name, "delta": ("+" if sec > 0 else "-") + fmt_duration(abs(sec))}
                  for name, sec in sorted(d.phases.items(), key=lambda kv: -abs(kv[1])) if abs(sec) >= 0.5]
        share = (100 * (d.main_phase_seconds or 0.0) / d.total_seconds) if d.total_seconds else 0.0
        out.append({
            "title": f"{d.other.label} vs {d.base.label}",
            "total": ("+" if d.total_seconds >= 0 else "-") + fmt_duration(abs(d.total_seconds)),
            "main_phase": d.main_phase,
            "main": (f"{d.main_phase} {'+' if (d.main_phase_seconds or 0) >= 0 else '-'}"
                     f"{fmt_duration(abs(d.main_phase_seconds or 0.0))} ({share:.0f} % of the difference)")
            if d.main_phase else None,
            "phases": phases,
            # a nested value by the key paths that differ (`cuda_graph_config.decode.backend`)
            "flags": [{"flag": path, "from": fmt_value(a), "to": fmt_value(b)}
                      for path, a, b in flag_changes(d.flags_differ)],
        })
    return out


def _budget_rows(report: BudgetReport) -> list[dict[str, Any]]:
    from firedup.render.snippets import snippets_for

    out = []
    for index, b in enumerate(report.budgets):
        timeouts = report.timeouts[index] if index < len(report.timeouts) else None
        texts = snippets_for(b, timeouts) if b.budget_seconds is not None else {}
        out.append({
            "label": b.label, "n": b.n,
            "budget": f"{fmt_duration(b.budget_seconds)} ({b.budget_seconds} s)" if b.budget_seconds is not None
            else "no budget",
            "method": b.method_label, "risk": _pct(b.risk), "risk_label": b.risk_label,
            "slowest": fmt_duration(b.slowest) if b.slowest is not None else "-",
            "chance": f"1/{b.n + 1} ({_pct(b.distribution_free_risk)})" if b.distribution_free_risk else "-",
            "statement": b.statement,
            "snippets": [{"kind": kind, "lang": {"timeouts": "text", "bash": "bash", "kubernetes": "yaml",
                                                 "compose": "yaml"}[kind],
                          "text": texts[kind].rstrip("\n")} for kind in ("timeouts", "bash", "kubernetes", "compose")
                         if kind in texts],
        })
    return out


def _crashes(runs: Sequence[Run], names: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    for run in runs:
        c = run.crash
        if c is None:
            continue
        when = "after ready" if c.after_ready else f"in {c.phase or 'an unknown phase'}"
        out.append({
            "where": _where(names.get(run.source, run.source), run.run_index), "anchor": None,
            "category": c.category, "when": when, "after": fmt_duration(_crash_after(run)),
            "line": c.line, "first_line": c.first_line,
            "message": c.message if c.message and c.message != c.first_line else None,
            "hint": c.hint,
        })
    return out


def _unattributed(runs: Sequence[Run], names: Mapping[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for run in runs:
        gaps = [p for p in run.run_phases() if p.name == "unattributed" and p.seconds]
        if not gaps:
            continue
        total = sum(p.seconds or 0.0 for p in gaps)
        whole = run.seconds_to_end or 0.0  # shares of the time every view states (`Run.seconds_to_end`)
        spans = ", ".join(
            f"{fmt_offset(p.start.minus(run.first_ts)) if p.start and run.first_ts else '?'} "
            f"({fmt_duration(p.seconds)})" for p in gaps)
        out.append({"where": _where(names.get(run.source, run.source), run.run_index), "seconds": total,
                    "total": fmt_duration(total),
                    "share": f"{100 * total / whole:.1f} %" if whole else "-", "spans": spans})
    out.sort(key=lambda r: (-float(r["seconds"]), str(r["where"])))
    return out


def _appendix(runs: Sequence[Run], names: Mapping[str, str], ids: Mapping[tuple[str, int], str]
              ) -> list[dict[str, Any]]:
    """Per run: its facts as the other views show them (`outcome_line`, `end_ts`), its phases."""
    return [_appendix_entry(i, run, names, ids) for i, run in enumerate(runs, start=1)]


def _appendix_entry(i: int, run: Run, names: Mapping[str, str], ids: Mapping[tuple[str, int], str]
                    ) -> dict[str, Any]:
    """One run's section of the appendix: its facts, its phases, its ranks and crash."""
    end = run.end_ts
    name = names.get(run.source, run.source)
    return {
        "anchor": f"run-{i}", "title": _where(name, run.run_index), "engine": run.engine,
        "run_id": ids.get((name, run.run_index)), "outcome_kind": run.outcome,
        "first_ts": run.first_ts.iso if run.first_ts else None,
        "seconds_to_end": run.seconds_to_end, "lower_bound": run.lower_bound,
        "phase_names": list(dict.fromkeys(p.name for p in run.run_phases())),
        "model": run.config.get("model_path") or "unknown (no args line)",
        "flags": flag_summary(run) or "-", "outcome": outcome_line(run),
        "launch": launch_line(run) or "",
        "span": f"{run.first_ts.iso if run.first_ts else '?'} to {end.iso if end else '?'}",
        "phases": _appendix_phases(run),
        "ranks": "\n".join(line[2:] for line in ranks_text(run)),
        "crash": _crashes([run], names)[0] if run.crash else None,
        "warnings": list(run.warnings),
    }


def _appendix_phases(run: Run) -> list[dict[str, Any]]:
    """A run's phases longest first, with shares as `timeline` gives them: of the time to its end."""
    total = run.seconds_to_end or 0.0
    rows = [p for p in run.run_phases() if p.name != "total" and p.seconds is not None]
    rows.sort(key=lambda p: (-(p.seconds or 0.0), p.start.dt if p.start else _dt.datetime.max))
    present = [p.name for p in rows]
    phases = []
    for p in rows:
        secs = p.seconds or 0.0
        phases.append({
            "phase": p.name + (f" ({p.detail})" if p.detail else "") + spans_note(p.name, present),
            "duration": "<1 s" if secs == 0 and p.source == "timestamps" else fmt_duration(secs),
            "share": f"{100 * secs / total:.1f} %" if 0 < secs <= total and total else "-",
            "start": fmt_offset(p.start.minus(run.first_ts)) if p.start and run.first_ts else "",
            "source": p.source + (", no end" if p.open else ""),
            "line": p.line or "",
        })
    return phases


# A report of thousands of runs stays readable and bounded: the per-run sections (the
# appendix, the crashes, the unattributed time) list at most this many runs, the slowest (by
# time to their end), and a note says how many of how many.
REPORT_LIST_MAX = 200


def _listed(runs: Sequence[Run]) -> tuple[dict[str, list[Run]], list[str]]:
    """The runs the appendix and the crash list show (in their own order), and the notes
    that say what they leave out."""
    notes: list[str] = []

    def slowest(chosen: list[Run], what: str) -> list[Run]:
        if len(chosen) <= REPORT_LIST_MAX:
            return chosen
        order = sorted(range(len(chosen)), key=lambda i: -(chosen[i].seconds_to_end or 0.0))[:REPORT_LIST_MAX]
        notes.append(f"{what} lists the {REPORT_LIST_MAX} slowest of {len(chosen)} runs; "
                     "`firedup runs` and `firedup export` hold them all")
        return [chosen[i] for i in sorted(order)]

    return {"appendix": slowest(list(runs), "the appendix (and the cache and unknown-line tables)"),
            "crashes": slowest([r for r in runs if r.crash is not None], "the crash list")}, notes


def _charts(runs: Runs, cmp: Comparison, budget_report: BudgetReport, progress: Progress | None) -> tuple[list[dict[str, Any]], list[str]]:
    from firedup.render import charts

    made: list[dict[str, Any]] = []
    notes: list[str] = []
    plan: list[tuple[str, str, str, Callable[[], Any]]] = [
        ("compare", "Median phases per group",
         "Each bar stacks the median of every phase over the group's ready runs; the bold figure at its end "
         "is the group's median time to ready.", lambda: charts.compare(runs, comparison=cmp)),
        ("distribution", "Time to ready and the budget",
         "Every ready run as a point over a box (middle half, whiskers min to max); the dashed line is the "
         "budget of the Budget section below.", lambda: charts.distribution(runs, budget_report=budget_report)),
        ("timeline", "Every run in time",
         "The critical path of each run (per phase, the slowest rank); hatched: time no log line accounts "
         "for. The right column says how each run ended.", lambda: charts.timeline(runs)),
        ("ranks", "Stragglers: phase duration by rank",
         "The run whose ranks differ most. Colour: time above the fastest rank of the phase.",
         lambda: charts.ranks(runs)),
    ]
    for step, (kind, title, caption, draw) in enumerate(plan):
        if progress is not None:
            progress("drawing charts", step, len(plan))
        try:
            fig = draw()
            png = charts.to_bytes(fig, "png", dpi=CHART_DPI)
        except DataError as exc:  # e.g. no run with two ranks: say so instead of a chart
            notes.append(f"{title}: {exc}")
            continue
        except (MemoryError, ValueError, OverflowError) as exc:  # matplotlib: an image past its limits
            if os.environ.get("FIREDUP_DEBUG"):
                raise
            notes.append(f"{title}: not drawn ({type(exc).__name__}: {str(exc)[:200]}); the rest of the report stands")
            continue
        width, height = (round(v) for v in fig.get_size_inches() * 100)
        made.append({"kind": kind, "title": title, "caption": caption, "file": CHART_FILES[kind],
                     "data_uri": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
                     "width": width, "height": height, "png": png})
    if progress is not None:
        progress("drawing charts", len(plan), len(plan))
    return made, notes


def generation_time(environ: Mapping[str, str] | None = None) -> _dt.datetime:
    """When the report says it was generated: `SOURCE_DATE_EPOCH` if set (so a rebuild from the
    same logs is byte-identical), else now. A value that is not whole Unix seconds is refused
    rather than silently replaced by the clock, which would make the build unreproducible."""
    value = (os.environ if environ is None else environ).get("SOURCE_DATE_EPOCH", "")
    if not value:
        return _dt.datetime.now(_dt.UTC)
    if not (value.isascii() and value.isdigit()):
        raise UsageError(f"SOURCE_DATE_EPOCH={value!r} is not a time in whole seconds since 1970-01-01 UTC "
                         "(e.g. the output of `git log -1 --format=%at`); set it to one or unset it")
    try:
        return _dt.datetime.fromtimestamp(int(value), _dt.UTC)
    except (OverflowError, OSError, ValueError):
        raise UsageError(f"SOURCE_DATE_EPOCH={value} is past any date this machine can show; "
                         "set it to Unix seconds or unset it") from None


SILENCES_SHOWN = 20  # the longest; `firedup timeline` lists every run's


def _silences(runs: Sequence[Run], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every run's silences with what they probably were, longest first (timeline.silence)."""
    from firedup.render.text import silence_place

    out: list[dict[str, Any]] = []
    for run in runs:
        for s in run.silences:
            out.append({
                "where": _where(names.get(run.source, run.source), run.run_index), "seconds": s.seconds,
                "length": fmt_duration(s.seconds),
                "at": fmt_offset(s.start.minus(run.first_ts)) if run.first_ts else "?",
                "place": silence_place(s), "cause": s.cause or "the log does not say",
                "lines": f"{s.since_line}-{s.line}",
                "templates": [f"{t.count} x {t.text}" for t in s.templates],
            })
    out.sort(key=lambda r: (-float(r["seconds"]), str(r["where"])))
    return out


def _caches(runs: Sequence[Run], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per run, the caches a line, a timing or a silence judged (unknown ones are left out)."""
    out: list[dict[str, Any]] = []
    for run in runs:
        for v in run.caches.values():
            if v.verdict == "unknown" and v.basis == "none":
                continue
            out.append({"where": _where(names.get(run.source, run.source), run.run_index), "kind": v.kind,
                        "verdict": v.verdict, "reason": v.reason,
                        "evidence": "; ".join(f"line {n}: {t}" for n, t in v.evidence[:3])})
    return out


def _unknown_lines(runs: Sequence[Run], names: Mapping[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for run in runs:
        for u in run.unknown:
            out.append({"where": _where(names.get(run.source, run.source), run.run_index),
                        "span": f"{fmt_duration(u.seconds)} between {u.after or 'the start'} and "
                                f"{u.before or 'the end'}",
                        "lines": u.lines, "templates": [f"{t.count} x {t.text}" for t in u.templates]})
    return out


def build_context(result: ParseResult, by: Sequence[str] | None, risk: float, out_dir: Path,
                  inputs: Sequence[str], progress: Progress | None = None,
                  generated: _dt.datetime | None = None) -> dict[str, Any]:
    """Everything the templates show, as plain values; each chart's PNG is in its `png` (what
    `build_report` writes into `out_dir`, the folder the charts' files are named for).
    `generated` defaults to `generation_time()`."""
    from firedup.read.sources import InputError
    from firedup.tables.advice import advice_line
    from firedup.tables.budget import budgets
    from firedup.tables.compare import compare
    from firedup.tables.frames import from_runs
    from firedup.tables.grouping import population_label

    # The report names files as shown, never by this machine's absolute path: by a display name
    # given to each view, never by rewriting the runs (their ids, hashes and sources stay theirs).
    shown = display_paths([r.source for r in result.runs] + [e.source for e in result.errors] + list(inputs))
    runs_list = list(result.runs)
    shown_errors = [InputError(shown.get(e.source, e.source), e.reason, e.line) for e in result.errors]
    errors = [f"{e.source}: {e.reason}" for e in shown_errors]
    tables = from_runs(runs_list, shown_errors, names=shown)
    ids = {(row["source"], row["run_index"]): row["run_id"]
           for row in tables.runs.select("source", "run_index", "run_id").iter_rows(named=True)}
    cmp = compare(tables, by)
    budget_report = budgets(tables, by, risk)
    chart_list, chart_notes = _charts(tables, cmp, budget_report, progress)
    g = cmp.grouping
    listed, list_notes = _listed(runs_list)
    unattributed = _unattributed(runs_list, shown)
    if len(unattributed) > REPORT_LIST_MAX:
        list_notes.append(f"the unattributed-time table lists the {REPORT_LIST_MAX} runs with most of it, "
                          f"of {len(unattributed)}")
    return {
        "version": __version__,
        "generated": GENERATED_PREFIX + (generated or generation_time()).strftime("%Y-%m-%d %H:%M UTC"),
        "inputs": [shown.get(p, p) if p in shown else p for p in inputs],
        "n_runs": len(runs_list), "n_files": len({r.source for r in runs_list}),
        "outcomes": _outcomes(runs_list),
        "errors": errors,
        "headline": cmp.headline,
        "advice": (advice_line(cmp.advice) if cmp.advice is not None else None) or "",
        "population": population_label(g.population),
        "by": ", ".join(g.by) + (" (the flags that differ)" if g.by_auto and g.by else ""),
        "notes": [*g.notes, *list_notes],
        "groups": _group_tables(tables, cmp),
        "deltas": _deltas(cmp),
        "budgets": _budget_rows(budget_report),
        "risk": _pct(risk),
        "left_out": [{"where": _where(lo.source, lo.run_index), "reason": lo.reason} for lo in g.left_out],
        "charts": chart_list, "chart_notes": chart_notes,
        "crashes": _crashes(listed["crashes"], shown),
        "unattributed": unattributed[:REPORT_LIST_MAX],
        "silences": _silences(runs_list, shown)[:SILENCES_SHOWN],
        "silences_more": max(0, len(_silences(runs_list, shown)) - SILENCES_SHOWN),
        "caches": _caches(listed["appendix"], shown),
        "cache_differences": [c.text() for c in cmp.caches],
        "unknown_lines": _unknown_lines(listed["appendix"], shown),
        "appendix": _appendix(listed["appendix"], shown, ids),
    }


def _environment(markdown: bool) -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=not markdown, undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["md"] = md_text
    env.filters["fence"] = md_fence
    env.filters["code"] = md_code
    return env


def render_html(context: dict[str, Any]) -> str:
    return str(_environment(markdown=False).get_template("report.html.j2").render(**context))


def render_markdown(context: dict[str, Any]) -> str:
    return str(_environment(markdown=True).get_template("report.md.j2").render(**context))


def write_folder(out: Path, files: Mapping[str, bytes]) -> None:
    """Write a report's files into `out` as one: under a lock on the folder (two reports into
    one folder at once never leave one's text with the other's charts: the last to take the
    lock writes all of its files), each file whole and never through a link planted there
    (`core.files`), the charts of an earlier report that this one does not draw removed."""
    from firedup.core.files import folder_lock, write_bytes

    with folder_lock(out), writing(out):
        for stale in CHART_FILES.values():  # a chart this report does not draw must not linger from the last one
            if stale not in files:
                (out / stale).unlink(missing_ok=True)
        for name, data in files.items():
            write_bytes(out / name, data, named=False)


def build_report(result: ParseResult, paths: Sequence[str], out_dir: str | os.PathLike[str],
                 by: Sequence[str] | None = None, risk: float = 0.01, progress: Progress | None = None,
                 generated: _dt.datetime | None = None) -> ReportResult:
    """Write `out_dir/index.html`, `out_dir/report.md` and the PNG charts of the runs `result`
    holds (`paths`: the inputs as given, for the header). The report reads no log: it shows the
    runs every other command shows, and the tables, comparison and budgets made from them."""
    from firedup.tables.frames import from_runs
    from firedup.tables.grouping import check_by, flag_names

    generated = generated or generation_time()
    if by:
        typed = from_runs(result.runs, result.errors)
        by = flag_names(typed, by)  # `knob` names `flag.knob`, as in compare
        check_by(typed, by)  # a typo fails before anything is written
    out = Path(out_dir)
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    context = build_context(result, by, risk, out, paths, progress, generated)
    if progress is not None:
        progress("writing report", 0, 1)
    # the boundary: whatever a template let through, no control character reaches the file
    html_text, md_text_out = visible(render_html(context)), visible(render_markdown(context))
    write_folder(out, {**{c["file"]: c["png"] for c in context["charts"]},
                       "index.html": html_text.encode("utf-8"), "report.md": md_text_out.encode("utf-8")})
    if progress is not None:
        progress("writing report", 1, 1)
    files = [out / "index.html", out / "report.md", *(out / c["file"] for c in context["charts"])]
    return ReportResult(out, files, context["n_runs"], context["errors"])


__all__ = ["ReportResult", "build_context", "build_report", "display_paths", "generation_time", "md_code", "md_fence",
           "md_text", "render_html", "render_markdown"]

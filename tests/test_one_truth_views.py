"""One startup, one truth: every view of a run states the same facts.

Each log of sample_logs/ and ../shared/realgpu/ (those skipped cleanly without ../shared) goes
through `parse --json`, the timeline data (the `Run` that `timeline` renders) and the
`timeline` text, `parse`'s summary, the report (its appendix and crash section, as rendered in
report.md), and `runs` (the tables of `tables.frames`, `firedup runs --format json|csv`). The
views must agree on the outcome, the first timestamp (with its year), when the startup ended
and how long it took to get there (to ready, or to the crash), the crash's own time and line,
whether the time is a lower bound, and the names of the run's phases.

A `*_facts(...)` helper per view returns `{(file name, run index): {fact: value}}`, each with
the facts that view shows (`Facts` below names them); `assert_agree` compares any set of them,
so more views (`replay`, `wait`) combine by adding their own helper.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import SAMPLE_LOGS, SHARED
from firedup.api import report as report_of
from firedup.cli import cli
from firedup.core.units import fmt_duration, fmt_offset
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

REALGPU = SHARED / "realgpu"

# The facts a view may state about a run, and what each means here:
#   outcome         ready | crashed | incomplete
#   first_ts        the run's first timestamp, as a datetime (so with its year)
#   end_ts          where the startup ended: ready line, crash line, else the log's last line
#   to_end          the time to end_ts as the views print it (fmt_duration)
#   seconds_to_end  the same in seconds, where a view gives numbers
#   lower_bound     the time is only a lower bound (the log begins mid-startup)
#   crash_ts        the crash's own time (None without a crash)
#   crash_after     the time from the first line to the crash, as printed (None without a crash)
#   crash_line      the crash's first line number (None without a crash)
#   phases          the run-level phase names with a duration, `total` aside
#   from_launch     the time from the launch to end_ts as printed (`~58 s`: estimated), None unknown
Facts = dict[str, Any]
ViewFacts = dict[tuple[str, int], Facts]

_DURATION = r"(?:\d+(?:\.\d)? (?:ms|s)|\d+ min \d\d s|\d+ h \d\d min|\?)"


def _logs() -> list[Any]:
    params: list[Any] = [pytest.param(p, id=p.name) for p in sorted(SAMPLE_LOGS.glob("*.log"))]
    if REALGPU.is_dir():
        params += [pytest.param(p, id=f"realgpu/{p.name}") for p in sorted(REALGPU.glob("*.log"))]
    else:
        params.append(pytest.param(None, id="realgpu", marks=pytest.mark.skip(
            reason=f"{REALGPU} is absent (../shared is not beside this checkout)")))
    return params


LOGS = _logs()
ALL_PATHS = [p.values[0] for p in LOGS if p.values[0] is not None]


def _ts(value: Any) -> datetime | None:
    """A timestamp as any view writes it (ISO, `YYYY-MM-DD HH:MM:SS`, a datetime) -> datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace(" ", "T"))


def _secs(value: Any) -> float | None:
    return None if value is None or value == "" else float(value)


def _bool(value: Any) -> bool:
    return value in (True, "true", "True")


def _phase_name(label: str) -> str:
    """`cuda_graph (decode)`, `engine_init *`, `model_loading (spans load_weights)` -> the name."""
    return label.strip().removesuffix(" *").split(" (")[0]


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


# --- one helper per view ---------------------------------------------------------------------


def _from_launch(seconds: float | None, source: str | None) -> str | None:
    if seconds is None or source in (None, "unknown"):
        return None
    return ("" if source in ("measured", "log", "given") else "~") + fmt_duration(seconds)


def contract_facts(runs: list[dict[str, Any]]) -> ViewFacts:
    """Facts of `parse --json` runs (the contract's dicts)."""
    out: ViewFacts = {}
    for r in runs:
        crash = r["crash"]
        phases = {p["name"] for p in r["phases"]
                  if p["scope"] == "run" and p["name"] != "total" and p["seconds"] is not None}
        out[(Path(r["source"]).name, r["run_index"])] = {
            "outcome": r["outcome"], "first_ts": _ts(r["first_ts"]), "end_ts": _ts(r["end_ts"]),
            "seconds_to_end": r["seconds_to_end"], "to_end": fmt_duration(r["seconds_to_end"]),
            "lower_bound": r["lower_bound"],
            "crash_ts": _ts(crash["ts"]) if crash else None,
            "crash_after": fmt_duration(crash["offset"]) if crash else None,
            "crash_line": crash["line"] if crash else None,
            "phases": frozenset(phases),
            "from_launch": _from_launch(r["launch"]["seconds_to_end"], r["launch"]["source"]),
        }
    return out


def parse_json_facts(path: Path) -> ViewFacts:
    """`firedup parse PATH --json`."""
    return contract_facts(json.loads(_invoke("parse", str(path), "--json"))["runs"])


def run_facts(runs: list[Run]) -> ViewFacts:
    """The timeline data: the `Run` objects `timeline`, `wait` and `replay` render."""
    out: ViewFacts = {}
    for run in runs:
        crash = run.crash
        out[(Path(run.source).name, run.run_index)] = {
            "outcome": run.outcome, "first_ts": run.first_ts.dt if run.first_ts else None,
            "end_ts": run.end_ts.dt if run.end_ts else None, "seconds_to_end": run.seconds_to_end,
            "to_end": fmt_duration(run.seconds_to_end), "lower_bound": run.lower_bound,
            "crash_ts": crash.ts.dt if crash and crash.ts else None,
            "crash_after": fmt_duration(crash.offset) if crash else None,
            "crash_line": crash.line if crash else None,
            "phases": frozenset(p.name for p in run.run_phases() if p.name != "total" and p.seconds is not None),
            "from_launch": _from_launch(run.launch_to_end, run.launch.source if run.launch else None),
        }
    return out


def timeline_data_facts(path: Path) -> ViewFacts:
    return run_facts(parse_paths([str(path)]).runs)


_OUTCOME_LINE = re.compile(
    rf"^(?:(?P<ready>READY) in|(?P<crashed>CRASHED) \(.*?\)(?: in \S+)? after|(?P<hung>HUNG)(?: in \S+)?: no "
    rf"progress, stuck after|(?P<engine>ENGINE READY) in|(?P<incomplete>INCOMPLETE): the log stops(?: in \S+)? after) "
    rf"(?P<least>at least )?(?P<time>{_DURATION})(?: \(an excerpt\))?"
    rf"(?:, (?P<launch>~?{_DURATION}) from launch)?(?:: no server in this log)?$")
# the contract's outcome of each verdict (an engine ready with no server is `incomplete`)
_OUTCOMES = {"ready": "ready", "crashed": "crashed", "hung": "crashed", "engine": "incomplete",
             "incomplete": "incomplete"}
_SPAN_LINE = re.compile(r"^  from (\d{4}-\d\d-\d\dT\S+) to (\d{4}-\d\d-\d\dT\S+)")
_CRASH_LINE = re.compile(r"^  crash: .*, line (\d+)$")
_PHASE_LABEL = slice(33, 61)  # `timeline_text`'s phase column: 2+12+2+6+2+7+2 characters in, 28 wide


def timeline_text_facts(path: Path) -> ViewFacts:
    """`firedup timeline PATH`: the outcome line (each run's first), the `from .. to ..` line, the
    phase table."""
    text = _invoke("timeline", str(path))
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line and not line[0].isspace():  # a run's block begins with its verdict
            blocks.append([])
        if blocks:
            blocks[-1].append(line)
    out: ViewFacts = {}
    for index, block in enumerate(blocks):
        facts: Facts = {"phases": set(), "crash_line": None}
        in_table = False
        for line in block:
            if m := _OUTCOME_LINE.match(line):
                facts["outcome"] = next(v for k, v in _OUTCOMES.items() if m.group(k))
                facts["to_end"], facts["lower_bound"] = m.group("time"), bool(m.group("least"))
                facts["from_launch"] = m.group("launch")
            elif line.startswith("  ~") and line.endswith(" from launch"):  # on a line of its own
                facts["from_launch"] = line.strip().removesuffix(" from launch")
            elif m := _SPAN_LINE.match(line):
                facts["first_ts"], facts["end_ts"] = _ts(m.group(1)), _ts(m.group(2))
            elif m := _CRASH_LINE.match(line):
                facts["crash_line"] = int(m.group(1))
            elif line.strip().startswith("duration") and "phase" in line:
                in_table = True
            elif in_table and (not line.strip() or line.startswith("  * ")):
                in_table = False  # the table ends at a blank line or at the note on umbrella phases
            elif in_table:
                facts["phases"].add(_phase_name(line[_PHASE_LABEL]))
        facts["phases"] = frozenset(facts["phases"])
        assert "outcome" in facts and "first_ts" in facts, "no outcome or span line in:\n" + "\n".join(block)
        out[(path.name, index)] = facts
    return out


_SUMMARY_ROW = re.compile(rf"^(?P<outcome>ready|crashed|hung|incomplete)\s+\(?(?P<least>≥ )?(?P<time>{_DURATION})\)?\s+"
                          rf"(?P<launch>~?{_DURATION})\s")


def parse_summary_facts(path: Path) -> ViewFacts:
    """`firedup parse PATH` without --json: one row per run, in run order."""
    rows = [m for line in _invoke("parse", str(path)).splitlines() if (m := _SUMMARY_ROW.match(line))]
    return {(path.name, i): {"outcome": _OUTCOMES[m.group("outcome")], "to_end": m.group("time"),
                             "lower_bound": bool(m.group("least")),
                             "from_launch": None if m.group("launch") == "?" else m.group("launch")}
            for i, m in enumerate(rows)}


def _unmd(text: str) -> str:
    """Markdown-escaped log text (report.md) back to the text."""
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def _report_key(title: str) -> tuple[str, int]:
    name, _, nth = title.partition(" #")
    return Path(name).name, int(nth) - 1 if nth else 0


_APPENDIX_OUTCOME = re.compile(
    rf"^\*\*(?:(?P<ready>READY) in|(?P<crashed>CRASHED) \(.*?\)(?: in \S+)? after|(?P<hung>HUNG)(?: in \S+)?: no "
    rf"progress, stuck after|(?P<engine>ENGINE READY) in|(?P<incomplete>INCOMPLETE): the log stops(?: in \S+)? after) "
    rf"(?P<least>at least )?(?P<time>{_DURATION})(?: \(an excerpt\))?"
    rf"(?:, (?P<launch>~?{_DURATION}) from launch)?(?:: no server in this log)?\*\* · ")
_APPENDIX_SPAN = re.compile(r"^(\d{4}-\d\d-\d\dT\S+) to (\d{4}-\d\d-\d\dT\S+)$")
_APPENDIX_CRASH = re.compile(r"^Crash: .*, line (\d+): ")
_CRASH_HEADING = re.compile(rf"^### (?P<where>.+): (?P<category>\S+), (?P<when>after ready|in .+), after "
                            rf"(?P<after>{_DURATION})$")


def report_facts(markdown: str) -> tuple[ViewFacts, ViewFacts]:
    """The report's appendix and its crash section, read from the rendered report.md."""
    crashes_part, _, appendix_part = markdown.partition("\n## Appendix: every run\n")
    crashes_part = crashes_part.partition("\n## Crashes\n")[2].partition("\n## ")[0]
    appendix: ViewFacts = {}
    key: tuple[str, int] | None = None
    for line in appendix_part.splitlines():
        if line.startswith("### "):
            key = _report_key(_unmd(line[4:]))
            appendix[key] = {"phases": set(), "crash_line": None}
            continue
        if key is None:
            continue
        facts = appendix[key]
        if m := _APPENDIX_OUTCOME.match(_unmd(line)):
            facts["outcome"] = next(v for k, v in _OUTCOMES.items() if m.group(k))
            facts["to_end"], facts["lower_bound"] = m.group("time"), bool(m.group("least"))
            facts["from_launch"] = m.group("launch")
        elif m := _APPENDIX_SPAN.match(_unmd(line)):
            facts["first_ts"], facts["end_ts"] = _ts(m.group(1)), _ts(m.group(2))
        elif m := _APPENDIX_CRASH.match(_unmd(line)):
            facts["crash_line"] = int(m.group(1))
        elif line.startswith("| ") and not line.startswith(("| phase |", "|---")):
            facts["phases"].add(_phase_name(_unmd(line[2:].split(" | ")[0])))
    for facts in appendix.values():
        facts["phases"] = frozenset(facts["phases"])
    crashes: ViewFacts = {k: {"crash_after": None} for k in appendix}
    for line in crashes_part.splitlines():
        if m := _CRASH_HEADING.match(_unmd(line)):
            crashes[_report_key(m.group("where"))] = {"crash_after": m.group("after")}
    return appendix, crashes


def runs_row_facts(rows: list[dict[str, Any]]) -> ViewFacts:
    """Rows of `firedup runs --format json|csv` (the `tables.frames.summary` columns)."""
    out: ViewFacts = {}
    for row in rows:
        crashed = row["crash_category"] not in (None, "")
        offset = _secs(row["crash_offset"])
        out[(Path(row["source"]).name, int(row["run_index"]))] = {
            "outcome": row["outcome"], "first_ts": _ts(row["first_ts"]), "end_ts": _ts(row["end_ts"]),
            "seconds_to_end": _secs(row["seconds_to_end"]), "to_end": fmt_duration(_secs(row["seconds_to_end"])),
            "lower_bound": _bool(row["lower_bound"]), "crash_ts": _ts(row["crash_ts"]),
            "crash_after": fmt_duration(offset) if crashed else None,
        }
    return out


def runs_json_facts(path: Path) -> ViewFacts:
    return runs_row_facts(json.loads(_invoke("runs", str(path), "--format", "json")))


def runs_csv_facts(path: Path) -> ViewFacts:
    return runs_row_facts(list(csv.DictReader(io.StringIO(_invoke("runs", str(path), "--format", "csv")))))


def frames_facts(path: Path) -> ViewFacts:
    """`tables.load.load`: the runs and phases tables behind `runs`, `compare` and the charts."""
    import polars as pl

    from firedup.tables.load import load

    tables = load([str(path)])
    phases = tables.phases.filter((pl.col("scope") == "run") & (pl.col("phase") != "total")
                                  & pl.col("seconds").is_not_null())
    out: ViewFacts = {}
    for row in tables.runs.iter_rows(named=True):
        names = frozenset(phases.filter(pl.col("run_id") == row["run_id"])["phase"].to_list())
        crashed = row["crash_category"] is not None
        out[(Path(row["source"]).name, row["run_index"])] = {
            "outcome": row["outcome"], "first_ts": row["first_ts"], "end_ts": row["end_ts"],
            "seconds_to_end": row["seconds_to_end"], "to_end": fmt_duration(row["seconds_to_end"]),
            "lower_bound": row["lower_bound"], "crash_ts": row["crash_ts"],
            "crash_after": fmt_duration(row["crash_offset"]) if crashed else None,
            "crash_line": row["crash_line"], "phases": names,
        }
    return out


# --- combining views ---------------------------------------------------------------------------


def _ms(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _same(a: Any, b: Any) -> bool:
    """Equal at the contract's resolution: seconds rounded, timestamps shown to the millisecond."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-3
    if isinstance(a, datetime) and isinstance(b, datetime):
        return _ms(a) == _ms(b)
    return bool(a == b)


def disagreements(views: Mapping[str, ViewFacts]) -> list[str]:
    """Every fact on which two views of the same run differ, and runs only some views know."""
    problems: list[str] = []
    keys = {name: set(facts) for name, facts in views.items()}
    every = set().union(*keys.values())
    for name, known in keys.items():
        if known != every:
            problems.append(f"{name} has runs {sorted(known)}, others have {sorted(every)}")
    for run in sorted(every):
        stated: dict[str, list[tuple[str, Any]]] = {}
        for name, facts in views.items():
            for fact, value in facts.get(run, {}).items():
                stated.setdefault(fact, []).append((name, value))
        for fact, values in stated.items():
            first_view, first = values[0]
            for view, value in values[1:]:
                if not _same(first, value):
                    problems.append(f"{run[0]} #{run[1] + 1} {fact}: {first_view} says {first!r}, {view} says {value!r}")
    return problems


def assert_agree(views: Mapping[str, ViewFacts]) -> None:
    problems = disagreements(views)
    assert not problems, "the views disagree:\n  " + "\n  ".join(problems)


# --- the tests ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report_views(tmp_path_factory: pytest.TempPathFactory) -> tuple[ViewFacts, ViewFacts]:
    """One report over every log (as a team would run it), read back from report.md."""

    out = tmp_path_factory.mktemp("one-truth-report")
    report_of([str(p) for p in ALL_PATHS], out)
    return report_facts((out / "report.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", LOGS)
def test_every_view_states_the_same_facts(path: Path, report_views: tuple[ViewFacts, ViewFacts]) -> None:
    appendix, crash_section = report_views
    parsed = parse_json_facts(path)
    views = {
        "parse --json": parsed,
        "timeline data": timeline_data_facts(path),
        "timeline": timeline_text_facts(path),
        "parse": parse_summary_facts(path),
        "report appendix": {k: v for k, v in appendix.items() if k[0] == path.name},
        "report crashes": {k: v for k, v in crash_section.items() if k[0] == path.name},
        "runs --format json": runs_json_facts(path),
        "runs --format csv": runs_csv_facts(path),
        "tables.frames": frames_facts(path),
    }
    assert parsed, f"{path.name}: no run"
    assert_agree(views)


@pytest.mark.parametrize("path", LOGS)
def test_the_run_model_defines_the_end_once(path: Path) -> None:
    """What the views agree on is the definition: ready line, else the crash line, else the last line."""
    for run in parse_paths([str(path)]).runs:
        assert run.first_ts is not None and run.first_ts.dt.year >= 2000, "a first timestamp with its year"
        if run.outcome == "ready":
            assert run.end_ts == run.ready_ts and run.seconds_to_end == run.total_seconds
        elif run.outcome == "crashed" and run.crash is not None and run.crash.ts is not None:
            assert run.end_ts == run.crash.ts
            assert run.crash.offset == pytest.approx(run.crash.ts.minus(run.first_ts))
        else:
            assert run.end_ts == run.last_ts
        if run.crash is not None and run.crash.after_ready:
            assert run.end_ts == run.ready_ts  # a crash after ready keeps its own time, not the run's end


def test_disagreements_are_found() -> None:
    """The comparison can fail: a view that differs on one fact, or misses a run, is named."""
    base: ViewFacts = {("a.log", 0): {"outcome": "crashed", "to_end": "11 s"}}
    other: ViewFacts = {("a.log", 0): {"outcome": "crashed", "to_end": "12 s"}, ("a.log", 1): {}}
    problems = disagreements({"timeline": base, "report": other})
    assert any("to_end" in p and "'11 s'" in p and "'12 s'" in p for p in problems)
    assert any("timeline has runs" in p for p in problems)


# --- excerpts: logs that begin mid-startup say so, and every command agrees -------------------

LOGS_2026 = Path(__file__).resolve().parent / "fixtures" / "logs2026"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    return result.output


def test_an_excerpt_that_reaches_ready_reports_the_duration_its_lines_state() -> None:
    """Its first line is `Capture cuda graph end. Time elapsed: 90.12 s`; ready follows in the same second."""
    path = str(LOGS_2026 / "sglang_excerpt_graph_end_ready.log")
    [run] = parse_paths([path]).runs
    assert run.outcome == "ready" and run.lower_bound
    assert run.seconds_to_end == pytest.approx(90.12)
    timeline = _cli("timeline", path)
    assert "READY in at least 1 min 30 s (an excerpt)" in timeline and "0 ms" not in timeline
    assert ">100%" not in timeline
    assert "≥ 1 min 30 s" in _cli("parse", path)
    budget = _cli("budget", path)
    assert "no run reached ready" not in budget  # timeline says READY: budget must not deny it
    assert "1 ready but an excerpt" in budget


def test_an_error_only_excerpt_says_what_it_is_and_no_duration() -> None:
    path = str(LOGS_2026 / "sglang_excerpt_error_only.log")
    [run] = parse_paths([path]).runs
    assert run.outcome == "crashed" and run.begins_mid_startup and run.lower_bound
    assert any("excerpt" in w for w in run.warnings)
    timeline = _cli("timeline", path)
    assert "CRASHED (config) in cuda_graph (an excerpt: time unknown)" in timeline
    assert "after 0 ms" not in timeline
    assert "(excerpt)" in _cli("parse", path)


# --- one number per fact: every duration printed for a run, in every view (issue 31) -------------
#
# The facts, each a duration: `to_end` (first line to ready, the crash or the log's end),
# `from_launch`, `crash_after`, each run-level phase row (`phase NAME at +M:SS`: timeline,
# parse --json, the library, report.md), each phase's sum over its details (`sum NAME`:
# runs --format csv's `NAME_s`, export --format prometheus, the library, parse --json), each
# silence (`silence at +M:SS`) and each figure of the engine's own timings (`engine KEY`). Text
# views give what they print; numeric views give seconds, printed here as the text views print
# them (`fmt_duration`), so "11 s" in one and 12.0 in another is a disagreement.

Durations = dict[tuple[str, int], dict[str, str]]


def _shown(seconds: float | None, source: str | None = None) -> str:
    """A duration as the text views print it (a 0 s span measured by whole-second stamps: `<1 s`)."""
    return "<1 s" if seconds == 0 and source == "timestamps" else fmt_duration(seconds)


def _flat(timings: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in timings.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        elif isinstance(value, (int, float)) and value > 0:
            out[f"{prefix}{key}"] = float(value)
    return out


def _sums(rows: list[tuple[str, float]]) -> dict[str, str]:
    sums: dict[str, float] = {}
    for name, seconds in rows:
        if name not in ("total", "unattributed"):
            sums[name] = sums.get(name, 0.0) + seconds
    return {f"sum {name}": fmt_duration(seconds) for name, seconds in sums.items()}


def library_durations(path: Path) -> Durations:
    """`firedup.parse(...)`: the `Run` objects, as a library user reads them."""
    import firedup

    out: Durations = {}
    for run in firedup.parse(str(path)).runs:
        first = run.first_ts
        facts = {"to_end": fmt_duration(run.seconds_to_end)}
        if run.launch is not None and run.launch.source != "unknown" and not run.lower_bound:
            facts["from_launch"] = fmt_duration(run.launch_to_end)
        if run.crash is not None and run.crash.offset is not None and not run.crash.after_ready:
            facts["crash_after"] = fmt_duration(run.crash.offset)
        for p in run.run_phases():
            if p.name != "total" and p.seconds is not None and p.start is not None and first is not None:
                label = p.name + (f" ({p.detail})" if p.detail else "")
                facts[f"phase {label} at {fmt_offset(p.start.minus(first))}"] = _shown(p.seconds, p.source)
        facts.update(_sums(list(run.phase_seconds().items())))
        for s in run.silences:
            facts[f"silence at {fmt_offset(s.start.minus(first)) if first else ''}"] = fmt_duration(s.seconds)
        facts.update({f"engine {k}": fmt_duration(v) for k, v in _flat(run.engine_timings or {}).items()})
        out[(path.name, run.run_index)] = facts
    return out


def json_durations(path: Path) -> Durations:
    """`firedup parse PATH --json`."""
    out: Durations = {}
    for r in json.loads(_invoke("parse", str(path), "--json"))["runs"]:
        facts = {"to_end": fmt_duration(r["seconds_to_end"])}
        launch = r["launch"]
        if launch["source"] != "unknown" and not r["lower_bound"]:
            facts["from_launch"] = fmt_duration(launch["seconds_to_end"])
        crash = r["crash"]
        if crash and crash.get("offset") is not None and not crash.get("after_ready"):
            facts["crash_after"] = fmt_duration(crash["offset"])
        first = _ts(r["first_ts"])
        rows = []
        for p in r["phases"]:
            if p["scope"] != "run" or p["name"] == "total" or p["seconds"] is None:
                continue
            rows.append((p["name"], p["seconds"]))
            if p["start"] is not None and first is not None:
                label = p["name"] + (f" ({p['detail']})" if p["detail"] else "")
                at = fmt_offset((_ts(p["start"]) - first).total_seconds())  # type: ignore[operator]
                facts[f"phase {label} at {at}"] = _shown(p["seconds"], p["source"])
        facts.update(_sums(rows))
        for s in r["silences"]:
            facts[f"silence at {fmt_offset(s['offset'])}"] = fmt_duration(s["seconds"])
        facts.update({f"engine {k}": fmt_duration(v) for k, v in _flat(r["engine_timings"] or {}).items()})
        out[(Path(r["source"]).name, r["run_index"])] = facts
    return out


def csv_durations(path: Path) -> Durations:
    """`firedup runs PATH --format csv`: the time to the end, from launch, the crash, per phase."""
    out: Durations = {}
    for row in csv.DictReader(io.StringIO(_invoke("runs", str(path), "--format", "csv"))):
        facts = {"to_end": fmt_duration(_secs(row["seconds_to_end"]))}
        if row["launch_source"] not in ("", "unknown") and not _bool(row["lower_bound"]):
            facts["from_launch"] = fmt_duration(_secs(row["launch_to_end"]))
        if row["crash_offset"] and row["crash_category"]:
            facts["crash_after"] = fmt_duration(_secs(row["crash_offset"]))
        facts.update(_sums([(k[:-2], float(v)) for k, v in row.items() if k.endswith("_s") and v and float(v) > 0]))
        out[(Path(row["source"]).name, int(row["run_index"]))] = facts
    return out


_SAMPLE = re.compile(r'^(?P<metric>\w+)\{(?P<labels>.*)\} (?P<value>\S+)$')
_PROM_NAMES = {"load_weight": "load_weights", "kv_cache_allocation": "kv_cache"}


def prometheus_durations(path: Path) -> Durations:
    """`firedup export PATH --format prometheus -o -`: `startup_time_seconds{phase=...}` per run
    (firedup's phases under the engine's gauge names; `total` the time to the run's end)."""
    out: Durations = {}
    for line in _invoke("export", str(path), "--format", "prometheus", "-o", "-").splitlines():
        m = _SAMPLE.match(line)
        if m is None or m["metric"] != "startup_time_seconds":
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m["labels"]))
        facts = out.setdefault((labels["source"], int(labels["run_index"])), {})
        phase, seconds = labels["phase"], float(m["value"])
        if phase in ("total", "e2e"):
            facts["to_end"] = fmt_duration(seconds)
        elif seconds > 0:
            facts[f"sum {_PROM_NAMES.get(phase, phase)}"] = fmt_duration(seconds)
    return out


_ROW = re.compile(rf"^\s+(?P<dur><1 s|{_DURATION})\s+(?:\S+%|-|>100%)\s+(?P<at>[+-][\d:]+)\s+(?P<label>.+?)\s{{2,}}"
                  r"(?:reported|timestamps)")
_SILENCE = re.compile(rf"^    (?P<dur>{_DURATION}) at (?P<at>[+-][\d:]+) ")
_ENGINE = re.compile(rf"(?P<key>[\w.]+) (?P<dur>{_DURATION})")


def timeline_durations(path: Path) -> Durations:
    """`firedup timeline PATH` at 200 columns (no line wrapped): the verdict, the phase table, the
    silences and the engine's own timings, as printed."""
    result = CliRunner().invoke(cli, ["timeline", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out: Durations = {}
    index = -1
    section = ""
    for line in result.stdout.splitlines():
        if line and not line[0].isspace():
            index += 1
            facts = out.setdefault((path.name, index), {})
            m = _OUTCOME_LINE.match(line)
            assert m is not None, line
            facts["to_end"] = m.group("time")
            if m.group("launch"):
                facts["from_launch"] = m.group("launch").lstrip("~")
            if m.group("crashed") or m.group("hung"):
                facts["crash_after"] = m.group("time")
            continue
        facts = out[(path.name, index)]
        stripped = line.strip()
        if stripped.startswith("duration") and "phase" in stripped:
            section = "phases"
        elif stripped.startswith("silences ("):
            section = "silences"
        elif stripped.startswith("the engine's own timings"):
            section = "engine"
        elif not stripped or stripped.startswith(("caches:", "per rank", "crash:")):
            section = "" if not stripped or not stripped.startswith("caches:") else "caches"
        elif section == "phases" and (m := _ROW.match(line)) and not m["label"].endswith("…"):
            facts[f"phase {m['label'].removesuffix(' *')} at {m['at']}"] = m["dur"]
        elif section == "silences" and (m := _SILENCE.match(line)):
            facts[f"silence at {m['at']}"] = m["dur"]
        elif section == "engine":
            head = stripped.split(" (")[0] if "(" in stripped else None
            for part in ([head] if head else stripped.split("; ")):
                if em := _ENGINE.fullmatch(part.strip().rstrip(";")):
                    facts[f"engine {em['key']}"] = em["dur"]
    for facts in out.values():
        if "from_launch" in facts:
            facts["from_launch"] = facts["from_launch"]
    return out


def report_durations(markdown: str) -> Durations:
    """report.md: each run's appendix (its verdict and phase table), the crash list, the silences."""
    out: Durations = {}
    crashes_part, _, appendix_part = markdown.partition("\n## Appendix: every run\n")
    key: tuple[str, int] | None = None
    for line in appendix_part.splitlines():
        text = _unmd(line)
        if line.startswith("### "):
            key = _report_key(text[4:])
            out[key] = {}
        elif key is None:
            continue
        elif m := _APPENDIX_OUTCOME.match(text):
            out[key]["to_end"] = m.group("time")
            if m.group("launch"):
                out[key]["from_launch"] = m.group("launch").lstrip("~")
            if m.group("crashed") or m.group("hung"):
                out[key]["crash_after"] = m.group("time")
        elif line.startswith("| ") and not line.startswith(("| phase |", "|---")):
            cells = [c.strip() for c in text[2:].split(" | ")]
            label = re.sub(r" \(spans .*\)$", "", cells[0])
            out[key][f"phase {label} at {cells[3]}"] = cells[1]
    silent = crashes_part.partition("\n## Silent time\n")[2].partition("\n## ")[0]
    for line in silent.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in _unmd(line)[2:].split(" | ")]
            where = _report_key(cells[0].strip("`"))
            out.setdefault(where, {})[f"silence at {cells[2]}"] = cells[1]
    crashes = crashes_part.partition("\n## Crashes\n")[2].partition("\n## ")[0]
    for line in crashes.splitlines():
        if m := _CRASH_HEADING.match(_unmd(line)):
            out.setdefault(_report_key(m.group("where")), {})["crash_after"] = m.group("after")
    return out


def _strip_launch(durations: Durations) -> Durations:
    return {k: {f: v.lstrip("~") for f, v in facts.items()} for k, facts in durations.items()}


@pytest.fixture(scope="module")
def report_markdown(tmp_path_factory: pytest.TempPathFactory) -> str:

    out = tmp_path_factory.mktemp("one-number-report")
    report_of([str(p) for p in ALL_PATHS], out)
    return (out / "report.md").read_text(encoding="utf-8")


def duration_disagreements(views: Mapping[str, Durations]) -> list[str]:
    """Every fact two views both print for a run with two numbers; a view without the run at all."""
    problems = []
    runs = set().union(*(set(v) for v in views.values()))
    for run in sorted(runs):
        stated: dict[str, list[tuple[str, str]]] = {}
        for name, durations in views.items():
            if run not in durations:
                problems.append(f"{run[0]} #{run[1] + 1}: {name} shows no such run")
                continue
            for fact, value in durations[run].items():
                stated.setdefault(fact, []).append((name, value))
        for fact, values in stated.items():
            if len({v for _, v in values}) > 1:
                problems.append(f"{run[0]} #{run[1] + 1} {fact}: " + ", ".join(f"{n} {v!r}" for n, v in values))
    return problems


@pytest.mark.parametrize("path", LOGS)
def test_every_duration_of_a_run_is_one_number_in_every_view(path: Path, report_markdown: str) -> None:
    report = {k: v for k, v in report_durations(report_markdown).items() if k[0] == path.name}
    views = {
        "timeline": timeline_durations(path),
        "parse --json": json_durations(path),
        "runs --format csv": csv_durations(path),
        "export --format prometheus": prometheus_durations(path),
        "library": library_durations(path),
        "report.md": report,
    }
    views = {name: _strip_launch(v) for name, v in views.items()}
    problems = duration_disagreements(views)
    assert not problems, "two numbers for one fact:\n  " + "\n  ".join(problems)
    # each view states what it should: the time to the end everywhere, the phases in the four that list them
    for name, durations in views.items():
        for run, facts in durations.items():
            assert "to_end" in facts, (name, run)
            if name in ("timeline", "parse --json", "library", "report.md"):
                assert any(f.startswith("phase ") for f in facts) or not any(
                    f.startswith("phase ") for f in views["library"][run]), (name, run)


def test_two_numbers_for_one_fact_are_found() -> None:
    """The check can fail: the restart crash `after 11 s` beside a 12.0 from another view."""
    problems = duration_disagreements({"timeline": {("a.log", 0): {"to_end": "11 s"}},
                                       "export": {("a.log", 0): {"to_end": "12 s"}}})
    assert problems == ["a.log #1 to_end: timeline '11 s', export '12 s'"]

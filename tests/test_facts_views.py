"""Facts x views (issue 38): every number a user reads is computed once, and every view that shows
it shows the same value at the precision it prints.

The table `FACTS` names each fact, where it is computed, and the views that show it; each row of
issue 38's table is one case below (`ISSUE_ROWS`), and the facts that hold for every run are
checked over every input set (`sample_logs/`, `../shared/corpus/`, `../shared/realgpu/`,
`tests/data/realgpu/`; a set that is absent is skipped). A new fact or a new view is not done
until it is in the table. `tests/test_one_truth_views.py` holds each run's durations to one
number across the views; this file holds the facts between commands: launches, budgets, limits,
crash times, cache verdicts, the live phase and the comparison's headline.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import ROOT, SAMPLE_LOGS, SHARED
from firedup.cli import cli
from firedup.core.units import fmt_duration
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

S = SAMPLE_LOGS
REALGPU_H100 = ROOT / "tests" / "data" / "realgpu" / "h100-2026-12-06"
INPUT_SETS = {"sample_logs": S, "corpus": SHARED / "corpus", "shared-realgpu": SHARED / "realgpu",
              "tests-realgpu": ROOT / "tests" / "data" / "realgpu"}
DURATION = r"\d+ h \d\d min|\d+ min \d\d s|\d+(?:\.\d)? s|\d+ ms|<1 s"


@dataclass(frozen=True)
class Fact:
    """One fact: where it is computed, once, and every view that shows it."""

    name: str
    computed: str  # the one place
    views: tuple[str, ...]


FACTS = (
    Fact("time to ready from launch", "Run.launch_to_ready (launch.seconds_to_ready)",
         ("parse", "parse --json", "runs", "timeline", "check", "distribution chart", "report")),
    Fact("launch margin of a budget", "timeline.launch.launch_margin (Launch.margin, a row's: tables.launches) / "
         "Budget.launch_margin", ("budget", "budget --json", "check's limit", "wait --timeout auto", "snippets", "report")),
    Fact("a group's budget", "tables.launches.budget_from_launch / tables.budget.budgets",
         ("budget", "budget --json", "report", "distribution chart", "wait --timeout auto")),
    Fact("slowest run of a group, from launch", "Group.launch_seconds / Budget.slowest",
         ("runs", "check", "report's budget table", "budget --json")),
    Fact("crash time", "Run.seconds_to_end (crash.offset)", ("timeline", "parse --json", "runs")),
    Fact("total_seconds (to the log's last line)", "Run.total_seconds", ("parse --json", "timeline, named")),
    Fact("check's limit", "tables.check: one per measure, no `total` measure", ("check", "check --json")),
    Fact("cache verdict", "timeline.silence (+ twins, + a wait record beside the log)",
         ("timeline", "parse --json", "compare", "budget's cold/warm split")),
    Fact("the phase a run is in", "timeline.stages (the slowest rank)", ("wait (live)", "timeline (stopped_in)")),
    Fact("what the grouping flag explains", "Delta.explained", ("compare", "compare --json", "report")),
)

ISSUE_ROWS = (
    "prod-05 launch to ready: parse vs check",
    "slowest debug run: parse vs report's budget table",
    "slowest production run: runs vs check",
    "production timeout: budget vs wait --timeout auto",
    "distribution.png: budget line vs its dots",
    "crash-then-restart: timeline's crash time vs total_seconds",
    "check: one regression, one limit",
    "prod-03 kv_cache: live phase vs the final table",
    "cold H100 EAGLE-3: timeline's kernel cache verdict",
)


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "80"})
    assert result.exit_code in (0, 1, 6) and result.stdout, result.output  # check: 1 FAIL, 6 CANNOT JUDGE
    return result.stdout


def _json(*args: str) -> Any:
    return json.loads(_invoke(*args, "--json"))


def _parse_json(path: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = _json("parse", str(path))["runs"]
    return runs


def _by_name(runs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in runs if r["source"].endswith(name) and r["run_index"] == 0)


def _approx(run: dict[str, Any]) -> str:
    return "~" if run["launch"]["source"] == "estimated" else ""


def _input_set(name: str) -> Path:
    path = INPUT_SETS[name]
    if not path.is_dir():
        pytest.skip(f"{path} is absent")
    return path


# --- the rows of issue 38's table ------------------------------------------------------------------


def test_the_table_names_every_row_of_the_issue() -> None:
    """Each row is a case of this file (a test whose docstring starts with it)."""
    docs = [f.__doc__ or "" for name, f in globals().items() if name.startswith("test_row_")]
    for row in ISSUE_ROWS:
        assert any(d.startswith(row) for d in docs), row


def test_row_1_check_prints_parse_s_time_from_launch() -> None:
    """prod-05 launch to ready: parse vs check"""
    run = _by_name(_parse_json(S), "prod-tp8-eagle3-05.log")
    shown = _approx(run) + fmt_duration(run["launch"]["seconds_to_ready"])
    parse_text = _invoke("parse", str(S / "prod-tp8-eagle3-05.log"))
    assert re.search(rf"\s{re.escape(shown)}\s+cuda_graph", parse_text), parse_text
    check = _invoke("check", str(S / "prod-tp8-eagle3-05.log"), "--history", str(S))
    # the verdict is the first paragraph; a long checkout path wraps it (CI clones deeper)
    verdict = " ".join(check.split("\n\n")[0].split())
    assert verdict.endswith(f": {shown} from launch"), check
    assert f"time to ready from launch: {shown} ok" in check.replace("\n    ", " ")
    data = _json("check", str(S / "prod-tp8-eagle3-05.log"), "--history", str(S))
    [ready] = [f for f in data["runs"][0]["findings"] if f["measure"] == "time to ready from launch"]
    assert ready["seconds"] == run["launch"]["seconds_to_ready"]


def _group(budget: dict[str, Any], value: bool) -> dict[str, Any]:
    return next(g for g in budget["groups"] if g["key"]["disable_cuda_graph"] is value)


def test_row_2_report_s_slowest_is_parse_s() -> None:
    """slowest debug run: parse vs report's budget table"""
    from firedup.render.report import build_context

    runs = _parse_json(S)
    debug = [r for r in runs if "debug-tp8" in r["source"] and r["outcome"] == "ready"]
    slowest = max(r["launch"]["seconds_to_ready"] for r in debug)
    parse_text = _invoke("parse", str(S))
    assert f"{_approx(debug[0])}{fmt_duration(slowest)}" in parse_text
    context = build_context(parse_paths([str(S)], content_hash=True), ["disable_cuda_graph"], 0.01,
                            Path("unused"), [str(S)])
    row = next(b for b in context["budgets"] if "debug" in b["label"])
    assert row["slowest"] == fmt_duration(slowest)
    budget = _json("budget", str(S), "--by", "disable_cuda_graph")
    assert _group(budget, True)["slowest_seconds"] == slowest


def test_row_3_check_s_slowest_is_runs_slowest() -> None:
    """slowest production run: runs vs check"""
    runs = _parse_json(S)
    check = _json("check", str(S / "prod-tp8-eagle3-05.log"), "--history", str(S))
    new = check["runs"][0]
    history = [r for r in runs if r["outcome"] == "ready" and r["config"]["disable_cuda_graph"] is False
               and r["config"]["model_path"] == new["config"].split("model_path=")[1].split(",")[0]
               and not r["source"].endswith("prod-tp8-eagle3-05.log")]
    [ready] = [f for f in new["findings"] if f["measure"] == "time to ready from launch"]
    assert ready["history_n"] == len(history)
    assert ready["history_slowest"] == max(r["launch"]["seconds_to_ready"] for r in history)
    # `runs`'s headline gives the slowest of all runs from launch; here it is one of the history's
    slowest_all = max(r["launch"]["seconds_to_ready"] for r in runs if r["outcome"] == "ready")
    assert slowest_all == ready["history_slowest"]
    head = _invoke("runs", str(S)).splitlines()[0]
    assert f"(~{fmt_duration(slowest_all)} from launch)" in head, head
    text = _invoke("check", str(S / "prod-tp8-eagle3-05.log"), "--history", str(S)).replace("\n    ", " ")
    assert f"slowest ~{fmt_duration(slowest_all)}, limit" in text


def test_row_4_wait_s_auto_timeout_is_budget_s() -> None:
    """production timeout: budget vs wait --timeout auto"""
    from firedup.live.history import select_history

    for paths in ([str(S)], [str(S), str(REALGPU_H100)]):  # the second: launches measured beside them
        budget = _group(_json("budget", *paths, "--by", "disable_cuda_graph"), False)
        runs = parse_paths(paths).runs
        prod = next(r for r in runs if r.source.endswith("prod-tp8-eagle3-05.log"))
        history, _ = select_history(runs, prod.config, prod.engine)
        found = history.budget()
        assert found is not None and history.n == budget["n"]
        assert found.seconds == budget["budget_seconds"], paths
        assert found.slowest == budget["slowest_seconds"]
        if budget["launch_margin_seconds"] >= 0.5:
            assert f"+ {budget['launch_margin_seconds']:.0f} s for a slower launch" in found.method
        else:  # measured launches at hand, none longer than the estimate: no margin, and no words of one
            assert "for a slower launch" not in found.method


def test_row_5_distribution_s_budget_line_counts_as_its_dots() -> None:
    """distribution.png: budget line vs its dots"""
    from firedup.render.charts import distribution_data
    from firedup.tables.load import load
    from firedup.tables.risk import FLOOR, round_up

    runs = _parse_json(S)
    data = distribution_data(load([str(S)]), ["disable_cuda_graph"])
    budget = _json("budget", str(S), "--by", "disable_cuda_graph")
    for g in data.budgets.iter_rows(named=True):
        dots = data.points.filter(data.points["group_index"] == g["group_index"])["seconds"].to_list()
        group = next(b for b in budget["groups"] if b["label"] == g["group"])
        # the dots are each run's time from launch, as `parse --json` gives it
        members = _members(runs, group["key"], budget["population"])
        assert sorted(dots) == sorted(r["launch"]["seconds_to_ready"] for r in members)
        assert max(dots) == group["slowest_seconds"]
        assert g["budget_seconds"] == group["budget_seconds"]
        if group["method"] == FLOOR:  # the line is what its label says of these dots
            assert g["budget_seconds"] == round_up(max(dots) * 1.1 + group["launch_margin_seconds"])
            assert "slower launch" in g["method_label"]


def _members(runs: list[dict[str, Any]], key: dict[str, Any], population: dict[str, Any]) -> list[dict[str, Any]]:
    """The timed runs of a group: ready, whole, of the population and the group's flags."""
    def value(r: dict[str, Any], flag: str) -> Any:
        return r["engine"] if flag == "engine" else r["config"].get(flag)

    return [r for r in runs if r["outcome"] == "ready" and not r["lower_bound"] and not r["begins_mid_startup"]
            and all(value(r, f) == v for f, v in {**population, **key}.items())]


def test_row_6_a_crash_s_time_and_total_seconds_are_two_named_facts() -> None:
    """crash-then-restart: timeline's crash time vs total_seconds"""
    run = _by_name(_parse_json(S), "crash-then-restart.log")
    assert run["crash"]["offset"] == run["seconds_to_end"]
    text = _invoke("timeline", str(S / "crash-then-restart.log"))
    first = text.splitlines()[0]
    assert f"after {fmt_duration(run['seconds_to_end'])}," in first
    assert run["total_seconds"] != run["seconds_to_end"]
    joined = re.sub(r"\n\s+", " ", text)
    assert f"last line came {fmt_duration(run['total_seconds'])} after its first, after the crash (total_seconds" \
        in joined, text


def test_row_7_one_regression_is_one_line_with_one_limit(tmp_path: Path) -> None:
    """check: one regression, one limit"""
    slow = tmp_path / "prod-slow.log"
    lines = (S / "prod-tp8-eagle3-05.log").read_text().splitlines()
    out = []
    for line in lines:  # every stamp after the weights begin loading, 5 minutes later
        m = re.match(r"^\[2026-11-06 (\d\d):(\d\d):(\d\d)", line)
        if m and (int(m.group(1)), int(m.group(2))) >= (20, 11):
            h, mi, s = int(m.group(1)), int(m.group(2)) + 5, int(m.group(3))
            h, mi = h + mi // 60, mi % 60
            line = f"[2026-11-06 {h:02d}:{mi:02d}:{s:02d}" + line[len("[2026-11-06 00:00:00"):]
        out.append(line)
    slow.write_text("\n".join(out) + "\n")
    data = _json("check", str(slow), "--history", str(S))
    findings = data["runs"][0]["findings"]
    assert "total" not in {f["measure"] for f in findings}  # the same fact on the first line's clock
    regressed = [f for f in findings if f["regressed"]]
    assert [f["measure"] for f in regressed].count("time to ready from launch") == 1
    text = _invoke("check", str(slow), "--history", str(S))
    assert len(re.findall(r"limit \d+ min \d\d s", text)) == len({f["measure"] for f in findings
                                                                 if f["regressed"] or f["measure"].startswith("time")})


def test_row_8_the_live_phase_is_the_slowest_rank_s() -> None:
    """prod-03 kv_cache: live phase vs the final table"""
    from firedup.timeline.stages import stage_changes

    [run] = parse_paths([str(S / "prod-tp8-eagle3-03.log")]).runs
    loading = next(p for p in run.run_phases() if p.name == "load_weights")
    assert loading.end is not None and run.first_ts is not None
    entered = {stage: m for stage, m in stage_changes(run) if m is not None}
    kv = entered["kv_cache"]
    assert kv.ts is not None and kv.ts >= loading.end  # not while a rank still loads (was +3:24)
    # and the live wait says so: its news line for kv_cache is not before the final table's end of loading
    text = _invoke_wait(S / "prod-tp8-eagle3-03.log")
    m = re.search(r"^\s+\+(\d+):(\d\d)\s+kv_cache\b", text, re.M)
    assert m is not None, text
    assert int(m.group(1)) * 60 + int(m.group(2)) >= int(loading.end.minus(run.first_ts))


def _invoke_wait(log: Path) -> str:
    result = CliRunner().invoke(cli, ["wait", "--log", str(log), "--timeout", "60"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_row_9_a_cold_start_is_never_called_warm(tmp_path: Path) -> None:
    """cold H100 EAGLE-3: timeline's kernel cache verdict"""
    log = REALGPU_H100 / "sglang_eagle3.log"
    alone = tmp_path / "alone" / log.name
    alone.parent.mkdir()
    shutil.copy(log, alone)
    text = re.sub(r"\n\s+", " ", _invoke("timeline", str(alone)))
    assert "kernel_jit warm" not in text and "kernel_jit unknown" in text
    beside = tmp_path / "beside"
    beside.mkdir()
    shutil.copy(log, beside / log.name)
    shutil.copy(log.with_name("sglang_eagle3.wait.json"), beside / "sglang_eagle3.wait.json")
    text = re.sub(r"\n\s+", " ", _invoke("timeline", str(beside / log.name)))
    assert "kernel_jit cold: compilers ran" in text
    data = _by_name(_parse_json(beside / log.name), log.name)
    assert data["caches"]["kernel_jit"]["verdict"] == "cold" and data["launch"]["source"] == "measured"
    # with its warm twin in the same inputs, the capture 5x the twin's is cold too, record or not
    shutil.copy(REALGPU_H100 / "sglang_eagle3-warm.log", alone.parent / "sglang_eagle3-warm.log")
    both = {r.source.rsplit("/", 1)[-1]: r for r in parse_paths([str(alone.parent)]).runs}
    assert both["sglang_eagle3.log"].caches["kernel_jit"].verdict == "cold"


def test_the_headline_counts_every_phase_the_flag_changes() -> None:
    """compare: the target's and the draft's graphs, one figure in the headline, the text and JSON."""
    data = _json("compare", str(S), "--by", "disable_cuda_graph")
    [d] = data["deltas"]
    assert d["explained_by"] == ["cuda_graph", "draft.cuda_graph"]
    seconds = d["phases"]["cuda_graph"] + d["phases"]["draft.cuda_graph"]
    assert d["explained_seconds"] == pytest.approx(seconds, abs=0.01)
    text = re.sub(r"\n\s+", " ", _invoke("compare", str(S), "--by", "disable_cuda_graph"))
    assert (f"cuda_graph and draft.cuda_graph explain {fmt_duration(seconds)} of the "
            f"{fmt_duration(d['total_seconds'])} difference") in text
    assert data["headline"] in text


# --- facts that hold for every run of every input set -------------------------------------------------


def _runs_of(name: str) -> tuple[Path, list[Run], list[dict[str, Any]]]:
    path = _input_set(name)
    return path, parse_paths([str(path)]).runs, _parse_json(path)


@pytest.mark.parametrize("name", sorted(INPUT_SETS))
def test_time_from_launch_is_one_number_in_parse_runs_and_timeline(name: str) -> None:
    path, runs, contract = _runs_of(name)
    shown = {(r["source"], r["run_index"]): r for r in contract}
    for run in runs:
        r = shown[(run.source, run.run_index)]
        assert r["launch"]["seconds_to_ready"] == (None if run.launch_to_ready is None
                                                   else round(run.launch_to_ready, 3))
    # `parse`'s table: one row per run, in run order: outcome, time, time from launch
    row = re.compile(rf"^(?:ready|crashed|hung|incomplete|engine)\s+\(?(?:≥ )?(?:{DURATION}|excerpt)\)?\s+"
                     rf"(?P<launch>\?|~?(?:{DURATION}))\s")
    cells = [m.group("launch") for line in _invoke("parse", str(path)).splitlines() if (m := row.match(line))]
    assert len(cells) == len(contract)
    for r, cell in zip(contract, cells, strict=True):
        if r["outcome"] == "ready" and r["launch"]["seconds_to_ready"] is not None and not r["lower_bound"]:
            assert cell == _approx(r) + fmt_duration(r["launch"]["seconds_to_ready"]), (r["source"], cell)


@pytest.mark.parametrize("name", sorted(INPUT_SETS))
def test_a_run_s_launch_margin_is_one_number_in_the_run_the_table_and_wait(name: str) -> None:
    """The launch margin is one formula (timeline.launch.launch_margin): the run's `Launch.margin`, the
    runs table's row `budget` and `check` read, and the row `wait`'s history builds from the run."""
    from firedup.tables.frames import from_runs
    from firedup.tables.launches import launch_margin, run_row

    _, runs, _ = _runs_of(name)
    rows = {(r["source"], r["run_index"]): r for r in from_runs(runs).runs.to_dicts()}
    margins = []
    for run in runs:
        margin = run.launch.margin if run.launch is not None else 0.0
        assert launch_margin(rows[run.source, run.run_index]) == margin, run.source
        assert launch_margin(run_row(run)) == margin, run.source
        margins.append(margin)
    if name == "sample_logs":  # estimated launches: a margin there is to see
        assert any(m > 0 for m in margins)


@pytest.mark.parametrize("name", sorted(INPUT_SETS))
def test_a_crash_s_time_is_one_number(name: str) -> None:
    _, runs, _ = _runs_of(name)
    from firedup.render.text import outcome_line

    for run in runs:
        if run.outcome != "crashed" or run.seconds_to_end is None or run.lower_bound or run.crash is None:
            continue
        assert run.crash.offset is None or fmt_duration(run.crash.offset) == fmt_duration(run.seconds_to_end)
        assert fmt_duration(run.seconds_to_end) in outcome_line(run, launch=False)


@pytest.mark.parametrize("name", sorted(INPUT_SETS))
def test_warm_needs_a_positive_sign(name: str) -> None:
    """No cache is called warm for want of a sign of cold (a short, quiet phase)."""
    _, runs, _ = _runs_of(name)
    for run in runs:
        for kind, v in run.caches.items():
            if v.verdict == "warm":
                assert v.basis in ("line", "timing", "twin", "process"), (run.source, kind, v)
                assert "no silence" not in v.reason and "nothing was compiled" not in v.reason, (run.source, kind, v)


@pytest.mark.parametrize("name", sorted(INPUT_SETS))
def test_the_live_phase_leaves_a_rank_phase_only_with_its_slowest_rank(name: str) -> None:
    from firedup.timeline.stages import stage_changes

    _, runs, _ = _runs_of(name)
    for run in runs:
        for _stage, m in stage_changes(run):
            if m is None or m.rank is None or not m.name.endswith(".end") or m.ts is None:
                continue
            base = m.name.rsplit(".", 1)[0]
            began = {x.rank for x in run.milestones if x.name == base + ".begin" and x.model == m.model
                     and x.line < m.line}
            ended = {x.rank for x in run.milestones if x.name == m.name and x.model == m.model and x.line <= m.line}
            assert began <= ended, (run.source, m.line, began - ended)


@pytest.mark.parametrize("name", ["sample_logs", "shared-realgpu", "tests-realgpu"])
def test_every_group_s_budget_is_one_number(name: str) -> None:
    """budget --json, the report's budget table and wait's --timeout auto (of a one-config group)."""
    from firedup.core.config import config_key
    from firedup.live.history import select_history
    from firedup.render.report import build_context

    path, runs, contract = _runs_of(name)
    budget = _json("budget", str(path))
    context = build_context(parse_paths([str(path)], content_hash=True), None, 0.01, Path("unused"), [str(path)])
    for group, row in zip(budget["groups"], context["budgets"], strict=True):
        if group["budget_seconds"] is None:
            continue
        assert f"({group['budget_seconds']} s)" in row["budget"], (group["label"], row)
        if group["cold_warm"] is not None:  # the budget is the cold side's (tests/test_coldwarm.py)
            continue
        members = _members(contract, group["key"], budget["population"])
        assert len(members) == group["n"], group["label"]
        assert group["slowest_seconds"] == max(r["launch"]["seconds_to_ready"] for r in members)
        live = [r for r in runs if (r.source, r.run_index) in {(m["source"], m["run_index"]) for m in members}]
        if len({config_key(r.engine, r.config) for r in live}) == 1:
            history, _ = select_history(runs, live[0].config, live[0].engine)
            if history.n == group["n"]:
                found = history.budget()
                assert found is not None and found.seconds == group["budget_seconds"], group["label"]


@pytest.mark.parametrize("name", sorted(INPUT_SETS))
def test_cache_verdicts_are_one_fact_in_parse_json_and_the_library(name: str) -> None:
    """`parse --json` (streamed, run by run) and the runs every other view reads give each cache the
    same verdict, the rules that compare runs read together included."""
    _, runs, contract = _runs_of(name)
    assert len(runs) == len(contract)
    for run, shown in zip(runs, contract, strict=True):
        assert {k: (v.verdict, v.basis) for k, v in run.caches.items()} == {
            k: (v["verdict"], v["basis"]) for k, v in shown["caches"].items()}, run.source


@pytest.mark.parametrize("measured", [False, True], ids=["sample_logs", "with-measured-launches"])
def test_wait_against_a_replay_prints_the_budget_of_budget(tmp_path: Path, measured: bool) -> None:
    """The done-when of issue 38: `wait --timeout auto` with a history, against a replay of a
    production run, states to the second the budget `budget --json` gives its group over the same
    history (slow: a real replay over HTTP). Each history tells a budget computed apart from
    `budget`'s: over `sample_logs/` the launch margin (16 s) counts; with the H100 start-ups beside
    them, their launches, measured by their `wait --record` files, set the launch margin of every
    SGLang group (`tables.launches.budget_margin`), which `budget` counts and a history of this
    config's runs alone did not (wait said 17 min 30 s where `budget` said 17 min 10 s)."""
    from _live import free_port, replaying, run_wait
    from firedup.core.units import parse_duration

    history = (str(S), str(REALGPU_H100)) if measured else (str(S),)
    group = _group(_json("budget", *history, "--by", "disable_cuda_graph"), False)
    if measured:
        alone = _group(_json("budget", str(S), "--by", "disable_cuda_graph"), False)
        assert group["n"] == alone["n"] and group["budget_seconds"] != alone["budget_seconds"]
    else:
        assert group["launch_margin_seconds"] >= 10
    out = tmp_path / "server.log"
    port = free_port()
    with replaying(S / "prod-tp8-eagle3-05.log", out, port, 100):
        result = run_wait("--log", str(out), "--url", f"http://127.0.0.1:{port}/health", "--timeout", "auto",
                          *(a for h in history for a in ("--history", h)))
    assert result.returncode == 0, result.stdout + result.stderr
    said = re.sub(r"\s+", " ", result.stderr + result.stdout)
    found = re.search(rf"--timeout auto: ({DURATION}) = the budget of `firedup budget` over (\d+) history runs", said)
    assert found is not None, said
    assert parse_duration(found.group(1), "--timeout") == group["budget_seconds"]
    assert int(found.group(2)) == group["n"]


@pytest.mark.parametrize("pair", [(REALGPU_H100, "sglang_eagle3.log", "sglang_eagle3-warm.log"),
                                  (S, "sglang-cold-start.log", "sglang-warm-start.log")],
                         ids=["h100-eagle3", "sample-sglang"])
def test_check_s_limit_is_the_config_s_budget_in_budget_and_wait(tmp_path: Path, pair: tuple[Path, str, str]) -> None:
    """check's limit on time to ready, budget --json's budget and wait's --timeout auto are one
    number for one config: histories of a cold and a warm start of one config, where `budget`
    gives the cold start's budget and check and wait pooled both (the H100 pair: check and wait
    said 2 min 20 s, budget 4 min 10 s). The line that prints check's limit says it is the budget."""
    from firedup.live.history import select_history

    where, cold, warm = pair
    history = tmp_path / "history"
    history.mkdir()
    for name in (cold, warm):
        shutil.copy(where / name, history / name)
        if (where / name).with_suffix(".wait.json").exists():  # its measured launch
            shutil.copy((where / name).with_suffix(".wait.json"), history / Path(name).with_suffix(".wait.json"))
    new = tmp_path / "new.log"  # the cold start again, not one of the history (another content hash)
    new.write_text((where / cold).read_text() + "\n")
    [group] = _json("budget", str(history))["groups"]
    assert group["cold_warm"] is not None  # the config's history holds a cold and a warm start
    data = _json("check", str(new), "--history", str(history))
    [ready] = [f for f in data["runs"][0]["findings"] if f["measure"] == "time to ready from launch"]
    assert ready["history_n"] == 2
    assert ready["limit_seconds"] == group["budget_seconds"]
    text = re.sub(r"\s+", " ", _invoke("check", str(new), "--history", str(history)))
    assert f"limit {fmt_duration(group['budget_seconds'])} = the budget of `firedup budget` for this config" in text
    assert f"over its {group['n']} cold start" in text  # which of its runs: the cold starts', named
    runs = parse_paths([str(history)]).runs
    live = next(r for r in runs if r.source.endswith(cold))
    found = select_history(runs, live.config, live.engine)[0].budget()
    assert found is not None and found.seconds == group["budget_seconds"] and found.n == group["n"]


def test_a_run_s_time_from_launch_is_its_own_beside_measured_launches() -> None:
    """Measured launches of other runs in the inputs (the H100 start-ups' `.wait.json` records) are
    the budget's launch margin, not a rewrite of each estimated run's time from launch: `parse
    --json`, `runs --json`, `budget --json`'s slowest and `check`'s history give prod-05 one number
    (parse said 921 s, the tables 917.02 s from a gap re-estimated at 17.02 s)."""
    from firedup.core.config import config_key

    inputs = (str(S), str(REALGPU_H100))
    contract = _json("parse", *inputs)["runs"]
    prod = _by_name(contract, "prod-tp8-eagle3-05.log")
    seconds = prod["launch"]["seconds_to_ready"]
    assert prod["launch"]["source"] == "estimated"
    assert any(r["launch"]["source"] == "measured" for r in contract)  # the hole needs both
    rows = _json("runs", *inputs)
    rows = rows["runs"] if isinstance(rows, dict) else rows
    [row] = [r for r in rows if r["source"].endswith("prod-tp8-eagle3-05.log") and r["run_index"] == 0]
    assert row["launch_to_end"] == prod["launch"]["seconds_to_end"]  # ready: its end is its time to ready
    group = _group(_json("budget", *inputs, "--by", "disable_cuda_graph"), False)
    members = _members(contract, group["key"], _json("budget", *inputs, "--by", "disable_cuda_graph")["population"])
    assert group["slowest_seconds"] == max(r["launch"]["seconds_to_ready"] for r in members)
    data = _json("check", str(S / "prod-tp8-eagle3-05.log"), "--history", *inputs)
    [ready] = [f for f in data["runs"][0]["findings"] if f["measure"] == "time to ready from launch"]
    key = config_key(prod["engine"], prod["config"])
    same = [r["launch"]["seconds_to_ready"] for r in members
            if config_key(r["engine"], r["config"]) == key and r is not prod]
    assert ready["seconds"] == seconds and ready["history_n"] == len(same)
    assert ready["history_slowest"] == max(same) and ready["history_median"] == round(median(same), 3)

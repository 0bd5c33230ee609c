"""firedup.api and `import firedup`: the public surface, each function checked against the
layer it wraps and against the CLI command over it; the README's Library example runs."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import firedup
from conftest import ROOT, SAMPLE_LOGS
from firedup import api
from firedup.cli import cli
from firedup.tables.budget import budgets as budgets_of
from firedup.tables.compare import compare as compare_runs
from firedup.tables.load import load as load_frames
from firedup.timeline.pipeline import parse_paths

READY = ROOT / "tests" / "fixtures" / "crash" / "ready_tp1.log"
FUNCTIONS = ["budgets", "compare", "export", "ingest", "load", "open_store", "parse", "plot", "report", "summary"]
CLASSES = ["BudgetReport", "Budget", "Comparison", "Crash", "Delta", "Group", "IngestReport", "Milestone",
           "ParseResult", "Phase", "ReportResult", "Run", "Runs", "SourceReport", "Store"]
ERRORS = ["DataError", "FiredupError", "FollowError", "InputError", "NoStartupError", "OutputError", "StoreError",
          "UnknownEngineError", "UnknownFlagError", "UsageError"]


def _readme_section(title: str) -> str:
    """The docs page with this title (the README's reference moved to docs/), to its first section."""
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        if text.startswith(f"# {title}\n"):
            end = text.find("\n## ")
            return text if end < 0 else text[:end]
    raise AssertionError(f"no docs page titled {title!r}")


# --- the surface -----------------------------------------------------------------------------


def test_dir_lists_the_functions_the_data_classes_and_the_errors() -> None:
    listed = dir(firedup)
    for name in FUNCTIONS + CLASSES + ERRORS:
        assert name in listed, name
        assert name in firedup.__all__, name
    assert set(firedup.__all__) <= set(listed)


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in firedup.__all__:
        value = getattr(firedup, name)
        if name != "__version__":
            assert inspect.getdoc(value), f"firedup.{name} has no docstring"
    for name in FUNCTIONS:
        assert getattr(firedup, name) is getattr(api, name)
    from firedup.timeline.run import Run

    assert firedup.Run is Run and issubclass(firedup.UnknownFlagError, firedup.FiredupError)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        firedup.nope  # noqa: B018


def test_import_firedup_and_its_functions_load_no_polars_or_matplotlib() -> None:
    snippet = ("import sys, firedup; [getattr(firedup, n) for n in firedup.__all__ if n[0].islower()]; "
               "firedup.FiredupError; bad = [m for m in ('polars', 'matplotlib', 'ray', 'fsspec') if m in sys.modules]; "
               "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=60, check=False,
                          env={"PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stderr


def test_the_readme_documents_every_function() -> None:
    section = _readme_section("Library: `import firedup`")
    for name in FUNCTIONS:
        assert f"`{name}`" in section, name


def test_the_readme_library_example_runs_and_prints_what_it_shows(tmp_path: Path) -> None:
    section = _readme_section("Library: `import firedup`")
    code = re.search(r"```python\n(.*?)```", section, re.S)
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert code is not None and shown is not None
    (tmp_path / "sample_logs").symlink_to(SAMPLE_LOGS)
    proc = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg"}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == shown.group(1)
    assert (tmp_path / "compare.svg").read_text().startswith("<?xml")
    assert (tmp_path / "report" / "index.html").is_file()


# --- each function against the layer it wraps --------------------------------------------------


def test_parse_is_parse_paths_with_the_cli_option_names() -> None:
    import datetime as dt

    mine = firedup.parse(SAMPLE_LOGS, engine="sglang", date=dt.date(2026, 11, 5))
    theirs = parse_paths([str(SAMPLE_LOGS)], engine="sglang", default_date=dt.date(2026, 11, 5))
    assert mine.as_contract() == theirs.as_contract()
    assert len(mine.runs) == 22 and mine.errors == []


def test_parse_refuses_an_unknown_engine_before_reading() -> None:
    with pytest.raises(firedup.UnknownEngineError, match=r"unknown engine 'tgi' \(known: "):
        firedup.parse([str(ROOT / "does-not-exist.log")], engine="tgi")


def test_load_takes_paths_a_store_or_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = firedup.load([SAMPLE_LOGS / "prod-tp8-eagle3-01.log", SAMPLE_LOGS / "small-tp1.log"])
    assert runs.runs.equals(load_frames([str(SAMPLE_LOGS / "prod-tp8-eagle3-01.log"),
                                         str(SAMPLE_LOGS / "small-tp1.log")]).runs)
    store = tmp_path / "store"
    firedup.ingest([SAMPLE_LOGS / "small-tp1.log"], store=store)
    assert len(firedup.load(store=store)) == 1
    assert len(firedup.load([SAMPLE_LOGS / "prod-tp8-eagle3-01.log"], store=store)) == 2
    monkeypatch.setenv("FIREDUP_STORE", str(store))  # True: the default store
    assert len(firedup.load(store=True)) == 1 and firedup.open_store().root == store
    with pytest.raises(firedup.UsageError, match="give log paths, --store"):
        firedup.load()


def test_compare_and_budgets_take_runs_or_paths_and_by_as_the_cli_does() -> None:
    runs = firedup.load(SAMPLE_LOGS)
    cmp = firedup.compare(runs, by="disable_cuda_graph")
    assert cmp.as_json() == compare_runs(runs, ["disable_cuda_graph"]).as_json()
    assert firedup.compare(SAMPLE_LOGS, by=["disable_cuda_graph"]).as_json() == cmp.as_json()
    two = firedup.compare(runs, by="disable_cuda_graph,tp_size").grouping.by
    assert two == ["disable_cuda_graph", "tp_size"]
    report = firedup.budgets(runs, by="disable_cuda_graph", risk=0.05)
    assert report.as_json() == budgets_of(runs, ["disable_cuda_graph"], 0.05).as_json()
    with pytest.raises(firedup.UsageError, match="risk must be between 0 and 1"):
        firedup.budgets(runs, risk=1.5)
    with pytest.raises(firedup.UnknownFlagError, match="did you mean"):
        firedup.compare(runs, by="cuda_graf")


def test_plot_writes_the_chart_and_says_why_it_cannot(tmp_path: Path) -> None:
    out = firedup.plot("timeline", SAMPLE_LOGS, tmp_path / "t.svg", run=["crash-then-restart.log#2"], ranks=True)
    assert out.path == tmp_path / "t.svg" and "crash-then-restart.log #2" in out.path.read_text()
    assert out.coverage is None  # a timeline draws the runs it is given
    with pytest.raises(firedup.UsageError, match=r"\.png or \.svg"):
        firedup.plot("timeline", SAMPLE_LOGS, tmp_path / "t.pdf")
    with pytest.raises(firedup.UsageError, match="unknown chart kind 'pie'"):
        firedup.plot("pie", SAMPLE_LOGS, tmp_path / "p.png")
    with pytest.raises(firedup.UsageError, match=r"no run 'nope\.log'"):
        firedup.plot("ranks", SAMPLE_LOGS, tmp_path / "r.png", run=["nope.log"])
    with pytest.raises(firedup.DataError, match="two or more ranks"):
        firedup.plot("ranks", [READY], tmp_path / "r.png")
    notes = tmp_path / "notes.txt"
    notes.write_text("no server here\n")
    with pytest.raises(firedup.NoStartupError, match="nothing to draw"):
        firedup.plot("timeline", [notes], tmp_path / "n.png")
    assert not (tmp_path / "r.png").exists() and not (tmp_path / "n.png").exists()


def test_report_writes_both_files_and_the_charts(tmp_path: Path) -> None:
    result = firedup.report([READY], tmp_path / "r")
    assert result.runs == 1 and [p.name for p in result.files[:2]] == ["index.html", "report.md"]
    assert all(p.is_file() for p in result.files)


def test_export_and_summary_match_the_commands(tmp_path: Path) -> None:
    from click.testing import CliRunner

    runs = firedup.load(SAMPLE_LOGS)
    firedup.export(runs, "csv", tmp_path / "phases.csv", table="phases")
    assert pl.read_csv(tmp_path / "phases.csv").height == runs.phases.height
    text = firedup.summary(runs, "json")
    assert text is not None and len(json.loads(text)) == 22
    by_cli = CliRunner().invoke(cli, ["runs", str(SAMPLE_LOGS), "--format", "json"])
    assert by_cli.exit_code == 0 and by_cli.output == text + "\n"
    assert firedup.summary(runs, "csv", tmp_path / "s.csv") is None
    assert (tmp_path / "s.csv").read_text() == firedup.summary(runs, "csv") + "\n"
    with pytest.raises(firedup.UsageError, match="Parquet is binary"):
        firedup.summary(runs, "parquet")
    with pytest.raises(firedup.UsageError, match="unknown format 'xml'"):
        firedup.export(runs, "xml", tmp_path / "x")


def test_ingest_adds_once_and_refuses_a_folder_that_is_not_a_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = firedup.ingest([SAMPLE_LOGS / "small-tp1.log"], store=store)
    again = firedup.ingest([SAMPLE_LOGS / "small-tp1.log"], store=store)
    assert (first.runs_added, again.runs_added, len(again.present)) == (1, 0, 1)
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(firedup.StoreError, match="not a firedup store"):
        firedup.ingest([READY], store=other)


def test_a_library_error_through_click_s_own_runner_is_one_line_too() -> None:
    """The mapping lives in the group, so any caller of `cli` gets it, not only `main`."""
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["parse", "--engine", "tgi", str(READY)])
    assert result.exit_code == 2
    assert result.output.startswith("firedup: unknown engine 'tgi' (known: ") and result.output.count("\n") == 1


# --- the library's own errors (issue 33): a designed check at the boundary, never a foreign TypeError ----

LOG = str(SAMPLE_LOGS / "small-tp1.log")
WRONG_CALLS = [
    ("parse(123)", lambda tmp: firedup.parse(123)),  # 'int' object is not iterable
    ("parse(None)", lambda tmp: firedup.parse(None)),
    ("parse(b'x')", lambda tmp: firedup.parse(b"x.log")),
    ("parse([1])", lambda tmp: firedup.parse([1])),
    ("parse({'a': 1})", lambda tmp: firedup.parse({"a.log": 1})),
    ("parse('')", lambda tmp: firedup.parse("")),  # read the whole current folder
    ("parse([''])", lambda tmp: firedup.parse([""])),
    ("parse(engine=['sglang'])", lambda tmp: firedup.parse(LOG, engine=["sglang"])),
    ("parse(date=20260101)", lambda tmp: firedup.parse(LOG, date=20260101)),
    ("parse(jobs='2')", lambda tmp: firedup.parse(LOG, jobs="2")),
    ("load(store=123)", lambda tmp: firedup.load(LOG, store=123)),
    ("load(store=[1])", lambda tmp: firedup.load(LOG, store=[1])),
    ("compare(by=5)", lambda tmp: firedup.compare(LOG, by=5)),
    ("compare(by=[5])", lambda tmp: firedup.compare(LOG, by=[5])),
    ("budgets(risk='0.1')", lambda tmp: firedup.budgets(LOG, risk="0.1")),
    ("budgets(risk=nan)", lambda tmp: firedup.budgets(LOG, risk=float("nan"))),
    ("budgets(risk=None)", lambda tmp: firedup.budgets(LOG, risk=None)),
    ("check(risk='0.1')", lambda tmp: firedup.check(LOG, LOG, risk="0.1")),
    ("plot(out=5)", lambda tmp: firedup.plot("timeline", LOG, 5)),
    ("plot(run=5)", lambda tmp: firedup.plot("timeline", LOG, tmp / "t.png", run=5)),
    ("report(out_dir=5)", lambda tmp: firedup.report(LOG, 5)),
    ("export(out=None)", lambda tmp: firedup.export(LOG, "csv", None)),
    ("summary(width='80')", lambda tmp: firedup.summary(LOG, width="80")),
    ("ingest(workers='2')", lambda tmp: firedup.ingest(LOG, store=tmp / "store", workers="2")),
    # issue 42, class 7
    ("parse(progress=123)", lambda tmp: firedup.parse(LOG, progress=123)),
    ("load(progress=123)", lambda tmp: firedup.load(LOG, progress=123)),
    ("report(progress=123)", lambda tmp: firedup.report(LOG, tmp / "r", progress=123)),
    ("ingest(progress=123)", lambda tmp: firedup.ingest(LOG, store=tmp / "store", progress=123)),
    ("parse(launched_at='x')", lambda tmp: firedup.parse(LOG, launched_at="x")),
    ("parse_paths(123)", lambda tmp: firedup.parse_paths(123)),
    ("parse_paths(progress=123)", lambda tmp: firedup.parse_paths([LOG], progress=123)),
    ("parse_paths(jobs=0)", lambda tmp: firedup.parse_paths([LOG], jobs=0)),
    ("parse_paths(default_date='x')", lambda tmp: firedup.parse_paths([LOG], default_date="x")),
    ("parse_paths(scanner='x')", lambda tmp: firedup.parse_paths([LOG], scanner="x")),
    ("parse_paths(engine=1)", lambda tmp: firedup.parse_paths([LOG], engine=1)),
]


@pytest.mark.parametrize("call", [c for _, c in WRONG_CALLS], ids=[name for name, _ in WRONG_CALLS])
def test_a_wrong_argument_is_firedups_own_usage_error(call: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLE_LOGS)  # where `parse("")` read every log
    with pytest.raises(firedup.UsageError) as caught:
        call(tmp_path)
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message


def test_parse_paths_takes_one_path_as_a_str() -> None:
    """`parse_paths("x.log")` iterated the str: "x", ".", "l", ... and walked "/" itself."""
    result = firedup.parse_paths(LOG)
    assert [run.source for run in result.runs] == [LOG] and not result.errors


def test_a_worker_count_is_capped_by_the_files_and_the_cores() -> None:
    """`parse(jobs=10**6)` forked without end (no result in 90 s)."""
    from firedup.read.sources import expand_inputs
    from firedup.timeline import pipeline

    sources, _ = expand_inputs([LOG, str(SAMPLE_LOGS / "vllm-warm-start.log")])
    assert pipeline._pool_size(sources, 10**6) == 2
    many = sources * 500
    assert pipeline._pool_size(many, 10**6) <= pipeline.JOBS_PER_CORE * pipeline._cores()
    assert len(firedup.parse([LOG, str(SAMPLE_LOGS / "vllm-warm-start.log")], jobs=10**6).runs) == 2


@pytest.mark.parametrize("by", [("disable_cuda_graph", "disable_cuda_graph"), "tp_size,tp_size", ["tp_size", " tp_size"]])
def test_a_flag_named_twice_is_one_group_key(by: Any) -> None:
    """`budgets(by=(flag, flag))` raised polars' DuplicateError."""
    runs = firedup.load([LOG, str(SAMPLE_LOGS / "sglang-warm-start.log")])
    once = by[0].split(",")[0].strip() if isinstance(by, (tuple, list)) else "tp_size"
    assert [b.label for b in firedup.budgets(runs, by=by).budgets] == [b.label for b in firedup.budgets(runs, by=once).budgets]
    assert len(firedup.compare(runs, by=by).grouping.groups) == len(firedup.compare(runs, by=once).grouping.groups)


def test_plot_takes_one_run_name_as_a_str(tmp_path: Path) -> None:
    """`run="base.log"` was iterated: runs "b", "a", "s", ..."""
    other = str(SAMPLE_LOGS / "vllm-warm-start.log")
    chart = firedup.plot("timeline", [LOG, other], tmp_path / "one.svg", run="small-tp1.log")
    svg = chart.path.read_text()
    assert "small-tp1.log" in svg and "vllm-warm-start.log" not in svg


def test_a_narrow_width_is_the_narrowest_view() -> None:
    text = firedup.summary(LOG, width=1)
    assert text is not None and "small-tp1.log" in text.replace("\n", "")


# --- wait and replay are library calls too (issue 41): the CLI only parses and prints ------------


def test_wait_is_a_library_call(tmp_path: Path) -> None:
    import io

    out, err = io.StringIO(), io.StringIO()
    code = firedup.wait(READY, timeout=0, out=out, err=err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().startswith("READY in ")
    assert "one check of what is there now" in " ".join(err.getvalue().split())
    record = tmp_path / "record.json"
    assert firedup.wait(READY, timeout="0", record=record, quiet=True, out=io.StringIO(), err=io.StringIO()) == 0
    assert json.loads(record.read_text())["exit_code"] == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "nothing to wait for"),
    ({"url": "http://127.0.0.1:0/health"}, "port 0"),
    ({"url": "http://127.0.0.1:1/x", "timeout": -1}, "--timeout"),
    ({"url": "http://127.0.0.1:1/x", "timeout": "soon"}, "--timeout 'soon'"),
    ({"url": "http://127.0.0.1:1/x", "stall_after": 0}, "--stall-after"),
    ({"url": "http://127.0.0.1:1/x", "url_grace": float("nan")}, "--url-grace"),
    ({"url": "http://127.0.0.1:1/x", "store": "/nonexistent/store"}, "no such directory"),
    ({"log": "-", "from_end": True}, "--from-end"),
])
def test_wait_refuses_what_cannot_be_waited_for(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(firedup.UsageError, match=re.escape(message)):
        firedup.wait(**kwargs)


def test_replay_is_a_library_call(tmp_path: Path) -> None:
    import io

    out, err = tmp_path / "out.log", io.StringIO()
    code = firedup.replay(READY, out, speed=1e6, port=0, hold=0, err=err)
    assert code == 0, err.getvalue()
    assert out.read_bytes().count(b"\n") == READY.read_bytes().count(b"\n")
    assert "the server gets ready" in err.getvalue()
    with pytest.raises(firedup.UsageError, match="--speed"):
        firedup.replay(READY, out, speed=0)
    with pytest.raises(firedup.UsageError, match="--port"):
        firedup.replay(READY, out, port=70000)

"""firedup.load / Runs: schemas, figures against the log text, dedupe, lazy import."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import firedup
from conftest import SAMPLE_LOGS
from firedup.tables.frames import (
    FLAG_TYPES,
    MILESTONE_SCHEMA,
    PHASE_SCHEMA,
    RUN_SCHEMA,
    Runs,
    from_runs,
    phase_seconds,
    summary,
)
from firedup.tables.load import load
from logmaker import Spec, fleet, ready_seconds_by_regex, write


def test_frames_have_the_documented_schemas(fleet_logs: Path) -> None:
    runs = load([str(fleet_logs)])
    for column, dtype in RUN_SCHEMA.items():
        assert runs.runs.schema[column] == dtype, column
    assert dict(runs.phases.schema) == PHASE_SCHEMA
    assert dict(runs.milestones.schema) == MILESTONE_SCHEMA
    assert runs.runs.height == 12
    assert runs.runs["run_id"].n_unique() == 12


def test_time_to_ready_matches_the_log_text(fleet_logs: Path) -> None:
    runs = load([str(fleet_logs)])
    got = dict(zip(runs.runs["source"].to_list(), runs.runs["ready_seconds"].to_list(), strict=True))
    for path in sorted(fleet_logs.glob("*.log")):
        assert got[str(path)] == ready_seconds_by_regex(path), path.name
    assert got[str(fleet_logs / "prod-oom.log")] is None  # crashed: no time to ready


def test_phase_seconds_match_the_generator_truth(fleet_logs: Path, tmp_path: Path) -> None:
    truth = fleet(tmp_path)
    runs = load([str(tmp_path)])
    wide = phase_seconds(runs).join(runs.runs.select("run_id", "source"), on="run_id")
    for row in wide.iter_rows(named=True):
        name = Path(row["source"]).name
        if truth[name]["ready_seconds"] is None:
            continue
        for phase in ("load_weights", "cuda_graph", "draft.cuda_graph", "warmup", "launch"):
            assert row.get(phase, 0.0) == pytest.approx(float(truth[name].get(phase) or 0.0)), (name, phase)


def test_available_memory_is_read_from_the_lines(fleet_logs: Path) -> None:
    runs = load([str(fleet_logs / "prod-0.log")])
    text = (fleet_logs / "prod-0.log").read_text()
    stated = [float(v) for v in re.findall(r"avail(?:able_gpu)?_?mem=([\d.]+) GB", text.replace("avail mem=", "avail_mem="))]
    got = runs.milestones["avail_mem_gb"].drop_nulls().to_list()
    assert sorted(got) == sorted(stated)


def test_flags_are_columns_with_types(tmp_path: Path) -> None:
    write(tmp_path / "a.log", Spec(datetime(2026, 1, 5, 8), extra_flags={"chunked_prefill_size": 8192,
                                                                        "json_model_override_args": "{}"}))
    write(tmp_path / "b.log", Spec(datetime(2026, 1, 6, 8), extra_flags={"chunked_prefill_size": 4096,
                                                                        "json_model_override_args": [1, 2]}))
    runs = load([str(tmp_path)])
    # a flag that is no common flag lives in the `flag.` namespace: never one of firedup's own columns
    assert runs.runs.schema["flag.chunked_prefill_size"] == pl.Int64
    assert sorted(runs.runs["flag.chunked_prefill_size"].to_list()) == [4096, 8192]
    # mixed types across runs: kept as JSON text, never dropped
    assert runs.runs.schema["flag.json_model_override_args"] == pl.Utf8
    assert sorted(runs.runs["flag.json_model_override_args"].to_list()) == ["[1, 2]", "{}"]
    assert runs.flag_columns[: len(FLAG_TYPES)] == list(FLAG_TYPES)


def test_the_same_log_under_two_paths_counts_once(fleet_logs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy-of-prod-0.log"
    copy.write_bytes((fleet_logs / "prod-0.log").read_bytes())
    runs = load([str(fleet_logs / "prod-0.log"), str(copy)])
    assert runs.runs.height == 1
    single = load([str(fleet_logs / "prod-0.log")])
    assert runs.phases.height == single.phases.height
    assert runs.milestones.height == single.milestones.height


def test_a_restart_is_two_runs_of_one_source(tmp_path: Path) -> None:
    start = datetime(2026, 2, 1, 10)
    crashed = Spec(start, crash_in="cuda_graph", cuda_graph=200)
    again = Spec(start + timedelta(minutes=30), cuda_graph=300)
    write(tmp_path / "restart.log", crashed, again)
    runs = load(str(tmp_path / "restart.log"))
    assert runs.runs["run_index"].to_list() == [0, 1]
    assert runs.runs["outcome"].to_list() == ["crashed", "ready"]
    assert runs.runs["run_id"].n_unique() == 2


def test_summary_has_phase_columns_and_varying_flags(fleet_logs: Path) -> None:
    frame = summary(load([str(fleet_logs)]))
    assert "cuda_graph_s" in frame.columns and "disable_cuda_graph" in frame.columns
    assert "port" not in frame.columns  # identity flags never count as differing


def test_a_flag_one_engine_does_not_have_does_not_differ_because_of_it() -> None:
    """SGLang and vLLM in one folder: `ep_size` (SGLang's) is not a difference, tp_size is."""
    from conftest import SAMPLE_LOGS
    from firedup.tables.frames import varying_flags
    from firedup.tables.runs_text import runs_summary_text

    sglang = [str(SAMPLE_LOGS / f"{n}.log") for n in ("prod-tp8-eagle3-01", "debug-tp8-eagle3-01", "small-tp1")]
    vllm = [str(SAMPLE_LOGS / f"vllm-tp2-{n}.log") for n in ("eager", "compiled")]
    alone = load(sglang)
    mixed = load(sglang + vllm)
    before = set(varying_flags(alone.runs, alone.flag_columns))
    after = set(varying_flags(mixed.runs, mixed.flag_columns))
    assert {"ep_size", "attention_backend", "mem_fraction_static"}.isdisjoint(after)
    assert {"tp_size", "disable_cuda_graph", "enable_torch_compile", "flag.enforce_eager"} <= after
    # what differed between the SGLang runs still does (small-tp1 is 0.5.12: flags it lacks count)
    assert before <= after and "flag.attn_dp_size" in before
    # and `firedup runs` names the step, not vLLM's timer around it
    text = runs_summary_text(mixed)
    [compiled] = [line for line in text.splitlines() if "vllm-tp2-compiled.log" in line]
    import json

    from firedup.core.units import fmt_duration

    truth = json.loads((SAMPLE_LOGS / "truth.json").read_text())["files"]["vllm-tp2-compiled.log"]["runs"][0]
    compile_s = truth["reported"]["torch_compile"]["TP0"]
    assert f"torch_compile {fmt_duration(compile_s)}" in compiled
    assert "engine_init" not in compiled and "model_loading" not in compiled


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_runs_table_fits_the_terminal_width(width: int) -> None:
    """sample_logs' table is over 200 columns: narrower, every run keeps its name, outcome and time,
    and one line counts the flag columns left out and where they are."""
    from conftest import SAMPLE_LOGS
    from firedup.core.units import fmt_duration
    from firedup.tables.frames import varying_flags
    from firedup.tables.runs_text import runs_summary_text

    runs = load([str(SAMPLE_LOGS)])
    assert len(runs_summary_text(runs).splitlines()[1]) > 200
    answer, *lines = runs_summary_text(runs, width=width).splitlines()  # the answer first, then the table
    assert answer.startswith("22 runs: ") and len(answer) <= width
    assert all(len(line) <= width for line in lines), width
    frame = runs.runs
    for row, run in zip(lines[1:], frame.iter_rows(named=True), strict=False):
        name = Path(run["source"]).name + (f" #{run['run_index'] + 1}" if run["run_index"] else "")
        time = fmt_duration(run["ready_seconds"] if run["outcome"] == "ready" else run["seconds_to_end"])
        assert row.startswith(name + " ") and run["outcome"] in row and time in row
    every = varying_flags(frame, runs.flag_columns)
    shown = [flag for flag in every if flag in lines[0].split()]
    [left_out] = [line for line in lines if line.startswith("(left out:")]
    assert f"{len(every) - len(shown)} flags that differ" in left_out and "--format csv" in left_out
    assert ("biggest phase" in lines[0]) != ("biggest phases" in left_out)


def test_runs_table_puts_the_flags_that_split_the_runs_most_first() -> None:
    from conftest import SAMPLE_LOGS
    from firedup.tables.runs_text import runs_summary_text

    runs = load([str(SAMPLE_LOGS)])
    header = runs_summary_text(runs).splitlines()[1].split()
    flags = [word for word in header if word in runs.flag_columns]
    switches = [f for f in flags if runs.runs[f].dtype == pl.Boolean()]
    assert flags[:len(switches)] == switches and "disable_cuda_graph" in switches  # on/off switches first
    for kind in (switches, flags[len(switches):]):
        off_the_most_common = [runs.runs.height - runs.runs[f].value_counts()["count"].max() for f in kind]
        assert off_the_most_common == sorted(off_the_most_common, reverse=True)
    assert len({runs.runs.height - runs.runs[f].value_counts()["count"].max() for f in flags}) > 1


def test_runs_table_at_80_columns_keeps_the_switch_the_runs_differ_by() -> None:
    """Regression: at 80 columns the table dropped every flag column, disable_cuda_graph included."""
    from conftest import SAMPLE_LOGS
    from firedup.tables.runs_text import runs_summary_text

    lines = runs_summary_text(load([str(SAMPLE_LOGS)]), width=80).splitlines()[1:]  # after the answer
    assert lines[0].split()[-1] == "disable_cuda_graph" and all(len(line) <= 80 for line in lines)


def test_runs_table_cuts_long_names_in_the_middle() -> None:
    """The corpus' file names are up to 70 characters: at 80 columns each keeps its start and its end."""
    from conftest import corpus_logs
    from firedup.tables.runs_text import runs_summary_text

    logs = corpus_logs("sglang")
    if not logs:
        pytest.skip("no corpus (../shared)")
    runs = load([str(p) for p in logs])
    lines = runs_summary_text(runs, width=80).splitlines()[1:]  # after the answer
    assert all(len(line) <= 80 for line in lines)
    assert f"(sources in {logs[0].parent}/)" in lines
    cut = 0
    for row, run in zip(lines[1:], runs.runs.iter_rows(named=True), strict=False):
        name = Path(run["source"]).name
        head, _, tail = row.split("  ")[0].removesuffix(f" #{run['run_index'] + 1}").partition("…")
        assert name.startswith(head) and name.endswith(tail) and len(head) >= 8
        cut += bool(tail)
    assert cut > len(logs) / 2


def test_bad_input_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "broken.log.gz").write_bytes(b"\x1f\x8b then not gzip at all")  # gzip magic, bad stream
    write(tmp_path / "ok.log", Spec(datetime(2026, 1, 5, 8)))
    runs = load([str(tmp_path)])
    assert runs.runs.height == 1
    assert [Path(e.source).name for e in runs.errors] == ["broken.log.gz"]


def test_import_firedup_stays_free_of_polars() -> None:
    code = "import sys, firedup; firedup.Runs; assert 'polars' in sys.modules; print('ok')"
    lazy = ("import sys, firedup; firedup.load; firedup.Run; "
            "assert 'polars' not in sys.modules, 'polars imported'; print('ok')")
    for snippet in (lazy, code):
        out = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
    assert firedup.load is firedup.api.load  # the public one, a thin layer over
    assert firedup.Runs is Runs


def test_the_content_hash_is_the_bytes_read_whatever_the_source_is_called(tmp_path: Path) -> None:
    """Regression: run ids came from re-reading the file by `run.source`, so a run shown by
    another name (the report's display paths) got another id. The hash is now taken when the
    file is read and travels with the run."""
    import hashlib

    from firedup.timeline.pipeline import parse_paths

    log = tmp_path / "a.log"
    write(log, Spec(datetime(2026, 11, 5, 8, 0, 0)))
    read_bytes = log.read_bytes()
    result = parse_paths([str(log)], content_hash=True)
    expected = hashlib.sha256(read_bytes).hexdigest()
    assert [run.content_hash for run in result.runs] == [expected]
    log.write_bytes(read_bytes + b"appended after the read\n")  # what a re-read would have hashed
    tables = from_runs(result.runs, names={str(log): "shown/as/this.log"})
    assert tables.runs["content_hash"].to_list() == [expected]
    assert tables.runs["run_id"].to_list() == [f"{expected[:16]}-0"]
    assert tables.runs["source"].to_list() == tables.phases["source"].unique().to_list() == ["shown/as/this.log"]
    assert result.runs[0].source == str(log)  # the run keeps its own name


# --- flags that are not what a column expects (issue 33) ---------------------------------------------

_VLLM_ARGS = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"


def _vllm_runs(folder: Path, *flags: dict[str, object]) -> Path:
    from conftest import SAMPLE_LOGS

    text = (SAMPLE_LOGS / "vllm-warm-start.log").read_text()
    assert _VLLM_ARGS in text
    folder.mkdir(parents=True, exist_ok=True)
    for i, extra in enumerate(flags):
        stated = "".join(f", {k!r}: {v!r}" for k, v in extra.items())
        (folder / f"r{i}.log").write_text(text.replace(_VLLM_ARGS, _VLLM_ARGS[:-1] + stated + "}"))
    return folder


def test_a_flag_named_like_one_of_firedups_columns_never_takes_its_place(tmp_path: Path) -> None:
    """`load_weights_s=7` was shown as the load_weights phase, and the phase became `load_weights_s_right`;
    `outcome` and `flag.outcome` (two keys, one dot apart) were one column and every view failed."""
    from firedup.tables.frames import summary

    folder = _vllm_runs(tmp_path / "runs", {"load_weights_s": 7, "warmup_s": 5, "outcome": "x", "flag.outcome": 1},
                        {"load_weights_s": 8, "warmup_s": 6, "outcome": "y", "flag.outcome": 2})
    runs = load([str(folder)])
    table = summary(runs)
    assert table["outcome"].to_list() == ["ready", "ready"]
    assert table["load_weights_s"].to_list() == pytest.approx([5.89, 5.89], abs=0.5)  # the phase, not the flag
    assert sorted(table["flag.load_weights_s"].to_list()) == [7, 8]
    assert sorted(runs.runs["flag.outcome"].to_list()) == ["x", "y"]
    assert sorted(runs.runs["flag.flag.outcome"].to_list()) == [1, 2]
    assert not any(c.endswith("_right") for c in table.columns)


def test_a_flag_is_typed_per_key_whatever_its_values(tmp_path: Path) -> None:
    """A string where a number was, an integer beyond 64 bits, lists and dicts: one column each."""
    folder = _vllm_runs(tmp_path / "runs", {"knob": 1, "big": 2, "mixed": [1]}, {"knob": "abc", "big": 10**30,
                                                                                  "mixed": {"a": 1}})
    (run0, run1) = sorted(load([str(folder)]).runs.iter_rows(named=True), key=lambda r: r["source"])
    assert (run0["flag.knob"], run1["flag.knob"]) == ("1", "abc")
    assert (run0["flag.big"], run1["flag.big"]) == (2, None)  # 10**30 is dropped where it is read, with a note
    assert (run0["flag.mixed"], run1["flag.mixed"]) == ("[1]", '{"a": 1}')


def test_a_key_written_as_a_formula_is_never_a_csv_header_formula(tmp_path: Path) -> None:
    import csv
    import io

    from firedup import api

    folder = _vllm_runs(tmp_path / "runs", {'=HYPERLINK("http://evil.example","x")': 1, "@SUM(A1)": 1},
                        {'=HYPERLINK("http://evil.example","x")': 2, "@SUM(A1)": 2})
    text = api.summary(api.load([str(folder)]), "csv")
    assert text is not None
    header = next(csv.reader(io.StringIO(text)))
    assert 'flag.=HYPERLINK("http://evil.example","x")' in header and "flag.@SUM(A1)" in header
    assert not any(h.startswith(("=", "+", "-", "@")) for h in header)


def test_many_flags_are_columns_gathered_in_one_pass(tmp_path: Path) -> None:
    """20,000 flags took 40 s in `runs --format csv` (each flag looked up the list of columns);
    benchmarks/bench_flags.py times it. Here: every flag is a column, each with its value."""
    from firedup.tables.frames import summary

    folder = _vllm_runs(tmp_path / "runs", {f"k{i}": i for i in range(3000)}, {f"k{i}": -i for i in range(3000)})
    table = summary(load([str(folder)]))
    assert sum(1 for c in table.columns if c.startswith("flag.k")) == 2999  # k0 is 0 in both: it does not differ
    assert sorted(table["flag.k2999"].to_list()) == [-2999, 2999]


# --- flags are their own namespace, typed per key (issue 42, class 4) -------------------------------

_FLAG_NAMES = st.one_of(
    st.sampled_from(["watchdog_s", "load_weights_s", "total_s", "cuda_graph_s", "unattributed_s", "outcome",
                     "source", "run_id", "first_ts", "tp_size", "model_path", "seconds_to_end", "x_s"]),
    st.from_regex(r"[a-z][a-z0-9_]{0,10}(_s)?", fullmatch=True))
_FLAG_VALUES = st.one_of(st.text(max_size=6).map(repr), st.integers(-10, 10**6).map(str),
                         st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
                         st.sampled_from(["None", "True", "False", "[1, 2]", "{'a': 1}"]))


def _with_flags(text: str, flags: dict[str, str]) -> str:
    extra = "".join(f"{k}={v}, " for k, v in flags.items())
    return text.replace("server_args=ServerArgs(", "server_args=ServerArgs(" + extra, 1)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_FLAG_NAMES, min_size=1, max_size=4, unique=True),
       values=st.lists(st.lists(_FLAG_VALUES, min_size=4, max_size=4), min_size=2, max_size=3))
def test_flags_of_any_name_and_type_break_no_table(tmp_path_factory: pytest.TempPathFactory, names: list[str],
                                                   values: list[list[str]]) -> None:
    """A flag whose name ends in `_s` or is one of firedup's columns, a string in one log and a
    number in another: `runs` ended in "'<' not supported between 'str' and 'float'"."""
    from firedup.tables.runs_text import runs_summary_text

    folder = tmp_path_factory.mktemp("flags")
    text = (SAMPLE_LOGS / "small-tp1.log").read_text(encoding="utf-8")
    for i, row in enumerate(values):
        flags = {"firedup_test_run": str(i), **dict(zip(names, row, strict=False))}  # no two logs alike
        (folder / f"run{i}.log").write_text(_with_flags(text, flags), encoding="utf-8")
    runs = firedup.load([str(folder)])
    assert len(runs) == len(values)
    assert runs_summary_text(runs, width=80)
    for by in (None, names[0]):
        try:
            firedup.compare(runs, by=by)
            firedup.budgets(runs, by=by)
        except firedup.FiredupError:
            pass  # a flag no run states as a group key: firedup's own answer


def test_a_flag_named_like_a_phase_column_is_no_phase(tmp_path: Path) -> None:
    from firedup.tables.runs_text import runs_summary_text

    text = (SAMPLE_LOGS / "small-tp1.log").read_text(encoding="utf-8")
    (tmp_path / "a.log").write_text(_with_flags(text, {"watchdog_s": "'abc'", "load_weights_s": "'x'"}))
    (tmp_path / "b.log").write_text(_with_flags(text, {"watchdog_s": "5", "load_weights_s": "3.0"}))
    shown = runs_summary_text(firedup.load([str(tmp_path)]), width=120)
    assert "watchdog" not in shown.split("biggest")[-1].split("\n")[1]


def test_a_flag_keyed_by_a_tuple_or_holding_a_set_is_json_text(tmp_path: Path) -> None:
    """A flag printed `{(1, 2): 3}` (a key JSON cannot hold) made `firedup runs` raise TypeError;
    a set was written as its Python text. Both are JSON now: the key as its text, the set sorted."""
    write(tmp_path / "a.log", Spec(datetime(2026, 1, 5, 8), extra_flags={"odd": {(1, 2): 3},
                                                                        "domains": {"b.com", "a.com"}}))
    write(tmp_path / "b.log", Spec(datetime(2026, 1, 6, 8), extra_flags={"odd": 1, "domains": "x"}))
    runs = load([str(tmp_path)])
    assert sorted(runs.runs["flag.odd"].to_list()) == ['1', '{"(1, 2)": 3}']
    assert sorted(runs.runs["flag.domains"].to_list()) == ['["a.com", "b.com"]', 'x']

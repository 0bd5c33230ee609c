"""The commands over many runs (runs, compare, budget, ingest, export), run as a user runs them."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import polars as pl

from logmaker import ready_seconds_by_regex, ready_times
from tracecheck import validate_trace

ROOT = Path(__file__).resolve().parents[1]


def firedup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=full,
                          timeout=120, check=False)


def test_runs_table_fits_80_columns_when_not_a_terminal(tmp_path: Path) -> None:
    out = firedup("runs", str(ROOT / "sample_logs"), env={"COLUMNS": ""})
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    assert "flags that differ" in out.stdout.splitlines()[-2]
    # a file is not a terminal to fit: it gets every column
    firedup("runs", str(ROOT / "sample_logs"), "-o", str(tmp_path / "runs.txt"), env={"COLUMNS": ""})
    assert {"disable_cuda_graph", "mem_fraction_static"} <= set((tmp_path / "runs.txt").read_text().split())


def test_runs_table_and_files(fleet_logs: Path, tmp_path: Path) -> None:
    out = firedup("runs", str(fleet_logs), env={"COLUMNS": "250"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("12 runs: 11 ready, slowest ")  # the answer first
    assert lines[1].split()[:4] == ["source", "outcome", "to", "ready"]
    assert "disable_cuda_graph" in lines[1]
    assert any("prod-oom.log" in line and "crashed: oom in cuda_graph" in line for line in lines)
    out = firedup("runs", str(fleet_logs), "--format", "parquet", "-o", str(tmp_path / "runs.parquet"))
    assert out.returncode == 0, out.stderr
    frame = pl.read_parquet(tmp_path / "runs.parquet")
    got = dict(zip(frame["source"].to_list(), frame["ready_seconds"].to_list(), strict=True))
    assert got == {str(p): ready_seconds_by_regex(p) for p in fleet_logs.glob("*.log")}
    out = firedup("runs", str(fleet_logs), "--format", "json")
    assert len(json.loads(out.stdout)) == 12
    out = firedup("runs", str(fleet_logs), "--format", "csv", "-o", str(tmp_path / "runs.csv"))
    assert pl.read_csv(tmp_path / "runs.csv").height == 12


def test_compare_headline_and_json(fleet_logs: Path) -> None:
    out = firedup("compare", str(fleet_logs), "--by", "disable_cuda_graph")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("debug (disable_cuda_graph=True) ready in a median of")
    headline = " ".join(out.stdout.split("\n\n")[0].split())  # wrapped to the terminal's 80 columns
    assert "cuda_graph and draft.cuda_graph explain" in headline and all(len(line) <= 80 for line in out.stdout.splitlines())
    dashed = firedup("compare", str(fleet_logs), "--by", "disable-cuda-graph")  # as typed on the command line
    assert dashed.returncode == 0 and dashed.stdout == out.stdout, dashed.stderr
    data = json.loads(firedup("compare", str(fleet_logs), "--by", "disable_cuda_graph", "--json").stdout)
    medians = {json.dumps(g["key"]): g["total_seconds"]["median"] for g in data["groups"]}
    assert medians == {'{"disable_cuda_graph": true}': statistics.median(ready_times(fleet_logs, "debug")),
                       '{"disable_cuda_graph": false}': statistics.median(ready_times(fleet_logs, "prod"))}
    assert data["deltas"][0]["main_phase"] == "cuda_graph"


def test_unknown_flag_is_a_usage_error(fleet_logs: Path) -> None:
    out = firedup("compare", str(fleet_logs), "--by", "tp_size,cuda_graphs")
    assert out.returncode == 2
    assert "unknown flag 'cuda_graphs'" in out.stderr and "disable_cuda_graph" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = firedup("budget", str(ROOT / "sample_logs"), "--by", "disable_cuda_grap")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    [line] = out.stderr.strip().splitlines()
    assert "unknown flag 'disable_cuda_grap'" in line and "did you mean disable_cuda_graph" in line
    assert len(line) < 250  # the closest names, not the hundreds of flags sample_logs states


def test_budget_json_and_risk(fleet_logs: Path) -> None:
    out = firedup("budget", str(fleet_logs), "--by", "disable_cuda_graph", "--risk", "0.05", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    prod = next(g for g in data["groups"] if g["key"] == {"disable_cuda_graph": False})
    assert prod["budget_seconds"] >= max(ready_times(fleet_logs, "prod")) and prod["risk"] == 0.05
    assert prod["n"] == 5 and prod["runs_needed_for_risk"] == 19
    assert "startupProbe" in prod["snippets"]["kubernetes"]
    bad = firedup("budget", str(fleet_logs), "--risk", "2")
    assert bad.returncode == 2 and "between 0 and 1" in bad.stderr
    text = firedup("budget", str(fleet_logs), "--snippet", "none").stdout
    assert " from launch; risk " in text and "startupProbe" not in text


def test_broken_file_still_compares_and_exits_1(fleet_logs: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.log.gz").write_bytes(b"\x1f\x8b not really")
    out = firedup("compare", str(fleet_logs), str(tmp_path / "bad.log.gz"))
    assert out.returncode == 1
    assert "bad.log.gz" in out.stderr
    assert "unreadable" in out.stdout and "debug (disable_cuda_graph=True)" in out.stdout


def test_ingest_then_commands_read_the_store(fleet_logs: Path, tmp_path: Path) -> None:
    env = {"FIREDUP_STORE": str(tmp_path / "store")}
    first = firedup("ingest", str(fleet_logs), env=env)
    assert first.returncode == 0, first.stderr
    # the answer first; it wraps at 80 columns between words, the path kept whole
    assert " ".join(first.stdout.split()).startswith(f"12 runs added to {tmp_path / 'store'} from 12 files")
    again = firedup("ingest", str(fleet_logs / "prod-0.log"), env=env)
    assert "already in the store" in again.stdout and "0 runs added" in again.stdout
    out = firedup("compare", "--store", "--by", "disable_cuda_graph", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert [g["n"] for g in json.loads(out.stdout)["groups"]] == [5, 5]
    out = firedup("runs", f"--store={tmp_path / 'store'}", str(fleet_logs / "prod-0.log"))
    assert len([line for line in out.stdout.splitlines() if ".log" in line]) == 12


def test_export_trace(fleet_logs: Path, tmp_path: Path) -> None:
    out = firedup("export", str(fleet_logs), "--format", "chrome-trace", "-o", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr
    validate_trace(json.loads((tmp_path / "t.json").read_text()))


def test_no_input_at_all() -> None:
    out = firedup("compare")
    assert out.returncode == 2 and "--store" in out.stderr


def test_empty_store_says_how_to_fill_it(tmp_path: Path) -> None:
    out = firedup("budget", f"--store={tmp_path / 'empty'}")
    assert out.returncode == 5  # nothing to budget: a data condition (EXIT_NO_DATA), not a success
    assert out.stdout.strip() == "no server startup found in the input"
    assert "holds no runs yet" in out.stderr and "firedup ingest" in out.stderr


def test_runs_from_the_store_are_in_time_order_with_their_date(tmp_path: Path) -> None:
    """Regression: `runs --store` listed the store's runs in file order without a date."""
    from conftest import SAMPLE_LOGS

    store = tmp_path / "store"
    assert firedup("ingest", str(SAMPLE_LOGS), f"--store={store}").returncode == 0
    out = firedup("runs", f"--store={store}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("22 runs: ") and lines[1].startswith("started ")
    assert all(len(line) <= 80 for line in lines)
    stamps = [line[:16] for line in lines[1:] if line[:2] == "20"]
    assert len(stamps) == len(json.loads(firedup("runs", f"--store={store}", "--format", "json").stdout))
    assert stamps == sorted(stamps) and stamps[0] != stamps[-1]

"""Smoke run of benchmarks/throughput.py at a tiny size: it generates, times and reports.

Only that the script works is tested here; its figures are read by people (benchmarks/README.md),
never asserted: a timed test on a shared machine could not be trusted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_throughput_script_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "throughput.py"), "--size", "2MB", "--files", "4",
         "--file-size", "60kB", "--runs", "1", "--cache", str(tmp_path / "cache"), "--json", str(out),
         "--parts", "long,many,startup,vllm", "--vllm-size", "1MB"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())
    assert figures["long"]["bytes"] >= 1_500_000
    assert figures["long"]["peak_rss_mb"] > 0 and figures["many"]["files"] == 4
    assert set(figures["startup"]) >= {"--help", "parse small.log"}
    assert figures["vllm"]["bytes"] >= 1_000_000 and figures["vllm"]["firedup_s"] > 0
    # the vLLM log is a start-up behind kubectl and then its traffic, every line stamped
    from firedup.timeline.pipeline import parse_paths

    vllm_log = tmp_path / "cache" / "vllm-long-1000000-s0.log"
    runs = parse_paths([str(vllm_log)]).as_contract()["runs"]
    assert [(r["engine"], r["outcome"]) for r in runs] == [("vllm", "ready")]
    tail = vllm_log.read_bytes().rstrip().rsplit(b"\n", 3)[1:]
    assert all(line[:2] == b"20" and b"Z \x1b[1;36m(APIServer pid=1)" in line for line in tail)
    for line in ("1. long log", "2. folder of 4 logs", "3. firedup --help", "machine: ", "   CPU, long log",
                 "6. vLLM behind kubectl 1 MiB"):
        assert line in proc.stdout
    assert figures["machine"]["cores"] >= 1 and figures["long"]["firedup_cpu_s"] > 0
    if figures["rg"] is None:
        assert "ripgrep (rg) not found" in proc.stderr
    else:
        assert figures["long"]["ratio"] > 0
        # the floor (scan_floor.py) is timed beside rg for both inputs
        for part, label in (("long", "long log"), ("many", "folder")):
            assert figures[part]["floor"]["floor_s"] > 0 and figures[part]["floor"]["ratio"] > 0
            assert f"   floor, {label}: scan only" in proc.stdout


def test_scan_floor_fails_loudly_when_a_scanner_fails(tmp_path: Path) -> None:
    """A floor that scanned nothing must not pass for a fast one: a scanner that raises makes
    the script exit 2 (1 is what `throughput.run` accepts, for rg -c finding nothing)."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scan_floor.py"), str(tmp_path / "absent.log"),
                           "--jobs", "2"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "absent.log" in proc.stderr


def test_scan_floor_dumps_the_databases_patterns(tmp_path: Path) -> None:
    """`--dump-patterns` writes what `Prefilter` compiles, one a line, the rule literals first
    (what `hs_host_scan.c` compiles for the host), and says how many of them are literals."""
    from firedup.formats import get_format
    from firedup.read.prefilter import for_format

    out = tmp_path / "patterns.txt"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scan_floor.py"), "--dump-patterns", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    patterns = out.read_text().splitlines()
    pre = for_format(get_format("sglang"))
    assert f"{len(patterns)} patterns" in proc.stdout and f"the first {pre.literal_count} are" in proc.stdout
    assert len(patterns) > pre.literal_count > 0 and all(patterns)


def test_probes_cliff_input_has_a_whole_ready_line(tmp_path: Path) -> None:
    """The probe cliff's ready line follows a whole line of the sample log: it once followed a
    header the split cut mid-line, a line with two stamps that read as a harness's re-logged
    line, and the benchmark timed that instead of probes after ready."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from hostile_sweep_io import _probes_log
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    lines = _probes_log(tmp_path / "probes.log", 10, None, "/health").read_text().splitlines()
    ready = [line for line in lines if "fired up" in line]
    assert ready == ["[2026-11-12 14:06:00] The server is fired up and ready to roll!"]
    assert len(lines) - lines.index(ready[0]) - 1 == 10


def test_throughput_quick_mode_is_the_guard_with_a_baseline(tmp_path: Path) -> None:
    """`--quick` measures the long log and the folder only (no per-file profile), here at a
    tiny size, with a baseline's figures beside ours."""
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "throughput.py"), "--quick", "--size", "2MB", "--files", "4",
         "--file-size", "60kB", "--runs", "1", "--cache", str(tmp_path / "cache"), "--json", str(out),
         "--baseline", str(ROOT / "src")],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())
    assert figures["quick"] and set(figures) >= {"long", "many"} and "startup" not in figures
    assert "per_file_ms" not in figures["many"] and "floor" not in figures["long"]
    assert figures["long"]["before_s"] > 0 and figures["many"]["vs_before"] > 0
    assert "now/before" in proc.stdout


@pytest.mark.slow
def test_fleet_script_runs_at_a_tiny_size(tmp_path: Path) -> None:
    """benchmarks/fleet.py: its own S3 server and local Ray clusters, every case (a store in a
    folder and in a bucket), figures out."""
    from _s3 import need

    need("ray", "moto", "s3fs", "boto3")
    out = tmp_path / "fleet.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fleet.py"), "--files", "12", "--runs", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    cases = {(c["input"], c["store"], c["engine"], c["workers"]): c for c in figures["cases"]}
    assert set(cases) == {(i, s, e, w) for i in ("local", "s3") for s in ("local", "s3") for e in ("ray", "pool")
                          for w in (1, 2)}
    assert all(c["files"] == 12 and c["runs_added"] == 12 and c["files_per_s"] > 0 for c in cases.values())
    assert "s3     s3     ray         2     12" in proc.stdout


def test_hostile_sweep_runs_quick_and_counts(tmp_path: Path) -> None:
    """benchmarks/hostile_sweep_values.py --quick, two classes: it tries inputs and prints its
    table; its counts are read by people (the issue's closing note), zero on this code."""
    out = tmp_path / "sweep.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hostile_sweep_values.py"), "--quick",
                           "--classes", "2,9", "--json", str(out)], capture_output=True, text=True, timeout=600,
                          check=False)
    figures = json.loads(out.read_text())
    assert figures["inputs"]["2 flags"] > 10 and figures["inputs"]["9 library"] > 10
    assert "class        inputs commands       hangs" in proc.stdout
    assert proc.returncode == 0 and figures["findings"] == [], proc.stdout[-3000:]


def test_flags_benchmark_runs_at_a_tiny_size() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_flags.py"), "--counts", "100,200",
                           "--runs", "1"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()[1:]] == ["0", "100", "200"]


def test_wait_cpu_script_runs_its_nvml_case() -> None:
    """benchmarks/wait_cpu.py --short, the one case with the tree of 9 and the stand-in NVML: it
    runs and reports."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "wait_cpu.py"), "--short", "--only", "NVML"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "wait: idle log + --pid tree of 9 + NVML" in proc.stdout and "sleep (baseline)" not in proc.stdout
    assert "worst steady cost of wait:" in proc.stdout


@pytest.mark.slow
def test_the_hostile_io_sweep_runs_and_finds_nothing(tmp_path: Path) -> None:
    """benchmarks/hostile_sweep_io.py, its lying servers and processes (class 6), quick: every
    case ok on this checkout (the full sweep's counts are in benchmarks/README.md)."""
    out = tmp_path / "cases.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hostile_sweep_io.py"), "--quick", "--classes", "6",
                           "--json", str(out)], capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = json.loads(out.read_text())
    assert len(cases) >= 30 and all(case["outcome"] == "ok" for case in cases)
    assert "6 servers, processes that lie" in proc.stdout


def test_the_round_three_sweep_runs_quick_and_finds_nothing() -> None:
    """benchmarks/hostile_sweep_round3.py --quick: every class tried, every count zero on this
    checkout (the full sweep's counts are in benchmarks/README.md)."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hostile_sweep_round3.py"), "--quick"],
                          capture_output=True, text=True, timeout=900, check=False)
    rows = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()[1:9]}
    assert sorted(rows) == ["1", "2", "3", "4", "5", "6", "7", "all"], proc.stdout[-3000:]
    assert all(int(row[0]) > 0 for row in rows.values())
    assert proc.returncode == 0 and rows["all"][1:] == ["0", "0", "0", "0"], proc.stdout[-3000:]

"""The answer first (issue 31): the first line of every command's text output is its answer.

Each command runs on `sample_logs/` (a file of it where the command takes one) at 80 columns,
and its first line must match the shape of that command's answer: a count of outcomes for
`parse` and `runs`, the verdict for `timeline`, `check` and `wait`, the headline for `compare`,
a budget per group for `budget`, what was written for `report`, `plot`, `export`, `ingest`
and `synth`, and how the re-enacted start-up ends for `replay`. Derivations and per-file lists
come after it (or behind -v).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

S = "sample_logs"  # run from the checkout (`monkeypatch.chdir(ROOT)`), as the README's examples are
DURATION = r"(?:\d+(?:\.\d)? (?:ms|s)|\d+ min \d\d s|\d+ h \d\d min)"
VERDICT = rf"(?:READY in {DURATION}|CRASHED \(\w+\)(?: in \S+)? after {DURATION}|HUNG\b|ENGINE READY in |INCOMPLETE: )"

# (command line with {tmp} for a scratch folder, the first line's pattern)
COMMANDS: list[tuple[list[str], str]] = [
    (["parse", S], rf"^22 runs: 20 ready, slowest {DURATION} \(~{DURATION} from launch\); 2 crashed"),
    (["timeline", f"{S}/debug-tp8-eagle3-01.log"], rf"^READY in {DURATION}, ~{DURATION} from launch$"),
    (["timeline", f"{S}/oom-in-cuda-graph.log"], rf"^CRASHED \(oom\) in cuda_graph after {DURATION}, ~{DURATION} from launch$"),
    (["timeline", S], rf"^{VERDICT}"),
    (["runs", S], rf"^22 runs: 20 ready, slowest {DURATION}"),
    (["compare", S, "--by", "disable_cuda_graph"], rf"^debug \(disable_cuda_graph=True\) ready in a median of {DURATION},"),
    (["budget", S, "--by", "disable_cuda_graph"], rf"^debug \(disable_cuda_graph=True\): budget {DURATION} \(\d+ s\) from launch;"),
    (["check", f"{S}/prod-tp8-eagle3-05.log", "--history", S], rf"^PASS \S+prod-tp8-eagle3-05.log: ~{DURATION} from launch"),
    (["report", S, "-o", "{tmp}/report"], r"^wrote 22 runs to \S+/report/index\.html and report\.md \(\+\d+ charts\)$"),
    (["plot", "compare", S, "-o", "{tmp}/compare.png"], r"^wrote the compare chart of 22 runs to \S+compare\.png$"),
    (["export", S, "--format", "prometheus", "-o", "{tmp}/x.prom"], r"^wrote 22 runs to \S+x\.prom \(prometheus\)$"),
    (["export", S, "--format", "csv", "-o", "{tmp}/x.csv"], r"^wrote the phases table of 22 runs to \S+x\.csv \(csv\)$"),
    (["ingest", S, "--store", "{tmp}/store"], r"^22 runs added to \S+store from 21 files$"),
    (["synth", "{tmp}/synth", "--scenario", "small-tp1"], r"^wrote 1 log, truth\.json to "),
]


@pytest.mark.parametrize(("args", "pattern"), COMMANDS, ids=[" ".join(a[:2]).replace(S, "samples") for a, _ in COMMANDS])
def test_the_first_line_is_the_answer(args: list[str], pattern: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    # a scratch folder's long path would wrap the line that names it: such commands get the room
    monkeypatch.setenv("COLUMNS", "300" if any("{tmp}" in a for a in args) else "80")
    code, out, err = run_cli([a.replace("{tmp}", str(tmp_path)) for a in args], monkeypatch, capsys)
    assert code == 0, err
    first = out.splitlines()[0] if out else ""
    assert re.match(pattern, first), f"first line {first!r} is not the answer ({pattern})"


def test_every_run_of_timeline_opens_with_its_verdict(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Several runs: each block's first line (the lines not indented) is that run's verdict."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["timeline", S], monkeypatch, capsys)
    heads = [line for line in out.splitlines() if line and not line[0].isspace()]
    assert code == 0 and len(heads) == 22
    assert all(re.match(VERDICT, line) for line in heads), [h for h in heads if not re.match(VERDICT, h)]


def test_replay_says_first_how_the_start_up_ends(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for name, ending in (("oom-in-cuda-graph.log", "the server crashes (exit 137)"),
                         ("sglang-warm-start.log", "the server gets ready")):
        proc = subprocess.run([sys.executable, "-m", "firedup", "replay", f"{S}/{name}", "--out", str(tmp_path / name),
                               "--speed", "2000", "--port", "0", "--hold", "0"],
                              capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
        first = proc.stderr.splitlines()[0]
        assert re.match(rf"^replay: \S+{name} -> \S+: \d+ lines, \d+ s of log time in [\d.]+ s at 2000x; ", first)
        assert first.endswith(ending), first


def test_budget_by_the_debug_flag_fits_40_lines_of_80_columns(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["budget", S, "--by", "disable_cuda_graph"], monkeypatch, capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) <= 40 and all(len(line) <= 80 for line in lines), (len(lines), out)
    assert lines[0].startswith("debug (disable_cuda_graph=True): ") and "production" in lines[1] + lines[2]


def test_ingest_lists_each_file_only_under_verbose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "300")
    store = str(tmp_path / "store")
    _, quiet, _ = run_cli(["ingest", S, "--store", store], monkeypatch, capsys)
    assert len(quiet.splitlines()) == 2 and "added 1 run from" not in quiet
    _, again, _ = run_cli(["ingest", S, "--store", store, "-v"], monkeypatch, capsys)
    lines = again.splitlines()
    assert lines[0] == f"0 runs added to {store} (21 files already in the store)"
    assert sum("already in the store: " in line for line in lines[1:]) == 21


@pytest.mark.parametrize(("name", "pattern", "code"), [
    ("debug-tp8-eagle3-01.log", rf"^READY in {DURATION} by the log's clock \(line \d+\)", 0),
    ("oom-in-cuda-graph.log", rf"^CRASHED \(oom\) in cuda_graph after {DURATION}, line \d+ of\b", 3),
])
def test_wait_says_its_verdict_first_and_each_fact_once(name: str, pattern: str, code: int) -> None:
    """`wait` on a log already written: the verdict first (its first line the answer, for `head -1`;
    fitted to 80 columns like the rest), then the run,
    whose own verdict, error and hint are not said again."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "firedup", "wait", "--log", f"{S}/{name}", "--timeout", "30"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(pattern, lines[0]), lines[0]
    assert not any(re.match(VERDICT, line.strip()) for line in lines[1:]), proc.stdout  # the verdict once
    if code:
        assert sum("Capture cuda graph failed: CUDA out of memory" in line for line in lines) == 1, proc.stdout

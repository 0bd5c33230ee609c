"""`firedup check`: a CI gate. A steady run passes, a run whose weight load got slower fails with
the phase and the log line as evidence, a crash fails, and no startup in the input is exit 5."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import firedup
from _live import env
from _live import firedup as firedup_cmd
from conftest import SAMPLE_LOGS
from firedup.tables.check import judge

NEW = SAMPLE_LOGS / "prod-tp8-eagle3-05.log"
_STAMP = re.compile(r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")


@pytest.fixture
def history(tmp_path: Path) -> Path:
    folder = tmp_path / "history"
    folder.mkdir()
    for i in range(1, 5):
        shutil.copy(SAMPLE_LOGS / f"prod-tp8-eagle3-0{i}.log", folder)
    for i in range(1, 4):
        shutil.copy(SAMPLE_LOGS / f"debug-tp8-eagle3-0{i}.log", folder)
    return folder


def _slower_load(tmp_path: Path, extra: float) -> Path:
    """prod-05 with `extra` seconds more in the weight load: every stamp from the first
    'Load weight end' on moves later, and each rank's reported load time grows by as much."""
    def later(m: re.Match[str]) -> str:
        ts = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") + timedelta(seconds=extra)
        return f"[{ts:%Y-%m-%d %H:%M:%S}"

    def longer(m: re.Match[str]) -> str:
        return f"Load weight end. elapsed={float(m.group(1)) + extra:.2f} s"

    out, shift = [], False
    for line in NEW.read_text().splitlines():
        if "Load weight end" in line:
            shift = True
        if shift:
            line = _STAMP.sub(later, line)
            if "Eagle" not in line:  # the target model's load, not the draft's
                line = re.sub(r"Load weight end\. elapsed=([\d.]+) s", longer, line)
        out.append(line)
    path = tmp_path / "prod-slow-load.log"
    path.write_text("\n".join(out) + "\n")
    return path


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(firedup_cmd("check", *args), capture_output=True, text=True, env=env(), timeout=120,
                          check=False)


def test_a_steady_run_passes(history: Path) -> None:
    out = _check(str(NEW), "--history", str(history))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith(f"PASS {NEW}: ")  # the answer first
    assert "from launch" in out.stdout.splitlines()[0]
    assert "4 history runs of this config" in out.stdout
    verbose = _check(str(NEW), "--history", str(history), "-v")
    assert "rule: a run regresses when" in verbose.stdout


def test_a_slower_weight_load_fails_with_the_phase_and_the_evidence(history: Path, tmp_path: Path) -> None:
    slow = _slower_load(tmp_path, 240)
    out = _check(str(slow), "--history", str(history))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL" in out.stdout
    assert re.search(r"load_weights: \d+ min \d\d s REGRESSED: history of 4 runs", out.stdout), out.stdout
    # from its estimated launch, as `parse` shows it (`~`)
    assert re.search(r"time to ready from launch: ~\d+ min \d\d s REGRESSED", out.stdout)
    assert "evidence: line " in out.stdout and "Load weight end" in out.stdout
    # the debug runs are another config: never mixed in
    data = firedup.check([slow], [history]).as_json()
    (run,) = data["runs"]
    assert run["history_n"] == 4 and run["failed"]
    regressed = {f["measure"] for f in run["findings"] if f["regressed"]}
    assert {"load_weights", "time to ready from launch"} <= regressed
    assert "cuda_graph" not in regressed and "draft.load_weights" not in regressed


def test_a_crashed_run_fails(history: Path) -> None:
    out = _check(str(SAMPLE_LOGS / "oom-in-cuda-graph.log"), "--history", str(history))
    assert out.returncode == 1
    assert "did not get ready (crashed in cuda_graph" in out.stdout


def test_no_startup_in_the_input_is_exit_5(history: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("nothing to see here\n")
    out = _check(str(empty), "--history", str(history))
    assert out.returncode == 5, out.stdout + out.stderr
    assert "no server startup found" in out.stderr


def test_without_history_it_is_a_usage_error() -> None:
    out = _check(str(NEW))
    assert out.returncode == 2 and "give the history" in out.stderr


def test_a_config_with_one_history_run_cannot_be_judged_and_never_passes(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    folder.mkdir()
    shutil.copy(SAMPLE_LOGS / "prod-tp8-eagle3-01.log", folder)
    out = _check(str(_slower_load(tmp_path, 240)), "--history", str(folder))
    assert out.returncode == 6, out.stdout + out.stderr
    assert out.stdout.startswith("CANNOT JUDGE ")
    assert "1 history run of this config: too few to judge it by" in out.stdout


def test_an_empty_store_or_another_configs_history_cannot_judge(tmp_path: Path) -> None:
    """Issue 27: `check NEW --store EMPTY_OR_OTHER_CONFIG` printed PASS and exited 0."""
    empty = tmp_path / "empty-store"
    empty.mkdir()
    out = _check(str(NEW), "--store", str(empty))
    assert out.returncode == 6 and out.stdout.startswith("CANNOT JUDGE"), out.stdout + out.stderr
    assert "PASS" not in out.stdout
    other = tmp_path / "debug"
    other.mkdir()
    for i in range(1, 4):
        shutil.copy(SAMPLE_LOGS / f"debug-tp8-eagle3-0{i}.log", other)
    out = _check(str(NEW), "--history", str(other))
    assert out.returncode == 6 and out.stdout.startswith("CANNOT JUDGE")
    assert "nearest configs in the history: disable_cuda_graph=True (3 runs)" in " ".join(out.stdout.split())
    report = firedup.check([NEW], [other])
    assert report.verdict == "CANNOT JUDGE" and not report.failed
    # a failure outweighs it: exit 1
    both = _check(str(NEW), str(SAMPLE_LOGS / "oom-in-cuda-graph.log"), "--history", str(other))
    assert both.returncode == 1 and both.stdout.startswith("CANNOT JUDGE") and "\nFAIL " in both.stdout


def test_the_limit_is_the_budget_of_the_same_runs(history: Path) -> None:
    """One number per fact: `check`'s limit on time to ready is the budget `budget` gives its history
    (it said 16 min 48 s where budget said 16 min 50 s for the same rule)."""
    data = firedup.check([NEW], [history]).as_json()
    limit = next(f["limit_seconds"] for f in data["runs"][0]["findings"] if f["measure"] == "time to ready from launch")
    prod = [str(history / f"prod-tp8-eagle3-0{i}.log") for i in range(1, 5)]
    assert limit == firedup.budgets(firedup.load(prod)).budgets[0].budget_seconds


def test_the_rule_on_numbers() -> None:
    history = [100.0, 104.0, 98.0, 101.0, 103.0]
    bound, regressed = judge(150.0, history, 0.01)
    assert regressed and bound is not None and bound.raw_seconds is not None and bound.raw_seconds < 150
    assert not judge(112.0, history, 0.01)[1]  # inside the slowest + 10 %
    # a tiny phase: 0.2 s -> 0.9 s is above the bound but under 1 s more than the slowest
    assert not judge(0.9, [0.2, 0.21, 0.19], 0.01)[1]
    assert judge(500.0, [100.0], 0.01) == (None, False)  # one run: no spread


def test_the_history_store_is_a_history_too(history: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    firedup.ingest([history], store=store)
    assert not firedup.check([NEW], store=store).failed
    slow = firedup.check([_slower_load(tmp_path, 240)], store=store)
    assert slow.failed and slow.runs[0].history_n == 4


def test_thousands_of_new_runs_are_judged_against_each_config_once(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 restarts in one file against a history of 4,000 took 694 s and 1.5 GB: every new
    run read every history run's config and recomputed the same limits. Counted, not timed."""
    from firedup.tables import check as check_module

    def restarts(path: Path, n: int, shift: int) -> Path:
        lines = []
        for i in range(n):
            s = f"2026-03-0{1 + shift} {i // 60:02d}:{i % 60:02d}:00"
            e = f"2026-03-0{1 + shift} {i // 60:02d}:{i % 60:02d}:{20 + i % 7:02d}"
            lines += [f"[{s}] server_args=ServerArgs(model_path='m', tp_size=1)",
                      f"[{s}] Load weight begin. avail mem=70.00 GB",
                      f"[{e}] Load weight end. type=X, dtype=torch.bfloat16, avail mem=50.00 GB, mem usage=20.00 GB.",
                      f"[{e}] The server is fired up and ready to roll!"]
        path.write_text("\n".join(lines) + "\n")
        return path

    new = firedup.load([str(restarts(tmp_path / "new.log", 300, 1))])
    history = firedup.load([str(restarts(tmp_path / "history.log", 200, 0))])
    calls = {"row_config_key": 0, "budget_for": 0}
    for name in calls:
        real = getattr(check_module, name)

        def counted(*args: object, _real: object = real, _name: str = name, **kw: object) -> object:
            calls[_name] += 1
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(check_module, name, counted)
    report = check_module.check(new, history)
    assert len(report.runs) == 300 and all(r.findings for r in report.runs)
    assert calls["row_config_key"] <= 300 + 200, calls
    assert calls["budget_for"] <= 10, calls  # one config, a few measures


@pytest.mark.parametrize("copy", ["gz", "crlf", "crlf.gz"])
def test_a_copy_of_the_new_log_in_the_history_is_not_its_history(tmp_path: Path, copy: str) -> None:
    """Issue 40: a `.gz` or CRLF copy of the new log in --history was a second history run: PASS
    instead of CANNOT JUDGE. The same start-up is one log whatever its compression or line
    endings (one content identity: timeline.pipeline.file_sha256, what the store keys by)."""
    import gzip

    folder = tmp_path / "history"
    folder.mkdir()
    shutil.copy(SAMPLE_LOGS / "prod-tp8-eagle3-01.log", folder)  # one real history run: too few (MIN_HISTORY 2)
    data = NEW.read_bytes()
    if "crlf" in copy:
        data = data.replace(b"\n", b"\r\n")
    if copy.endswith("gz"):
        data = gzip.compress(data)
    (folder / f"copy.log{'.gz' if copy.endswith('gz') else ''}").write_bytes(data)
    out = subprocess.run(firedup_cmd("check", str(NEW), "--history", str(folder)), capture_output=True, text=True,
                         env=env(), timeout=120, check=False)
    assert out.returncode == 6, (out.stdout, out.stderr)
    assert "1 history run of this config" in out.stdout, out.stdout


@given(st.binary(max_size=3000), st.integers(1, 64))
@settings(max_examples=200, deadline=None)
def test_content_identity_ignores_compression_and_line_endings_only(data: bytes, block: int) -> None:
    """The identity of a log is its LF text: a gzip or CRLF copy hashes the same, at any block
    boundary a CR falls on; any other change of the text does not."""
    import gzip
    import hashlib
    import os
    import tempfile

    from firedup.timeline import pipeline

    lf = data.replace(b"\r\n", b"\n")
    while b"\r\n" in lf:
        lf = lf.replace(b"\r\n", b"\n")
    expected = hashlib.sha256(lf).hexdigest() if not lf.startswith(b"\x1f\x8b") else None
    saved, pipeline.HASH_BLOCK = pipeline.HASH_BLOCK, block  # CRs at block boundaries
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, content in (("plain", lf), ("crlf", lf.replace(b"\n", b"\r\n")), ("gz", gzip.compress(lf)),
                                  ("crlf.gz", gzip.compress(lf.replace(b"\n", b"\r\n")))):
                path = os.path.join(tmp, name)
                with open(path, "wb") as fh:
                    fh.write(content)
                if expected is not None:
                    assert pipeline.file_sha256(path) == expected, name
            if lf + b"x" != lf:
                other = os.path.join(tmp, "other")
                with open(other, "wb") as fh:
                    fh.write(lf + b"x")
                assert pipeline.file_sha256(other) != pipeline.file_sha256(os.path.join(tmp, "gz"))
    finally:
        pipeline.HASH_BLOCK = saved

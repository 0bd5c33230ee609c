"""Real start-ups recorded with `firedup wait --pid` beside them on an H100 (tests/data/realgpu/
h100-2026-12-06, its README says what each did): what `wait` saw and decided, held against what the
servers did and against what firedup reads from the logs now."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from firedup.timeline.pipeline import parse_paths

DATA = Path(__file__).resolve().parent / "data" / "realgpu" / "h100-2026-12-06"
# name -> (wait's exit code, the outcome of the log)
RUNS = {"sglang_eagle3": (0, "ready"), "sglang_eagle3-warm": (0, "ready"), "sglang_hang2": (4, "incomplete"),
        "sglang_oom": (3, "crashed"), "sglang_bad-nnodes": (3, "crashed")}
_POLL = re.compile(r"^\s*([0-9.]+)\s+\d\d:\d\d:\d\d\s+(\S+)")


def _record(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.wait.json").read_text())  # type: ignore[no-any-return]


def _first_200(name: str) -> float | None:
    for line in (DATA / f"{name}.health.txt").read_text().splitlines():
        if line.startswith("--- SIGTERM"):
            return None
        m = _POLL.match(line)
        if m and m.group(2) == "200":
            return float(m.group(1))
    return None


@pytest.mark.parametrize("name", sorted(RUNS))
def test_wait_exited_as_documented_with_the_launch_measured(name: str) -> None:
    code, outcome = RUNS[name]
    record = _record(name)
    assert record["exit_code"] == code
    last = (DATA / f"{name}.wait.txt").read_text().rstrip().splitlines()[-1]
    assert re.fullmatch(rf"firedup wait rc={code} at \d\d:\d\d:\d\d", last), last
    launch = record["run"]["launch"]
    assert launch["source"] == "measured" and 10 <= launch["seconds_before_first_line"] <= 30
    assert record["gpu"] == {"source": "NVML", "off": None}
    truth = _first_200(name)
    if outcome == "ready":
        assert truth is not None and abs(launch["seconds_to_ready"] - truth) <= 2.0  # 1 s stamps, 0.5 s polls


def test_the_classes_match_what_the_servers_did() -> None:
    """Random weights: never `reading`; compilers only in the cold capture; the hang idle."""
    every = {name: _record(name).get("process_timeline") or [] for name in RUNS}
    assert not any(t["kind"] == "reading" for ts in every.values() for t in ts)
    cold = [t for t in every["sglang_eagle3"] if t["phase"] == "cuda_graph"]
    assert [t["kind"] for t in cold] == ["compiling"] and cold[0]["seconds"] > 30
    assert {"nvcc", "cicc", "ninja"} <= set(cold[0]["compilers"])
    assert not any(t["kind"] == "compiling" for t in every["sglang_eagle3-warm"])
    hang = _record("sglang_hang2")
    assert hang["process_tree"]["kind"] == "stuck" and hang["process_tree"]["text"].startswith("idle:")
    assert [t["kind"] for t in every["sglang_hang2"]] == ["stuck"]
    # the cache verdict `wait` recorded: cold from the compilers it saw, warm on the twin
    assert _record("sglang_eagle3")["run"]["caches"]["kernel_jit"]["verdict"] == "cold"
    assert _record("sglang_eagle3")["run"]["caches"]["kernel_jit"]["basis"] == "process"
    assert _record("sglang_eagle3-warm")["run"]["caches"]["kernel_jit"]["verdict"] == "warm"


def test_the_flashinfer_log_at_import_is_no_compile() -> None:
    """The one wrong note of the cold start (a JIT library's log opened at import), not wrong now."""
    from firedup.live.proc import file_kind

    [early] = [t for t in _record("sglang_eagle3")["process_timeline"] if t["phase"] is None]
    path = early["evidence"][0].split(": ", 1)[1]
    assert path.endswith("flashinfer_jit.log") and file_kind(path) is None


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_logs_parse_to_what_wait_said(name: str, tmp_path: Path) -> None:
    _, outcome = RUNS[name]
    [beside] = parse_paths([str(DATA / f"{name}.log")]).runs
    record = _record(name)["run"]
    # its `wait --record` kept beside it is read as its process evidence: the measured launch
    assert beside.launch is not None and beside.launch.source == "measured"
    assert beside.launch.gap == pytest.approx(record["launch"]["seconds_before_first_line"], abs=0.01)
    alone = tmp_path / f"{name}.log"
    alone.write_bytes((DATA / f"{name}.log").read_bytes())
    [run] = parse_paths([str(alone)]).runs
    assert run.outcome == outcome
    assert run.first_ts is not None and run.first_ts.iso == record["first_ts"]
    assert run.total_seconds == record["total_seconds"]
    # read alone, the log's launch is estimated: within the documented gap of the measured one
    assert run.launch is not None and run.launch.source == "estimated"
    assert run.launch.low is not None and run.launch.high is not None
    measured = record["launch"]["seconds_before_first_line"]
    assert run.launch.low <= measured <= run.launch.high


def test_budget_and_compare_split_the_cold_and_the_warm_twin() -> None:
    import firedup

    runs = firedup.load([str(DATA / "sglang_eagle3.log"), str(DATA / "sglang_eagle3-warm.log")])
    report = firedup.budgets(runs)
    [apart] = report.splits
    assert apart is not None
    names = dict(zip(runs.runs["run_id"].to_list(), runs.runs["source"].to_list(), strict=True))
    assert [Path(names[r]).name for r in apart[0].cold] == ["sglang_eagle3.log"]
    assert report.budgets[0].budget_seconds is not None and report.budgets[0].budget_seconds < 600

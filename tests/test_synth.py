"""The synthetic log generator: reproducible, faithful to its own ground truth, and the
bundled sample set tells the story it claims.

Facts about the samples are read from the log text with this file's own regexes (a route
independent of firedup's parser); the parser is then held to the generator's truth.
"""

from __future__ import annotations

import json
import re
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import SAMPLE_LOGS
from firedup.cli import cli
from firedup.parse import parse_paths
from firedup.synth import generate
from firedup.synth.bulk import write_long_log, write_many
from firedup.synth.samples import sample_scenarios
from firedup.timeline import Run

TRUTH: dict[str, Any] = json.loads((SAMPLE_LOGS / "truth.json").read_text())["files"]
SAMPLES = sorted(TRUTH)
_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[\] ]")


def _text(name: str) -> str:
    return (SAMPLE_LOGS / name).read_bytes().decode("utf-8")


def _physical_lines(name: str) -> list[str]:
    return _text(name).split("\n")  # `\r` redraws stay inside their line, as on disk


def _ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S")


def _ready_seconds_from_text(lines: list[str]) -> list[float]:
    """Per startup: first timestamped line -> `fired up` line, by this test's own reading."""
    out, first = [], None
    for line in lines:
        m = _STAMP.search(line)
        if m and first is None:
            first = _ts(m.group(1))
        if "The server is fired up and ready to roll!" in line and m and first is not None:
            out.append((_ts(m.group(1)) - first).total_seconds())
            first = None
        if "Received sigquit from a child process" in line:
            first = None
    return out


# --- determinism -------------------------------------------------------------------------


def test_same_seed_gives_identical_bytes_and_another_seed_differs() -> None:
    scenario = sample_scenarios(7)["prod-tp8-eagle3-02"]
    a, b = generate(scenario, 7), generate(scenario, 7)
    assert a.text == b.text and a.truth() == b.truth()
    c = generate(scenario, 8)
    assert c.text != a.text
    assert c.runs[0].ready_offset_s != a.runs[0].ready_offset_s


def test_the_committed_samples_are_what_the_documented_command_writes(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["synth", str(tmp_path), "--seed", "7"])
    assert result.exit_code == 0, result.output
    for name in [*SAMPLES, "truth.json", "README.md"]:
        assert (tmp_path / name).read_bytes() == (SAMPLE_LOGS / name).read_bytes(), (
            f"sample_logs/{name} is stale: run `make samples` (firedup synth sample_logs/ --seed 7)")


# --- the sample set tells the story ------------------------------------------------------


def test_the_story_debug_runs_about_4_minutes_production_14_to_16() -> None:
    debug = [f for f in SAMPLES if f.startswith("debug-tp8-eagle3-")]
    prod = [f for f in SAMPLES if f.startswith("prod-tp8-eagle3-")]
    assert len(debug) == 5 and len(prod) == 5
    debug_ready = [s for f in debug for s in _ready_seconds_from_text(_physical_lines(f))]
    prod_ready = [s for f in prod for s in _ready_seconds_from_text(_physical_lines(f))]
    assert len(debug_ready) == 5 and all(210 <= s <= 270 for s in debug_ready), debug_ready
    assert len(prod_ready) == 5 and all(14 * 60 <= s <= 16 * 60 for s in prod_ready), prod_ready
    for f in debug:
        text = _text(f)
        assert "\x1b[1;33m'--disable-cuda-graph' is deprecated" in text
        assert "'cuda_graph_backend_decode': 'disabled'" in text and "'disable_decode_cuda_graph': True" in text
        assert "CUDA graph begin" not in text and "Capturing " not in text
    for f in prod:
        text = _text(f)
        ranks = set(re.findall(r" (TP\d)\] Capture target prefill CUDA graph begin\. backend=breakable, num_tokens=\[", text))
        assert ranks == {f"TP{i}" for i in range(8)}
        assert re.search(r"\] Capture target verify CUDA graph end\. bs=\[[\d, ]+\], elapsed=", text)
        assert " TP0] Capture draft decode CUDA graph begin" in text and " TP0] Capture draft extend CUDA graph end" in text
        assert "Entering DeepGEMM JIT Pre-Compile session" in text
        assert "\rCapturing prefill shape (num_tokens=" in text and "\rDeepGEMM warmup: " in text
        assert " - \"POST /freeze_gc HTTP/1.1\" 200 OK" in text and "Engine startup timings (s): " in text


def test_only_tp0_prints_the_bars_and_max_total_num_tokens_and_every_rank_its_own_lines() -> None:
    for f in SAMPLES:
        if "tp8" not in f:
            continue
        text = _text(f)
        assert set(re.findall(r" (TP\d)\] max_total_num_tokens=", text)) <= {"TP0"}
        assert set(re.findall(r" (TP\d)\] Load weight begin\.", text)) == {f"TP{i}" for i in range(8)}
        # a bar frame never carries a rank tag: the frames are TP0's raw stderr
        assert not re.search(r"TP[1-7]\] Capturing", text)


def test_health_probes_answer_503_while_starting_then_200() -> None:
    for f in SAMPLES:
        lines = _physical_lines(f)
        ready_at = [i for i, line in enumerate(lines) if "fired up and ready to roll" in line]
        running_at = [i for i, line in enumerate(lines) if "Uvicorn running on" in line]
        for start, ready in zip(running_at, ready_at, strict=True):
            probes = [(i, line) for i, line in enumerate(lines) if '"GET /health HTTP/1.1"' in line]
            before = [line for i, line in probes if start < i < ready]
            after = [line for i, line in probes if i > ready]
            assert before and all(line.endswith("503 Service Unavailable") for line in before), f
            assert after and after[0].endswith("200 OK"), f
        assert not any('"GET /health' in line for line in lines[: running_at[0] if running_at else len(lines)]), f


def test_the_oom_sample_follows_the_crash_flow() -> None:
    text = _text("oom-in-cuda-graph.log")
    order = ["Capture target verify CUDA graph begin", "Scheduler hit an exception: Traceback (most recent call last):",
             "torch.OutOfMemoryError: CUDA out of memory.", "During handling of the above exception",
             "Exception: Capture cuda graph failed: CUDA out of memory.", "Possible solutions:",
             "2. set --cuda-graph-max-bs-decode to a smaller value",
             "Received sigquit from a child process. It usually means the child failed."]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    assert "fired up" not in text and "Uvicorn running" not in text
    assert "destroy_process_group() was not called" in text  # other ranks' noise


def test_crash_then_restart_holds_two_startups_and_the_second_is_ready() -> None:
    lines = _physical_lines("crash-then-restart.log")
    args = [i for i, line in enumerate(lines) if "] server_args={" in line]
    crash = next(i for i, line in enumerate(lines) if "Scheduler hit an exception" in line)
    ready = [i for i, line in enumerate(lines) if "fired up and ready to roll" in line]
    assert len(args) == 2 and args[0] < crash < args[1] < ready[0] and len(ready) == 1
    assert "Error while creating shared memory segment /dev/shm/nccl-" in "\n".join(lines[crash:args[1]])


def test_the_small_tp1_sample_is_0_5_12_without_rank_tags() -> None:
    text = _text("small-tp1.log")
    assert "] server_args=ServerArgs(model_path='Qwen/Qwen3-4B-Instruct-2507'" in text
    assert re.search(r"\n\[[\d: -]+\] Capture cuda graph end\. Time elapsed: [\d.]+ s\. mem usage=", text)
    assert "Capture piecewise CUDA graph begin" in text and "\rCompiling num tokens (num_tokens=" in text
    assert not re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP\d", text)


def test_the_folder_stays_modest() -> None:
    total = sum(p.stat().st_size for p in SAMPLE_LOGS.iterdir())
    assert total < 4 * 1024 * 1024


# --- the parser against the generator's truth --------------------------------------------


def _runs_by_file() -> dict[str, list[Run]]:
    result = parse_paths([str(SAMPLE_LOGS)])
    assert not result.errors
    out: dict[str, list[Run]] = {}
    for run in result.runs:
        out.setdefault(Path(run.source).name, []).append(run)
    return out


PARSED = _runs_by_file()


def _reported(run: Run) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for p in run.phases:
        if p.scope == "rank" and p.source == "reported" and p.seconds is not None:
            key = p.name + (f"/{p.detail}" if p.detail else "")
            out.setdefault(key, {})[p.rank or "-"] = round(p.seconds, 3)
    return out


@pytest.mark.parametrize("name", SAMPLES)
def test_parser_agrees_with_the_generator(name: str) -> None:
    truths = TRUTH[name]["runs"]
    runs = PARSED[name]
    assert len(runs) == len(truths)
    for run, truth in zip(runs, truths, strict=True):
        assert run.outcome == truth["outcome"]
        assert run.first_ts is not None and run.first_ts.iso == truth["first_ts"]
        if truth["outcome"] == "ready":
            assert run.ready_ts is not None and run.ready_ts.iso == truth["ready_ts"]
            assert run.total_seconds is not None and abs(run.total_seconds - truth["ready_offset_s"]) < 1.0
            ready = run.milestone("ready")
            assert ready is not None and ready.line == truth["ready_line"]
        # what the log reports on elapsed= lines, exactly, rank by rank
        assert _reported(run) == truth["reported"]
        # durations only timestamps can give: within their 1 s resolution
        seconds = run.phase_seconds()
        for phase in ("launch", "kv_cache", "draft.kv_cache", "http_start", "warmup"):
            if phase in truth["phases"]:
                assert abs(seconds[phase] - truth["phases"][phase]) <= 1.0, phase
        config = truth["config"]
        for flag in ("model_path", "tp_size", "disable_cuda_graph", "speculative_algorithm", "quantization",
                     "mem_fraction_static"):
            assert run.config.get(flag) == config[flag], flag
        captured = any(p.name == "cuda_graph" for p in run.run_phases())
        assert captured == (not config["disable_cuda_graph"] and (truth["outcome"] == "ready" or (
            truth["crash"] is not None and truth["crash"]["phase"] == "cuda_graph")))
        if truth["engine_timings"] is not None:
            assert run.engine_timings == truth["engine_timings"]
        if truth["health"].get("first_503_ts"):
            first = run.milestone("health.first")
            assert first is not None and first.ts is not None and first.ts.iso == truth["health"]["first_503_ts"]
        if truth["crash"] is None:
            assert run.crash is None
        else:
            assert run.crash is not None
            assert (run.crash.category, run.crash.phase, run.crash.line) == (
                truth["crash"]["category"], truth["crash"]["phase"], truth["crash"]["line"])


def test_the_story_in_the_parsers_numbers() -> None:
    """What `firedup timeline` will tell the user: debug ~4 min, production ~15, capture explains it."""
    debug = [PARSED[f][0] for f in SAMPLES if f.startswith("debug-")]
    prod = [PARSED[f][0] for f in SAMPLES if f.startswith("prod-")]
    debug_med = statistics.median(r.total_seconds or 0 for r in debug)
    prod_med = statistics.median(r.total_seconds or 0 for r in prod)
    capture = statistics.median(r.phase_seconds().get("cuda_graph", 0) + r.phase_seconds().get("draft.cuda_graph", 0)
                                for r in prod)
    assert 225 <= debug_med <= 255 and 14 * 60 <= prod_med <= 16 * 60
    assert capture > 0.8 * (prod_med - debug_med)  # graph capture explains most of the difference
    assert all("cuda_graph" not in r.phase_seconds() for r in debug)


# --- bulk writers --------------------------------------------------------------------------


def test_long_log_has_its_startups_at_the_lines_the_truth_says(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    truth = write_long_log(path, startups=3, target_bytes=3 * 1024 * 1024, seed=5)
    size = path.stat().st_size
    assert truth["bytes"] == size and abs(size - 3 * 1024 * 1024) < 0.02 * 3 * 1024 * 1024
    raw = path.read_bytes()
    assert truth["lines"] == raw.count(b"\n")
    lines = raw.decode().split("\n")
    assert sum("Decode batch, #running-req:" in line for line in lines) > 1000  # runtime traffic between
    result = parse_paths([str(path)])
    assert [r.outcome for r in result.runs] == ["ready"] * 3
    for run, expected in zip(result.runs, truth["runs"], strict=True):
        assert "fired up and ready to roll" in lines[expected["ready_line"] - 1]
        assert run.ready_ts is not None and run.ready_ts.iso == expected["ready_ts"]


def test_many_logs_are_varied_sized_and_true(tmp_path: Path) -> None:
    paths = write_many(tmp_path, n=12, seed=3, target_bytes=60_000)
    truth = json.loads((tmp_path / "truth.json").read_text())["files"]
    assert sorted(p.name for p in paths) == sorted(truth) and len(paths) == 12
    result = parse_paths([str(tmp_path)])
    got = {}
    for run in result.runs:
        got.setdefault(Path(run.source).name, []).append(run.outcome)
    assert got == {name: [r["outcome"] for r in t["runs"]] for name, t in truth.items()}
    for p in paths:
        if truth[p.name]["runs"][-1]["outcome"] == "ready":
            assert p.stat().st_size >= 60_000
    again = write_many(tmp_path / "again", n=12, seed=3, target_bytes=60_000)
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(paths, again, strict=True))


# --- the command ---------------------------------------------------------------------------


def test_synth_command_one_scenario_list_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["synth", str(tmp_path), "--scenario", "small-tp1"])
    assert ok.exit_code == 0 and "wrote 1 log" in ok.output
    assert (tmp_path / "small-tp1.log").read_bytes() == (SAMPLE_LOGS / "small-tp1.log").read_bytes()
    assert not (tmp_path / "README.md").exists()
    listed = runner.invoke(cli, ["synth", "--list"])
    assert listed.exit_code == 0 and all(name[:-4] in listed.output for name in SAMPLES)
    bad = runner.invoke(cli, ["synth", str(tmp_path), "--scenario", "nope"])
    assert bad.exit_code == 2 and "unknown scenario nope" in bad.output
    assert runner.invoke(cli, ["synth"]).exit_code == 2
    size = runner.invoke(cli, ["synth", str(tmp_path), "--long", "12 parsecs"])
    assert size.exit_code == 2 and "not a size" in size.output
    long = runner.invoke(cli, ["synth", str(tmp_path), "--long", "1M", "--startups", "2"])
    assert long.exit_code == 0 and (tmp_path / "long.log").stat().st_size > 1_000_000
    assert len(json.loads((tmp_path / "long.truth.json").read_text())["runs"]) == 2

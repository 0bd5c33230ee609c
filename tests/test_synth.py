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

from conftest import SAMPLE_LOGS, sample_truth
from firedup.cli import cli
from firedup.synth import generate
from firedup.synth._output import Clock, Stream, kubectl_stamp
from firedup.synth.bulk import write_long_log, write_many
from firedup.synth.samples import sample_scenarios
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

TRUTH: dict[str, Any] = sample_truth()["files"]
SAMPLES = sorted(TRUTH)
SGLANG_SAMPLES = [f for f in SAMPLES if TRUTH[f]["runs"][0]["engine"] == "sglang"]
VLLM_SAMPLES = [f for f in SAMPLES if TRUTH[f]["runs"][0]["engine"] == "vllm"]
# the eager/compiled pair of one model at TP2 (the others: a cold and a warm start at TP1)
VLLM_TP2 = [f for f in VLLM_SAMPLES if f.startswith("vllm-tp2-")]
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
    for f in SGLANG_SAMPLES:
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


@pytest.mark.parametrize("name", SGLANG_SAMPLES)
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


# --- vLLM samples --------------------------------------------------------------------------

# `kubectl logs --timestamps` + vLLM's prefix and header, read with this file's own regexes.
_KUBECTL = re.compile(r"^(\d{4})-(\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z ")
_VLLM_HEAD = re.compile(r"(?:\x1b\[1;36m)?\((\w+) pid=(\d+)\)(?:\x1b\[0;0m)? (?:[A-Z]+ (\d\d-\d\d) (\d\d:\d\d:\d\d) \[)?")


def _outer_seconds(line: str) -> float:
    m = _KUBECTL.match(line)
    assert m, line[:80]
    whole = datetime.strptime(f"{m[1]}-{m[2]} {m[3]}", "%Y-%m-%d %H:%M:%S").timestamp()
    return whole + (int(m[4].ljust(9, "0")) / 1e9 if m[4] else 0.0)


def test_there_are_an_eager_and_a_compiled_vllm_run_of_one_model() -> None:
    assert len(VLLM_TP2) == 2
    configs = [TRUTH[f]["runs"][0]["config"] for f in VLLM_TP2]
    assert {c["model_path"] for c in configs} == {"Qwen/Qwen3-32B"} and {c["tp_size"] for c in configs} == {2}
    assert sorted(c["enforce_eager"] for c in configs) == [False, True]


def test_every_vllm_line_is_behind_kubectl_and_its_clock_agrees_with_vllm() -> None:
    for f in VLLM_SAMPLES:
        lines = _physical_lines(f)[:-1]
        outer = [_outer_seconds(line) for line in lines]
        assert outer == sorted(outer), f  # the runtime stamps lines as they arrive
        year = _KUBECTL.match(lines[0])[1]  # type: ignore[index]
        for line, t in zip(lines, outer, strict=True):
            rest = line[_KUBECTL.match(line).end():]  # type: ignore[union-attr]
            m = _VLLM_HEAD.match(rest)
            if m and m[3]:  # vLLM's own time (no year, whole seconds) is the collector's, truncated
                own = datetime.strptime(f"{year}-{m[3]} {m[4]}", "%Y-%m-%d %H:%M:%S").timestamp()
                assert own == int(t) or own == int(t) - 1, line[:120]


def test_vllm_processes_write_what_vllm_0_13_writes() -> None:
    for f in VLLM_TP2:
        text = _text(f)
        eager = TRUTH[f]["runs"][0]["config"]["enforce_eager"]
        procs = set(re.findall(r"\x1b\[1;36m\((\w+) pid=\d+\)\x1b\[0;0m ", text))
        # the second worker only speaks for itself when it compiles (`Cache the graph ...`): info_once
        assert procs == {"APIServer", "EngineCore_DP0", "Worker_TP0", *(() if eager else ("Worker_TP1",))}, (f, procs)
        assert "vLLM API server version 0.13.0" in text and "Initializing a V1 LLM engine (v0.13.0) with config: " in text
        assert re.search(r"non-default args: \{'model_tag': 'Qwen/Qwen3-32B', .*'tensor_parallel_size': 2", text)
        # a worker's distributed-init lines come before its prefix exists
        assert len(re.findall(r"Z INFO \d\d-\d\d [\d:]+ \[parallel_state\.py:\d+\] world_size=2 rank=\d", text)) == 2
        # info_once: one copy of the load lines, from the first worker; the shard bar is its stderr
        assert len(re.findall(r"Worker_TP0 pid=\d+\)\x1b\[0;0m INFO [^\n]*Starting to load model Qwen/Qwen3-32B\.\.\.",
                              text)) == 1
        assert "Worker_TP1" not in "".join(line for line in text.split("\n") if "Loading weights took" in line)
        assert len(re.findall(r"\)\x1b\[0;0m \rLoading safetensors checkpoint shards: +\d+% Completed \| \d+/17 \[",
                              text)) >= 3
        assert ("torch.compile takes" in text) is not eager and ("Dynamo bytecode transform time" in text) is not eager
        assert ("Capturing CUDA graphs (decode, FULL)" in text) is not eager
        assert ("Graph capturing finished in" in text) is not eager
        assert ("Enforce eager set, overriding optimization level to -O0" in text) is eager
        assert "init engine (profile, create kv cache, warmup model) took" in text
        uv = re.findall(r"APIServer pid=1\)\x1b\[0;0m INFO: {5}(Started server process \[1\]|Waiting for application "
                        r"startup\.|Application startup complete\.)\n", text)
        assert uv == ["Started server process [1]", "Waiting for application startup.", "Application startup complete."]


def test_the_compiled_vllm_run_prints_consistent_durations() -> None:
    (f,) = [f for f in VLLM_TP2 if not TRUTH[f]["runs"][0]["config"]["enforce_eager"]]
    text = _text(f)
    dynamo = float(re.search(r"Dynamo bytecode transform time: ([\d.]+) s", text)[1])  # type: ignore[index]
    inductor = float(re.search(r"Compiling a graph for compile range \(1, 8192\) takes ([\d.]+) s", text)[1])  # type: ignore[index]
    total = float(re.search(r"torch\.compile takes ([\d.]+) s in total", text)[1])  # type: ignore[index]
    assert abs(dynamo + inductor - total) <= 0.011
    bars = [line for line in text.split("\n") if "\rCapturing CUDA graphs (" in line]
    assert len(bars) == 2 and all("Worker_TP0" in b for b in bars)
    assert "| 51/51 [" in bars[0] and "| 35/35 [" in bars[1]
    # the capture summary agrees with the bars' own clocks (tqdm's elapsed, whole seconds)
    secs = int(re.search(r"Graph capturing finished in (\d+) secs, took [\d.]+ GiB", text)[1])  # type: ignore[index]
    bar_secs = sum(int(m) * 60 + int(s_) for b in bars
                   for m, s_ in [re.findall(r"\| \d+/\d+ \[(\d+):(\d+)<", b)[-1]])
    assert bar_secs <= secs <= bar_secs + 3


def test_vllm_refuses_probes_until_ready_then_answers_200() -> None:
    for f in VLLM_SAMPLES:
        lines = _physical_lines(f)
        ready = [i for i, line in enumerate(lines) if line.endswith("INFO:     Application startup complete.")]
        assert len(ready) == 1
        probes = [(i, line) for i, line in enumerate(lines) if '"GET /health HTTP/1.1"' in line]
        health = TRUTH[f]["runs"][0]["health"]
        assert probes and all(i > ready[0] and line.endswith(" 200 OK") for i, line in probes), f
        assert len(probes) == health["n_200"] and health["n_refused"] > 0 and health["n_503"] == 0


def test_vllm_ready_read_from_the_text_matches_the_truth() -> None:
    """First vLLM time to the collector's time of `Application startup complete.`: within 1 s."""
    for f in VLLM_SAMPLES:
        lines = _physical_lines(f)
        first = _outer_seconds(lines[0])
        ready = next(_outer_seconds(line) for line in lines if line.endswith("Application startup complete."))
        truth = TRUTH[f]["runs"][0]
        assert abs((ready - int(first)) - truth["ready_offset_s"]) < 1.0


@pytest.mark.parametrize("name", VLLM_SAMPLES)
def test_parser_agrees_with_the_generator_on_vllm(name: str) -> None:
    (truth,) = TRUTH[name]["runs"]
    (run,) = PARSED[name]
    assert run.engine == "vllm" and run.outcome == truth["outcome"] == "ready"
    assert run.date_source == "outer"  # vLLM prints no year: kubectl's stamp gives it
    assert run.first_ts is not None and run.first_ts.iso == truth["first_ts"]
    assert run.ready_ts is not None
    ready_truth = datetime.fromisoformat(truth["first_ts"]).timestamp() + truth["ready_offset_s"]
    assert abs(run.ready_ts.dt.timestamp() - ready_truth) < 1.0
    assert run.total_seconds is not None and abs(run.total_seconds - truth["ready_offset_s"]) < 1.0
    ready = run.milestone("ready")
    assert ready is not None and ready.line == truth["ready_line"]
    # the durations vLLM prints, exactly, phase by phase and rank by rank
    reported: dict[str, dict[str, float]] = {}
    for p in run.phases:
        if p.scope == "rank" and p.source == "reported" and p.seconds is not None:
            reported.setdefault(p.name, {})[p.rank or "-"] = p.seconds
    assert reported == truth["reported"]
    expected = {"load_weights", "model_loading", "engine_init"}
    if not truth["config"]["enforce_eager"]:
        expected |= {"torch_compile", "cuda_graph"}
    assert set(truth["reported"]) == expected
    run_level = {p.name: p.seconds for p in run.run_phases() if p.source == "reported"}
    assert run_level == {k: next(iter(v.values())) for k, v in truth["reported"].items()}
    # durations only timestamps can give: within their 1 s resolution
    seconds = run.phase_seconds()
    for phase in ("launch", "dist_init", "kv_cache", "http_start"):
        assert abs(seconds[phase] - truth["phases"][phase]) <= 1.0, phase
    for flag in ("model_path", "tp_size", "enforce_eager", "disable_cuda_graph", "enable_torch_compile",
                 "cudagraph_mode", "compilation_mode", "quantization", "version"):
        assert run.config.get(flag) == truth["config"][flag], flag
    assert run.crash is None
    first = run.milestone("health.first")
    assert first is not None and first.ts is not None
    assert abs(first.ts.dt.timestamp() - datetime.fromisoformat(truth["health"]["first_200_ts"]).timestamp()) < 2.0


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


def test_many_logs_include_vllm_runs_the_parser_reads_as_the_truth_says(tmp_path: Path) -> None:
    paths = write_many(tmp_path, n=30, seed=3, target_bytes=20_000)
    truth = json.loads((tmp_path / "truth.json").read_text())["files"]
    vllm = [p for p in paths if truth[p.name]["runs"][0]["engine"] == "vllm"]
    assert len(vllm) >= 3 and all(p.name.endswith("-vllm.log") for p in vllm)
    result = parse_paths([str(p) for p in vllm])
    assert not result.errors
    by_file: dict[str, list[Run]] = {}
    for run in result.runs:
        by_file.setdefault(Path(run.source).name, []).append(run)
    for p in vllm:
        runs, truths = by_file[p.name], truth[p.name]["runs"]
        assert [r.outcome for r in runs] == [t["outcome"] for t in truths], p.name
        for run, t in zip(runs, truths, strict=True):
            assert run.engine == "vllm" and run.config.get("tp_size") == t["config"]["tp_size"]
            reported: dict[str, dict[str, float]] = {}
            for ph in run.phases:
                if ph.scope == "rank" and ph.source == "reported" and ph.seconds is not None:
                    reported.setdefault(ph.name, {})[ph.rank or "-"] = ph.seconds
            assert reported == t["reported"], p.name
            if t["outcome"] == "ready":
                assert run.total_seconds is not None and abs(run.total_seconds - t["ready_offset_s"]) < 1.0
            else:
                assert run.crash is not None and (run.crash.category, run.crash.line) == (
                    t["crash"]["category"], t["crash"]["line"])


def test_a_collector_stamps_each_line_when_its_newline_arrives() -> None:
    clock = Clock(datetime(2026, 11, 9, 9, 0, 0))
    stream = Stream(clock, kubectl_stamp(clock))
    stream.write(1.0, "\rbar  0%")
    stream.write(2.5, "\rbar 100%\n")
    stream.write(3.000000001, "x\ny\n")
    stream.write(4.0, "tail")
    pieces, _ = stream.render_marked()
    assert "".join(pieces).split("\n") == [
        "2026-11-09T09:00:02.5Z \rbar  0%\rbar 100%", "2026-11-09T09:00:03.000000001Z x",
        "2026-11-09T09:00:03.000000001Z y", "2026-11-09T09:00:04Z tail"]


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
    # regression: --startups 0 was a ValueError traceback
    none = runner.invoke(cli, ["synth", str(tmp_path / "long"), "--long", "1M", "--startups", "0"])
    assert none.exit_code == 2 and none.output == "firedup: a long log needs at least one startup, not 0\n"
    assert not (tmp_path / "long" / "long.log").exists()
    long = runner.invoke(cli, ["synth", str(tmp_path), "--long", "1M", "--startups", "2"])
    assert long.exit_code == 0 and (tmp_path / "long.log").stat().st_size > 1_000_000
    assert len(json.loads((tmp_path / "long.truth.json").read_text())["runs"]) == 2


# --- each sample is one engine version throughout (issue 31) -------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_reads_as_its_one_version_everywhere(name: str) -> None:
    """The version markers of a sample log agree with each other and with the version the generator
    wrote (truth.json), whether read from the log's events (what `replay` and `wait` do) or from the
    tables a history keeps (what `budget` and its snippets do); the readiness route chosen for it
    is one that version serves. `budget --snippet kubernetes` called the samples' markers
    contradictory and picked /health_generate (0.4.10.post1 and older) while `replay` said 0.5.21+."""
    from firedup.core.health import ready_probe, version_key
    from firedup.formats import get_format
    from firedup.live.replay import load_script
    from firedup.tables.budget import version_of
    from firedup.tables.load import load

    path = SAMPLE_LOGS / name
    truth = TRUTH[name]["runs"][-1]
    fmt = get_format(truth["engine"])
    script = load_script(path)
    runs = load([str(path)])
    last = runs.runs.sort("run_index")["run_id"].to_list()[-1]
    from_tables = version_of(runs, [last], fmt)
    if fmt.serving.version_guess is None:  # an engine whose logs firedup does not date by their shape
        assert from_tables is None and script.version.low is script.version.high is None
        return
    assert from_tables is not None
    for guess in (script.version, from_tables):
        assert not any(e.startswith("contradictory") for e in guess.evidence), guess
        assert guess.low is None or version_key(guess.low) <= version_key(truth["version"]), guess
        assert guess.high is None or version_key(truth["version"]) <= version_key(guess.high), guess
    assert (script.version.low, script.version.high) == (from_tables.low, from_tables.high)
    probe = ready_probe(fmt.serving.readiness, from_tables)
    if probe is not None:
        assert probe.since is None or version_key(probe.since) <= version_key(truth["version"]), probe
        assert probe.until is None or version_key(truth["version"]) <= version_key(probe.until), probe


def test_one_synth_job_says_what_it_wrote(tmp_path: Path) -> None:
    """`firedup synth`'s work is the library's (synth/jobs.py): the CLI only parses and prints."""
    from firedup.core.units import parse_size
    from firedup.synth.jobs import write_synth

    assert (parse_size("150k"), parse_size("2M"), parse_size("1GiB"), parse_size("512")) == (
        150 << 10, 2 << 20, 1 << 30, 512)
    for bad in ("-1k", "0", "lots", "1e400g"):
        with pytest.raises(ValueError, match="size"):
            parse_size(bad)
    said = write_synth(str(tmp_path / "many"), seed=3, many=3, many_size=parse_size("20k"))
    assert said == f"wrote 3 logs and truth.json to {tmp_path / 'many'}"
    assert len(list((tmp_path / "many").glob("*.log"))) == 3
    said = write_synth(str(tmp_path / "one"), seed=7, scenarios=["small-tp1"])
    assert said == f"wrote 1 log, truth.json to {tmp_path / 'one'}"

"""Runs, milestones, phases and outcomes from small SGLang logs written out by hand."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLE_LOGS as SAMPLES
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run


def _runs(tmp_path: Path, text: str, name: str = "server.log") -> list[Run]:
    path = tmp_path / name
    path.write_text(text)
    result = parse_paths([str(path)])
    assert not result.errors, result.errors
    return result.runs


SPEC_ERA_C = """\
[2026-09-11 23:34:13 TP0] Load weight begin. avail mem=111.47 GB
[2026-09-11 23:43:15 TP0] Load weight end. elapsed=541.76 s, type=DeepseekV4ForCausalLM, quant=fp8, avail mem=17.47 GB, mem usage=94.00 GB.
[2026-09-11 23:44:38 TP0] Load weight begin. avail mem=17.54 GB
[2026-09-11 23:45:53 TP0] Load weight end. elapsed=74.58 s, type=DeepseekV4ForCausalLMDSpark, quant=fp8, avail mem=14.74 GB, mem usage=2.80 GB.
[2026-09-11 23:46:13 TP0] Memory pool end. avail mem=9.90 GB
[2026-09-11 23:46:14 TP0] Memory pool end. avail mem=9.90 GB
"""


def test_draft_memory_pool_keeps_its_contract_name_and_says_draft(tmp_path: Path) -> None:
    [run] = _runs(tmp_path, SPEC_ERA_C)
    pools = [m.as_contract() for m in run.milestones if m.name == "memory_pool.end"]
    assert [(p["ts"], p["model"]) for p in pools] == [
        ("2026-09-11T23:46:13", "target"), ("2026-09-11T23:46:14", "draft")]
    loads = [m.name for m in run.milestones if m.name.endswith("load_weight.begin")]
    assert loads == ["load_weight.begin", "draft.load_weight.begin"]


def test_a_log_that_begins_mid_startup_says_its_time_is_a_lower_bound(tmp_path: Path) -> None:
    text = (
        "[2026-08-15 22:08:22] Load weight end. elapsed=346.90 s, type=X, quant=fp8, avail mem=47.35 GB, mem usage=64.88 GB.\n"
        "[2026-08-15 22:08:27] Uvicorn running on http://0.0.0.0:30000\n"
        "[2026-08-15 22:09:00] The server is fired up and ready to roll!\n"
    )
    [run] = _runs(tmp_path, text)
    assert run.outcome == "ready"
    assert run.total_seconds == 38.0
    assert run.begins_mid_startup
    assert not any(p.name == "launch" for p in run.run_phases())  # never seen, so never claimed


def test_ray_repeated_echo_after_a_crash_is_not_a_restart(tmp_path: Path) -> None:
    text = (
        "(WorkerDict pid=1) [2025-11-20 01:12:06 TP0] Init torch distributed begin.\n"
        "(WorkerDict pid=1) [2025-11-20 01:13:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '(WorkerDict pid=1)   File "x.py", line 1, in f\n'
        "(WorkerDict pid=1) RuntimeError: TCPStore ping failed\n"
        "(WorkerDict pid=2) [2025-11-20 01:13:05 TP0] Init torch distributed begin. [repeated 3x across cluster]\n"
    )
    runs = _runs(tmp_path, text)
    assert len(runs) == 1
    assert runs[0].outcome == "crashed"


def test_server_declaring_itself_stuck_before_ready_is_a_hang(tmp_path: Path) -> None:
    text = (
        "[2026-06-05 18:12:33] Capture cuda graph begin. This can take up to several minutes. avail mem=20.67 GB\n"
        "[2026-06-05 18:12:34] Capture cuda graph end. Time elapsed: 1.23 s. mem usage=0.09 GB. avail mem=20.58 GB.\n"
        '[2026-06-05 18:17:27] INFO:     127.0.0.1:47780 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
        "[2026-06-05 18:17:52] Health check failed. Server couldn't get a response from detokenizer for last 20 "
        "seconds. tic start time: 18:17:32. last_heartbeat time: 18:11:33\n"
    )
    [run] = _runs(tmp_path, text)
    assert run.outcome == "crashed"
    assert run.crash is not None and run.crash.category == "hang" and run.crash.line == 4


def test_health_failure_followed_by_progress_is_not_fatal(tmp_path: Path) -> None:
    text = (
        "[2026-06-05 18:17:52] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.\n"
        "[2026-06-05 18:18:00] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        "[2026-06-05 18:18:09] The server is fired up and ready to roll!\n"
    )
    [run] = _runs(tmp_path, text)
    assert run.outcome == "ready"


def test_engine_startup_timings_keep_their_order_and_nesting() -> None:
    from firedup.formats._sglang_read import parse_timings

    got = parse_timings("load_weight=616.34, kv_cache_allocation=6.68, scheduler_e2e=761.30, "
                        "cuda_graph={prefill=0.00, decode=0.00, target_verify=13.48}, tokenizer_e2e=766.76")
    assert list(got) == ["load_weight", "kv_cache_allocation", "scheduler_e2e", "cuda_graph", "tokenizer_e2e"]
    assert got["cuda_graph"] == {"prefill": 0.0, "decode": 0.0, "target_verify": 13.48}


CRASH_IN_CAPTURE = """\
[2026-11-07 04:28:48] server_args={'model_path': 'm', 'tp_size': 2}
[2026-11-07 04:28:50 TP0] Memory pool end. avail mem=8.40 GB
[2026-11-07 04:28:50 TP1] Memory pool end. avail mem=8.41 GB
[2026-11-07 04:29:09 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=6.20 GB
[2026-11-07 04:29:10 TP1] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=6.21 GB
[2026-11-07 04:29:29 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/srt/model_executor/runner/decode_cuda_graph_runner.py", line 486, in capture
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
[2026-11-07 04:29:30] Received sigquit from a child process. It usually means the child failed.
"""


def test_a_phase_open_at_a_crash_lasts_until_the_crash_not_unattributed(tmp_path: Path) -> None:
    # Bug: the verify capture that was running when TP1 died had no duration, so its
    # 20 s showed as `unattributed` (found by the synthetic oom-in-cuda-graph sample).
    [run] = _runs(tmp_path, CRASH_IN_CAPTURE)
    assert run.outcome == "crashed" and run.crash is not None and run.crash.phase == "cuda_graph"
    [graph] = [p for p in run.run_phases() if p.name == "cuda_graph"]
    assert (graph.detail, graph.seconds, graph.open) == ("verify", 20.0, True)  # 04:29:09 -> 04:29:29
    assert graph.end is not None and graph.end.iso == "2026-11-07T04:29:29"
    inside = [p for p in run.run_phases() if p.name == "unattributed" and p.start and p.end
              and p.start.iso < "2026-11-07T04:29:29" and p.end.iso > "2026-11-07T04:29:09"]
    assert inside == []


def test_nccl_shared_memory_failure_gets_the_shm_hint_not_the_network_one(tmp_path: Path) -> None:
    text = (
        "[2026-11-07 12:03:11 TP0] Init parallel begin.\n"
        "[2026-11-07 12:03:14 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/distributed/parallel_state.py", line 1, in init_distributed_environment\n'
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled system error\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
        "Last error:\n"
        "Error while creating shared memory segment /dev/shm/nccl-TL2C5S (size 9637888), error: No space left on device (28)\n"
        "[2026-11-07 12:03:15] Received sigquit from a child process. It usually means the child failed.\n"
    )
    [run] = _runs(tmp_path, text)
    assert run.crash is not None and run.crash.category == "distributed"
    assert run.crash.hint is not None and "--shm-size" in run.crash.hint


def test_stage_changes_end_where_an_incomplete_run_stops(tmp_path: Path) -> None:
    """`firedup wait` follows `stage_changes` live; `stopped_in` places a cut-off log. One rule."""
    from conftest import FIXTURES, SAMPLE_LOGS, corpus_logs
    from firedup.timeline.stages import stage_changes

    cut = []
    for fixture in sorted(FIXTURES.glob("*.log")):  # every fixture cut short at each third of it
        lines = fixture.read_text().splitlines(keepends=True)
        for k in (1, 2):
            cut.append(tmp_path / f"{fixture.stem}-{k}.log")
            cut[-1].write_text("".join(lines[: len(lines) * k // 3]))
    logs = [*sorted(SAMPLE_LOGS.glob("*.log")), *sorted(FIXTURES.glob("*.log")), *cut, *corpus_logs("sglang"),
            *corpus_logs("vllm")]
    checked = 0
    for run in parse_paths([str(p) for p in logs]).runs:
        changes = stage_changes(run)
        assert changes[0] == ("launch", None)
        assert all(a[0] != b[0] for a, b in itertools.pairwise(changes))  # changes only
        if run.outcome == "incomplete":
            assert changes[-1][0] == run.stopped_in, run.source
            checked += 1
        if run.outcome == "ready" and run.ready_kind == "server":
            assert changes[-1][0] == "serving" or any(s == "serving" for s, _ in changes), run.source
    assert checked >= len(cut) // 2


# --- runs that begin before the server's own clock (lines with only a collector's stamp) ----


def test_a_run_begins_at_its_first_line_with_a_collectors_stamp() -> None:
    """kubectl-stamped glog lines 8 s before SGLang's first own line: the startup began there."""
    from conftest import FIXTURES

    result = parse_paths([str(FIXTURES / "sglang_kubectl_glog_first.log")])
    [run] = result.runs
    assert run.first_ts is not None and run.first_ts.iso == "2026-10-02T14:03:11"
    assert run.first_line == 1
    assert run.total_seconds == 36.0
    assert run.phase_seconds()["launch"] == 16.0  # to `Init torch distributed begin.` at 14:03:27


@pytest.mark.parametrize(("text", "first_ts", "total"), [
    pytest.param(  # Docker Desktop stamps host-local time, 2 h ahead of the server's UTC
        "2026-10-02 16:03:11.482 I1002 14:03:11.482871   212 transfer_engine_impl.cpp:274] Topology discovery complete.\n"
        "2026-10-02 16:03:19.733 [2026-10-02 14:03:19] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "2026-10-02 16:03:47.254 [2026-10-02 14:03:47] The server is fired up and ready to roll!\n",
        "2026-10-02T14:03:11", 36.0, id="collector-clock-moved-onto-the-servers"),
    pytest.param(  # the offset between the clocks is never seen: the collector's stamps cannot be placed
        "2026-10-02T14:03:11.482913307Z I1002 14:03:11.482871   212 transfer_engine_impl.cpp:274] Topology discovery complete.\n"
        "[2026-10-02 16:03:19] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2026-10-02 16:03:47] The server is fired up and ready to roll!\n",
        "2026-10-02T16:03:19", 28.0, id="without-a-line-carrying-both-stamps-the-servers-clock"),
])
def test_a_run_begins_at_its_first_collector_stamped_line_on_the_servers_clock(
        tmp_path: Path, text: str, first_ts: str, total: float) -> None:
    [run] = _runs(tmp_path, text)
    assert run.first_ts is not None and run.first_ts.iso == first_ts
    assert run.total_seconds == total


def test_a_restart_begins_at_its_own_first_collector_stamped_line(tmp_path: Path) -> None:
    # journald: systemd's `Started` line opens each run; the first run never printed vLLM's clock
    text = (
        "-- Boot 45b35623d291431fa703c9232d2ea952 --\n"
        "Feb 22 06:34:42 host systemd[1]: Started vllm.service - vLLM server.\n"
        "Feb 22 06:34:46 host env[1633]: RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}\n"
        "Feb 22 06:35:02 host systemd[1]: Started vllm.service - vLLM server.\n"
        "Feb 22 06:35:09 host env[1700]: (APIServer pid=1700) INFO 02-22 06:35:09 [utils.py:261] "
        "non-default args: {'model_tag': 'm'}\n"
        "Feb 22 06:35:30 host env[1700]: (APIServer pid=1700) INFO:     Application startup complete.\n"
    )
    first, second = _runs(tmp_path, text)
    # systemd's line is each run's launch, never its first line (issue 40): the server's is
    assert first.outcome == "crashed" and first.first_ts is not None and first.first_ts.iso.endswith("06:34:46")
    assert first.launch is not None and first.launch.source == "log" and first.launch.line == 2
    assert second.outcome == "ready" and second.first_ts is not None and second.first_ts.iso.endswith("06:35:09")
    assert second.first_line == 5 and second.total_seconds == 21.0
    assert second.launch is not None and second.launch.line == 4 and second.launch_to_ready == 28.0


def test_a_run_never_begins_before_the_line_it_was_cut_at(tmp_path: Path) -> None:
    # The first run shows no clock of its own: its collector-stamped first line is still waiting
    # for an offset when the second run (cut at a rank's second `Init nccl begin.`) gives one.
    text = (
        "2026-09-22T06:40:00Z [gpu_id=0] Init nccl begin.\n"
        "2026-09-22T06:41:00Z [gpu_id=0] The server is fired up and ready to roll!\n"
        "2026-09-22T06:50:00Z [gpu_id=0] Init nccl begin.\n"
        "2026-09-22T06:50:05Z [2026-09-22 06:50:05] Load weight begin. avail mem=70.00 GB\n"
        "2026-09-22T06:50:30Z [2026-09-22 06:50:30] The server is fired up and ready to roll!\n"
    )
    first, second = _runs(tmp_path, text)
    assert first.first_ts is not None and first.first_ts.iso == "2026-09-22T06:40:00"
    assert second.first_line == 3
    assert second.first_ts is not None and second.first_ts.iso == "2026-09-22T06:50:05"


# --- facts of corpus logs, on small fixtures derived from them -------------------------------

LOGS_2026 = Path(__file__).resolve().parent / "fixtures" / "logs2026"


def test_rays_repeated_summary_of_another_engines_tp0_is_no_draft_model() -> None:
    """verl/Ray: two engines' TP0 print the same lines; Ray's summary is never TP0's second model."""
    [run] = parse_paths([str(LOGS_2026 / "sglang_ray_two_engines_tp0.log")]).runs
    assert not [p for p in run.phases if p.name.startswith("draft.")]
    assert not [m for m in run.milestones if m.name.startswith("draft.") or m.model == "draft"]


RAY_TWO_ENGINES = LOGS_2026 / "sglang_ray_two_engines_interleaved.log"


def _ray_log_one_engine_silent(path: Path) -> Path:
    """Two engines under one Ray driver, interleaved, a minute after the driver's first line:
    pid 100 loads its weights for 120 s without a line while pid 200 prints one every 5 s."""
    a, b = "(WorkerDict pid=100) [2025-11-20 01:{}] ", "(WorkerDict pid=200) [2025-11-20 01:{}] "
    lines = ["(WorkerDict pid=300) [2025-11-20 00:59:00] Using default HuggingFace chat template"]
    for tag in (a, b):
        lines.append(tag.format("00:00 TP0") + "Init torch distributed begin.")
    for tag in (a, b):
        lines.append(tag.format("00:01 TP0") + "Init torch distributed ends. mem usage=0.10 GB")
    for tag in (a, b):
        lines.append(tag.format("00:02 TP0") + "Load weight begin. avail mem=70.00 GB")
    for second in range(7, 120, 5):
        lines.append(b.format(f"{second // 60:02d}:{second % 60:02d} TP0") + f"Fetching shard {second // 5} of 24")
    lines.append(b.format("02:00 TP0") + "Load weight end. elapsed=118.00 s, type=X, avail mem=60.00 GB, mem usage=10.00 GB.")
    lines.append(a.format("02:02 TP0") + "Load weight end. elapsed=120.00 s, type=X, avail mem=60.00 GB, mem usage=10.00 GB.")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("scanner", ["incremental", "batch"])
def test_an_engine_among_several_is_silent_while_another_prints(tmp_path: Path, scanner: str) -> None:
    """Each engine's silences come from its own process's lines: the other engine's lines
    every 5 s no longer hide the 120 s in which pid 100 printed nothing (it had no silence).
    A minute in which no line came at all stays a silence of the engine whose line ended it."""
    runs = parse_paths([str(_ray_log_one_engine_silent(tmp_path / "ray.log"))], scanner=scanner).runs
    by_pid = {next(int(w.split("pid ")[1].split(" ")[0]) for w in run.warnings if "this run is the one of pid" in w): run
              for run in runs}
    assert sorted(by_pid) == [100, 200]
    silent = by_pid[100].silences
    assert [(s.seconds, s.since_line, s.line, s.phase) for s in silent] == [
        (60.0, 1, 2, "launch"), (120.0, 6, 32, "load_weights")]
    assert by_pid[200].silences == []


@pytest.mark.parametrize("scanner", ["incremental", "batch"])
def test_two_engines_under_one_ray_driver_are_two_runs(scanner: str) -> None:
    """verl/Ray: each `(WorkerDict pid=N)` hosting its own TP0/TP1 is an engine of its own;
    merged, the second engine's TP0 `Init torch distributed begin` was a phantom draft and
    one engine's crash stood for both."""
    first, second = parse_paths([str(RAY_TWO_ENGINES)], scanner=scanner).runs
    for run in (first, second):
        assert not [p for p in run.phases if p.name.startswith("draft.")]
        assert not [m for m in run.milestones if m.name.startswith("draft.") or m.model == "draft"]
        assert run.outcome == "crashed"
    # pid 26107: the job's first line (a launcher's, before any engine spoke) and its own TP0/TP1
    assert first.first_ts is not None and first.first_ts.iso == "2025-11-20T01:12:06"
    assert [(m.name, m.rank, m.line) for m in first.milestones if m.name == "dist_init.begin"] == [
        ("dist_init.begin", "TP0", 3), ("dist_init.begin", "TP1", 10)]  # line 10 ends in "[repeated 3x ...]"
    assert first.crash is not None and first.crash.line == 11 and first.crash.category == "distributed"
    assert first.crash.message.startswith("torch.distributed.DistStoreError: Timed out after 601 seconds")
    assert "pid 26107" in first.warnings[-1]
    # pid 26103: its own TP0 line and the crash of its TP1
    assert [(m.name, m.rank, m.line) for m in second.milestones if m.name == "dist_init.begin"] == [
        ("dist_init.begin", "TP0", 4)]
    assert second.crash is not None and second.crash.line == 5 and second.crash.category == "distributed"
    assert second.crash.message.startswith("RuntimeError: nonce == returnedNonce")
    assert "pid 26103" in second.warnings[-1]


def test_ranks_of_one_engine_in_separate_processes_stay_one_run(tmp_path: Path) -> None:
    """Processes that print different ranks may be the ranks of one engine: only the same
    rank under two processes proves two engines."""
    text = (
        "(WorkerDict pid=1) [2025-11-20 01:12:06 TP0] Init torch distributed begin.\n"
        "(WorkerDict pid=2) [2025-11-20 01:12:06 TP1] Init torch distributed begin.\n"
        "(WorkerDict pid=1) [2025-11-20 01:12:09 TP0] Init torch distributed ends. mem usage=0.95 GB\n"
        "(WorkerDict pid=2) [2025-11-20 01:12:09 TP1] Init torch distributed ends. mem usage=0.95 GB\n"
    )
    [run] = _runs(tmp_path, text)
    assert run.ranks == ["TP0", "TP1"]
    assert [m.name for m in run.milestones].count("dist_init.end") == 2
    assert not [w for w in run.warnings if "engines" in w]


def test_an_args_line_cut_by_an_ellipsis_still_names_the_model() -> None:
    [run] = parse_paths([str(LOGS_2026 / "sglang_args_ellipsis.log")]).runs
    assert run.config.get("model_path") == "Qwen/Qwen3-8B"
    assert run.config_complete is False


def test_a_failed_warm_up_is_the_warmup_phase_the_crash_names() -> None:
    path = LOGS_2026 / "sglang_warmup_fail_502.log"
    [run] = parse_paths([str(path)]).runs
    assert run.crash is not None and run.crash.phase == "warmup"
    [warmup] = [p for p in run.run_phases() if p.name == "warmup"]
    assert warmup.seconds == pytest.approx(121.0)  # 12:34:50 Uvicorn running -> 12:36:51 the failure
    assert not [p for p in run.run_phases() if p.name == "unattributed" and (p.seconds or 0) > 1]


# --- flags the log implies ----------------------------------------------------------------

IMPLIED = Path(__file__).resolve().parent / "fixtures" / "implied"


@pytest.mark.parametrize("scanner", ["incremental", "batch"])
def test_an_excerpt_without_args_gets_tp_from_its_rank_tags_and_graphs_from_the_capture(scanner: str) -> None:
    """No args line: every rank TP0..TP7 tags its lines (none of them a line a rule knows), and
    the capture shows only as its sizes line and progress bar."""
    result = parse_paths([str(IMPLIED / "tp8_capture_excerpt.log")], scanner=scanner)
    (run,) = result.runs
    assert run.config["tp_size"] == 8
    assert run.config_inferred["tp_size"].startswith("inferred from rank tags")
    assert run.config["disable_cuda_graph"] is False
    assert run.config_inferred["disable_cuda_graph"].startswith("inferred from graph capture")


def test_graphs_captured_in_a_vllm_excerpt_are_inferred_from_the_capture_bar() -> None:
    (run,) = parse_paths([str(IMPLIED / "vllm_capture_bars_excerpt.log")]).runs
    assert run.config["disable_cuda_graph"] is False
    assert run.config_inferred["disable_cuda_graph"].startswith("inferred from graph capture")


def test_a_stated_flag_is_never_overridden_by_what_the_log_implies() -> None:
    """The args line says tp_size=16 (two nodes); this node's ranks TP0..TP7 do not change it."""
    (run,) = parse_paths([str(IMPLIED / "tp16_stated_node0.log")]).runs
    assert run.config["tp_size"] == 16 and run.config["disable_cuda_graph"] is False
    assert "tp_size" not in run.config_inferred and "disable_cuda_graph" not in run.config_inferred


# --- ready only where something serves -----------------------------------------------------


def test_a_disaggregated_worker_without_a_server_is_engine_ready_not_ready() -> None:
    """A decode worker another process serves (NVIDIA Dynamo): the engine initialised
    (`init engine ... took`), no HTTP server in the log. Not `ready`: what the log shows."""
    from firedup.render.text import outcome_line

    path = Path(__file__).resolve().parent / "fixtures" / "engine_only" / "dynamo_decode_worker.log"
    (run,) = parse_paths([str(path)]).runs
    assert (run.outcome, run.ready_ts, run.ready_kind) == ("incomplete", None, "engine")
    assert run.ready_evidence == "line 11: the engine's own ready line; no server in this log"
    assert run.end_ts is not None and run.end_ts.iso == "2025-07-25T02:04:44" and run.seconds_to_end == 39.0
    assert run.as_contract()["outcome"] == "incomplete" and run.as_contract()["ready_ts"] is None
    assert outcome_line(run, launch=False) == "ENGINE READY in 39 s: no server in this log"
    # the second clock: vLLM's typical 24 s from launch to the first timed line (issue 27)
    assert outcome_line(run) == "ENGINE READY in 39 s, ~1 min 03 s from launch: no server in this log"


@pytest.mark.parametrize("scanner", ["incremental", "batch"])
def test_a_line_numbered_copy_of_a_log_is_the_same_runs(tmp_path: Path, scanner: str) -> None:
    """`cat -n` (or a report quoting a log with its line numbers) puts a number before each
    line: the engine's header is found behind it (an unknown wrapper), but a line number names
    no source, so the restart log stays two runs, not one engine per line."""
    source = Path(__file__).resolve().parent.parent / "sample_logs" / "crash-then-restart.log"
    numbered = tmp_path / "numbered.log"
    numbered.write_text("".join(f"{i:6d}\t{line}" for i, line in
                                enumerate(source.read_text().splitlines(keepends=True), 1)))
    plain = parse_paths([str(source)], scanner=scanner).runs
    runs = parse_paths([str(numbered)], scanner=scanner).runs
    assert [(r.outcome, r.seconds_to_end, [m.name for m in r.milestones]) for r in runs] == [
        (r.outcome, r.seconds_to_end, [m.name for m in r.milestones]) for r in plain]
    assert not any("engines told apart" in w for r in runs for w in r.warnings)


def test_ten_thousand_restarts_share_out_gaps_and_unmatched_lines_linearly(tmp_path: Path) -> None:
    """Each run took its gaps and unknown lines by a pass over all of them: 10,000 restarts in
    one file were 10,000 passes over 10,000 (36 s). Counted, not timed: every item's line is
    looked at a bounded number of times, and every run still gets exactly its own."""
    from firedup.formats import get_format
    from firedup.read.engine import Gap, Unmatched, scan
    from firedup.read.sources import Source, read_lines
    from firedup.timeline.build import build_timeline

    lines = []
    for i in range(400):
        s, e = f"2026-03-01 {i // 60:02d}:{i % 60:02d}:00", f"2026-03-01 {i // 60:02d}:{i % 60:02d}:20"
        lines += [f"[{s}] server_args=ServerArgs(model_path='m', tp_size=1)", f"[{s}] something unknown {i}",
                  f"[{e}] Load weight begin. avail mem=70.00 GB", f"[{e}] The server is fired up and ready to roll!"]
    path = tmp_path / "restarts.log"
    path.write_text("\n".join(lines) + "\n")
    fmt = get_format("sglang")
    events, stats, _clock = scan(fmt, read_lines(Source(str(path), path)))
    looked = [0]

    class Counted:
        def __init__(self, item: Gap | Unmatched) -> None:
            self.item = item

        @property
        def line(self) -> int:
            looked[0] += 1
            return self.item.line

        def __getattr__(self, name: str) -> object:
            return getattr(self.item, name)

    want = build_timeline(events, str(path), fmt, stats=stats)
    assert len(want) == 400 and len(stats.unmatched) >= 400
    n = len(stats.gaps) + len(stats.unmatched)
    stats.gaps = [Counted(g) for g in stats.gaps]  # type: ignore[misc]
    stats.unmatched = [Counted(u) for u in stats.unmatched]  # type: ignore[misc]
    got = build_timeline(events, str(path), fmt, stats=stats)
    assert looked[0] <= 4 * n, f"{looked[0]} looks at {n} items' lines: quadratic in the runs"
    assert [run.as_contract() for run in got] == [run.as_contract() for run in want]


def test_a_ready_line_dated_before_the_start_is_a_warning_not_a_duration(tmp_path: Path) -> None:
    """Issue 42, class 6: a ready line dated 2020 after 2026 start lines was "ready in 0 ms",
    its phases over 100 % of it, with no warning."""
    text = (SAMPLES / "small-tp1.log").read_text(encoding="utf-8")
    stepped = text.replace("[2026-06-02 14:22:24] The server is fired", "[2020-06-02 14:22:24] The server is fired")
    assert stepped != text
    run, = _runs(tmp_path, stepped)
    assert run.outcome == "ready"
    assert run.ready_ts is None and run.total_seconds is None and run.seconds_to_end is None
    assert any("stepped back" in w and "2020-06-02T14:22:24" in w for w in run.warnings), run.warnings
    assert all(p.end is None or p.end.dt.year == 2026 for p in run.phases)


def test_lines_a_second_out_of_order_are_not_a_clock_stepping_back(tmp_path: Path) -> None:
    text = (SAMPLES / "small-tp1.log").read_text(encoding="utf-8")
    swapped = text.replace("[2026-06-02 14:21:11] server_args", "[2026-06-02 14:21:09] server_args")
    run, = _runs(tmp_path, swapped)
    assert run.total_seconds == 74.0 and not any("stepped back" in w for w in run.warnings)


# --- two servers in one file (issue 42, class 1) -----------------------------------------------------

from hypothesis import HealthCheck  # noqa: E402

_LOGS = {name: [line + "\n" for line in (SAMPLES / f"{name}.log").read_bytes().decode().split("\n") if line]
         for name in ("small-tp1", "sglang-warm-start", "vllm-warm-start", "vllm-tp2-eager")}


def _merged(logs: list[list[str]], picks: list[int]) -> str:
    """The logs' lines interleaved in the order `picks` draws (each log's own order kept)."""
    at, out = [0] * len(logs), []
    for pick in picks:
        k = pick % len(logs)
        for j in (k, *range(len(logs))):  # the drawn log, else the first with lines left
            if at[j] < len(logs[j]):
                out.append(logs[j][at[j]])
                at[j] += 1
                break
    for j, log in enumerate(logs):
        out.extend(log[at[j]:])
    return "".join(out)


def _alone(tmp_path: Path, name: str) -> tuple[object, ...]:
    run, = _runs(tmp_path, "".join(_LOGS[name]), f"{name}-alone.log")
    return run.outcome, run.config.get("model_path") or run.config.get("model"), run.ready_ts


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sampled_from([("small-tp1", "sglang-warm-start"), ("small-tp1", "vllm-warm-start"),
                              ("small-tp1", "sglang-warm-start", "vllm-tp2-eager")]),
       picks=st.lists(st.integers(0, 2), min_size=50, max_size=600))
def test_compose_replicas_interleaved_are_one_run_each(tmp_path_factory: pytest.TempPathFactory,
                                                       names: tuple[str, ...], picks: list[int]) -> None:
    """`docker compose logs` of several services: was one incomplete 4 s run and one wrong one."""
    tmp = tmp_path_factory.mktemp("compose")
    tagged = [[f"server-{i + 1}  | {line}" for line in _LOGS[name]] for i, name in enumerate(names)]
    runs = _runs(tmp, _merged(tagged, picks))
    got = sorted(((r.outcome, r.config.get("model_path") or r.config.get("model"), r.ready_ts) for r in runs), key=str)
    assert got == sorted((_alone(tmp, name) for name in names), key=str)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, 1), min_size=50, max_size=400))
def test_two_engines_interleaved_untagged_are_both_read_and_said(tmp_path_factory: pytest.TempPathFactory,
                                                                 picks: list[int]) -> None:
    """An SGLang and a vLLM log interleaved: only the vLLM run was read, the SGLang one dropped."""
    tmp = tmp_path_factory.mktemp("mixed")
    runs = _runs(tmp, _merged([_LOGS["small-tp1"], _LOGS["vllm-warm-start"]], picks))
    assert sorted(r.engine for r in runs) == ["sglang", "vllm"]
    by_engine = {r.engine: r for r in runs}
    assert (by_engine["sglang"].outcome, by_engine["sglang"].ready_ts) == _alone(tmp, "small-tp1")[::2]
    assert (by_engine["vllm"].outcome, by_engine["vllm"].ready_ts) == _alone(tmp, "vllm-warm-start")[::2]
    assert all(any("mixes the logs of two servers" in w for w in r.warnings) for r in runs)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blocks=st.lists(st.integers(1, 6), min_size=40, max_size=120))
def test_two_untagged_servers_of_one_engine_are_said_to_mix(tmp_path_factory: pytest.TempPathFactory,
                                                            blocks: list[int]) -> None:
    """Two SGLang logs interleaved (blocks of 1-6 lines in turn) with nothing to tell them
    apart: "READY in at least 3911 h"."""
    tmp = tmp_path_factory.mktemp("untagged")
    picks = [i % 2 for i, size in enumerate(blocks) for _ in range(size)]
    runs = _runs(tmp, _merged([_LOGS["small-tp1"], _LOGS["sglang-warm-start"]], picks))
    assert runs
    for run in runs:
        assert any("mixes servers" in w for w in run.warnings), run.warnings
        assert run.total_seconds is None or run.total_seconds < 3600


# --- issue 42, class 8: tp_size from rank tags, exact only where nothing says more ranks exist --

CLASS8 = Path(__file__).resolve().parent / "fixtures" / "class8"


@pytest.mark.parametrize(("name", "tp", "least", "why"), [
    # every rank TP0..TP7 tags a line (vLLM's worker processes): the size
    ("vllm_worker_tp0_tp7.log", 8, 8, "processes of ranks TP0..TP7"),
    # an excerpt that kept TP0, TP3 and TP7: at least 8, the size unknown
    ("sglang_ranks_tp0_tp3_tp7.log", None, 8, "TP7 means 8 ranks or more"),
    # node 2 of a TP16 run (corpus 020's shape): TP11, TP15 prove 16 or more
    ("sglang_node2_tp11_tp15.log", None, 16, "TP15 means 16 ranks or more"),
    # TP0..TP7, but a line says the run spans nodes (`--nnodes 2`), or NCCL's communicator has 16
    ("sglang_tp0_tp7_nnodes2.log", None, 8, "line 1 says the run spans nodes"),
    ("sglang_tp0_tp7_nccl_nranks16.log", None, 8, "line 1 names a communicator of 16 ranks"),
    # with two pipeline stages on the node, NCCL's world of 8 is 4 x 2: no sign of more TP ranks
    ("sglang_pp2_tp4_nccl_nranks8.log", 4, 4, "ranks TP0..TP3 print lines"),
])
def test_rank_tags_give_tp_size_or_only_a_bound(name: str, tp: int | None, least: int, why: str) -> None:
    (run,) = parse_paths([str(CLASS8 / name)]).runs
    assert run.config.get("tp_size") == tp
    assert run.config_at_least == {"tp_size": least}
    assert run.config_inferred["tp_size"].startswith("inferred from rank tags") and why in run.config_inferred["tp_size"]
    assert run.as_contract()["config_at_least"] == {"tp_size": least}


_SIGNS = ("[2026-03-01 09:59:58] nnodes=2, node_rank=0", "host:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 32 nNodes 4",
          "[2026-03-01 09:59:58] node_rank=1")


@settings(max_examples=60, deadline=None)
@given(ranks=st.sets(st.integers(0, 15), min_size=1, max_size=16), order=st.randoms(use_true_random=False),
       deco=st.sampled_from(["TP{r}", "TP{r} EP{r}", "DP{r} TP{r}", "PP0 TP{r}"]),
       sign=st.sampled_from((None, *_SIGNS)))
def test_rank_tags_never_give_a_size_below_the_ranks_they_show(tmp_path_factory: pytest.TempPathFactory, ranks: set[int],
                                                                order: Any, deco: str, sign: str | None) -> None:
    """Any subset of ranks, any order, any decoration, with or without a line saying there is
    more: the bound is the highest rank + 1; the size is set only for TP0..TPn-1 with no such line."""
    shown = sorted(ranks)
    order.shuffle(shown)
    lines = [sign] if sign else []
    lines += [f"[2026-03-01 10:00:{i:02d} {deco.format(r=r)}] Load weight end. type=Qwen3ForCausalLM, "
              f"avail mem=60.00 GB, mem usage=16.00 GB." for i, r in enumerate(shown)]
    path = tmp_path_factory.mktemp("ranks") / "excerpt.log"
    path.write_text("\n".join(lines) + "\n")
    (run,) = parse_paths([str(path)]).runs
    top = max(ranks)
    if top == 0:
        assert "tp_size" not in run.config_at_least
        return
    assert run.config_at_least == {"tp_size": top + 1}
    exact = ranks == set(range(top + 1)) and sign is None
    assert run.config.get("tp_size") == (top + 1 if exact else None)

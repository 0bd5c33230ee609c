"""Crash diagnosis: one small SGLang log per category, in the exact shapes of SGLang's crash
messages (docs/engines/sglang.md, "Crashes and exits") and of the real logs they were cut from.

Each fixture's expected first fatal line number is found by searching the fixture's text,
and its message and timestamp are copied by hand from the file, so a test never just
re-runs the code under test.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from firedup.formats import get_format
from firedup.timeline.crash import CATEGORIES, categorise, diagnose_error, hint_for, is_exception_line
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

CRASH = Path(__file__).resolve().parent / "fixtures" / "crash"


def runs_of(path: Path) -> list[Run]:
    result = parse_paths([str(path)])
    assert result.errors == []
    return result.runs


def only_run(path: Path) -> Run:
    runs = runs_of(path)
    assert len(runs) == 1, [r.outcome for r in runs]
    return runs[0]


def line_number(path: Path, marker: str) -> int:
    """1-based number of the first line of `path` that contains `marker`."""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path.name}")


@dataclass(frozen=True)
class Expected:
    category: str
    phase: str
    first_line: str  # a marker of the first fatal line
    message: str  # the exception's last line
    ts: str | None
    hint_mentions: tuple[str, ...] = ()


EXPECTED = {
    "oom_graph_capture": Expected(
        "oom", "cuda_graph", "Scheduler hit an exception",
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB. "
        "GPU 0 has a total capacity of 79.10 GiB of which 301.06 MiB is free.",
        "2025-10-06T10:00:47", ("--cuda-graph-max-bs", "--mem-fraction-static")),
    "oom_kv_cache": Expected(
        "oom", "kv_cache", "Scheduler hit an exception",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        "2025-06-12T09:14:03", ("--mem-fraction-static",)),
    "distributed_nccl": Expected(
        "distributed", "dist_init", "TP11] Scheduler hit an exception",
        "RuntimeError: NCCL error: remote process exited or there was a network error",
        "2026-02-27T15:27:13", ("--dist-init-addr",)),
    "distributed_gloo": Expected(
        "distributed", "dist_init", "Scheduler hit an exception",
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        "2025-04-02T11:21:10", ("--dist-init-addr",)),
    "distributed_tcpstore": Expected(
        "distributed", "dist_init", "Scheduler hit an exception",
        'RuntimeError: nonce == returnedNonce INTERNAL ASSERT FAILED at "/pytorch/torch/csrc/distributed/c10d/TCPStore.cpp":418, '
        "please report a bug to PyTorch. Ping failed, invalid nonce returned",
        "2025-11-20T01:13:05"),
    "assertion": Expected(
        "assertion", "kv_cache", "Scheduler hit an exception", "AssertionError", "2026-05-12T08:01:11"),
    "config_value_error": Expected(
        "config", "cuda_graph", "Scheduler hit an exception",
        "ValueError: FlashInfer allreduce fusion requires SM90 or SM10X NVIDIA GPUs.", "2026-06-28T23:41:27"),
    "config_usage": Expected(
        "config", "launch", "launch_server.py: error:",
        "launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
        "--cuda-graph-max-bs-prefill", None),
    "hang": Expected(
        "hang", "warmup", "Health check failed.",
        "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: 11:29:40. last_heartbeat time: 11:20:02", "2025-10-06T11:30:00", ("py-spy",)),
    "import": Expected(
        "import", "launch", "Traceback (most recent call last):",
        "ImportError: /usr/local/lib/python3.10/dist-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi", None),
    "port_in_use": Expected(
        "port_in_use", "http_start", "[Errno 98]",
        "[Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
        "2025-10-06T10:01:03", ("--port",)),
    "warmup": Expected(
        "warmup", "warmup", "Initialization failed. warmup error",
        "AssertionError: res=<Response [502]>, res.text='<html><head><title>502 Bad Gateway</title></head></html>'",
        "2026-07-09T12:36:51", ("NO_PROXY",)),
    "killed": Expected(
        "killed", "load_weights", " Killed ",
        "./serve.sh: line 7: 2502678 Killed                  python3 -m sglang.launch_server "
        "--model-path deepseek-ai/DeepSeek-V3 --tp-size 8 --trust-remote-code",
        "2025-03-12T08:14:23", ("dmesg",)),
    "scheduler_died": Expected(
        "scheduler_died", "cuda_graph", "Rank 0 scheduler is dead", "EOFError", "2025-06-02T14:20:40"),
    # issue 41: a checkpoint of another shape than the model's config (was `unknown`, no hint)
    "checkpoint_mismatch": Expected(
        "checkpoint_mismatch", "load_weights", "Scheduler hit an exception",
        "RuntimeError: The size of tensor a (4096) must match the size of tensor b (2048) at non-singleton dimension 1",
        "2026-06-02T09:12:34", ("config.json", "shard of another model")),
    "unknown": Expected(
        "unknown", "load_weights", "Scheduler hit an exception",
        "NameError: name 'is_moe_prefill' is not defined", "2026-05-20T10:03:40"),
}


# The categories of issue 2 (SGLang), plus "hang" (a server that declares itself stuck).
SGLANG_CATEGORIES = {"oom", "distributed", "assertion", "config", "import", "port_in_use", "warmup", "killed",
                     "scheduler_died", "unknown", "hang", "checkpoint_mismatch"}


def test_every_category_has_a_fixture() -> None:
    assert set(CATEGORIES) >= SGLANG_CATEGORIES
    assert {e.category for e in EXPECTED.values()} == SGLANG_CATEGORIES


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_crash_category_phase_line_message_and_hint(name: str) -> None:
    path = CRASH / f"{name}.log"
    want = EXPECTED[name]
    run = only_run(path)
    assert run.outcome == "crashed"
    assert run.ready_ts is None
    crash = run.crash
    assert crash is not None
    assert crash.category == want.category
    assert crash.phase == want.phase
    assert crash.line == line_number(path, want.first_line)
    assert crash.first_line in path.read_text().splitlines()[crash.line - 1]
    assert crash.message == want.message
    assert (crash.ts.iso if crash.ts else None) == want.ts
    for flag in want.hint_mentions:
        assert crash.hint is not None and flag in crash.hint
    if want.category == "unknown":
        assert crash.hint is None
    # the contract's crash milestone marks the same line
    assert [m.line for m in run.milestones if m.name == "crash"][:1] == [crash.line]


def test_the_config_a_killed_shell_echoes_is_kept() -> None:
    # the shell's "Killed   python3 -m sglang.launch_server --tp-size 8" is both the crash and
    # the only statement of the flags
    run = only_run(CRASH / "killed.log")
    assert run.config["tp_size"] == 8
    assert run.config["model_path"] == "deepseek-ai/DeepSeek-V3"


def test_a_launch_flag_left_without_its_value_is_unknown_not_true(tmp_path: Path) -> None:
    # a real shell echo, "--model  --disable-cuda-graph" (the path is missing): the model is unknown,
    # while the real switch after it is still on
    path = tmp_path / "killed.log"
    path.write_text("[2026-06-29 14:45:55] Init torch distributed begin.\n"
                    "zsh: killed     SGLANG_USE_MLX=1 python -m sglang.launch_server --model  --disable-cuda-graph "
                    "--tp-size 2 --enable-torch-compile --mem-fraction-static\n")
    run = only_run(path)
    assert run.config["model_path"] is None
    assert run.config["mem_fraction_static"] is None
    assert run.config["disable_cuda_graph"] is True
    assert run.config["enable_torch_compile"] is True
    assert run.config["tp_size"] == 2


def test_a_shell_kill_after_a_python_exception_is_its_consequence_not_its_cause() -> None:
    # unknown.log ends with "Killed" (SIGQUIT -> kill_process_tree); the NameError is the cause
    # (regression: the crash was filed under "killed")
    crash = only_run(CRASH / "unknown.log").crash
    assert crash is not None and crash.category == "unknown"


def test_a_torch_bind_warning_is_not_a_crash(tmp_path: Path) -> None:
    # c10d tries another address and goes on; only uvicorn's bind failure ends a startup
    log = (CRASH / "ready_tp1.log").read_text().replace(
        "[2025-08-31 17:49:17] Init torch distributed ends.",
        "[W831 17:49:16.123456789 socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 "
        "(errno: 98 - Address already in use).\n[2025-08-31 17:49:17] Init torch distributed ends.")
    path = tmp_path / "warned.log"
    path.write_text(log)
    run = only_run(path)
    assert (run.outcome, run.crash) == ("ready", None)


def test_oom_in_graph_capture_hint_is_the_well_known_one() -> None:
    assert hint_for("oom", "cuda_graph", get_format("sglang")).startswith("lower --cuda-graph-max-bs or --mem-fraction-static")


def test_hint_names_the_flags_of_the_runs_version_and_its_value() -> None:
    # 0.5.14+ split the batch-size flag per stage; 0.5.20+ refuses the old name (ambiguous prefix).
    hint = hint_for("oom", "cuda_graph", get_format("sglang"), flags={"cuda_graph_backend_decode": "full", "mem_fraction_static": 0.94})
    assert hint is not None
    assert "--cuda-graph-max-bs-decode" in hint and "--cuda-graph-max-bs " not in hint + " "
    assert "(it was 0.94)" in hint


# --- the pieces of the diagnosis ---------------------------------------------------------


@pytest.mark.parametrize(("message", "category"), [
    ("RuntimeError: Rank 0 scheduler died during initialization (exit code: -6). If exit code is -9 (SIGKILL), "
     "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", "scheduler_died"),
    ("RuntimeError: Rank 3 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), "
     "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", "killed"),
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275", "distributed"),
    ("torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to "
     "(10.0.0.1, 29500).", "distributed"),
    ("zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30001')", "port_in_use"),
    ("ModuleNotFoundError: No module named 'flashinfer'", "import"),
    ("launch_server.py: error: unrecognized arguments: --enable-foo", "config"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "oom"),
    ("KeyError: 'model.layers.0.mlp.experts.w13_weight'", "unknown"),
])
def test_categorise(message: str, category: str) -> None:
    assert categorise(message) == category


def test_aftermath_is_read_only_when_there_is_no_exception() -> None:
    after = ["Received sigquit from a child process. It usually means the child failed.", "Killed"]
    with_exception = diagnose_error("KeyError: 'x'", "Scheduler hit an exception: Traceback (most recent call last):",
                                    [], after, "load_weights", has_exception=True)
    without = diagnose_error("Rank 0 scheduler is dead.", "Rank 0 scheduler is dead.", [], after, "load_weights",
                             has_exception=False)
    assert (with_exception.category, without.category) == ("unknown", "scheduler_died")
    assert diagnose_error("Killed", "Killed", [], [], None, has_exception=False).category == "killed"


@pytest.mark.parametrize(("text", "is_exception"), [
    ("ValueError: bad", True), ("AssertionError", True), ("nixl_cu13._bindings.nixlBackendError: NIXL_ERR_BACKEND", True),
    ("Exception: Capture cuda graph failed: CUDA out of memory.", True),
    ('raise RuntimeError(f"NCCL error: {error_str}")', False), ("Possible solutions:", False),
])
def test_exception_lines_are_recognised_by_shape(text: str, is_exception: bool) -> None:
    assert is_exception_line(text) is is_exception


# --- outcome around crashes --------------------------------------------------------------


def test_uvicorn_running_then_application_startup_failed_is_crashed_not_ready() -> None:
    path = CRASH / "http_startup_failed.log"
    run = only_run(path)
    assert run.milestone("http.running") is not None
    assert run.outcome == "crashed"
    assert run.ready_ts is None and run.ready_kind is None
    assert run.crash is not None
    assert run.crash.line == line_number(path, "Application startup failed")


def test_a_complete_startup_is_ready_without_crash() -> None:
    run = only_run(CRASH / "ready_tp1.log")
    assert (run.outcome, run.ready_kind, run.crash) == ("ready", "server", None)
    assert run.ready_ts is not None and run.ready_ts.iso == "2025-08-31T17:49:40"


@pytest.mark.parametrize(("last_marker", "phase"), [
    ("Init torch distributed begin.", "dist_init"),
    ("Load weight begin.", "load_weights"),
    ("Loading safetensors checkpoint shards", "load_weights"),
    ("Load weight end.", "kv_cache"),
    ("Capture cuda graph begin.", "cuda_graph"),
    ("Capture cuda graph end.", "http_start"),
    ("Uvicorn running on", "warmup"),
    ("GET /get_model_info", "warmup"),
])
def test_a_log_cut_mid_phase_is_incomplete_and_names_the_phase(tmp_path: Path, last_marker: str, phase: str) -> None:
    full = (CRASH / "ready_tp1.log").read_text().splitlines(keepends=True)
    cut = line_number(CRASH / "ready_tp1.log", last_marker)
    path = tmp_path / "cut.log"
    path.write_text("".join(full[:cut]))
    run = only_run(path)
    assert (run.outcome, run.stopped_in, run.crash) == ("incomplete", phase, None)


def test_bench_one_batch_is_engine_ready_when_the_model_runner_finished() -> None:
    """A benchmark serves nothing: its engine is ready (the run ends there), the run is not."""
    run = only_run(CRASH / "bench_one_batch.log")
    assert (run.outcome, run.ready_kind, run.ready_ts) == ("incomplete", "engine", None)
    # "max_total_num_tokens=4096" is printed without a timestamp: the last stamp before it
    assert run.end_ts is not None and run.end_ts.iso == "2025-09-28T17:07:13"
    assert run.ready_evidence is not None and run.ready_evidence.endswith("no server in this log")
    assert run.milestone("http.running") is None


LOGS_2026 = Path(__file__).resolve().parent / "fixtures" / "logs2026"


def test_sglang_2024_custom_all_reduce_p2p_failure_is_a_distributed_crash() -> None:
    path = LOGS_2026 / "sglang_2024_p2p_crash.log"
    run = only_run(path)
    assert run.outcome == "crashed" and run.crash is not None
    assert run.crash.category == "distributed"
    assert run.crash.phase == "dist_init"
    assert run.crash.line == line_number(path, "controller_init_state: Traceback")
    assert run.crash.hint is not None and "--disable-custom-all-reduce" in run.crash.hint
    # its vLLM-style lines print no year; 'Init nccl begin' is SGLang up to 0.3.3, all of 2024
    assert run.first_ts is not None and run.first_ts.iso.startswith("2024-07-24")


def test_a_nixl_transfer_error_gets_the_transfer_hint_not_nccls() -> None:
    text = "RuntimeError: nixl_cu13._bindings.nixlBackendError: NIXL_ERR_BACKEND"
    diagnosis = diagnose_error(text, "Scheduler hit an exception: Traceback (most recent call last):", [text], [],
                               "launch", True, fmt=get_format("sglang"))
    assert diagnosis.category == "distributed"
    assert diagnosis.hint is not None and "UCX" in diagnosis.hint and "NCCL_DEBUG" not in diagnosis.hint


def test_a_sigterm_after_ready_is_a_shutdown_not_a_crash() -> None:
    """SGLang 0.5.16 on SIGTERM: drains, answers 503, its scheduler exits -15 and SIGQUIT follows."""
    run = only_run(LOGS_2026 / "sglang_sigterm_after_ready.log")
    assert run.outcome == "ready" and run.crash is None
    assert not [m for m in run.milestones if m.name == "crash"]


def test_a_bare_traceback_takes_the_time_of_the_first_stamped_line_of_its_error() -> None:
    """The traceback's own line has no stamp: the last stamp before it (8 s earlier) is not its
    time. The crash's time is the first stamped line of that error (the sigquit, 02:04:19), and
    its line stays the traceback's first."""
    path = CRASH / "bare_traceback_time.log"
    run = only_run(path)
    assert run.outcome == "crashed" and run.crash is not None
    assert run.crash.line == line_number(path, "Traceback (most recent call last):")
    assert run.crash.first_line == "Traceback (most recent call last):"
    assert run.crash.ts is not None and run.crash.ts.iso == "2025-07-25T02:04:19"
    assert run.end_ts is not None and run.end_ts.iso == "2025-07-25T02:04:19" and run.seconds_to_end == 19.0
    graph = next(p for p in run.run_phases() if p.name == "cuda_graph")
    assert graph.seconds == 8.0  # open until the crash, not until the traceback's borrowed time


def test_a_tensor_size_mismatch_outside_weight_loading_is_no_checkpoint_mismatch() -> None:
    """The same PyTorch words in a forward pass (graph capture) are no checkpoint's fault."""
    message = "RuntimeError: The size of tensor a (4096) must match the size of tensor b (2048) at non-singleton dimension 1"
    traceback = ['  File "/x/model_runner.py", line 1, in capture', "    out = self.model.forward(x)", message]
    assert diagnose_error(message, message, traceback, [], "cuda_graph", True).category == "unknown"
    loading = ['  File "/x/linear.py", line 802, in weight_loader', "    param_data.copy_(loaded_weight)", message]
    assert diagnose_error(message, message, loading, [], "kv_cache", True).category == "checkpoint_mismatch"


# --- issue 42, class 8: a crash in the custom all-reduce ------------------------------------

CLASS8 = Path(__file__).resolve().parent / "fixtures" / "class8"


@pytest.mark.parametrize(("name", "first", "phase"), [
    # the kernel's CUDACHECK prints one bare line and exits: no Python exception follows
    ("vllm_custom_ar_cuda_check.log", "Failed: Cuda error", "cuda_graph"),
    ("vllm_v0_custom_ar_cuda_check.log", "Failed: Cuda error", "cuda_graph"),
    ("sglang_custom_ar_cuda_check.log", "Failed: Cuda error", "cuda_graph"),
    # CustomAllreduce.__init__ -> init_custom_ar raising a CUDA error while the ranks start
    ("vllm_custom_ar_init_traceback.log", "WorkerProc failed to start", "dist_init"),
    ("sglang_custom_ar_init_traceback.log", "Scheduler hit an exception", "dist_init"),
])
def test_a_custom_all_reduce_failure_is_a_crash_with_its_flag_as_the_hint(name: str, first: str, phase: str) -> None:
    path = CLASS8 / name
    run = only_run(path)
    assert run.outcome == "crashed" and run.crash is not None
    assert run.crash.line == line_number(path, first)
    assert run.crash.category == "distributed"
    assert run.crash.phase == phase
    assert run.crash.hint is not None and "--disable-custom-all-reduce" in run.crash.hint


def test_a_cuda_check_line_without_custom_all_reduce_keeps_the_generic_hint() -> None:
    """The engine's cause hint is for the custom all-reduce only: another kernel's CUDACHECK
    is a crash, of the category its words give."""
    fmt = get_format("vllm")
    diagnosis = diagnose_error("Failed: Cuda error /workspace/csrc/quickreduce/quick_reduce.h:12 'out of memory'",
                               "", [], [], "cuda_graph", has_exception=False, fmt=fmt)
    assert diagnosis.category == "oom"
    assert diagnosis.hint is not None and "--disable-custom-all-reduce" not in diagnosis.hint

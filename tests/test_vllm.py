"""vLLM logs through the format registry: line layouts, process ranks, dates, config, crashes,
restarts, sniffing, and the labelled corpus.

The fixtures are short logs written here from vLLM's message formats (docs/engines/vllm.md;
shapes checked against real logs); expected figures are read off the fixture text by hand.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SHARED, corpus_logs
from firedup.formats import get_format, sniff_format
from firedup.formats._vllm_read import derive_config, engine_config, read_args
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

ESC = "\x1b"


def _write(tmp_path: Path, name: str, text: str, mtime: datetime | None = None) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        stamp = time.mktime(mtime.timetuple())
        os.utime(path, (stamp, stamp))
    return path


def _runs(path: Path, default_date: date | None = None) -> list[Run]:
    result = parse_paths([str(path)], default_date=default_date)
    assert not result.errors, result.errors
    return result.runs


def _milestones(run: Run, name: str) -> list[tuple[str | None, str | None]]:
    return [(m.ts.iso if m.ts else None, m.rank) for m in run.milestones if m.name == name]


def _phase(run: Run, name: str) -> float | None:
    found = [p.seconds for p in run.run_phases() if p.name == name]
    return found[0] if found else None


# --- V0 (0.6.x): no bracket before the file name, a TP2 worker process, New Year ----------

V0_NEW_YEAR = """\
INFO 12-31 23:59:50 api_server.py:177] vLLM API server version 0.6.3
INFO 12-31 23:59:50 api_server.py:178] args: Namespace(host=None, port=8000, model='meta-llama/Llama-2-7b-hf', tensor_parallel_size=2, enforce_eager=False, load_format='auto', compilation_config=None, dispatch_function=<function serve at 0x7f3a2c1b5e40>)
INFO 12-31 23:59:52 llm_engine.py:161] Initializing an LLM engine (v0.6.3) with config: model='meta-llama/Llama-2-7b-hf', tensor_parallel_size=2, enforce_eager=False, load_format=LoadFormat.AUTO
(VllmWorkerProcess pid=3230) INFO 12-31 23:59:55 multiproc_worker_utils.py:215] Worker ready; awaiting tasks
INFO 12-31 23:59:56 model_runner.py:680] Starting to load model meta-llama/Llama-2-7b-hf...
(VllmWorkerProcess pid=3230) INFO 12-31 23:59:56 model_runner.py:680] Starting to load model meta-llama/Llama-2-7b-hf...
Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:03<00:00,  1.50s/it]
INFO 01-01 00:00:04 model_runner.py:692] Loading model weights took 6.2 GB
(VllmWorkerProcess pid=3230) INFO 01-01 00:00:04 model_runner.py:692] Loading model weights took 6.2 GB
INFO 01-01 00:00:08 distributed_gpu_executor.py:57] # GPU blocks: 7282, # CPU blocks: 512
INFO 01-01 00:00:09 model_runner.py:1400] Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static.
INFO 01-01 00:00:27 model_runner.py:1528] Graph capturing finished in 18 secs.
INFO 01-01 00:00:28 launcher.py:19] Available routes are:
INFO:     Started server process [3100]
INFO:     Waiting for application startup.
INFO:     Application startup complete.
INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)
"""


def test_v0_layout_new_year_wrap_with_date(tmp_path: Path) -> None:
    path = _write(tmp_path, "v0.log", V0_NEW_YEAR)
    (run,) = _runs(path, default_date=date(2025, 12, 31))
    assert run.engine == "vllm"
    assert run.date_source == "--date"
    assert run.first_ts is not None and run.first_ts.iso == "2025-12-31T23:59:50"
    # uvicorn prints no time: ready takes the last vLLM time (the routes line, 00:00:28)
    assert run.outcome == "ready" and run.ready_ts is not None and run.ready_ts.iso == "2026-01-01T00:00:28"
    assert run.total_seconds == 38.0
    assert _milestones(run, "load_weight.end") == [("2026-01-01T00:00:04", None), ("2026-01-01T00:00:04", "pid3230")]
    assert _phase(run, "cuda_graph") == 18.0  # "finished in 18 secs"
    assert _phase(run, "load_weights") == 8.0  # 23:59:56 -> 00:00:04, the V0 line states memory only
    assert run.config["tp_size"] == 2 and run.config["disable_cuda_graph"] is False
    assert run.config["model_path"] == "meta-llama/Llama-2-7b-hf"
    assert run.config["version"] == "0.6.3"


def test_date_just_after_new_year_puts_december_in_the_year_before(tmp_path: Path) -> None:
    path = _write(tmp_path, "v0.log", V0_NEW_YEAR)
    (run,) = _runs(path, default_date=date(2026, 1, 1))  # "the run of New Year's night"
    assert run.first_ts is not None and run.first_ts.iso == "2025-12-31T23:59:50"
    assert run.ready_ts is not None and run.ready_ts.iso == "2026-01-01T00:00:28"


def test_year_from_mtime_is_the_last_year_before_the_file_was_written(tmp_path: Path) -> None:
    # written in spring 2025: December 31 can only be 2024's (and vLLM 0.6.3, out since
    # autumn 2024, agrees; a file dated years after the release would not: see the 2026 tests)
    path = _write(tmp_path, "v0.log", V0_NEW_YEAR, mtime=datetime(2025, 3, 1, 12, 0))
    (run,) = _runs(path)
    assert run.date_source == "mtime"
    assert run.first_ts is not None and run.first_ts.iso == "2024-12-31T23:59:50"
    assert run.ready_ts is not None and run.ready_ts.iso == "2025-01-01T00:00:28"


def test_year_from_an_outer_prefix_wins_over_date_and_mtime(tmp_path: Path) -> None:
    # a log viewer's local time, two hours ahead of the container's UTC
    text = "".join(f"2026-01-01 01:{i:02d}:50.100 | {line}\n"
                   for i, line in enumerate(V0_NEW_YEAR.splitlines()[:3]))
    path = _write(tmp_path, "viewer.log", text, mtime=datetime(2027, 6, 1))
    (run,) = _runs(path, default_date=date(2024, 6, 1))
    assert run.date_source == "outer"
    assert run.first_ts is not None and run.first_ts.iso == "2025-12-31T23:59:50"


# --- process prefixes give the rank -----------------------------------------------------

PREFIXES = [
    ("(EngineCore_DP0 pid=4210) ", "DP0"),
    ("(EngineCore_1 pid=4211) ", "DP1"),
    ("(EngineCore pid=240) ", "DP0"),
    ("(Worker_TP0 pid=902) ", "TP0"),
    ("(Worker_TP1_EP1 pid=903) ", "TP1"),
    ("(Worker_PP1_TP0 pid=904) ", "PP1 TP0"),
    ("(Worker_DP1_PP0_TP3 pid=905) ", "DP1 PP0 TP3"),
    ("(VllmWorker rank=1 pid=5120) ", "TP1"),
    ("(VllmWorker TP1 pid=5121) ", "TP1"),
    ("(VllmWorker PP1_TP0 pid=5122) ", "PP1 TP0"),
    ("(VllmWorkerProcess pid=3170) ", "pid3170"),
    ("(APIServer pid=4021) ", None),
    ("(ApiServer_1 pid=4022) ", None),
    ("(MainProcess pid=7) ", None),
    ("", None),
    (f"{ESC}[1;36m(Worker_TP1 pid=903){ESC}[0;0m ", "TP1"),  # ANSI colour, 0.11-0.15
    ("[1;36m(VllmWorker rank=1 pid=219)[0;0m ", "TP1"),  # colour codes whose ESC was lost (KServe)
    ("qwen3 | (Worker_TP1 pid=307) ", "TP1"),  # docker compose
    ("[INFO ] PyProcess - W-210-model-stdout: #033[1;36m(VllmWorker rank=1 pid=4)#033[0;0m ", "TP1"),  # DJL
]


def test_process_prefixes_supply_the_rank(tmp_path: Path) -> None:
    lines = [f"{prefix}INFO 05-02 18:30:{i:02d} [gpu_model_runner.py:1329] Starting to load model m..."
             for i, (prefix, _) in enumerate(PREFIXES)]
    path = _write(tmp_path, "prefixes.log", "\n".join(lines) + "\n")
    (run,) = _runs(path, default_date=date(2025, 5, 2))
    got = [rank for _, rank in _milestones(run, "load_weight.begin")]
    assert got == [rank for _, rank in PREFIXES]


def test_json_records_process_name_gives_the_rank(tmp_path: Path) -> None:
    records = [{"asctime": f"2026-02-26 14:45:5{i},123", "levelname": "INFO", "name": "vllm.v1.worker",
                "processName": proc, "process": 100 + i, "message": "Starting to load model m..."}
               for i, proc in enumerate(["VllmWorker-0", "VllmWorker-1", "EngineCore_DP0", "MainProcess"])]
    path = _write(tmp_path, "json.log", "".join(json.dumps(r) + "\n" for r in records))
    (run,) = _runs(path)
    assert [rank for _, rank in _milestones(run, "load_weight.begin")] == ["TP0", "TP1", "DP0", None]
    # the JSON time has a year and milliseconds: the date comes from the log itself
    assert run.date_source == "log" and run.first_ts is not None
    assert run.first_ts.iso == "2026-02-26T14:45:50.123"


def test_tp_size_from_processes_when_no_line_states_it(tmp_path: Path) -> None:
    v0 = "\n".join(line for line in V0_NEW_YEAR.splitlines()[3:8]) + "\n"  # no args, no engine line
    (run,) = _runs(_write(tmp_path, "v0.log", v0), default_date=date(2025, 12, 31))
    assert run.config["tp_size"] == 2 and "processes print" in run.config_inferred["tp_size"]
    # two data-parallel engine cores with TP=1 each are not tensor parallelism
    dp = "".join(f"(EngineCore_DP{i} pid={10 + i}) INFO 05-02 18:30:26 [gpu_model_runner.py:1329] "
                 "Starting to load model m...\n" for i in range(2))
    (run,) = _runs(_write(tmp_path, "dp.log", dp), default_date=date(2025, 5, 2))
    assert run.config["tp_size"] is None


# --- JSON formatter (0.32+) ----------------------------------------------------------------

def _record(ts: str, proc: str, message: str, level: str = "INFO", **extra: Any) -> str:
    rec = {"asctime": ts, "levelname": level, "name": "vllm", "processName": proc, "process": 240, "message": message}
    rec.update(extra)
    return json.dumps(rec) + "\n"


def test_json_formatter_run_with_escapes_and_a_crash_carrying_its_traceback(tmp_path: Path) -> None:
    text = (
        _record("2026-02-26 14:45:40,100", "MainProcess",
                "non-default args: {'model': 'm', 'compilation_config': {\"cudagraph_mode\": \"NONE\"}}")
        + _record("2026-02-26 14:45:50,000", "EngineCore_DP0",
                  "Initializing a V1 LLM engine (v0.34.0) with config: model='m', tensor_parallel_size=1, "
                  "enforce_eager=False, compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
                  "'cudagraph_mode': <CUDAGraphMode.NONE: 0>}")
        + _record("2026-02-26 14:46:00,000", "EngineCore_DP0", "Loading weights took 3.07 seconds")
        + _record("2026-02-26 14:46:30,000", "EngineCore_DP0", "[backbone] torch.compile took 26.40 s in total")
        + _record("2026-02-26 14:46:31,000", "EngineCore_DP0", "Available KV cache memory: 1.5 GiB")
        + _record("2026-02-26 14:46:31,500", "EngineCore_DP0", "EngineCore failed to start.", level="ERROR",
                  exc_info="Traceback (most recent call last):\n  File \"core.py\", line 1, in f\n"
                           "ValueError: To serve at least one request with the models's max seq len (8192), "
                           "(4.0 GiB KV cache is needed, which is larger than the available KV cache memory (1.5 GiB).")
    )
    path = _write(tmp_path, "json.log", text)
    (run,) = _runs(path)
    assert run.outcome == "crashed" and run.crash is not None
    assert run.crash.category == "kv_cache_too_small"
    assert run.crash.first_line == "EngineCore failed to start."
    assert run.crash.message.startswith("ValueError: To serve at least one request")
    assert run.crash.ts is not None and run.crash.ts.iso == "2026-02-26T14:46:31.500"
    assert _phase(run, "torch_compile") == 26.40
    assert _phase(run, "load_weights") == 3.07
    # cudagraph_mode NONE in the (escaped) args -> graphs off; compile still on
    assert run.config["disable_cuda_graph"] is True and run.config["cudagraph_mode"] == "NONE"
    assert run.config["enable_torch_compile"] is True


# --- multi-line records: `\r\n` + repeated header ------------------------------------------

def test_multiline_records_joined_with_crlf(tmp_path: Path) -> None:
    head = "(APIServer pid=88) INFO 02-10 11:04:55 [utils.py:325]"
    logo = [" ", "       █     █     █▄   ▄█", " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.15.0",
            "  █▄█▀ █     █     █     █  model   Qwen/Qwen3-8B", "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀", ""]
    text = "\r\n".join(f"{head}{part}" for part in logo) + "\n"
    text += ("INFO 02-10 11:05:25 worker.py:225] Memory profiling takes 2.16 seconds\r\n"
             "INFO 02-10 11:05:25 worker.py:225] the current vLLM instance can use total_gpu_memory (79.15GiB)\r\n"
             "INFO 02-10 11:05:25 worker.py:225] model weights take 14.99GiB; the rest is for KV Cache 54.80GiB.\n"
             "INFO 02-10 11:05:26 executor_base.py:111] # cuda blocks: 27264, # CPU blocks: 4681\n")
    path = _write(tmp_path, "crlf.log", text)
    (run,) = _runs(path, default_date=date(2026, 2, 10))
    assert run.config["version"] == "0.15.0"
    assert _milestones(run, "kv_cache.allocated") == [("2026-02-10T11:05:26", None)]


# --- config typing ---------------------------------------------------------------------------

def _derived(args_text: str) -> dict[str, Any]:
    dump = read_args(args_text)
    config = dict(dump.fields)
    if dump.only_non_defaults:
        for key, value in get_format("vllm").parsing.config_defaults.items():
            config.setdefault(key, value)
    derive_config(config, {})
    return config


def test_namespace_args_are_typed_and_mirrored() -> None:
    config = _derived("Namespace(subparser='serve', model_tag='Qwen/Qwen2.5-7B-Instruct', port=8000, "
                      "model='Qwen/Qwen2.5-7B-Instruct', tensor_parallel_size=2, enforce_eager=True, "
                      "compilation_config=None, dispatch_function=<function ServeSubcommand.cmd at 0x7f3a2c1b5e40>)")
    assert config["tensor_parallel_size"] == 2 and config["tp_size"] == 2
    assert config["port"] == 8000 and config["enforce_eager"] is True
    assert config["disable_cuda_graph"] is True and config["enable_torch_compile"] is False
    assert config["model_path"] == "Qwen/Qwen2.5-7B-Instruct"
    assert read_args("Namespace(a=1)").only_non_defaults is False


def test_non_default_args_fill_the_rest_with_defaults() -> None:
    config = _derived("{'model': '/mnt/models', 'max_model_len': 8192, 'served_model_name': ['qwen'], "
                      "'gpu_memory_utilization': 0.15}")
    assert config["tp_size"] == 1 and config["disable_cuda_graph"] is False
    assert config["max_model_len"] == 8192 and config["gpu_memory_utilization"] == 0.15
    assert config["served_model_name"] == ["qwen"]


@pytest.mark.parametrize(("compilation", "cudagraph_mode", "disabled"), [
    ('{"level":3,"use_inductor":true,"cudagraph_mode":[2,1],"local_cache_dir":null}', "FULL_AND_PIECEWISE", False),
    ('{"cudagraph_mode": "NONE"}', "NONE", True),
    ("{'mode': <CompilationMode.VLLM_COMPILE: 3>, 'cudagraph_mode': <CUDAGraphMode.NONE: 0>}", "NONE", True),
    ("{'cudagraph_mode': <CUDAGraphMode.FULL_DECODE_ONLY: (2, 0)>}", "FULL_DECODE_ONLY", False),
    ('{"level":3,"use_cudagraph":false}', "NONE", True),
])
def test_compilation_config_decides_cuda_graphs(compilation: str, cudagraph_mode: str, disabled: bool) -> None:
    config = _derived("{'model': 'm', 'compilation_config': " + compilation + "}")
    assert config["cudagraph_mode"] == cudagraph_mode
    assert config["disable_cuda_graph"] is disabled


def test_optimization_level_zero_turns_off_compile_and_graphs() -> None:
    config = _derived("{'model': 'm', 'optimization_level': <OptimizationLevel.O0: 0>}")
    assert config["optimization_level"] == 0
    assert config["disable_cuda_graph"] is True and config["enable_torch_compile"] is False
    config = _derived("{'model': 'm', 'optimization_level': 3}")
    assert config["optimization_level"] == 3 and config["disable_cuda_graph"] is False


def test_engine_config_line_states_the_resolved_flags() -> None:
    stated = engine_config(
        "(v0.13.0) with config: model='/models', speculative_config=None, dtype=torch.bfloat16, "
        "max_seq_len=32768, load_format=LoadFormat.AUTO, tensor_parallel_size=2, pipeline_parallel_size=1, "
        "quantization=compressed-tensors, enforce_eager=False, structured_outputs_config="
        "StructuredOutputsConfig(backend='auto', reasoning_parser=''), served_model_name=qwen3-next, "
        "compilation_config={'level': None, 'mode': <CompilationMode.VLLM_COMPILE: 3>, "
        "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2, 4, 8, 16]}")
    assert stated == {"version": "0.13.0", "model": "/models", "dtype": "torch.bfloat16", "max_model_len": 32768,
                      "load_format": "auto", "tensor_parallel_size": 2, "pipeline_parallel_size": 1,
                      "quantization": "compressed-tensors", "enforce_eager": False, "served_model_name": "qwen3-next",
                      "compilation_mode": "VLLM_COMPILE", "cudagraph_mode": "FULL_AND_PIECEWISE",
                      "cuda_graph_max_bs": 16}


def test_an_engine_config_line_read_again_is_read_the_same_and_owned_by_each_caller() -> None:
    """`engine_config` remembers the lines it read (a fleet prints the same one at every start):
    a line read again gives what the first read gave, in a dict of its own, whatever a caller
    did to an earlier one; the same as reading it with nothing remembered."""
    from firedup.formats._vllm_read import _engine_config

    line = ("(v0.13.0) with config: model='/m', tensor_parallel_size=2, compilation_config={'level': None, "
            "'mode': <CompilationMode.VLLM_COMPILE: 3>, 'cudagraph_capture_sizes': [1, 2, 4]}")
    first = engine_config(line)
    want = dict(first)
    first["model"] = "changed"
    first.pop("tensor_parallel_size")
    again = engine_config(line)
    assert again == want and again is not first
    _engine_config.cache_clear()
    assert engine_config(line) == want


def test_an_enum_whose_value_is_a_string_does_not_hide_the_compilation_config() -> None:
    # 0.13 prints `'dynamic_shapes_config': {'type': <DynamicShapesType.BACKED: 'backed'>, ...}` in the
    # same dict as the cudagraph mode; the quoted value used to make the whole dict unreadable, and an
    # eager run lost its `cudagraph_mode=NONE`.
    stated = engine_config(
        "(v0.13.0) with config: model='Qwen/Qwen3-32B', tensor_parallel_size=2, enforce_eager=True, "
        "compilation_config={'level': None, 'mode': <CompilationMode.NONE: 0>, 'cudagraph_mode': "
        "<CUDAGraphMode.NONE: 0>, 'cudagraph_capture_sizes': [], 'dynamic_shapes_config': {'type': "
        "<DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False}, 'local_cache_dir': None}")
    assert stated["cudagraph_mode"] == "NONE" and stated["compilation_mode"] == "NONE"
    assert stated["enforce_eager"] is True and stated["tensor_parallel_size"] == 2


def test_defaulted_flags_say_so_in_config_inferred(tmp_path: Path) -> None:
    text = ("(APIServer pid=1) INFO 03-18 06:54:54 [utils.py:253] non-default args: {'model': 'm', "
            "'max_model_len': 8192}\n")
    (run,) = _runs(_write(tmp_path, "args.log", text), default_date=date(2026, 3, 18))
    assert run.config["tp_size"] == 1 and run.config["disable_cuda_graph"] is False
    assert "lists only non-default flags" in run.config_inferred["tp_size"]
    assert "lists only non-default flags" in run.config_inferred["disable_cuda_graph"]


# --- crashes --------------------------------------------------------------------------------

V1_HEAD = """\
(APIServer pid=4021) INFO 10-07 08:15:33 [api_server.py:1839] vLLM API server version 0.11.0
(APIServer pid=4021) INFO 10-07 08:15:33 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 2}
(EngineCore_DP0 pid=4210) INFO 10-07 08:15:52 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='Qwen/Qwen3-8B', tensor_parallel_size=2, enforce_eager=False, compilation_config={"level":3,"cudagraph_mode":[2,1]}
INFO 10-07 08:16:00 [parallel_state.py:1030] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:50255 backend=nccl
INFO 10-07 08:16:00 [parallel_state.py:1030] world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://127.0.0.1:50255 backend=nccl
"""
LOADED = """\
(Worker_TP0 pid=902) INFO 10-07 08:16:01 [parallel_state.py:1165] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0
(Worker_TP1 pid=903) INFO 10-07 08:16:01 [parallel_state.py:1165] rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1, EP rank 1
(Worker_TP0 pid=902) INFO 10-07 08:16:02 [gpu_model_runner.py:2602] Starting to load model Qwen/Qwen3-8B...
(Worker_TP0 pid=902) INFO 10-07 08:16:09 [default_loader.py:268] Loading weights took 6.02 seconds
(Worker_TP0 pid=902) INFO 10-07 08:16:10 [gpu_model_runner.py:2653] Model loading took 7.6 GiB and 7.512093 seconds
"""


def _crash_block(proc: str, ts: str, exception: str, first: str = "EngineCore failed to start.") -> str:
    head = f"({proc}) ERROR 10-07 {ts} [core.py:708] "
    return (f"{head}{first}\n{head}Traceback (most recent call last):\n"
            f'{head}  File "/usr/lib/python3/vllm/v1/engine/core.py", line 699, in run_engine_core\n'
            f"{head}{exception}\n"
            "(APIServer pid=4021) Traceback (most recent call last):\n"
            "(APIServer pid=4021) RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {'EngineCore_DP0': 1}\n")


def test_engine_core_failed_with_the_api_server_error_is_one_crash(tmp_path: Path) -> None:
    text = V1_HEAD + LOADED + _crash_block(
        "EngineCore_DP0 pid=4210", "08:16:20",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.19 GiB of which 1.12 GiB is free.")
    (run,) = _runs(_write(tmp_path, "oom.log", text), default_date=date(2025, 10, 7))
    assert run.outcome == "crashed" and run.crash is not None
    assert run.crash.first_line == "EngineCore failed to start."
    assert run.crash.ts is not None and run.crash.ts.iso == "2025-10-07T08:16:20"
    assert run.crash.category == "oom"
    assert run.crash.message.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert run.crash.phase == "torch_compile"  # after "Model loading took", compile is next (level 3)
    assert run.crash.hint is not None and "--gpu-memory-utilization" in run.crash.hint
    # the API server's error is the same failure, not a second one
    assert next(m.line for m in run.milestones if m.name == "crash") == run.crash.line


def test_oom_while_loading_names_the_phase_and_vllm_flags(tmp_path: Path) -> None:
    text = V1_HEAD + LOADED.splitlines(keepends=True)[2] + _crash_block(
        "Worker_TP0 pid=902", "08:16:05",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB.", first="WorkerProc failed to start.")
    (run,) = _runs(_write(tmp_path, "oom-load.log", text), default_date=date(2025, 10, 7))
    assert run.crash is not None and run.crash.category == "oom" and run.crash.phase == "load_weights"
    assert run.crash.hint is not None and "--tensor-parallel-size" in run.crash.hint


def test_kv_cache_too_small(tmp_path: Path) -> None:
    text = V1_HEAD + LOADED + (
        "(Worker_TP0 pid=902) INFO 10-07 08:16:30 [monitor.py:34] torch.compile takes 20.00 s in total\n"
        "(Worker_TP0 pid=902) INFO 10-07 08:16:33 [gpu_worker.py:298] Available KV cache memory: 1.87 GiB\n"
    ) + _crash_block("EngineCore_DP0 pid=4210", "08:16:33",
                     "ValueError: To serve at least one request with the models's max seq len (16384), (3.0 GiB KV "
                     "cache is needed, which is larger than the available KV cache memory (1.87 GiB). Try "
                     "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    (run,) = _runs(_write(tmp_path, "kv.log", text), default_date=date(2025, 10, 7))
    assert run.crash is not None
    assert (run.crash.category, run.crash.phase) == ("kv_cache_too_small", "kv_cache")
    assert run.crash.hint is not None and "--max-model-len" in run.crash.hint
    assert _phase(run, "kv_cache") == 3.0  # torch.compile end 08:16:30 -> Available KV 08:16:33


def test_nccl_failure_during_distributed_init(tmp_path: Path) -> None:
    text = V1_HEAD + (
        "ERROR 10-07 08:16:05 [multiproc_executor.py:743] WorkerProc failed to start.\n"
        "ERROR 10-07 08:16:05 [multiproc_executor.py:743] Traceback (most recent call last):\n"
        "ERROR 10-07 08:16:05 [multiproc_executor.py:743] torch.distributed.DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled system error, NCCL version 2.26.2\n"
    )
    (run,) = _runs(_write(tmp_path, "nccl.log", text), default_date=date(2025, 10, 7))
    assert run.crash is not None
    assert (run.crash.category, run.crash.phase) == ("distributed", "dist_init")
    assert run.crash.hint is not None and "NCCL" in run.crash.hint
    # the two ranks' init lines carry no prefix (0.10.2-0.16): the rank comes from the message
    assert _milestones(run, "dist_init.begin") == [("2025-10-07T08:16:00", "TP0"), ("2025-10-07T08:16:00", "TP1")]


def test_free_memory_at_startup_is_oom_before_loading(tmp_path: Path) -> None:
    text = V1_HEAD + _crash_block(
        "EngineCore_DP0 pid=4210", "08:16:01",
        "ValueError: Free memory on device (30.12/79.19 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")
    (run,) = _runs(_write(tmp_path, "free.log", text), default_date=date(2025, 10, 7))
    assert run.crash is not None and (run.crash.category, run.crash.phase) == ("oom", "dist_init")


@pytest.mark.parametrize(("tail", "eager", "stage"), [
    ("", False, "torch_compile"),  # compile follows the load
    ("", True, "kv_cache"),  # --enforce-eager: no compile, profiling follows
    ("(Worker_TP0 pid=902) INFO 10-07 08:16:40 [monitor.py:34] torch.compile takes 29.00 s in total\n", False, "kv_cache"),
])
def test_hang_after_weight_load_is_incomplete_and_names_the_phase(tmp_path: Path, tail: str, eager: bool,
                                                                 stage: str) -> None:
    text = V1_HEAD.replace("enforce_eager=False", f"enforce_eager={eager}") + LOADED + tail
    (run,) = _runs(_write(tmp_path, "hang.log", text), default_date=date(2025, 10, 7))
    assert run.outcome == "incomplete" and run.crash is None
    assert run.stopped_in == stage


def test_v0_hang_after_loading_model_weights(tmp_path: Path) -> None:
    cut = V0_NEW_YEAR.split("INFO 01-01 00:00:08")[0]
    (run,) = _runs(_write(tmp_path, "v0-hang.log", cut), default_date=date(2025, 12, 31))
    assert run.outcome == "incomplete" and run.stopped_in == "kv_cache"  # V0 profiles memory next


# --- restarts, sniffing ----------------------------------------------------------------------

JOURNAL = """\
-- Boot 45b35623d291431fa703c9232d2ea952 --
Feb 22 06:34:42 host systemd[1]: Started vllm.service - vLLM OpenAI server.
Feb 22 06:34:50 host env[1633]: (APIServer pid=1633) INFO 02-22 06:34:50 [utils.py:325]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.15.1
Feb 22 06:34:50 host env[1633]: (APIServer pid=1633) INFO 02-22 06:34:50 [utils.py:261] non-default args: {'model': '/opt/m', 'max_model_len': 16384}
Feb 22 06:34:55 host env[2827]: (EngineCore_DP0 pid=2827) INFO 02-22 06:34:55 [core.py:96] Initializing a V1 LLM engine (v0.15.1) with config: model='/opt/m', tensor_parallel_size=1, enforce_eager=False
Feb 22 06:34:56 host env[2827]: (EngineCore_DP0 pid=2827) INFO 02-22 06:34:56 [gpu_model_runner.py:4033] Starting to load model /opt/m...
Feb 22 06:34:59 host env[2827]: [103B blob data]
Feb 22 06:35:10 host env[2827]: (EngineCore_DP0 pid=2827) INFO 02-22 06:35:10 [default_loader.py:291] Loading weights took 11.13 seconds
Feb 22 06:35:10 host env[2827]: (EngineCore_DP0 pid=2827) INFO 02-22 06:35:10 [gpu_model_runner.py:4130] Model loading took 9.38 GiB memory and 14.168070 seconds
Feb 22 06:35:26 host env[2827]: (EngineCore_DP0 pid=2827) INFO 02-22 06:35:26 [monitor.py:34] torch.compile takes 9.27 s in total
Feb 22 06:35:27 host env[2827]: (EngineCore_DP0 pid=2827) INFO 02-22 06:35:27 [gpu_worker.py:356] Available KV cache memory: 1.87 GiB
Feb 22 06:35:27 host env[2827]: (EngineCore_DP0 pid=2827) ERROR 02-22 06:35:27 [core.py:946] EngineCore failed to start.
Feb 22 06:35:27 host env[2827]: (EngineCore_DP0 pid=2827) ERROR 02-22 06:35:27 [core.py:946] Traceback (most recent call last):
Feb 22 06:35:27 host env[2827]: (EngineCore_DP0 pid=2827) ERROR 02-22 06:35:27 [core.py:946] ValueError: To serve at least one request with the models's max seq len (16384), (3.0 GiB KV cache is needed, which is larger than the available KV cache memory (1.87 GiB).
Feb 22 06:35:28 host env[1633]: (APIServer pid=1633) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
Feb 22 06:35:29 host systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE
Feb 22 06:35:31 host systemd[1]: vllm.service: Scheduled restart job, restart counter is at 1.
Feb 22 06:35:31 host systemd[1]: Stopped vllm.service - vLLM OpenAI server.
Feb 22 06:35:31 host systemd[1]: Started vllm.service - vLLM OpenAI server.
Feb 22 06:35:38 host env[3361]: (APIServer pid=3361) INFO 02-22 06:35:38 [utils.py:325]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.15.1
Feb 22 06:35:38 host env[3361]: (APIServer pid=3361) INFO 02-22 06:35:38 [utils.py:261] non-default args: {'model': '/opt/m', 'max_model_len': 8192, 'enforce_eager': True}
Feb 22 06:35:40 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:40 [core.py:96] Initializing a V1 LLM engine (v0.15.1) with config: model='/opt/m', tensor_parallel_size=1, enforce_eager=True
Feb 22 06:35:41 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:41 [gpu_model_runner.py:4033] Starting to load model /opt/m...
Feb 22 06:35:52 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:52 [default_loader.py:291] Loading weights took 10.50 seconds
Feb 22 06:35:53 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:53 [gpu_model_runner.py:4130] Model loading took 9.38 GiB memory and 11.250000 seconds
Feb 22 06:35:54 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:54 [gpu_worker.py:356] Available KV cache memory: 3.10 GiB
Feb 22 06:35:54 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:54 [kv_cache_utils.py:1291] GPU KV cache size: 58,048 tokens
Feb 22 06:35:56 host env[3400]: (EngineCore_DP0 pid=3400) INFO 02-22 06:35:56 [core.py:259] init engine (profile, create kv cache, warmup model) took 3.82 seconds
Feb 22 06:35:57 host env[3361]: (APIServer pid=3361) INFO 02-22 06:35:57 [api_server.py:1425] Starting vLLM API server 0 on http://0.0.0.0:8000
Feb 22 06:35:57 host env[3361]: (APIServer pid=3361) INFO:     Started server process [3361]
Feb 22 06:35:57 host env[3361]: (APIServer pid=3361) INFO:     Application startup complete.
Feb 22 06:36:10 host env[3361]: (APIServer pid=3361) INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK
"""


def test_systemd_restart_in_one_journal_is_two_runs(tmp_path: Path) -> None:
    path = _write(tmp_path, "journal.log", JOURNAL, mtime=datetime(2026, 2, 23, 8, 0))
    first, second = _runs(path)
    assert (first.run_index, second.run_index) == (0, 1)
    assert first.date_source == second.date_source == "mtime"  # journald and vLLM both print no year
    assert first.outcome == "crashed" and first.crash is not None
    assert (first.crash.category, first.crash.phase) == ("kv_cache_too_small", "kv_cache")
    assert first.crash.ts is not None and first.crash.ts.iso == "2026-02-22T06:35:27"
    assert _phase(first, "torch_compile") == 9.27 and _phase(first, "model_loading") == 14.16807
    assert second.outcome == "ready"
    # each run is launched at systemd's `Started` line and begins at vLLM's first line of its own
    # (issue 40: a launch line is the launch, never the run's first line)
    assert first.first_ts is not None and first.first_ts.iso == "2026-02-22T06:34:50"
    assert first.launch is not None and first.launch.source == "log" and first.launch.ts is not None
    assert first.launch.ts.iso == "2026-02-22T06:34:42"
    assert second.first_ts is not None and second.first_ts.iso == "2026-02-22T06:35:38"
    assert second.launch is not None and second.launch.ts is not None
    assert second.launch.ts.iso == "2026-02-22T06:35:31"
    assert second.ready_ts is not None and second.ready_ts.iso == "2026-02-22T06:35:57"
    assert second.total_seconds == 19.0 and second.launch_to_ready == 26.0
    assert second.config["disable_cuda_graph"] is True and second.config["enable_torch_compile"] is False
    assert _milestones(second, "health.first") == [("2026-02-22T06:36:10", None)]
    assert _phase(second, "engine_init") == 3.82
    # the HTTP server: engine ready 06:35:56 -> Application startup complete 06:35:57, one span
    assert [p.seconds for p in second.run_phases() if p.name == "http_start"] == [1.0]


def test_a_second_banner_without_systemd_starts_a_new_run(tmp_path: Path) -> None:
    once = V1_HEAD + LOADED
    (first, second) = _runs(_write(tmp_path, "twice.log", once + once.replace("08:1", "09:1")),
                            default_date=date(2025, 10, 7))
    assert first.first_ts is not None and first.first_ts.iso == "2025-10-07T08:15:33"
    assert second.first_ts is not None and second.first_ts.iso == "2025-10-07T09:15:33"


SGLANG = """\
[2025-09-11 10:24:10] server_args=ServerArgs(model_path='m', tp_size=1, disable_cuda_graph=True)
[2025-09-11 10:24:20] Load weight begin. avail mem=70.00 GB
[2025-09-11 10:24:30] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=55.00 GB
[2025-09-11 10:24:40] The server is fired up and ready to roll!
"""


def test_sniffing_picks_the_engine_per_file_in_a_mixed_folder(tmp_path: Path) -> None:
    _write(tmp_path, "a-sglang.log", SGLANG)
    _write(tmp_path, "b-vllm.log", JOURNAL)
    _write(tmp_path, "c-vllm-v0.log", V0_NEW_YEAR)
    result = parse_paths([str(tmp_path)], default_date=date(2026, 2, 22))
    assert not result.errors
    assert [(s.source.rsplit("/", 1)[-1], s.engine) for s in result.sources] == [
        ("a-sglang.log", "sglang"), ("b-vllm.log", "vllm"), ("c-vllm-v0.log", "vllm")]
    assert [r.engine for r in result.runs] == ["sglang", "vllm", "vllm", "vllm"]
    # the two engines' flags land under the same names, so grouping across engines works
    assert {r.config["tp_size"] for r in result.runs} == {1, 2}


def test_sniff_literals_separate_the_engines() -> None:
    assert sniff_format(V0_NEW_YEAR).name == "vllm"
    assert sniff_format(JOURNAL).name == "vllm"
    assert sniff_format(SGLANG).name == "sglang"


def test_health_semantics_are_declared_on_the_format() -> None:
    health = get_format("vllm").serving.health
    assert health is not None
    assert (health.endpoint, health.starting, health.ready_status, health.body) == ("/health", "refused", 200, "empty")


# --- the labelled corpus, with check_corpus.py's own rules -----------------------------------

def _check_corpus_module() -> Any:
    tool = SHARED / "tools" / "check_corpus.py"
    spec = importlib.util.spec_from_file_location("check_corpus", tool)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not corpus_logs("vllm") or not (SHARED / "tools" / "check_corpus.py").exists(),
                    reason="../shared/corpus/vllm is not here")
def test_corpus_labels_at_least_95_percent_and_no_parse_failure() -> None:
    checker = _check_corpus_module()
    env_path = os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"), os.environ.get("PYTHONPATH", "")])
    os.environ["PYTHONPATH"] = env_path
    matched = total = 0
    failures: list[str] = []
    for log in corpus_logs("vllm"):
        labels = json.loads(log.with_suffix(".json").read_text()) if log.with_suffix(".json").exists() else {}
        m, t, _misses, fatal = checker.check_one(log, labels, [sys.executable, "-m", "firedup"], 60.0)
        if fatal:
            failures.append(f"{log.name}: {fatal}")
        matched += m
        total += t
    assert not failures
    assert total > 0 and matched / total >= 0.95, f"{matched}/{total}"


# --- 2026 logs: the V2 model runner, health-only readiness, old crashes, collector wrapping --

LOGS_2026 = Path(__file__).resolve().parent / "fixtures" / "logs2026"


def _line_of(path: Path, marker: str) -> int:
    return next(n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if marker in text)


def test_v2_model_runner_scratch_line_begins_the_load() -> None:
    """vLLM 0.26 (Model Runner V2, cut from a real H200 start-up) prints only `Loading model from scratch...`."""
    path = LOGS_2026 / "vllm_0.26_v2_runner_health_ready.log"
    (run,) = _runs(path)
    begins = [m for m in run.milestones if m.name == "load_weight.begin"]
    assert [(m.line, m.rank) for m in begins] == [(_line_of(path, "Loading model from scratch"), "DP0")]
    assert _phase(run, "model_loading") == pytest.approx(3.033543)


def test_both_load_lines_of_the_0_10_runner_are_one_begin() -> None:
    """0.9.1-0.11.0 print `Starting to load model` and then `Loading model from scratch`: one load."""
    path = LOGS_2026 / "vllm_0.10_both_load_lines.log"
    (run,) = _runs(path)
    assert [m.line for m in run.milestones if m.name == "load_weight.begin"] == [_line_of(path, "Starting to load")]
    loads = [p for p in run.phases if p.name == "load_weights" and p.scope == "run"]
    assert [p.seconds for p in loads] == [pytest.approx(6.80)]


def test_a_health_200_without_the_uvicorn_line_is_ready_and_says_which_line() -> None:
    path = LOGS_2026 / "vllm_0.26_v2_runner_health_ready.log"
    (run,) = _runs(path)
    probe = _line_of(path, '"GET /health HTTP/1.1" 200')
    assert run.outcome == "ready" and run.ready_kind == "health"
    assert run.ready_evidence is not None and f"line {probe}" in run.ready_evidence
    assert run.ready_ts is not None and run.ready_ts.iso == "2026-12-03T20:36:14"
    assert any(f"line {probe}" in w for w in run.warnings)


def test_a_health_200_of_an_engine_that_answers_200_while_starting_proves_nothing(tmp_path: Path) -> None:
    """Old SGLang answered 200 on /health as soon as uvicorn was up: no readiness without a 503 first."""
    text = ("[2024-09-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
            "[2024-09-10 10:00:05 TP0] Load weight begin. avail mem=70.00 GB\n"
            "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
            'INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n')
    (run,) = _runs(_write(tmp_path, "old.log", text))
    assert run.outcome == "incomplete"
    (run,) = _runs(_write(tmp_path, "new.log", text.replace("200 OK", "503 Service Unavailable")
                          + 'INFO:     127.0.0.1:5001 - "GET /health HTTP/1.1" 200 OK\n'))
    assert run.outcome == "ready" and run.ready_kind == "health"


def test_new_process_tags_and_lines_of_0_34(tmp_path: Path) -> None:
    path = LOGS_2026 / "vllm_0.34_rust_frontend_mm_warmup.log"
    (run,) = _runs(path)
    assert run.outcome == "ready" and run.ranks == ["DP0"]
    assert _phase(run, "torch_compile") == pytest.approx(22.40)
    assert _phase(run, "engine_init") == pytest.approx(39.80)
    assert run.milestone("http.running") is not None
    warmups = [m for m in run.milestones if m.name == "load_weight.begin"]
    assert len(warmups) == 1
    assert get_format("vllm").rule("engine.mm_warmup").regex.search("Multi-modal warmup completed in 2.95 s")


def test_v0_value_error_in_the_profile_run_is_a_kv_cache_crash() -> None:
    """V0 raised the too-small KV cache from determine_num_available_blocks, under torch's `[rank0]: `."""
    path = LOGS_2026 / "vllm_v0_kv_profile_crash.log"
    (run,) = _runs(path)
    assert run.outcome == "crashed" and run.crash is not None
    assert run.crash.category == "kv_cache_too_small"
    assert run.crash.phase == "kv_cache"
    assert run.crash.line == _line_of(path, "Traceback")


def test_cloudwatch_wrapped_djl_lines_keep_kv_cache_and_graph_milestones() -> None:
    """`<stamp> | [INFO ] PyProcess - W-332-model-stdout: ...` with `#033[` colour remnants."""
    path = LOGS_2026 / "vllm_cloudwatch_djl.log"
    (run,) = _runs(path)
    names = [m.name for m in run.milestones]
    for name in ("engine.init", "load_weight.end", "kv_cache.allocated", "cuda_graph.begin", "cuda_graph.end"):
        assert name in names
    assert run.milestone("kv_cache.allocated").line == _line_of(path, "# GPU blocks")  # type: ignore[union-attr]
    assert run.date_source == "outer"


# --- dates: the engine version's release is in-log evidence of the year, over a copied file's date ---

V043 = """\
INFO 06-03 10:12:01 api_server.py:177] vLLM API server version 0.4.3
INFO 06-03 10:12:01 api_server.py:178] args: Namespace(host=None, port=8000, model='Qwen/Qwen2-7B-Instruct', tensor_parallel_size=1)
INFO 06-03 10:12:02 llm_engine.py:161] Initializing an LLM engine (v0.4.3) with config: model='Qwen/Qwen2-7B-Instruct', tensor_parallel_size=1
INFO 06-03 10:12:20 model_runner.py:146] Loading model weights took 14.2487 GB
INFO:     Application startup complete.
"""


def test_a_copied_2024_log_is_dated_by_its_version_not_the_files_date(tmp_path: Path) -> None:
    """vLLM 0.4.3 came out in 2024; the file was copied in November 2026."""
    (run,) = _runs(_write(tmp_path, "copied.log", V043, mtime=datetime(2026, 11, 20, 10, 0)))
    assert run.date_source == "version"
    assert run.first_ts is not None and run.first_ts.iso == "2024-06-03T10:12:01"
    from firedup.render.text import timeline_text
    assert "year guessed: engine version" in timeline_text(run)


def test_a_files_date_within_a_year_after_the_release_is_kept(tmp_path: Path) -> None:
    """The file's date agrees with the version (written soon after): it is the closer bound."""
    text = V043.replace("06-03", "02-10")
    (run,) = _runs(_write(tmp_path, "fresh.log", text, mtime=datetime(2025, 2, 11, 9, 0)))
    assert run.date_source == "mtime"
    assert run.first_ts is not None and run.first_ts.iso == "2025-02-10T10:12:01"


def test_the_version_dates_a_log_with_no_file_date_after_its_release(tmp_path: Path) -> None:
    """On stdin (no file date): vLLM 0.10.0 came out in July 2025, so March is 2026's."""
    from firedup.read.sources import normalise
    from firedup.timeline.pipeline import LogReader

    text = ("INFO 03-27 22:26:07 [core.py:71] Initializing a V1 LLM engine (v0.10.0) with config: model='m', "
            "tensor_parallel_size=1, enforce_eager=True\n"
            "INFO 03-27 22:26:17 [gpu_model_runner.py:1843] Starting to load model m...\n")
    reader = LogReader("-")
    reader.feed([line for i, raw in enumerate(text.splitlines(), start=1) for line in normalise(raw, i)], force=True)
    (run,) = reader.runs()
    assert run.date_source == "version"
    assert run.first_ts is not None and run.first_ts.iso == "2026-03-27T22:26:07"


@pytest.mark.parametrize(("version", "month_day", "year"), [
    ("0.9.0", "05-20", 2026),  # 0.9.0 reached PyPI on 2025-05-28: a May 20th before it is 2026's
    ("0.9.0", "05-29", 2025),
    ("0.11.0", "10-02", 2026),  # 2025-10-04 (a day of slack for time zones: not 10-03)
    ("0.11.2", "10-05", 2025),  # a later release of the series: dated by its series' first
    ("0.12.0", "12-01", 2026),  # 2025-12-03, the first series after 0.11
    ("0.26.0", "07-23", 2027),  # 2026-07-25: the version of the real H200 logs
    ("0.26.0", "07-25", 2026),
    ("0.27.1", "08-08", 2027),  # 0.27.0 on 2026-08-10 dates its patch release
    ("0.34.0", "11-14", 2027),  # 2026-11-16, the newest series when the table was checked
])
def test_the_release_day_decides_the_year_of_a_log_stamped_near_it(version: str, month_day: str, year: int) -> None:
    """The release table's days are PyPI's upload days (formats/vllm.py): a day off puts a log
    written near a release in the wrong year."""
    from firedup.read.sources import normalise
    from firedup.timeline.pipeline import LogReader

    text = (f"INFO {month_day} 22:26:07 [core.py:71] Initializing a V1 LLM engine (v{version}) with config: model='m', "
            "tensor_parallel_size=1, enforce_eager=True\n"
            f"INFO {month_day} 22:26:17 [gpu_model_runner.py:1843] Starting to load model m...\n")
    reader = LogReader("-")
    reader.feed([line for i, raw in enumerate(text.splitlines(), start=1) for line in normalise(raw, i)], force=True)
    (run,) = reader.runs()
    assert run.date_source == "version"
    assert run.first_ts is not None and run.first_ts.iso == f"{year}-{month_day}T22:26:07"


@pytest.mark.parametrize("version", ["0.12.0rc1", "0.11.1.dev5+g1234abc", "0.26.0rc2.dev7"])
def test_a_release_candidate_or_nightly_is_not_dated_by_the_release(version: str) -> None:
    """A pre-release runs in the days before its release: dating it by the release's day would
    put a log stamped 11-30 under 0.12.0rc1 (0.12.0 came out 2025-12-03) in 2026."""
    from firedup.read.sources import normalise
    from firedup.timeline.pipeline import LogReader

    text = (f"INFO 11-30 22:26:07 [core.py:71] Initializing a V1 LLM engine (v{version}) with config: model='m', "
            "tensor_parallel_size=1, enforce_eager=True\n"
            "INFO 11-30 22:26:17 [gpu_model_runner.py:1843] Starting to load model m...\n")
    reader = LogReader("-")
    reader.feed([line for i, raw in enumerate(text.splitlines(), start=1) for line in normalise(raw, i)], force=True)
    (run,) = reader.runs()
    assert run.date_source != "version"


REALGPU_VLLM = sorted((SHARED / "realgpu").glob("vllm_*.log"))


@pytest.mark.skipif(not REALGPU_VLLM, reason="shared/realgpu is not here")
@pytest.mark.parametrize("path", REALGPU_VLLM, ids=lambda p: p.name)
def test_a_real_startup_read_without_a_file_date_gets_its_year_from_its_version(path: Path) -> None:
    """The real H200 vLLM 0.26.0 logs (recorded 2026-12-03) stamp month-days only: on stdin,
    with no file date, the version's release (2026-07-25) is the one evidence of the year."""
    from firedup.read.sources import normalise
    from firedup.timeline.pipeline import LogReader

    text = path.read_bytes().decode("utf-8", errors="replace")
    assert "version 0.26.0" in text
    reader = LogReader("-")
    reader.feed([line for i, raw in enumerate(text.split("\n"), start=1) for line in normalise(raw, i)], force=True)
    (run,) = reader.runs()
    assert run.date_source == "version"
    assert run.first_ts is not None and run.first_ts.iso.startswith("2026-12-03T")


def _split_top_level_char_by_char(text: str) -> list[str]:
    """The reference: `_split_top_level` as it was, one character at a time."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(text[start:])
    return [p for p in (part.strip() for part in parts) if p]


@given(text=st.text(alphabet="ab=1 ,'\"\\()[]{}<>", max_size=60))
def test_splitting_an_engine_config_by_its_marks_is_the_char_by_char_split(text: str) -> None:
    from firedup.formats._vllm_read import _split_top_level

    assert _split_top_level(text) == _split_top_level_char_by_char(text)


def test_splitting_a_real_engine_config() -> None:
    from firedup.formats._vllm_read import _split_top_level

    text = "model='m', speculative_config=None, tokenizer='m', compilation_config={'level': 3, 'x': [1, 2]}, seed=0"
    assert _split_top_level(text) == ["model='m'", "speculative_config=None", "tokenizer='m'",
                                      "compilation_config={'level': 3, 'x': [1, 2]}", "seed=0"]


# --- issue 42, class 8: a SageMaker/DJL container's log --------------------------------------

CLASS8 = Path(__file__).resolve().parent / "fixtures" / "class8"


@pytest.mark.parametrize("name", ["djl_plain_vllm.log", "cloudwatch_djl_plain_vllm.log", "djl_file_mpi_vllm.log"])
def test_a_djl_served_vllm_log_finds_its_kv_cache_and_is_ready_when_djl_binds_its_api(name: str) -> None:
    """DJL 0.29+'s "INFO  PyProcess W-123-model-stdout: ", the same under CloudWatch's timestamp
    column, and its serving.log's "[INFO ] <date> PyProcess - W-..: [1,0]<stdout>:" (MPI)."""
    path = CLASS8 / name
    (run,) = _runs(path)
    assert run.engine == "vllm"
    kv = run.milestone("kv_cache.allocated")
    assert kv is not None and kv.line == _line_of(path, "# cuda blocks")
    assert run.outcome == "ready"
    ready = run.milestone("ready")
    assert ready is not None and ready.line == _line_of(path, "API bind to:")
    assert run.config.get("tp_size") == 2 and run.config.get("enforce_eager") is False


@pytest.mark.parametrize("name", ["journald_short_vllm.log", "journald_precise_vllm.log", "journald_iso_vllm.log",
                                  "journald_full_vllm.log"])
def test_a_journald_log_reads_its_first_line_with_the_rest(name: str) -> None:
    """Issue 42, class 8: journalctl's short, short-precise (year-less, microseconds) and short-iso
    outputs. systemd's `Started` line is the launch, the engine's first line the run's first, and
    uvicorn's ready line (whose prefix is all journald's) is read."""
    path = CLASS8 / name
    (run,) = _runs(path)
    assert run.launch is not None and run.launch.source == "log"
    assert run.launch.line == _line_of(path, "Started vllm.service")
    assert run.first_ts is not None and run.first_ts.iso == "2025-12-06T10:00:01"
    assert run.outcome == "ready"
    ready = run.milestone("ready")
    assert ready is not None and ready.line == _line_of(path, "Application startup complete")


# --- issue 42, class 8: a V0 engine's flags are in its engine line ----------------------------

@pytest.mark.parametrize(("name", "tp", "eager"), [
    ("vllm_v0_engine_line_0.6.2.log", 2, False),  # "Initializing an LLM engine (v0.6.2) with config: ..."
    ("vllm_v0_engine_line_0.7.3.log", 4, True),  # "Initializing a V0 LLM engine (v0.7.3) ...", trailing ", "
])
def test_a_v0_engine_line_gives_tp_size_and_enforce_eager(name: str, tp: int, eager: bool) -> None:
    (run,) = _runs(CLASS8 / name)
    assert run.config.get("tp_size") == tp and run.config.get("tensor_parallel_size") == tp
    assert run.config.get("enforce_eager") is eager and run.config.get("disable_cuda_graph") is eager
    assert "tp_size" not in run.config_inferred  # stated by the line, not inferred


_V0_KEYS = ("speculative_config=None", "tokenizer='/m'", "skip_tokenizer_init=False", "revision=None",
            "dtype=torch.float16", "max_seq_len=4096", "load_format=LoadFormat.AUTO", "pipeline_parallel_size=1",
            "disable_custom_all_reduce=False", "quantization=None", "kv_cache_dtype=auto",
            "decoding_config=DecodingConfig(guided_decoding_backend='outlines')",
            "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False)",
            'compilation_config={"splitting_ops":[],"compile_sizes":[],"cudagraph_capture_sizes":[256,248],"max_capture_size":256}',
            "use_cached_outputs=True")


@given(tp=st.integers(1, 64), eager=st.booleans(), others=st.permutations(_V0_KEYS),
       at=st.tuples(st.integers(0, len(_V0_KEYS)), st.integers(0, len(_V0_KEYS))),
       head=st.sampled_from(["Initializing an LLM engine (v0.5.5)", "Initializing a V0 LLM engine (v0.7.3)",
                             "Initializing a V0 LLM engine (v0.9.2)"]),
       trailing=st.sampled_from(["", ", ", ")"]))
def test_a_v0_engine_lines_flags_are_read_wherever_they_sit(tp: int, eager: bool, others: list[str],
                                                           at: tuple[int, int], head: str, trailing: str) -> None:
    """The two flags anywhere among the others of a V0 config string, any version's wording."""
    keys = list(others)
    keys.insert(at[0], f"tensor_parallel_size={tp}")
    keys.insert(min(at[1], len(keys)), f"enforce_eager={eager}")
    fields = engine_config(head.split("engine ", 1)[1] + " with config: model='/m', " + ", ".join(keys) + trailing)
    assert fields["tensor_parallel_size"] == tp and fields["enforce_eager"] is eager


def test_a_v0_engine_lines_trailing_comma_is_not_part_of_its_last_value() -> None:
    """0.7.3 ends the config string with ", ": its last flag was read as a tuple (`1,` -> (1,))."""
    fields = engine_config("(v0.7.3) with config: model='/m', enforce_eager=False, tensor_parallel_size=1, ")
    assert fields["tensor_parallel_size"] == 1 and fields["enforce_eager"] is False


def test_a_v0_engine_lines_closing_paren_is_not_part_of_its_last_value() -> None:
    """0.4 to 0.6 closed the config string: "..., seed=0, served_model_name=m)"."""
    fields = engine_config("(v0.4.3) with config: model='meta-llama/Llama-2-7b-hf', enforce_eager=False, seed=0, "
                           "served_model_name=meta-llama/Llama-2-7b-hf, tensor_parallel_size=2)")
    assert fields["tensor_parallel_size"] == 2 and fields["served_model_name"] == "meta-llama/Llama-2-7b-hf"


def _release_versions() -> list[str]:
    table = get_format("vllm").dating.releases
    bounds = {v for first, last, _ in table for v in (first, last)}
    return sorted(bounds | {"0.0.1", "99.0.0", "0.10.1.post1", "0.6.3.post1", "0.13.1", "0.8", "1.0.0"})


@given(version=st.sampled_from(_release_versions()) | st.from_regex(r"\A\d{1,2}\.\d{1,2}(?:\.\d{1,2})?(?:\.post\d)?\Z"))
def test_a_version_line_is_dated_by_the_release_table(version: str) -> None:
    """`release_hint` compares the version with each release's bounds, keyed once per format
    (`Format._release_keys`): the release the table's own comparison finds, first in its order."""
    import re

    from firedup.core.health import version_key

    fmt = get_format("vllm")
    sample = f"INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version {version}\n"
    m = re.search(fmt.dating.version_text, sample)
    assert m is not None and m["version"] == version
    want = next(((released, f"{fmt.display} {version}, released {released[:7]}")
                 for first, last, released in fmt.dating.releases
                 if version_key(first) <= version_key(version) <= version_key(last)), None)
    assert fmt.release_hint(sample) == want

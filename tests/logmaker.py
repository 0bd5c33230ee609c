"""Hand-rolled SGLang server logs with known phase durations, for the table/compare/budget tests.

The lines copy the shapes of real SGLang 0.4.x-0.5.x logs (docs/engines/sglang.md):
every TP rank prints its own milestones; TP0 prints the scheduler-ready line; uvicorn lines and
the ready banner follow. The generator knows the truth (when each phase began and ended), so
tests can check firedup's figures against it, and against a plain regex over the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

READY_RE = r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[^\]]*\] The server is fired up and ready to roll!"
FIRST_RE = r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[^\]]*\]"


@dataclass
class Spec:
    """One server start. Durations in whole seconds; the log's clock has 1 s resolution."""

    start: datetime
    tp: int = 8
    model: str = "/models/DeepSeek-V3"
    disable_cuda_graph: bool = False
    speculative: str | None = "EAGLE3"
    launch: int = 20
    dist_init: int = 5
    load_weights: int = 120
    kv_cache: int = 2
    cuda_graph: int = 560  # ignored when disable_cuda_graph
    draft_load: int = 8
    draft_graph: int = 40  # ignored when disable_cuda_graph
    http_start: int = 3
    warmup: int = 12
    port: int = 30000
    crash_in: str | None = None  # "cuda_graph": an OOM during the capture
    extra_flags: dict[str, object] = field(default_factory=dict)


def _args(spec: Spec) -> str:
    spec_algo = repr(spec.speculative) if spec.speculative else "None"
    fields = {
        "model_path": repr(spec.model), "tokenizer_path": repr(spec.model), "load_format": "'auto'",
        "tp_size": str(spec.tp), "dp_size": "1", "pp_size": "1", "ep_size": "1",
        "mem_fraction_static": "0.85", "disable_cuda_graph": str(spec.disable_cuda_graph),
        "cuda_graph_max_bs": "128", "speculative_algorithm": spec_algo, "port": str(spec.port),
        "host": "'0.0.0.0'", "random_seed": str(spec.start.second * 1000 + spec.start.minute),
        "attention_backend": "'fa3'", "quantization": "None", "enable_torch_compile": "False",
        "nnodes": "1",
    }
    for key, value in spec.extra_flags.items():
        fields[key] = repr(value)
    return "ServerArgs(" + ", ".join(f"{k}={v}" for k, v in fields.items()) + ")"


def render(spec: Spec) -> tuple[str, dict[str, float | str | None]]:
    """The log text and its truth: seconds to ready (None if it crashed) and per phase."""
    lines: list[str] = []
    t = spec.start

    def stamp(at: datetime, rank: int | None = None) -> str:
        tag = f" TP{rank}" if rank is not None and spec.tp > 1 else ""
        return f"[{at:%Y-%m-%d %H:%M:%S}{tag}]"

    def every_rank(at: datetime, text: str) -> None:
        for r in range(spec.tp):
            lines.append(f"{stamp(at, r)} {text}")

    lines.append(f"{stamp(t)} server_args={_args(spec)}")
    lines.append(f"{stamp(t)} Using default HuggingFace chat template with detected content format: string")
    t += timedelta(seconds=spec.launch)
    truth: dict[str, float | str | None] = {"launch": spec.launch}
    every_rank(t, "Init torch distributed begin.")
    lines.append("[Gloo] Rank 0 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7")
    t += timedelta(seconds=spec.dist_init)
    every_rank(t, "Init torch distributed ends. mem usage=0.81 GB")
    truth["dist_init"] = spec.dist_init
    every_rank(t, "Load weight begin. avail mem=78.50 GB")
    lines.append("Loading safetensors checkpoint shards:   0% Completed | 0/163 [00:00<?, ?it/s]")
    lines.append("Loading safetensors checkpoint shards: 100% Completed | 163/163 [01:59<00:00,  1.37it/s]")
    t += timedelta(seconds=spec.load_weights)
    every_rank(t, "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=38.20 GB, "
                  "mem usage=40.30 GB.")
    truth["load_weights"] = spec.load_weights
    every_rank(t, "KV Cache is allocated. #tokens: 412000, KV size: 26.97 GB")
    t += timedelta(seconds=spec.kv_cache)
    every_rank(t, "Memory pool end. avail mem=10.70 GB")
    truth["kv_cache"] = spec.kv_cache
    if not spec.disable_cuda_graph:
        every_rank(t, "Capture cuda graph begin. This can take up to several minutes. avail mem=10.40 GB")
        if spec.crash_in == "cuda_graph":
            t += timedelta(seconds=spec.cuda_graph // 2)
            lines.append(f"{stamp(t, 3)} Scheduler hit an exception: Traceback (most recent call last):")
            lines.append('  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
                         "line 526, in capture")
            lines.append("    _capture_one_stream()")
            lines.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
                         "total capacity of 79.19 GiB of which 1.02 GiB is free.")
            lines.append("")
            lines.append(f"{stamp(t)} Received sigquit from a child process. It usually means the child failed.")
            truth["ready_seconds"] = None
            truth["crash_seconds"] = (t - spec.start).total_seconds()
            return "\n".join(lines) + "\n", truth
        t += timedelta(seconds=spec.cuda_graph)
        every_rank(t, f"Capture cuda graph end. Time elapsed: {spec.cuda_graph:.2f} s. mem usage=3.10 GB. "
                      "avail mem=7.30 GB.")
        truth["cuda_graph"] = spec.cuda_graph
    if spec.speculative:
        every_rank(t, "Init torch distributed begin.")
        every_rank(t, "Init torch distributed ends. mem usage=0.00 GB")
        every_rank(t, "Load weight begin. avail mem=7.30 GB")
        t += timedelta(seconds=spec.draft_load)
        every_rank(t, "Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=6.10 GB, "
                      "mem usage=1.20 GB.")
        truth["draft.load_weights"] = spec.draft_load
        every_rank(t, "KV Cache is allocated. #tokens: 412000, KV size: 0.40 GB")
        every_rank(t, "Memory pool end. avail mem=5.70 GB")
        if not spec.disable_cuda_graph:
            every_rank(t, "Capture draft cuda graph begin. This can take up to several minutes. avail mem=5.70 GB")
            t += timedelta(seconds=spec.draft_graph)
            every_rank(t, f"Capture draft cuda graph end. Time elapsed: {spec.draft_graph:.2f} s. "
                          "mem usage=0.50 GB. avail mem=5.20 GB.")
            truth["draft.cuda_graph"] = spec.draft_graph
    lines.append(f"{stamp(t, 0)} max_total_num_tokens=412000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 "max_running_requests=128, context_len=163840, available_gpu_mem=5.20 GB")
    t += timedelta(seconds=spec.http_start)
    lines.append(f"{stamp(t)} INFO:     Started server process [4242]")
    lines.append(f"{stamp(t)} INFO:     Waiting for application startup.")
    lines.append(f"{stamp(t)} INFO:     Application startup complete.")
    lines.append(f"{stamp(t)} INFO:     Uvicorn running on http://0.0.0.0:{spec.port} (Press CTRL+C to quit)")
    truth["http_start"] = spec.http_start
    lines.append(f"{stamp(t)} INFO:     127.0.0.1:50412 - \"GET /get_model_info HTTP/1.1\" 200 OK")
    t += timedelta(seconds=spec.warmup)
    lines.append(f"{stamp(t, 0)} Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00")
    lines.append(f"{stamp(t)} INFO:     127.0.0.1:50420 - \"POST /generate HTTP/1.1\" 200 OK")
    lines.append(f"{stamp(t)} The server is fired up and ready to roll!")
    truth["warmup"] = spec.warmup
    truth["ready_seconds"] = (t - spec.start).total_seconds()
    return "\n".join(lines) + "\n", truth


def write(path: Path, *specs: Spec) -> list[dict[str, float | str | None]]:
    """Write one or more starts (a restart) into one file; return their truths."""
    texts, truths = [], []
    for spec in specs:
        text, truth = render(spec)
        texts.append(text)
        truths.append(truth)
    path.write_text("".join(texts))
    return truths


# A small fleet like the motivating story: debug (no CUDA graphs) ~4 min, production ~15 min.
DEBUG_LOADS = (180, 190, 200, 205, 215)
PROD_GRAPHS = (600, 640, 700, 720, 760)


def fleet(folder: Path) -> dict[str, dict[str, float | str | None]]:
    """5 debug + 5 production TP8 EAGLE3 runs, an OOM crash, a TP1 small model. name -> truth."""
    folder.mkdir(parents=True, exist_ok=True)
    base = datetime(2026, 3, 2, 9, 0, 0)
    out: dict[str, dict[str, float | str | None]] = {}
    for i, load in enumerate(DEBUG_LOADS):
        spec = Spec(base + timedelta(hours=i), disable_cuda_graph=True, load_weights=load)
        out[f"debug-{i}.log"] = write(folder / f"debug-{i}.log", spec)[0]
    for i, graph in enumerate(PROD_GRAPHS):
        spec = Spec(base + timedelta(days=1, hours=i), cuda_graph=graph, load_weights=125 + 5 * i)
        out[f"prod-{i}.log"] = write(folder / f"prod-{i}.log", spec)[0]
    crash = Spec(base + timedelta(days=2), crash_in="cuda_graph")
    out["prod-oom.log"] = write(folder / "prod-oom.log", crash)[0]
    small = Spec(base + timedelta(days=3), tp=1, model="/models/Qwen2.5-0.5B", speculative=None,
                 load_weights=6, cuda_graph=9, launch=8)
    out["small-tp1.log"] = write(folder / "small-tp1.log", small)[0]
    return out


def ready_seconds_by_regex(path: Path) -> float | None:
    """Seconds from the first stamped line to the ready banner, read with a plain regex."""
    text = path.read_text()
    first = re.search(FIRST_RE, text, re.M)
    ready = re.search(READY_RE, text, re.M)
    if not first or not ready:
        return None
    fmt = "%Y-%m-%d %H:%M:%S"
    return (datetime.strptime(ready[1], fmt) - datetime.strptime(first[1], fmt)).total_seconds()


def ready_times(folder: Path, prefix: str) -> list[float]:
    """Seconds to ready of the `prefix-*.log` runs in `folder` that reached it, read by regex."""
    times = (ready_seconds_by_regex(p) for p in sorted(folder.glob(f"{prefix}-*.log")))
    return [t for t in times if t is not None]


def write_many_ranks(path: Path, ranks: int, seed: int = 45) -> None:
    """One ready SGLang start-up of `ranks` tensor-parallel ranks whose weights take 4-11 s each:
    the ranks do not agree within a second, and the slowest is 3-4 s over the median rank."""
    import random

    rng = random.Random(seed)
    t0 = datetime(2026, 3, 1, 10, 0, 0)

    def stamp(seconds: float, rank: int | None = None) -> str:
        tag = "" if rank is None else f" TP{rank}"
        return f"[{(t0 + timedelta(seconds=int(seconds))):%Y-%m-%d %H:%M:%S}{tag}]"

    lines = [f"{stamp(0)} server_args=ServerArgs(model_path='m', tp_size={ranks})"]
    lines += [f"{stamp(1, r)} Load weight begin. avail mem=70.00 GB" for r in range(ranks)]
    took = [rng.uniform(4.0, 11.0) for _ in range(ranks)]
    lines += [f"{stamp(1 + t, r)} Load weight end. elapsed={t:.2f} s, type=M, avail mem=50.00 GB, mem usage=20.00 GB."
              for r, t in enumerate(took)]
    last = 1 + max(took)
    lines += [f"{stamp(last + 1, r)} KV Cache is allocated. dtype: torch.bfloat16, #tokens: 100, K size: 1.00 GB, "
              "V size: 1.00 GB" for r in range(ranks)]
    lines.append(f"{stamp(last + 3)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    lines.append(f"{stamp(last + 5)} The server is fired up and ready to roll!")
    path.write_text("\n".join(lines) + "\n")

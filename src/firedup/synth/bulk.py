"""Big inputs for benchmarks: one long log of several startups, or folders of many logs.

`write_long_log` streams: each startup comes from `generate` (a few hundred kB), and the
runtime traffic between startups (`Prefill batch` / `Decode batch` lines, access-log lines,
health probes; docs/engines/sglang.md, "Runtime lines") is written in 1 MB chunks with plain string
formatting, so a 1 GiB file never sits in memory. `write_many` writes a folder of varied
startup logs (about one in five a vLLM one), each padded with post-ready traffic to about
`target_bytes`.
Both return the ground truth, with line numbers as they are in the written files.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

from firedup.core.files import write_file, write_text
from firedup.errors import UsageError
from firedup.synth import generate
from firedup.synth._output import Clock, kubectl_stamp
from firedup.synth.model import H100, H200, ModelSpec, RunSpec, RunTruth, Scenario
from firedup.synth.samples import QWEN3_4B, QWEN3_32B_TP2, QWEN3_235B_FP8

Progress = Callable[[int, int], None]
_CHUNK = 1 << 20


class _Chunks:
    """Lines gathered and written in big ASCII chunks: the long log is gigabytes of them."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.buf: list[str] = []
        self.size = 0  # characters waiting in buf (ASCII: characters are bytes)
        self.written = 0
        self.lines = 0

    @property
    def total(self) -> int:
        return self.written + self.size

    def add(self, line: str) -> None:
        self.buf.append(line)
        self.size += len(line)
        if self.size >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.out.write("".join(self.buf).encode("ascii"))
            self.written += self.size
            self.lines += len(self.buf)
            self.buf.clear()
            self.size = 0


class Traffic:
    """A serving SGLang's runtime lines: fast to write, plausible to read, never a milestone."""

    def __init__(self, rng: random.Random, rank: str | None, speculative: bool, prober: str = "10.42.0.1",
                 cuda_graph: bool = True) -> None:
        self.rng = rng
        self.tag = f" {rank}" if rank else ""
        self.speculative = speculative
        self.prober = prober
        self.cuda_graph = cuda_graph

    def write(self, out: BinaryIO, t: float, budget: int) -> tuple[float, int, int]:
        """About `budget` bytes of traffic from epoch second `t`; returns (end time, bytes, lines)."""
        rnd = self.rng.random
        tag, prober, graph = self.tag, self.prober, self.cuda_graph
        spec = self.speculative
        sec = -1
        pre = main = ""
        chunks = _Chunks(out)
        running = 8
        while chunks.total < budget:
            t += rnd() * 0.025
            s = int(t)
            if s != sec:
                sec = s
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(s))
                pre = f"[{stamp}{tag}] "
                main = f"[{stamp}] INFO:     "
            x = rnd()
            if x < 0.40:
                running = max(0, min(256, running + int(rnd() * 5) - 2))
                new = int(rnd() * 8000) + 16
                line = (f"{pre}Prefill batch, #new-seq: {1 + int(x * 7.5)}, #new-token: {new}, #cached-token: "
                        f"{int(rnd() * 4096)}, token usage: {running / 400:.2f}, #running-req: {running}, "
                        f"#queue-req: {int(x * 10) % 3}, #pending-token: 0, cuda graph: {graph and new <= 8192}, "
                        f"input throughput (token/s): {rnd() * 20000:.2f}\n")
            elif x < 0.78:
                accept = f"accept len: {2.2 + rnd():.2f}, accept rate: {0.55 + rnd() * 0.25:.2f}, " if spec else ""
                line = (f"{pre}Decode batch, #running-req: {running}, #token: {running * 1900 + int(rnd() * 900)}, "
                        f"token usage: {running / 400:.2f}, {accept}cuda graph: {graph}, gen throughput (token/s): "
                        f"{running * 38 + rnd() * 200:.2f}, #queue-req: 0\n")
            elif x < 0.985:
                line = (f'{main}10.42.{int(x * 7)}.{int(rnd() * 250) + 2}:{int(rnd() * 28000) + 32768} - '
                        f'"POST /v1/chat/completions HTTP/1.1" 200 OK\n')
            else:
                line = f'{main}{prober}:{int(rnd() * 28000) + 32768} - "GET /health HTTP/1.1" 200 OK\n'
            chunks.add(line)
        chunks.flush()
        return t, chunks.written, chunks.lines


class VllmTraffic:
    """A serving vLLM 0.13's runtime lines behind `kubectl logs --timestamps`: the API server's
    access log (chat requests, readiness probes) and its 10 s `Engine 000:` stats lines."""

    def __init__(self, rng: random.Random, start: datetime, prober: str = "10.42.0.1") -> None:
        self.rng = rng
        self.stamp = kubectl_stamp(Clock(start))
        self.epoch = _epoch(start)
        self.prober = prober
        self.prefix = "\x1b[1;36m(APIServer pid=1)\x1b[0;0m "

    def write(self, out: BinaryIO, t: float, budget: int) -> tuple[float, int, int]:
        """About `budget` bytes of traffic from epoch second `t`; returns (end time, bytes, lines)."""
        rnd = self.rng.random
        pre, prober = self.prefix, self.prober
        chunks = _Chunks(out)
        next_stats = t + 10.0
        running = 4
        while chunks.total < budget:
            t += rnd() * 0.05
            outer = self.stamp(t - self.epoch)
            x = rnd()
            if t >= next_stats:
                next_stats += 10.0
                running = max(0, min(256, running + int(rnd() * 5) - 2))
                md = time.strftime("%m-%d %H:%M:%S", time.gmtime(int(t)))
                line = (f"{outer}{pre}INFO {md} [loggers.py:236] Engine 000: Avg prompt throughput: "
                        f"{rnd() * 9000:.1f} tokens/s, Avg generation throughput: {running * 30 + rnd() * 200:.1f} "
                        f"tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: {running / 3:.1f}%, "
                        f"Prefix cache hit rate: {rnd() * 60:.1f}%\n")
            elif x < 0.97:
                line = (f'{outer}{pre}INFO:     10.42.{int(x * 7)}.{int(rnd() * 250) + 2}:{int(rnd() * 28000) + 32768} - '
                        f'"POST /v1/chat/completions HTTP/1.1" 200 OK\n')
            else:
                line = f'{outer}{pre}INFO:     {prober}:{int(rnd() * 28000) + 32768} - "GET /health HTTP/1.1" 200 OK\n'
            chunks.add(line)
        chunks.flush()
        return t, chunks.written, chunks.lines


def _shift(truth: RunTruth, lines: int) -> dict[str, Any]:
    """A run's truth with its line numbers moved down by `lines` (it sits later in a bigger file)."""
    out = truth.as_dict()
    for key in ("first_line", "ready_line", "last_line"):
        if out[key]:
            out[key] += lines
    if out["crash"]:
        out["crash"]["line"] += lines
    return out


def _shutdown(t: float, pid: int) -> str:
    """SIGTERM and uvicorn's graceful shutdown, as 0.5.23 logs them (then the next startup)."""
    def stamp(dt: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(t + dt)))
    return (f"[{stamp(0)}] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...\n"
            f"[{stamp(0.2)}] Gracefully exiting... Remaining number of requests 0. Remaining requests "
            "remaining_rids=[].\n"
            f"[{stamp(1.0)}] INFO:     Shutting down\n"
            f"[{stamp(1.1)}] INFO:     Waiting for application shutdown.\n"
            f"[{stamp(1.2)}] INFO:     Application shutdown complete.\n"
            f"[{stamp(1.3)}] INFO:     Finished server process [{pid}]\n")


def long_log_spec() -> RunSpec:
    """The production story run, with little after ready: the traffic is written separately."""
    return RunSpec(model=QWEN3_235B_FP8, tp_size=8, gpu=H200, cuda_graph=True, mem_fraction_static=0.85,
                   cuda_graph_max_bs=64, after_ready_s=30.0)


def write_long_log(path: str | Path, startups: int = 4, target_bytes: int = 1 << 30, seed: int = 0,
                   spec: RunSpec | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """One log of `startups` startups separated by runtime traffic, about `target_bytes` long.

    Written in a stream (memory stays flat whatever the size). Returns the truth: every
    run's outcome, ready offset and line numbers in the written file.
    """
    if startups < 1:
        raise UsageError(f"a long log needs at least one startup, not {startups}")
    rng = random.Random(f"long:{seed}")
    spec = spec or long_log_spec()
    start = datetime(2026, 11, 10, 6, 0, 0)
    runs: list[dict[str, Any]] = []
    written = line_no = 0

    def body(fh: BinaryIO) -> None:
        nonlocal written, line_no, start
        for k in range(startups):
            log = generate(Scenario(f"long-{k + 1}", (spec,), start), seed * 1000 + k)
            data = log.text.encode("utf-8")
            fh.write(data)
            runs.extend(_shift(run, line_no) for run in log.runs)
            written += len(data)
            line_no += log.text.count("\n")
            remaining_startups = startups - k - 1
            budget = max(0, (target_bytes - written - remaining_startups * len(data)) // (startups - k))
            traffic = Traffic(rng, "TP0" if spec.tp_size > 1 else None, spec.speculative, spec.prober,
                              spec.cuda_graph)
            t_end, nbytes, nlines = traffic.write(fh, _epoch(start) + log.span_s, budget)
            written += nbytes
            line_no += nlines
            if remaining_startups:
                text = _shutdown(t_end + rng.uniform(1, 5), rng.randint(120, 4000))
                fh.write(text.encode("ascii"))
                written += len(text)
                line_no += text.count("\n")
                start = datetime(1970, 1, 1) + timedelta(seconds=int(t_end + rng.uniform(40, 120)))
            if progress is not None:
                progress(written, target_bytes)

    write_file(path, body, named=False)
    return {"path": str(path), "bytes": written, "lines": line_no, "seed": seed, "startups": startups,
            "runs": runs}


def write_long_sample(out_dir: str | Path, startups: int = 4, target_bytes: int = 1 << 30, seed: int = 0,
                      progress: Progress | None = None) -> tuple[Path, dict[str, Any]]:
    """What `firedup synth --long` writes: OUT_DIR/long.log and its truth in OUT_DIR/long.truth.json."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "long.log"
    truth = write_long_log(path, startups=startups, target_bytes=target_bytes, seed=seed, progress=progress)
    write_text(out / "long.truth.json", json.dumps(truth, indent=1), named=False)
    return path, truth


def _epoch(moment: datetime) -> float:
    """Seconds since 1970 for a naive datetime read as UTC (the generator's clock)."""
    return (moment - datetime(1970, 1, 1)).total_seconds()


# --- many logs ---------------------------------------------------------------------------

LLAMA_70B = ModelSpec(
    path="meta-llama/Llama-3.3-70B-Instruct", arch="LlamaForCausalLM", weight_gb=131.4, shards=30, load_s=360.0,
    context_len=131072, kv_bytes_per_token=80 * 8 * 128 * 2 * 2, chat_format="string",
)


def _at_tp(model: ModelSpec, tp: int, base_tp: int) -> ModelSpec:
    """The same model sharded `tp` ways instead of `base_tp`: per-rank sizes and load time scale."""
    f = base_tp / tp
    return dataclasses.replace(model, weight_gb=round(model.weight_gb * f, 2), load_s=model.load_s * f,
                               kv_bytes_per_token=int(model.kv_bytes_per_token * f))


def random_vllm_spec(rng: random.Random) -> RunSpec:
    """A varied vLLM 0.13 startup: model and parallelism, eager / no graphs / defaults, a warm
    torch.compile cache, a KV cache too small for the max length, speed."""
    family = rng.choices(("small", "medium", "large"), weights=(5, 3, 2))[0]
    if family == "small":
        tp = rng.choice((1, 1, 2))
        model, gpu = _at_tp(dataclasses.replace(QWEN3_4B, compile_s=40.0), tp, 1), H100
    elif family == "medium":
        tp, model, gpu = 2, QWEN3_32B_TP2, H100
    else:
        tp = rng.choice((4, 8))
        model, gpu = _at_tp(dataclasses.replace(LLAMA_70B, compile_s=80.0), tp, 1), rng.choice((H100, H200))
    mode = rng.choices(("default", "eager", "no_graphs"), weights=(7, 2, 1))[0]
    crash = "kv_cache_too_small" if rng.random() < 0.08 else None
    return RunSpec(model=model, engine="vllm", version="0.13.0", tp_size=tp, gpu=gpu, port=8000,
                   enforce_eager=mode == "eager", cuda_graph=mode == "default", compile_cache=rng.random() < 0.4,
                   gpu_memory_utilization=0.5 if crash else rng.choice((0.9, 0.9, 0.85, 0.95)), crash=crash,
                   speed=rng.uniform(0.7, 1.4), after_ready_s=rng.uniform(20, 90), user_requests=rng.randint(0, 3),
                   health_period_s=rng.choice((None, 5.0, 10.0)))


def random_spec(rng: random.Random) -> RunSpec:
    """A varied startup: engine, model, parallelism, version, graphs, speculative draft, crash, speed."""
    if rng.random() < 0.2:
        return random_vllm_spec(rng)
    family = rng.choices(("small", "medium", "story"), weights=(5, 3, 2))[0]
    version = rng.choices(("0.5.23", "0.5.12"), weights=(7, 3))[0]
    graphs = rng.random() < 0.75
    if family == "small":
        tp = rng.choice((1, 1, 2))
        model, gpu = _at_tp(QWEN3_4B, tp, 1), H100
    elif family == "medium":
        tp = rng.choice((4, 8))
        model, gpu = _at_tp(LLAMA_70B, tp, 1), rng.choice((H100, H200))
    else:
        tp, gpu = 8, H200
        model = QWEN3_235B_FP8 if rng.random() < 0.6 else dataclasses.replace(QWEN3_235B_FP8, draft=None)
        if rng.random() < 0.5:
            model = dataclasses.replace(model, deepgemm=False)
    crash = None
    x = rng.random()
    if x < 0.08 and graphs:
        crash = "oom_cuda_graph"
    elif x < 0.12 and tp > 1:
        crash = "nccl_shm"
    return RunSpec(model=model, version=version, tp_size=tp, gpu=gpu, cuda_graph=graphs,
                   piecewise=version == "0.5.12" and rng.random() < 0.5, crash=crash,
                   mem_fraction_static=round(rng.uniform(0.8, 0.9), 3), cuda_graph_max_bs=rng.choice((32, 64, 128, 256)),
                   speed=rng.uniform(0.7, 1.4), after_ready_s=rng.uniform(20, 90), user_requests=rng.randint(0, 3),
                   health_period_s=rng.choice((None, 5.0, 10.0)))


def write_many(out_dir: str | Path, n: int = 2000, seed: int = 0, target_bytes: int = 200_000,
               progress: Progress | None = None) -> list[Path]:
    """`n` startup logs of about `target_bytes` each (post-ready traffic pads short ones), plus truth.json."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"many:{seed}")
    paths: list[Path] = []
    truth: dict[str, Any] = {}
    moment = datetime(2026, 11, 1, 0, 0, 0)
    for i in range(n):
        spec = random_spec(rng)
        runs: tuple[RunSpec, ...] = (spec,)
        if spec.crash is not None and rng.random() < 0.4:  # restarted after the crash, in the same file
            fixed = dataclasses.replace(spec, crash=None)
            if spec.engine == "vllm":  # the fix for a KV cache too small: give vLLM its memory back
                fixed = dataclasses.replace(fixed, gpu_memory_utilization=0.9)
            runs = (spec, fixed)
        kind = "crash" if spec.crash and len(runs) == 1 else "restart" if spec.crash else \
            ("prod" if spec.cuda_graph else "debug")
        vllm = spec.engine == "vllm"
        name = f"startup-{i:05d}-{kind}-tp{spec.tp_size}{'-vllm' if vllm else ''}.log"
        # vLLM prints no year: its logs come behind kubectl's timestamps, which carry one
        log = generate(Scenario(name[:-4], runs, moment, collector="kubectl" if vllm else None),
                       seed * 100_003 + i)
        path = out / name

        def body(fh: BinaryIO, log: Any = log, runs: tuple[RunSpec, ...] = runs, vllm: bool = vllm,
                 moment: datetime = moment) -> None:
            data = log.text.encode("utf-8")
            fh.write(data)
            last = runs[-1]
            if log.runs[-1].outcome == "ready" and len(data) < target_bytes:
                filler: Traffic | VllmTraffic = (
                    VllmTraffic(rng, moment, last.prober) if vllm else
                    Traffic(rng, "TP0" if last.tp_size > 1 else None, last.speculative, last.prober, last.cuda_graph))
                filler.write(fh, _epoch(moment) + log.span_s, target_bytes - len(data))

        write_file(path, body, named=False)
        truth[name] = {"runs": [r.as_dict() for r in log.runs]}
        paths.append(path)
        moment += timedelta(minutes=rng.randint(20, 600))
        if progress is not None:
            progress(i + 1, n)
    write_text(out / "truth.json", json.dumps({"generator": "firedup.synth.bulk.write_many", "seed": seed,
                                               "files": truth}) + "\n", named=False)
    return paths

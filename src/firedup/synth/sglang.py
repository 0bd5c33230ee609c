"""SGLang startups written the way SGLang prints them (docs/engines/sglang.md).

Two versions are written: 0.5.23 (era C, the current format: `server_args={...}` dict,
`Init parallel`, per-stage `Capture target/draft ... CUDA graph` lines, `Engine startup
timings`, `POST /freeze_gc`) and 0.5.12 (era B: `ServerArgs(...)` repr, `Init torch
distributed`, `Capture cuda graph begin/end. Time elapsed:`, the piecewise prefill
graph). Each scheduler rank prints its own lines on its own clock; only TP0 prints the
tqdm capture bars, the DeepGEMM JIT and `max_total_num_tokens`; global rank 0 prints
the weight-shard bar. Ranks meet at the barriers SGLang has (NCCL init, the KV-cache
sizing all-reduce, every captured forward), so a slow rank holds the others there.

`write_run` is the engine's entry point for `firedup.synth.generate`.
"""

from __future__ import annotations

import random
from typing import Any

from firedup.synth import _sglang_crash as crash
from firedup.synth._output import Stream, Tqdm
from firedup.synth._serverargs import (
    decode_bs_list,
    prefill_token_list,
    repr_dataclass,
    repr_dict,
    server_args_0512,
    server_args_0523,
)
from firedup.synth._sglang_crash import _SITE
from firedup.synth.model import CrashTruth, PendingTruth, RunSpec, RunTruth

ENGINE = "sglang"
VERSIONS = ("0.5.12", "0.5.23")
CRASHES = ("oom_cuda_graph", "nccl_shm")
_GIB = 1024**3


def _ver(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _gb(x: float) -> str:
    return f"{x:.2f}"


def printed(x: float) -> float:
    """A duration as SGLang prints it (`:.2f`), read back: what a parser can know."""
    return float(f"{x:.2f}")


class _Run:
    """One SGLang startup written into a shared stream from time `t0` on."""

    def __init__(self, stream: Stream, spec: RunSpec, rng: random.Random, t0: float, index: int) -> None:
        if spec.version not in VERSIONS:
            raise ValueError(f"SGLang version {spec.version!r} is not written; choose one of {', '.join(VERSIONS)}")
        if spec.crash not in (None, *CRASHES):
            raise ValueError(f"unknown crash {spec.crash!r}; choose one of {', '.join(CRASHES)}")
        if spec.crash == "oom_cuda_graph" and not spec.cuda_graph:
            raise ValueError("an OOM in CUDA graph capture needs CUDA graphs on")
        self.s = stream
        self.spec = spec
        self.r = rng
        self.t0 = t0
        self.index = index
        self.v = _ver(spec.version)
        self.era_c = self.v >= (0, 5, 14)
        self.tp = spec.tp_size
        self.ranks: list[str | None] = [f"TP{i}" for i in range(self.tp)] if self.tp > 1 else [None]
        self.first_seq: int | None = None
        self.last_ms: list[float] = [0.0] * len(self.ranks)  # each rank's latest milestone line
        self.first_t = float("inf")
        self.since = len(stream)
        self.reported: dict[str, dict[str, float]] = {}
        self.phases: dict[str, float] = {}
        self.stragglers: list[str] = []
        self.crash: CrashTruth | None = None
        self.crash_seq: int | None = None
        self.main_pid = rng.randint(120, 4000)
        self.engine_timings: dict[str, Any] | None = None
        self.answers = {503: 0, 200: 0}  # /health probes answered, by status
        self.first_answer: dict[int, float] = {}
        model = spec.model
        self.model = model
        self.draft = model.draft
        self.warm_tokens = 6 if "qwen" in model.path.lower() else 7

    # -- small helpers -------------------------------------------------------------------
    def u(self, a: float, b: float) -> float:
        """A duration drawn uniformly from [a, b], scaled by the run's speed."""
        return self.r.uniform(a, b) * self.spec.speed

    def log(self, t: float, msg: str, rank: str | None = None, milestone: bool = False) -> int:
        seq = self.s.log(t, msg, rank)
        if milestone:
            self.last_ms[self.ranks.index(rank)] = t
        if t < self.first_t:
            self.first_t, self.first_seq = t, seq
        return seq

    def raw(self, t: float, line: str) -> int:
        """A line printed without SGLang's logger. Behind a collector it is stamped like any
        other, so it can be the run's first timestamped line (the parser starts the run there)."""
        seq = self.s.raw(t, line)
        if self.s.collector is not None and t < self.first_t:
            self.first_t, self.first_seq = t, seq
        return seq

    def uv(self, t: float, msg: str) -> int:
        seq = self.s.uvicorn(t, msg)
        if t < self.first_t:
            self.first_t, self.first_seq = t, seq
        return seq

    def report(self, phase: str, rank: str | None, seconds: float) -> float:
        """Record what an `elapsed=` line prints, and return the printed text's value."""
        value = printed(seconds)
        self.reported.setdefault(phase, {})[rank or "-"] = value
        return value

    def rank_label(self, i: int) -> str:
        return self.ranks[i] or "-"

    # -- the run -------------------------------------------------------------------------
    def write(self) -> PendingTruth:
        spec = self.spec
        t_args = self.prelude(self.t0)
        rank_t = self.dist_init(t_args)
        if spec.crash == "nccl_shm":
            return self.finish(None)
        if self.era_c:
            rank_t = self.load_weights(rank_t, draft=False)
            if self.draft is not None:
                rank_t = self.load_weights(rank_t, draft=True)
            pools = self.kv_cache(rank_t, draft=False)
            if self.draft is not None:
                pools = self.kv_cache(pools, draft=True)
            ready = self.graphs_era_c(pools) if spec.cuda_graph else pools
        else:
            rank_t = self.load_weights(rank_t, draft=False)
            rank_t = self.kv_cache(rank_t, draft=False)
            if spec.cuda_graph:
                rank_t = self.graphs_era_b(rank_t)
                if spec.crash == "oom_cuda_graph":
                    return self.finish(None)
            if self.draft is not None:
                rank_t = self.dist_init_draft(rank_t)
                rank_t = self.load_weights(rank_t, draft=True)
                rank_t = self.kv_cache(rank_t, draft=True)
                if spec.cuda_graph:
                    rank_t = self.draft_graphs_era_b(rank_t)
            ready = rank_t
        if spec.crash == "oom_cuda_graph":
            return self.finish(None)
        t_ready = self.serve(ready, t_args)
        return self.finish(t_ready)

    # -- before the scheduler ------------------------------------------------------------
    def prelude(self, t: float) -> float:
        """Bare warnings, the early logger, `server_args`; returns when the args were printed."""
        spec = self.spec
        t += self.u(1.2, 1.9)
        if spec.launcher == "python -m" and self.v >= (0, 5, 10):
            self.raw(t, f"{_SITE}/sglang/launch_server.py:31: UserWarning: 'python -m sglang.launch_server' is still "
                        "supported, but 'sglang serve' is the recommended entrypoint.")
            self.raw(t, "  Example: sglang serve --model-path <model> [options]")
            self.raw(t, "  warnings.warn(")
        t += self.u(0.1, 0.3)
        if not spec.cuda_graph and self.v >= (0, 5, 14):
            self.raw(t, "\x1b[1;33m'--disable-cuda-graph' is deprecated and will be removed in a future release. "
                        "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.\x1b[0m")
        t += self.u(0.3, 0.8)
        pid = self.main_pid
        for msg in ("TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included for compilation. ",
                    "If this is not desired, please set os.environ['TORCH_CUDA_ARCH_LIST'] to specific architectures."):
            self.raw(t, f"W{self.s.clock.glog(t)} {pid} torch/utils/cpp_extension.py:2425] {msg}")
        t += self.u(0.6, 1.4)
        if self.v >= (0, 5, 11):
            self.log(t, "Attention backend not specified. Use fa3 backend by default.")
        t += self.u(0.8, 1.6)
        self.engine_launch = t - self.u(0.3, 0.9)
        self.log(t, "server_args=" + self.server_args())
        t_args = t
        self.sched_spawn = t_args + self.u(3.0, 5.0)
        # The tokenizer manager starts while the schedulers import torch: interleaved lines.
        self.log(t_args + self.u(2.2, 3.4), f"Using default HuggingFace chat template with detected content format: "
                                           f"{self.model.chat_format}")
        return t_args

    def server_args(self) -> str:
        spec, model, draft = self.spec, self.model, self.draft
        over: dict[str, Any] = {
            "model_path": model.path, "tokenizer_path": model.path, "host": spec.host, "port": spec.port,
            "mem_fraction_static": spec.mem_fraction_static, "tp_size": spec.tp_size,
            "quantization": model.quant, "served_model_name": model.path,
            "random_seed": self.r.randint(10_000_000, 999_999_999),
            "max_running_requests": self.max_running_requests(),
        }
        if draft is not None:
            over.update(speculative_algorithm=draft.algorithm, speculative_draft_model_path=draft.path,
                        speculative_num_steps=draft.num_steps, speculative_eagle_topk=draft.eagle_topk,
                        speculative_num_draft_tokens=draft.num_draft_tokens)
        bs = decode_bs_list(spec.cuda_graph_max_bs)
        if self.era_c:
            over.update(cuda_graph_max_bs_decode=spec.cuda_graph_max_bs, cuda_graph_bs_decode=bs)
            if not spec.cuda_graph:
                over.update(cuda_graph_backend_decode="disabled", cuda_graph_backend_prefill="disabled",
                            disable_decode_cuda_graph=True, disable_prefill_cuda_graph=True)
            return repr_dict(server_args_0523(over))
        over.update(cuda_graph_max_bs=spec.cuda_graph_max_bs, cuda_graph_bs=bs, disable_cuda_graph=not spec.cuda_graph,
                    disable_piecewise_cuda_graph=not (spec.piecewise and spec.cuda_graph and draft is None))
        return repr_dataclass(server_args_0512(over))

    def max_running_requests(self) -> int:
        return 4 * self.spec.cuda_graph_max_bs if self.draft is not None else 2048

    # -- distributed init ----------------------------------------------------------------
    def dist_init(self, t_args: float) -> list[float]:
        """Every rank starts, then meets the others at NCCL init; returns each rank's time after."""
        spec, r = self.spec, self.r
        n = len(self.ranks)
        begins = [t_args + self.u(6.5, 8.0) + i * self.u(0.05, 0.25) for i in range(n)]
        if n > 1 and r.random() < 0.3:  # a rank whose process started late (slow import)
            late = r.randrange(1, n)
            begins[late] += self.u(1.5, 3.0)
        for i, rank in enumerate(self.ranks):
            pid = self.main_pid + 60 + i * 3
            self.raw(begins[i] - 1.2, f"W{self.s.clock.glog(begins[i] - 1.2)} {pid} "
                                      "torch/utils/cpp_extension.py:2425] TORCH_CUDA_ARCH_LIST is not set, all archs "
                                      "for visible cards are included for compilation. ")
            word = "parallel" if self.v >= (0, 5, 21) else "torch distributed"
            self.log(begins[i], f"Init {word} begin.", rank)
        peers = n - 1
        meet = max(begins) + self.u(0.4, 1.0)
        for i in range(n):
            for _ in range(3 if n == 1 else 2):
                self.raw(meet + self.u(0.0, 0.08), f"[Gloo] Rank {i if n > 1 else 0} is connected to {peers} peer "
                                                  f"ranks. Expected number of connected peer ranks is : {peers}")
        self.phases["launch"] = min(begins) - self.first_t
        if spec.crash == "nccl_shm":
            crash.nccl_shm(self, meet + self.u(0.5, 1.5))
            return []
        end_base = meet + (self.u(1.8, 4.5) if n > 1 else self.u(0.12, 0.3))
        out = []
        self.mem_base: list[float] = []
        self.avail: list[float] = []
        for i, rank in enumerate(self.ranks):
            end = end_base + self.u(0.0, 0.3)
            elapsed = self.report("dist_init", rank, end - begins[i])
            usage = self.u(0.55, 1.1) if n > 1 else self.u(0.05, 0.12)
            ctx = self.r.uniform(0.55, 0.75)
            self.avail.append(self.spec.gpu.capacity_gb - ctx - usage)
            if self.v >= (0, 5, 21):
                self.log(end, f"Init parallel ends. elapsed={elapsed:.2f} s", rank, milestone=True)
                self.log(end + 0.01, f"Memory baseline taken. mem usage={_gb(usage)} GB", rank)
            else:
                self.log(end, f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={_gb(usage)} GB", rank,
                         milestone=True)
            out.append(end + self.u(0.02, 0.2))
        self.phases["dist_init"] = max(v for v in self.reported["dist_init"].values())
        return out

    def dist_init_draft(self, rank_t: list[float]) -> list[float]:
        """0.5.12: the draft ModelRunner initialises its own groups (fast: they exist)."""
        out = []
        for i, rank in enumerate(self.ranks):
            t = rank_t[i]
            self.log(t, "Init torch distributed begin.", rank)
            secs = self.u(0.02, 0.2)
            elapsed = self.report("draft.dist_init", rank, secs)
            self.log(t + secs, f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage=0.00 GB", rank,
                     milestone=True)
            out.append(t + secs + 0.01)
        return out

    # -- weights -------------------------------------------------------------------------
    def load_weights(self, rank_t: list[float], draft: bool) -> list[float]:
        model, dspec = self.model, self.draft
        name = "draft.load_weights" if draft else "load_weights"
        if draft:
            assert dspec is not None
            path, arch, base, weight, shards, quant = dspec.path, dspec.arch, dspec.load_s, dspec.weight_gb, 1, None
        else:
            path, arch, base, weight, shards, quant = (model.path, model.arch, model.load_s, model.weight_gb,
                                                       model.shards, model.quant)
        n = len(self.ranks)
        durations = [base * self.spec.speed * self.r.uniform(0.97, 1.03) for _ in range(n)]
        if not draft and n > 1 and self.r.random() < 0.5:  # one rank reads slower (shared NVMe, page cache)
            slow = self.r.randrange(n)
            durations[slow] *= self.r.uniform(1.05, 1.10)
            self.stragglers.append(self.rank_label(slow))
        ends: list[float] = []
        snapshot = f"/root/.cache/huggingface/hub/models--{path.replace('/', '--')}/snapshots/{self.r.getrandbits(160):040x}"
        for i, rank in enumerate(self.ranks):
            t = rank_t[i]
            self.log(t, f"Load weight begin. avail mem={_gb(self.avail[i])} GB", rank)
            self.log(t + self.u(0.05, 0.3), f"Found local HF snapshot for {path} at {snapshot}; skipping download.", rank)
            end = t + durations[i]
            if i == 0:
                self.shard_bar(t + self.u(0.4, 1.0), end - self.u(0.3, 1.5), shards)
            usage = weight + self.r.uniform(0.0, 0.03)
            self.avail[i] -= usage
            elapsed = self.report(name, rank, durations[i])
            tail = f"avail mem={_gb(self.avail[i])} GB, mem usage={_gb(usage)} GB."
            if self.v >= (0, 5, 10):
                q = f"quant={quant}, fmt=e4m3, " if quant == "fp8" else ""
                self.log(end, f"Load weight end. elapsed={elapsed:.2f} s, type={arch}, {q}{tail}", rank, milestone=True)
            else:
                self.log(end, f"Load weight end. elapsed={elapsed:.2f} s, type={arch}, dtype={self.model.dtype}, {tail}",
                         rank, milestone=True)
            ends.append(end)
        self.phases[name] = max(self.reported[name].values())
        # `dist.monitored_barrier` after every load: ranks go on together, after the slowest.
        return [max(ends) + self.u(0.01, 0.2) for _ in ends]

    def shard_bar(self, t0: float, t1: float, shards: int) -> None:
        """Global rank 0's `Multi-thread loading shards` bar: shards finish in bursts of threads."""
        bar = Tqdm(self.s, t0, shards, "Multi-thread loading shards", style="shards")
        times = [*sorted(self.r.uniform(t0 + 0.2, t1) for _ in range(shards - 1)), t1]
        for t in times:
            bar.update(t)
        bar.close(t1)

    # -- KV cache ------------------------------------------------------------------------
    def kv_cache(self, rank_t: list[float], draft: bool) -> list[float]:
        """Pool sizing all-reduces the free memory, so every rank waits for the slowest loader."""
        spec, model = self.spec, self.model
        barrier = max(rank_t) + self.u(0.3, 1.2)
        if not draft:
            self.kv_start = barrier
        if not draft:
            # SGLang: rest = free - total * (1 - mem_fraction_static); tokens = rest / cell size.
            cell = model.kv_bytes_per_token + (self.draft.kv_bytes_per_token if self.draft else 0)
            rest = min(self.avail) - spec.gpu.capacity_gb * (1 - spec.mem_fraction_static)
            self.kv_tokens = max(int(rest * _GIB / cell) // 64 * 64, 64)
        per_token = (self.draft.kv_bytes_per_token if draft and self.draft else model.kv_bytes_per_token)
        side = self.kv_tokens * per_token / 2 / _GIB
        out = []
        before = list(self.last_ms)  # what a reader measures the pool from: each rank's previous milestone
        for i, rank in enumerate(self.ranks):
            t = barrier + self.u(0.0, 0.4) if not draft else rank_t[i] + self.u(0.05, 0.3)
            if i == 0 and not draft and self.v >= (0, 5, 3):
                self.log(t - 0.02, f"Using KV cache dtype: {model.dtype}", rank)
            dtype = f"dtype: {model.dtype}, " if self.v >= (0, 5, 13) else ""
            self.log(t, f"KV Cache is allocated. {dtype}#tokens: {self.kv_tokens}, K size: {_gb(side)} GB, "
                        f"V size: {_gb(side)} GB", rank)
            self.avail[i] -= 2 * side + self.r.uniform(0.02, 0.08)
            end = t + self.u(0.05, 0.3)
            self.log(end, f"Memory pool end. avail mem={_gb(self.avail[i])} GB", rank, milestone=True)
            out.append(end)
        name = "draft.kv_cache" if draft else "kv_cache"
        # the run's critical path: from the last rank to arrive (its previous milestone) to the
        # last pool's end; the ranks that arrived earlier waited at the barrier (timeline.build)
        last = max(range(len(out)), key=lambda i: before[i])
        self.phases[name] = max(out) - before[last]
        self.kv_end = max(out)
        return out

    # -- graph capture, era C (0.5.14+) --------------------------------------------------
    def graphs_era_c(self, rank_t: list[float]) -> list[float]:
        spec, model = self.spec, self.model
        t = max(rank_t) + self.u(0.4, 1.5)
        start = t
        timings: dict[str, float] = {}
        # Prefill graph first (0.5.14+); DeepGEMM JIT runs in its warm-up forward on TP0.
        tokens = prefill_token_list(8192)
        begins = self.stage_begin(t, "target", "prefill",
                                  lambda a: f"backend=breakable, num_tokens={tokens}, avail mem={_gb(a)} GB")
        t = max(begins) + self.u(0.3, 0.8)
        if model.deepgemm:
            t0 = t
            t = self.deepgemm(t)
            self.phases["deepgemm"] = t - t0
        shapes = list(reversed(tokens))
        desc = "Capturing prefill shape" if self.v >= (0, 5, 21) else "Capturing num tokens"
        t = self.capture_bar(t, shapes, lambda n, a: f"{desc} (num_tokens={n} avail_mem={_gb(a)} GB)",
                             per_item=(2.6 * model.capture_scale, 3.3 * model.capture_scale),
                             mem_total=self.r.uniform(1.8, 2.4), grow=True)
        t, timings["prefill"] = self.stage_end(begins, t, "target", "prefill")
        # Decode graph, or the target-verify graph under speculative decoding.
        stage = "verify" if self.draft is not None else "decode"
        per_req = self.draft.num_draft_tokens if self.draft is not None else 1
        bs = decode_bs_list(spec.cuda_graph_max_bs)
        t += self.u(0.1, 0.4)
        bs_in_begin = self.v < (0, 5, 22)
        key = "num_tokens_per_req" if self.v >= (0, 5, 16) else "num_tokens_per_bs"

        def decode_begin(a: float) -> str:
            listed = f"bs={bs}, " if bs_in_begin else ""
            return f"backend=full, {key}={per_req}, {listed}avail mem={_gb(a)} GB"

        begins = self.stage_begin(t, "target", stage, decode_begin)
        t = max(begins) + self.u(0.2, 0.6)
        if spec.crash == "oom_cuda_graph":
            crash.oom_capture(self, t, list(reversed(bs)), stage)
            return []
        lo, hi = (7.0, 8.6) if self.draft is not None else (1.0, 1.6)  # verify graphs hold num_draft_tokens per req
        t = self.capture_bar(t, list(reversed(bs)), lambda n, a: f"Capturing batches (bs={n} avail_mem={_gb(a)} GB)",
                             per_item=(lo * model.capture_scale, hi * model.capture_scale),
                             mem_total=self.r.uniform(0.9, 1.5), grow=True)
        t, timings["target_verify" if stage == "verify" else "decode"] = self.stage_end(
            begins, t, "target", stage, bs=None if bs_in_begin else bs)
        target_end = t
        self.phases["cuda_graph"] = target_end - start
        if self.draft is not None:
            d0 = t + self.u(0.2, 0.6)
            t = d0
            for which, per_req_d, per_item in (("decode", self.draft.eagle_topk, (2.1, 2.7)),
                                               ("extend", self.draft.num_draft_tokens, (1.5, 1.9))):
                tb = t
                avail = self.avail[0]
                self.log(tb, f"Capture draft {which} CUDA graph begin. backend=full, {key}={per_req_d}, bs={bs}, "
                             f"avail mem={_gb(avail)} GB", self.ranks[0])
                t = self.capture_bar(tb + self.u(0.1, 0.3), list(reversed(bs)),
                                     lambda n, a: f"Capturing batches (bs={n} avail_mem={_gb(a)} GB)",
                                     per_item=per_item, mem_total=self.r.uniform(0.1, 0.35), grow=False)
                elapsed = self.report(f"draft.cuda_graph/{which}", self.ranks[0], t + 0.05 - tb)
                used = avail - self.avail[0]
                self.log(t + 0.05, f"Capture draft {which} CUDA graph end. elapsed={elapsed:.2f} s, "
                                   f"mem usage={_gb(used)} GB, avail mem={_gb(self.avail[0])} GB.", self.ranks[0])
                timings[f"draft_{which}"] = elapsed
                t += self.u(0.1, 0.3)
            self.phases["draft.cuda_graph"] = t - d0
        self.graph_timings = timings
        return [t + self.u(0.0, 0.1) for _ in self.ranks]

    def stage_begin(self, t: float, role: str, stage: str, rest: Any) -> list[float]:
        begins = []
        for i, rank in enumerate(self.ranks):
            tb = t + self.u(0.0, 0.35)
            self.avail[i] -= self.r.uniform(0.0, 0.05)
            self.log(tb, f"Capture {role} {stage} CUDA graph begin. {rest(self.avail[i])}", rank)
            begins.append(tb)
        self.stage_avail = list(self.avail)
        return begins

    def stage_end(self, begins: list[float], t: float, role: str, stage: str,
                  bs: list[int] | None = None) -> tuple[float, float]:
        """Every rank ends the stage together (each captured forward is a collective).

        Returns the last end line's time and the longest elapsed printed."""
        used0 = self.stage_avail[0] - self.avail[0]
        ends = []
        for i, rank in enumerate(self.ranks):
            te = t + self.u(0.02, 0.2)
            if i > 0:
                used = max(used0 + self.r.uniform(-0.03, 0.03), 0.0)
                self.avail[i] = self.stage_avail[i] - used
            used_i = self.stage_avail[i] - self.avail[i]
            elapsed = self.report(f"cuda_graph/{stage}", rank, te - begins[i])
            listed = f"bs={bs}, " if bs is not None else ""
            self.log(te, f"Capture {role} {stage} CUDA graph end. {listed}elapsed={elapsed:.2f} s, "
                         f"mem usage={_gb(used_i)} GB, avail mem={_gb(self.avail[i])} GB.", rank, milestone=True)
            ends.append(te)
        return max(ends), max(self.reported[f"cuda_graph/{stage}"].values())

    def capture_bar(self, t: float, items: list[int], desc: Any, per_item: tuple[float, float], mem_total: float,
                    grow: bool) -> float:
        """TP0's tqdm over the captured sizes, largest first; returns when it closed."""
        bar = Tqdm(self.s, t, len(items), None)
        weights = [(0.6 + 0.8 * k / max(len(items) - 1, 1)) if grow else 1.0 for k in range(len(items))][::-1]
        step_mem = mem_total / len(items)
        for k, n in enumerate(items):
            bar.set_description(t, desc(n, self.avail[0]))
            t += self.u(*per_item) * weights[k]
            self.avail[0] -= step_mem
            bar.update(t)
        bar.close(t)
        return t

    def deepgemm(self, t: float) -> float:
        """FP8 block-quantised GEMMs compile for every M on first use; only rank 0 compiles."""
        rank = self.ranks[0]
        self.log(t, "Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) if you "
                    "have not run `sglang.compile_deep_gemm`. It is recommended to run `sglang.compile_deep_gemm` with "
                    "same args as `sglang.launch_server` for pre-compilation to reduce the overhead if you have not run "
                    "it before. For example: `python3 -m sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 "
                    "--tp 8 --trust-remote-code`", rank)
        # The dense FP8 projections at TP8 (qkv: N=(64+2*4)*128/8, o_proj: K=64*128/8); the
        # experts run in the fused Triton MoE kernel, which DeepGEMM does not compile.
        kernels = (("GEMM_NT_F8F8BF16", 1152, 4096, 1), ("GEMM_NT_F8F8BF16", 4096, 1024, 1))
        for kernel, n, k, groups in kernels:
            t += self.u(0.05, 0.3)
            self.log(t, f"Try DeepGEMM JIT Compiling for <{kernel}> N={n}, K={k}, num_groups={groups} with all Ms. "
                        "It only takes a little time (typically 1 sec) if you have run "
                        "`python3 -m sglang.compile_deep_gemm`. ", rank)
            self.log(t + 0.01, f"Required memory for warmup: {self.r.uniform(0.5, 2.5):.1f}GB, Available memory: "
                               f"{self.avail[0]:.1f}GB", rank)
            total = 16384
            secs = self.u(166.0, 184.0)
            bar = Tqdm(self.s, t + 0.02, total, "DeepGEMM warmup")
            done = 0
            tt = t + 0.02
            while done < total:
                tt += 0.1 + self.r.uniform(0.0, 0.01)
                step = max(1, int(total * (tt - t) / secs) - done)
                step = min(step, total - done)
                done += step
                bar.update(tt, step)
            bar.close(tt)
            t = tt
        return t + self.u(0.2, 0.6)

    # -- graph capture, era B (0.5.12) ---------------------------------------------------
    def graphs_era_b(self, rank_t: list[float]) -> list[float]:
        spec = self.spec
        bs = decode_bs_list(spec.cuda_graph_max_bs)
        t = max(rank_t) + self.u(0.1, 0.5)
        start = t
        begins = []
        for i, rank in enumerate(self.ranks):
            tb = t + self.u(0.0, 0.3)
            self.avail[i] -= self.r.uniform(0.3, 0.6)
            self.log(tb, f"Capture cuda graph begin. This can take up to several minutes. avail mem="
                         f"{_gb(self.avail[i])} GB", rank)
            begins.append(tb)
        self.stage_avail = list(self.avail)
        self.log(max(begins) + 0.01, f"Capture cuda graph bs {bs}", self.ranks[0])
        t = max(begins) + self.u(0.1, 0.3)
        if spec.crash == "oom_cuda_graph":
            crash.oom_capture(self, t, list(reversed(bs)), "decode")
            return []
        t = self.capture_bar(t, list(reversed(bs)), lambda n, a: f"Capturing batches (bs={n} avail_mem={_gb(a)} GB)",
                             per_item=(0.25, 0.45), mem_total=self.r.uniform(0.5, 1.0), grow=True)
        t = self.old_end(begins, t, "cuda_graph", "Capture cuda graph end.")
        if spec.piecewise and self.draft is None:
            tokens = prefill_token_list(4096)
            t += self.u(0.05, 0.2)
            begins = []
            for i, rank in enumerate(self.ranks):
                tb = t + self.u(0.0, 0.2)
                self.log(tb, f"Capture piecewise CUDA graph begin. avail mem={_gb(self.avail[i])} GB", rank)
                begins.append(tb)
            self.stage_avail = list(self.avail)
            self.log(max(begins) + 0.01, f"Capture cuda graph num tokens {tokens}", self.ranks[0])
            shapes = list(reversed(tokens))
            t = max(begins) + self.u(0.1, 0.3)
            t = self.plain_bar(t, shapes, lambda n: f"Compiling num tokens (num_tokens={n})", (0.35, 0.6))
            t = self.capture_bar(t, shapes, lambda n, a: f"Capturing num tokens (num_tokens={n} avail_mem={_gb(a)} GB)",
                                 per_item=(0.2, 0.35), mem_total=self.r.uniform(1.5, 2.5), grow=True)
            t = self.old_end(begins, t, "cuda_graph/piecewise", "Capture piecewise CUDA graph end.")
        self.phases["cuda_graph"] = t - start
        return [t + self.u(0.01, 0.1) for _ in self.ranks]

    def plain_bar(self, t: float, items: list[int], desc: Any, per_item: tuple[float, float]) -> float:
        bar = Tqdm(self.s, t, len(items), None)
        for n in items:
            bar.set_description(t, desc(n))
            t += self.u(*per_item)
            bar.update(t)
        bar.close(t)
        return t

    def old_end(self, begins: list[float], t: float, phase: str, text: str) -> float:
        used0 = self.stage_avail[0] - self.avail[0]
        ends = []
        for i, rank in enumerate(self.ranks):
            te = t + self.u(0.02, 0.2)
            if i > 0:
                self.avail[i] = self.stage_avail[i] - max(used0 + self.r.uniform(-0.03, 0.03), 0.0)
            used = self.stage_avail[i] - self.avail[i]
            elapsed = self.report(phase, rank, te - begins[i])
            self.log(te, f"{text} Time elapsed: {elapsed:.2f} s. mem usage={_gb(used)} GB. "
                         f"avail mem={_gb(self.avail[i])} GB.", rank, milestone=True)
            ends.append(te)
        return max(ends)

    def draft_graphs_era_b(self, rank_t: list[float]) -> list[float]:
        """0.5.12: draft and draft-extend graphs, logged by TP0 only (`log_info_on_rank0`)."""
        assert self.draft is not None
        bs = decode_bs_list(self.spec.cuda_graph_max_bs)
        t = max(rank_t) + self.u(0.2, 0.6)
        d0 = t
        rank = self.ranks[0]
        for which, label, per_item in (("", "draft.cuda_graph", (0.9, 1.3)),
                                       ("extend ", "draft.cuda_graph/extend", (0.4, 0.7))):
            avail = self.avail[0]
            self.log(t, f"Capture draft {which}cuda graph begin. This can take up to several minutes. "
                        f"avail mem={_gb(avail)} GB", rank)
            te = self.capture_bar(t + 0.1, list(reversed(bs)), lambda n, a: f"Capturing batches (bs={n} "
                                                                            f"avail_mem={_gb(a)} GB)",
                                  per_item=per_item, mem_total=self.r.uniform(0.1, 0.3), grow=False) + 0.05
            elapsed = self.report(label, rank, te - t)
            self.log(te, f"Capture draft {which}cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage="
                         f"{_gb(avail - self.avail[0])} GB. avail mem={_gb(self.avail[0])} GB.", rank)
            t = te + self.u(0.05, 0.2)
        self.phases["draft.cuda_graph"] = t - d0
        return [t + self.u(0.0, 0.1) for _ in self.ranks]

    # -- serving -------------------------------------------------------------------------
    def serve(self, ready: list[float], t_args: float) -> float:
        """Scheduler ready → uvicorn → warm-up → ready; then probes and traffic. Returns ready time."""
        spec = self.spec
        t = max(ready) + self.u(0.05, 0.3)
        cap = self.avail[0]
        self.log(t, f"max_total_num_tokens={self.kv_tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                    f"max_running_requests={self.max_running_requests()}, context_len={self.model.context_len}, "
                    f"available_gpu_mem={_gb(cap)} GB", self.ranks[0])
        sched_ready = t
        if self.v >= (0, 5, 17):
            t += self.u(0.1, 0.5)
            self.engine_timings_line(t, t_args)
            sched_ready = t  # the last line before HTTP that says the engine is up
        t += self.u(0.2, 0.8)
        self.uv(t, f"Started server process [{self.main_pid}]")
        self.uv(t, "Waiting for application startup.")
        self.uv(t + 0.01, "Application startup complete.")
        t_running = t + 0.02
        self.uv(t_running, f"Uvicorn running on http://{spec.host}:{spec.port} (Press CTRL+C to quit)")
        self.phases["http_start"] = t_running - sched_ready
        # Warm-up thread: sleeps 1 s, polls the model info, sends one generate request.
        t = t_running + 1.0 + self.u(0.0, 0.05)
        info = "/model_info" if self.v >= (0, 5, 7) else "/get_model_info"
        self.s.access(t, f"127.0.0.1:{self.r.randint(33000, 60999)}", "GET", info, 200)
        warm = self.u(6.5, 11.0) if spec.cuda_graph else self.u(13.0, 20.0)
        jit = 0.0
        if spec.cold_caches:  # the request waits on kernels JIT-compiling, silently (88 s on a fresh H200)
            jit = self.u(70.0, 95.0)
        elif spec.cold_caches is False:
            warm *= 0.15  # warm caches: the request is answered in seconds (1-3 s)
        t_prefill = t + jit + warm * self.r.uniform(0.6, 0.9)
        self.log(t_prefill, self.prefill_line(self.warm_tokens, cuda_graph=spec.cuda_graph, throughput=0.0),
                 self.ranks[0])
        t += jit + warm
        self.s.access(t, f"127.0.0.1:{self.r.randint(33000, 60999)}", "POST", "/generate", 200)
        if self.v >= (0, 5, 18):
            t += self.u(0.02, 0.1)
            self.s.access(t, f"127.0.0.1:{self.r.randint(33000, 60999)}", "POST", "/freeze_gc", 200)
        t_ready = t + self.u(0.005, 0.05)
        self.ready_seq = self.log(t_ready, "The server is fired up and ready to roll!")
        self.phases["warmup"] = t_ready - t_running
        self.probes(t_running, t_ready, t_ready + spec.after_ready_s)
        self.traffic(t_ready, t_ready + spec.after_ready_s)
        return t_ready

    def engine_timings_line(self, t: float, t_args: float) -> None:
        rep = self.reported
        load = max(rep["load_weights"][r] + rep.get("draft.load_weights", {}).get(r, 0.0) for r in rep["load_weights"])
        g = getattr(self, "graph_timings", {})
        kv = self.kv_end - self.kv_start
        # The engine's clocks: schedulers from their spawn, the tokenizer from engine launch.
        sched = t - 0.05 - self.sched_spawn
        values = {"load_weight": load, "kv_cache_allocation": kv, "scheduler_e2e": sched}
        cg = {k: g.get(k, 0.0) for k in ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode",
                                          "draft_extend")}
        tokenizer = t - self.engine_launch
        text = ", ".join(f"{k}={v:.2f}" for k, v in values.items())
        graphs = ", ".join(f"{k}={v:.2f}" for k, v in cg.items())
        self.log(t, f"Engine startup timings (s): {text}, cuda_graph={{{graphs}}}, tokenizer_e2e={tokenizer:.2f}")
        self.engine_timings = {**{k: printed(v) for k, v in values.items()},
                               "cuda_graph": {k: printed(v) for k, v in cg.items()},
                               "tokenizer_e2e": printed(tokenizer)}

    def prefill_line(self, tokens: int, cuda_graph: bool, throughput: float, running: int = 0,
                     usage: float = 0.0, cached: int = 0) -> str:
        return (f"Prefill batch, #new-seq: 1, #new-token: {tokens}, #cached-token: {cached}, token usage: {usage:.2f}, "
                f"#running-req: {running}, #queue-req: 0, #pending-token: 0, cuda graph: {cuda_graph}, "
                f"input throughput (token/s): {throughput:.2f}")

    def decode_line(self, running: int, tokens: int, usage: float, throughput: float) -> str:
        spec = ""
        if self.draft is not None:
            accept = self.r.uniform(2.4, 3.1)
            spec = f"accept len: {accept:.2f}, accept rate: {accept / self.draft.num_draft_tokens:.2f}, "
        return (f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, {spec}"
                f"cuda graph: {self.spec.cuda_graph}, gen throughput (token/s): {throughput:.2f}, #queue-req: 0")

    def probes(self, t_running: float, t_ready: float, t_end: float) -> None:
        """The kubelet's readiness probe: refused before uvicorn, 503 while starting, then 200."""
        period = self.spec.health_period_s
        if not period:
            return
        t = self.t0 + self.r.uniform(0.0, period)
        while t < t_end:
            if t >= t_running:
                port = self.r.randint(32768, 60999)
                client = f"{self.spec.prober}:{port}"
                if t < t_ready:
                    self.s.access(t + 0.002, client, "GET", "/health", 503)
                    self.answers[503] += 1
                    self.first_answer.setdefault(503, t + 0.002)
                else:  # a real one-token generation, answered after the handler's 1 s sleep
                    self.log(t + self.u(0.005, 0.02), self.prefill_line(1, self.spec.cuda_graph,
                                                                        self.r.uniform(40, 120)), self.ranks[0])
                    done = t + 1.0 + self.u(0.002, 0.03)
                    self.s.access(done, client, "GET", "/health", 200)
                    self.answers[200] += 1
                    self.first_answer.setdefault(200, done)
            t += period

    def traffic(self, t_ready: float, t_end: float) -> None:
        """A few chat requests after ready: prefill, periodic decode lines, the access line."""
        n = self.spec.user_requests
        if n <= 0:
            return
        t = t_ready + self.u(8.0, 20.0)
        for _ in range(n):
            if t > t_end - 5:
                break
            prompt = self.r.randint(200, 3000)
            self.log(t, self.prefill_line(prompt, self.spec.cuda_graph and prompt <= 8192,
                                          self.r.uniform(3000, 9000), running=0, usage=0.0), self.ranks[0])
            steps = self.r.randint(1, 4)
            tt = t
            for k in range(steps):
                tt += self.u(1.0, 1.6)
                self.log(tt, self.decode_line(1, prompt + 40 * (k + 1), 0.0, self.r.uniform(150, 320)), self.ranks[0])
            tt += self.u(0.1, 0.8)
            # A server bound to localhost only hears local clients.
            client = "127.0.0.1" if self.spec.host == "127.0.0.1" else f"10.42.1.{self.r.randint(2, 250)}"
            self.s.access(tt, f"{client}:{self.r.randint(32768, 60999)}", "POST", "/v1/chat/completions", 200)
            t = tt + self.u(3.0, 15.0)

    # -- truth ---------------------------------------------------------------------------
    def finish(self, t_ready: float | None) -> PendingTruth:
        spec, model = self.spec, self.model
        config: dict[str, Any] = {
            "model_path": model.path, "tp_size": spec.tp_size, "disable_cuda_graph": not spec.cuda_graph,
            "speculative_algorithm": self.draft.algorithm if self.draft else None,
            "speculative_draft_model_path": self.draft.path if self.draft else None,
            "quantization": model.quant, "mem_fraction_static": spec.mem_fraction_static,
            "cuda_graph_max_bs": spec.cuda_graph_max_bs, "version": spec.version, "gpu": spec.gpu.name,
        }
        clock = self.s.clock
        first_ts = clock.stamp(self.first_t).replace(" ", "T")
        ready_ts = clock.stamp(t_ready).replace(" ", "T") if t_ready is not None else None
        if t_ready is not None:
            self.phases["total"] = t_ready - self.first_t
        health: dict[str, Any] = {}
        for status in (503, 200):
            first = self.first_answer.get(status)
            health[f"n_{status}"] = self.answers[status]
            health[f"first_{status}_ts"] = clock.stamp(first).replace(" ", "T") if first is not None else None
        truth = RunTruth(
            run_index=self.index, engine=ENGINE, version=spec.version,
            outcome="ready" if t_ready is not None else "crashed", first_ts=first_ts, ready_ts=ready_ts,
            ready_offset_s=None if t_ready is None else round(t_ready - self.first_t, 3),
            first_line=0, ready_line=None, last_line=0, config=config,
            phases={k: round(v, 3) for k, v in self.phases.items()},
            reported=self.reported, engine_timings=self.engine_timings, crash=self.crash,
            stragglers=self.stragglers, health=health,
        )
        return PendingTruth.of(truth, self.first_seq, self.ready_seq if t_ready is not None else None,
                               self.crash_seq, self.s.latest_since(self.since))


def write_run(stream: Stream, spec: RunSpec, rng: random.Random, t0: float, index: int) -> PendingTruth:
    """Write one SGLang startup into `stream` from time `t0` (seconds after the stream's start)."""
    return _Run(stream, spec, rng, t0, index).write()

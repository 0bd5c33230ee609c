"""What a synthetic log should contain, and what the generator knows it wrote.

A `Scenario` is one log file: one or more startups (`RunSpec`) of one engine, with the
pause between a crash and its restart. The engine modules (`synth/sglang.py`,
`synth/vllm.py`) turn a `RunSpec` into lines and return a `RunTruth`: the outcome, the
ready time, the durations the generator intended and the durations it printed. Tests
check the parser against that truth, so it is recorded exactly, never re-read from the
text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class GpuSpec:
    name: str
    capacity_gb: float  # what torch reports as total memory, in the GB SGLang prints


H200 = GpuSpec("NVIDIA H200", 139.81)
H100 = GpuSpec("NVIDIA H100 80GB HBM3", 79.19)


@dataclass(frozen=True)
class DraftSpec:
    """The draft model of speculative decoding (EAGLE/EAGLE3)."""

    path: str
    arch: str  # the `type=` of its `Load weight end` line
    algorithm: str = "EAGLE3"
    weight_gb: float = 0.45  # per rank
    load_s: float = 5.0  # typical seconds to load, per rank
    num_steps: int = 3
    eagle_topk: int = 1
    num_draft_tokens: int = 4
    kv_bytes_per_token: int = 1024  # per rank, K and V together


@dataclass(frozen=True)
class ModelSpec:
    """A model as the startup log shows it, at a given tensor-parallel size."""

    path: str
    arch: str  # the `type=` of `Load weight end`
    weight_gb: float  # weight memory per rank at the run's tp_size
    shards: int  # checkpoint files (the shard tqdm bar's total)
    load_s: float  # typical seconds to load the weights, per rank
    context_len: int
    kv_bytes_per_token: int  # per rank, K and V together
    quant: str | None = None  # "fp8" prints `quant=fp8, fmt=e4m3` on 0.5.10+
    deepgemm: bool = False  # FP8 block-quantised: DeepGEMM JIT runs inside the first capture
    draft: DraftSpec | None = None
    dtype: str = "torch.bfloat16"
    chat_format: str = "openai"  # `Using default HuggingFace chat template with detected content format: ...`
    compile_s: float = 45.0  # vLLM: a cold torch.compile of the model (Dynamo + Inductor), seconds
    # SGLang 0.5.14+: seconds per captured shape relative to the Qwen3-235B FP8 MoE the prefill and
    # decode capture timings were drawn for (a dense model with fewer layers per rank captures faster).
    capture_scale: float = 1.0


@dataclass(frozen=True)
class RunSpec:
    """One server startup."""

    model: ModelSpec
    engine: str = "sglang"
    version: str = "0.5.23"
    tp_size: int = 1
    gpu: GpuSpec = H200
    cuda_graph: bool = True  # False: launched with --disable-cuda-graph
    piecewise: bool = False  # 0.5.12: the piecewise prefill graph (off unless asked)
    mem_fraction_static: float = 0.85
    cuda_graph_max_bs: int = 64  # largest decode (or verify) batch captured
    crash: str | None = None  # None | "oom_cuda_graph" | "nccl_shm"
    launcher: str = "python -m"  # "python -m" (prints a UserWarning on 0.5.10+) | "sglang serve"
    host: str = "0.0.0.0"
    port: int = 30000
    health_period_s: float | None = 5.0  # a Kubernetes readiness probe on GET /health
    prober: str = "10.42.0.1"  # the kubelet's address in the access log
    after_ready_s: float = 90.0  # how long the log goes on after ready (probes, requests)
    user_requests: int = 0  # chat requests after ready
    speed: float = 1.0  # scales every duration (a slower disk, a slower node)
    # vLLM only: --enforce-eager (no torch.compile and no graph capture; `cuda_graph=False` alone
    # means -cc.cudagraph_mode=NONE), --gpu-memory-utilization, and a torch.compile cache that
    # already holds this model's graphs (a warm start loads them instead of compiling).
    enforce_eager: bool = False
    gpu_memory_utilization: float = 0.9
    compile_cache: bool = False
    # Kernel JIT caches (Triton, FlashInfer, sgl-kernel; ~/.cache) are empty, as on a fresh machine:
    # the first warm-up compiles kernels and prints nothing meanwhile. SGLang: inside the server's
    # warm-up request (88 s on a fresh H200); vLLM: at the end of `init engine`, after the
    # FlashInfer autotune cache miss on 0.26 (130 s). False: warm, the warm-up takes seconds
    # (1-3 s; docs/silences-and-caches.md). None keeps the generator's usual timings.
    cold_caches: bool | None = None

    @property
    def speculative(self) -> bool:
        return self.model.draft is not None


@dataclass(frozen=True)
class Scenario:
    """One log file: one startup, or several when the server crashed and was restarted."""

    name: str
    runs: tuple[RunSpec, ...]
    start: datetime
    description: str = ""
    restart_gap_s: float = 25.0  # from the crash to the restarted process's first line
    collector: str | None = None  # "kubectl": every line behind `kubectl logs --timestamps`' RFC 3339 stamp


# --- ground truth ------------------------------------------------------------------------


@dataclass
class CrashTruth:
    category: str  # the firedup category the generator meant: "oom", "distributed", ...
    phase: str  # the startup phase it happened in
    line: int  # physical line (1-based) of the first fatal line
    rank: str | None
    message: str  # the exception line the generator printed first


@dataclass
class RunTruth:
    """What the generator intended for one startup, and what it printed."""

    run_index: int
    engine: str
    version: str
    outcome: str  # "ready" | "crashed"
    first_ts: str  # ISO text of the run's first timestamped line (a collector's stamp counts), as printed
    ready_ts: str | None
    ready_offset_s: float | None  # exact: ready - first timestamped line
    first_line: int
    ready_line: int | None
    last_line: int
    config: dict[str, Any]
    # Intended run-level durations (exact seconds; the critical path over ranks).
    phases: dict[str, float] = field(default_factory=dict)
    # Durations printed on `elapsed=` / `Time elapsed:` lines: phase -> rank -> seconds as printed.
    # Graph phases carry their stage: "cuda_graph/prefill", "draft.cuda_graph/extend".
    reported: dict[str, dict[str, float]] = field(default_factory=dict)
    engine_timings: dict[str, Any] | None = None  # the `Engine startup timings` line, as printed
    crash: CrashTruth | None = None
    stragglers: list[str] = field(default_factory=list)  # ranks made slow on purpose
    health: dict[str, Any] = field(default_factory=dict)  # probe answers: counts and first times

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SyntheticLog:
    """A generated log: its text (as written to disk) and the truth about every run in it."""

    name: str
    scenario: Scenario
    seed: int
    pieces: list[str]
    runs: list[RunTruth]
    span_s: float = 0.0  # seconds from the scenario's start to the last write

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def lines(self) -> list[str]:
        """Physical lines, each with its newline (tqdm redraws keep their `\\r` inside)."""
        return self.text.splitlines(keepends=True)

    def write(self, path: str | Any) -> int:
        """Write the log as UTF-8 bytes; returns the byte count."""
        from firedup.core.files import write_bytes

        data = self.text.encode("utf-8")
        write_bytes(path, data, named=False)
        return len(data)

    def truth(self) -> dict[str, Any]:
        return {"scenario": self.scenario.name, "description": self.scenario.description, "seed": self.seed,
                "runs": [r.as_dict() for r in self.runs]}


@dataclass
class PendingTruth:
    """A run's truth before rendering: its lines are known only once the stream is sorted.

    `keys` maps "first" | "ready" | "crash" | "last" to the stream sequence numbers of the
    writes that hold those lines.
    """

    truth: RunTruth
    keys: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, truth: RunTruth, first: int | None, ready: int | None, crash: int | None,
           last: int | None) -> PendingTruth:
        assert first is not None and last is not None
        keys = {"first": first, "last": last}
        keys.update({k: v for k, v in (("ready", ready), ("crash", crash)) if v is not None})
        return cls(truth, keys)


"""vLLM startups written the way vLLM 0.13 prints them (docs/engines/vllm.md).

The V1 engine in three kinds of process: the API server (`vllm serve`, PID 1 in a
container), the EngineCore, and with tensor parallelism one worker per GPU (at TP1 the
worker lives inside the EngineCore). Up to 0.30 a wrapper around each process's stdout and
stderr puts `(<name> pid=<N>) ` in front of every line it writes (in 0.12-0.15 in cyan,
unless NO_COLOR): log records, uvicorn's lines, tqdm frames, the blank line tqdm writes on
close. A worker's first lines (distributed init) come before its wrapper is installed, so
they carry no prefix. From 0.11.1 most load, compile and KV lines are printed once per
node (`info_once`), by the first worker.

What a run prints, in order: the version banner and `non-default args`; the resolved
model config; the EngineCore's `Initializing a V1 LLM engine` line with the whole config;
distributed init; `Starting to load model`, the shard bar, `Loading weights took`,
`Model loading took`; then the engine's `init engine` timer runs over torch.compile
(Dynamo, then Inductor, or a cache hit), the memory profile (`Available KV cache
memory`, `GPU KV cache size`), CUDA graph capture (two tqdm bars, then `Graph capturing
finished in N secs`); then the API server lists its routes and uvicorn starts. vLLM
refuses connections until `Application startup complete.`: a readiness probe before it
leaves no trace in the log; after it, uvicorn's access log shows `GET /health` 200.

`--enforce-eager` drops both torch.compile and graph capture; `cudagraph_mode=NONE`
(`-cc.cudagraph_mode=NONE`) drops only the capture. `write_run` is the engine's entry
point for `firedup.synth.generate`.
"""

from __future__ import annotations

import random
from typing import Any

from firedup.synth._output import Stream, Tqdm
from firedup.synth.model import CrashTruth, PendingTruth, RunSpec, RunTruth

ENGINE = "vllm"
VERSIONS = ("0.13.0",)
CRASHES = ("kv_cache_too_small",)
_GIB = 1024**3
_BLOCK = 16  # tokens per KV block
_MAX_BATCHED_TOKENS = 8192  # the OpenAI server's default on an 80 GB-class GPU: also the compile range
_MAX_NUM_SEQS = 256
_NCCL = "2.27.5"
_CYAN, _RESET = "\x1b[1;36m", "\x1b[0;0m"
_SITE = "/usr/local/lib/python3.12/dist-packages"

# vLLM 0.13's default splitting ops (every attention-like custom op it knows).
_SPLITTING_OPS = ["vllm::unified_attention", "vllm::unified_attention_with_output", "vllm::unified_mla_attention",
                  "vllm::unified_mla_attention_with_output", "vllm::mamba_mixer2", "vllm::mamba_mixer",
                  "vllm::short_conv", "vllm::linear_attention", "vllm::plamo2_mamba_mixer", "vllm::gdn_attention_core",
                  "vllm::kda_attention", "vllm::sparse_attn_indexer"]

# The routes `vllm serve` 0.13 lists for a generative model (launcher.py), in its order.
_ROUTES = (
    ("/openapi.json", "GET, HEAD"), ("/docs", "GET, HEAD"), ("/docs/oauth2-redirect", "GET, HEAD"),
    ("/redoc", "GET, HEAD"), ("/scale_elastic_ep", "POST"), ("/is_scaling_elastic_ep", "POST"), ("/tokenize", "POST"),
    ("/detokenize", "POST"), ("/inference/v1/generate", "POST"), ("/pause", "POST"), ("/resume", "POST"),
    ("/is_paused", "GET"), ("/metrics", "GET"), ("/health", "GET"), ("/load", "GET"), ("/v1/models", "GET"),
    ("/version", "GET"), ("/v1/responses", "POST"), ("/v1/responses/{response_id}", "GET"),
    ("/v1/responses/{response_id}/cancel", "POST"), ("/v1/messages", "POST"), ("/v1/chat/completions", "POST"),
    ("/v1/completions", "POST"), ("/v1/audio/transcriptions", "POST"), ("/v1/audio/translations", "POST"),
    ("/ping", "GET"), ("/ping", "POST"), ("/invocations", "POST"), ("/classify", "POST"), ("/v1/embeddings", "POST"),
    ("/score", "POST"), ("/v1/score", "POST"), ("/rerank", "POST"), ("/v1/rerank", "POST"), ("/v2/rerank", "POST"),
    ("/pooling", "POST"),
)

# generation_config.json sampling defaults vLLM adopts (and announces) for known model families.
_GENERATION_DEFAULTS = (
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", {"temperature": 0.7, "top_k": 20, "top_p": 0.8}),
    ("Qwen/Qwen3-4B-Instruct-2507", {"temperature": 0.7, "top_k": 20, "top_p": 0.8}),
    ("Qwen/Qwen3-", {"temperature": 0.6, "top_k": 20, "top_p": 0.95}),
    ("meta-llama/", {"temperature": 0.6, "top_p": 0.9}),
)


def capture_sizes(max_size: int = 2 * _MAX_NUM_SEQS) -> list[int]:
    """vLLM's default CUDA graph batch sizes: 1, 2, 4, then steps of 8 to 256 and of 16 beyond."""
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, max_size + 1, 16)]
    return [s for s in sizes if s <= max_size]


def printed(x: float, digits: int = 2) -> float:
    """A duration as vLLM prints it (`%.2f`, `%.6f`, `%.0f`), read back: what a parser can know."""
    return float(f"{x:.{digits}f}")


class _Proc:
    """One process's stdout (or stderr) through vLLM's prefix wrapper (`_add_prefix`, <= 0.30).

    The wrapper writes the prefix before the first character of every line, lazily: after a
    `\\n` it only remembers that the next write starts a new line. A tqdm frame (`\\r...`)
    therefore gets the prefix when it opens a line, and so does the blank line tqdm writes
    when a bar closes. `prefix` is empty until the process decorates its output.
    """

    def __init__(self, stream: Stream, name: str, pid: int, color: bool, decorated: bool = True) -> None:
        self.stream = stream
        self.name = name
        self.pid = pid
        self.color = color
        self.prefix = self.tag() if decorated else ""
        self.new_line = True

    def tag(self) -> str:
        text = f"({self.name} pid={self.pid})"
        return (f"{_CYAN}{text}{_RESET} " if self.color else text + " ")

    def decorate(self) -> None:
        self.prefix = self.tag()

    def write(self, t: float, text: str, key: str | None = None) -> int:
        out: list[str] = []
        if self.new_line and self.prefix:
            out.append(self.prefix)
        start = 0
        while (nl := text.find("\n", start)) != -1:
            nl += 1
            out.append(text[start:nl])
            if nl == len(text):
                self.new_line = True
                return self.stream.write(t, "".join(out), key)
            if self.prefix:
                out.append(self.prefix)
            start = nl
        out.append(text[start:])
        self.new_line = False
        return self.stream.write(t, "".join(out), key)


class _Run:
    """One vLLM startup written into a shared stream from time `t0` on."""

    def __init__(self, stream: Stream, spec: RunSpec, rng: random.Random, t0: float, index: int) -> None:
        if spec.version not in VERSIONS:
            raise ValueError(f"vLLM version {spec.version!r} is not written; choose one of {', '.join(VERSIONS)}")
        if spec.crash not in (None, *CRASHES):
            raise ValueError(f"unknown vLLM crash {spec.crash!r}; choose one of {', '.join(CRASHES)}")
        if spec.model.draft is not None:
            raise ValueError("speculative decoding is not written for vLLM")
        self.s = stream
        self.spec = spec
        self.r = rng
        self.t0 = t0
        self.index = index
        self.model = spec.model
        self.tp = spec.tp_size
        self.compiled = not spec.enforce_eager
        self.graphs = spec.cuda_graph and not spec.enforce_eager
        self.first_t = float("inf")
        self.first_seq: int | None = None
        self.since = len(stream)
        self.reported: dict[str, dict[str, float]] = {}
        self.phases: dict[str, float] = {}
        self.stragglers: list[str] = []
        self.crash: CrashTruth | None = None
        self.crash_seq: int | None = None
        self.ready_seq: int | None = None
        self.refused = 0
        self.answers = {200: 0}
        self.first_answer: dict[int, float] = {}
        color = True  # 0.12-0.15 colour the prefix unless NO_COLOR is set
        api_pid = 1  # `vllm serve` is the container's entrypoint
        core_pid = api_pid + rng.randint(150, 260)
        self.api = _Proc(stream, "APIServer", api_pid, color)
        self.core = _Proc(stream, "EngineCore_DP0", core_pid, color)
        if self.tp > 1:
            self.workers = [_Proc(stream, f"Worker_TP{i}", core_pid + 60 + i, color, decorated=False)
                            for i in range(self.tp)]
            self.worker_errs = [_Proc(stream, f"Worker_TP{i}", core_pid + 60 + i, color, decorated=False)
                                for i in range(self.tp)]
            self.ranks = [f"TP{i}" for i in range(self.tp)]
        else:  # the single worker runs inside the EngineCore process
            self.workers = [self.core]
            self.worker_errs = [_Proc(stream, "EngineCore_DP0", core_pid, color)]
            self.ranks = ["DP0"]

    # -- small helpers -------------------------------------------------------------------
    def u(self, a: float, b: float) -> float:
        """A duration drawn uniformly from [a, b], scaled by the run's speed."""
        return self.r.uniform(a, b) * self.spec.speed

    def log(self, proc: _Proc, t: float, where: str, msg: str, level: str = "INFO") -> int:
        """One record of vLLM's formatter: `LEVEL MM-DD HH:MM:SS [file.py:N] msg`."""
        seq = proc.write(t, f"{level} {self.s.clock.stamp(t)[5:]} [{where}] {msg}\n")
        return self._seen(t, seq)

    def uvicorn(self, t: float, msg: str) -> int:
        """uvicorn's own logger (no time), through the API server's wrapper."""
        return self._seen(t, self.api.write(t, f"INFO:     {msg}\n"))

    def access(self, t: float, client: str, method: str, path: str, status: int) -> int:
        phrase = {200: "OK", 404: "Not Found"}[status]
        return self.uvicorn(t, f'{client} - "{method} {path} HTTP/1.1" {status} {phrase}')

    def _seen(self, t: float, seq: int) -> int:
        if t < self.first_t:
            self.first_t, self.first_seq = t, seq
        return seq

    def report(self, phase: str, rank: str, value: float) -> float:
        """Record what a "took ... s" line prints (already rounded as printed)."""
        self.reported.setdefault(phase, {})[rank] = value
        return value

    # -- the run -------------------------------------------------------------------------
    def write(self) -> PendingTruth:
        t = self.frontend(self.t0)
        t = self.engine_core(t)
        rank_t = self.dist_init(t)
        rank_t = self.load_model(rank_t)
        t_init = max(rank_t) + self.u(0.05, 0.3)  # every worker answered READY: the engine's timer starts
        self.t_init = t_init
        rank_t = self.compile(t_init) if self.compiled else [t_init + self.u(0.2, 0.5) for _ in self.ranks]
        t = self.profile_and_kv(rank_t)
        self.heartbeats(t_init, t)
        if self.spec.crash == "kv_cache_too_small":
            return self.finish(None)
        t = self.capture(t) if self.graphs else t + self.u(0.3, 1.0)
        if self.spec.cold_caches:
            # the warm-up run JIT-compiles kernels with nothing printed until the timer's line
            t += self.u(60.0, 110.0)
        t_engine = t + self.u(0.05, 0.3)
        took = self.report("engine_init", "DP0", printed(t_engine - t_init))
        self.log(self.core, t_engine, "core.py:259",
                 f"init engine (profile, create kv cache, warmup model) took {took:.2f} seconds")
        self.phases["engine_init"] = t_engine - t_init
        t_ready = self.serve(t_engine)
        return self.finish(t_ready)

    # -- the API server before the engine ------------------------------------------------
    def frontend(self, t: float) -> float:
        spec, model = self.spec, self.model
        t += self.u(0.0, 0.2)
        self.log(self.api, t, "api_server.py:1354", f"vLLM API server version {spec.version}")
        self.log(self.api, t, "utils.py:253", f"non-default args: {self.non_default_args()}")
        t += self.u(1.5, 3.0)  # the Hugging Face config is fetched and resolved
        self.log(self.api, t, "model.py:514", f"Resolved architecture: {model.arch}")
        self.log(self.api, t, "model.py:1661", f"Using max model len {model.context_len}")
        self.log(self.api, t + 0.01, "scheduler.py:230",
                 f"Chunked prefill is enabled with max_num_batched_tokens={_MAX_BATCHED_TOKENS}.")
        if spec.enforce_eager:
            self.log(self.api, t + 0.02, "vllm.py:612", "Enforce eager set, overriding optimization level to -O0",
                     level="WARNING")
            self.log(self.api, t + 0.02, "vllm.py:758", "Cudagraph is disabled under eager mode")
        return t + 0.02

    def non_default_args(self) -> str:
        """`non-default args: {...}`: only the flags given, in the parser's order (0.9+)."""
        spec, model = self.spec, self.model
        args: dict[str, Any] = {"model_tag": model.path, "host": spec.host}
        if spec.port != 8000:
            args["port"] = spec.port
        args["model"] = model.path
        if spec.enforce_eager:
            args["enforce_eager"] = True
        if spec.tp_size != 1:
            args["tensor_parallel_size"] = spec.tp_size
        if spec.gpu_memory_utilization != 0.9:
            args["gpu_memory_utilization"] = spec.gpu_memory_utilization
        text = repr(args)[:-1]
        if not spec.cuda_graph and not spec.enforce_eager:
            text += ", 'compilation_config': {'cudagraph_mode': <CUDAGraphMode.NONE: 0>}"
        return text + "}"

    def compilation_config(self) -> str:
        """The engine line's `compilation_config={...}` as 0.13 resolves it."""
        graphs, compiled = self.graphs, self.compiled
        sizes = capture_sizes() if graphs else []
        mode = "<CompilationMode.VLLM_COMPILE: 3>" if compiled else "<CompilationMode.NONE: 0>"
        cg = "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>" if graphs else "<CUDAGraphMode.NONE: 0>"
        ops = "['none']" if compiled else "['all']"
        return (
            f"{{'level': None, 'mode': {mode}, 'debug_dump_path': None, 'cache_dir': '', "
            f"'compile_cache_save_format': 'binary', 'backend': 'inductor', 'custom_ops': {ops}, "
            f"'splitting_ops': {_SPLITTING_OPS!r}, 'compile_mm_encoder': False, 'compile_sizes': [], "
            f"'compile_ranges_split_points': [{_MAX_BATCHED_TOKENS}], 'inductor_compile_config': "
            "{'enable_auto_functionalized_v2': False, 'combo_kernels': True, 'benchmark_combo_kernel': True}, "
            f"'inductor_passes': {{}}, 'cudagraph_mode': {cg}, 'cudagraph_num_of_warmups': 1, "
            f"'cudagraph_capture_sizes': {sizes!r}, 'cudagraph_copy_inputs': False, 'cudagraph_specialize_lora': True, "
            "'use_inductor_graph_partition': False, 'pass_config': {'fuse_norm_quant': False, 'fuse_act_quant': False, "
            "'fuse_attn_quant': False, 'eliminate_noops': True, 'enable_sp': False, 'fuse_gemm_comms': False, "
            f"'fuse_allreduce_rms': False}}, 'max_cudagraph_capture_size': {max(sizes) if sizes else 0}, "
            "'dynamic_shapes_config': {'type': <DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False}, "
            "'local_cache_dir': None}"
        )

    def engine_core(self, t: float) -> float:
        """The EngineCore process starts (spawn + imports) and prints the resolved config."""
        spec, model = self.spec, self.model
        t += self.u(3.5, 5.5)
        quant = model.quant or "None"
        dtype = model.dtype
        config = (
            f"model='{model.path}', speculative_config=None, tokenizer='{model.path}', skip_tokenizer_init=False, "
            "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, "
            f"dtype={dtype}, max_seq_len={model.context_len}, download_dir=None, load_format=auto, "
            f"tensor_parallel_size={spec.tp_size}, pipeline_parallel_size=1, data_parallel_size=1, "
            f"disable_custom_all_reduce=False, quantization={quant}, enforce_eager={spec.enforce_eager}, "
            "kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', "
            "disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, "
            "reasoning_parser='', reasoning_parser_plugin='', enable_in_reasoning=False), "
            "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, "
            "collect_detailed_traces=None, kv_cache_metrics=False, kv_cache_metrics_sample=0.01, "
            "cudagraph_metrics=False, enable_layerwise_nvtx_tracing=False), seed=0, "
            f"served_model_name={model.path}, enable_prefix_caching=True, enable_chunked_prefill=True, "
            f"pooler_config=None, compilation_config={self.compilation_config()}"
        )
        self.log(self.core, t, "core.py:93", f"Initializing a V1 LLM engine (v{spec.version}) with config: {config}")
        self.phases["launch"] = t - self.first_t  # the API server's start, to the engine's first line
        if self.tp > 1:
            threads = self.r.choice((24, 26, 30, 48, 52))
            self.log(self.core, t + 0.01, "multiproc_executor.py:882",
                     f"Reducing Torch parallelism from {threads} threads to 1 to avoid unnecessary CPU contention. Set "
                     "OMP_NUM_THREADS in the external environment to tune this value as needed.", level="WARNING")
        return t

    # -- distributed init ----------------------------------------------------------------
    def dist_init(self, t: float) -> list[float]:
        """Workers start (spawned, so they import vLLM again) and form their NCCL groups.

        Returns, per rank, when it is ready to build the model. Their lines carry no prefix
        yet: 0.10.2-0.16 decorate a worker's output after its device is initialised.
        """
        n = self.tp
        port = self.r.randint(33000, 60999)
        host = "127.0.0.1"
        starts = [t + (self.u(5.5, 7.5) if n > 1 else self.u(0.6, 1.2)) + i * self.u(0.0, 0.3) for i in range(n)]
        for i, proc in enumerate(self.workers):
            self.log(proc, starts[i], "parallel_state.py:1203",
                     f"world_size={n} rank={i} local_rank={i} distributed_init_method=tcp://{host}:{port} backend=nccl")
        meet = max(starts) + (self.u(0.2, 0.8) if n > 1 else self.u(0.05, 0.2))
        if n > 1:
            self.log(self.workers[0], meet, "pynccl.py:111", f"vLLM is using nccl=={_NCCL}")
        ends = []
        for i in self.r.sample(range(n), n):  # each rank announces itself when its groups exist
            te = meet + self.u(0.05, 0.3)
            self.log(self.workers[i], te, "parallel_state.py:1411",
                     f"rank {i} in world size {n} is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank {i}, "
                     f"EP rank {i}")
            ends.append((i, te))
        out = [0.0] * n
        for i, te in ends:
            if n > 1:
                self.workers[i].decorate()
                self.worker_errs[i].decorate()
            out[i] = te + self.u(0.3, 0.8)
        # as a reader measures it: the first `world_size=` line to the last `is assigned as` line
        self.phases["dist_init"] = max(te for _, te in ends) - min(starts)
        return out

    # -- weights -------------------------------------------------------------------------
    def load_model(self, rank_t: list[float]) -> list[float]:
        """Each worker builds the model and reads its shard of the weights; TP0 tells."""
        model, n = self.model, self.tp
        durations = [model.load_s * self.spec.speed * self.r.uniform(0.97, 1.03) for _ in range(n)]
        if n > 1 and self.r.random() < 0.5:  # one rank reads slower (shared NVMe, page cache)
            slow = self.r.randrange(n)
            durations[slow] *= self.r.uniform(1.05, 1.10)
            self.stragglers.append(self.ranks[slow])
        lead = self.workers[0]
        self.log(lead, rank_t[0], "gpu_model_runner.py:3562", f"Starting to load model {model.path}...")
        ends = []
        loading: list[float] = []
        for i in range(n):
            build = self.u(0.8, 2.0)  # model construction before the first shard is read
            w0 = rank_t[i] + build
            w1 = w0 + durations[i]
            if i == 0:
                self.log(lead, rank_t[0] + build - 0.05, "cuda.py:351",
                         "Using FLASH_ATTN attention backend out of potential backends: ('FLASH_ATTN', 'FLASHINFER', "
                         "'TRITON_ATTN', 'FLEX_ATTENTION')")
                self.shard_bar(w0 + 0.05, w1 - self.u(0.05, 0.3))
                took = self.report("load_weights", self.ranks[0], printed(durations[0]))
                self.log(lead, w1, "default_loader.py:308", f"Loading weights took {took:.2f} seconds")
            end = w1 + self.u(0.3, 1.5)  # process_weights_after_loading, then the runner's own bookkeeping
            loading.append(end - rank_t[i])
            if i == 0:
                gib = model.weight_gb + self.r.uniform(0.0, 0.06)
                secs = self.report("model_loading", self.ranks[0], printed(end - rank_t[0], 6))
                self.log(lead, end, "gpu_model_runner.py:3659", f"Model loading took {gib:.4f} GiB memory and "
                                                               f"{secs:.6f} seconds")
                self.weights_gib = gib
                self.loaded_at = end
            ends.append(end)
        self.phases["load_weights"] = max(durations)
        self.phases["model_loading"] = max(loading)
        return ends

    def shard_bar(self, t0: float, t1: float) -> None:
        """Global rank 0's shard bar: vLLM's bar_format ends in a newline, so one line per frame."""
        shards = self.model.shards
        bar = Tqdm(self.worker_errs[0], t0, shards, "Loading safetensors checkpoint shards", style="shards", end="\n")
        marks = sorted(self.r.uniform(0.1, 0.95) for _ in range(shards - 1))
        for frac in [*marks, 1.0]:
            bar.update(t0 + frac * (t1 - t0))
        bar.close(t1)

    # -- torch.compile -------------------------------------------------------------------
    def compile(self, t_init: float) -> list[float]:
        """The profile run's first forward compiles the model on every worker (each its own copy)."""
        model = self.model
        lead = self.workers[0]
        cache_hit = self.spec.compile_cache
        dynamo = model.compile_s * self.spec.speed * self.r.uniform(0.13, 0.17)
        if cache_hit:
            second = self.u(2.5, 6.0)
        else:
            second = model.compile_s * self.spec.speed * self.r.uniform(0.85, 1.0)
        t_dyn = t_init + self.u(0.3, 1.0) + dynamo
        digest = f"{self.r.getrandbits(40):010x}"
        self.log(lead, t_dyn, "backends.py:643", f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{digest}/"
                                                 f"rank_0_0/backbone for vLLM's torch.compile")
        self.log(lead, t_dyn + 0.01, "backends.py:703", f"Dynamo bytecode transform time: {dynamo:.2f} s")
        ends = []
        for i, proc in enumerate(self.workers):
            mine = second * (1.0 if i == 0 else self.r.uniform(0.97, 1.03))
            if not cache_hit:
                self.log(proc, t_dyn + mine * self.r.uniform(0.06, 0.12), "backends.py:261",
                         f"Cache the graph of compile range (1, {_MAX_BATCHED_TOKENS}) for later use")
            ends.append(t_dyn + 0.02 + mine)
        t_end = ends[0]
        if cache_hit:
            self.log(lead, t_end, "backends.py:223", f"Directly load the compiled graph(s) for compile range "
                                                     f"(1, {_MAX_BATCHED_TOKENS}) from the cache, took {second:.3f} s")
        else:
            self.log(lead, t_end, "backends.py:278", f"Compiling a graph for compile range (1, {_MAX_BATCHED_TOKENS}) "
                                                     f"takes {second:.2f} s")
        total = self.report("torch_compile", self.ranks[0], printed(dynamo + second))
        self.log(lead, t_end, "monitor.py:34", f"torch.compile takes {total:.2f} s in total")
        self.phases["torch_compile"] = dynamo + second
        self.compile_end = t_end
        return ends

    # -- memory profile and KV cache -------------------------------------------------------
    def profile_and_kv(self, rank_t: list[float]) -> float:
        """The profile forward measures peak memory; the KV cache gets the rest of the budget."""
        spec, model = self.spec, self.model
        lead = self.workers[0]
        profile = [t + (self.u(1.0, 2.5) if self.compiled else self.u(2.0, 4.0)) for t in rank_t]
        budget = spec.gpu.capacity_gb * spec.gpu_memory_utilization
        activation = self.r.uniform(2.4, 4.2) if model.context_len >= 8192 else self.r.uniform(1.0, 2.0)
        non_torch = self.r.uniform(0.6, 1.4) if self.tp > 1 else self.r.uniform(0.1, 0.3)
        kv_gib = budget - self.weights_gib - activation - non_torch
        if spec.crash == "kv_cache_too_small":
            need = model.context_len * model.kv_bytes_per_token / _GIB
            kv_gib = max(min(kv_gib, need * self.r.uniform(0.3, 0.7)), 0.25 * need)
        self.log(lead, profile[0], "gpu_worker.py:375", f"Available KV cache memory: {kv_gib:.2f} GiB")
        # what a reader measures: from TP0's last "took" line (compile, or the load when eager)
        self.phases["kv_cache"] = profile[0] - (self.compile_end if self.compiled else self.loaded_at)
        t = max(profile) + self.u(0.05, 0.3)
        if spec.crash == "kv_cache_too_small":
            self.crash_kv_too_small(t, kv_gib)
            return t
        blocks = int(kv_gib * _GIB // (_BLOCK * model.kv_bytes_per_token))
        tokens = blocks * _BLOCK
        self.log(self.core, t, "kv_cache_utils.py:1291", f"GPU KV cache size: {tokens:,} tokens")
        self.log(self.core, t, "kv_cache_utils.py:1296", f"Maximum concurrency for {model.context_len:,} tokens per "
                                                         f"request: {tokens / model.context_len:.2f}x")
        self.kv_tokens = tokens
        return t + self.u(0.3, 1.2)  # allocate and bind the KV tensors on every worker

    # -- CUDA graphs ----------------------------------------------------------------------
    def capture(self, t: float) -> float:
        """TP0's two capture bars (every rank captures in lockstep), then the summary line."""
        start = t + self.u(0.2, 0.8)
        t = start
        sizes = capture_sizes()
        decode = [s for s in sizes if s <= _MAX_NUM_SEQS]
        per = self.model.weight_gb / 30.0  # bigger shards take longer per captured size
        for desc, items, step in (("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", sizes, (0.12, 0.3)),
                                  ("Capturing CUDA graphs (decode, FULL)", decode, (0.08, 0.22))):
            bar = Tqdm(self.worker_errs[0], t, len(items), desc)
            for _ in items:
                t += self.r.uniform(*step) * self.spec.speed * max(per, 0.3)
                bar.update(t)
            bar.close(t)
            t += self.u(0.05, 0.2)
        elapsed = t - start
        secs = self.report("cuda_graph", self.ranks[0], printed(elapsed, 0))
        gib = self.r.uniform(0.5, 1.5)
        self.log(self.workers[0], t, "gpu_model_runner.py:4587",
                 f"Graph capturing finished in {secs:.0f} secs, took {gib:.2f} GiB")
        self.phases["cuda_graph"] = elapsed
        return t

    def heartbeats(self, t_init: float, t_end: float) -> None:
        """With worker processes, the EngineCore waits on a shared-memory queue and says so each minute."""
        if self.tp == 1:
            return
        wait = t_init + 60.0
        busy = getattr(self, "compile_end", t_init) + 2.0  # the long RPC: compile and profile
        while wait < busy and wait < t_end:
            self.log(self.core, wait, "shm_broadcast.py:542",
                     "No available shared memory broadcast block found in 60 seconds. This typically happens when "
                     "some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache "
                     "quantization).")
            wait += 60.0

    # -- serving --------------------------------------------------------------------------
    def serve(self, t_engine: float) -> float:
        """The API server builds its app, lists routes, and uvicorn starts; then probes and traffic."""
        spec = self.spec
        t = t_engine + self.u(0.4, 1.0)
        self.log(self.api, t, "api_server.py:1099", "Supported tasks: ['generate']")
        defaults = next((d for prefix, d in _GENERATION_DEFAULTS if self.model.path.startswith(prefix)), None)
        if defaults is not None:
            t += self.u(0.02, 0.1)
            self.log(self.api, t, "model.py:1487", "Default sampling parameters have been overridden by the model's "
                                                   "Hugging Face generation config recommended from the model creator. "
                                                   "If this is not intended, please relaunch vLLM instance with "
                                                   "`--generation-config vllm`.", level="WARNING")
            for where, kind in (("serving_responses.py:201", "chat"), ("serving_chat.py:137", "chat"),
                                ("serving_completion.py:77", "completion"), ("serving_chat.py:137", "chat")):
                t += self.u(0.01, 0.3)
                self.log(self.api, t, where, f"Using default {kind} sampling params from model: {defaults}")
        t += self.u(0.02, 0.2)
        self.log(self.api, t, "api_server.py:1425", f"Starting vLLM API server 0 on http://{spec.host}:{spec.port}")
        self.log(self.api, t, "launcher.py:38", "Available routes are:")
        for path, methods in _ROUTES:
            self.log(self.api, t, "launcher.py:46", f"Route: {path}, Methods: {methods}")
        t += self.u(0.05, 0.3)
        self.uvicorn(t, f"Started server process [{self.api.pid}]")
        self.uvicorn(t, "Waiting for application startup.")
        t_ready = t + self.u(0.005, 0.03)
        self.ready_seq = self.uvicorn(t_ready, "Application startup complete.")
        self.phases["http_start"] = t_ready - t_engine
        self.probes(t_ready, t_ready + spec.after_ready_s)
        self.traffic(t_ready, t_ready + spec.after_ready_s)
        return t_ready

    def probes(self, t_ready: float, t_end: float) -> None:
        """The kubelet's readiness probe: refused (nothing in the log) until ready, then 200."""
        period = self.spec.health_period_s
        if not period:
            return
        t = self.t0 + self.r.uniform(0.0, period)
        while t < t_end:
            if t < t_ready:
                self.refused += 1
            else:
                done = t + self.u(0.002, 0.01)
                self.access(done, f"{self.spec.prober}:{self.r.randint(32768, 60999)}", "GET", "/health", 200)
                self.answers[200] += 1
                self.first_answer.setdefault(200, done)
            t += period

    def traffic(self, t_ready: float, t_end: float) -> None:
        """Chat requests after ready, and the engine's 10 s stats lines while it is busy."""
        n = self.spec.user_requests
        if n <= 0:
            return
        t = t_ready + self.u(8.0, 20.0)
        busy: list[tuple[float, float, int, int]] = []
        for _ in range(n):
            if t > t_end - 5:
                break
            prompt = self.r.randint(200, 3000)
            output = self.r.randint(100, 600)
            done = t + output / self.r.uniform(35.0, 70.0)
            client = "127.0.0.1" if self.spec.host == "127.0.0.1" else f"10.42.1.{self.r.randint(2, 250)}"
            self.access(t + self.u(0.01, 0.05), f"{client}:{self.r.randint(32768, 60999)}", "POST",
                        "/v1/chat/completions", 200)
            busy.append((t, done, prompt, output))
            t = done + self.u(3.0, 15.0)
        tick = t_ready + 10.0
        quiet = 0
        while tick < t_end and quiet < 1 and busy:
            window = [(a, b, p, o) for a, b, p, o in busy if a < tick and b > tick - 10.0]
            if window:
                prompt_tps = sum(p for a, _, p, _ in window if a >= tick - 10.0) / 10.0
                gen_tps = sum(o * (min(b, tick) - max(a, tick - 10.0)) / (b - a) for a, b, _, o in window) / 10.0
                running = sum(1 for a, b, _, _ in window if a < tick < b)
                usage = 100.0 * running * 2000 / max(getattr(self, "kv_tokens", 1), 1)
                self.log(self.api, tick, "loggers.py:236",
                         f"Engine 000: Avg prompt throughput: {prompt_tps:.1f} tokens/s, Avg generation throughput: "
                         f"{gen_tps:.1f} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
                         f"{usage:.1f}%, Prefix cache hit rate: 0.0%")
            elif tick > busy[-1][1]:
                quiet += 1
                self.log(self.api, tick, "loggers.py:236",
                         "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, "
                         "Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%")
            tick += 10.0

    # -- crashes -------------------------------------------------------------------------
    def crash_kv_too_small(self, t: float, kv_gib: float) -> None:
        """The KV cache cannot hold one request of the max length: the EngineCore fails, then the API server."""
        model = self.model
        need = model.context_len * model.kv_bytes_per_token / _GIB
        estimate = int(kv_gib * _GIB // (_BLOCK * model.kv_bytes_per_token)) * _BLOCK
        error = (f"ValueError: To serve at least one request with the models's max seq len ({model.context_len}), "
                 f"({need:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
                 f"({kv_gib:.2f} GiB). Based on the available memory, the estimated maximum model length is "
                 f"{estimate}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                 "initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for "
                 "more details.")
        frames = _KV_TRACEBACK.format(site=_SITE).rstrip("\n").split("\n")
        header = f"ERROR {self.s.clock.stamp(t)[5:]} [core.py:866] "
        # One record: NewLineFormatter repeats the header after every `\r\n`.
        record = ("\r\n" + header).join(["EngineCore failed to start.", *frames, error])
        self.crash_seq = self._seen(t, self.core.write(t, header + record + "\n"))
        self.crash = CrashTruth("kv_cache_too_small", "kv_cache", 0, "DP0", error)
        t += self.u(0.05, 0.2)
        self.core.write(t, "Process EngineCore_DP0:\n")
        for line in [*_MP_TRACEBACK.format(site=_SITE).rstrip("\n").split("\n"), error]:
            self.core.write(t, line + "\n")
        t += self.u(0.3, 1.0)
        for line in _API_TRACEBACK.format(site=_SITE).rstrip("\n").split("\n"):
            self.api.write(t, line + "\n")
        self.api.write(t, "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
                          "{'EngineCore_DP0': 1}\n")

    # -- truth ---------------------------------------------------------------------------
    def finish(self, t_ready: float | None) -> PendingTruth:
        spec, model = self.spec, self.model
        config: dict[str, Any] = {
            "model_path": model.path, "tp_size": spec.tp_size, "disable_cuda_graph": not self.graphs,
            "enforce_eager": spec.enforce_eager, "enable_torch_compile": self.compiled,
            "cudagraph_mode": "FULL_AND_PIECEWISE" if self.graphs else "NONE",
            "compilation_mode": "VLLM_COMPILE" if self.compiled else "NONE",
            "speculative_algorithm": None, "speculative_draft_model_path": None, "quantization": model.quant,
            "mem_fraction_static": None, "gpu_memory_utilization": spec.gpu_memory_utilization,
            "cuda_graph_max_bs": max(capture_sizes()) if self.graphs else None, "version": spec.version,
            "gpu": spec.gpu.name,
        }
        clock = self.s.clock
        first_ts = clock.stamp(self.first_t).replace(" ", "T")
        ready_ts = clock.stamp(t_ready).replace(" ", "T") if t_ready is not None else None
        if t_ready is not None:
            self.phases["total"] = t_ready - self.first_t
        first_200 = self.first_answer.get(200)
        health: dict[str, Any] = {
            "n_refused": self.refused, "n_503": 0, "first_503_ts": None, "n_200": self.answers[200],
            "first_200_ts": clock.stamp(first_200).replace(" ", "T") if first_200 is not None else None,
        }
        truth = RunTruth(
            run_index=self.index, engine=ENGINE, version=spec.version,
            outcome="ready" if t_ready is not None else "crashed", first_ts=first_ts, ready_ts=ready_ts,
            ready_offset_s=None if t_ready is None else round(t_ready - self.first_t, 3),
            first_line=0, ready_line=None, last_line=0, config=config,
            phases={k: round(v, 3) for k, v in self.phases.items()},
            reported=self.reported, engine_timings=None, crash=self.crash, stragglers=self.stragglers, health=health,
        )
        return PendingTruth.of(truth, self.first_seq, self.ready_seq if t_ready is not None else None,
                               self.crash_seq, self.s.latest_since(self.since))


def write_run(stream: Stream, spec: RunSpec, rng: random.Random, t0: float, index: int) -> PendingTruth:
    """Write one vLLM startup into `stream` from time `t0` (seconds after the stream's start)."""
    return _Run(stream, spec, rng, t0, index).write()


_KV_TRACEBACK = """Traceback (most recent call last):
  File "{site}/vllm/v1/engine/core.py", line 857, in run_engine_core
    engine_core = EngineCoreProc(*args, **kwargs)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{site}/vllm/v1/engine/core.py", line 637, in __init__
    super().__init__(
  File "{site}/vllm/v1/engine/core.py", line 109, in __init__
    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(
                                                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{site}/vllm/v1/engine/core.py", line 240, in _initialize_kv_caches
    kv_cache_configs = get_kv_cache_configs(
                       ^^^^^^^^^^^^^^^^^^^^^
  File "{site}/vllm/v1/core/kv_cache_utils.py", line 1426, in get_kv_cache_configs
    check_enough_kv_cache_memory(
  File "{site}/vllm/v1/core/kv_cache_utils.py", line 682, in check_enough_kv_cache_memory
    raise ValueError("""

_MP_TRACEBACK = """Traceback (most recent call last):
  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap
    self.run()
  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run
    self._target(*self._args, **self._kwargs)
  File "{site}/vllm/v1/engine/core.py", line 870, in run_engine_core
    raise e
  File "{site}/vllm/v1/engine/core.py", line 857, in run_engine_core
    engine_core = EngineCoreProc(*args, **kwargs)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{site}/vllm/v1/engine/core.py", line 240, in _initialize_kv_caches
    kv_cache_configs = get_kv_cache_configs(
                       ^^^^^^^^^^^^^^^^^^^^^
  File "{site}/vllm/v1/core/kv_cache_utils.py", line 682, in check_enough_kv_cache_memory
    raise ValueError("""

_API_TRACEBACK = """Traceback (most recent call last):
  File "/usr/local/bin/vllm", line 10, in <module>
    sys.exit(main())
             ^^^^^^
  File "{site}/vllm/entrypoints/cli/main.py", line 73, in main
    args.dispatch_function(args)
  File "{site}/vllm/entrypoints/cli/serve.py", line 60, in cmd
    uvloop.run(run_server(args))
  File "{site}/vllm/entrypoints/openai/api_server.py", line 1469, in run_server
    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)
  File "{site}/vllm/entrypoints/openai/api_server.py", line 1488, in run_server_worker
    async with build_async_engine_client(
  File "{site}/vllm/entrypoints/openai/api_server.py", line 178, in build_async_engine_client_from_engine_args
    async_llm = AsyncLLM.from_vllm_config(
                ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{site}/vllm/v1/engine/core_client.py", line 477, in __init__
    with launch_core_engines(vllm_config, executor_class, log_stats) as (
  File "{site}/vllm/v1/engine/utils.py", line 933, in wait_for_engine_startup
    raise RuntimeError("""

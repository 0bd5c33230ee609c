"""vLLM server and offline-engine logs, 0.4 to 0.34; what they print, by version, is
docs/engines/vllm.md.

Like the SGLang module: `HEADERS` says how a line is laid out before its message, `RULES`
which messages matter (each with the lines it reads), `KINDS` the kinds of event only vLLM
prints, and `FORMAT` bundles them with what the timeline must know about vLLM (its stage
order, its health endpoint, how its args lines read). The first header and the first rule
that match win. Regexes run in Python's `re` and must also compile in Hyperscan.

What vLLM prints, in short: `LEVEL MM-DD HH:MM:SS [file.py:N] msg` (no year, 1 s
resolution; no `[` before the file name up to 0.7.3), behind a process tag such as
`(EngineCore_DP0 pid=N)` that `firedup.read.sources` strips and keeps; uvicorn's own lines
without any time; tqdm bars without any prefix; and from 0.32 optionally one JSON object
per record. Durations come from the "took ... s" lines, not from timestamp deltas.
"""

from __future__ import annotations

from typing import Any

from firedup.core.health import REFUSED, HealthSemantics, ReadyProbe, Route
from firedup.formats import _common
from firedup.formats._vllm_advice import REMEDIES
from firedup.formats._vllm_read import derive_config, engine_config, read_args
from firedup.formats.base import (
    Advice,
    CacheLine,
    Caches,
    Dating,
    EngineClock,
    Example,
    Format,
    Header,
    LaunchGap,
    Meaning,
    Parsing,
    Probing,
    Rule,
    Serving,
    Timeouts,
)
from firedup.formats.convert import to_float, to_int, to_url
from firedup.formats.vocab import ALWAYS, Kind

# --- line layouts ------------------------------------------------------------------------

_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_TIME = r"(?P<time>\d{2}:\d{2}:\d{2})"
_JSON_STR = r'(?:[^"\\]|\\.)*'

HEADERS = (
    # 0.32+ `--logging-config.formatter json`: logging's default asctime (with year and ms),
    # the multiprocessing process name, and the traceback of logger.exception() as exc_info.
    Header("vllm-json",
           r'^\{"asctime": "(?P<date>\d{4}-\d{2}-\d{2}) ' + _TIME + r'(?:,(?P<frac>\d+))?", '
           r'"levelname": "' + _LEVEL + r'", "name": "(?P<logger>[^"]*)", "processName": "(?P<proc>[^"]*)", '
           r'"process": (?P<pid>\d+), "message": "(?P<msg>' + _JSON_STR + r')"'
           r'(?:, "exc_info": "(?P<exc>' + _JSON_STR + r')")?.*\}$',
           decode="json"),
    # vLLM's own formatter: `[file.py:N]` from 0.8, `file.py:N]` before; DEBUG level prints a
    # repo-relative path (`v1/engine/core.py:1592`). Leading blanks of the message go (traceback
    # frames are indented), the rest is the message.
    Header("vllm", rf"^{_LEVEL} (?P<md>\d{{2}}-\d{{2}}) {_TIME}(?:\.(?P<frac>\d+))? \[?(?P<file>[\w./-]+):(?P<lineno>\d+)\]\s*(?P<msg>.*)$"),
    # uvicorn's own logger: `INFO:     Application startup complete.`, no time at all.
    Header("uvicorn", r"^(?P<level>TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+(?P<msg>.*)$"),
)

def _stated(key: str, conv: Any = None) -> Any:
    """A converter that turns one captured value into a `config_stated` flag."""
    def convert(text: str) -> dict[str, Any]:
        return {key: conv(text) if conv else text}
    return convert


def _compile_cache_key(path: str) -> str:
    """`.../torch_compile_cache/d3eb35d1f0/rank_0_0/backbone` -> `d3eb35d1f0` (the folder's key)."""
    _, marker, rest = path.partition("torch_compile_cache/")
    return rest.split("/", 1)[0] if marker else path


def _int_commas(text: str) -> int:
    return int(text.replace(",", ""))


# --- the kinds of event only vLLM prints (the shared ones: firedup.formats.vocab) --------------

KINDS = (
    Kind("run.boot", "journald's mark of a machine's boot"),
    Kind("engine.init", "the engine begins (its version and config)", milestone=True, runner=True, opens_runner=True,
         stage_after="dist_init"),
    Kind("load_weight.download", "how long downloading the weights took"),
    # `Model loading took` covers the weights (`Loading weights took`) plus building the model
    Kind("model_loading.end", "the model is built, its weights loaded (and how long it took)", milestone=True,
         runner=True, stage_after="torch_compile", reports="model_loading"),
    Kind("torch_compile.begin", "torch.compile begins"),
    Kind("torch_compile.dynamo", "Dynamo's bytecode transform is done"),
    Kind("torch_compile.cache_hit", "a compiled graph is loaded from the cache"),
    Kind("torch_compile.inductor", "Inductor compiles a graph (the cache missed)"),
    Kind("torch_compile.cache_dir", "the folder of torch.compile's cache, named by its key",
         cache_key="torch_compile"),
    Kind("torch_compile.cache_store", "a graph compiled now is stored for later use"),
    Kind("torch_compile.aot_saved", "an ahead-of-time compiled function is saved"),
    Kind("kernel.autotune_cache_miss", "FlashInfer's autotune cache had nothing for this model and GPU"),
    Kind("torch_compile.end", "torch.compile is done (and how long it took)", milestone=True, runner=True,
         stage_after="kv_cache", reports="torch_compile", implies={"enable_torch_compile": True},
         implies_why="the log shows torch.compile finishing"),
    Kind("torch_compile.warmup", "the first profiling and warm-up run is done"),
    Kind("engine.mm_warmup", "0.24+: a multi-modal model's encoder is warmed up"),
    Kind("kv_cache.profile", "the memory profile run is done"),
    # `init engine ... took` covers compile, KV sizing and graph capture
    Kind("engine.ready", "the engine is up: profile, KV cache and warm-up done (and how long they took)",
         milestone=True, runner=True, stage_after="http_start", reports="engine_init"),
    Kind("http.routes", "the API server lists its routes"),
    Kind("error.engine_core", "the engine core process failed to start, or died", fatal=ALWAYS),
    Kind("error.process", "multiprocessing names the process a traceback comes from"),
)

# --- rules -------------------------------------------------------------------------------

_TAG = r"(?:\[(?P<tag>[\w.]+)\] )?"  # 0.32+ names the compiled module: "[backbone] "

RULES = (
    # --- process start: a journald boot, a systemd (re)start, the API server's banner ---
    Rule("run.boot", r"^-- Boot [0-9a-f]+ --$", "-- Boot", starts_run="always", evidence=0,
         examples=("-- Boot 45b35623d291431fa703c9232d2ea952 --",)),
    _common.SERVICE,
    _common.CONTAINER_START,
    Rule("run.banner", r"^vLLM API server version (?P<config_stated>\S+)", "vLLM API server version",
         fields={"config_stated": _stated("version")}, starts_run="always", evidence=10,
         examples=(Example("(APIServer pid=1) INFO 03-18 06:54:54 [api_server.py:1354] vLLM API server "
                           "version 0.13.0",
                           {"config_stated": {"version": "0.13.0"}}),)),
    Rule("run.banner", r"^vLLM server version (?P<config_stated>\S+), serving model", "vLLM server version",
         fields={"config_stated": _stated("version")}, starts_run="always", evidence=10,
         examples=(Example("(APIServer pid=88) INFO 02-10 11:04:55 [utils.py:325] vLLM server version "
                           "0.15.0, serving model Qwen/Qwen3-8B",
                           {"config_stated": {"version": "0.15.0"}}),)),
    # 0.15+ logo: one record over six lines; the version is on the third
    Rule("run.banner", r"█ +version +(?P<config_stated>\S+)", "version ",
         fields={"config_stated": _stated("version")}, starts_run="always", evidence=4,
         examples=(Example("(APIServer pid=672) INFO 12-03 20:59:41 [api_utils.py:345]  ▄▄ ▄█ █     █     █ "
                           "▀▄▀ █  version 0.26.0",
                           {"config_stated": {"version": "0.26.0"}}),)),
    Rule("server_args", r"^args: (?P<args>Namespace\(.*)$", "args: Namespace(", starts_run="always",
         evidence=6,
         examples=("INFO 06-03 10:12:01 api_server.py:178] args: Namespace(host=None, port=8000, "
                   "model='Qwen/Qwen2-7B-Instruct', tensor_parallel_size=1, enforce_eager=False)",)),
    Rule("server_args", r"^non-default args: (?P<args>\{.*)$", "non-default args:", starts_run="always",
         evidence=8,
         examples=("(APIServer pid=1) INFO 03-18 06:54:54 [utils.py:253] non-default args: {'model_tag': "
                   "'Qwen/Qwen3-8B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-8B', 'max_model_len': 8192}",)),
    Rule("config.stated", r"^Cudagraph is disabled under eager mode", "Cudagraph is disabled",
         const={"enforce_eager": True},
         examples=(Example("(APIServer pid=2642) INFO 12-03 20:33:22 [vllm.py:1392] Cudagraph is disabled "
                           "under eager mode",
                           {"enforce_eager": True}),)),
    # --- engine ---
    Rule("engine.init", r"^Initializing an? (?:V[01] )?LLM engine (?P<config_stated>\(v.*)$", "LLM engine (v",
         fields={"config_stated": engine_config}, starts_run="after_end", evidence=10,
         examples=(Example("(EngineCore_DP0 pid=165) INFO 03-18 06:55:03 [core.py:93] Initializing a V1 LLM "
                           "engine (v0.13.0) with config: model='Qwen/Qwen3-8B', speculative_config=None, "
                           "tokenizer='Qwen/Qwen3-8B', tensor_parallel_size=1, enforce_eager=False",
                           {"config_stated": {"version": "0.13.0", "model": "Qwen/Qwen3-8B", "tensor_parallel_size": 1,
                                              "enforce_eager": False}}),
                   "INFO 10-08 07:16:13 llm_engine.py:237] Initializing an LLM engine (v0.6.2) with config: "
                   "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=2")),
    Rule("dist_init.begin",
         r"^world_size=(?P<world_size>\d+) rank=(?P<global_rank>\d+) local_rank=\d+ distributed_init_method=\S+"
         r" backend=(?P<backend>\w+)",
         "distributed_init_method=", fields={"world_size": to_int}, rank="TP{global_rank}",
         examples=(Example("(EngineCore_DP0 pid=165) INFO 03-18 06:55:04 [parallel_state.py:1203] "
                           "world_size=1 rank=0 local_rank=0 distributed_init_method=tcp://172.17.0.3:35599 "
                           "backend=nccl",
                           {"world_size": 1, "backend": "nccl"}),
                   "INFO 02-12 19:46:44 [parallel_state.py:1203] world_size=2 rank=1 local_rank=1 "
                   "distributed_init_method=tcp://127.0.0.1:50255 backend=nccl")),
    Rule("dist_init.end",
         r"^rank (?P<global_rank>\d+) in world size (?P<config_stated>\d+) is assigned as DP rank (?P<dp>\d+), "
         r"PP rank (?P<pp>\d+), (?:PCP rank \d+, )?TP rank (?P<tp>\d+)",
         "is assigned as DP rank", fields={"config_stated": _stated("world_size", int)}, rank="TP{tp}",
         evidence=3,
         examples=(Example("(Worker_TP1 pid=307) INFO 02-12 19:46:44 [parallel_state.py:1411] rank 1 in "
                           "world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 1, EP "
                           "rank 1",
                           {"config_stated": {"world_size": 2}, "tp": "1"}),)),
    # --- weights: "Starting to load model" (V1 runner, V0) ... "Loading weights took X seconds" ---
    Rule("load_weight.begin", r"^Starting to load model (?P<model>.+?)\.\.\.", "Starting to load model",
         evidence=4,
         examples=(Example("(Worker_TP0 pid=306) INFO 02-12 19:46:45 [gpu_model_runner.py:3562] Starting to "
                           "load model /models...",
                           {"model": "/models"}),)),
    # Model Runner V2 (0.12+, the default for supported configs from 0.29, the only runner in
    # 0.34) prints this instead; the V1 runner of 0.9.1-0.11.0 printed it right after the
    # line above, a restatement of the same begin that the timeline does not count twice.
    Rule("load_weight.begin", r"^Loading model from scratch\.\.\.", "Loading model from scratch", evidence=4,
         examples=("(EngineCore pid=805) INFO 12-03 21:00:28 [model_runner.py:284] Loading model from "
                   "scratch...",)),
    Rule("load_weight.download", r"^Time spent downloading weights for (?P<model>.+): (?P<download_s>[\d.]+) seconds",
         "Time spent downloading weights", fields={"download_s": to_float},
         examples=(Example("(EngineCore pid=240) INFO 02-26 14:47:12 [weight_utils.py:568] Time spent "
                           "downloading weights for meta-llama/Llama-3.1-8B-Instruct: 78.412305 seconds",
                           {"download_s": 78.412305}),)),
    Rule("load_weight.end", r"^Loading weights took (?P<elapsed_s>[\d.]+) seconds", "Loading weights took",
         fields={"elapsed_s": to_float},
         examples=(Example("(VllmWorker rank=0 pid=164) INFO 11-19 18:27:57 [default_loader.py:262] Loading "
                           "weights took 11.92 seconds",
                           {"elapsed_s": 11.92}),)),
    # up to 0.7.3 the end of the load says memory, not time; profiling comes next
    Rule("load_weight.end", r"^Loading model weights took (?P<weights_gb>[\d.]+) Gi?B", "Loading model weights took",
         fields={"weights_gb": to_float}, const={"next_stage": "kv_cache"}, evidence=3,
         examples=(Example("INFO 10-08 07:17:03 model_runner.py:692] Loading model weights took 7.5122 GB",
                           {"weights_gb": 7.5122, "next_stage": "kv_cache"}),)),
    Rule("model_loading.end",
         r"^Model loading took (?P<weights_gb>[\d.]+) Gi?B(?: memory)? and (?P<elapsed_s>[\d.]+) seconds",
         "Model loading took", fields={"weights_gb": to_float, "elapsed_s": to_float}, evidence=6,
         examples=(Example("(VllmWorker rank=0 pid=164) INFO 11-19 18:27:57 [gpu_model_runner.py:1892] "
                           "Model loading took 11.9642 GiB and 13.051931 seconds",
                           {"weights_gb": 11.9642, "elapsed_s": 13.051931}),)),
    # --- torch.compile ---
    Rule("torch_compile.begin", rf"^{_TAG}Starting torch\.compile", "Starting torch.compile",
         examples=(Example("(EngineCore pid=240) INFO 02-26 14:47:16 [monitor.py:40] [backbone] Starting "
                           "torch.compile",
                           {"tag": "backbone"}),)),
    Rule("torch_compile.dynamo", rf"^{_TAG}Dynamo bytecode transform time: (?P<dynamo_s>[\d.]+) s",
         "Dynamo bytecode", fields={"dynamo_s": to_float},
         examples=(Example("(EngineCore_DP0 pid=165) INFO 03-18 06:55:51 [backends.py:703] Dynamo bytecode "
                           "transform time: 1.81 s",
                           {"dynamo_s": 1.81}),)),
    Rule("torch_compile.cache_hit",
         rf"^{_TAG}Directly load (?:the compiled graph|AOT compilation)(?P<config_stated>)",
         "Directly load", fields={"config_stated": lambda _: {"compile_cache": "hit"}},
         examples=(Example("(EngineCore_DP0 pid=207) INFO 11-13 13:24:19 [backends.py:223] Directly load "
                           "the compiled graph(s) for compile range (1, 8192) from the cache, took 3.548 s",
                           {"config_stated": {"compile_cache": "hit"}}),)),
    Rule("torch_compile.inductor",
         rf"^{_TAG}Compiling a graph for [^\n]*?(?: takes (?P<inductor_s>[\d.]+) s)?(?P<config_stated>)$",
         "Compiling a graph for", fields={"inductor_s": to_float, "config_stated": lambda _: {"compile_cache": "miss"}},
         examples=(Example("(EngineCore pid=805) INFO 12-03 21:00:55 [backends.py:393] Compiling a graph "
                           "for compile range (1, 8192) takes 14.68 s",
                           {"inductor_s": 14.68, "config_stated": {"compile_cache": "miss"}}),)),
    # the compile cache's folder, named by a hash of what the compiled graphs depend on: another
    # key than the last start's means a cold start (vllm#47573): `Kind.cache_key`, Run.cache_keys
    Rule("torch_compile.cache_dir", r"Using cache directory: (?P<cache_key>\S+) for vLLM's torch\.compile",
         "Using cache directory: ", fields={"cache_key": _compile_cache_key},
         examples=(Example("(EngineCore_DP0 pid=254) INFO 11-13 09:37:51 [backends.py:643] Using cache directory: "
                           "/root/.cache/vllm/torch_compile_cache/d3eb35d1f0/rank_0_0/backbone for vLLM's "
                           "torch.compile", {"cache_key": "d3eb35d1f0"}),)),
    # cache evidence (`cache_lines`): the graph compiled now is stored, an AOT function saved
    Rule("torch_compile.cache_store",
         rf"^{_TAG}Cache the graph (?:of shape \S+|for dynamic shape|of compile range [^\n]*?) for later use",
         "Cache the graph ",
         examples=("(EngineCore_DP0 pid=165) INFO 03-18 06:55:53 [backends.py:261] Cache the graph of "
                   "compile range (1, 2048) for later use",)),
    Rule("torch_compile.aot_saved", rf"^{_TAG}saved AOT compiled function to ", "saved AOT compiled function",
         examples=("(EngineCore pid=805) INFO 12-03 21:01:00 [decorators.py:708] saved AOT compiled "
                   "function to "
                   "/root/.cache/vllm/torch_compile_cache/torch_aot_compile/ab557940/rank_0_0/model",)),
    # kernel_warmup.py (0.2x+): the autotune cache file had no entries for this model/GPU
    Rule("kernel.autotune_cache_miss", r"^No FlashInfer autotune cache entries found", "No FlashInfer autotune cache",
         examples=("(EngineCore pid=805) WARNING 12-03 21:01:03 [kernel_warmup.py:258] No FlashInfer "
                   "autotune cache entries found.Falling back to default tactics.",)),
    Rule("torch_compile.end",
         rf"^{_TAG}torch\.compile (?P<detail>and initial profiling/warmup run together )?(?:takes|took) "
         r"(?P<elapsed_s>[\d.]+) s in total",
         "torch.compile ", fields={"elapsed_s": to_float, "detail": lambda t: "with warmup" if t else None},
         evidence=4,
         examples=(Example("(EngineCore_DP0 pid=165) INFO 03-18 06:57:23 [monitor.py:34] torch.compile "
                           "takes 92.20 s in total",
                           {"elapsed_s": 92.2}),
                   Example("(EngineCore pid=240) INFO 02-26 14:47:58 [monitor.py:34] [backbone] "
                           "torch.compile and initial profiling/warmup run together took 41.07 s in total",
                           {"detail": "with warmup", "elapsed_s": 41.07}))),
    Rule("torch_compile.warmup", rf"^{_TAG}Initial profiling/warmup run took (?P<warmup_s>[\d.]+) s",
         "Initial profiling/warmup", fields={"warmup_s": to_float}, evidence=4,
         examples=(Example("(EngineCore pid=240) INFO 02-26 14:46:31 [monitor.py:81] [backbone] Initial "
                           "profiling/warmup run took 0.61 s",
                           {"warmup_s": 0.61, "tag": "backbone"}),)),
    # 0.24+: the encoder's warm-up of a multi-modal model, inside `init engine ... took`
    Rule("engine.mm_warmup", r"^Multi-modal warmup completed in (?P<warmup_s>[\d.]+) ?s", "Multi-modal warmup",
         fields={"warmup_s": to_float}, evidence=4,
         examples=(Example("(EngineCore pid=240) INFO 02-26 14:46:44 [gpu_model_runner.py:5120] Multi-modal "
                           "warmup completed in 2.95 s",
                           {"warmup_s": 2.95}),)),
    # --- KV cache: the profile sizes it ("Available ..."), then it is allocated ("... size:") ---
    Rule("kv_cache.allocated", r"^Available KV cache memory: (?P<kv_gib>[\d.]+) GiB", "Available KV cache memory",
         fields={"kv_gib": to_float}, const={"next_stage": "kv_cache"}, evidence=5,
         examples=(Example("(EngineCore_DP0 pid=165) INFO 03-18 06:57:25 [gpu_worker.py:375] Available KV "
                           "cache memory: 11.15 GiB",
                           {"kv_gib": 11.15, "next_stage": "kv_cache"}),)),
    Rule("kv_cache.allocated",
         r"^Initial free memory [\d.]+ ?GiB, reserved (?P<kv_gib>[\d.]+) ?GiB memory for KV Cache",
         "memory for KV Cache", fields={"kv_gib": to_float}, const={"next_stage": "kv_cache"},
         examples=(Example("(EngineCore_DP0 pid=93) INFO 10-07 08:16:38 [gpu_worker.py:301] Initial free "
                           "memory 78.53 GiB, reserved 20.00 GiB memory for KV Cache as specified by "
                           "kv_cache_memory_bytes config and skipped memory profiling.",
                           {"kv_gib": 20.0}),)),
    Rule("kv_cache.allocated", r"^(?P<pool>[A-Z]+(?: \+ host)?) KV cache size: (?P<tokens>[\d,]+) tokens",
         "KV cache size:", fields={"tokens": _int_commas}, const={"next_stage": "cuda_graph"}, evidence=5,
         examples=(Example("(EngineCore_DP0 pid=241) INFO 02-12 19:50:09 [kv_cache_utils.py:1291] GPU KV "
                           "cache size: 767,552 tokens",
                           {"pool": "GPU", "tokens": 767552, "next_stage": "cuda_graph"}),)),
    Rule("kv_cache.allocated", r"^# (?:\w+) blocks: (?P<gpu_blocks>\d+)(?:, # CPU blocks: (?P<cpu_blocks>\d+))?$",
         " blocks: ", fields={"gpu_blocks": to_int, "cpu_blocks": to_int}, const={"next_stage": "cuda_graph"},
         examples=(Example("INFO 02-15 22:06:45 llm_engine.py:275] # GPU blocks: 2050, # CPU blocks: 2048",
                           {"gpu_blocks": 2050, "cpu_blocks": 2048}),)),
    Rule("kv_cache.profile", r"^Memory profiling takes (?P<profile_s>[\d.]+) seconds", "Memory profiling takes",
         fields={"profile_s": to_float},
         examples=(Example("INFO 01-14 09:00:25 worker.py:225] Memory profiling takes 2.16 seconds",
                           {"profile_s": 2.16}),)),
    # --- CUDA graphs: V0 announces the capture; V1 only reports it ---
    Rule("cuda_graph.begin", r"^Capturing (?:the model for CUDA graphs|cudagraphs for decoding)\.", "Capturing ",
         examples=("INFO 02-15 22:06:47 model_runner.py:501] Capturing the model for CUDA graphs. This may "
                   "lead to unexpected consequences if the model is not static.",)),
    Rule("progress.cuda_graph",
         r"^Capturing CUDA graph(?:s| shapes)(?: \((?P<desc>[^)]*)\))?:\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)",
         "Capturing CUDA graph", fields={"pct": to_int, "n": to_int, "total": to_int},
         examples=(Example("Capturing CUDA graphs (decode, FULL): 100%|██████████| 4/4 [00:01<00:00,  "
                           "2.09it/s]",
                           {"desc": "decode, FULL", "pct": 100, "n": 4, "total": 4}),)),
    Rule("cuda_graph.end",
         r"^Graph capturing finished in (?P<elapsed_s>\d+) secs(?:, took (?P<graph_gib>-?[\d.]+) GiB)?",
         "Graph capturing finished", fields={"elapsed_s": to_float, "graph_gib": to_float}, evidence=6,
         examples=(Example("(EngineCore_DP0 pid=165) INFO 03-18 06:57:57 [gpu_model_runner.py:4587] Graph "
                           "capturing finished in 24 secs, took 1.00 GiB",
                           {"elapsed_s": 24.0, "graph_gib": 1.0}),)),
    Rule("progress.weights",
         r"(?P<desc>Loading [\w ]{0,60}checkpoint shards(?: \(eager\))?|Multi-thread loading[\w ]{0,60}shards)"
         r":\s+(?P<pct>\d+)% (?:Completed )?\|? ?(?P<n>\d+)/(?P<total>\d+)",
         "shards", fields={"pct": to_int, "n": to_int, "total": to_int}, evidence=0,
         examples=(Example("Loading safetensors checkpoint shards:  40% Completed | 2/5 [00:04<00:07,  "
                           "2.35s/it]",
                           {"pct": 40, "n": 2, "total": 5}),)),
    # --- the engine is up ---
    Rule("engine.ready",
         r"^init engine \(profile, create kv cache, warmup model\) took (?P<elapsed_s>[\d.]+) (?:seconds|s)"
         r"(?: \(compilation: (?P<compile_s>[\d.]+) s)?",
         "init engine (profile", fields={"elapsed_s": to_float, "compile_s": to_float}, evidence=8,
         examples=(Example("(EngineCore_DP0 pid=241) INFO 02-12 19:50:13 [core.py:259] init engine "
                           "(profile, create kv cache, warmup model) took 143.64 seconds",
                           {"elapsed_s": 143.64}),
                   Example("(EngineCore pid=240) INFO 02-26 14:48:40 [core.py:278] init engine (profile, "
                           "create kv cache, warmup model) took 60.12 s (compilation: 41.07 s)",
                           {"elapsed_s": 60.12, "compile_s": 41.07}))),
    # --- HTTP server ---
    Rule("http.running", r"^Starting vLLM (?:API )?server (?:\d+ )?on (?P<url>\S+)", "Starting vLLM ", fields={"url": to_url},
         evidence=8,
         examples=(Example("(APIServer pid=1) INFO 03-18 06:57:59 [api_server.py:1428] Starting vLLM API "
                           "server 0 on http://0.0.0.0:8000",
                           {"url": "http://0.0.0.0:8000"}),)),
    Rule("http.routes", r"^Available routes are:", "Available routes",
         examples=("(APIServer pid=1) INFO 03-18 06:57:59 [launcher.py:38] Available routes are:",)),
    _common.STARTED,
    _common.DJL_READY,
    Rule("ready", r"^Application startup complete\.", "Application startup complete", evidence=0,
         examples=("(APIServer pid=1) INFO:     Application startup complete.",)),
    _common.STARTUP_FAILED,
    Rule("http.running", r"^Uvicorn running on (?P<url>\S+)", "Uvicorn running on", fields={"url": to_url}, evidence=0,
         examples=(Example("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
                           {"url": "http://0.0.0.0:8000"}),)),
    _common.ACCESS,
    _common.SHUTDOWN,
    # --- failures: the engine process, the API server, systemd ---
    Rule("error.engine_core",
         r"^(?P<what>EngineCore failed to start|WorkerProc failed to start|EngineCore encountered a fatal error"
         r"|EngineCore hit an exception)",
         ("EngineCore ", "WorkerProc failed"),
         examples=(Example("(EngineCore_DP0 pid=2827) ERROR 02-22 06:35:27 [core.py:946] EngineCore failed "
                           "to start.",
                           {"what": "EngineCore failed to start"}),)),
    Rule("error.init_failed",
         r"(?:Engine core|EngineCore) initialization failed\. See root cause above|Engine process failed to start",
         ("initialization failed", "Engine process failed"),
         examples=("(APIServer pid=1633) RuntimeError: Engine core initialization failed. See root cause "
                   "above. Failed core proc(s): {}",)),
    Rule("error.child_died",
         r"^(?:Engine core proc (?P<proc_name>\S+) died unexpectedly|Worker proc (?P<worker>\S+) died unexpectedly"
         r"(?: \(exit code: (?P<exit_code>-?\d+)\))?|(?:AsyncLLMEngine|MQLLMEngine) (?:has failed|is already dead), "
         r"terminating server process)",
         ("died unexpectedly", "terminating server process"),
         examples=(Example("(APIServer pid=1) ERROR 03-01 10:00:00 [core_client.py:564] Engine core proc "
                           "EngineCore_DP0 died unexpectedly, shutting down client.",
                           {"proc_name": "EngineCore_DP0"}),
                   "ERROR 10-08 07:40:00 async_llm_engine.py:60] AsyncLLMEngine has failed, terminating "
                   "server process")),
    Rule("error.child_died",
         r"^\S+\.service: Main process exited, code=(?P<code>\w+), status=(?P<status>\d+/(?:FAILURE|KILL|ABRT|SEGV|BUS|ILL|FPE|SYS))",
         "Main process exited", evidence=0,
         examples=(Example("Feb 22 06:35:29 gpu-host systemd[1]: vllm.service: Main process exited, "
                           "code=exited, status=1/FAILURE",
                           {"code": "exited", "status": "1/FAILURE"}),)),
    Rule("error.killed", r"(?:^|\s)Killed(?:\s+\S|$)", "Killed", evidence=0,
         examples=("/opt/vllm/start.sh: line 3:  4121 Killed                  vllm serve Qwen/Qwen3-8B "
                   "--port 8000",)),
    Rule("error.traceback", r"^Traceback \(most recent call last\)", "Traceback", evidence=0,
         examples=("(EngineCore_DP0 pid=2827) Traceback (most recent call last):",)),
    Rule("error.process", r"^Process (?P<proc_name>\S+):$", "Process ", evidence=0,
         examples=(Example("(EngineCore_DP0 pid=2827) Process EngineCore_DP0:",
                           {"proc_name": "EngineCore_DP0"}),)),
    # a traceback frame in the engine's own code: the same event as any frame, and evidence of the engine
    Rule("error.frame", r'^File "(?P<file>[^"]*/vllm/[^"]+)", line (?P<lineno>\d+), in (?P<func>\S+)', "/vllm/",
         examples=(Example('(EngineCore_DP0 pid=2827)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/'
                           'core.py", line 691, in run_engine_core',
                           {"file": "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py",
                            "lineno": "691", "func": "run_engine_core"}),)),
    *_common.PYTHON_ERRORS,
)

# --- what the rest of firedup needs to know about vLLM -------------------------------------

# The phase a run is in after a shared kind, where vLLM's order differs from the shared table
# (its own kinds say theirs): an excerpt that stops, or a crash, is placed by it.
STAGE_AFTER = {
    "load_weight.end": "model_loading", "cuda_graph.end": "engine_init",
    # vLLM refuses connections until ready: its first request is served, never a warm-up
    "http.first_request": "serving",
}

# `model_loading` spans the weight load, `engine_init` compile, KV sizing and graph capture:
# stacked with the phases inside they count the same seconds twice, and they never say which
# step inside was slow.
UMBRELLA_PHASES = {
    "model_loading": ("load_weights",),
    "engine_init": ("torch_compile", "kv_cache", "cuda_graph"),
}

# The health endpoint (docs/engines/vllm.md, "Health and readiness").
HEALTH = HealthSemantics(
    endpoint="/health",
    starting=REFUSED,
    ready_status=200,
    body="empty",
    before_listen=REFUSED,
    dead_statuses=(500, 503),
    note=("the port is bound early but only listens after `Application startup complete.`: "
          "until then a probe gets connection refused, never an HTTP status; /ping equals /health (0.7+); "
          "an engine that died answers 500 (<=0.10) or 503 (0.11+), empty"),
    routes=(Route("/ping", health_alias=True, since="0.7.0"), Route("/v1/models", "models")),
)

PROBING = Probing(
    default_port=8000, listens_after="the engine is ready", loud_body=False,
    probe_timeout=5,
    probe_timeout_why="a probe must not hang if a version binds the socket before it serves",
    crash_markers=("EngineCore failed to start", "WorkerProc failed to start",
                   "initialization failed. See root cause above", "Engine process failed to start",
                   "Application startup failed"),
)

# The per-version readiness table (docs/engines/vllm.md, "Health and readiness"): nothing listens until the engine is ready.
READINESS = (
    ReadyProbe(route="/health", pitfall="", probe_seconds=0.1,
               probe_seconds_why="/health checks the engine's state and answers at once",
               timeout_seconds=5),
)

# The engine's own clocks (docs/engines/vllm.md, "The engine's own clocks").
CLOCKS = (
    EngineClock("VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_ENGINE_READY_TIMEOUT_S={seconds} (environment)", "ready", 600.0,
                "the API server stops waiting for the engine core and exits (the engine core may keep running, "
                "vllm#32116)"),
    EngineClock("router --worker-startup-timeout-secs", "--worker-startup-timeout-secs {seconds} (vllm-router)",
                "ready", None, "the router stops waiting for the worker's /health and does not add it",
                component="router"),
)

# Causes whose remedy is a flag of this engine (crash.diagnose_error; `Advice.cause_hints`).
CAUSE_HINTS = (
    ("distributed", _common.CUSTOM_ALL_REDUCE,
     "the custom all-reduce (CUDA IPC between the GPUs of this node) failed: start with "
     "--disable-custom-all-reduce (all-reduce falls back to NCCL), or fix GPU peer-to-peer "
     "(IOMMU/ACS settings, driver)"),
)

HINTS = {
    ("kv_cache_too_small", "*"): ("the KV cache cannot hold one request of the model's max length: raise "
                                  "--gpu-memory-utilization, lower --max-model-len, or shard wider (--tensor-parallel-size)"),
    ("oom", "load_weights"): ("the weights do not fit: shard wider (--tensor-parallel-size), use a quantized "
                              "checkpoint, or free the GPUs"),
    ("oom", "launch"): ("the GPU was already partly used at start: free it, or lower --gpu-memory-utilization "
                        "to what is really free"),
    ("oom", "dist_init"): ("the GPU was already partly used at start: free it, or lower --gpu-memory-utilization "
                           "to what is really free"),
    ("oom", "kv_cache"): ("the memory profile run did not fit: lower --max-num-batched-tokens or --max-model-len, "
                          "or --gpu-memory-utilization if another process shares the GPU"),
    ("oom", "cuda_graph"): ("graph capture ran out of memory: lower --max-num-seqs or the capture sizes "
                            "(-cc.max_cudagraph_capture_size), or lower --gpu-memory-utilization; --enforce-eager "
                            "skips graphs"),
    ("oom", "*"): "GPU out of memory: lower --gpu-memory-utilization, --max-model-len or --max-num-seqs",
    ("checkpoint_mismatch", "*"): ("a tensor of the checkpoint has another shape than the model's: check that --model "
                                   "holds one model (its config.json describes these weights; no shard of another "
                                   "model in the folder), and --quantization against the checkpoint"),
    ("distributed", "*"): ("a collective failed: read the first NCCL error (NCCL_DEBUG=INFO); in containers give "
                           "shared memory (--ipc=host or a large --shm-size); NCCL_P2P_DISABLE=1 helps on GPUs "
                           "without working P2P"),
    ("port_in_use", "*"): "another process holds the port: stop it or pick another --port",
    ("config", "*"): "vLLM rejected this combination of flags, model or hardware: read the message",
}

# When each minor series was first released: the UTC day PyPI's upload-time puts vllm==x.y.0 on,
# read with pip's own client (`pip index versions vllm --uploaded-prior-to DAY`, the first day
# the version is listed before the next midnight; 0.3-0.11 checked 2026-12: 0.4.0, 0.6.0, 0.9.0,
# 0.10.0 and 0.11.0 were a day to two weeks later than first written here; 0.12-0.34 bisected
# the same way on 2026-12-04, 0.34.0 the newest then). The last version of each range is the
# last of its series on PyPI, every one uploaded before the next series' x.y.0 (0.11.1 and
# 0.11.2 came after 0.11.0, so its date bounds them too).
# A log of a version is written on or after its release: the year its month-day stamps lack is
# guessed from it. A version newer than the table gets no such guess.
RELEASES = (
    ("0.3.0", "0.3.3", "2024-01-31"), ("0.4.0", "0.4.3", "2024-03-31"), ("0.5.0", "0.5.5", "2024-06-11"),
    ("0.6.0", "0.6.6.post1", "2024-09-05"), ("0.7.0", "0.7.3", "2025-01-27"), ("0.8.0", "0.8.5.post1", "2025-03-18"),
    ("0.9.0", "0.9.2", "2025-05-28"), ("0.10.0", "0.10.2", "2025-07-25"), ("0.11.0", "0.11.2", "2025-10-04"),
    ("0.12.0", "0.12.0", "2025-12-03"), ("0.13.0", "0.13.0", "2025-12-19"), ("0.14.0", "0.14.1", "2026-01-20"),
    ("0.15.0", "0.15.1", "2026-01-29"), ("0.16.0", "0.16.0", "2026-02-26"), ("0.17.0", "0.17.1", "2026-03-07"),
    ("0.18.0", "0.18.1", "2026-03-20"), ("0.19.0", "0.19.1", "2026-04-03"), ("0.20.0", "0.20.2", "2026-04-27"),
    ("0.21.0", "0.21.0", "2026-05-15"), ("0.22.0", "0.22.1", "2026-05-29"), ("0.23.0", "0.23.0", "2026-06-13"),
    ("0.24.0", "0.24.0", "2026-06-30"), ("0.25.0", "0.25.1", "2026-07-11"), ("0.26.0", "0.26.0", "2026-07-25"),
    ("0.27.0", "0.27.1", "2026-08-10"), ("0.28.0", "0.28.0", "2026-08-26"), ("0.29.0", "0.29.0", "2026-09-09"),
    ("0.30.0", "0.30.0", "2026-09-22"), ("0.31.0", "0.31.0", "2026-10-05"), ("0.32.0", "0.32.0", "2026-10-18"),
    ("0.33.0", "0.33.0", "2026-11-02"), ("0.34.0", "0.34.0", "2026-11-16"),
)
# A release's version only: a release candidate or nightly ("0.12.0rc1", "0.11.1.dev5+g...")
# runs in the days before its release, so the release's date would put such a log a year late.
VERSION_TEXT = (r"(?:vLLM API server version |vLLM server version |LLM engine \(v|█ +version +)"
                r"(?P<version>\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)(?![\w.+])")

FORMAT = Format(
    name="vllm",
    title="vLLM",
    versions="0.4-0.34",
    description="vLLM (vllm-project/vllm) OpenAI server and offline-engine logs, 0.4-0.34",
    kinds=KINDS,
    parsing=Parsing(
        headers=HEADERS,
        rules=RULES,
        runtime_literals=("Avg prompt throughput", "Received request", "Added request", "Finished request"),
        level_prefix=None,
        # Process tags -> ranks. EngineCore hosts the TP=1 worker, so it is the data-parallel rank.
        proc_ranks=(
            (r"^(?:VllmWorker rank=|VllmWorker-)(?P<n>\d+)$", "TP{n}"),
            (r"^VllmWorkerProcess$", "pid{pid}"),  # V0 non-driver worker: which TP rank is not printed
            (r"^EngineCore_(?:DP)?(?P<n>\d+)$", "DP{n}"),
            (r"^EngineCore$", "DP0"),
            # Worker[_DP<d>][_PP<p>][_PCP<c>][_TP<t>][_DCP<k>][_EP<e>]: the rank is DP/PP/TP (EP and the
            # context-parallel ranks follow from them)
            (r"^(?:Vllm)?Worker(?:[ _]DP(?P<DP>\d+))?(?:[ _]PP(?P<PP>\d+))?(?:_PCP\d+)?"
             r"(?:[ _]TP(?P<TP>\d+))?(?:_DCP\d+)?(?:_EP\d+)?$", ""),
        ),
        # What `vllm serve` assumes for flags a `non-default args` line does not list.
        config_defaults={"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1,
                         "enforce_eager": False},
        read_args=read_args,
        derive_config=derive_config,
    ),
    meaning=Meaning(
        stage_after=STAGE_AFTER,
        umbrella_phases=UMBRELLA_PHASES,
        # --enforce-eager / -O0 turn torch.compile off; no graphs: KV allocation goes straight on
        stage_skips={"torch_compile": ("enable_torch_compile", False, "kv_cache"),
                     "cuda_graph": ("disable_cuda_graph", True, "engine_init")},
        draft_by_repeat=False,
        # profiling and KV sizing print no duration: from the end of the load or compile to the
        # first KV line of the same process
        timestamp_phases=(("kv_cache", ("load_weight.end", "model_loading.end", "torch_compile.end"),
                           ("kv_cache.allocated",)),),
        after_http_phase="http_start",
        offline_ready="engine.ready",
        rank_tags_only_when_parallel=False,
        every_rank_prints=("load_weight.begin",),
        frame_stages=_common.FRAME_STAGES,
        capture_trace=_common.CAPTURE_TRACE,
    ),
    serving=Serving(
        health=HEALTH,
        probing=PROBING,
        readiness=READINESS,
    ),
    timeouts=Timeouts(
        clocks=CLOCKS,
        # docs/launch.md: the first timestamped line came 21-28 s after the launch in two real vLLM
        # 0.26.0 start-ups on one H200 (imports of torch and vllm print no time). No cold-cache vLLM
        # start was measured: its cold top is SGLang's cold/warm ratio (37/27) applied to 28 s.
        launch_gap=LaunchGap(21.0, 24.0, 39.0, "vLLM's imports print no time: its first timed line comes",
                             warm_high=28.0, plausible=120.0),
    ),
    advice=Advice(
        hints=HINTS,
        cause_hints=CAUSE_HINTS,
        remedies=REMEDIES,
    ),
    dating=Dating(
        version_text=VERSION_TEXT,
        releases=RELEASES,
    ),
    caches=Caches(
        cache_kinds={
            "torch_compile": "torch.compile's compiled graphs (~/.cache/vllm/torch_compile_cache)",
            "flashinfer_autotune": "FlashInfer's autotuned tactics (~/.cache/vllm/flashinfer_autotune_cache)",
            "kernel_jit": "kernels JIT-compiled on first use (FlashInfer, Triton) in the profile and warm-up runs",
        },
        cache_lines=(
            CacheLine("torch_compile", "torch_compile.cache_hit", "warm"),
            CacheLine("torch_compile", "torch_compile.inductor", "cold"),
            CacheLine("torch_compile", "torch_compile.cache_store", "cold"),
            CacheLine("torch_compile", "torch_compile.aot_saved", "cold"),
            CacheLine("flashinfer_autotune", "kernel.autotune_cache_miss", "cold"),
        ),
        # `init engine (profile, create kv cache, warmup model) took ...` prints nothing between its
        # KV cache lines and its end (130 s on a first start on an H200: docs/silences-and-caches.md)
        silent_work={"engine_init": ("the profile and warm-up runs, which JIT-compile and autotune kernels "
                                     "without a log line when their caches are cold", "kernel_jit")},
    ),
)

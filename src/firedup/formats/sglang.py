"""SGLang server logs, 0.1 (2024) to 0.5.23 (2026); what they print, by version, is
docs/engines/sglang.md.

Two tables: `HEADERS` says how a line is laid out before its message, `RULES` which
messages matter, each with the lines it reads (`examples`); `KINDS` declares the kinds of
event only SGLang prints. The first header and the first rule that match win, so specific
entries come before general ones. Regexes run in Python's `re` and must also compile in
Hyperscan (no look-arounds, no back-references, linear time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from firedup.core.health import (
    REFUSED,
    HealthSemantics,
    ReadyProbe,
    Route,
    StartupTelemetry,
)
from firedup.formats import _common
from firedup.formats._sglang_advice import REMEDIES
from firedup.formats._sglang_read import parse_argv, parse_timings, version_guess
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
from firedup.formats.convert import to_day_seconds, to_float, to_int, to_list, to_url
from firedup.formats.vocab import ALWAYS, IF_STUCK, Kind

# --- line layouts ------------------------------------------------------------------------

_DATE = r"(?P<date>\d{4}-\d{2}-\d{2})"
_TIME = r"(?P<time>\d{2}:\d{2}:\d{2})"
_FRAC = r"(?:[.,](?P<frac>\d{1,9}))?"
# Rank tags in any order: DP, PP, ATTN_CP, MOE_DP, TP, EP; encoder-disaggregation workers.
_RANKS = r"(?P<ranks>(?: (?:[A-Z][A-Z_]{0,15}\d{1,6}|encode_server|encode_dp_worker\[\d{1,6}\])){0,12})"
_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|TRACE)"

HEADERS = (
    # Offline engine / docs CI: "[2025-10-31 21:10:05] INFO engine.py:124: msg"
    Header("engine", rf"^\[{_DATE} {_TIME}{_FRAC}{_RANKS}\] {_LEVEL} [\w.-]+\.py:\d+: (?P<msg>.*)$"),
    # The main format. The opening bracket is optional: terminals cut the first character.
    Header("sglang", rf"^\[?{_DATE} {_TIME}{_FRAC}{_RANKS}\] ?(?P<msg>.*)$"),
    # 0.2.14-0.3.3: time of day only.
    Header("sglang-time", rf"^\[{_TIME}{_FRAC}{_RANKS}\] (?P<msg>.*)$"),
    # 0.1-0.2: "[gpu_id=0] msg" / "[gpu=0] msg", no time at all.
    Header("sglang-gpu", r"^\[gpu(?:_id)?=(?P<gpu>\d+)\] (?P<msg>.*)$"),
    # vLLM-style lines from the vLLM loader inside 2024 SGLang logs. Their clock can be on
    # another date than SGLang's own, so they never lend their time to SGLang lines.
    Header("vllm-style",
           rf"^{_LEVEL} (?P<md>\d{{2}}-\d{{2}}) {_TIME}(?:\.\d+)? \[?[\w./-]+:\d+\] (?P<msg>.*)$",
           clock="foreign"),
    # Python's default logging format, used before SGLang configures its logger.
    Header("pylogging", rf"^{_LEVEL}:(?P<logger>[\w.]+):(?P<msg>.*)$"),
    # uvicorn without a timestamp (0.3.3 and older).
    Header("uvicorn", rf"^{_LEVEL}:\s+(?P<msg>.*)$"),
)

# --- field converters --------------------------------------------------------------------


_GB = r"(-?[\d.]+) ?GB"

def _jit_step(text: str) -> str:
    """`Loading` -> begin, `Finished loading` -> end (a `spans` cache line's `step`)."""
    return "end" if text.startswith("Finished") else "begin"


# --- the kinds of event only SGLang prints (the shared ones: firedup.formats.vocab) ------------

KINDS = (
    Kind("config.command", "a shell echoes the launch command (`argv`: its flags)", launch=True),
    Kind("load_weight.commit", "0.5.14+: the real weights are committed after graph capture", milestone=True),
    Kind("kv_cache.other", "another pool of the KV cache (Mamba, SWA, a sparse attention's)"),
    Kind("cuda_graph.sizes", "the batch sizes graph capture will capture (`bs`)", graph_capture=True),
    Kind("cuda_graph.disabled", "piecewise graphs are turned off, and why"),
    Kind("progress.download", "a progress bar of the weights' download", progress="files"),
    Kind("progress.jit", "a progress bar of DeepGEMM's kernel warm-up", progress="DeepGEMM warmup"),
    Kind("progress.bar", "a progress bar that names no task", progress=""),
    Kind("jit.begin", "kernels begin to JIT-compile or autotune (no duration printed)"),
    Kind("jit.end", "autotuning is done"),
    Kind("jit.ops", "FlashInfer's own logger: one kernel op begins or ends JIT-compiling (`step`, `key`), with "
                    "that logger's time (`at`)"),
    Kind("bench.marker", "a benchmark's own line (bench_one_batch: no HTTP server)", offline=True),
    Kind("http.startup_complete", "uvicorn's application started (before the warm-up request)"),
    Kind("warmup.end", "the server's warm-up requests are done"),
    Kind("error.warmup", "the warm-up request failed", fatal=ALWAYS, warmup_failed=True),
    Kind("error.child_exception", "a child process (the scheduler, the detokenizer) hit an exception", fatal=ALWAYS),
    Kind("error.sigquit", "a child asked the main process to kill the server tree", fatal=ALWAYS),
    Kind("error.scheduler_dead", "a rank's scheduler died", fatal=ALWAYS),
    Kind("error.unbalanced", "some ranks finished loading the model and others did not"),
    Kind("error.watchdog", "the watchdog saw no progress for too long", fatal=IF_STUCK),
    Kind("error.health", "a health check's generation failed", fatal=IF_STUCK),
    Kind("error.port_in_use", "uvicorn could not bind the port", fatal=ALWAYS),
    Kind("error.usage", "the command line was rejected", fatal=ALWAYS),
)

# --- rules -------------------------------------------------------------------------------

RULES = (
    # process start and configuration
    Rule("server_args", r"^server_args=(?P<args>(?:ServerArgs\(|\{).*)$", "server_args=", starts_run="always",
         evidence=10,
         examples=("[2025-01-23 19:34:55] "
                   "server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', "
                   "tokenizer_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=1, port=30000, "
                   "disable_cuda_graph=False)",
                   "[2026-09-04 10:00:00] server_args={'model_path': 'Qwen/Qwen3-8B', 'tp_size': 2, 'port': "
                   "30000}")),
    Rule("run.banner", r"'python -m sglang\.launch_server' is still supported", "is still supported",
         starts_run="after_end",
         examples=("/usr/lib/python3.12/site-packages/sglang/launch_server.py:54: UserWarning: 'python -m "
                   "sglang.launch_server' is still supported, but 'sglang serve' is the recommended "
                   "entrypoint.",)),
    # The shell reports the server killed and echoes its command, flags included:
    # "./serve.sh: line 7: 2502678 Killed   python3 -m sglang.launch_server --tp-size 2" (bash),
    # "zsh: killed     SGLANG_USE_MLX=1 python -m sglang.launch_server ..." (zsh).
    Rule("error.killed",
         r"^(?:.{0,300}\s)?[Kk]illed\s+(?:\w+=\S*\s+){0,40}(?:python[\d.]{0,8} -m sglang\.\w+|sglang serve)"
         r"(?: (?P<argv>--[^<>]*))?$",
         ("Killed", "killed"), fields={"argv": parse_argv},
         examples=(Example("./serve.sh: line 7: 2502678 Killed                  python3 -m "
                           "sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp-size 2",
                           {"argv": {"model_path": "Qwen/Qwen2.5-7B-Instruct", "tp_size": 2}}),
                   "zsh: killed     SGLANG_USE_MLX=1 python -m sglang.launch_server --model-path m "
                   "--disable-cuda-graph")),
    # a systemd unit or a container starting the server: the launch, with the launcher's time
    _common.SERVICE,
    _common.CONTAINER_START,
    # A launch command echoed by a shell
    Rule("config.command",
         r"^(?:.{0,300}\s)?(?:python[\d.]{0,8} -m sglang\.(?:launch_server|bench_one_batch|bench_latency"
         r"|bench_offline_throughput)|sglang serve) (?P<argv>--[^<>]*)$",
         ("sglang.launch_server", "sglang serve", "sglang.bench"), fields={"argv": parse_argv}, evidence=2,
         examples=(Example("+ python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                           "--tp-size 4 --port 30000",
                           {"argv": {"model_path": "meta-llama/Llama-3.1-8B-Instruct", "tp_size": 4, "port": 30000}}),
                   "$ sglang serve --model-path Qwen/Qwen3-8B --disable-cuda-graph")),
    Rule("config.stated", r"parallel size is adjusted to be the same as the tensor parallel size\[(?P<tp_size>\d+)\]",
         "tensor parallel size[", fields={"tp_size": to_int},
         examples=(Example("DeepEP MoE is enabled. The expert parallel size is adjusted to be the same as "
                           "the tensor parallel size[2].",
                           {"tp_size": 2}),)),
    Rule("config.stated", r"'--disable-cuda-graph' is deprecated", "--disable-cuda-graph' is deprecated",
         const={"disable_cuda_graph": True},
         examples=(Example("'--disable-cuda-graph' is deprecated and will be removed in a future release. "
                           "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.",
                           {"disable_cuda_graph": True}),)),
    # distributed init
    Rule("dist_init.begin", r"^Init (?:torch distributed|parallel|nccl) begin\.", "Init ", evidence=2,
         examples=("[2025-01-23 19:35:14 TP0] Init torch distributed begin.",
                   "[12:00:01 TP0] Init nccl begin.",
                   "[2026-10-01 12:00:01 TP1] Init parallel begin.")),
    Rule("dist_init.end", r"^Init (?:torch distributed|parallel) ends\.(?: elapsed=(?P<elapsed_s>[\d.]+) s)?",
         "Init ", fields={"elapsed_s": to_float},
         examples=(Example("[2026-04-14 16:08:44 TP1] Init torch distributed ends. elapsed=0.65 s, mem "
                           "usage=0.19 GB",
                           {"elapsed_s": 0.65, "mem_usage_gb": 0.19}),
                   "[2025-09-28 17:07:09 TP0] Init torch distributed ends. mem usage=0.00 GB")),
    # weights
    Rule("load_weight.begin", r"^Load weight begin\.", "Load weight begin", evidence=5,
         examples=(Example("[2025-01-23 19:35:15 TP0] Load weight begin. avail mem=78.81 GB",
                           {"avail_mem_gb": 78.81}),
                   "[gpu_id=0] Load weight begin. avail mem=78.12 GB")),
    Rule("load_weight.commit",
         r"^Load weight end\. Committed real weights after CUDA graph capture in (?P<elapsed_s>[\d.]+) s",
         "Committed real weights", fields={"elapsed_s": to_float},
         examples=(Example("[2026-11-20 10:05:12 TP0] Load weight end. Committed real weights after CUDA "
                           "graph capture in 41.27 s (capture overlap window 35.10 s, startup overlap total "
                           "52.48 s)",
                           {"elapsed_s": 41.27}),)),
    Rule("load_weight.end",
         r"^Load weight end\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)?(?: type=(?P<model_type>\w+))?"
         r"(?:, dtype=(?P<dtype>[\w.]+))?(?:, quant=(?P<quant>[\w.-]+))?",
         "Load weight end", fields={"elapsed_s": to_float},
         examples=(Example("[2025-01-23 19:35:20 TP0] Load weight end. type=LlamaForCausalLM, "
                           "dtype=torch.bfloat16, avail mem=63.72 GB",
                           {"model_type": "LlamaForCausalLM", "dtype": "torch.bfloat16", "avail_mem_gb": 63.72}),
                   Example("[22:24:31] Load weight end. elapsed=0.95 s, type=LlamaForCausalLM, avail "
                           "mem=11.06 GB, mem usage=2.16 GB.",
                           {"elapsed_s": 0.95}))),
    Rule("load_weight.took", r"^Loading weights took (?P<elapsed_s>[\d.]+) seconds", "Loading weights took",
         fields={"elapsed_s": to_float}, evidence=0,
         examples=(Example("[2026-02-09 03:51:01] Loading weights took 3.03 seconds",
                           {"elapsed_s": 3.03}),)),
    # KV cache and memory pool
    Rule("kv_cache.allocated",
         r"KV Cache is allocated\.(?: dtype: (?P<kv_dtype>[\w.]+),)?(?: #tokens: (?P<tokens>\d+),)?",
         "KV Cache is allocated", fields={"tokens": to_int},
         examples=("[2025-01-23 19:35:20 TP0] KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB.",
                   Example("[22:24:31] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 251788, K "
                           "size: 2.88 GB, V size: 2.88 GB",
                           {"kv_dtype": "torch.bfloat16", "tokens": 251788, "kv_size_gb": 2.88}))),
    Rule("kv_cache.other", r"^(?:Mamba Cache is allocated|KV Cache VA upper bound|SWAKVPool mem usage|Initialize DeepSeekV4TokenToKVPool)",
         ("Mamba Cache", "KV Cache VA", "SWAKVPool", "TokenToKVPool"),
         examples=("[2026-04-14 16:08:49 TP0] Mamba Cache is allocated. max_mamba_cache_size: 186, "
                   "conv_state size: 0.10GB, ssm_state size: 4.38GB",)),
    Rule("memory_pool.end", r"^Memory pool end\.", "Memory pool end", evidence=5,
         examples=(Example("[2025-01-23 19:35:20 TP0] Memory pool end. avail mem=8.34 GB",
                           {"avail_mem_gb": 8.34}),)),
    # graph capture: 0.5.14+ names the role (target/draft) and the stage
    Rule("cuda_graph.begin", r"^Capture target (?P<detail>\w+) (?P<device>\S+) graph begin\.", "Capture target",
         fields={}, const={"model": "target"},
         examples=(Example("[2026-07-21 08:21:55 TP0] Capture target verify CUDA graph begin. backend=full, "
                           "num_tokens_per_bs=6, bs=[1, 2, 3, 4, 5, 6], avail mem=7.77 GB",
                           {"detail": "verify", "device": "CUDA", "model": "target"}),)),
    # 0.5.14+ captures the prefill graph first, and a speculative run's verify graph comes
    # before the draft's graphs: neither end is the end of graph capture.
    Rule("cuda_graph.end",
         r"^Capture target (?P<detail>prefill|verify) (?P<device>\S+) graph end\.(?: bs=(?P<bs>\[[^\]]*\]),)? elapsed=(?P<elapsed_s>[\d.]+) s",
         ("Capture target prefill", "Capture target verify"), fields={"elapsed_s": to_float, "bs": to_list},
         const={"model": "target", "next_stage": "cuda_graph"},
         examples=(Example("[2026-12-05 22:48:55] Capture target prefill CUDA graph end. elapsed=10.16 s, "
                           "mem usage=1.71 GB, avail mem=12.34 GB.",
                           {"detail": "prefill", "elapsed_s": 10.16, "next_stage": "cuda_graph"}),
                   Example("[2026-07-21 08:22:00 TP0] Capture target verify CUDA graph end. bs=[1, 2, 3, "
                           "4], elapsed=4.56 s, mem usage=0.38 GB, avail mem=7.39 GB.",
                           {"detail": "verify", "bs": [1, 2, 3, 4]}))),
    Rule("cuda_graph.end",
         r"^Capture target (?P<detail>\w+) (?P<device>\S+) graph end\.(?: bs=(?P<bs>\[[^\]]*\]),)? elapsed=(?P<elapsed_s>[\d.]+) s",
         "Capture target", fields={"elapsed_s": to_float, "bs": to_list}, const={"model": "target"},
         examples=(Example("[2026-12-03 20:27:15] Capture target decode CUDA graph end. elapsed=4.58 s, mem "
                           "usage=0.25 GB, avail mem=10.96 GB.",
                           {"detail": "decode", "elapsed_s": 4.58, "model": "target"}),
                   Example("[2026-11-10 13:21:51 TP0] Capture target decode CUDA graph end. bs=[1, 2, 4, "
                           "8], elapsed=9.96 s, mem usage=0.95 GB, avail mem=5.10 GB.",
                           {"bs": [1, 2, 4, 8]}))),
    Rule("draft.cuda_graph.begin", r"^Capture draft (?P<detail>\w+) (?P<device>\S+) graph begin\.", "Capture draft",
         const={"model": "draft"},
         examples=(Example("[2026-07-21 08:22:00 TP0] Capture draft decode CUDA graph begin. backend=full, "
                           "num_tokens_per_bs=1, bs=[1, 2, 3, 4, 5, 6], avail mem=7.39 GB",
                           {"detail": "decode", "model": "draft"}),)),
    # the draft's decode graph is followed by its extend graph
    Rule("draft.cuda_graph.end",
         r"^Capture draft (?P<detail>decode) (?P<device>\S+) graph end\.(?: bs=(?P<bs>\[[^\]]*\]),)? elapsed=(?P<elapsed_s>[\d.]+) s",
         "Capture draft decode", fields={"elapsed_s": to_float, "bs": to_list},
         const={"model": "draft", "next_stage": "draft.cuda_graph"},
         examples=(Example("[2026-07-21 08:22:01 TP0] Capture draft decode CUDA graph end. elapsed=1.56 s, "
                           "mem usage=0.38 GB, avail mem=7.01 GB.",
                           {"elapsed_s": 1.56, "next_stage": "draft.cuda_graph"}),
                   Example("[2026-07-21 08:22:01 TP0] Capture draft decode CUDA graph end. bs=[1, 2, 3], "
                           "elapsed=1.56 s, mem usage=0.38 GB, avail mem=7.01 GB.",
                           {"bs": [1, 2, 3]}))),
    Rule("draft.cuda_graph.end",
         r"^Capture draft (?P<detail>\w+) (?P<device>\S+) graph end\.(?: bs=(?P<bs>\[[^\]]*\]),)? elapsed=(?P<elapsed_s>[\d.]+) s",
         "Capture draft", fields={"elapsed_s": to_float, "bs": to_list}, const={"model": "draft"},
         examples=(Example("[2026-07-21 08:22:02 TP0] Capture draft extend CUDA graph end. elapsed=0.74 s, "
                           "mem usage=0.14 GB, avail mem=6.87 GB.",
                           {"detail": "extend", "elapsed_s": 0.74, "model": "draft"}),
                   Example("[2026-09-11 23:46:49 TP0 EP0] Capture draft verify CUDA graph end. bs=[1, 2, 3, "
                           "4], elapsed=4.26 s, mem usage=-0.01 GB, avail mem=7.68 GB.",
                           {"bs": [1, 2, 3, 4]}))),
    # 0.4.4-0.5.13 draft graphs (their extend graph's begin line is read by the rule above, as
    # detail "extend": the same kind, so the branch here for it never runs)
    Rule("draft.cuda_graph.begin", r"^Capture draft (?:(?P<detail>extend) )?cuda graph begin", "Capture draft",
         const={"model": "draft"},
         examples=("[2025-08-31 17:49:49] Capture draft cuda graph begin. This can take up to several "
                   "minutes. avail mem=58.43 GB",)),
    Rule("draft.cuda_graph.end",
         r"^Capture draft (?:(?P<detail>extend) )?cuda graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s",
         "Capture draft", fields={"elapsed_s": to_float}, const={"model": "draft"},
         examples=(Example("[2025-08-31 17:49:55] Capture draft extend cuda graph end. Time elapsed: 0.52 "
                           "s. mem usage=0.11 GB. avail mem=58.08 GB.",
                           {"detail": "extend", "elapsed_s": 0.52}),)),
    # piecewise prefill graph (0.5.6-0.5.13)
    Rule("cuda_graph.begin", r"^Capture piecewise (?P<device>\S+) graph begin\.", "Capture piecewise",
         const={"detail": "piecewise"},
         examples=(Example("[2026-04-27 02:36:09] Capture piecewise CUDA graph begin. avail mem=23.54 GB",
                           {"detail": "piecewise"}),)),
    Rule("cuda_graph.end", r"^Capture piecewise (?P<device>\S+) graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s",
         "Capture piecewise", fields={"elapsed_s": to_float}, const={"detail": "piecewise"},
         examples=(Example("[2026-04-27 02:36:27] Capture piecewise CUDA graph end. Time elapsed: 17.62 s. "
                           "mem usage=2.32 GB. avail mem=21.22 GB.",
                           {"detail": "piecewise", "elapsed_s": 17.62}),)),
    # the classic decode graph (0.2-0.5.13); the word is cuda, cpu or npu
    Rule("cuda_graph.begin", r"^Capture (?P<device>\w+) graph begin\.", "graph begin", evidence=4,
         examples=("[2025-01-23 19:35:20 TP0] Capture cuda graph begin. This can take up to several "
                   "minutes.",
                   Example("[2026-03-01 10:00:00 TP0] Capture npu graph begin. This can take up to several "
                           "minutes. avail mem=40.12 GB",
                           {"device": "npu"}))),
    Rule("cuda_graph.end", r"^Capture (?P<device>\w+) graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s", "graph end",
         fields={"elapsed_s": to_float},
         examples=(Example("[2025-01-23 19:35:27 TP0] Capture cuda graph end. Time elapsed: 6.57 s",
                           {"elapsed_s": 6.57}),)),
    Rule("cuda_graph.sizes", r"^Capture (?:\w+) graph (?:bs|num tokens) (?P<bs>\[[^\]]*\])", "graph ",
         fields={"bs": to_list},
         examples=(Example("[2026-04-14 16:08:50 TP0] Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24]",
                           {"bs": [1, 2, 4, 8, 12, 16, 24]}),)),
    Rule("cuda_graph.disabled", r"^Disable piecewise CUDA graph because", "Disable piecewise",
         examples=("[2026-04-14 16:08:55 TP1] Disable piecewise CUDA graph because "
                   "--disable-piecewise-cuda-graph is set",)),
    # progress bars (no timestamp; tqdm)
    # FlashInfer's logger (0.4.x): `2025-05-02 16:15:03,610 - INFO - flashinfer.jit: Loading JIT ops: OP`,
    # then `Finished loading JIT ops: OP`, with no header of the engine's (a line glued to a progress
    # bar's frame is split from it when read: read.sources)
    Rule("jit.ops", r"(?P<at>\d\d:\d\d:\d\d[,.]\d{1,6}) - [A-Z]+ - flashinfer\.jit: (?P<step>Loading|Finished loading) "
                    r"JIT ops: (?P<key>\S+)", "JIT ops: ",
         fields={"at": to_day_seconds, "step": _jit_step},
         examples=(
             Example("2025-05-02 16:15:03,610 - INFO - flashinfer.jit: Loading JIT ops: batch_prefill_with_kv_cache_"
                     "dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_posenc_0_"
                     "use_swa_False_use_logits_cap_False_f16qk_False",
                     {"at": 58503.61, "step": "begin"}),
             Example("2025-05-02 16:15:35,723 - INFO - flashinfer.jit: Finished loading JIT ops: batch_prefill_with_kv_"
                     "cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_"
                     "posenc_0_use_swa_False_use_logits_cap_False_f16qk_False",
                     {"at": 58535.723, "step": "end"}),
         )),
    Rule("progress.cuda_graph",
         r"(?P<desc>Capturing batches|Capturing num tokens|Capturing prefill shape|Compiling num tokens)"
         r"(?: \([^)]{0,200}\))?:\s+(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)",
         ("Capturing ", "Compiling num tokens"), fields={"pct": to_int, "n": to_int, "total": to_int},
         examples=(Example("Capturing batches (bs=24 avail_mem=4.00 GB):  14%|█▍        | 1/7 [00:02<00:17, "
                           "2.96s/it]",
                           {"desc": "Capturing batches", "pct": 14, "n": 1, "total": 7}),)),
    Rule("progress.weights",
         r"(?P<desc>Loading [\w ]{0,60}checkpoint shards|Multi-thread loading[\w ]{0,60}shards"
         r"|Loading safetensors using [\w ]{1,60})"
         r":\s+(?P<pct>\d+)% Completed \| (?P<n>\d+)/(?P<total>\d+) \[(?P<bar_elapsed>[\d:]+)",
         ("shards", "Loading safetensors using"), fields={"pct": to_int, "n": to_int, "total": to_int},
         evidence=0,
         examples=(Example("Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:00<00:02,  "
                           "1.08it/s]",
                           {"pct": 25, "n": 1, "total": 4}),)),
    Rule("progress.download", r"Fetching (?P<total>\d+) files:\s+(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/",
         "Fetching ", fields={"pct": to_int, "n": to_int, "total": to_int}, evidence=0,
         examples=(Example("Fetching 4 files: 100%|██████████| 4/4 [00:00<00:00, 10727.12it/s]",
                           {"pct": 100, "n": 4, "total": 4}),)),
    Rule("progress.jit", r"DeepGEMM warmup:\s+(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)", "DeepGEMM warmup",
         fields={"pct": to_int, "n": to_int, "total": to_int}, evidence=0,
         examples=(Example("DeepGEMM warmup:   0%|          | 11/16384 [00:00<02:29, 109.38it/s]",
                           {"n": 11, "total": 16384}),)),
    Rule("progress.bar", r"^(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+) \[", "%|",
         fields={"pct": to_int, "n": to_int, "total": to_int}, evidence=0,
         examples=(Example("25%|██▌       | 1/4 [00:01<00:03,  1.14s/it]",
                           {"pct": 25, "n": 1, "total": 4}),)),
    # slow things that print no duration of their own
    Rule("jit.begin", r"^(?:Entering DeepGEMM JIT|Try DeepGEMM JIT Compiling|DeepGEMM JIT Compiling|Running FlashInfer autotune)",
         ("DeepGEMM JIT", "FlashInfer autotune"), evidence=0,
         examples=("[2026-11-07 12:07:41 TP0] Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=1152, "
                   "K=4096, num_groups=1 with all Ms. It only takes a little time (typically 1 sec) if you "
                   "have run `python3 -m sglang.compile_deep_gemm`.",
                   "[2026-03-01 10:01:02 TP0] Running FlashInfer autotune with cache: "
                   "/root/.cache/flashinfer/autotune.json")),
    Rule("jit.end", r"^FlashInfer autotune completed", "autotune completed", evidence=0,
         examples=("[2026-03-01 10:02:11 TP0] FlashInfer autotune completed.",)),
    # the scheduler is up
    Rule("scheduler.ready", r"^max_total_num_tokens=(?P<max_total_num_tokens>\d+)", "max_total_num_tokens=",
         fields={"max_total_num_tokens": to_int}, evidence=3,
         examples=(Example("[2025-01-23 19:35:27 TP0] max_total_num_tokens=444500, "
                           "max_prefill_tokens=16384, max_running_requests=2049, context_len=131072",
                           {"max_total_num_tokens": 444500, "context_len": 131072}),)),
    Rule("bench.marker", r"^(?:Warmup \.\.\.|Benchmark \.\.\.|Prefill\. latency: )", ("Warmup ...", "Benchmark ...", "latency: "),
         examples=("Warmup ...",
                   "Prefill. latency: 0.47594 s, throughput:     33.62 token/s")),
    Rule("engine.timings", r"^Engine startup timings \(s\): (?P<timings>.*)$", "Engine startup timings",
         fields={"timings": parse_timings},
         examples=(Example("[2026-11-07 12:18:53] Engine startup timings (s): load_weight=210.02, "
                           "kv_cache_allocation=1.06, scheduler_e2e=895.42, cuda_graph={prefill=527.46, "
                           "decode=0.00}, tokenizer_e2e=899.98",
                           {"timings": {"load_weight": 210.02, "kv_cache_allocation": 1.06, "scheduler_e2e": 895.42,
                                        "cuda_graph": {"prefill": 527.46, "decode": 0.0}, "tokenizer_e2e": 899.98}}),)),
    # HTTP server
    _common.STARTED,
    Rule("http.startup_complete", r"^Application startup complete", "Application startup complete",
         evidence=0,
         examples=("[2025-01-23 19:35:27] INFO:     Application startup complete.",)),
    _common.STARTUP_FAILED,
    Rule("http.running", r"^Uvicorn running on (?P<url>https?://\S+)", "Uvicorn running on", fields={"url": to_url}, evidence=0,
         examples=(Example("[2025-01-23 19:35:27] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press "
                           "CTRL+C to quit)",
                           {"url": "http://0.0.0.0:30000"}),)),
    Rule("http.running", r"^Starting (?:embedded )?Granian HTTP/2 server on (?P<url>\S+)", "Granian", fields={"url": to_url},
         evidence=0,
         examples=(Example("[2026-06-01 10:00:00] Starting embedded Granian HTTP/2 server on 0.0.0.0:30000",
                           {"url": "0.0.0.0:30000"}),)),
    _common.ACCESS,
    _common.SHUTDOWN,
    # a SIGTERM (the operator, Kubernetes) starts a graceful shutdown: the children it stops are no crash
    Rule("http.shutdown", r"^SIGTERM received\. signum=", "SIGTERM received",
         examples=("[2026-12-05 22:47:39] SIGTERM received. signum=None frame=None. Draining requests and "
                   "shutting down...",)),
    Rule("warmup.end", r"^(?:End of (?:\w+ )*warmup|Disaggregation warmup requests completed|Warmup ended)",
         ("warmup", "Warmup"),
         examples=("[2026-09-22 09:24:44] End of disaggregation warmup",
                   "[2026-02-01 10:00:00] Disaggregation warmup requests completed.")),
    # ready
    Rule("ready", r"The server is fired up and ready to roll", "fired up and ready", evidence=10,
         examples=("[2025-01-23 19:35:33] The server is fired up and ready to roll!",)),
    # failures
    Rule("error.warmup", r"^Initialization failed\. warmup error", "warmup error",
         examples=("[2026-07-09 12:36:51] Initialization failed. warmup error: Traceback (most recent call "
                   "last):",)),
    Rule("error.child_exception",
         r"^(?P<process>\w+) hit an exception", "hit an exception",
         examples=(Example("[2026-04-07 13:03:55] Scheduler hit an exception: Traceback (most recent call "
                           "last):",
                           {"process": "Scheduler"}),)),
    Rule("error.traceback", r"^Traceback \(most recent call last\)", "Traceback", evidence=0,
         examples=("Traceback (most recent call last):",)),
    Rule("error.sigquit", r"(?:Received sigquit from a child process|SIGQUIT received\. signum=)",
         ("sigquit", "SIGQUIT"),
         examples=("[2026-04-07 13:03:55] Received sigquit from a child process. It usually means the child "
                   "failed.",
                   "[2026-06-29 14:45:57] SIGQUIT received. signum=None, frame=None. It usually means one "
                   "child failed.")),
    Rule("error.scheduler_dead",
         r"Rank (?P<failed_rank>\d+) scheduler (?:is dead|died during initialization)(?: \(exit code: (?P<exit_code>-?\d+)\))?",
         "scheduler ", fields={"exit_code": to_int},
         examples=("[2025-06-02 14:20:40] Rank 0 scheduler is dead. Please check if there are relevant "
                   "logs.",
                   Example("RuntimeError: Rank 0 scheduler died during initialization (exit code: -3). If "
                           "exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
                           {"failed_rank": "0", "exit_code": -3}))),
    Rule("error.child_died",
         r"(?:^Scheduler or DataParallelController (?P<pid>\d+) terminated with (?P<exit_code>-?\d+)"
         r"|^Subprocess (?P<subprocess>\S+) \(pid=\d+\) crashed with exit code (?P<exit_code2>-?\d+)"
         r"|^Child process unexpectedly failed)",
         ("terminated with", "crashed with exit code", "unexpectedly failed"),
         examples=(Example("[2026-12-05 22:47:40] Subprocess scheduler_0 (pid=2252) crashed with exit code "
                           "-15. Triggering SIGQUIT for cleanup...",
                           {"subprocess": "scheduler_0", "exit_code2": "-15"}),
                   "[2025-03-01 10:00:00] Scheduler or DataParallelController 1234 terminated with -9",
                   "[2025-03-01 10:00:00] Child process unexpectedly failed with exitcode=-9. pid=1234")),
    Rule("error.init_failed", r"Initialization failed\. Please see the error messages above", "Initialization failed",
         examples=("RuntimeError: Initialization failed. Please see the error messages above.",)),
    # 0.1-0.2: the launcher prints each child's init state; a traceback there is the crash
    # ("Initialization failed. controller_init_state: Traceback (most recent call last):")
    Rule("error.init_failed", r"^Initialization failed\. (?P<process>controller|router|model)_init_state: (?:Traceback|\w+Error)",
         "_init_state: ",
         examples=(Example("Initialization failed. controller_init_state: Traceback (most recent call "
                           "last):",
                           {"process": "controller"}),)),
    Rule("error.unbalanced", r"could finish the model loading, but there are other ranks that didn't finish",
         "other ranks that didn't finish",
         examples=("RuntimeError: TP rank 1 could finish the model loading, but there are other ranks that "
                   "didn't finish loading. It is likely due to unexpected failures (e.g., OOM) or a slow "
                   "node.",)),
    Rule("error.watchdog", r"[Ww]atchdog timeout \(", "atchdog timeout",
         examples=("[2025-03-01 10:20:00 TP0] Watchdog timeout (self.watchdog_timeout=300)",
                   "[2026-01-01 10:20:00] Scheduler watchdog timeout (self.watchdog_timeout=300, "
                   "self.soft=False)")),
    Rule("error.health", r"^Health check failed\.", "Health check failed",
         examples=("[2025-10-06 11:30:00] Health check failed. Server couldn't get a response from "
                   "detokenizer for last 20 seconds. tic start time: 11:29:40. last_heartbeat time: "
                   "11:20:02",)),
    Rule("error.killed", r"(?:^|\s)Killed(?:\s+\S|$)", "Killed", evidence=0,
         examples=("Killed",)),
    # a traceback frame in the engine's own code: the same event as any frame, and evidence of the engine
    Rule("error.frame", r'^File "(?P<file>[^"]*/sglang/[^"]+)", line (?P<lineno>\d+), in (?P<func>\S+)', "/sglang/",
         examples=(Example('  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
                           "line 383, in capture",
                           {"file": "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py",
                            "lineno": "383", "func": "capture"}),)),
    *_common.PYTHON_ERRORS,
    # uvicorn cannot bind the port: "ERROR:    [Errno 98] error while attempting to bind on
    # address ('0.0.0.0', 30000): address already in use". Only uvicorn's own line: torch's
    # c10d warns "... failed to bind ... Address already in use" and carries on.
    Rule("error.port_in_use", r"^\[Errno \d+\] error while attempting to bind on address .*: (?P<exc_msg>.+)$",
         "error while attempting to bind", evidence=0,
         examples=(Example("[2025-10-06 10:01:03] ERROR:    [Errno 98] error while attempting to bind on "
                           "address ('0.0.0.0', 30000): address already in use",
                           {"exc_msg": "address already in use"}),)),
    # argparse rejects the command line: "launch_server.py: error: unrecognized arguments: ..."
    # (exit status 2, usually the only line the server prints); any other script's the same way
    Rule("error.usage", r"^(?:launch_server\.py|sglang(?: serve)?): error: (?P<exc_msg>.+)$", ": error: ", evidence=2,
         examples=("launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match "
                   "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill",
                   "sglang serve: error: the following arguments are required: --model-path")),
    Rule("error.usage", r"^(?:[\w.-]+\.py|sglang(?: serve)?): error: (?P<exc_msg>.+)$", ": error: ", evidence=0,
         examples=(Example("bench_one_batch.py: error: unrecognized arguments: --batch 1",
                           {"exc_msg": "unrecognized arguments: --batch 1"}),)),
)

# --- what the rest of firedup needs to know about SGLang -----------------------------------

# The health endpoint (docs/engines/sglang.md, "Health and readiness"): what `wait`, `replay` and the snippets rely on.
_OLD_HEALTH = HealthSemantics(
    endpoint="/health",
    starting="200",
    ready_status=200,
    body="empty",
    dead_statuses=(),
    note="<=0.4.10.post1: /health answers 200 as soon as uvicorn is up; it proves nothing about the engine",
)

# The engine's own start-up figures over HTTP: with --enable-metrics, the scheduler sets
# gauges once it is ready (before uvicorn listens), one per phase of its `Engine startup
# timings` line and one per captured graph; /server_info carries them as `startup_time`
# from 0.5.17 (docs/engines/sglang.md, "Health and readiness"; SGLang's `srt/metrics/collector.py` `emit_startup_time`).
TELEMETRY = StartupTelemetry(
    metrics=(("sglang:startup_time_seconds", "phase", ""),
             ("sglang:startup_cuda_graph_time_seconds", "phase", "cuda_graph.")),
    metrics_path="/metrics",
    metrics_flag="enable_metrics",
    info_path="/server_info",
    info_key="startup_time",
    info_since="0.5.17",
    served_while_starting=True,
    # `load_weight` is the target's and the draft's load together (a real 0.5.x EAGLE run: 541.76 s +
    # 74.58 s = load_weight=616.34)
    log_phases=(("load_weight", "load_weights+draft.load_weights"), ("kv_cache_allocation", "kv_cache")),
    log_timings=True,
)

HEALTH = HealthSemantics(
    endpoint="/health",
    starting="503",
    ready_status=200,
    body="empty",
    before_listen=REFUSED,
    dead_statuses=(),
    ready_endpoint="/ready",
    ready_endpoint_since="0.5.20",
    since="0.4.10.post2",
    note=("connection refused until uvicorn listens, then 503 while starting, 200 once ready; "
          "every body is empty, so `grep ok` never matches; a failed health generation also answers 503"),
    older=(("0.4.10.post1", _OLD_HEALTH),),
    # answered as soon as the port is open, ready or not
    routes=(Route("/health_generate", health_alias=True), Route("/v1/models", "models"),
            Route("/get_model_info", "model_info"), Route("/model_info", "model_info", since="0.5.6"),
            Route("/get_server_info", "server_info", since="0.4.0"),
            Route("/server_info", "server_info", since="0.5.6")),
    # once ready, /health runs a 1-token generation and answers after >= 1 s
    ready_latency=1.0,
    telemetry=TELEMETRY,
)

PROBING = Probing(
    default_port=30000, listens_after="weights are loaded and graphs captured", loud_body=True,
    probe_timeout=5,
    probe_timeout_why="SGLang's /health runs a 1-token generation (>= 1 s) once ready; the k8s default "
                      "of 1 s fails a healthy server",
    crash_markers=("hit an exception", "Received sigquit from a child process", "scheduler is dead",
                   "died during initialization", "Initialization failed", "Application startup failed"),
)

# The per-version readiness table (docs/engines/sglang.md, "Health and readiness"): which route means ready.
READINESS = (
    ReadyProbe(
        route="/health_generate", until="0.4.10.post1", http_is_enough=False,
        pitfall=("/health answers 200 as soon as uvicorn is up, during warm-up too: it proves only that the "
                 "HTTP server runs; /health_generate runs a real 1-token generation (0.4.7-0.4.9 may answer 200 "
                 "even when the scheduler hangs); the log's ready line is the exact signal"),
        probe_seconds=1.0, probe_seconds_why="/health_generate runs a 1-token generation (>= 1 s)", timeout_seconds=5),
    ReadyProbe(
        route="/health", since="0.4.10.post2", until="0.5.19",
        pitfall="",
        probe_seconds=1.0,
        probe_seconds_why=("/health runs a 1-token generation once ready (>= 1 s; the server waits up to "
                           "SGLANG_HEALTH_CHECK_TIMEOUT, 20 s): a 1 s probe timeout flaps"),
        timeout_seconds=5),
    ReadyProbe(
        route="/ready", since="0.5.20",
        pitfall="",
        probe_seconds=0.1, probe_seconds_why="/ready answers at once (/health would run a generation, >= 1 s)",
        timeout_seconds=5),
)

# The engine's own clocks (docs/engines/sglang.md, "The engine's own clocks").
CLOCKS = (
    EngineClock("--watchdog-timeout", "--watchdog-timeout {seconds}", "phase:warmup", 300.0,
                "no forward progress for this long while a batch runs (the warm-up request is one): the scheduler "
                "dumps its state and SIGQUITs the server (exit 137); it is created after model init, so it does not "
                "cover weight load or graph capture", config_key="watchdog_timeout", since="0.3.5"),
    EngineClock("--dist-timeout", "--dist-timeout {seconds}", "longest-phase", 600.0,
                "a collective that waits longer (ranks meeting at init, after weight load, during graph capture) "
                "fails: torch's default is 600 s for NCCL, 1800 s for gloo", config_key="dist_timeout", since="0.4.4"),
    EngineClock("SGLANG_WARMUP_TIMEOUT", "SGLANG_WARMUP_TIMEOUT={seconds} (environment)", "phase:warmup", 600.0,
                "the warm-up request gives up and the server does not become ready", since="0.5.6"),
    EngineClock("router --worker-startup-timeout-secs", "--worker-startup-timeout-secs {seconds} (sglang_router; "
                "--router-worker-startup-timeout-secs with sglang_router.launch_server)", "ready", 1800.0,
                "the router stops waiting for the worker's /health and does not add it", component="router"),
)

# Crash advice naming SGLang's flags, over the engine-neutral firedup.timeline.crash.HINTS.
# Causes whose remedy is a flag of this engine (crash.diagnose_error; `Advice.cause_hints`).
CAUSE_HINTS = (
    ("distributed", _common.CUSTOM_ALL_REDUCE,
     "the custom all-reduce (CUDA IPC between the GPUs of this node) failed: start with "
     "--disable-custom-all-reduce (all-reduce falls back to NCCL), or fix GPU peer-to-peer "
     "(IOMMU/ACS settings, driver)"),
)

HINTS = {
    ("oom", "cuda_graph"): "lower {graph_bs_flag} or --mem-fraction-static{mem_fraction_now} (graph capture needs memory beyond the KV cache)",
    ("oom", "draft.cuda_graph"): "lower {graph_bs_flag} or --mem-fraction-static{mem_fraction_now}, or fewer --speculative-num-steps",
    ("oom", "kv_cache"): "the KV cache does not fit: adjust --mem-fraction-static{mem_fraction_now}, or shard wider (--tp-size)",
    ("oom", "load_weights"): "the weights do not fit: shard wider (--tp-size), use a quantized checkpoint, or free the GPUs",
    ("oom", "warmup"): "the first forward pass ran out of memory: lower --mem-fraction-static{mem_fraction_now} or --chunked-prefill-size",
    ("oom", "*"): "GPU out of memory: lower --mem-fraction-static{mem_fraction_now}, {graph_bs_flag} or the context length",
    ("distributed", "dist_init"): "ranks could not meet: check --dist-init-addr, that every node started, and NCCL_SOCKET_IFNAME / firewalls",
    ("checkpoint_mismatch", "*"): "a tensor of the checkpoint has another shape than the model's: check that --model-path "
                                  "holds one model (its config.json describes these weights; no shard of another model "
                                  "in the folder), and --quantization against the checkpoint",
}


def hint_words(flags: Mapping[str, Any]) -> dict[str, str]:
    """What a hint's placeholders say for this run: the flag names of its version and the
    value it ran with. 0.5.14+ splits the graph batch-size flag per stage, and 0.5.20+ no
    longer accepts the old name at all."""
    per_stage = "cuda_graph_max_bs_decode" in flags or "cuda_graph_backend_decode" in flags
    fraction = flags.get("mem_fraction_static")
    return {
        "graph_bs_flag": "--cuda-graph-max-bs-decode (or --cuda-graph-max-bs-prefill)" if per_stage
        else "--cuda-graph-max-bs",
        "mem_fraction_now": f" (it was {fraction})" if isinstance(fraction, (int, float)) else "",
    }


FORMAT = Format(
    name="sglang",
    title="SGLang",
    versions="0.1-0.5.23",
    description="SGLang (sgl-project/sglang) server and offline-engine logs, 0.1-0.5.23",
    kinds=KINDS,
    parsing=Parsing(
        headers=HEADERS,
        rules=RULES,
        runtime_literals=("Prefill batch", "Decode batch"),
        field_patterns=(
            (rf"avail mem={_GB.replace('(', '(?P<avail_mem_gb>', 1)}", to_float),
            (rf"mem usage={_GB.replace('(', '(?P<mem_usage_gb>', 1)}", to_float),
            (r"available_gpu_mem=(?P<available_gpu_mem_gb>[\d.]+) GB", to_float),
            (r"context_len=(?P<context_len>\d+)", to_int),
            (r"[KV]{1,2} size: (?P<kv_size_gb>[\d.]+) GB", to_float),
        ),
        level_prefix=r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG|TRACE):\s+",
        # What a launch command means for the flags it leaves out (ServerArgs defaults).
        config_defaults={"tp_size": 1, "dp_size": 1, "pp_size": 1, "ep_size": 1, "nnodes": 1,
                         "disable_cuda_graph": False, "enable_torch_compile": False},
    ),
    meaning=Meaning(
        # the HTTP server sends itself a warm-up request once it listens; ready follows it
        after_http_phase="warmup",
        stage_after={"http.running": "warmup", "http.first_request": "warmup"},
        # a speculative run loads and captures a draft model with the same runner, on the same rank
        draft_by_repeat=True,
        draft_model_types=r"(?i)Eagle|NextN|MTP|Draft|DSpark|Medusa|Dflash",
        # the offline Engine logs with "LEVEL file.py:N:"
        offline_headers=frozenset({"engine"}),
        rank_tags_only_when_parallel=True,
        frame_stages=_common.FRAME_STAGES,
        capture_trace=_common.CAPTURE_TRACE,
    ),
    serving=Serving(
        health=HEALTH,
        probing=PROBING,
        readiness=READINESS,
        version_guess=version_guess,
        # the SIGQUIT path: the main process SIGKILLs its tree and itself (docs/engines/sglang.md, "Crashes and exits")
        kills_tree_on=frozenset({"error.killed", "error.sigquit", "error.child_exception", "error.warmup",
                                 "error.watchdog", "error.child_died"}),
        tree_kill_note="SGLang's SIGQUIT path kills its process tree",
    ),
    timeouts=Timeouts(
        clocks=CLOCKS,
        # 0.1-0.3.3 print "Init nccl begin" (renamed in 0.3.4, 2024-10-19) and 0.1-0.2 "[gpu_id=N]":
        # every such release came out in 2024 (checked with pip's client,
        # `pip index versions sglang --uploaded-prior-to`: nothing before 2024-01-01, the first
        # upload 0.1.3 on 2024-01-16, 0.3.4 on 2024-10-19, every 0.1-0.3.3 before 2025). Their
        # vLLM-style lines (custom all-reduce, ...) carry month-day stamps without a year.
        # docs/launch.md: the first timestamped line came 19-27 s after the launch (median 21 s) in ten
        # real SGLang 0.5.16 start-ups on one H200, 16-20 s in five on one H100 (measured by wait --pid;
        # tests/data/realgpu/h100-2026-12-06): imports of torch, CUDA and sglang print no time. With
        # the page cache dropped first (a real 16 GB checkpoint, ../shared/realgpu/kit/RUNBOOK.md step
        # 5; issue 40) the first line came 22-37 s after the launch: the range reaches 37 s, the top a
        # budget allows. A launch line more than 120 s (three cold tops) before it is another start.
        launch_gap=LaunchGap(16.0, 21.0, 37.0, "SGLang's imports print no time: its first timed line comes",
                             warm_high=27.0, plausible=120.0),
    ),
    advice=Advice(
        hints=HINTS,
        cause_hints=CAUSE_HINTS,
        hint_words=hint_words,
        remedies=REMEDIES,
    ),
    dating=Dating(
        release_literals=(("] Init nccl begin.", "2024-01-01", "SGLang up to 0.3.3 ('Init nccl begin'), released in 2024"),
                          ("[gpu_id=", "2024-01-01", "SGLang 0.1-0.2 ('[gpu_id=N]' lines), released in 2024")),
    ),
    caches=Caches(
        cache_kinds={
            "deepgemm_jit": "DeepGEMM's JIT-compiled GEMM kernels (~/.cache/deep_gemm; `sglang.compile_deep_gemm` fills it)",
            "flashinfer_autotune": "FlashInfer's autotuned tactics",
            "torch_compile": "torch.compile's compiled graphs (piecewise CUDA graphs, --enable-torch-compile)",
            "kernel_jit": "kernels JIT-compiled on first use (Triton, FlashInfer, sgl-kernel), in the first warm-up request",
        },
        # these lines say the cached work ran, not whether it found its cache: their span says
        cache_lines=(
            CacheLine("deepgemm_jit", "jit.begin", "timed", "DeepGEMM"),
            CacheLine("kernel_jit", "jit.ops", "spans"),
            CacheLine("deepgemm_jit", "progress.jit", "timed"),
            CacheLine("flashinfer_autotune", "jit.begin", "timed", "FlashInfer autotune"),
            CacheLine("torch_compile", "progress.cuda_graph", "timed", "Compiling num tokens"),
        ),
        # the server's own warm-up request prints no line until it is answered (88 s on a fresh H200
        # machine, 1-2 s again: docs/silences-and-caches.md)
        silent_work={"warmup": ("the first warm-up request, in which kernels JIT-compile on first use "
                                "when their caches are cold", "kernel_jit")},
    ),
)

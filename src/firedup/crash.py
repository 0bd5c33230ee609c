"""Why a startup died: a category, the phase it died in, and what usually helps.

The category comes from an ordered table of patterns searched in the fatal error's text
(its exception lines, traceback frames and error lines). The first category that matches
wins, so specific causes (OOM, a busy port) come before generic ones (an assertion).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

CATEGORIES = (
    "kv_cache_too_small", "oom", "port_in_use", "distributed", "hang", "import", "warmup", "config", "assertion",
    "killed",
    "scheduler_died", "unknown",
)

# (category, pattern). Searched in order in the text of the fatal error.
CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (cat, re.compile(pat)) for cat, pat in (
        # The memory left for the KV cache cannot hold one request of the context length: the
        # remedy is the memory share or the context length, not freeing the GPU.
        ("kv_cache_too_small", r"KV cache is needed, which is larger than the available KV cache memory"
                               r"|No available memory for the cache blocks"),
        ("oom", r"(?i)out of memory|OutOfMemoryError|Not enough memory|\bOOM\b|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory"
                r"|KV cache (?:memory|blocks?)[^.]*(?:too small|not enough|insufficient)"
                r"|Free memory on device[^)]*\) on startup is less than"),
        ("port_in_use", r"(?i)address already in use|port \S+ is (?:already )?in use|is already in use|errno 98"),
        ("distributed", r"NCCL|nccl|[Gg]loo|TCPStore|DistBackendError|DistStoreError|c10d|rendezvous|ProcessGroup"
                        r"|init_process_group|dist_init_addr|torch\.distributed|NIXL|UCX|Mooncake|RDMA"),
        ("hang", r"Health check failed|couldn't get a response from detokenizer|[Ww]atchdog timeout"),
        ("import", r"ImportError|ModuleNotFoundError|No module named|undefined symbol|cannot import name"),
        ("warmup", r"warmup error|Initialization failed\. warmup"),
        ("config", r"check_server_args|server_args\.py|unrecognized arguments|invalid choice|is not supported"
                   r"|not compatible|incompatible|requires? (?:SM|sm|compute capability)|ValueError"
                   r"|NotImplementedError|argument --|usage: "),
        ("assertion", r"AssertionError"),
        ("killed", r"exit code: -9|SIGKILL|(?:^|\s)Killed(?:\s|$)|signal 9|exit code 137|status=9/KILL"),
        ("scheduler_died", r"scheduler (?:is dead|died)|terminated with|crashed with exit code|Child process unexpectedly failed"),
    )
)

# (category, phase or "*") -> one line of advice. Only well-known remedies belong here.
HINTS: dict[tuple[str, str], str] = {
    ("kv_cache_too_small", "*"): "the KV cache cannot hold one request of the context length: give the KV cache more memory or lower the context length",
    ("oom", "cuda_graph"): "lower --cuda-graph-max-bs or --mem-fraction-static (graph capture needs memory beyond the KV cache)",
    ("oom", "draft.cuda_graph"): "lower --cuda-graph-max-bs or --mem-fraction-static, or fewer --speculative-num-steps",
    ("oom", "kv_cache"): "the KV cache does not fit: adjust --mem-fraction-static, or shard wider (--tp-size)",
    ("oom", "load_weights"): "the weights do not fit: shard wider (--tp-size), use a quantized checkpoint, or free the GPUs",
    ("oom", "warmup"): "the first forward pass ran out of memory: lower --mem-fraction-static or --chunked-prefill-size",
    ("oom", "*"): "GPU out of memory: lower --mem-fraction-static, --cuda-graph-max-bs or the context length",
    ("distributed", "dist_init"): "ranks could not meet: check --dist-init-addr, that every node started, and NCCL_SOCKET_IFNAME / firewalls",
    ("distributed", "*"): "a collective failed: look for the first NCCL/gloo error above; check the network and NCCL_DEBUG=INFO",
    ("port_in_use", "*"): "another process holds the port: stop it or pick another --port",
    ("hang", "*"): "a server process stopped responding: py-spy dump the scheduler and detokenizer, check nvidia-smi for a stuck GPU and the log for NCCL errors",
    ("import", "*"): "a package is missing or mismatched: check the image or environment against the engine's requirements",
    ("warmup", "*"): "the warm-up request failed: check that localhost is reachable without a proxy (NO_PROXY=127.0.0.1,localhost)",
    ("config", "*"): "the engine rejected this combination of flags or hardware: read the message and the flags of this version",
    ("assertion", "*"): "an internal check failed: the message names it; often an unsupported model/flag/hardware combination",
    ("killed", "*"): "killed by a signal, often the OS OOM killer: check `dmesg -T | grep -i oom` and host memory",
    ("scheduler_died", "*"): "a scheduler process died without a Python error: look above for NCCL or driver errors, or an OOM kill",
}


@dataclass(frozen=True)
class Diagnosis:
    category: str
    hint: str | None


def categorise(text: str) -> str:
    for category, pattern in CATEGORY_RULES:
        if pattern.search(text):
            return category
    return "unknown"


def hint_for(category: str, phase: str | None, engine_hints: Mapping[tuple[str, str], str] | None = None) -> str | None:
    """Advice for a category in a phase; an engine's own advice (its flag names) comes first."""
    for table in (engine_hints or {}, HINTS):
        hint = table.get((category, phase or "")) or table.get((category, "*"))
        if hint:
            return hint
    return None


def diagnose(text: str, phase: str | None, engine_hints: Mapping[tuple[str, str], str] | None = None) -> Diagnosis:
    category = categorise(text)
    return Diagnosis(category, hint_for(category, phase, engine_hints))

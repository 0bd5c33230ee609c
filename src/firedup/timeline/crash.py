"""Why a startup died: a category, the phase it died in, and what usually helps.

The category comes from an ordered table of patterns searched in the fatal error's text,
cause first: the exception's message, then the fatal line, then the traceback. The first
category that matches wins, so specific causes (OOM, a busy port) come before generic ones
(an assertion). What happens after a Python exception (SIGQUIT, the tree killed, "Killed"
in the shell) is its consequence, never its cause: those lines are read only when the
error has no exception at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firedup.formats.base import Format

CATEGORIES = (
    "kv_cache_too_small", "oom", "port_in_use", "checkpoint_mismatch", "distributed", "hang", "import", "warmup", "config", "assertion",
    "killed",
    "scheduler_died", "unknown",
)

# (category, pattern). Searched in order in the text of the fatal error. Patterns stay text
# until a crash needs them (`re` compiles and caches them then): most logs never crash,
# and compiling them all would cost every `firedup parse` a few milliseconds.
CATEGORY_RULES: tuple[tuple[str, str], ...] = tuple(
    (cat, pat) for cat, pat in (
        # 0.5.10+: "Rank 0 scheduler died during initialization (exit code: -6). If exit code is
        # -9 (SIGKILL), a common cause is the OS OOM killer." -- the boilerplate names OOM and
        # SIGKILL whatever the code was, so the code decides before the generic patterns run.
        ("killed", r"died during initialization \(exit code: -9\)"),
        ("scheduler_died", r"died during initialization \(exit code: -?\d+\)"),
        # The memory left for the KV cache cannot hold one request of the context length: the
        # remedy is the memory share or the context length, not freeing the GPU.
        ("kv_cache_too_small", r"KV cache is needed, which is larger than the available KV cache memory"
                               r"|No available memory for the cache blocks"
                               r"|larger than the maximum number of tokens that can be stored in KV cache"),
        ("oom", r"(?i)out of memory|OutOfMemoryError|Not enough memory|\bOOM\b|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory"
                r"|KV cache (?:memory|blocks?)[^.]{0,200}(?:too small|not enough|insufficient)"
                r"|Free memory on device[^)]{0,200}\) on startup is less than"),
        ("port_in_use", r"(?i)address already in use|port \S+ is (?:already )?in use|is already in use|errno 98"),
        # A tensor of the checkpoint of another shape than the model's parameter: PyTorch's
        # copy_ in a weight loader, load_state_dict's message, an engine's own check. Counted
        # only while weights load (`_loading_weights`): the same words in a forward pass are no
        # checkpoint's fault.
        ("checkpoint_mismatch", r"The size of tensor a \([0-9]+\) must match the size of tensor b \([0-9]+\)"
                                r"|size mismatch for \S+: copying a param with shape"
                                r"|param(?:_data)?\.(?:size|shape)\(?\)? == loaded_weight\.(?:size|shape)"
                                r"|Attempted to load weight \(torch\.Size"),
        ("distributed", r"NCCL|nccl|[Gg]loo|TCPStore|DistBackendError|DistStoreError|c10d|rendezvous|ProcessGroup"
                        r"|init_process_group|dist_init_addr|torch\.distributed|NIXL|UCX|Mooncake|RDMA"
                        r"|peer-to-peer access|custom_all_reduce"),
        ("hang", r"Health check failed|couldn't get a response from detokenizer|[Ww]atchdog timeout"),
        ("import", r"ImportError|ModuleNotFoundError|No module named|undefined symbol|cannot import name"),
        ("warmup", r"warmup error|Initialization failed\. warmup"),
        ("config", r"check_server_args|server_args\.py|unrecognized arguments|invalid choice|ambiguous option|is not supported"
                   r"|not compatible|incompatible|requires? (?:SM|sm|compute capability)|ValueError"
                   r"|NotImplementedError|argument --|usage: "),
        ("assertion", r"AssertionError"),
        ("killed", r"exit code: -9|SIGKILL|(?:^|\s)Killed(?:\s|$)|signal 9|exit code 137|status=9/KILL"),
        ("scheduler_died", r"scheduler (?:is dead|died)|terminated with|crashed with exit code|Child process unexpectedly failed"),
    )
)

# (category, phase or "*") -> one line of advice. Only well-known remedies belong here, in
# words that hold for any engine; advice naming an engine's flags is its format's
# (`Format.advice.hints`, consulted first, with `Format.advice.hint_words` filling its placeholders).
HINTS: dict[tuple[str, str], str] = {
    ("kv_cache_too_small", "*"): "the KV cache cannot hold one request of the context length: give the KV cache more memory or lower the context length",
    ("oom", "load_weights"): "the weights do not fit: shard wider, use a quantized checkpoint, or free the GPUs",
    ("oom", "*"): "GPU out of memory: give the engine a smaller share of GPU memory, a shorter context or smaller batches",
    ("distributed", "dist_init"): "ranks could not meet: check the rendezvous address, that every node started, and NCCL_SOCKET_IFNAME / firewalls",
    ("distributed", "*"): "a collective failed: look for the first NCCL/gloo error above; check the network and NCCL_DEBUG=INFO",
    ("port_in_use", "*"): "another process holds the port: stop it or pick another --port",
    ("hang", "*"): "a server process stopped responding: py-spy dump the scheduler and detokenizer, check nvidia-smi for a stuck GPU and the log for NCCL errors",
    ("import", "*"): "a package is missing or mismatched: check the image or environment against the engine's requirements",
    ("warmup", "*"): "the warm-up request failed: check that localhost is reachable without a proxy (NO_PROXY=127.0.0.1,localhost)",
    ("checkpoint_mismatch", "*"): "a tensor of the checkpoint has another shape than the model's: the checkpoint is "
                                  "not the one its config.json describes (a wrong checkpoint for the model, a shard "
                                  "of another model in its folder), or the quantization or parallelism given does not "
                                  "match it",
    ("config", "*"): "the engine rejected this combination of flags or hardware: read the message and the flags of this version",
    ("assertion", "*"): "an internal check failed: the message names it; often an unsupported model/flag/hardware combination",
    ("killed", "*"): "killed by a signal, often the OS OOM killer: check `dmesg -T | grep -i oom` and host memory",
    ("scheduler_died", "*"): "a scheduler process died without a Python error: look above for NCCL or driver errors, or an OOM kill",
}

# Causes whose remedy is better known than their category's: (category, pattern, hint),
# searched in every text of the error before HINTS is consulted.
SPECIFIC_HINTS: tuple[tuple[str, str, str], ...] = tuple(
    (cat, pat, hint) for cat, pat, hint in (
        ("distributed", r"NIXL_ERR|nixl\w*Error|\bUCX\b|ucp_|Mooncake|mooncake",
         "the KV-cache transfer library (NIXL/UCX/Mooncake) failed, not NCCL: check that UCX has the "
         "CUDA transports (ucx_info -d | grep cuda), UCX_TLS, and the RDMA devices of both sides"),
        ("distributed", r"peer-to-peer access|_can_p2p|gpu_p2p_access_check",
         "the custom all-reduce's GPU peer-to-peer test failed (no working P2P between these GPUs): "
         "start with --disable-custom-all-reduce, or fix P2P (IOMMU/ACS settings, driver)"),
        ("distributed", r"/dev/shm|shared memory segment",
         "NCCL could not create its shared memory in /dev/shm: give the container more "
         "(docker run --shm-size=16g, or a memory-backed emptyDir at /dev/shm in Kubernetes)"),
        ("distributed", r"Connection refused|connect to \S+ returned|timed out|Timeout",
         "ranks could not reach each other: check that every node started, --dist-init-addr, "
         "NCCL_SOCKET_IFNAME and firewalls"),
    )
)

# The last line of a Python traceback: "ValueError: ...", "torch.OutOfMemoryError: ...",
# "nixl_cu13._bindings.nixlBackendError: ...", a bare "AssertionError". Recognised by its
# shape whatever rule matched the line (an NCCL or OOM rule may have claimed it first).
EXCEPTION_LINE = r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Interrupt|Exit|Failure|Invalid)(?::.*)?$"


def is_exception_line(text: str) -> bool:
    return re.match(EXCEPTION_LINE, text.strip()) is not None


@dataclass(frozen=True)
class Diagnosis:
    """A crash's category and the hint a user acts on."""

    category: str
    hint: str | None


def categorise(text: str, skip: tuple[str, ...] = ()) -> str:
    for category, pattern in CATEGORY_RULES:
        if category not in skip and re.search(pattern, text):
            return category
    return "unknown"


_WEIGHT_LOADING = r"weight_loader|load_weights|load_state_dict|load_model"


def _loading_weights(phase: str | None, traceback: str) -> bool:
    """The error came while weights loaded: in that phase, or through a weight loader."""
    return (phase or "").removeprefix("draft.") in ("load_weights", "launch", "") \
        or re.search(_WEIGHT_LOADING, traceback) is not None


def hint_for(category: str, phase: str | None, fmt: Format | None = None,
             flags: Mapping[str, Any] | None = None) -> str | None:
    """Advice for a category in a phase; the engine's own advice (its flag names, filled in
    for this run's flags and version) comes first."""
    words: Mapping[str, str] = {}
    if fmt is not None and fmt.advice.hint_words is not None:
        words = fmt.advice.hint_words(flags or {})
    for table in (fmt.advice.hints if fmt is not None else {}, HINTS):
        hint = table.get((category, phase or "")) or table.get((category, "*"))
        if hint:
            return hint.format_map(words)
    return None


def diagnose(text: str, phase: str | None, fmt: Format | None = None,
             flags: Mapping[str, Any] | None = None) -> Diagnosis:
    category = categorise(text)
    return Diagnosis(category, hint_for(category, phase, fmt, flags))


def diagnose_error(message: str, first_line: str, traceback: Sequence[str], aftermath: Sequence[str],
                   phase: str | None, has_exception: bool, warmup: bool = False,
                   fmt: Format | None = None, flags: Mapping[str, Any] | None = None) -> Diagnosis:
    """The category of one fatal error, reading its parts cause first (see the module doc).

    `aftermath` (the error lines that follow) is read only when there is no exception: a
    shell's "Killed" after a Python traceback is the scheduler's SIGQUIT at work.
    """
    texts = [message, first_line, "\n".join(traceback)]
    if not has_exception:
        texts.append("\n".join(aftermath))
    loading = _loading_weights(phase, "\n".join(traceback))
    category = next((c for c in (categorise(t, skip=() if loading else ("checkpoint_mismatch",)) for t in texts)
                     if c != "unknown"), "unknown")
    if warmup and category not in ("oom", "port_in_use", "distributed"):
        category = "warmup"  # the warm-up request failed; its own error is only the symptom
    everything = "\n".join([*texts, *aftermath])
    own = tuple(fmt.advice.cause_hints) if fmt is not None else ()
    specific = next((hint for cat, pattern, hint in (*own, *SPECIFIC_HINTS)
                     if cat == category and re.search(pattern, everything)), None)
    return Diagnosis(category, specific or hint_for(category, phase, fmt, flags))

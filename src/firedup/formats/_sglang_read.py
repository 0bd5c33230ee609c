"""What SGLang's own lines say beyond a rule's groups (`formats.sglang` names these in its rules
and its `Format`): its `Engine startup timings` line, the launch argv a shell echoes, and the
version bounds a run's lines show.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from firedup.core.health import VersionGuess, version_key
from firedup.formats.convert import to_float


def parse_timings(text: str) -> dict[str, Any]:
    """`load_weight=1.2, kv_cache_allocation=0.3, cuda_graph={decode=4.5, ...}, ...` -> dict; a
    number that is not finite or too big (`to_float`) refuses the whole line's timings."""
    out: dict[str, Any] = {}
    # `\b` starts a key at a word's start only, and `[^{}]` stops at the next brace: a long
    # near-miss ("a={a={...", a word of a million letters) costs linear time, not quadratic.
    for key, nested, value in re.findall(r"\b(\w+)=(?:\{([^{}]*)\}|(-?[\d.]+))", text):
        if nested or not value:
            out[key] = {k: to_float(v) for k, v in re.findall(r"\b(\w+)=(-?[\d.]+)", nested)}
        else:
            out[key] = to_float(value)
    return out


_FLAG_ALIASES = {"tp": "tp_size", "tensor_parallel_size": "tp_size", "dp": "dp_size", "data_parallel_size": "dp_size",
                 "pp": "pp_size", "pipeline_parallel_size": "pp_size", "ep": "ep_size",
                 "expert_parallel_size": "ep_size", "model": "model_path"}


# Launch flags that take a value, by the ServerArgs field they set: the ones whose printed
# default in the `server_args=` dump is a number, a string or None, never a bool (the
# `store_true` switches print False). Left without their value ("--model  --disable-cuda-graph",
# a shell echoing `--model  --disable-cuda-graph`) they are unknown, not True; any other bare flag is a switch.
ARGV_VALUE_FLAGS = frozenset({
    "model_path", "tokenizer_path", "served_model_name", "tp_size", "dp_size", "pp_size", "ep_size", "nnodes",
    "node_rank", "dist_init_addr", "host", "port", "cuda_graph_max_bs", "speculative_algorithm",
    "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "quantization", "mem_fraction_static", "attention_backend", "load_format",
    "context_length", "dtype", "kv_cache_dtype", "chunked_prefill_size", "max_running_requests",
})


def _typed(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_argv(text: str) -> dict[str, Any]:
    """`--tp-size 2 --disable-cuda-graph --model-path m` -> {"tp_size": 2, ...}."""
    import shlex

    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    out: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            continue
        name, _, value = token[2:].partition("=")
        key = name.replace("-", "_")
        key = _FLAG_ALIASES.get(key, key)
        if not _:
            if i < len(tokens) and not tokens[i].startswith("--"):
                value = tokens[i]
                i += 1
            else:
                out[key] = None if key in ARGV_VALUE_FLAGS else True
                continue
        out[key] = _typed(value)
    return out


# (marker, bound, version, evidence). Lower bounds are features a version introduced; upper
# bounds are things a later version removed or replaced (docs/engines/sglang.md, "Version markers and release dates").
_MARKERS: tuple[tuple[str, str, str, str], ...] = (
    ("init_parallel", "low", "0.5.21", "'Init parallel begin' replaced 'Init torch distributed' in 0.5.21"),
    ("args_dict", "low", "0.5.19", "server_args is printed as a dict from 0.5.19"),
    ("engine_timings", "low", "0.5.17", "'Engine startup timings' appeared in 0.5.17"),
    ("capture_target", "low", "0.5.14", "'Capture target ... graph' lines appeared in 0.5.14"),
    ("kv_dtype", "low", "0.5.13", "'KV Cache is allocated. dtype:' appeared in 0.5.13"),
    ("elapsed_fields", "low", "0.5.9", "'elapsed=' on load/init lines appeared in 0.5.9"),
    ("skip_server_warmup", "low", "0.4.9", "ServerArgs has skip_server_warmup (0.4.9+)"),
    ("no_skip_server_warmup", "high", "0.4.8", "the complete ServerArgs has no skip_server_warmup (added in 0.4.9)"),
    ("args_repr", "high", "0.5.18", "server_args is a ServerArgs(...) repr (a dict from 0.5.19)"),
    ("init_nccl", "high", "0.3.3", "'Init nccl begin' was renamed in 0.3.4"),
)

_CAPTURE_TARGETS = ("Capture target", "Capture draft decode", "Capture draft verify", "Capture draft extend C")
# The markers an event shows by its kind and message: (marker, test of the kind and the text).
# At most one holds for any event (the kinds differ).
_EVENT_MARKERS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("init_parallel", lambda name, text: name == "dist_init.begin" and text.startswith("Init parallel")),
    ("init_nccl", lambda name, text: name == "dist_init.begin" and text.startswith("Init nccl")),
    ("engine_timings", lambda name, text: name == "engine.timings"),
    ("capture_target", lambda name, text: name.endswith("cuda_graph.begin") and text.startswith(_CAPTURE_TARGETS)),
    ("kv_dtype", lambda name, text: name == "kv_cache.allocated" and "dtype:" in text),
    ("elapsed_fields", lambda name, text: name in ("load_weight.end", "dist_init.end") and "elapsed=" in text),
)


def _args_marker(e: Any, text: str) -> str | None:
    """How a `server_args` event prints the flags: "args_dict" (0.5.19+) or "args_repr"."""
    # the event's field, or the line itself where only that is kept (a history's milestones)
    args = str(e.fields.get("args") or text.partition("server_args=")[2])
    if args.startswith("{"):
        return "args_dict"
    if args.startswith("ServerArgs("):
        return "args_repr"
    return None


def _markers_seen(events: Iterable[Any], config: Mapping[str, Any], config_complete: bool) -> set[str]:
    """The markers of one run's events, and what its flags show of `skip_server_warmup`."""
    seen: set[str] = set()
    for e in events:
        text = getattr(e, "text", "")
        name = getattr(e, "name", "")
        if name == "server_args":
            marker = _args_marker(e, text)
            if marker is not None:
                seen.add(marker)
            continue
        seen.update(key for key, shows in _EVENT_MARKERS if shows(name, text))
    if seen & {"args_repr", "args_dict"}:
        if "skip_server_warmup" in config:
            seen.add("skip_server_warmup")
        elif config_complete and "args_repr" in seen:
            seen.add("no_skip_server_warmup")
    return seen


def version_guess(events: Iterable[Any], config: Mapping[str, Any], config_complete: bool) -> VersionGuess:
    """Version bounds from unambiguous markers of one run (events of firedup.read.engine)."""
    seen = _markers_seen(events, config, config_complete)
    low: str | None = None
    high: str | None = None
    evidence: list[str] = []
    for key, bound, version, why in _MARKERS:
        if key not in seen:
            continue
        if bound == "low" and (low is None or version_key(version) > version_key(low)):
            low = version
            evidence.append(why)
        elif bound == "high" and (high is None or version_key(version) < version_key(high)):
            high = version
            evidence.append(why)
    if low is not None and high is not None and version_key(low) > version_key(high):
        return VersionGuess(None, None, ("contradictory markers: " + "; ".join(evidence),))
    return VersionGuess(low, high, tuple(evidence))

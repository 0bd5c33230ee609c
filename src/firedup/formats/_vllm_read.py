"""What vLLM's own configuration lines say beyond a rule's groups (`formats.vllm` names these in
its rules and its `Format`): its args dump (a Python or JSON repr, enums and all), the engine
config line, and the flags they imply.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from typing import Any

from firedup.core.config import parse_args_repr
from firedup.formats.base import ArgsDump

# Python reprs that are not literals (`<CompilationMode.VLLM_COMPILE: 3>`, an enum whose value is
# a string `<DynamicShapesType.BACKED: 'backed'>`, `<function f at 0x..>`) and JSON literals inside
# Python reprs (`{"use_inductor":true}`), found outside quoted strings.
_REPR_TOKENS = re.compile(
    r"""'(?:[^'\\]|\\.)*(?:'|\\?$)|"(?:[^"\\]|\\.)*(?:"|\\?$)|<\w+(?:\.\w+)+: [^<>]*>|<[^<>'"]*>"""
    r"""|\b(?:true|false|null)\b""")
# A quote left open runs to the end of the text and is taken as one token there (`\\?$`): without
# that, every quote of a line of `\'` pairs scanned to its end (quadratic time).
_JSON_WORDS = {"true": "True", "false": "False", "null": "None"}


def _pythonise(text: str) -> str:
    """A repr vLLM printed, made readable by `ast`: odd reprs become strings, JSON words Python."""
    def swap(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.startswith("<"):
            return repr(token)
        return _JSON_WORDS.get(token, token)

    return _REPR_TOKENS.sub(swap, text)


def _literal(text: str) -> Any:
    """One value as printed in an args or engine-config line."""
    text = text.strip()
    if not text:
        return None
    try:
        return ast.literal_eval(_pythonise(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if text[0] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


_SPLIT_MARKS = re.compile(r"[\\'\"()\[\]{}<>,]")  # the only characters `_split_top_level` acts on


def _split_top_level(text: str) -> list[str]:
    """`a=1, b={'x': 1, 'y': 2}, c=Foo(d=1, e=2)` -> the three `key=value` parts.

    Only the marks (quotes, brackets, commas, backslashes) are visited, found by one regex:
    a character-by-character loop over a 5 kB engine config was half a millisecond a log."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    skip_to = 0  # a backslash in a quote skips the character after it
    for m in _SPLIT_MARKS.finditer(text):
        i = m.start()
        if i < skip_to:
            continue
        ch = text[i]
        if quote:
            if ch == "\\":
                skip_to = i + 2
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    return [p for p in (part.strip() for part in parts) if p]


_CUDAGRAPH_MODES = {0: "NONE", 1: "PIECEWISE", 2: "FULL", (2, 0): "FULL_DECODE_ONLY", (2, 1): "FULL_AND_PIECEWISE"}
_COMPILE_MODES = {0: "NONE", 1: "STOCK_TORCH_COMPILE", 2: "DYNAMO_TRACE_ONCE", 3: "VLLM_COMPILE"}
_ENUM_REPR = re.compile(r"^<\w+\.(?P<name>\w+): .*>$")


def _enum_name(value: Any, table: dict[Any, str]) -> str | None:
    """`<CUDAGraphMode.NONE: 0>`, `'NONE'`, `0`, `[2, 1]` -> the enum member's name."""
    if value is None:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, (list, tuple)):
        value = tuple(value)
    if isinstance(value, (int, tuple)):
        return table.get(value)
    text = str(value).strip()
    m = _ENUM_REPR.match(text)
    if m:
        return m["name"].upper()
    if text.isascii() and text.isdigit() and len(text) < 19:
        return table.get(int(text))
    return text.upper() or None


def _compilation_settings(value: Any) -> dict[str, Any]:
    """The parts of a `compilation_config` that decide what startup does."""
    if isinstance(value, str):
        parsed = _literal(value)
        if isinstance(parsed, str) and "(" in parsed:  # CompilationConfig(level=3, ...)
            parsed, _ = parse_args_repr(_pythonise(parsed))
        value = parsed
    if isinstance(value, int) and not isinstance(value, bool):  # `-O 3` up to 0.8
        return {"compilation_mode": _COMPILE_MODES.get(value)}
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    mode = value.get("mode")
    if mode is None:
        mode = value.get("level")
    name = _enum_name(mode, _COMPILE_MODES)
    if name:
        out["compilation_mode"] = name
    cg = _enum_name(value.get("cudagraph_mode"), _CUDAGRAPH_MODES)
    if cg:
        out["cudagraph_mode"] = cg
    elif value.get("use_cudagraph") is False:  # 0.8-0.11.0 spelling of "no graphs"
        out["cudagraph_mode"] = "NONE"
    sizes = value.get("cudagraph_capture_sizes")
    if isinstance(sizes, list) and sizes:
        out["cuda_graph_max_bs"] = max(int(s) for s in sizes if isinstance(s, int))
    return out


def _optimization_level(value: Any) -> int | None:
    """`-O3` as printed in 0.12+: `3`, `'O3'` or `<OptimizationLevel.O3: 3>`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = re.search(r"(\d{1,9})>?$", str(value)[-16:])  # the tail only: linear whatever its length
    return int(m.group(1)) if m else None


def read_args(text: str) -> ArgsDump:
    """`Namespace(...)` (up to 0.8.5, every flag) or `{...}` (0.9+, only non-default flags)."""
    text = text.strip()
    fields, complete = parse_args_repr(_pythonise(text))
    return ArgsDump(dict(fields), complete, only_non_defaults=text.startswith("{"))


_ENGINE_CONFIG_KEYS = {
    "model": "model", "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size", "data_parallel_size": "data_parallel_size",
    "enforce_eager": "enforce_eager", "load_format": "load_format", "dtype": "dtype",
    "quantization": "quantization", "max_seq_len": "max_model_len", "kv_cache_dtype": "kv_cache_dtype",
    "compilation_config": "compilation_config", "served_model_name": "served_model_name",
}


def engine_config(text: str) -> dict[str, Any]:
    """`(v0.13.0) with config: model='/m', tensor_parallel_size=2, ...` -> the flags it states.
    A new dict each call (nested values are shared: read them, do not change them)."""
    return dict(_engine_config(text))


# A fleet restarts the same deployment over and over: most engine config lines in a folder of
# logs are the same text, and reading one costs most of a millisecond (its compilation config
# through `ast`: a twentieth of a small log's parse).
@lru_cache(maxsize=64)
def _engine_config(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    m = re.match(r"\(v(?P<version>[^)]+)\) with config: (?P<config>.*)$", text, re.DOTALL)
    if m is None:
        return out
    out["version"] = m["version"]
    config = m["config"].rstrip().removesuffix(",").rstrip()  # 0.7's line ends with ", "
    if config.endswith(")") and config.count(")") > config.count("("):
        config = config[:-1]  # V0 up to 0.6 closed its config string: "..., served_model_name=m)"
    for part in _split_top_level(config):
        key, sep, raw = part.partition("=")
        if not sep or key not in _ENGINE_CONFIG_KEYS:
            continue
        value = _literal(raw)
        if key == "load_format" and isinstance(value, str):
            value = value.split(".")[-1].lower()  # LoadFormat.AUTO -> auto
        if key == "compilation_config":  # the resolved settings, not the whole (long) dict
            out.update(_compilation_settings(value))
            continue
        out[_ENGINE_CONFIG_KEYS[key]] = value
    return out


def derive_config(config: dict[str, Any], inferred: dict[str, str]) -> None:
    """vLLM's flags under the engine-neutral names reports group by, typed.

    `disable_cuda_graph` is true when --enforce-eager is set, when the compilation config's
    cudagraph_mode is NONE (the real analogue of SGLang's --disable-cuda-graph), or at -O0
    (0.12+); `tp_size` mirrors tensor_parallel_size so grouping across engines works.
    """
    def put(key: str, value: Any, sources: tuple[str, ...]) -> None:
        if value is None or config.get(key) is not None:
            return
        config[key] = value
        reasons = [inferred[s] for s in sources if s in inferred]
        if reasons:
            inferred[key] = reasons[0]

    if config.get("model") is None and config.get("model_tag") is not None:
        config["model"] = config["model_tag"]
    if config.get("tensor_parallel_size") is None and config.get("world_size") == 1:
        config["tensor_parallel_size"] = 1
        inferred["tensor_parallel_size"] = "the distributed init line says world size 1"
    for source, target in (("model", "model_path"), ("tensor_parallel_size", "tp_size"),
                           ("pipeline_parallel_size", "pp_size"), ("data_parallel_size", "dp_size")):
        put(target, config.get(source), (source,))
    settings = _compilation_settings(config.get("compilation_config"))
    for key, value in settings.items():
        put(key, value, ("compilation_config",))
    if "optimization_level" in config:
        config["optimization_level"] = _optimization_level(config["optimization_level"])
    eager = config.get("enforce_eager")
    level = config.get("optimization_level")
    cg = config.get("cudagraph_mode")
    if eager is True or cg == "NONE" or level == 0:
        put("disable_cuda_graph", True, ("enforce_eager",) if eager is True else ("compilation_config",))
    elif eager is False:
        put("disable_cuda_graph", False, ("enforce_eager",))
    mode = config.get("compilation_mode")
    if eager is True or mode == "NONE" or level == 0:
        put("enable_torch_compile", False, ("enforce_eager",))
    elif mode is not None:
        put("enable_torch_compile", True, ("compilation_config",))


__all__ = ["derive_config", "engine_config", "read_args"]

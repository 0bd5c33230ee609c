"""The flags of a run, read from the args dump the server prints at start.

An args dump such as `server_args=ServerArgs(...)` is a dataclass repr of up to 13 k characters
with nested quotes, lists and dicts, or a dict. Both are Python syntax, so
`ast` reads them; splitting on commas would break on the first nested list. A dump cut
short by a terminal is read up to its last complete field.
"""

from __future__ import annotations

import ast
import re
from typing import Any

# Flags that reports, grouping and budgets talk about; every other field is kept too.
COMMON_FLAGS = (
    "model_path", "tp_size", "dp_size", "pp_size", "ep_size", "disable_cuda_graph", "cuda_graph_max_bs",
    "enable_torch_compile", "speculative_algorithm", "quantization", "mem_fraction_static",
    "attention_backend", "load_format", "nnodes",
)

# What the cut-and-retry reading of a truncated dump may parse in all (characters).
PARSE_BUDGET_CHARS = 2_000_000

# Flags that change how long a startup takes: runs agreeing on all of them are one config
# (`wait`'s history and `check`'s gate compare only runs of the same config).
SAME_CONFIG_FLAGS = ("model_path", "tp_size", "dp_size", "pp_size", "ep_size", "nnodes", "disable_cuda_graph",
                     "cuda_graph_max_bs", "enable_torch_compile", "speculative_algorithm", "quantization",
                     "load_format", "attention_backend")
_FIELD_START = re.compile(r", (?=[A-Za-z_]\w*=)")  # used only to find cut points, never to split values


def _value(node: ast.expr) -> Any:
    """A literal as its Python value; anything else (enums, torch dtypes) as its source text."""
    if type(node) is ast.Constant:  # most flags: what literal_eval returns, without its walk
        return node.value
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ast.unparse(node)


def _from_call(text: str) -> dict[str, Any] | None:
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    body = tree.body
    if isinstance(body, ast.Call):
        return {kw.arg: _value(kw.value) for kw in body.keywords if kw.arg is not None}
    if isinstance(body, ast.Dict):
        out: dict[str, Any] = {}
        for key, value in zip(body.keys, body.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out[key.value] = _value(value)
        return out
    return None


def parse_args_repr(text: str) -> tuple[dict[str, Any], bool]:
    """`ServerArgs(a=1, ...)` or `{'a': 1, ...}` -> (fields, complete).

    `complete` is False when the dump was truncated and only a prefix could be read.
    """
    text = text.strip()
    parsed = _from_call(text)
    if parsed is not None:
        return parsed, True
    closer = "}" if text.startswith("{") else ")"
    # Cut at field boundaries from the end until a prefix parses.
    if closer == ")":
        cuts = [m.start() for m in _FIELD_START.finditer(text)]
    else:
        cuts = [m.start() for m in re.finditer(r", (?='[A-Za-z_]\w*': )", text)]
    # an author's ellipsis in a pasted dump ("ServerArgs(model_path='Qwen/Qwen3-8B', ...)")
    cuts = sorted({*cuts, *(m.start() for m in re.finditer(r", ?(?:\.\.\.|…)", text))})
    # Each try parses a prefix: give up once the tries have parsed PARSE_BUDGET_CHARS, so a
    # megabyte-long garbled dump costs a few parses, not 400 (a real dump is ~13 kB).
    spent = 0
    for cut in reversed(cuts[-400:]):
        spent += cut
        if spent > PARSE_BUDGET_CHARS and spent != cut:
            break
        parsed = _from_call(text[:cut] + closer)
        if parsed is not None:
            return parsed, False
    return {}, False


def derive(fields: dict[str, Any]) -> dict[str, Any]:
    """Common flags that newer versions spell differently, derived from what is stated."""
    out = dict(fields)
    if "tp_size" not in out and "tensor_parallel_size" in out:
        out["tp_size"] = out["tensor_parallel_size"]
    # 0.5.14+ maps the deprecated --disable-cuda-graph onto per-stage backends.
    decode = out.get("cuda_graph_backend_decode")
    if out.get("disable_decode_cuda_graph") is True or decode == "disabled":
        out["disable_cuda_graph"] = True
    elif out.get("disable_cuda_graph") is None and decode is not None:
        out["disable_cuda_graph"] = False
    if out.get("speculative_algorithm") in ("", "None"):
        out["speculative_algorithm"] = None
    return out


def read_server_args(text: str) -> tuple[dict[str, Any], bool]:
    fields, complete = parse_args_repr(text)
    return derive(fields), complete

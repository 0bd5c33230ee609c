"""The flags of a run, read from the args dump the server prints at start.

An args dump such as `server_args=ServerArgs(...)` is a dataclass repr of up to 13 k characters
with nested quotes, lists and dicts, or a dict. Both are Python syntax, so
`ast` reads them; splitting on commas would break on the first nested list. A dump cut
short by a terminal is read up to its last complete field.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from functools import lru_cache
from keyword import iskeyword
from typing import Any, cast

# Flags that reports, grouping and budgets talk about; every other field is kept too.
COMMON_FLAGS = (
    "model_path", "tp_size", "dp_size", "pp_size", "ep_size", "disable_cuda_graph", "cuda_graph_max_bs",
    "enable_torch_compile", "speculative_algorithm", "quantization", "mem_fraction_static",
    "attention_backend", "load_format", "nnodes",
)

# The common flags that count something: a whole number (a table's Int64 column).
WHOLE_NUMBER_FLAGS = ("tp_size", "dp_size", "pp_size", "ep_size", "cuda_graph_max_bs", "nnodes")

# What the cut-and-retry reading of a truncated dump may parse in all (characters).
PARSE_BUDGET_CHARS = 2_000_000

# Flags that change how long a startup takes: runs agreeing on all of them are one config
# (`wait`'s history and `check`'s gate compare only runs of the same config).
SAME_CONFIG_FLAGS = ("model_path", "tp_size", "dp_size", "pp_size", "ep_size", "nnodes", "disable_cuda_graph",
                     "cuda_graph_max_bs", "enable_torch_compile", "speculative_algorithm", "quantization",
                     "load_format", "attention_backend")
ConfigKey = tuple[str, ...]


def config_key(engine: str | None, config: Mapping[str, Any]) -> ConfigKey:
    """The one key of "the same configuration": the engine and every flag of `SAME_CONFIG_FLAGS`
    (each value's repr, so None, False and 0 stay apart). `check`'s history, `wait`'s history,
    twins and the cold/warm split all group by it, so a config is one set of runs everywhere."""
    return (repr(engine), *(repr(config.get(flag)) for flag in SAME_CONFIG_FLAGS))


def config_pairs(key: ConfigKey) -> tuple[tuple[str, str], ...]:
    """A `config_key` as (name, repr) pairs, `engine` first: what describes or compares one."""
    return tuple(zip(("engine", *SAME_CONFIG_FLAGS), key, strict=True))


def describe_config(key: ConfigKey) -> str:
    """`engine=NAME, model_path=m, tp_size=8`: a config key's known values."""
    parts = [f"{flag}={value.strip(chr(39))}" for flag, value in config_pairs(key) if value != "None"]
    return ", ".join(parts) or "no flags known"


def model_known(key: ConfigKey) -> bool:
    """Whether a line names a config key's model: two runs of unknown models are no twins."""
    return key[1 + SAME_CONFIG_FLAGS.index("model_path")] != "None"


_FIELD_START = re.compile(r", (?=[A-Za-z_]\w*=)")  # used only to find cut points, never to split values


def _value(node: ast.expr, text: str) -> Any:
    """A literal as its Python value; anything else (enums, torch dtypes) as its source text:
    the slice of `text` it was parsed from, not `ast.unparse`, whose walk recursed once per level
    of a value (500 minus signs, `a.a.(500 times).b` ended in a RecursionError)."""
    if type(node) is ast.Constant:  # most flags: what literal_eval returns, without its walk
        return node.value
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _source(node, text)


def _source(node: ast.AST, text: str) -> str:
    """What `node` was parsed from (one line: a dump is one line; positions count UTF-8 bytes)."""
    if getattr(node, "lineno", 1) != 1 or getattr(node, "end_lineno", 1) != 1:
        return ast.get_source_segment(text, node) or ""
    data = text.encode("utf-8", "surrogatepass")
    return data[node.col_offset:node.end_col_offset].decode("utf-8", "surrogatepass")  # type: ignore[attr-defined]


def _from_call(text: str) -> dict[str, Any] | None:
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    body = tree.body
    if isinstance(body, ast.Call):
        return {kw.arg: _value(kw.value, text) for kw in body.keywords if kw.arg is not None}
    if isinstance(body, ast.Dict):
        out: dict[str, Any] = {}
        for key, value in zip(body.keys, body.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out[key.value] = _value(value, text)
        return out
    return None


# The fast path: a dump whose every value is a plain literal (most of them: 300 flags of
# strings without escapes, numbers, None/True/False, flat lists). `ast` reads the same text in
# a millisecond (a sixth of a small log's parse); these patterns in a tenth of that. Any value
# outside them (an escape, a nested list, an enum, a cut dump) sends the text to `ast`, so
# both give the same fields (tests/test_config.py checks on every dump of the samples and corpus).
_STR = r"'[^'\\\x00-\x1f\x7f]*'"
_NUM = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?"
_VALUE = (r"(?:'(?P<s>[^'\\\x00-\x1f\x7f]*)'|\"(?P<d>[^\"\\\x00-\x1f\x7f]*)\""
          r"|(?P<i>-?(?:0|[1-9]\d*))(?![.eE\d])|(?P<f>" + _NUM + r")|(?P<c>None|True|False)"
          rf"|(?P<l>\[(?:(?:{_STR}|{_NUM})(?:, (?:{_STR}|{_NUM}))*)?\]|\{{\}}))")
_CALL_HEAD = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\(", re.ASCII)
# a field ends at ", " or at the dump's closing bracket, which ends the text
_CALL_FIELD = re.compile(rf"(?P<key>[A-Za-z_]\w*)={_VALUE}(?:, |\)\Z)", re.ASCII)
_DICT_FIELD = re.compile(rf"'(?P<key>[A-Za-z_]\w*)': {_VALUE}(?:, |\}}\Z)", re.ASCII)
_CONSTANTS: dict[str, Any] = {"None": None, "True": True, "False": False}
_ITEM = re.compile(rf"'(?P<s>[^'\\\x00-\x1f\x7f]*)'|(?P<n>{_NUM})", re.ASCII)


def _flat_list(text: str) -> list[Any] | dict[str, Any]:
    """A flat list of plain strings and numbers (`_VALUE`'s `l`), or `{}`: what `ast.literal_eval`
    gives for it, without parsing Python (a list a dump, a tenth of its fields' time). The
    text matched the list pattern whole, so its items come one after the other; a string's
    quotes hold no quote or backslash."""
    if text == "{}":
        return {}
    out: list[Any] = []
    for m in _ITEM.finditer(text, 1, len(text) - 1):
        number = m["n"]
        if number is None:
            out.append(m["s"])
        else:
            out.append(float(number) if "." in number or "e" in number or "E" in number else int(number))
    return out


_CONVERT: dict[str, Any] = {"s": str, "d": str, "i": int, "f": float, "c": _CONSTANTS.__getitem__,
                            "l": _flat_list}  # a flat list of literals, or {}: short


def _simple_fields(text: str) -> dict[str, Any] | None:
    """The fields of a dump of plain literals only; None when any value is more (then `ast`).

    Every run's dump passes here (300 fields, each its own match), so the loop is lean: the
    matches come from the pattern's scanner, each anchored where the last ended (a search
    could rescan a long line from every position), and the checks that send a dump to `ast`
    (a repeated name, `class=`) are made once on the whole."""
    if text.startswith("{"):
        field, pos = _DICT_FIELD, 1
    else:
        head = _CALL_HEAD.match(text)
        if head is None:
            return None
        field, pos = _CALL_FIELD, head.end()
    # `Pattern.scanner` (undocumented, what `re.Scanner` is built on): `match()` anchored at
    # the end of the last match, None once no field starts there
    out: dict[str, Any] = {}
    count, m = 0, None
    for m in iter(cast(Any, field).scanner(text, pos).match, None):
        count += 1
        kind = m.lastgroup  # the value's group: the last one a field's match closes
        if kind == "c":
            out[m["key"]] = _CONSTANTS[m["c"]]
        elif kind == "s":
            out[m["key"]] = m["s"]
        elif kind is None:
            return None
        else:
            out[m["key"]] = _CONVERT[kind](m[kind])
    if m is None or text[m.end() - 1] == " ":
        return None  # the last field is not the dump's end (a value the patterns do not cover): `ast` decides
    if len(out) != count or any(map(iskeyword, out)):
        return None  # a repeated name, `class=`: `ast` decides
    return out


def parse_args_repr(text: str) -> tuple[dict[str, Any], bool]:
    """`ServerArgs(a=1, ...)` or `{'a': 1, ...}` -> (fields, complete).

    `complete` is False when the dump was truncated and only a prefix could be read.
    The fields are a new dict each call (nested values are shared: read them, do not change them).
    """
    fields, complete = _parse_args_repr(text.strip())
    return dict(fields), complete


# Python reads no integer literal of more digits than this (`sys.get_int_max_str_digits`): one in
# a dump would make `ast` refuse the whole dump from that field on.
_MOST_DIGITS = 4000


def _without_endless_numbers(text: str) -> str:
    """A dump with every run of more than `_MOST_DIGITS` digits written `1e999`: a number no
    flag can hold either way, which `checked_flags` then drops with a note, and the fields
    after it are still read. One pass (`\\d+` resumes after each run): linear; none at all
    where the dump has too few digits in all: counted in one pass over its UTF-8 bytes, whose
    ASCII digits are the text's (ten `str.count`s were a tenth of reading a dump)."""
    if len(text) <= _MOST_DIGITS:
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) - len(raw.translate(None, b"0123456789")) <= _MOST_DIGITS:
        return text
    runs = [m.span() for m in _DIGITS.finditer(text) if m.end() - m.start() > _MOST_DIGITS]
    if not runs:
        return text
    out, at = [], 0
    for start, end in runs:
        out += [text[at:start], "1e999"]
        at = end
    out.append(text[at:])
    return "".join(out)


_DIGITS = re.compile(r"[0-9]+")


# A fleet restarts the same deployment over and over: most dumps in a folder of logs are
# the same text, and `ast` reading one costs about a millisecond (a tenth of a small log's parse).
@lru_cache(maxsize=64)
def _parse_args_repr(text: str) -> tuple[dict[str, Any], bool]:
    text = _without_endless_numbers(text)
    parsed = _simple_fields(text)
    if parsed is None:
        parsed = _from_call(text)
    if parsed is not None:
        return parsed, True
    parsed = _field_by_field(text)
    if parsed is not None:  # whole, but a value nests past what `ast` reads: that value as text
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


_MARKS = re.compile(r"[\\'\"()\[\]{},]")  # the only characters `_top_level_fields` acts on
_CALL_KEY = re.compile(r"\s*(?P<key>[A-Za-z_]\w*)=", re.ASCII)
_DICT_KEY = re.compile(r"\s*(?:'(?P<key>[^'\\]*)'|\"(?P<dkey>[^\"\\]*)\"): ", re.ASCII)


def _top_level_fields(body: str) -> list[str] | None:
    """`a=1, b=[2, 3]` -> its top-level parts, by one walk over the marks (no recursion, no
    backtracking); None when the brackets or quotes do not close."""
    parts: list[str] = []
    depth, quote, start, skip_to = 0, "", 0, 0
    for m in _MARKS.finditer(body):
        i = m.start()
        if i < skip_to:
            continue
        ch = body[i]
        if quote:
            if ch == "\\":
                skip_to = i + 2
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    if depth or quote:
        return None
    parts.append(body[start:])
    return parts


def _field_by_field(text: str) -> dict[str, Any] | None:
    """A whole dump read one field at a time, for when `ast` refuses it whole although its
    brackets close: a value nested past the parser's or Python's recursion limit (500 minus
    signs, `a.a.(500 times).b`) is kept as its text, and the fields after it are still read."""
    head = _CALL_HEAD.match(text)
    if text.startswith("{") and text.endswith("}"):
        body, key_of = text[1:-1], _DICT_KEY
    elif head is not None and text.endswith(")"):
        body, key_of = text[head.end():-1], _CALL_KEY
    else:
        return None
    parts = _top_level_fields(body)
    if parts is None:
        return None
    out: dict[str, Any] = {}
    for part in parts:
        if not part.strip():
            continue
        m = key_of.match(part)
        if m is None:
            return None
        key, raw = m["key"] if m["key"] is not None else m["dkey"], part[m.end():].strip()
        if key in out:
            return None  # a repeated name: no dump of a server, `ast` refused it rightly
        call = f"X(v={raw})"
        try:
            node = ast.parse(call, mode="eval").body
        except (RecursionError, MemoryError):
            out[key] = raw  # nested past Python's limits: its text
            continue
        except (SyntaxError, ValueError) as exc:
            if "nested" not in str(exc) and "too complex" not in str(exc):
                return None  # a value that is not Python: the cut-and-retry reading decides
            out[key] = raw
            continue
        if not isinstance(node, ast.Call) or len(node.keywords) != 1:
            return None
        out[key] = _value(node.keywords[0].value, call)
    return out or None


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


def checked_flags(fields: dict[str, Any]) -> list[str]:
    """Keep in `fields` only the flags every output can hold, and say which were dropped.

    A value with an integer beyond 64 bits or a NaN or infinity in it (`tp_size=10**30`,
    `'x': 1e999`: `core.numbers.value_ok`) is dropped, as is a count flag that is not a whole
    number (`tp_size=1e29`; `2.0` becomes 2). Text that is no valid UTF-8 (a lone surrogate
    written `\\ud800` in the dump) is kept with it escaped (`core.safe.valid_text`), in keys too.
    Returns `key=value` of each flag dropped, for a note on the run.

    Every run's dump passes here (hundreds of flags), nearly always with nothing to change: plain
    values are checked inline, and the text of all of them is searched at once."""
    from firedup.core.numbers import INT64_MAX, INT64_MIN, shown_number, value_ok
    from firedup.core.safe import has_surrogate, valid_text, valid_values

    dropped: list[str] = []
    nested: list[str] = []  # keys of lists, dicts and the like: their text is checked item by item
    # text, flags, None and 64-bit integers (most of a dump) need nothing: left out in one pass
    others = [key for key, value in fields.items() if not ((kind := type(value)) is str or kind is bool or value is None
                                                          or (kind is int and INT64_MIN <= value <= INT64_MAX))]
    for key in others:
        value = fields[key]
        kind = type(value)
        if kind is int:
            ok = INT64_MIN <= value <= INT64_MAX
        elif kind is float:
            ok = math.isfinite(value)
        else:
            ok = value_ok(value)
            nested.append(key)
        if ok and key in WHOLE_NUMBER_FLAGS and isinstance(value, float):
            ok = value.is_integer() and abs(value) <= INT64_MAX
            if ok:
                fields[key] = int(value)
        if not ok:
            del fields[key]
            dropped.append(f"{valid_text(key)}={shown_number(_repr(value), 40)}")
    if not has_surrogate([*fields, *[value for value in fields.values() if type(value) is str]]):
        for key in nested:  # no key to rename, no plain text to escape
            if key in fields and (clean := valid_values(fields[key])) is not fields[key]:
                fields[key] = clean
        return dropped
    for key in list(fields):
        value = fields[key]
        clean = valid_values(value)
        name = valid_text(key)
        if name != key:
            del fields[key]
            fields.setdefault(name, clean)
        elif clean is not value:
            fields[key] = clean
    return dropped


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an int of more digits than Python writes out
        return "an integer of thousands of digits"


def read_server_args(text: str) -> tuple[dict[str, Any], bool]:
    fields, complete = parse_args_repr(text)
    return derive(fields), complete


# --- what differs between two values of one flag --------------------------------------------------

# A nested value longer than this is not read for its parts (its change is shown whole, cut).
NESTED_LIMIT_CHARS = 100_000


def nested_value(value: Any) -> Any:
    """A flag's value with its parts where it has some: a repr such as `CudaGraphConfig(decode=
    PhaseConfig(backend='full', ...))` or `{'a': 1}` as nested dicts (a call's keywords), lists
    and literals; anything else as it is. Only `ast` reads it (no evaluation)."""
    if not isinstance(value, str) or len(value) > NESTED_LIMIT_CHARS:
        return value
    if not (value.startswith(("{", "[")) or _CALL_HEAD.match(value)):
        return value
    try:
        tree = ast.parse(value, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return value
    try:
        return _nested(tree.body, value)
    except RecursionError:
        return value


def _nested(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Call):
        return {kw.arg: _nested(kw.value, text) for kw in node.keywords if kw.arg is not None}
    if isinstance(node, ast.Dict):
        return {(k.value if isinstance(k, ast.Constant) else _source(k, text)) if k is not None else "**":
                _nested(v, text) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_nested(e, text) for e in node.elts]
    return _value(node, text)


def value_changes(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(key path, before, after) for each part of a flag's value that differs: two
    `CudaGraphConfig(decode=PhaseConfig(backend='disabled', max_bs=256, ...), ...)` reprs give
    `[("decode.backend", "disabled", "full"), ("decode.max_bs", 256, 32)]`, not two walls of text.
    A list that differs is one change; a part only one side has is one change, None on the other."""
    a, b = nested_value(a), nested_value(b)
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in b or key not in a:
                out.append((sub, a.get(key), b.get(key)))
            elif a[key] != b[key]:
                out.extend(value_changes(a[key], b[key], sub))
        return out
    return [] if a == b else [(path, a, b)]

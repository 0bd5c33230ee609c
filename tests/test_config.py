"""The args dump reader: its fast path for dumps of plain literals gives what `ast` gives."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import SAMPLE_LOGS, corpus_logs
from firedup.core import config
from firedup.core.config import parse_args_repr

REALGPU = Path(__file__).resolve().parents[2] / "shared" / "realgpu"


def _dumps() -> list[str]:
    """Every args dump printed in the sample, corpus and real-GPU logs (the text after the `=`)."""
    logs = sorted(SAMPLE_LOGS.glob("*.log")) + corpus_logs("sglang") + corpus_logs("vllm") + sorted(REALGPU.glob("*.log"))
    out = []
    for path in logs:
        for line in path.read_text(errors="replace").splitlines():
            at = line.find("server_args=")
            if at >= 0:
                out.append(line[at + len("server_args="):].strip())
    return out


def _same(text: str) -> bool:
    """True when the fast path read `text` (and then gave exactly `ast`'s fields and types)."""
    fast = config._simple_fields(text)
    if fast is None:
        return False
    slow = config._from_call(text)
    assert slow is not None, f"the fast path read what ast cannot: {text[:200]!r}"
    assert list(fast.items()) == list(slow.items())
    assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()]
    return True


def test_the_fast_path_gives_ast_fields_on_every_real_dump() -> None:
    dumps = _dumps()
    if not dumps:
        pytest.skip("no logs with args dumps")
    taken = sum(_same(text) for text in dumps)
    assert taken >= len(dumps) // 2, "the fast path should read most real dumps (else it is dead code)"


_SIMPLE = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.lists(st.one_of(st.integers(-999, 999), st.text(max_size=5)), max_size=5), st.just({}),
)
_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)


@given(fields=st.dictionaries(_NAMES, _SIMPLE, min_size=1, max_size=12))
def test_fast_path_and_ast_agree_on_generated_dumps(fields: dict[str, Any]) -> None:
    call = "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"
    for text in (call, repr(fields)):
        if not _same(text) and config._from_call(text) is not None:  # outside the fast path: ast reads it
            assert parse_args_repr(text) == (config._from_call(text), True)


_LIST_ITEMS = st.lists(st.one_of(st.integers(-10**30, 10**30), st.floats(allow_nan=False), st.text(max_size=6)),
                       max_size=6)


@given(text=_LIST_ITEMS.map(repr))
@example(text="[1e+16, -2, 'a, b', 0.5, 1E-3, -0, 0.0]")
@example(text="[10000000000000000000000000000001, -1e999]")
@example(text="['', ' ', '[1]', 'é☃']")
@example(text="[]")
@example(text="{}")
def test_a_flat_list_is_read_as_ast_reads_it(text: str) -> None:
    # the fast path reads a list value without `ast` (`config._flat_list`): the same items, of the same types
    m = re.fullmatch(config._VALUE, text, re.ASCII)
    if m is None or m.lastgroup != "l":
        return  # not a list the fast path takes (an escape, inf): `ast` reads the dump
    fast, slow = config._flat_list(text), ast.literal_eval(text)
    assert repr(fast) == repr(slow)
    assert [type(x) for x in fast] == [type(x) for x in slow]


@pytest.mark.parametrize("text", [
    "ServerArgs(a='x\\'y', b=1)",        # an escape
    "ServerArgs(a=[[1]], b=1)",          # a nested list
    "ServerArgs(a=1, a=2)",              # a repeated name: a syntax error for ast
    "ServerArgs(class=1)",               # a keyword
    "ServerArgs(a=007)",                 # leading zeros: a syntax error for ast
    "ServerArgs(a=\u0661\u0662)",        # digits of another script
    "ServerArgs(dtype=torch.bfloat16)",  # not a literal
    "ServerArgs(a=1, b='cut",            # cut short
    "ServerArgs(a=1, ",                  # cut right after a field's comma
])
def test_values_outside_the_fast_path_go_to_ast(text: str) -> None:
    assert config._simple_fields(text) is None
    fields, complete = parse_args_repr(text)
    whole = config._from_call(text)
    if whole is not None:  # ast reads it whole: the same fields as before the fast path
        assert (fields, complete) == (whole, True)


def test_a_cut_dump_is_read_up_to_its_last_field() -> None:
    assert parse_args_repr("ServerArgs(a=1, b='x', c=[1, 2") == ({"a": 1, "b": "x"}, False)


def test_each_call_gets_its_own_fields() -> None:
    """The reader caches by text (a fleet's dumps repeat): a caller changing its fields must
    not change the next caller's."""
    first, _ = parse_args_repr("ServerArgs(tp_size=2, model_path='m')")
    first["tp_size"] = 99
    again, _ = parse_args_repr("ServerArgs(tp_size=2, model_path='m')")
    assert again["tp_size"] == 2


# Values nested past what Python's parser or `ast`'s walks take (issue 42, class 5): the value is
# kept as its text, and the fields after it are still read. No reader recursion grows with input.
_DEEP = {
    "minus": lambda n: "-" * n + "1",
    "attribute": lambda n: "a." * n + "b",
    "not": lambda n: "not " * n + "x",
    "sum": lambda n: "x" + "+1" * n,
    "list": lambda n: "[" * n + "]" * n,
    "call": lambda n: "f(" * n + ")" * n,
    "dict": lambda n: "{" * n + "}" * n,
    "parenthesised minus": lambda n: "(-" * n + "1" + ")" * n,
    "lambda": lambda n: "lambda:" * n + "1",
}


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(_DEEP)), depth=st.integers(1, 60_000), form=st.sampled_from(["call", "dict"]))
def test_a_value_of_any_depth_costs_no_other_field(kind: str, depth: int, form: str) -> None:
    value = _DEEP[kind](depth)
    text = (f"ServerArgs(model_path='m', w={value}, tp_size=2)" if form == "call"
            else f"{{'model_path': 'm', 'w': {value}, 'tp_size': 2}}")
    fields, complete = parse_args_repr(text)
    assert complete
    assert fields["model_path"] == "m" and fields["tp_size"] == 2
    assert "w" in fields


@pytest.mark.parametrize("value", ["-" * 500 + "1", "a." * 500 + "b"])
def test_a_deep_value_is_kept_as_its_text(value: str) -> None:
    fields, complete = parse_args_repr(f"ServerArgs(a=1, w={value}, b='x')")
    assert (fields, complete) == ({"a": 1, "w": value, "b": "x"}, True)

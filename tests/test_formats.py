"""The rule tables: every regex works in Python `re` and in polars (Rust regex), the registry
finds engines, and sniffing picks the right one."""

from __future__ import annotations

import re

import polars as pl
import pytest

from firedup.formats import all_formats, get_format, sniff


def _patterns() -> list[tuple[str, str]]:
    out = []
    for fmt in all_formats().values():
        out += [(f"{fmt.name}:header:{h.name}", h.pattern) for h in fmt.headers]
        out += [(f"{fmt.name}:rule:{r.name}", r.pattern) for r in fmt.rules]
        out += [(f"{fmt.name}:field:{p}", p) for p, _ in fmt.field_patterns]
    return out


@pytest.mark.parametrize(("where", "pattern"), _patterns(), ids=[w for w, _ in _patterns()])
def test_every_regex_compiles_in_python_and_rust(where: str, pattern: str) -> None:
    re.compile(pattern)
    # polars raises ComputeError on syntax Rust's regex crate does not accept
    frame = pl.DataFrame({"line": ["x"]})
    frame.select(pl.col("line").str.contains(pattern))


def test_registry_finds_sglang_and_rejects_unknown_names() -> None:
    assert get_format("sglang").name == "sglang"
    with pytest.raises(KeyError, match="known: "):
        get_format("tgi-does-not-exist")


def test_sniff_picks_sglang_from_its_ready_line() -> None:
    sample = "[2025-01-01 00:00:00] The server is fired up and ready to roll!\n"
    assert sniff(sample).name == "sglang"


def test_sglang_value_flags_are_the_ones_the_server_args_dump_prints_without_a_bool() -> None:
    # the table must agree with what SGLang prints: a field printed as True/False is a switch
    from firedup.formats.sglang import ARGV_VALUE_FLAGS
    from firedup.synth._serverargs import server_args_0512, server_args_0523

    dumps = (dict(server_args_0512({})), dict(server_args_0523({})))
    assert set(dumps[0]) | set(dumps[1]) >= ARGV_VALUE_FLAGS  # cuda_graph_max_bs is gone in 0.5.23
    assert not [name for fields in dumps for name in ARGV_VALUE_FLAGS if isinstance(fields.get(name), bool)]

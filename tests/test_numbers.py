"""firedup.core.numbers: a number read from a log is finite and of a size firedup can hold, else
it is dropped where it is read, with a note on its run; no output then writes an invalid value.

The property tests put random floats (infinities and NaN among them) and integers of up to 600
digits in every numeric field of a log line, in flags and in dates, and check what each output
makes of them: one ready run, phases between 0 and `MAX_MEASURE`, strict JSON, OTLP nanos that
are unsigned 64-bit.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLE_LOGS
from firedup.core.config import checked_flags, read_server_args
from firedup.core.numbers import INT64_MAX, MAX_MEASURE, measure_ok, value_ok
from firedup.timeline.pipeline import parse_paths, write_contract_json

SGLANG = (SAMPLE_LOGS / "small-tp1.log").read_text(encoding="utf-8")
VLLM = (SAMPLE_LOGS / "vllm-warm-start.log").read_text(encoding="utf-8")
VLLM_ARGS = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"

# every numeric field of a line the timeline reads: (log, regex whose group 1 is the number)
SITES = [
    (SGLANG, r"Init torch distributed ends\. elapsed=([\d.]+) s"),
    (SGLANG, r"Load weight end\. elapsed=([\d.]+) s"),
    (SGLANG, r"Load weight begin\. avail mem=([\d.]+) GB"),
    (SGLANG, r"#tokens: (\d+)"),
    (SGLANG, r"Capture cuda graph end\. Time elapsed: ([\d.]+) s"),
    (SGLANG, r"max_total_num_tokens=(\d+)"),
    (SGLANG, r"available_gpu_mem=([\d.]+) GB"),
    (SGLANG, r"Uvicorn running on http://127\.0\.0\.1:(\d+)"),
    (SGLANG, r"\btp_size=(\d+)"),
    (SGLANG, r", port=(\d+)"),
    (SGLANG, r"mem_fraction_static=([\d.]+)"),
    (VLLM, r"Loading weights took ([\d.]+) seconds"),
    (VLLM, r"Model loading took ([\d.]+) GiB"),
    (VLLM, r"GiB memory and ([\d.]+) seconds"),
    (VLLM, r"Dynamo bytecode transform time: ([\d.]+) s"),
    (VLLM, r"torch\.compile takes ([\d.]+) s in total"),
    (VLLM, r"Available KV cache memory: ([\d.]+) GiB"),
    (VLLM, r"GPU KV cache size: ([\d,]+) tokens"),
    (VLLM, r"Graph capturing finished in (\d+) secs"),
    (VLLM, r"warmup model\) took ([\d.]+) seconds"),
    (VLLM, r"world_size=(\d+) rank=0"),
    (VLLM, r"Starting vLLM API server 0 on http://0\.0\.0\.0:(\d+)"),
]


def _with(log: str, regex: str, value: str) -> str:
    m = re.search(regex, log)
    assert m is not None, regex
    return log[:m.start(1)] + value + log[m.end(1):]


def _strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} in JSON")

    return json.loads(text, parse_constant=refuse)


def _parsed(path: Path) -> dict[str, Any]:
    """`parse --json` of one log as the CLI writes it, read back strictly."""
    import io

    result = parse_paths([str(path)])
    out = io.StringIO()
    write_contract_json(result, out)
    return dict(_strict(out.getvalue()))


def _all_numbers_fit(value: Any) -> bool:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return abs(value) <= INT64_MAX
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_all_numbers_fit(v) for v in value.values())
    if isinstance(value, list):
        return all(_all_numbers_fit(v) for v in value)
    return True


def test_measures_and_flag_values_hold_only_finite_numbers_that_fit() -> None:
    assert measure_ok(4.52) and measure_ok(0) and measure_ok(MAX_MEASURE) and measure_ok(2**63 - 1)
    assert not measure_ok(math.inf) and not measure_ok(math.nan) and not measure_ok(MAX_MEASURE * 10)
    assert not measure_ok(2**63) and not measure_ok(-(2**63) - 1)
    assert value_ok({"a": [1, 2.5, "x", None, True]}) and value_ok(1e300)
    assert not value_ok([1, math.inf]) and not value_ok({"a": {"b": 10**30}}) and not value_ok(math.nan)


def test_400_nines_are_no_phase_but_a_note_naming_the_line(tmp_path: Path) -> None:
    """`elapsed=9…9 s` was `inf`: parse, timeline and runs ended in tracebacks, --json wrote Infinity."""
    path = tmp_path / "inf.log"
    path.write_text(_with(SGLANG, r"Load weight end\. elapsed=([\d.]+) s", "9" * 400))
    (run,) = _parsed(path)["runs"]
    assert run["outcome"] == "ready"
    loads = [p for p in run["phases"] if p["name"] == "load_weights" and p["scope"] == "run"]
    assert loads and all(p["source"] == "timestamps" and p["seconds"] < 10 for p in loads)  # from the stamps
    line = SGLANG[:SGLANG.index("Load weight end")].count("\n") + 1
    [note] = [w for w in run["warnings"] if "ignored" in w]
    assert f"line {line}: elapsed_s=999999999999…999999999999 (400 characters)" in note


def test_flags_beyond_64_bits_or_not_finite_are_dropped_with_a_note() -> None:
    fields, complete = read_server_args(f"ServerArgs(tp_size=1e29, port={'1' * 30}, seed={'9' * 5000}, "
                                        "x=1e999, dp_size=2.0, ok='y')")
    assert complete  # a number Python will not read no longer cuts the dump short
    dropped = checked_flags(fields)
    assert fields == {"dp_size": 2, "ok": "y"}
    assert [d.split("=")[0] for d in dropped] == ["tp_size", "port", "seed", "x"]


@pytest.mark.parametrize("year", ["9999", "0001", "0000"])
def test_a_date_at_either_end_of_time_keeps_its_time_of_day(tmp_path: Path, year: str) -> None:
    """Year 9999 or 1: an OverflowError ("internal error") and OTLP nanos below zero before."""
    from firedup.tables.export import otlp_json
    from firedup.tables.load import load

    path = tmp_path / "y.log"
    text = re.sub(r"\[2026-06-02 14:2(\d)", lambda m: f"[{year}-12-31 23:5{m.group(1)}", SGLANG)
    path.write_text(text)  # the start-up crosses midnight of 31 December
    (run,) = _parsed(path)["runs"]
    assert run["outcome"] == "ready" and 70 < run["total_seconds"] < 80
    assert any("the date of 46 stamps ignored" in w and f"{year}-12-31" in w for w in run["warnings"])
    trace = otlp_json(load([str(path)]))
    nanos = [int(s[k]) for rs in trace["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
             for k in ("startTimeUnixNano", "endTimeUnixNano")]
    assert nanos and all(0 <= n < 2**64 for n in nanos)


def test_otlp_nanos_are_never_below_zero(tmp_path: Path) -> None:
    """A time-only log from just after midnight: its placeholder day is 1970-01-01, and a phase the
    log reports reaches back before it."""
    from firedup.tables.export import otlp_json
    from firedup.tables.load import load

    path = tmp_path / "midnight.log"
    path.write_text(re.sub(r"\[2026-06-02 14:2(\d):", r"[00:0\1:", SGLANG))
    trace = otlp_json(load([str(path)]))
    nanos = [int(s[k]) for rs in trace["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
             for k in ("startTimeUnixNano", "endTimeUnixNano")]
    assert nanos and min(nanos) >= 0


def test_a_port_in_superscript_digits_is_no_url(tmp_path: Path) -> None:
    """budget, report and plot distribution read the port with int() and raised."""
    from firedup.tables.budget import budgets
    from firedup.tables.load import load

    path = tmp_path / "sup.log"
    path.write_text(SGLANG.replace("127.0.0.1:30000 (Press", "127.0.0.1:³⁰⁰⁰⁰ (Press"))
    (run,) = parse_paths([str(path)]).runs
    assert run.health_url is None and any("url=http://127.0.0.1:³⁰⁰⁰⁰" in w for w in run.warnings)
    assert budgets(load([str(path)])).budgets


# --- property tests: random numbers in every numeric field ------------------------------------------

NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**600), max_value=10**600).map(str),
    st.text(alphabet="0123456789.", min_size=1, max_size=700),
    st.sampled_from(["³⁰⁰⁰⁰", "٣٠", "３０", "1e29", "1e309", "-1e309", "inf", "nan", "0", "1.2.3"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(site=st.sampled_from(SITES), value=NUMBER_TEXT)
def test_any_number_in_any_field_gives_one_ready_run_and_valid_json(tmp_path: Path, site: tuple[str, str],
                                                                   value: str) -> None:
    log, regex = site
    path = tmp_path / "n.log"
    path.write_text(_with(log, regex, value), encoding="utf-8")
    runs = _parsed(path)["runs"]  # strict JSON, or this raises
    assert [r["outcome"] for r in runs] == ["ready"]
    (run,) = runs
    assert all(p["seconds"] is None or 0 <= p["seconds"] <= MAX_MEASURE for p in run["phases"])
    assert _all_numbers_fit(run["config"]) and _all_numbers_fit(run["engine_timings"])
    assert run["total_seconds"] is not None and math.isfinite(run["total_seconds"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flags=st.dictionaries(st.sampled_from(["tensor_parallel_size", "port", "seed", "max_model_len", "knob"]),
                             st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                       st.integers(min_value=-(10**40), max_value=10**40),
                                       st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3)),
                             min_size=1, max_size=5))
def test_any_number_in_a_flag_reaches_every_table_as_a_value_it_holds(tmp_path: Path, flags: dict[str, Any]) -> None:
    from firedup.core.safe import json_text
    from firedup.tables.load import load

    def literal(value: Any) -> str:  # what a Python repr prints for each (inf as 1e999, as `ast` reads it)
        if isinstance(value, float) and not math.isfinite(value):
            return "1e999" if value > 0 else ("-1e999" if value < 0 else "1e999 - 1e999")
        if isinstance(value, list):
            return "[" + ", ".join(literal(v) for v in value) + "]"
        return repr(value)

    extra = ", ".join(f"'{k}': {literal(v)}" for k, v in flags.items())
    path = tmp_path / "f.log"
    path.write_text(VLLM.replace(VLLM_ARGS, VLLM_ARGS[:-1] + ", " + extra + "}"), encoding="utf-8")
    (run,) = _parsed(path)["runs"]
    assert _all_numbers_fit(run["config"])
    runs = load([str(path)])  # polars takes every column (an int beyond 64 bits failed it)
    _strict(json_text(runs.runs.to_dicts()))


def test_json_is_never_written_with_nan_or_infinity() -> None:
    from firedup.core.safe import json_text

    assert _strict(json_text({"a": math.inf, "b": [math.nan, 1.5]})) == {"a": None, "b": [None, 1.5]}


def test_an_out_of_range_date_option_is_a_usage_error() -> None:
    import firedup
    from firedup.errors import UsageError

    with pytest.raises(UsageError, match="1970-2261"):
        firedup.parse([str(SAMPLE_LOGS / "small-tp1.log")], date=date(9999, 12, 31))

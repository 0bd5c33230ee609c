"""`firedup.live.telemetry`: the engine's own start-up figures, read and compared (end to end
against a replayed server: tests/test_wait.py)."""

from __future__ import annotations

import dataclasses

import pytest

from _live import NEW_READY
from firedup.formats.sglang import TELEMETRY
from firedup.live.telemetry import MalformedMetrics, flatten, metrics_page, parse_metrics
from firedup.timeline.pipeline import parse_paths

PAGE = """# HELP sglang:startup_time_seconds Engine startup duration by phase in seconds.
# TYPE sglang:startup_time_seconds gauge
sglang:startup_time_seconds{model_name="m",phase="load_weight",tp_rank="0"} 10.2
sglang:startup_time_seconds{model_name="m",phase="load_weight",tp_rank="1"} 10.5
sglang:startup_time_seconds{model_name="a \\"quoted\\" name",phase="kv_cache_allocation"} 1.02
sglang:startup_time_seconds{phase="scheduler_e2e"} NaN
sglang:startup_time_seconds{phase="tokenizer_e2e"} -1
sglang:startup_cuda_graph_time_seconds{phase="decode"} 8.05
sglang:engine_startup_time{model_name="m"} 0.0
sglang:num_running_reqs{model_name="m"} 3
"""


def test_the_phases_of_a_metrics_page_the_largest_rank_wins_and_junk_is_skipped() -> None:
    assert parse_metrics(PAGE, TELEMETRY) == {"load_weight": 10.5, "kv_cache_allocation": 1.02,
                                              "cuda_graph.decode": 8.05}


def test_a_page_served_from_a_runs_timings_reads_back_the_same() -> None:
    (run,) = parse_paths([str(NEW_READY)]).runs
    assert run.engine_timings
    assert parse_metrics(metrics_page(TELEMETRY, run.engine_timings), TELEMETRY) == flatten(run.engine_timings)
    assert flatten({"a": 1, "b": {"c": 2.5, "d": "x"}, "e": True, "f": float("inf")}) == {"a": 1.0, "b.c": 2.5}


def test_figures_agree_exactly_with_the_logs_line_and_roughly_with_its_phases() -> None:
    from firedup.live.telemetry import Telemetry

    (run,) = parse_paths([str(NEW_READY)]).runs
    same = Telemetry("x", flatten(run.engine_timings or {}))
    agree, disagree = same.compare(run, TELEMETRY)
    assert disagree == [] and agree[0] == "the log's own timings line (10 figures)"
    off = Telemetry("x", {**same.phases, "load_weight": 10.3})  # 0.1 s off the printed 10.20
    agree, disagree = off.compare(run, TELEMETRY)
    assert disagree == ["load_weight 10.30 s here vs 10.20 s in the log's own timings line (another run? a restarted "
                        "server?)"]
    assert "load_weights 10 s" in agree  # within 5 s of the log's own phase
    nothing = dataclasses.replace(TELEMETRY, log_timings=False, log_phases=())
    assert same.compare(run, nothing) == ([], [])


def test_a_model_name_cannot_inject_a_phase_into_a_metrics_page() -> None:
    """A label value holding `}` ended the labels early, and what followed became the value:
    `phase="load_weight",model_name="z} 999 "} 12.5` read as load_weight 999 s."""
    page = "\n".join([
        'sglang:startup_time_seconds{phase="load_weight",model_name="z} 999 "} 12.5',
        'sglang:startup_time_seconds{model_name="a\\",phase=\\"total\\"} 888",phase="total"} 30.0',
        'sglang:startup_time_seconds{phase="kv_cache",model_name="x"} 2.0 1700000000000',
        'sglang:startup_time_seconds{phase="tab\\\\ and \\"quote\\" and \\nnewline",} 4.0',
    ])
    got = parse_metrics(page, TELEMETRY)
    assert got == {"load_weight": 12.5, "total": 30.0, "kv_cache": 2.0, 'tab\\ and "quote" and \nnewline': 4.0}


@pytest.mark.parametrize("line", [
    # issue 45: a raw newline in a label value (a writer that did not escape it) forged the next
    # line, `... {phase="cuda_graph"} 777`, which was read as a sample of its own
    'sglang:startup_time_seconds{phase="cuda_graph",model_name="x\nsglang:startup_time_seconds{phase="cuda_graph"} 777',
    'sglang:startup_time_seconds{phase="warmup"} 3.0 trailing words',
    'sglang:startup_time_seconds{phase="warmup"} 1_000',  # Python reads it, Prometheus does not
    'sglang:startup_time_seconds{phase="warmup\\q"} 3.0',  # no such escape
    'sglang:startup_time_seconds{phase="warmup",phase="load_weight"} 3.0',
    '"} 999',
])
def test_a_malformed_line_makes_the_whole_page_malformed(line: str) -> None:
    page = 'sglang:startup_time_seconds{phase="load_weight"} 10.0\n' + line + "\n"
    with pytest.raises(MalformedMetrics, match="line 2"):
        parse_metrics(page, TELEMETRY)


def test_a_200k_deep_server_info_never_crashes_the_telemetry_thread() -> None:
    """json.loads raised RecursionError in the thread, which died with a traceback on stderr."""
    import threading

    from _lying import lying_server, says
    from firedup.live.telemetry import TelemetryReader

    deep = b"[" * 200_000 + b"]" * 200_000
    crashed: list[BaseException] = []
    old, threading.excepthook = threading.excepthook, lambda args: crashed.append(args.exc_value)  # type: ignore[assignment]
    try:
        with lying_server(says(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(deep), deep))) as port:
            reader = TelemetryReader(f"http://127.0.0.1:{port}/health", TELEMETRY, version="0.5.20",
                                     config={"enable_metrics": False}, attempts=1, retry=0)
            reader.start()
            assert reader.result(wait=30) is None
    finally:
        threading.excepthook = old
    assert not crashed, crashed
    assert flatten({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": 1.0}}}}}}}}}, "t": 2.0}) == {"t": 2.0}


# --- issue 45: every label value firedup writes in Prometheus text is escaped ------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_HOSTILE = st.text(st.sampled_from(['"', "\\", "\n", "}", "{", ",", "=", " ", "#", "\r", "\u2028", "\x1b", "a", "é", "9"])
                   | st.characters(codec="utf-8"), max_size=24)


@settings(max_examples=300, deadline=None)
@given(model=_HOSTILE, phases=st.dictionaries(_HOSTILE.filter(lambda p: "." not in p), st.floats(0, 1e6), max_size=4),
       graphs=st.dictionaries(_HOSTILE.filter(lambda p: "." not in p), st.floats(0, 1e6), max_size=3))
def test_replays_metrics_page_parses_back_the_same_samples_and_no_other(model: str, phases: dict[str, float],
                                                                        graphs: dict[str, float]) -> None:
    """`replay`'s /metrics: whatever the model name and the phase names (a log's text), a strict
    parser (prometheus_client's) reads back exactly the samples written, and so does `wait`'s."""
    from prometheus_client.parser import text_string_to_metric_families

    timings: dict[str, object] = {**phases, "cuda_graph": graphs} if graphs else dict(phases)
    page = metrics_page(TELEMETRY, timings, labels={"model_name": model})
    got = sorted((s.name, tuple(sorted(s.labels.items())), s.value)
                 for f in text_string_to_metric_families(page) for s in f.samples)
    want = sorted([("sglang:startup_time_seconds", tuple(sorted({"model_name": model, "phase": p}.items())), v)
                   for p, v in phases.items()]
                  + [("sglang:startup_cuda_graph_time_seconds", tuple(sorted({"model_name": model, "phase": p}.items())), v)
                     for p, v in graphs.items()])
    assert got == want
    assert parse_metrics(page, TELEMETRY) == flatten(timings)

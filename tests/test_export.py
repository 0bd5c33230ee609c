"""Exports: a strict check of the Chrome Trace Event structure, and the table formats round-trip."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus_logs, sample_truth
from firedup.tables.export import chrome_trace, export
from firedup.tables.load import load
from logmaker import fleet, ready_seconds_by_regex
from tracecheck import no_nan, validate_trace


def test_chrome_trace_file_is_valid(fleet_logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    export(load([str(fleet_logs)]), "chrome-trace", out)
    events = validate_trace(json.loads(out.read_text(), parse_constant=no_nan))
    processes = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert len(processes) == 12  # one per run


def test_trace_figures_match_the_log(fleet_logs: Path) -> None:
    truth = fleet(fleet_logs)
    runs = load([str(fleet_logs / "prod-0.log"), str(fleet_logs / "prod-oom.log")])
    events = validate_trace(chrome_trace(runs))
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    prod = next(pid for pid, name in procs.items() if name.startswith("prod-0.log"))
    oom = next(pid for pid, name in procs.items() if name.startswith("prod-oom.log"))
    # 8 ranks + the run's critical path, each a named thread
    assert sorted(name for (pid, _), name in threads.items() if pid == prod) == sorted(
        ["run (critical path)", *(f"TP{i}" for i in range(8))])
    graph = [e for e in events if e["ph"] == "X" and e["pid"] == prod and e["name"] == "cuda_graph"
             and threads[(prod, e["tid"])] == "TP0"]
    assert len(graph) == 1
    assert graph[0]["dur"] == int(float(truth["prod-0.log"]["cuda_graph"] or 0) * 1_000_000)
    assert graph[0]["args"]["text"].startswith("Capture cuda graph end.")
    line_no = graph[0]["args"]["line"]
    assert (fleet_logs / "prod-0.log").read_text().splitlines()[line_no - 1].endswith(graph[0]["args"]["text"])
    (ready,) = [e for e in events if e["ph"] == "i" and e["pid"] == prod and e["name"] == "ready"]
    assert ready["ts"] == int((ready_seconds_by_regex(fleet_logs / "prod-0.log") or 0) * 1_000_000)
    crashes = [e for e in events if e["ph"] == "i" and e["pid"] == oom and e["name"] == "crash"]
    assert crashes and any(threads[(oom, e["tid"])] == "TP3" for e in crashes)
    # counters: every "avail mem" a line states, per rank
    text = (fleet_logs / "prod-0.log").read_text()
    stated = sorted(float(v) for v in re.findall(r"avail(?: mem|able_gpu_mem)=([\d.]+) GB", text))
    counted = sorted(e["args"]["GB"] for e in events if e["ph"] == "C" and e["pid"] == prod)
    assert counted == stated


def test_overlapping_phases_go_to_another_lane(fleet_logs: Path) -> None:
    runs = load([str(fleet_logs / "prod-0.log")])
    # make TP0's kv_cache overlap load_weights without nesting
    shift = (pl.col("rank") == "TP0") & (pl.col("phase") == "kv_cache")
    phases = runs.phases.with_columns(
        pl.when(shift).then(pl.col("start_offset") - 10).otherwise(pl.col("start_offset")).alias("start_offset"),
        pl.when(shift).then(pl.col("start") - pl.duration(seconds=10)).otherwise(pl.col("start")).alias("start"))
    runs.phases = phases
    events = validate_trace(chrome_trace(runs))
    names = [e["args"]["name"] for e in events if e["name"] == "thread_name"]
    assert "TP0 (2)" in names


@pytest.mark.parametrize("table", ["runs", "phases", "milestones"])
def test_tables_round_trip(fleet_logs: Path, tmp_path: Path, table: str) -> None:
    runs = load([str(fleet_logs)])
    frame: pl.DataFrame = getattr(runs, table)
    export(runs, "parquet", tmp_path / "t.parquet", table)
    assert pl.read_parquet(tmp_path / "t.parquet").equals(frame)
    export(runs, "csv", tmp_path / "t.csv", table)
    assert pl.read_csv(tmp_path / "t.csv", infer_schema_length=0).height == frame.height
    export(runs, "json", tmp_path / "t.json", table)
    rows = json.loads((tmp_path / "t.json").read_text())
    assert len(rows) == frame.height and set(rows[0]) == set(frame.columns)


def test_parquet_to_stdout_is_refused(fleet_logs: Path) -> None:
    with pytest.raises(ValueError, match="binary"):
        export(load([str(fleet_logs / "prod-0.log")]), "parquet", "-")


def test_a_log_that_begins_mid_startup_has_no_negative_times(fleet_logs: Path, tmp_path: Path) -> None:
    lines = (fleet_logs / "prod-1.log").read_text().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if "Capture cuda graph begin" in line) + 1
    (tmp_path / "tail.log").write_text("".join(lines[cut:]))  # the capture's reported 640 s reach back
    events = validate_trace(chrome_trace(load(str(tmp_path / "tail.log"))))
    (proc,) = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert "before the first line" in proc
    graph = [e for e in events if e["ph"] == "X" and e["name"] == "cuda_graph"]
    assert graph and min(e["ts"] for e in graph) == 0


@pytest.mark.skipif(not corpus_logs("sglang"), reason="../shared/corpus is not here")
def test_every_corpus_log_exports_a_valid_trace() -> None:
    paths = [str(p) for p in (*corpus_logs("sglang"), *corpus_logs("vllm"))]
    runs = load(paths)
    events = validate_trace(chrome_trace(runs))
    assert sum(1 for e in events if e["name"] == "process_name") == runs.runs.height


def test_vllm_samples_export_a_valid_trace_with_the_durations_vllm_printed(tmp_path: Path) -> None:
    from conftest import SAMPLE_LOGS

    names = ("vllm-tp2-compiled.log", "vllm-tp2-eager.log")
    out = tmp_path / "vllm.trace.json"
    export(load([str(SAMPLE_LOGS / n) for n in names]), "chrome-trace", out)
    events = validate_trace(json.loads(out.read_text(), parse_constant=no_nan))
    truth = sample_truth()["files"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert len(procs) == 2
    for name in names:
        pid = next(p for p, label in procs.items() if label.startswith(name))
        reported = truth[name]["runs"][0]["reported"]
        run_events = [e for e in events if e["pid"] == pid and e["ph"] == "X"]
        lanes = {e["tid"]: e for e in events if e["pid"] == pid and e["ph"] == "M" and e["name"] == "thread_name"}
        for phase, by_rank in reported.items():
            for rank, seconds in by_rank.items():
                tids = {t for t, e in lanes.items() if e["args"]["name"].split(" (")[0] == rank}
                (event,) = [e for e in run_events if e["name"] == phase and e["tid"] in tids]
                # the figure the log printed rides along; the bar spans the lines (1 s resolution,
                # and load_weights begins at `Starting to load model`, before the model is built)
                assert event["args"]["seconds"] == seconds and event["args"]["source"] == "reported"
                assert -1.0 < event["dur"] / 1e6 - seconds < (3.0 if phase == "load_weights" else 1.0), (name, phase)
        ready = [e for e in events if e["pid"] == pid and e["ph"] == "i" and e["name"] == "ready"]
        assert len(ready) == 1 and abs(ready[0]["ts"] / 1e6 - truth[name]["runs"][0]["ready_offset_s"]) < 1.0


# --- metrics out ------------------------------------------------------------------------------


def test_prometheus_output_parses_as_openmetrics_with_the_engines_names(tmp_path: Path) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from conftest import SAMPLE_LOGS
    from firedup.tables.export import export

    runs = load([str(SAMPLE_LOGS / "prod-tp8-eagle3-01.log"), str(SAMPLE_LOGS / "vllm-tp2-compiled.log"),
                 str(SAMPLE_LOGS / "oom-in-cuda-graph.log")])
    out = tmp_path / "startup.prom"
    export(runs, "prometheus", out)
    text = out.read_text()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    startup = families["startup_time_seconds"]
    assert startup.type == "gauge" and startup.unit == "seconds"
    samples = [(s.labels["engine"], s.labels["phase"], s.value) for s in startup.samples]
    engines = {e for e, _, _ in samples}
    assert engines == {"sglang", "vllm"}
    ready = {row["engine"]: row["ready_seconds"] for row in runs.runs.iter_rows(named=True) if row["ready_seconds"]}
    for engine, seconds in ready.items():
        assert (engine, "e2e", pytest.approx(seconds)) in [(e, p, pytest.approx(v)) for e, p, v in samples]
    phases = {p for _, p, _ in samples}
    assert {"load_weight", "kv_cache_allocation", "e2e"} <= phases  # the engine's own gauge's names
    graphs = families["startup_cuda_graph_time_seconds"]
    assert {s.labels["phase"] for s in graphs.samples} >= {"prefill"}
    # a crashed run is there too, labelled, with no e2e
    crashed = [s for s in startup.samples if s.labels["outcome"] == "crashed"]
    assert crashed and all(s.labels["phase"] != "e2e" for s in crashed)


def test_otlp_json_has_a_span_per_phase_per_rank(tmp_path: Path) -> None:
    import json as _json

    from conftest import SAMPLE_LOGS
    from firedup.tables.export import export

    runs = load([str(SAMPLE_LOGS / "sglang-tp2-cuda-graph.log"), str(SAMPLE_LOGS / "vllm-tp2-eager.log")])
    out = tmp_path / "trace.json"
    export(runs, "otlp-json", out)
    data = _json.loads(out.read_text())
    assert len(data["resourceSpans"]) == len(runs)
    for rs, run in zip(data["resourceSpans"], runs.runs.iter_rows(named=True), strict=True):
        attrs = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
        assert attrs["service.name"] == {"stringValue": run["engine"]}
        spans = rs["scopeSpans"][0]["spans"]
        ids = {s["spanId"] for s in spans}
        assert len(ids) == len(spans)
        (root,) = [s for s in spans if "parentSpanId" not in s]
        assert root["name"] == "startup" and root["status"]["code"] == 1
        for s in spans:
            assert len(s["traceId"]) == 32 and len(s["spanId"]) == 16 and s["traceId"] == root["traceId"]
            assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"])
            assert "parentSpanId" not in s or s["parentSpanId"] in ids
        ranked = runs.phases.filter((pl.col("run_id") == run["run_id"]) & (pl.col("scope") == "rank")
                                    & pl.col("start").is_not_null() & pl.col("end").is_not_null()
                                    & (pl.col("phase") != "unattributed"))
        phase_spans = [s for s in spans if any(a["key"] == "firedup.phase" for a in s["attributes"])]
        assert len(phase_spans) == ranked.height > 0
        ranks = {a["value"]["stringValue"] for s in phase_spans for a in s["attributes"] if a["key"] == "firedup.rank"}
        assert ranks == set(ranked["rank"].to_list())


@functools.cache
def _sample_runs() -> Any:
    from conftest import SAMPLE_LOGS

    return load([str(SAMPLE_LOGS / "prod-tp8-eagle3-01.log"), str(SAMPLE_LOGS / "oom-in-cuda-graph.log")])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.text(st.sampled_from(['"', "\\", "\n", "}", "{", ",", "=", " ", "#", "\r", "\u2028", "\x1b", "a", "é"])
                     | st.characters(codec="utf-8"), max_size=24),
       source=st.text(st.sampled_from(['"', "\\", "}", " ", "#", "\u2028", "a"]), min_size=1, max_size=12))
def test_prometheus_export_of_any_label_parses_back_the_same_samples_and_no_other(model: str, source: str) -> None:
    """Issue 45: every label value of `export --format prometheus` escaped: whatever a log's model
    path or file name holds, the strict OpenMetrics parser reads the samples written, no other."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from firedup.core.safe import visible
    from firedup.tables.export import openmetrics

    runs = _sample_runs()
    frame = runs.runs.with_columns(pl.lit(model).alias("model_path"), pl.lit(f"/logs/{source}").alias("source"))
    text = openmetrics(dataclasses.replace(runs, runs=frame))
    families = list(text_string_to_metric_families(text))
    samples = [s for f in families for s in f.samples]
    plain = openmetrics(runs)  # the same runs with plain labels: the same samples
    assert len(samples) == sum(1 for line in plain.splitlines() if line and not line.startswith("#"))
    assert {s.labels["model"] for s in samples} == {visible(model, one_line=True)}
    assert {s.labels["source"] for s in samples} == {visible(source, one_line=True)}

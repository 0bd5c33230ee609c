"""The incremental engine: header decoding, ranks named in the message, collector clocks."""

from __future__ import annotations

import json
from datetime import date

from firedup.formats import get_format
from firedup.read.engine import Event, scan
from firedup.read.sources import normalise


def _events(lines: list[str], default_date: date | None = None) -> list[Event]:
    logical = [ln for i, raw in enumerate(lines, start=1) for ln in normalise(raw, i)]
    events, _, _ = scan(get_format("vllm"), logical, default_date)
    return [e for e in events if not e.name.startswith("clock.")]


def test_json_header_unescapes_the_message() -> None:
    record = {"asctime": "2026-02-26 14:47:49,000", "levelname": "INFO", "name": "vllm", "processName": "EngineCore",
              "process": 240, "message": "init engine (profile, create kv cache, warmup model) took 41.02 s "
                                         "(compilation: 30.11 s \u2014 language_model: 26.40 s, encoder: 3.71 s)"}
    line = json.dumps(record)  # ensure_ascii: the em dash is written as \u2014
    assert "\\u2014" in line
    (event,) = _events([line])
    assert event.name == "engine.ready" and "\u2014" in event.text
    assert event.fields["elapsed_s"] == 41.02 and event.fields["compile_s"] == 30.11
    assert event.rank == "DP0" and event.ts is not None and event.ts.iso == "2026-02-26T14:47:49.000"


def test_rank_named_in_the_message_only_when_the_line_has_none() -> None:
    world = "INFO 02-12 19:46:44 [parallel_state.py:1203] world_size=2 rank={r} local_rank={r} " \
            "distributed_init_method=tcp://127.0.0.1:50255 backend=nccl"
    events = _events([world.format(r=1), "(EngineCore_DP0 pid=9) " + world.format(r=0)], date(2026, 2, 12))
    assert [(e.name, e.rank) for e in events] == [("dist_init.begin", "TP1"), ("dist_init.begin", "DP0")]


def test_untimed_lines_take_the_collectors_time_on_the_logs_clock() -> None:
    # the collector's clock runs 2 h ahead of the log's (a viewer in local time, a container in UTC)
    events = _events([
        "2026-05-01 22:44:30.000 | (APIServer pid=1) INFO 05-01 20:44:30 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "2026-05-01 22:44:31.000 | (APIServer pid=1) INFO:     Started server process [1]",
        "2026-05-01 22:45:07.250 | (APIServer pid=1) INFO:     127.0.0.1:40000 - \"GET /health HTTP/1.1\" 200 OK",
    ])
    assert [(e.name, e.ts.iso if e.ts else None, e.inherited) for e in events] == [
        ("http.running", "2026-05-01T20:44:30", False),
        ("http.started", "2026-05-01T20:44:31", False),
        ("http.access", "2026-05-01T20:45:07.250", False),
    ]


def test_untimed_lines_without_a_collector_inherit_the_last_time() -> None:
    events = _events(["INFO 05-01 20:44:30 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
                      "INFO:     Application startup complete."], date(2026, 5, 1))
    assert [(e.name, e.ts.iso if e.ts else None, e.inherited) for e in events] == [
        ("http.running", "2026-05-01T20:44:30", False), ("ready", "2026-05-01T20:44:30", True)]


def test_a_first_line_with_only_the_collectors_stamp_is_moved_onto_the_servers_clock() -> None:
    # kubectl stamps in UTC; this server logs local time (2 h ahead) with milliseconds. The
    # glog line is the startup's first; the offset comes from the first line with both
    # stamps (line 4, not line 3, whose own clock has no collector stamp beside it).
    lines = [
        "2026-10-02T14:03:11.482913307Z I1002 14:03:11.482871   212 transfer_engine_impl.cpp:274] Topology discovery complete.",
        "2026-10-02T14:03:12.100000000Z W1002 14:03:12.099000   212 cpp_extension.py:2425] TORCH_CUDA_ARCH_LIST is not set",
        "[2026-10-02 16:03:19.500] Attention backend not specified. Use fa3 backend by default.",
        "2026-10-02T14:03:20.733450196Z [2026-10-02 16:03:20.731] Init torch distributed begin.",
    ]
    logical = [ln for i, raw in enumerate(lines, start=1) for ln in normalise(raw, i)]
    events, _, _ = scan(get_format("sglang"), logical)
    clock = [(e.name, e.line, e.ts.iso if e.ts else None, e.fields) for e in events if e.name.startswith("clock.")]
    # 16:03:20.731 - 14:03:20.733 (the collector's stamp read to the millisecond, as the server prints)
    # = 1:59:59.998, added to 14:03:11.482
    assert clock == [("clock.first", 3, "2026-10-02T16:03:19.500", {}),
                     ("clock.outer_first", 1, "2026-10-02T16:03:11.480", {"offset_line": 4}),
                     ("clock.last", 4, "2026-10-02T16:03:20.731", {})]

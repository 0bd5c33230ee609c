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


# --- a wrapper's clock is not the engine's (issue 42, class 2) --------------------------------------

import datetime as _dt  # noqa: E402
import re as _re  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import SAMPLE_LOGS  # noqa: E402
from firedup.read import batch  # noqa: E402
from firedup.timeline.pipeline import parse_paths  # noqa: E402

_ENGINE_HEADER = _re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]")


def _harnessed(text: str, offset: float, pad: str) -> str:
    """Each line behind a harness's `[stamp] [harness] [INFO] ` whose clock runs `offset` s from
    the engine's (lines with no time of the engine's take the last one the engine wrote)."""
    last = _dt.datetime(2026, 6, 2, 14, 21, 10)
    out = []
    for line in text.split("\n"):
        if not line:
            continue
        m = _ENGINE_HEADER.search(line)
        if m:
            last = _dt.datetime.fromisoformat(m[1])
        out.append(f"[{last + _dt.timedelta(seconds=offset):%Y-%m-%d %H:%M:%S}] [harness] [INFO] {pad}{line}\n")
    return "".join(out)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.sampled_from([0, 1, 112, -112, 3599, -3599, 86400 * 3]) | st.integers(-7200, 7200),
       pad=st.integers(0, 300))
def test_a_harness_clock_ahead_or_behind_never_decides_a_duration(tmp_path_factory: pytest.TempPathFactory,
                                                                   offset: int, pad: int) -> None:
    """Was "ready 0.0 s" behind a harness stamp 112 s ahead: the engine's bare lines, re-logged
    with only the harness's stamp, were read as the engine's own. A prefix too long to look past
    gives no times, and says so."""
    folder = tmp_path_factory.mktemp("harness")
    path = folder / "wrapped.log"
    path.write_text(_harnessed((SAMPLE_LOGS / "small-tp1.log").read_text(encoding="utf-8"), offset, "x" * pad + " "),
                    encoding="utf-8")
    scanners = ["incremental", "batch"] if batch.available() else ["incremental"]
    results = {s: parse_paths([str(path)], scanner=s) for s in scanners}
    run, = results["incremental"].runs
    assert run.outcome == "ready"
    if pad < 190:  # the engine's header within the characters looked at
        assert (run.first_ts and run.first_ts.iso, run.ready_ts and run.ready_ts.iso, run.total_seconds) == \
            ("2026-06-02T14:21:10", "2026-06-02T14:22:24", 74.0)
        assert not any("stepped back" in w for w in run.warnings)
    elif pad > 260:
        assert any("behind a prefix longer than" in w for w in run.warnings), run.warnings
    contracts = [r.as_contract()["runs"] for r in results.values()]
    assert all(c == contracts[0] for c in contracts)


def test_a_prefix_too_long_to_look_past_is_a_note(tmp_path: _Path) -> None:
    """A 300-character wrapper: a ready run with no times and no note."""
    text = (SAMPLE_LOGS / "small-tp1.log").read_text(encoding="utf-8")
    path = tmp_path / "long.log"
    path.write_text("".join("W" * 300 + " " + line + "\n" for line in text.split("\n") if line), encoding="utf-8")
    run, = parse_paths([str(path)]).runs
    assert run.first_ts is None
    assert any("behind a prefix longer than the 256 characters" in w for w in run.warnings), run.warnings


# --- `Scanner.feed`'s `found`: the rules of a raw line's literals, for its normalised lines ---
_SAMPLE_LINES = {name: [line for path in sorted(SAMPLE_LOGS.glob(f"{name}-*.log"))
                        for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
                 for name in ("sglang", "vllm")}
# what `normalise` strips, joins across or splits on: a collector's stamp, a process tag,
# colour (inside a literal too), NUL bytes, a redraw
_PREFIXES = ("", "2026-02-12T19:46:44.123456789Z ", "(APIServer pid=1) ", "\x1b[1;36m(EngineCore_DP0 pid=9)\x1b[0;0m ",
             "web-1  | ", "   ")
_CUTS = ("\x1b[0m", "\x1b[32m", "\x00", "\r", "#033[0m", "")


@st.composite
def _raw_lines(draw: st.DrawFn) -> tuple[str, str]:
    """A format's name and a physical line: a sample line, a piece cut into it (often inside
    one of its rule literals), a prefix before it."""
    from firedup.read.engine import _literal_index

    name = draw(st.sampled_from(sorted(_SAMPLE_LINES)))
    line = draw(st.sampled_from(_SAMPLE_LINES[name]))
    literals, _, _ = _literal_index(get_format(name))
    held = [(line.find(lit), lit) for lit in literals if lit in line and len(lit) > 1]
    if held and draw(st.booleans()):
        at, lit = draw(st.sampled_from(held))
        cut = at + draw(st.integers(1, len(lit) - 1))
    else:
        cut = draw(st.integers(0, len(line)))
    line = line[:cut] + draw(st.sampled_from(_CUTS)) + line[cut:]
    return name, draw(st.sampled_from(_PREFIXES)) + line


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_raw_lines(), min_size=1, max_size=6))
def test_rules_found_in_the_raw_line_stand_for_the_messages_own(lines: list[tuple[str, str]]) -> None:
    """The batch engine hands `feed` the rules of the literals its scan found in a marked raw
    line (`found`): the same events as the engine looking for the message's own literals, a
    literal that colour or a NUL split in the raw line and `normalise` joined included."""
    from firedup.read.engine import Scanner

    for name in {name for name, _ in lines}:
        fmt = get_format(name)
        told, looked = Scanner(fmt, date(2026, 2, 12)), Scanner(fmt, date(2026, 2, 12))
        got: list[Event] = []
        want: list[Event] = []
        for number, (_, raw) in enumerate((x for x in lines if x[0] == name), start=1):
            rules = tuple(rule for rule in fmt.parsing.rules if any(lit in raw for lit in rule.literals))
            for line in normalise(raw, number):
                got.extend(told.feed(line, found=(raw, rules)))
                want.extend(looked.feed(line))
        assert [e.key() for e in got] == [e.key() for e in want]

"""All engine knowledge lives in `firedup.formats`: no other module names an engine, and an
engine firedup was never told about joins by registering one `Format`, without any change
to shared code. A small engine defined here ("toyserve") goes through parse, timeline,
crash diagnosis, `wait` and `replay` (a real HTTP server on loopback) to prove it.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from _live import free_port, status_of, wait_for_text
from firedup.core.health import HealthSemantics, Route
from firedup.errors import FiredupError
from firedup.formats import _common, all_formats, register, sniff_format, unregister
from firedup.formats.base import Format, Header, Meaning, Parsing, Probing, Rule, Serving
from firedup.formats.convert import to_float
from firedup.live.options import WaitOptions
from firedup.live.replay import load_script, replay
from firedup.live.wait import Waiter
from firedup.timeline.crash import HINTS
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.stages import stage_changes

SRC = Path(__file__).resolve().parents[1] / "src" / "firedup"
ENGINE_NAMES = re.compile(r"sglang|vllm", re.IGNORECASE)
# Where engines may be named: their formats, and the generator of sample logs of each.
ALLOWED = ("formats", "synth")


def _shared_files() -> list[Path]:
    return sorted(p for p in SRC.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.relative_to(SRC).parts[0] not in ALLOWED)


def test_no_module_outside_the_formats_names_an_engine() -> None:
    """Code, comments, docstrings, help texts and report templates alike."""
    files = _shared_files()
    assert any(p.suffix == ".py" for p in files) and any(p.suffix != ".py" for p in files)  # templates too
    found = [f"{p.relative_to(SRC)}:{n}: {line.strip()}"
             for p in files for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
             if ENGINE_NAMES.search(line)]
    assert found == [], "\n".join(found)


def test_the_scan_sees_engine_names_where_they_belong() -> None:
    """The pattern above does find names: the format modules are full of them."""
    assert ENGINE_NAMES.search((SRC / "formats" / "sglang.py").read_text())
    assert ENGINE_NAMES.search((SRC / "formats" / "vllm.py").read_text())


# --- a third engine, defined here and nowhere else ------------------------------------------

# "[2026-03-01 10:00:00.000] toyserve INFO msg" (bracketed: a bare ISO stamp opening a line
# would be a log collector's, which firedup strips and keeps apart)
_HEADER = r"^\[(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?\] toyserve (?P<level>INFO|ERROR) (?P<msg>.*)$"

TOY = Format(
    name="toyserve",
    title="ToyServe",
    versions="1.0-1.2",
    description="ToyServe (a test-only engine) logs, 1.0-1.2",
    parsing=Parsing(
        headers=(Header("toyserve", _HEADER),),
        rules=(
            Rule("server_args", r"^booting toyserve \S+ with args (?P<args>\{.*\})$", "booting toyserve",
                 starts_run="always"),
            Rule("load_weight.begin", r"^weights: loading", "weights: loading"),
            Rule("load_weight.end", r"^weights: loaded in (?P<elapsed_s>[\d.]+) s", "weights: loaded",
                 fields={"elapsed_s": to_float}),
            Rule("compile.end", r"^compile: done in (?P<elapsed_s>[\d.]+) s", "compile: done", fields={"elapsed_s": to_float}),
            Rule("kv_cache.allocated", r"^cache: (?P<blocks>\d+) blocks", "cache: "),
            Rule("http.running", r"^listening on (?P<url>\S+)", "listening on"),
            Rule("ready", r"^ready to serve", "ready to serve"),
            Rule("error.init_failed", r"^fatal: (?P<exc_msg>.*)$", "fatal: "),
            _common.STARTED,
            _common.ACCESS,
            *_common.PYTHON_ERRORS,
        ),
    ),
    meaning=Meaning(
        milestones=frozenset({"compile.end"}),
        stage_after={"compile.end": "kv_cache"},
        reported_phases={"compile.end": "torch_compile"},
    ),
    serving=Serving(
        health=HealthSemantics(endpoint="/healthz", starting="503", ready_status=200, body="empty",
                               routes=(Route("/v1/models", "models"),)),
        probing=Probing(default_port=9000, listens_after="the weights are loaded", probe_timeout=5,
                        probe_timeout_why="a probe must not hang", crash_markers=("fatal: ",)),
    ),
)

TOY_READY = """\
[2026-03-01 10:00:00.000] toyserve INFO booting toyserve 1.2 with args {'tp_size': 1, 'port': 9000, 'model_path': '/m/toy'}
[2026-03-01 10:00:01.000] toyserve INFO weights: loading
[2026-03-01 10:00:05.000] toyserve INFO weights: loaded in 4.0 s
[2026-03-01 10:00:07.000] toyserve INFO compile: done in 2.0 s
[2026-03-01 10:00:08.000] toyserve INFO cache: 1000 blocks
[2026-03-01 10:00:09.000] toyserve INFO listening on http://127.0.0.1:9000
[2026-03-01 10:00:30.000] toyserve INFO ready to serve
"""

TOY_CRASH = """\
[2026-03-01 11:00:00.000] toyserve INFO booting toyserve 1.2 with args {'tp_size': 2}
[2026-03-01 11:00:01.000] toyserve INFO weights: loading
[2026-03-01 11:00:03.000] toyserve ERROR fatal: CUDA out of memory. Tried to allocate 2.00 GiB
"""


@pytest.fixture
def toy() -> Iterator[Format]:
    """The toy engine, registered for one test (the built-in registry is restored after)."""
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY.name)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_unregistered_engine_is_no_known_engine_not_some_default(tmp_path: Path) -> None:
    log = _write(tmp_path, "toy.log", TOY_READY)
    assert sniff_format(TOY_READY) is None
    for scanner in ("incremental", "batch"):
        result = parse_paths([str(log)], scanner=scanner)
        assert (result.runs, result.errors) == ([], [])  # readable: not an input error
        (report,) = result.sources
        assert (report.engine, report.runs, report.lines["physical"]) == (None, 0, 7)
    with pytest.raises(FiredupError, match=f"^{re.escape(str(log))}: no known engine: none of "
                                           f"{', '.join(sorted(all_formats()))} recognises its first lines"):
        load_script(log)


@pytest.mark.parametrize("scanner", ["incremental", "batch"])
def test_a_registered_engine_parses_into_milestones_phases_and_config(tmp_path: Path, toy: Format,
                                                                      scanner: str) -> None:
    log = _write(tmp_path, "toy.log", TOY_READY)
    assert sniff_format(TOY_READY) is toy
    result = parse_paths([str(log)], scanner=scanner)
    assert result.errors == []
    (run,) = result.runs
    assert (run.engine, run.outcome, run.ready_kind, run.total_seconds) == ("toyserve", "ready", "server", 30.0)
    assert run.config["tp_size"] == 1 and run.config["model_path"] == "/m/toy"
    assert [m.name for m in run.milestones] == ["server_args", "load_weight.begin", "load_weight.end", "compile.end",
                                                "kv_cache.allocated", "http.running", "ready"]
    phases = {p.name: (p.seconds, p.source) for p in run.run_phases()}
    assert phases["load_weights"] == (4.0, "reported")
    assert phases["torch_compile"] == (2.0, "reported")  # the toy's own milestone, reported
    # the neutral default: no warm-up phase of its own, the HTTP server's start runs to ready
    assert phases["http_start"] == (21.0, "timestamps") and "warmup" not in phases  # listening -> ready


def test_a_registered_engine_gets_the_timelines_stages(tmp_path: Path, toy: Format) -> None:
    cut = "".join(TOY_READY.splitlines(keepends=True)[:4])  # stops after the compile line
    (run,) = parse_paths([str(_write(tmp_path, "toy.log", cut))]).runs
    assert run.outcome == "incomplete"
    assert run.stopped_in == "kv_cache"  # the toy's own stage table
    stages = [stage for stage, _ in stage_changes(run, toy)]
    assert stages == ["launch", "load_weights", "kv_cache"]


def test_a_registered_engine_crash_is_diagnosed_with_the_neutral_advice(tmp_path: Path, toy: Format) -> None:
    (run,) = parse_paths([str(_write(tmp_path, "crash.log", TOY_CRASH))]).runs
    assert run.outcome == "crashed" and run.crash is not None
    assert (run.crash.category, run.crash.phase) == ("oom", "load_weights")
    assert run.crash.hint == HINTS[("oom", "load_weights")]
    assert "--" not in run.crash.hint  # no other engine's flags


def test_a_registered_engine_replays_and_is_waited_for_over_real_http(tmp_path: Path, toy: Format) -> None:
    log = _write(tmp_path, "toy.log", TOY_READY)
    script = load_script(log)
    assert script.fmt is toy
    out, port, stop = tmp_path / "live.log", free_port(), threading.Event()
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(
        replay(script, out, speed=5.0, port=port, hold=60, err=io.StringIO(), stop=stop)))
    thread.start()
    try:
        assert status_of(port, "/healthz")[0] is None  # nothing listens before the log says so
        content = wait_for_text(out, "listening on")
        assert f"listening on http://127.0.0.1:{port}" in content  # the served port, not the log's
        assert "ready to serve" not in content
        assert status_of(port, "/healthz")[:2] == (503, b"")  # the toy's health semantics
        assert status_of(port, "/v1/models")[0] == 200  # its routes answer before ready
        waited, err = io.StringIO(), io.StringIO()
        opts = WaitOptions(out, url=f"http://127.0.0.1:{port}/healthz", timeout=60, auto_timeout=False)
        assert Waiter(opts, waited, err, tty=False).run_loop() == 0, err.getvalue()
        assert waited.getvalue().startswith("READY in 30 s by the log's clock"), waited.getvalue()
        assert status_of(port, "/healthz")[:2] == (200, b"")
    finally:
        stop.set()
        thread.join(10)
    assert codes == [0]


def test_a_registered_engine_crash_replays_with_its_exit_status(tmp_path: Path, toy: Format) -> None:
    script = load_script(_write(tmp_path, "crash.log", TOY_CRASH))
    assert script.exit_code == 1  # the toy never kills its process tree
    err = io.StringIO()
    code = replay(script, tmp_path / "live.log", speed=50.0, port=0, hold=0, err=err)
    assert code == 1
    assert "the main process exits with an error: status 1" in err.getvalue()

"""The pasted snippets, run for real: the bash loop against a loopback server that answers like SGLang.

The fake server follows docs/engines/sglang.md, "Health and readiness": the port is closed while the
model loads, then /health answers 503 with an empty body while warming up, then 200 with
an empty body. The naive `curl -s | grep -q ok` loop is run against the same server to
show why the snippet checks the status code.
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS
from firedup.render.snippets import READINESS, snippets_for
from firedup.tables.budget import budgets
from firedup.tables.load import load
from firedup.tables.risk import budget_for

FAKE_SERVER = textwrap.dedent('''
    import sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    port, log, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    def say(text):
        with open(log, "a") as fh:
            fh.write(time.strftime("[%Y-%m-%d %H:%M:%S] ") + text + "\\n")
    say("Load weight begin. avail mem=78.50 GB")
    time.sleep(0.8)  # the port stays closed: connection refused
    if mode == "exit":
        sys.exit(1)
    if mode == "crash-log":
        say("Scheduler hit an exception: Traceback (most recent call last):")
        time.sleep(60)
    up = time.time()
    class Health(BaseHTTPRequestHandler):
        def do_GET(self):
            ready = mode == "ok" and time.time() - up > 0.8
            self.send_response(200 if ready else 503)
            self.send_header("content-length", "0")
            self.end_headers()
        def log_message(self, *args):
            pass
    say("Uvicorn running on http://127.0.0.1:%d (Press CTRL+C to quit)" % port)
    HTTPServer(("127.0.0.1", port), Health).serve_forever()
''')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[object]:
    script = tmp_path / "fake_sglang.py"
    script.write_text(FAKE_SERVER)
    procs: list[subprocess.Popen[bytes]] = []

    def start(mode: str) -> tuple[subprocess.Popen[bytes], int, Path]:
        port = _free_port()
        log = tmp_path / f"server-{mode}.log"
        log.write_text("[2026-01-01 00:00:00] an older run: Scheduler hit an exception\n")  # must be ignored
        proc = subprocess.Popen([sys.executable, str(script), str(port), str(log), mode])
        procs.append(proc)
        return proc, port, log

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _run_loop(tmp_path: Path, pid: int, port: int, log: Path, budget: int) -> subprocess.CompletedProcess[str]:
    b = budget_for([1.0, 1.2, 1.1], 0.01)
    b.engine, b.port, b.budget_seconds = "sglang", port, budget
    script = tmp_path / "wait.sh"
    script.write_text(snippets_for(b)["bash"])
    env = {**os.environ, "SERVER_PID": str(pid), "SERVER_LOG": str(log), "INTERVAL": "0.2",
           "URL": f"http://127.0.0.1:{port}/health", "HTTP_IS_ENOUGH": "1"}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_wait_loop_sees_ready_through_refused_and_503(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, port, log = server("ok")
    out = _run_loop(tmp_path, proc.pid, port, log, budget=30)
    assert out.returncode == 0, out.stderr
    assert "answered 200" in out.stdout
    # the same server, probed the broken way: the body is empty, so grep never matches
    naive = subprocess.run(["bash", "-c", f"curl -s http://127.0.0.1:{port}/health | grep -q ok"], check=False)
    status = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"http://127.0.0.1:{port}/health"],
                            capture_output=True, text=True, check=False)
    assert status.stdout == "200" and naive.returncode == 1


def test_wait_loop_stops_when_the_server_exits(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, port, log = server("exit")
    out = _run_loop(tmp_path, proc.pid, port, log, budget=30)
    assert out.returncode == 3, (out.stdout, out.stderr)
    assert "exited before it was ready" in out.stderr


def test_wait_loop_stops_on_a_crash_in_the_log(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, port, log = server("crash-log")
    started = time.monotonic()
    out = _run_loop(tmp_path, proc.pid, port, log, budget=30)
    assert out.returncode == 3, (out.stdout, out.stderr)
    assert "hit an exception" in out.stderr and "an older run" not in out.stderr
    assert time.monotonic() - started < 20


def test_wait_loop_times_out_on_503(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, port, log = server("never")
    out = _run_loop(tmp_path, proc.pid, port, log, budget=3)
    assert out.returncode == 124, (out.stdout, out.stderr)
    assert "last HTTP status: 503" in out.stderr


def test_kubernetes_and_compose_snippets_parse_and_add_up() -> None:
    yaml = pytest.importorskip("yaml")
    b = budget_for([800.0, 900.0, 1000.0, 950.0, 990.0], 0.01)
    b.engine, b.port = "sglang", 30000
    assert b.budget_seconds is not None
    texts = snippets_for(b)
    probe = yaml.safe_load(texts["kubernetes"])["startupProbe"]
    assert probe["httpGet"] == {"path": "/health_generate", "port": 30000}  # version unknown: the route of every version
    assert probe["failureThreshold"] == math.ceil(b.budget_seconds / probe["periodSeconds"])
    assert probe["failureThreshold"] * probe["periodSeconds"] >= b.budget_seconds
    assert probe["timeoutSeconds"] > 1  # SGLang's health generation takes >= 1 s
    health = yaml.safe_load(texts["compose"])["healthcheck"]
    assert health["start_period"] == f"{b.budget_seconds}s"
    assert "curl -fsS" in health["test"][1] and "grep" not in health["test"][1]
    assert "grep -q ok` can never match" in " ".join(texts["bash"].replace("\n#", " ").split())  # comments wrapped
    readiness = yaml.safe_load(texts["kubernetes"])["readinessProbe"]
    assert readiness["timeoutSeconds"] > 1


def test_vllm_snippet_uses_its_own_facts() -> None:
    b = budget_for([60.0, 70.0, 80.0], 0.05)
    b.engine = "vllm"
    bash = snippets_for(b)["bash"]
    assert "URL=http://127.0.0.1:8000/health " in bash
    assert "EngineCore failed to start" in bash
    assert "grep -q ok" not in bash  # that warning is about SGLang's empty body


def test_crash_markers_are_safe_in_single_quotes() -> None:
    for facts in READINESS.values():
        assert all("'" not in m for m in facts.crash_markers)


# --- vLLM: the semantics come from its Format.serving.health, the numbers from its logs ------------

FAKE_VLLM = textwrap.dedent('''
    import sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    port, log, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    def say(text):
        with open(log, "a") as fh:
            fh.write(text + "\\n")
    say("(EngineCore_DP0 pid=7) INFO 11-09 10:00:00 [core.py:93] Initializing a V1 LLM engine (v0.13.0) with config: x")
    time.sleep(1.0)  # vLLM listens only once ready: connection refused until then
    if mode == "crash-log":
        say("(EngineCore_DP0 pid=7) ERROR 11-09 10:00:01 [core.py:866] EngineCore failed to start.")
        time.sleep(60)
    class Health(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()
        def log_message(self, *args):
            pass
    say("(APIServer pid=1) INFO:     Application startup complete.")
    HTTPServer(("127.0.0.1", port), Health).serve_forever()
''')


def _vllm_budget_bash(tmp_path: Path, port: int) -> Path:
    """The bash snippet `firedup budget` writes for the eager vLLM sample, pointed at `port`."""
    report = budgets(load([str(SAMPLE_LOGS / "vllm-tp2-eager.log")]), [], risk=0.05)
    (b,) = report.budgets
    assert b.engine == "vllm" and b.budget_seconds is not None and b.budget_seconds >= 50
    b.port = port
    script = tmp_path / "wait-vllm.sh"
    script.write_text(snippets_for(b)["bash"])
    return script


@pytest.mark.parametrize("mode, code", [("ok", 0), ("crash-log", 3)])
def test_vllm_budget_snippet_waits_through_refused_connections(tmp_path: Path, mode: str, code: int) -> None:
    fake = tmp_path / "fake_vllm.py"
    fake.write_text(FAKE_VLLM)
    port, log = _free_port(), tmp_path / "vllm.log"
    log.write_text("")
    script = _vllm_budget_bash(tmp_path, port)
    text = script.read_text()
    prose = " ".join(text.replace("\n#", " ").split())  # the comments, as wrapped at 80 columns
    assert "vLLM's health routes answer with an empty body (200 with an empty body)" in prose
    assert "connection refused until the engine is ready" in prose and "503" not in text
    assert f"URL=http://127.0.0.1:{port}/health " in text and "EngineCore failed to start" in text
    proc = subprocess.Popen([sys.executable, str(fake), str(port), str(log), mode])
    try:
        env = {**os.environ, "SERVER_PID": str(proc.pid), "SERVER_LOG": str(log), "INTERVAL": "0.2",
               "URL": f"http://127.0.0.1:{port}/health"}
        out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    finally:
        proc.kill()
        proc.wait()
    assert out.returncode == code, (out.stdout, out.stderr)
    if code == 0:
        assert "answered 200" in out.stdout
    else:
        assert "EngineCore failed to start" in out.stderr


def test_snippet_wording_follows_the_formats_health_semantics(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from firedup.formats import all_formats, get_format
    from firedup.render.snippets import readiness

    vllm = get_format("vllm")
    assert vllm.serving.health is not None
    assert readiness("vllm").endpoint == vllm.serving.health.endpoint == "/health"
    # a (hypothetical) vLLM that answered 503 while starting, on /ping: the snippets follow the format
    changed = dataclasses.replace(vllm, serving=dataclasses.replace(
        vllm.serving, health=dataclasses.replace(vllm.serving.health, starting="503", endpoint="/ping")))
    monkeypatch.setitem(all_formats(), "vllm", changed)
    facts = readiness("vllm")
    assert facts.endpoint == "/ping" and facts.while_starting.endswith("then 503 while warming up")
    b = budget_for([60.0, 70.0, 80.0], 0.05)
    b.engine = "vllm"
    assert "readinessProbe" in snippets_for(b)["kubernetes"]
    assert facts.endpoint == "/ping"


def test_every_line_of_every_snippet_fits_80_columns() -> None:
    """Comments are wrapped (what overflows joins the next comment line), code is written to fit:
    the bash snippet's comment lines reached 136-210 columns (issue 44)."""
    report = budgets(load([str(SAMPLE_LOGS)]), ["disable_cuda_graph"], risk=0.01)
    seen = 0
    for b in report.budgets:
        if b.budget_seconds is None:
            continue
        for kind, text in snippets_for(b).items():
            assert [line for line in text.splitlines() if len(line) > 80] == [], (kind, b.label)
            seen += 1
    assert seen >= 6
    vllm = budget_for([60.0, 70.0, 80.0], 0.05)
    vllm.engine = "vllm"
    for text in snippets_for(vllm).values():
        assert max(len(line) for line in text.splitlines()) <= 80

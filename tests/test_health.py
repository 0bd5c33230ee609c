"""Health semantics as data: what each engine's endpoint answers, and a probe that checks the
status code. The probe command runs for real against HTTP servers on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from firedup.core.health import DEAD, READY, STARTING, UNKNOWN, version_key
from firedup.formats import all_formats
from firedup.formats.sglang import HEALTH as SGLANG_HEALTH
from firedup.formats.vllm import HEALTH as VLLM_HEALTH


def test_every_engine_declares_its_health_semantics() -> None:
    assert {name: fmt.serving.health for name, fmt in all_formats().items()} == {"sglang": SGLANG_HEALTH,
                                                                         "vllm": VLLM_HEALTH}


def test_vllm_refuses_until_ready_then_200() -> None:
    assert VLLM_HEALTH.interpret(None) == STARTING
    assert VLLM_HEALTH.interpret(200) == READY
    assert VLLM_HEALTH.interpret(503) == DEAD  # 0.11+: the engine died
    assert VLLM_HEALTH.interpret(404) == UNKNOWN
    assert VLLM_HEALTH.readiness_endpoint("0.34.0") == "/health"


def test_sglang_answers_503_while_starting_and_200_when_ready() -> None:
    assert SGLANG_HEALTH.interpret(None) == STARTING  # uvicorn not up yet
    assert SGLANG_HEALTH.interpret(503) == STARTING
    assert SGLANG_HEALTH.interpret(200) == READY


@pytest.mark.parametrize(("version", "starting", "endpoint"), [
    ("0.4.9", "200", "/health"),  # /health only proved uvicorn was up
    ("0.4.10.post1", "200", "/health"),
    ("0.4.10.post2", "503", "/health"),
    ("0.5.19", "503", "/health"),
    ("0.5.20", "503", "/ready"),
    ("0.5.23", "503", "/ready"),
    (None, "503", "/ready"),
])
def test_sglang_semantics_by_version(version: str | None, starting: str, endpoint: str) -> None:
    assert SGLANG_HEALTH.for_version(version).starting == starting
    assert SGLANG_HEALTH.readiness_endpoint(version) == endpoint


def test_version_order() -> None:
    ordered = ["0.4.3.post4", "0.4.10", "0.4.10.post1", "0.4.10.post2", "0.5.0rc2", "0.5.0", "0.5.2rc2",
               "0.13.0+faa43dbf.nv26.01", "v0.34.0"]
    assert sorted(ordered, key=version_key) == ordered


# --- the probe against real servers ----------------------------------------------------------

@contextmanager
def _server(status: int) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")  # like both engines: no body at all
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _shell(command: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}  # loopback, never a proxy
    return subprocess.run(command, shell=True, capture_output=True, timeout=20, env=env).returncode


needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


@needs_curl
def test_probe_succeeds_only_on_200_and_ignores_the_empty_body() -> None:
    with _server(200) as url:
        assert _shell(VLLM_HEALTH.probe_command(url)) == 0
        # the motivating bug: grepping the (empty) body never matches, although the server is ready
        assert _shell(f"curl -s {url}/health | grep -q ok") != 0
    with _server(503) as url:
        assert _shell(SGLANG_HEALTH.probe_command(url, "0.5.12")) != 0
    assert _shell(VLLM_HEALTH.probe_command(f"http://127.0.0.1:{_free_port()}")) != 0  # refused


def test_probe_command_names_the_readiness_endpoint() -> None:
    assert VLLM_HEALTH.probe_command("http://h:8000/") == "curl -sf -o /dev/null http://h:8000/health"
    assert SGLANG_HEALTH.probe_command("http://h:30000", "0.5.21") == "curl -sf -o /dev/null http://h:30000/ready"

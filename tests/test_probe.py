"""live/probe.py: the URL `wait` probes, checked before it is probed, and the endpoints a base
URL is probed at, in order, each with its own answers (real HTTP servers on loopback)."""

from __future__ import annotations

import collections
import io
import socket
from pathlib import Path

import pytest

from _live import run_wait
from _lying import lying_server
from firedup.errors import UsageError
from firedup.live.options import WaitOptions
from firedup.live.probe import Prober, check_url, prober_for, readiness_paths
from firedup.live.wait import Waiter


def _by_path(statuses: dict[str, int]) -> object:
    """An answer by the request's path: its status in `statuses`, else 404."""
    def answer(conn: socket.socket, request: bytes) -> None:
        path = request.split(b" ", 2)[1].decode() if request.count(b" ") >= 2 else "/"
        status = statuses.get(path, 404)
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    return answer


# --- what cannot be probed is a usage error (issue 41: port 0 was probed) -------------------------

@pytest.mark.parametrize("url", ["http://127.0.0.1:0/health", "http://127.0.0.1:0", "http://127.0.0.1:70000/health",
                                 "http://127.0.0.1:-1/", "http://exa mple.com/health", "http://host\x1b[2J:80/",
                                 "ftp://127.0.0.1:30000/health", "127.0.0.1:30000", "http:///health"])
def test_an_impossible_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError):
        check_url(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:30000/health", "http://localhost:8000", "https://[::1]:443/ready",
                                 "http://my-node.cluster.local:30000/health", "http://10.0.0.7/"])
def test_a_possible_url_passes(url: str) -> None:
    assert check_url(url).hostname


def test_wait_refuses_port_0_before_probing() -> None:
    result = run_wait("--url", "http://127.0.0.1:0/health", "--timeout", "0")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "port 0" in result.stderr and "Traceback" not in result.stderr


# --- one check probes what the long wait would, in its order (issue 41) --------------------------

def test_a_base_url_is_probed_at_the_readiness_paths_in_order() -> None:
    assert readiness_paths("sglang") == ("/ready", "/health")
    assert prober_for("http://127.0.0.1:1", "sglang", 1.0, 1.0).url == "http://127.0.0.1:1/ready"
    assert prober_for("http://127.0.0.1:1/health", "sglang", 1.0, 1.0).url == "http://127.0.0.1:1/health"


def test_one_check_moves_on_from_a_missing_readiness_path_and_keeps_each_endpoints_answers() -> None:
    """SGLang before 0.5.20 has no /ready: one check answers /health's 200, and the 404 stays /ready's."""
    with lying_server(_by_path({"/health": 200})) as port:  # type: ignore[arg-type]
        prober = Prober(f"http://127.0.0.1:{port}", 1.0, 5.0, paths=readiness_paths("sglang"))
        result = prober.check()
    assert result.status == 200
    assert prober.answers() == [(f"http://127.0.0.1:{port}/ready", collections.Counter({"HTTP 404": 1})),
                                (f"http://127.0.0.1:{port}/health", collections.Counter({"HTTP 200": 1}))]


def test_one_check_stops_at_the_first_path_that_exists() -> None:
    with lying_server(_by_path({"/ready": 503, "/health": 200})) as port:  # type: ignore[arg-type]
        prober = Prober(f"http://127.0.0.1:{port}", 1.0, 5.0, paths=readiness_paths("sglang"))
        assert prober.check().status == 503
    assert [url for url, _ in prober.answers()] == [f"http://127.0.0.1:{port}/ready"]


def _check_once(url: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = Waiter(WaitOptions(None, url=url, engine="sglang", timeout=0, auto_timeout=False, telemetry=False),
                  out, err, tty=False).run_loop()
    return code, out.getvalue(), err.getvalue()


def test_timeout_0_on_a_ready_server_without_ready_path_is_ready() -> None:
    """Was `TIMED OUT ... /health: HTTP 404 x1`, exit 124: the 404 was /ready's, and /health
    (what the long wait falls back to) was never probed."""
    with lying_server(_by_path({"/health": 200})) as port:  # type: ignore[arg-type]
        code, out, err = _check_once(f"http://127.0.0.1:{port}")
    assert code == 0, out + err
    assert out.startswith(f"READY: http://127.0.0.1:{port}/health answered 200"), out
    assert f"http://127.0.0.1:{port}/ready does not exist there (404)" in err


def test_timeout_0_reports_each_endpoints_own_answer() -> None:
    with lying_server(_by_path({"/health": 503})) as port:  # type: ignore[arg-type]
        code, out, _ = _check_once(f"http://127.0.0.1:{port}")
    assert code == 124, out
    assert f"  http://127.0.0.1:{port}/ready: HTTP 404 x1\n" in out
    assert f"  http://127.0.0.1:{port}/health: HTTP 503 x1\n" in out


def test_the_long_wait_keeps_each_endpoints_own_answers(tmp_path: Path) -> None:
    """The same on a long wait that times out: /health is not charged with /ready's 404."""
    with lying_server(_by_path({"/health": 503})) as port:  # type: ignore[arg-type]
        out, err = io.StringIO(), io.StringIO()
        code = Waiter(WaitOptions(None, url=f"http://127.0.0.1:{port}", engine="sglang", timeout=1.5,
                                  auto_timeout=False, telemetry=False, probe_interval=0.2), out, err,
                      tty=False).run_loop()
    assert code == 124
    assert f"  http://127.0.0.1:{port}/ready: HTTP 404 x1\n" in out.getvalue()
    assert "HTTP 404" not in out.getvalue().split("/health: ")[1]

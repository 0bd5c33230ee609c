"""live/http.py: one GET with a total deadline and a strict reading, against real servers on
loopback that lie (issue 33, class 6)."""

from __future__ import annotations

import base64
import socket
import time

import pytest

from _lying import lying_server, says, trickles
from firedup.live import http
from firedup.live.probe import probe


def test_an_answer_cut_off_mid_header_is_no_answer() -> None:
    """http.client took the end of the connection for the end of the headers: `200`."""
    with lying_server(says(b"HTTP/1.1 200 OK\r\nContent-Ty")) as port:
        status, error = probe(f"http://127.0.0.1:{port}/health", timeout=5)
    assert status is None and error == "the answer was cut off before its headers ended"


def test_a_status_line_alone_then_a_close_is_no_answer() -> None:
    with lying_server(says(b"HTTP/1.1 200 OK\r\n")) as port:
        assert probe(f"http://127.0.0.1:{port}/health", timeout=5) == (
            None, "the answer was cut off before its headers ended")


def test_a_whole_answer_is_read_without_its_body() -> None:
    with lying_server(says(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\n")) as port:
        assert probe(f"http://127.0.0.1:{port}/health", timeout=5) == (503, None)


def test_a_trickling_server_cannot_hold_a_probe_past_its_deadline() -> None:
    """A byte a second, every read within its own timeout: the probe took minutes."""
    with lying_server(trickles(b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 100 + b"\r\n\r\n", every=0.5)) as port:
        began = time.monotonic()
        status, error = probe(f"http://127.0.0.1:{port}/health", timeout=2)
        took = time.monotonic() - began
    assert status is None and error == "no answer within 2 s"
    assert took < 10, took  # the deadline holds (was: 50 s for these 100 bytes)


def test_garbage_is_not_http() -> None:
    with lying_server(says(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")) as port:
        assert probe(f"http://127.0.0.1:{port}/health", timeout=5) == (None, "not an HTTP answer")


def test_a_redirect_is_an_answer_not_followed() -> None:
    with lying_server(says(b"HTTP/1.1 302 Found\r\nLocation: /login\r\n\r\n")) as port:
        assert probe(f"http://127.0.0.1:{port}/health", timeout=5) == (302, "redirect to /login")


def test_credentials_in_the_url_go_as_basic_auth_and_the_host_is_the_host() -> None:
    """urllib tried to resolve `user:secret@127.0.0.1`: "cannot resolve 127.0.0.1"."""
    seen: list[bytes] = []

    def answer(conn: socket.socket, request: bytes) -> None:
        seen.append(request)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    with lying_server(answer) as port:
        assert probe(f"http://user:s%40cret@127.0.0.1:{port}/health", timeout=5) == (200, None)
    want = base64.b64encode(b"user:s@cret")
    assert b"Authorization: Basic " + want in seen[0] and b"Host: 127.0.0.1:" in seen[0]


def test_a_body_shorter_than_its_length_is_cut_off() -> None:
    with lying_server(says(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")) as port, \
            pytest.raises(http.HTTPFailure, match="cut off"):
        http.get(f"http://127.0.0.1:{port}/metrics", 5, max_body=1000)


def test_a_chunked_body_is_read_and_capped() -> None:
    body = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    with lying_server(says(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)) as port:
        assert http.get(f"http://127.0.0.1:{port}/x", 5, max_body=1000).body == b"hello world"
        assert http.get(f"http://127.0.0.1:{port}/x", 5, max_body=3).body == b"hel"


def test_endless_headers_are_refused() -> None:
    with lying_server(says(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 20000)) as port:
        status, error = probe(f"http://127.0.0.1:{port}/health", timeout=5)
    assert status is None and error is not None and "headers longer than" in error


def test_refused_and_unresolvable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert probe(f"http://127.0.0.1:{port}/health", timeout=2) == (None, "connection refused")
    status, error = probe("http://no-such-host.invalid/health", timeout=5)
    assert status is None and error == "cannot resolve no-such-host.invalid"

"""One HTTP/1.1 GET with a total deadline and a strict reading of the answer: what `wait`
probes readiness with and reads the engine's figures with.

A server that lies must not decide: an answer cut off before its headers end is no answer
(http.client took the end of the connection for the end of the headers, so a lone
`HTTP/1.1 200 OK` then a reset read as 200), a server that trickles a byte a second cannot
hold one probe past its deadline (a timeout per read let it run for minutes), and a body
longer than asked for is never read. Credentials in the URL (`http://user:secret@host/`) go
as basic authentication, as curl sends them, and the host is the host (urllib took
`user:secret@127.0.0.1` for the name to resolve). Redirects are answers, never followed.
Loopback addresses never go through a proxy; other hosts take the `http_proxy`,
`https_proxy` and `no_proxy` of the environment, as urllib did.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import socket
import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

MAX_HEADER_BYTES = 64 * 1024
_STATUS = re.compile(rb"^HTTP/\d(?:\.\d)? (\d{3})(?: [^\r\n]*)?\r?$")
_CHUNK = re.compile(rb"^([0-9A-Fa-f]{1,16})(?:;[^\r\n]*)?\r?$")


class HTTPFailure(Exception):
    """Why there is no answer, in a few words (`connection refused`, `no answer within 5 s`)."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # lower-cased names, the last value of each
    body: bytes = b""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _proxy_for(scheme: str, host: str) -> urllib.parse.SplitResult | None:
    if is_loopback(host):
        return None
    proxies = urllib.request.getproxies()
    if not proxies.get(scheme) or urllib.request.proxy_bypass(host):
        return None
    return urllib.parse.urlsplit(proxies[scheme] if "://" in proxies[scheme] else f"http://{proxies[scheme]}")


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise HTTPFailure(f"no answer within {self.seconds:g} s")
        return left


def get(url: str, timeout: float, max_body: int = 0, user_agent: str = "firedup-wait") -> Answer:
    """GET `url` within `timeout` seconds in all (connecting, sending, reading); the status and
    headers, and up to `max_body` bytes of the body (0: none is read). HTTPFailure when no
    whole answer came: refused, unresolvable, cut off, too slow, not HTTP."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HTTPFailure(f"not an http(s) URL: {url}")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise HTTPFailure("the port is not a number") from None
    deadline = _Deadline(timeout)
    proxy = _proxy_for(parts.scheme, host)
    sock = _open(host, port, proxy, deadline, timeout)
    try:
        return _exchange(sock, url, parts, proxy, deadline, max_body, user_agent)
    except HTTPFailure:
        raise
    except TimeoutError:
        raise HTTPFailure(f"no answer within {timeout:g} s") from None
    except ConnectionResetError:
        raise HTTPFailure("connection reset") from None
    except ssl.SSLError as exc:
        raise HTTPFailure(f"TLS: {exc.reason or exc}") from None
    except OSError as exc:
        raise HTTPFailure(exc.strerror or str(exc)) from None
    finally:
        sock.close()


def _headers(parts: urllib.parse.SplitResult, host: str, user_agent: str) -> dict[str, str]:
    """The request's headers; credentials in the URL go as basic authentication, as curl sends them."""
    headers = {"Host": f"[{host}]" if ":" in host else host, "User-Agent": user_agent, "Accept": "*/*",
               "Connection": "close"}
    if parts.port:
        headers["Host"] += f":{parts.port}"
    if parts.username is not None:
        userinfo = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(userinfo.encode()).decode("ascii")
    return headers


def _open(host: str, port: int, proxy: urllib.parse.SplitResult | None, deadline: _Deadline,
          timeout: float) -> socket.socket:
    """The connection to the server (or its proxy), each way it can fail said in a few words."""
    try:
        return _connect(proxy.hostname or "", proxy.port or 80, deadline) if proxy else _connect(host, port, deadline)
    except HTTPFailure:
        raise
    except socket.gaierror:
        raise HTTPFailure(f"cannot resolve {proxy.hostname if proxy else host}") from None
    except ConnectionRefusedError:
        raise HTTPFailure("connection refused") from None
    except TimeoutError:
        raise HTTPFailure(f"no answer within {timeout:g} s") from None
    except OSError as exc:
        raise HTTPFailure(exc.strerror or str(exc)) from None


def _exchange(sock: socket.socket, url: str, parts: urllib.parse.SplitResult, proxy: urllib.parse.SplitResult | None,
              deadline: _Deadline, max_body: int, user_agent: str) -> Answer:
    """The request sent and the answer read on an open connection (through the proxy's tunnel,
    and TLS, where the URL asks for them)."""
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if proxy is not None and parts.scheme == "https":
        _tunnel(sock, f"{host}:{port}", deadline)
    elif proxy is not None:
        target = url.split("#", 1)[0]  # a proxy takes the absolute form
    headers = _headers(parts, host, user_agent)
    if parts.scheme == "https":
        tls = ssl.create_default_context().wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
        try:  # the TLS socket holds the connection now: closed here, whatever happens
            _handshake(tls, deadline)
            return _request(tls, target, headers, deadline, max_body)
        finally:
            tls.close()
    return _request(sock, target, headers, deadline, max_body)


def _handshake(tls: ssl.SSLSocket, deadline: _Deadline) -> None:
    while True:
        tls.settimeout(deadline.left())
        try:
            tls.do_handshake()
            return
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            continue


def _request(sock: socket.socket, target: str, headers: dict[str, str], deadline: _Deadline, max_body: int) -> Answer:
    request = f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    _send(sock, request.encode("latin-1", errors="replace"), deadline)
    answer, rest = _read_head(sock, deadline)
    if max_body > 0:
        answer.body = _read_body(sock, answer, rest, max_body, deadline)
    return answer


def _connect(host: str, port: int, deadline: _Deadline) -> socket.socket:
    return socket.create_connection((host, port), timeout=deadline.left())


def _send(sock: socket.socket, data: bytes, deadline: _Deadline) -> None:
    view = memoryview(data)
    while view:
        sock.settimeout(deadline.left())
        sent = sock.send(view)
        view = view[sent:]


def _recv(sock: socket.socket, deadline: _Deadline, size: int = 65536) -> bytes:
    sock.settimeout(deadline.left())
    return sock.recv(size)


def _tunnel(sock: socket.socket, where: str, deadline: _Deadline) -> None:
    _send(sock, f"CONNECT {where} HTTP/1.1\r\nHost: {where}\r\n\r\n".encode(), deadline)
    answer, _ = _read_head(sock, deadline)
    if answer.status != 200:
        raise HTTPFailure(f"the proxy refused the tunnel ({answer.status})")


def _read_head(sock: socket.socket, deadline: _Deadline) -> tuple[Answer, bytes]:
    """The status line and headers, whole: the connection ending before the blank line that
    ends them is a cut-off answer, not a short one."""
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        cut = 4
        if end < 0:
            end, cut = data.find(b"\n\n"), 2
        if end >= 0:
            break
        if len(data) > MAX_HEADER_BYTES:
            raise HTTPFailure(f"headers longer than {MAX_HEADER_BYTES // 1024} kB: not an HTTP server's answer")
        chunk = _recv(sock, deadline)
        if not chunk:
            raise HTTPFailure("the answer was cut off before its headers ended" if data
                              else "the connection closed without an answer")
        data += chunk
    head, rest = data[:end], data[end + cut:]
    lines = head.split(b"\n")
    m = _STATUS.match(lines[0])
    if m is None:
        raise HTTPFailure("not an HTTP answer")
    answer = Answer(int(m.group(1)))
    for line in lines[1:]:
        name, sep, value = line.decode("latin-1").partition(":")
        if sep:
            answer.headers[name.strip().lower()] = value.strip()
    return answer, rest


def _read_body(sock: socket.socket, answer: Answer, rest: bytes, limit: int, deadline: _Deadline) -> bytes:
    """Up to `limit` bytes of the body; a body that ends before its announced length (or its
    last chunk) is cut off: HTTPFailure."""
    data = bytearray(rest)
    if answer.headers.get("transfer-encoding", "").lower() == "chunked":
        return _chunked(sock, data, limit, deadline)
    length_text = answer.headers.get("content-length")
    length = int(length_text) if length_text and length_text.isdigit() else None
    want = limit if length is None else min(length, limit)
    while len(data) < want:
        chunk = _recv(sock, deadline)
        if not chunk:
            if length is not None:
                raise HTTPFailure(f"the body was cut off ({len(data)} of {length} bytes)")
            break
        data += chunk
    return bytes(data[:want])


def _chunked(sock: socket.socket, data: bytearray, limit: int, deadline: _Deadline) -> bytes:
    out = bytearray()
    while len(out) < limit:
        while b"\n" not in data:
            chunk = _recv(sock, deadline)
            if not chunk:
                raise HTTPFailure("the body was cut off (chunked)")
            data += chunk
        line, _, tail = bytes(data).partition(b"\n")
        m = _CHUNK.match(line)
        if m is None:
            raise HTTPFailure("a malformed chunk")
        size = int(m.group(1), 16)
        if size == 0:
            return bytes(out)
        while len(tail) < size + 2 and len(out) + len(tail) < limit + 2:
            chunk = _recv(sock, deadline)
            if not chunk:
                raise HTTPFailure("the body was cut off (chunked)")
            tail += chunk
        out += tail[:size]
        data = bytearray(tail[size:].removeprefix(b"\r\n").removeprefix(b"\n"))
    return bytes(out[:limit])


__all__ = ["Answer", "HTTPFailure", "get", "is_loopback"]

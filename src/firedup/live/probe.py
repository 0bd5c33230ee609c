"""Probing a server's URL for `firedup wait`: one GET's status code at a time, never its body
(`live.http`), in a thread of its own so a server that accepts connections and never answers
cannot stall the reading of the log."""

from __future__ import annotations

import collections
import ipaddress
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass

from firedup.errors import UsageError
from firedup.formats import all_formats, get_format

PROBE_INTERVAL_S = 1.0
_HOST = re.compile(r"[A-Za-z0-9._~%:-]+")  # a name, an IPv4 or (bracketed, here bare) IPv6 address
PROBE_TIMEOUT_S = 5.0  # per request; an engine's /health may generate a token for >= 1 s


@dataclass(frozen=True)
class ProbeResult:
    at: float  # monotonic time the answer came
    status: int | None  # None: no HTTP answer at all
    error: str | None = None

    def describe(self) -> str:
        if self.status is not None:
            return f"HTTP {self.status}" + (f" ({self.error})" if self.error else "")
        return self.error or "no answer"

    @property
    def redirect(self) -> bool:
        return self.status is not None and 300 <= self.status < 400


def is_loopback(host: str) -> bool:
    if host in ("localhost", "0.0.0.0", "::"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:  # `http://[::1:80/`: an IPv6 host without its closing bracket
        raise UsageError(f"--url {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--url {url!r}: give a full URL such as http://127.0.0.1:30000/health")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"--url {url!r}: the port must be a number from 1 to 65535") from None
    if port == 0:
        raise UsageError(f"--url {url!r}: port 0 cannot be probed (to a server it means any free port); give the "
                         "port the server listens on")
    host = parts.hostname or ""
    if not _HOST.fullmatch(host):
        raise UsageError(f"--url {url!r}: {host!r} is not a host name or address")
    return parts


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> tuple[int | None, str | None]:
    """The status code of one GET, without reading the body, within `timeout` seconds in all
    (`live.http`: an answer cut off mid-header is no answer, a trickling server cannot hold
    the probe past its deadline, a redirect is an answer, never followed)."""
    from firedup.live.http import HTTPFailure, get

    try:
        answer = get(url, timeout)
    except HTTPFailure as exc:
        return None, str(exc)
    location = answer.headers.get("location") if 300 <= answer.status < 400 else None
    return answer.status, (f"redirect to {location}" if location else None)


class Prober:
    """Probes a URL in a background thread, at most once per `interval`, so that a server
    that accepts connections but never answers cannot stall the log reading."""

    def __init__(self, url: str, interval: float = PROBE_INTERVAL_S, timeout: float = PROBE_TIMEOUT_S,
                 paths: tuple[str, ...] = ()) -> None:
        # A base URL (no path) is probed at the engines' readiness paths in turn (`paths`,
        # the dedicated readiness endpoints first): a 404 moves on to the next one.
        self.base = url.rstrip("/")
        self.paths = list(paths)
        self.url = self.base + self.paths[0] if self.paths else url
        self.interval = interval
        self.timeout = timeout
        self.last: ProbeResult | None = None
        self.counts: collections.Counter[str] = collections.Counter()  # the answers of `url`, by kind
        self.earlier: list[tuple[str, collections.Counter[str]]] = []  # the paths moved on from, their answers
        self.notes: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="firedup-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> tuple[ProbeResult | None, collections.Counter[str]]:
        with self._lock:
            return self.last, collections.Counter(self.counts)

    def once(self) -> ProbeResult:
        """One probe now, recorded as the latest answer."""
        status, error = probe(self.url, self.timeout)
        result = ProbeResult(time.monotonic(), status, error)
        with self._lock:
            self.last = result
            self.counts[result.describe()] += 1
            if status == 404 and len(self.paths) > 1:
                gone = self.paths.pop(0)
                self.earlier.append((self.url, self.counts))
                self.counts = collections.Counter()
                self.url = self.base + self.paths[0]
                self.notes.append(f"{self.base}{gone} does not exist there (404); probing {self.url} instead")
        return result

    def check(self) -> ProbeResult:
        """One check now (`wait --timeout 0`), of the paths the long wait would probe, in its
        order: a 404 at a readiness path moves on to the next at once."""
        while True:
            url = self.url
            result = self.once()
            if self.url == url:
                return result

    def answers(self) -> list[tuple[str, collections.Counter[str]]]:
        """Each URL probed, in order, with its own answers."""
        with self._lock:
            return [*((url, collections.Counter(c)) for url, c in self.earlier), (self.url, collections.Counter(self.counts))]

    def take_notes(self) -> list[str]:
        with self._lock:
            notes, self.notes = self.notes, []
        return notes

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.once()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))


def readiness_paths(engine: str | None = None) -> tuple[str, ...]:
    """The paths a base URL is probed at, in order: the engines' dedicated readiness
    endpoints first (a 404 there moves on), then their health endpoints."""
    formats = [get_format(engine)] if engine else list(all_formats().values())
    healths = [f.serving.health for f in formats if f.serving.health is not None]
    ready = [h.ready_endpoint for h in healths if h.ready_endpoint]
    return tuple(dict.fromkeys([*ready, *(h.endpoint for h in healths)]))


def prober_for(url: str, engine: str | None, interval: float, timeout: float) -> Prober:
    """The prober of `--url`: a base URL (no path) is probed at the engines' readiness paths in turn."""
    path = urllib.parse.urlsplit(url).path
    paths = readiness_paths(engine) if path in ("", "/") else ()
    return Prober(url, interval, timeout, paths=paths)


__all__ = ["PROBE_INTERVAL_S", "PROBE_TIMEOUT_S", "ProbeResult", "Prober", "check_url", "is_loopback", "probe",
           "prober_for", "readiness_paths"]

"""How an engine's health endpoint answers while it starts, once ready, and after it died.

`budget`, `wait` and `replay` must not guess this: the motivating outage was a wait loop
that grepped SGLang's `/health` for "ok" while the body is always empty. Each format
declares its semantics as data (`Format.health`); the functions here read them.
Facts come from shared/formats/sglang.md §3 and shared/formats/vllm.md §3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# What a probe can observe, from the most to the least alive.
READY = "ready"
STARTING = "starting"
DEAD = "dead"
UNKNOWN = "unknown"

REFUSED = "refused"  # `starting` value: nothing listens on the port yet (TCP connection refused)


@dataclass(frozen=True)
class HealthSemantics:
    """One engine's health endpoint, for the versions from `since` on.

    `starting` is what a probe of `endpoint` gets after the process started and before the
    engine is ready: "refused" (no listener: vLLM binds but only listens once ready) or an
    HTTP status as text ("503": SGLang answers once uvicorn is up). `before_listen` is what
    it gets before the HTTP server exists at all. `body` describes a healthy answer's body;
    "empty" means: test the status code, never the text. `ready_endpoint` is a dedicated
    readiness endpoint when the engine has one. `older` lists (last version, semantics)
    pairs for earlier versions that behaved differently, oldest first.
    """

    endpoint: str
    starting: str
    ready_status: int = 200
    body: str = "empty"
    before_listen: str = REFUSED
    dead_statuses: tuple[int, ...] = ()
    ready_endpoint: str | None = None
    ready_endpoint_since: str | None = None
    since: str | None = None
    note: str = ""
    older: tuple[tuple[str, HealthSemantics], ...] = field(default=(), compare=False)

    def for_version(self, version: str | None) -> HealthSemantics:
        """The semantics of one engine version (the newest when the version is unknown)."""
        if version is None:
            return self
        key = version_key(version)
        for last, semantics in self.older:
            if key <= version_key(last):
                return semantics
        return self

    def readiness_endpoint(self, version: str | None = None) -> str:
        """The endpoint to poll: the dedicated readiness endpoint where the version has it."""
        if self.ready_endpoint and (version is None or self.ready_endpoint_since is None
                                    or version_key(version) >= version_key(self.ready_endpoint_since)):
            return self.ready_endpoint
        return self.endpoint

    def interpret(self, status: int | None) -> str:
        """What one probe says: `status` is the HTTP status, None when the connection was refused.

        The body is deliberately not an argument: no engine here puts meaning in it.
        """
        if status is None:
            return STARTING  # not listening yet (or already gone: a log or a process check tells)
        if status == self.ready_status:
            return READY
        if self.starting != REFUSED and str(status) == self.starting:
            return STARTING
        if status in self.dead_statuses:
            return DEAD
        return UNKNOWN

    def probe_command(self, base_url: str, version: str | None = None) -> str:
        """A shell check that succeeds exactly when the server is ready (status code, not body)."""
        url = base_url.rstrip("/") + self.readiness_endpoint(version)
        return f"curl -sf -o /dev/null {url}"


_VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:\.?(a|b|rc|dev)(\d*))?(?:\.?post(\d+))?")


def version_key(version: str) -> tuple[tuple[int, ...], int, int, int]:
    """A sortable key for versions like `0.4.10.post1`, `0.5.0rc2`, `0.13.0+faa43dbf.nv26.01`."""
    m = _VERSION.search(version.lstrip("v"))
    if m is None:
        return ((), 0, 0, 0)
    release = tuple(int(p) for p in m.group(1).split("."))
    release = release + (0,) * (4 - len(release)) if len(release) < 4 else release
    pre = {"dev": -3, "a": -2, "b": -1, "rc": 0}.get(m.group(2) or "", 1)  # a release sorts after its rcs
    pre_n = int(m.group(3)) if m.group(3) else 0
    post = int(m.group(4)) if m.group(4) else 0
    return (release, pre, pre_n, post)


VLLM_HEALTH = HealthSemantics(
    endpoint="/health",
    starting=REFUSED,
    ready_status=200,
    body="empty",
    before_listen=REFUSED,
    dead_statuses=(500, 503),
    note=("the port is bound early but only listens after `Application startup complete.`: "
          "until then a probe gets connection refused, never an HTTP status; /ping equals /health (0.7+); "
          "an engine that died answers 500 (<=0.10) or 503 (0.11+), empty"),
)

_SGLANG_OLD_HEALTH = HealthSemantics(
    endpoint="/health",
    starting="200",
    ready_status=200,
    body="empty",
    dead_statuses=(),
    note="<=0.4.10.post1: /health answers 200 as soon as uvicorn is up; it proves nothing about the engine",
)

SGLANG_HEALTH = HealthSemantics(
    endpoint="/health",
    starting="503",
    ready_status=200,
    body="empty",
    before_listen=REFUSED,
    dead_statuses=(),
    ready_endpoint="/ready",
    ready_endpoint_since="0.5.20",
    since="0.4.10.post2",
    note=("connection refused until uvicorn listens, then 503 while starting, 200 once ready; "
          "every body is empty, so `grep ok` never matches; a failed health generation also answers 503"),
    older=(("0.4.10.post1", _SGLANG_OLD_HEALTH),),
)

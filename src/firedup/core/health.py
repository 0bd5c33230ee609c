"""How an engine's health endpoint answers while it starts, once ready, and after it died.

`budget`, `wait` and `replay` must not guess this: the motivating outage was a wait loop
that grepped an engine's `/health` for "ok" while the body is always empty. Each format
declares its semantics as data (`Format.serving.health`, built from these types in the format's
module); the functions here read them. Facts: docs/engines/<engine>.md, "Health and readiness".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# What a probe can observe, from the most to the least alive.
READY = "ready"
STARTING = "starting"
DEAD = "dead"
UNKNOWN = "unknown"

REFUSED = "refused"  # `starting` value: nothing listens on the port yet (TCP connection refused)


# What else an engine's HTTP server answers: `firedup replay` serves these routes and
# `firedup wait` explains them. None is gated on readiness: they answer as soon as the port
# is open (docs/engines/<engine>.md).
@dataclass(frozen=True)
class Route:
    """An endpoint besides the health one and what it answers (a wait snippet may probe it)."""

    path: str
    body: str = "empty"  # "empty" | "models" (OpenAI model list) | "model_info" | "server_info"
    since: str | None = None
    health_alias: bool = False  # answers exactly like the health endpoint


@dataclass(frozen=True)
class StartupTelemetry:
    """Where an engine publishes its own start-up durations over HTTP, so `wait` can read
    them beside the log's phases and `replay` can serve them.

    `metrics` are Prometheus gauges on `metrics_path`: (metric name, the label naming the
    phase, a prefix for the phase's name), e.g. `x:startup_seconds{phase="load"}` -> `load`.
    They exist only when the server argument `metrics_flag` is on. `info_key` is a key of
    the JSON at `info_path` (from `info_since`) holding a number or a {phase: seconds}
    object. Phase names are the engine's own; `log_phases` maps each to firedup's phases
    it should roughly match (`a+b`: their sum, as the present ones add up), and `log_timings`
    says the log prints the same figures in
    `Run.engine_timings` (same names: they must agree exactly).
    """

    metrics: tuple[tuple[str, str, str], ...] = ()
    metrics_path: str = "/metrics"
    metrics_flag: str | None = None
    info_path: str | None = None
    info_key: str | None = None
    info_since: str | None = None
    served_while_starting: bool = True  # the figures are there once the port opens
    log_phases: tuple[tuple[str, str], ...] = ()
    log_timings: bool = False

    def ours(self, theirs: str, phases: Mapping[str, float]) -> list[tuple[str, float]]:
        """firedup's phases (name, seconds) of `phases` that the engine's figure `theirs` covers."""
        mapped = dict(self.log_phases).get(theirs)
        return [] if mapped is None else [(name, phases[name]) for name in mapped.split("+") if name in phases]


@dataclass(frozen=True)
class HealthSemantics:
    """One engine's health endpoint, for the versions from `since` on.

    `starting` is what a probe of `endpoint` gets after the process started and before the
    engine is ready: "refused" (no listener: an engine that binds but only listens once
    ready) or an HTTP status as text ("503": an engine whose HTTP server answers while the
    model still loads). `before_listen` is what
    it gets before the HTTP server exists at all. `body` describes a healthy answer's body;
    "empty" means: test the status code, never the text. `ready_endpoint` is a dedicated
    readiness endpoint when the engine has one. `older` lists (last version, semantics)
    pairs for earlier versions that behaved differently, oldest first. `routes` are the
    server's other endpoints (not readiness signals).
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
    routes: tuple[Route, ...] = field(default=(), compare=False)
    # Seconds a ready answer of `endpoint` takes (a health check that runs a generation).
    ready_latency: float = 0.0
    telemetry: StartupTelemetry | None = field(default=None, compare=False)

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


def valid_version(text: str) -> bool:
    return _VERSION.fullmatch(text.strip().lstrip("v")) is not None


# Paths that answer 200 as soon as the HTTP server is up, in every version: not readiness.
NOT_READINESS = ("/v1/models", "/get_model_info", "/model_info", "/get_server_info", "/server_info", "/metrics",
                 "/version", "/docs", "/openapi.json")


def _has(since: str | None, version: str | None) -> bool:
    return since is None or version is None or version_key(version) >= version_key(since)


def answer(health: HealthSemantics, path: str, stage: str, version: str | None) -> tuple[int | None, str]:
    """(status, body kind) of a GET of `path` in `stage` ("closed" | "starting" | "ready").

    None: the connection is refused (nothing listens).
    """
    if stage == "closed":
        return None, "empty"
    semantics = health.for_version(version)
    path = path.split("?", 1)[0]
    routes = {r.path: r for r in health.routes if _has(r.since, version)}
    route = routes.get(path)
    if path == semantics.endpoint or (route is not None and route.health_alias):
        if stage == "ready":
            return semantics.ready_status, "empty"
        return (None if semantics.starting == REFUSED else int(semantics.starting)), "empty"
    ready_path = health.readiness_endpoint(version)
    if path == ready_path and ready_path != semantics.endpoint and semantics.ready_endpoint is not None:
        return (200 if stage == "ready" else 503), "empty"
    if route is not None:
        return 200, route.body
    return 404, "empty"


def latency(health: HealthSemantics, path: str, stage: str, version: str | None) -> float:
    """Seconds the engine takes to answer `path` in `stage` (a ready health check that
    generates a token takes >= 1 s; a 503 while starting comes at once)."""
    semantics = health.for_version(version)
    path = path.split("?", 1)[0]
    routes = {r.path: r for r in health.routes if _has(r.since, version)}
    route = routes.get(path)
    if stage == "ready" and (path == semantics.endpoint or (route is not None and route.health_alias)):
        return semantics.ready_latency
    return 0.0


def advice(health: HealthSemantics) -> str:
    """How to probe this engine, in one clause."""
    text = f"probe the status code of {health.endpoint}"
    if health.ready_endpoint:
        since = f" (from {health.ready_endpoint_since})" if health.ready_endpoint_since else ""
        text += f", or {health.ready_endpoint}{since}"
    return text + ", never the body"


@dataclass(frozen=True)
class VersionGuess:
    """Bounds on the engine version read from the log's shape, with the evidence."""

    low: str | None = None
    high: str | None = None  # inclusive
    evidence: tuple[str, ...] = ()

    def pick(self) -> str | None:
        """A representative version inside the bounds (None: unknown, use current rules)."""
        return self.high if self.high is not None else self.low

    def describe(self) -> str:
        if self.low and self.high:
            span = f"{self.low} to {self.high}"
        elif self.high:
            span = f"{self.high} or older"
        elif self.low:
            span = f"{self.low} or newer"
        else:
            return "version unknown"
        return span + (f" ({'; '.join(self.evidence)})" if self.evidence else "")


@dataclass(frozen=True)
class ReadyProbe:
    """How to tell ready from outside for one range of an engine's versions: one row of the
    per-version readiness table a format declares (`Format.serving.readiness`, oldest row first).

    `route` is the route whose 200 means ready on these versions. `http_is_enough` is False
    when no route tells warm-up from ready there (a wait that can read the log confirms with
    its ready line). `pitfall` says what these versions get wrong, `probe_seconds` how long
    one probe of `route` takes once ready (a probe that runs a generation takes >= 1 s, so a
    1 s probe timeout flaps), and `timeout_seconds` the probe timeout to use.
    """

    route: str
    since: str | None = None
    until: str | None = None  # inclusive
    http_is_enough: bool = True
    pitfall: str = ""
    probe_seconds: float = 0.1
    probe_seconds_why: str = "the route answers at once"
    timeout_seconds: int = 5

    def covers(self, version: str) -> bool:
        key = version_key(version)
        return (self.since is None or key >= version_key(self.since)) and (
            self.until is None or key <= version_key(self.until))

    @property
    def versions(self) -> str:
        if self.since and self.until:
            return f"{self.since} to {self.until}"
        if self.until:
            return f"{self.until} and older"
        if self.since:
            return f"{self.since} and newer"
        return "every version"


def probes_for(table: tuple[ReadyProbe, ...], guess: VersionGuess | None) -> list[ReadyProbe]:
    """The rows of `table` a run of version `guess` may be under (all rows when unknown)."""
    if not table:
        return []
    if guess is None or (guess.low is None and guess.high is None):
        return list(table)
    low = version_key(guess.low) if guess.low else None
    high = version_key(guess.high) if guess.high else None
    rows = [row for row in table
            if (high is None or row.since is None or version_key(row.since) <= high)
            and (low is None or row.until is None or version_key(row.until) >= low)]
    return rows or list(table)


def ready_probe(table: tuple[ReadyProbe, ...], guess: VersionGuess | None) -> ReadyProbe | None:
    """The one probe that is right on every version `guess` allows: the oldest such row's route
    (the newer rows' routes may not exist there), HTTP enough only if it is on all of them, and
    the slowest probe. None for a format without a table."""
    rows = probes_for(table, guess)
    if not rows:
        return None
    first = rows[0]
    slowest = max(rows, key=lambda r: r.probe_seconds)
    pitfalls = "; ".join(f"{r.versions}: {r.pitfall}" for r in rows if r.pitfall)
    return ReadyProbe(route=first.route, since=first.since, until=rows[-1].until,
                      http_is_enough=all(r.http_is_enough for r in rows), pitfall=pitfalls,
                      probe_seconds=slowest.probe_seconds, probe_seconds_why=slowest.probe_seconds_why,
                      timeout_seconds=max(r.timeout_seconds for r in rows))


def combine_guesses(guesses: list[VersionGuess]) -> VersionGuess:
    """The versions any of these runs may be: the union of their bounds (unknown if any is)."""
    if not guesses:
        return VersionGuess()
    lows = [g.low for g in guesses]
    highs = [g.high for g in guesses]
    low = None if any(v is None for v in lows) else min((v for v in lows if v), key=version_key)
    high = None if any(v is None for v in highs) else max((v for v in highs if v), key=version_key)
    evidence = tuple(dict.fromkeys(e for g in guesses for e in g.evidence))
    return VersionGuess(low, high, evidence)

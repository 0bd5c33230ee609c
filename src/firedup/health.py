"""What an engine's HTTP endpoints answer at each moment of its startup, as data.

`firedup replay` serves these answers and `firedup wait` explains surprises with them
(shared/formats/sglang.md §3, vllm.md §3). An engine is one entry in `SEMANTICS`; a
version-dependent answer is one `Endpoint` row with a version range. Adding an engine
means adding rows, not code.

Stages of the HTTP side, in order: "closed" (nothing listens: connection refused),
"warming" (the port is open, the server is not ready), "ready".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Endpoint:
    """One route's answers; `None` means the route does not exist (404)."""

    path: str
    warming: int | None
    ready: int | None
    body: str = "empty"  # "empty" | "models" | "model_info"
    since: str | None = None  # first version with this row's behaviour
    until: str | None = None  # last version with it
    note: str = ""

    def applies(self, version: Version | None) -> bool:
        if version is None:
            return self.until is None  # unknown version: the current behaviour
        if self.since is not None and version < Version(self.since):
            return False
        return not (self.until is not None and version > Version(self.until))


@dataclass(frozen=True)
class Semantics:
    engine: str
    # The milestone after which the port accepts connections, and the one after which the
    # server is ready. Before `opens_at` every probe is refused.
    opens_at: str
    ready_at: str
    endpoints: tuple[Endpoint, ...]
    probe_advice: str

    def endpoint(self, path: str, version: Version | None) -> Endpoint | None:
        for row in self.endpoints:
            if row.path == path and row.applies(version):
                return row
        return None

    def status(self, path: str, stage: str, version: Version | None) -> int | None:
        """The HTTP status for `path` in `stage`; None: connection refused."""
        if stage == "closed":
            return None
        row = self.endpoint(path.split("?", 1)[0], version)
        if row is None:
            return 404
        code = row.ready if stage == "ready" else row.warming
        return 404 if code is None else code


SGLANG = Semantics(
    engine="sglang",
    opens_at="http.running",
    ready_at="ready",
    endpoints=(
        Endpoint("/health", 200, 200, until="0.4.10.post1",
                 note="200 as soon as uvicorn is up: it proves nothing about the engine during warm-up"),
        Endpoint("/health", 503, 200, since="0.4.10.post2", note="503 while Starting, 200 once Up"),
        Endpoint("/health_generate", 200, 200, until="0.4.10.post1", note="runs a real 1-token generation"),
        Endpoint("/health_generate", 503, 200, since="0.4.10.post2"),
        Endpoint("/ready", 503, 200, since="0.5.20"),
        Endpoint("/v1/models", 200, 200, body="models", note="answers as soon as uvicorn is up"),
        Endpoint("/get_model_info", 200, 200, body="model_info", note="answers as soon as uvicorn is up"),
        Endpoint("/model_info", 200, 200, body="model_info", since="0.5.6", note="answers as soon as uvicorn is up"),
    ),
    probe_advice="probe the status code of /health (meaningful from 0.4.10.post2) or /ready (0.5.20+), never the body",
)

VLLM = Semantics(
    engine="vllm",
    # vLLM binds its port only once the engine is ready: refused until then.
    opens_at="ready",
    ready_at="ready",
    endpoints=(
        Endpoint("/health", 200, 200),
        Endpoint("/ping", 200, 200, since="0.7.0"),
        Endpoint("/v1/models", 200, 200, body="models"),
    ),
    probe_advice="probe the status code of /health; connection refused means still starting",
)

SEMANTICS: dict[str, Semantics] = {s.engine: s for s in (SGLANG, VLLM)}

# Paths that answer 200 as soon as the HTTP server is up, in every version: not readiness.
NOT_READINESS = ("/v1/models", "/get_model_info", "/model_info", "/get_server_info", "/server_info", "/metrics",
                 "/version", "/docs", "/openapi.json")


def semantics_for(engine: str) -> Semantics | None:
    return SEMANTICS.get(engine)


def parse_version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text.strip().lstrip("v"))
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class VersionGuess:
    """Bounds on the engine version read from the log's shape, with the evidence."""

    low: str | None = None
    high: str | None = None  # inclusive
    evidence: tuple[str, ...] = ()

    def pick(self) -> Version | None:
        """A representative version inside the bounds (None: unknown, use current rules)."""
        if self.high is not None:
            return Version(self.high)
        if self.low is not None:
            return Version(self.low)
        return None

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


# (event name, field test, bound, version, evidence). Lower bounds are features a version
# introduced; upper bounds are things a later version removed or replaced (sglang.md §7).
_SGLANG_MARKERS: tuple[tuple[str, str, str, str], ...] = (
    ("init_parallel", "low", "0.5.21", "'Init parallel begin' replaced 'Init torch distributed' in 0.5.21"),
    ("args_dict", "low", "0.5.19", "server_args is printed as a dict from 0.5.19"),
    ("engine_timings", "low", "0.5.17", "'Engine startup timings' appeared in 0.5.17"),
    ("capture_target", "low", "0.5.14", "'Capture target ... graph' lines appeared in 0.5.14"),
    ("kv_dtype", "low", "0.5.13", "'KV Cache is allocated. dtype:' appeared in 0.5.13"),
    ("elapsed_fields", "low", "0.5.9", "'elapsed=' on load/init lines appeared in 0.5.9"),
    ("skip_server_warmup", "low", "0.4.9", "ServerArgs has skip_server_warmup (0.4.9+)"),
    ("no_skip_server_warmup", "high", "0.4.8", "the complete ServerArgs has no skip_server_warmup (added in 0.4.9)"),
    ("args_repr", "high", "0.5.18", "server_args is a ServerArgs(...) repr (a dict from 0.5.19)"),
    ("init_nccl", "high", "0.3.3", "'Init nccl begin' was renamed in 0.3.4"),
)


def sglang_version_guess(events: Iterable[Any], config: Mapping[str, Any], config_complete: bool) -> VersionGuess:
    """Version bounds from unambiguous markers of one run (events of firedup.engine)."""
    seen: set[str] = set()
    for e in events:
        text = getattr(e, "text", "")
        name = getattr(e, "name", "")
        if name == "dist_init.begin" and text.startswith("Init parallel"):
            seen.add("init_parallel")
        elif name == "dist_init.begin" and text.startswith("Init nccl"):
            seen.add("init_nccl")
        elif name == "server_args":
            args = str(e.fields.get("args", ""))
            seen.add("args_dict" if args.startswith("{") else "args_repr")
        elif name == "engine.timings":
            seen.add("engine_timings")
        elif name.endswith("cuda_graph.begin") and text.startswith(("Capture target", "Capture draft decode",
                                                                     "Capture draft verify", "Capture draft extend C")):
            seen.add("capture_target")
        elif name == "kv_cache.allocated" and "dtype:" in text:
            seen.add("kv_dtype")
        elif name in ("load_weight.end", "dist_init.end") and "elapsed=" in text:
            seen.add("elapsed_fields")
    if seen & {"args_repr", "args_dict"}:
        if "skip_server_warmup" in config:
            seen.add("skip_server_warmup")
        elif config_complete and "args_repr" in seen:
            seen.add("no_skip_server_warmup")
    low: Version | None = None
    high: Version | None = None
    evidence: list[str] = []
    for key, bound, version, why in _SGLANG_MARKERS:
        if key not in seen:
            continue
        v = Version(version)
        if bound == "low" and (low is None or v > low):
            low = v
            evidence.append(why)
        elif bound == "high" and (high is None or v < high):
            high = v
            evidence.append(why)
    if low is not None and high is not None and low > high:
        return VersionGuess(None, None, ("contradictory markers: " + "; ".join(evidence),))
    return VersionGuess(str(low) if low else None, str(high) if high else None, tuple(evidence))


__all__ = ["NOT_READINESS", "SEMANTICS", "Endpoint", "Semantics", "VersionGuess", "parse_version",
           "semantics_for", "sglang_version_guess"]

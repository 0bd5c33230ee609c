"""The engine's own start-up figures, read over HTTP beside the log's phases.

Engines now publish how long their start-up steps took: Prometheus gauges on `/metrics`
and a JSON field of a server-info endpoint (`HealthSemantics.telemetry` says where, per
engine and version). `wait` reads them once the server answers and sets them beside
what the log says: the log's own timings line must agree exactly (the same numbers),
firedup's phases roughly (measured between lines, not inside the engine). A
disagreement is news: a log from another run, a clock that jumped, a phase the engine
counts differently.
"""

from __future__ import annotations

import json
import math
import re
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from firedup.core.health import StartupTelemetry, version_key
from firedup.core.safe import metric_label
from firedup.core.units import fmt_duration
from firedup.timeline.run import Run

READ_BYTES = 4 << 20  # a metrics page is a few hundred KB at most
FETCH_TIMEOUT_S = 5.0
ATTEMPTS = 5
RETRY_S = 2.0
EXACT_TOLERANCE_S = 0.05  # the log prints two decimals
ROUGH_TOLERANCE = (5.0, 0.25)  # seconds, share: firedup's phases are measured between lines

# A sample line of the Prometheus text format, read whole: labels are `name="value"` pairs
# whose values may hold `}`, `,` and the three escapes (`\\`, `\"`, `\n`: a model name chosen
# to look like `x"} 999` stays inside its label), then the value and an optional timestamp,
# and nothing else.
_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
_PAIR = rf'[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*{_VALUE}[ \t]*'
_SAMPLE = re.compile(rf"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{{(?P<labels>(?:{_PAIR},)*(?:{_PAIR},?)?)\}})?"
                     r"[ \t]+(?P<value>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?[Ii]nf|NaN)"
                     r"(?:[ \t]+-?[0-9]+(?:\.[0-9]+)?)?[ \t]*$")
_LABEL = re.compile(rf'([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*({_VALUE})')
_UNESCAPE = re.compile(r"\\([\\\"n])")


class MalformedMetrics(ValueError):
    """A line of a metrics page that is no sample, comment or blank: the page is not trusted
    (a label value that was not escaped may have forged the samples around it)."""


def parse_metrics(text: str, spec: StartupTelemetry) -> dict[str, float]:
    """The phases of `spec.metrics` in a Prometheus text page (the newest sample wins;
    several label sets of one phase, e.g. one per rank, keep the largest, as the log's
    line is the max over ranks). MalformedMetrics names the first line that is neither a
    sample, a comment nor blank, or a sample naming a label twice: no figure of such a page counts."""
    wanted = {name: (label, prefix) for name, label, prefix in spec.metrics}
    out: dict[str, float] = {}
    for number, line in enumerate(text.split("\n"), 1):  # the format's only line end (not \u2028)
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            raise MalformedMetrics(f"line {number} is no sample: {line[:80]!r}")
        pairs = [(k, _UNESCAPE.sub(lambda e: "\n" if e[1] == "n" else e[1], v[1:-1]))
                 for k, v in _LABEL.findall(m["labels"] or "")]
        labels = dict(pairs)
        if len(labels) != len(pairs):
            raise MalformedMetrics(f"line {number} names a label twice: {line[:80]!r}")
        if m["name"] not in wanted:
            continue
        label, prefix = wanted[m["name"]]
        phase = labels.get(label)
        value = float(m["value"])
        if phase is None or not math.isfinite(value) or value < 0:
            continue
        key = prefix + phase
        out[key] = max(out.get(key, 0.0), value)
    return out


MAX_DEPTH = 8  # phases nest two or three deep; what is deeper is no phase


def flatten(timings: Mapping[str, Any], prefix: str = "", depth: int = 0) -> dict[str, float]:
    """{phase: seconds} from a nested object (`cuda_graph: {decode: 8.05}` -> `cuda_graph.decode`),
    at most `MAX_DEPTH` deep."""
    out: dict[str, float] = {}
    for key, value in timings.items():
        if isinstance(value, Mapping):
            if depth < MAX_DEPTH:
                out.update(flatten(value, f"{prefix}{key}.", depth + 1))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[f"{prefix}{key}"] = float(value)
    return out


@dataclass
class Telemetry:
    source: str  # the URL the figures came from
    phases: dict[str, float]

    def summary(self) -> str:
        shown = [f"{k} {fmt_duration(v)}" for k, v in self.phases.items() if v > 0]
        return ", ".join(shown) or "all zero"

    def compare(self, run: Run, spec: StartupTelemetry) -> tuple[list[str], list[str]]:
        """(what agrees, what disagrees) between these figures and the log's."""
        agree: list[str] = []
        disagree: list[str] = []
        if spec.log_timings and run.engine_timings:
            printed = flatten(run.engine_timings)
            same = [k for k in self.phases if k in printed]
            for key in same:
                if abs(self.phases[key] - printed[key]) > EXACT_TOLERANCE_S:
                    # both to the log's two decimals: a rounded duration could show the same text twice
                    disagree.append(f"{key} {self.phases[key]:.2f} s here vs {printed[key]:.2f} s in the log's own "
                                    "timings line (another run? a restarted server?)")
            if same and not disagree:
                agree.append(f"the log's own timings line ({len(same)} figures)")
        phases = run.phase_seconds()
        for theirs, _ in spec.log_phases:
            covered = spec.ours(theirs, phases)
            if theirs not in self.phases or not covered:
                continue
            ours = "+".join(name for name, _ in covered)
            a, b = self.phases[theirs], sum(seconds for _, seconds in covered)
            slack = max(ROUGH_TOLERANCE[0], ROUGH_TOLERANCE[1] * max(a, b))
            if abs(a - b) > slack:
                disagree.append(f"{theirs} {fmt_duration(a)} here vs {ours} {fmt_duration(b)} by the log's lines")
            else:
                agree.append(f"{ours} {fmt_duration(b)}")
        return agree, disagree


@dataclass
class TelemetryReader:
    """Fetches the figures in a background thread (a slow server never stalls `wait`)."""

    url: str  # the URL `wait` probes: its scheme, host and port are used
    spec: StartupTelemetry
    version: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    attempts: int = ATTEMPTS
    retry: float = RETRY_S
    errors: list[str] = field(default_factory=list)
    _found: Telemetry | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._run, name="firedup-telemetry", daemon=True).start()

    def result(self, wait: float = 0.0) -> Telemetry | None:
        if wait:
            self._done.wait(wait)
        return self._found

    def paths(self) -> list[str]:
        out = []
        if self.spec.metrics and (self.spec.metrics_flag is None or self.config.get(self.spec.metrics_flag)
                                  or self.spec.metrics_flag not in self.config):
            out.append(self.spec.metrics_path)
        if self.spec.info_path and self.spec.info_key and (
                self.spec.info_since is None or self.version is None
                or version_key(self.version) >= version_key(self.spec.info_since)):
            out.append(self.spec.info_path)
        return out

    def _run(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        base = f"{parts.scheme}://{parts.netloc}"
        try:
            for attempt in range(self.attempts):
                for path in self.paths():
                    try:
                        found = self._fetch(base + path, path)
                    except Exception as exc:  # whatever a server sends, the thread ends in a note, not a traceback
                        self.errors.append(f"{base + path}: {type(exc).__name__}")
                        found = None
                    if found is not None and found.phases:
                        self._found = found
                        return
                if attempt + 1 < self.attempts:
                    threading.Event().wait(self.retry)
        finally:
            self._done.set()

    def _fetch(self, url: str, path: str) -> Telemetry | None:
        """One page of figures (`live.http`: the probe's rules, a deadline for the whole fetch)."""
        from firedup.live.http import HTTPFailure, get

        try:
            answer = get(url, FETCH_TIMEOUT_S, max_body=READ_BYTES)
        except HTTPFailure as exc:
            self.errors.append(f"{url}: {exc}")
            return None
        if answer.status != 200:
            return None
        body = answer.body.decode("utf-8", errors="replace")
        if path == self.spec.metrics_path:
            try:
                return Telemetry(url, parse_metrics(body, self.spec))
            except MalformedMetrics as exc:
                self.errors.append(f"{url}: {exc}; the page is not read")
                return None
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):  # a 200,000-deep document is no server info
            return None
        value = data.get(self.spec.info_key) if isinstance(data, dict) and self.spec.info_key else None
        if isinstance(value, Mapping):
            return Telemetry(url, flatten(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return Telemetry(url, {"total": float(value)})
        return None


def metrics_page(spec: StartupTelemetry, timings: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> str:
    """A Prometheus text page of `timings` in the engine's metric names (what `replay` serves),
    every label value escaped (`metric_label`: a log's model name or phase is hostile text)."""
    flat = flatten(timings)
    lines: list[str] = []
    extra = "".join(f'{key}="{metric_label(value)}",' for key, value in (labels or {}).items())
    for name, label, prefix in spec.metrics:
        rows = [(k[len(prefix):], v) for k, v in flat.items()
                if (k.startswith(prefix) if prefix else "." not in k)]
        if not rows:
            continue
        lines += [f"# HELP {name} Start-up duration by phase in seconds.", f"# TYPE {name} gauge"]
        lines += [f'{name}{{{extra}{label}="{metric_label(phase)}"}} {value!r}' for phase, value in rows]
    return "\n".join(lines) + "\n"


__all__ = ["MalformedMetrics", "Telemetry", "TelemetryReader", "flatten", "metrics_page", "parse_metrics"]

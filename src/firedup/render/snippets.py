"""Ready-to-paste wait loops and probes for a budget, per engine.

What differs between engines is data, all of it in the engine's format: the endpoint and
what it answers while starting and once ready come from `Format.health` (the semantics
`wait` and `replay` use); the port, how long one probe may take and which log lines mean
the server died from `Format.probing`. The templates are shared. Facts: section 3 of
shared/formats/<engine>.md (an engine's /health may answer with an EMPTY body: connection
refused while loading, 503 while warming up, 200 when ready; so `curl -s .../health |
grep -q ok` never matches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firedup.core.health import REFUSED, HealthSemantics
from firedup.core.safe import visible
from firedup.formats.base import Format, Probing

if TYPE_CHECKING:
    from firedup.tables.budget import Budget


@dataclass(frozen=True)
class Readiness:
    name: str  # as users write it
    endpoint: str
    default_port: int
    while_starting: str
    when_ready: str
    probe_timeout: int  # seconds one probe may take (k8s timeoutSeconds, curl --max-time)
    probe_timeout_why: str
    crash_markers: tuple[str, ...]  # fixed strings in the log that mean the start failed
    alternative: str  # a better endpoint where the version has it, or ""
    grep_trap: bool = False  # `curl ... | grep -q ok` is a known broken wait loop here (empty body)


GENERIC = Readiness(
    name="the server", endpoint="/health", default_port=8000,
    while_starting="not answering, or an error status", when_ready="200", probe_timeout=5,
    probe_timeout_why="a probe must not hang", crash_markers=("Traceback (most recent call last)",),
    alternative="",
)


def _from_health(name: str, probing: Probing, health: HealthSemantics) -> Readiness:
    """The snippet wording of an engine's health semantics (the same data `wait` and `replay` use)."""
    while_starting = f"connection refused until {probing.listens_after}"
    if health.starting != REFUSED:
        while_starting += f", then {health.starting} while warming up"
    body = "EMPTY" if probing.loud_body else "empty"
    when_ready = f"{health.ready_status} with an {body} body" if health.body == "empty" else str(health.ready_status)
    alternative = ""
    if health.ready_endpoint:
        since = f" {health.ready_endpoint_since}+" if health.ready_endpoint_since else ""
        alternative = f"{name}{since} also has {health.ready_endpoint} ({health.ready_status} only when ready, " \
                      f"{health.body} body)"
    return Readiness(name=name, endpoint=health.endpoint, default_port=probing.default_port,
                     while_starting=while_starting, when_ready=when_ready, probe_timeout=probing.probe_timeout,
                     probe_timeout_why=probing.probe_timeout_why, crash_markers=probing.crash_markers,
                     alternative=alternative, grep_trap=probing.loud_body and health.body == "empty")


def readiness_of(fmt: Format | None) -> Readiness:
    """What a probe of `fmt`'s engine sees and how to wait for it; GENERIC when the format
    does not say."""
    if fmt is None or fmt.health is None or fmt.probing is None:
        return GENERIC
    return _from_health(fmt.display, fmt.probing, fmt.health)


def readiness(engine: str | None) -> Readiness:
    """`readiness_of` the registered format named `engine`; GENERIC for an engine firedup does not know."""
    from firedup.formats import all_formats

    return readiness_of(all_formats().get(engine or ""))


def all_readiness() -> dict[str, Readiness]:
    """Readiness per registered engine."""
    from firedup.formats import all_formats

    return {name: readiness_of(fmt) for name, fmt in all_formats().items()}


READINESS: dict[str, Readiness] = all_readiness()

BASH = """\
# Wait for @NAME@ to be ready: budget @BUDGET@ s for @LABEL@
#   (@N@; method: @METHOD@; asked risk @RISK@; from `firedup budget`).
# Checks the HTTP status code, never the body: @NAME@'s @ENDPOINT@ gives @WHEN_READY@,
# and @WHILE_STARTING@.@NO_GREP@
# Also stops early if the server process exits or its log reports a crash.
# Set SERVER_PID and SERVER_LOG (the log file the server writes) before running it.
URL="${URL:-http://127.0.0.1:@PORT@@ENDPOINT@}"
BUDGET="${BUDGET:-@BUDGET@}"
INTERVAL="${INTERVAL:-5}"
SERVER_PID="${SERVER_PID:?set SERVER_PID to the server process id}"
SERVER_LOG="${SERVER_LOG:?set SERVER_LOG to the server log file}"
log_start=$(( $(wc -c < "$SERVER_LOG" 2>/dev/null || echo 0) + 1 ))  # only lines written from now on
deadline=$(( $(date +%s) + BUDGET ))
code=000
while :; do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time @PROBE_TIMEOUT@ "$URL" || true)
  if [ "$code" = 200 ]; then echo "ready: $URL answered 200"; break; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null || [ "$(ps -o stat= -p "$SERVER_PID" 2>/dev/null | cut -c1)" = Z ]; then
    echo "server process $SERVER_PID exited before it was ready (last HTTP status: $code)" >&2; exit 3
  fi
  if tail -c +"$log_start" "$SERVER_LOG" 2>/dev/null | grep -qF@MARKERS@; then
    echo "the server log reports a crash:" >&2
    tail -c +"$log_start" "$SERVER_LOG" | grep -F -m 3@MARKERS@ >&2; exit 3
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "not ready after ${BUDGET} s (last HTTP status: $code)" >&2; exit 124
  fi
  sleep "$INTERVAL"
done
"""

KUBERNETES = """\
# @NAME@ start-up budget @BUDGET@ s for @LABEL@ (@N@; method: @METHOD@; asked risk @RISK@).
# The kubelet restarts the container after failureThreshold x periodSeconds = @THRESHOLD@ x @PERIOD@ s
# = @ALLOWANCE@ s without a success. HTTP probes count 200-399 as success, so 503 and
# connection refused are failures: @NAME@'s @ENDPOINT@ (@WHEN_READY@) works as is.
startupProbe:
  httpGet:
    path: @ENDPOINT@
    port: @PORT@
  periodSeconds: @PERIOD@
  failureThreshold: @THRESHOLD@  # ceil(@BUDGET@ s / @PERIOD@ s)
  timeoutSeconds: @PROBE_TIMEOUT@  # @PROBE_TIMEOUT_WHY@
  successThreshold: 1
"""

COMPOSE = """\
# @NAME@ start-up budget @BUDGET@ s for @LABEL@ (@N@; method: @METHOD@; asked risk @RISK@).
# curl -f fails on 503 and on connection refused, so only the status code decides;
# @NAME@'s @ENDPOINT@ gives @WHEN_READY@. Failures during start_period do not count.
# Use it with `depends_on: {server: {condition: service_healthy}}`. The image needs curl.
healthcheck:
  test: ["CMD-SHELL", "curl -fsS -o /dev/null --max-time @PROBE_TIMEOUT@ http://127.0.0.1:@PORT@@ENDPOINT@ || exit 1"]
  start_period: @BUDGET@s
  interval: 30s
  timeout: @COMPOSE_TIMEOUT@s
  retries: 3
  # start_interval: 5s  # Docker Engine 25+: probe every 5 s during start_period
"""

TEMPLATES = {"bash": BASH, "kubernetes": KUBERNETES, "compose": COMPOSE}


def probe_period(budget_seconds: int) -> int:
    """Short budgets poll often so fast starts are seen quickly; 10 s is the k8s default."""
    return 5 if budget_seconds <= 300 else 10


def _fill(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


def snippets_for(budget: Budget) -> dict[str, str]:
    """{"bash": ..., "kubernetes": ..., "compose": ...} for a budget (which must have seconds)."""
    if budget.budget_seconds is None:
        raise ValueError("no budget, no snippet")
    facts = readiness(budget.engine)
    seconds = budget.budget_seconds
    period = probe_period(seconds)
    threshold = math.ceil(seconds / period)
    no_grep = ""
    if facts.grep_trap:
        no_grep = ("\n# So `curl -s ...@ENDPOINT@ | grep -q ok` can never match, not even when ready."
                   + (f"\n# {facts.alternative}." if facts.alternative else ""))
    values = {
        "NO_GREP": no_grep, "NAME": facts.name, "ENDPOINT": facts.endpoint,
        "PORT": str(budget.port or facts.default_port), "BUDGET": str(seconds),
        "LABEL": budget.label.replace("\n", " "), "METHOD": budget.method,
        "N": f"{budget.n} run" + ("" if budget.n == 1 else "s"),
        "RISK": f"{budget.risk:.2%}", "WHEN_READY": facts.when_ready, "WHILE_STARTING": facts.while_starting,
        "PROBE_TIMEOUT": str(facts.probe_timeout), "PROBE_TIMEOUT_WHY": facts.probe_timeout_why,
        "MARKERS": "".join(f" -e '{m}'" for m in facts.crash_markers), "PERIOD": str(period),
        "THRESHOLD": str(threshold), "ALLOWANCE": str(threshold * period),
        "COMPOSE_TIMEOUT": str(facts.probe_timeout * 2),
    }
    # Every value on one line, controls escaped: a flag value holding a newline must not
    # become a line of its own in a snippet someone pastes into a shell.
    values = {key: visible(value, one_line=key != "NO_GREP") for key, value in values.items()}
    return {kind: _fill(template, values) for kind, template in TEMPLATES.items()}


__all__ = ["READINESS", "TEMPLATES", "Readiness", "all_readiness", "readiness", "readiness_of", "snippets_for"]

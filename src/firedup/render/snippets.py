"""Ready-to-paste wait loops and probes for a budget, per engine.

What differs between engines is data, all of it in the engine's format: the endpoint and
what it answers while starting and once ready come from `Format.serving.health` (the semantics
`wait` and `replay` use); the port, how long one probe may take and which log lines mean
the server died from `Format.serving.probing`. The templates are shared. Facts: "Health and readiness"
in docs/engines/<engine>.md (an engine's /health may answer with an EMPTY body: connection
refused while loading, 503 while warming up, 200 when ready; so `curl -s .../health |
grep -q ok` never matches).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firedup.core.health import REFUSED, HealthSemantics, ReadyProbe
from firedup.core.safe import visible
from firedup.formats.base import Format, Probing
from firedup.formats.vocab import READY

if TYPE_CHECKING:
    from firedup.tables.risk import Budget
    from firedup.tables.timeouts import LayerTimeouts


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
        since = f" ({health.since}+)" if health.since else ""
        while_starting += f", then {health.starting} while warming up{since}"
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
    if fmt is None or fmt.serving.health is None or fmt.serving.probing is None:
        return GENERIC
    return _from_health(fmt.display, fmt.serving.probing, fmt.serving.health)


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
#!/usr/bin/env bash
# Wait for @NAME@ to be ready: budget @BUDGET@ s for @LABEL@
#   (@N@; @METHOD@; @RISK_LABEL@; from `firedup budget`).
# @CLOCK@
# Usage, with a URL, a log, or both (the log adds crash lines and the exact ready line):
#   URL=http://127.0.0.1:@PORT@@ROUTE@ SERVER_LOG=server.log [SERVER_PID=1234] bash wait.sh
# Exit 0 ready, 3 the server crashed or its process exited, 124 not ready within BUDGET (seconds,
# or a duration: 90s, 15min, 1h30m), 2 neither URL nor SERVER_LOG given, or a BUDGET it cannot read.
# Ready over HTTP: a 200 from @ROUTE@ (@ON_VERSIONS@). Only the status code counts, never the body:
# @NAME@'s health routes answer with an empty body (@WHEN_READY@), and @WHILE_STARTING@.@PITFALL@
# The log: SERVER_LOG may not exist yet (the script waits for it); in a log that already exists
# only lines written from now on count (FROM_START=1 reads it whole). Its ready line is
# '@READY_LINE@'; these lines mean the start failed:@MARKER_LIST@
URL="${URL:-}"
SERVER_LOG="${SERVER_LOG:-}"
SERVER_PID="${SERVER_PID:-}"
BUDGET="${BUDGET:-@BUDGET@}"
INTERVAL="${INTERVAL:-5}"
# HTTP_IS_ENOUGH=0: with a log, wait for its ready line as well as the 200
HTTP_IS_ENOUGH="${HTTP_IS_ENOUGH:-@HTTP_IS_ENOUGH@}"
READY_LINE='@READY_LINE@'
if [ -z "$URL" ] && [ -z "$SERVER_LOG" ]; then
  echo "wait.sh: set URL (e.g. http://127.0.0.1:@PORT@@ROUTE@)," \\
       "SERVER_LOG (the server's log file) or both" >&2
  exit 2
fi
crash_lines() { grep -F -m 3@MARKERS@; }
# BUDGET in seconds (900) or as a duration, as `firedup wait --timeout` takes it (90s, 1m30s, 15min, 1.5h)
to_seconds() {
  awk -v d="$1" 'BEGIN {
    s = tolower(d); gsub(/[ \\t]/, "", s)
    if (s ~ /^([0-9]+|[0-9]*\\.[0-9]+)$/) { t = s + 0 } else {
      if (s == "") exit 1
      t = 0
      while (s != "") {
        if (!match(s, /^([0-9]+|[0-9]*\\.[0-9]+)[a-z]+/)) exit 1
        part = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1)
        match(part, /[a-z]+$/); u = substr(part, RSTART)
        n = substr(part, 1, RSTART - 1) + 0
        if (u == "ms") f = 0.001
        else if (u ~ /^(s|sec|secs|second|seconds)$/) f = 1
        else if (u ~ /^(m|min|mins|minute|minutes)$/) f = 60
        else if (u ~ /^(h|hr|hrs|hour|hours)$/) f = 3600
        else if (u ~ /^(d|day|days)$/) f = 86400
        else exit 1
        t += n * f
      }
    }
    w = int(t); if (w < t) w += 1; print w
  }'
}
if ! budget_s=$(to_seconds "$BUDGET"); then
  echo "wait.sh: BUDGET=$BUDGET: give seconds (900) or a duration" \\
       "(90s, 1m30s, 15min, 1h)" >&2
  exit 2
fi
deadline=$(( $(date +%s) + budget_s ))
start=0
if [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ] \\
   && [ -z "${FROM_START:-}" ]; then
  start=$(wc -c < "$SERVER_LOG")
fi
pos=$start
code=000
log_ready=0
waiting_said=0
while :; do
  if [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ]; then
    size=$(wc -c < "$SERVER_LOG")
    # truncated or replaced: read it again
    if [ "$size" -lt "$pos" ]; then start=0; pos=0; fi
    # whole lines only: a line written in two flushes (block-buffered output)
    # is read once it ends
    lines=$(tail -c +"$(( pos + 1 ))" "$SERVER_LOG" \\
            | head -c "$(( size - pos ))" | wc -l)
    new=""
    if [ "$lines" -gt 0 ]; then
      new=$(tail -c +"$(( pos + 1 ))" "$SERVER_LOG" | head -n "$lines")
      got=$(tail -c +"$(( pos + 1 ))" "$SERVER_LOG" | head -n "$lines" \\
            | wc -c)
      pos=$(( pos + got ))
    fi
    crash=$(printf '%s\\n' "$new" | crash_lines || true)
    if [ -n "$crash" ]; then
      echo "crashed: the server log reports a failed start:" >&2
      printf '%s\\n' "$crash" >&2
      exit 3
    fi
    if printf '%s\\n' "$new" | grep -qF "$READY_LINE"; then log_ready=1; fi
  elif [ -n "$SERVER_LOG" ] && [ "$waiting_said" = 0 ]; then
    echo "waiting for $SERVER_LOG to appear"
    waiting_said=1
  fi
  if [ -n "$URL" ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time @PROBE_TIMEOUT@ "$URL" || true)
    if [ "$code" = 200 ] && { [ "$HTTP_IS_ENOUGH" = 1 ] \\
         || [ -z "$SERVER_LOG" ] || [ "$log_ready" = 1 ]; }; then
      echo "ready: $URL answered 200"
      exit 0
    fi
  elif [ "$log_ready" = 1 ]; then
    echo "ready: $SERVER_LOG says: $READY_LINE"
    exit 0
  fi
  if [ -n "$SERVER_PID" ]; then
    if ! kill -0 "$SERVER_PID" 2>/dev/null \\
       || [ "$(ps -o stat= -p "$SERVER_PID" 2>/dev/null | cut -c1)" = Z ]; then
      if [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ]; then
        crash=$(tail -c +"$(( start + 1 ))" "$SERVER_LOG" | crash_lines || true)
        if [ -n "$crash" ]; then
          echo "crashed: the server log reports a failed start:" >&2
          printf '%s\\n' "$crash" >&2
        fi
      fi
      echo "the server process $SERVER_PID exited before it was ready" \\
           "(last HTTP status: $code)" >&2
      exit 3
    fi
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "not ready after $budget_s s (last HTTP status: $code)" >&2
    exit 124
  fi
  sleep "$INTERVAL"
done
"""

KUBERNETES = """\
# @NAME@ start-up budget @BUDGET@ s for @LABEL@ (@N@; @METHOD@; @RISK_LABEL@).
# @CLOCK@
# The kubelet restarts the container after failureThreshold x periodSeconds = @THRESHOLD@ x @PERIOD@ s
# = @ALLOWANCE@ s without a success. HTTP probes count 200-399 as success, so 503 and
# connection refused are failures. @ROUTE@ means ready @ON_VERSIONS@.@PITFALL@
# @PROBE_TIMEOUT_LINE@
startupProbe:
  httpGet:
    path: @ROUTE@
    port: @PORT@
  periodSeconds: @PERIOD@
  failureThreshold: @THRESHOLD@  # ceil(@BUDGET@ s / @PERIOD@ s)
  timeoutSeconds: @PROBE_TIMEOUT@
  successThreshold: 1
readinessProbe:
  httpGet:
    path: @ROUTE@
    port: @PORT@
  periodSeconds: 10
  timeoutSeconds: @READINESS_TIMEOUT@  # above one probe's @PROBE_SECONDS@ s
  failureThreshold: 3
"""

COMPOSE = """\
# @NAME@ start-up budget @BUDGET@ s for @LABEL@ (@N@; @METHOD@; @RISK_LABEL@).
# @CLOCK@
# curl -f fails on 503 and on connection refused, so only the status code decides;
# @ROUTE@ means ready @ON_VERSIONS@. Failures during start_period do not count.@PITFALL@
# Use it with `depends_on: {server: {condition: service_healthy}}`. The image needs curl.
healthcheck:
  test:
    - CMD-SHELL
    - >-
      curl -fsS -o /dev/null --max-time @PROBE_TIMEOUT@
      http://127.0.0.1:@PORT@@ROUTE@ || exit 1
  start_period: @BUDGET@s
  interval: 30s
  timeout: @COMPOSE_TIMEOUT@s
  retries: 3
  # start_interval: 5s  # Docker Engine 25+: probe every 5 s during start_period
"""

TEMPLATES = {"bash": BASH, "kubernetes": KUBERNETES, "compose": COMPOSE}
KINDS = ("bash", "kubernetes", "compose", "timeouts")


SNIPPET_WIDTH = 80  # every line of a snippet: comments wrapped to it, code written to fit it


def _fill(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


def _comment_wrap(text: str, width: int = SNIPPET_WIDTH - 2) -> str:
    """`text` as '# ' comment lines (the first line continues the template's own line)."""
    import textwrap

    lines = textwrap.wrap(text, width)
    return "\n# ".join(lines)


# A whole-line comment of a snippet (shell or YAML): its indent, its `#`s and spaces, its text.
_COMMENT = re.compile(r"([ ]*#+[ ]+)(.*)")


def _fit_comments(snippet: str, width: int = SNIPPET_WIDTH) -> str:
    """The snippet's comment lines wrapped at `width`, as a person reflows them: what overflows
    a line joins the next comment line of the same indent, or goes on a line of its own. A
    comment can be wrapped and still paste; code cannot, so its lines are written to fit."""
    import textwrap

    def wrapped(lead: str, text: str) -> list[str]:
        return [lead + part for part in textwrap.wrap(text, max(width - len(lead), 20), break_long_words=False,
                                                      break_on_hyphens=False)]

    out: list[str] = []
    carry: tuple[str, str] | None = None  # (lead, text) that overflowed the line before
    for line in snippet.split("\n"):
        m = None if line.startswith("#!") else _COMMENT.fullmatch(line)
        if carry is not None and m is not None and m.group(1) == carry[0]:
            line = carry[0] + carry[1] + " " + m.group(2)
            m = _COMMENT.fullmatch(line)
        elif carry is not None:
            out.append(carry[0] + carry[1])
        carry = None
        if m is None or len(line) <= width:
            out.append(line)
            continue
        parts = wrapped(m.group(1), m.group(2))
        out.extend(parts[:-1])
        carry = (m.group(1), parts[-1][len(m.group(1)):])
    if carry is not None:
        out.append(carry[0] + carry[1])
    return "\n".join(out)


def timeouts_text(timeouts: LayerTimeouts) -> str:
    """Every layer's timeout, as lines to read (and the flags where a setting contradicts the runs)."""
    b = timeouts.budget
    probe = timeouts.probe
    route = probe.route if probe else "/health"
    lines = [f"# every layer's timeout for {b.label.replace(chr(10), ' ')}: budget {b.budget_seconds} s "
             f"({b.method_label}; {b.risk_label})",
             f"kubernetes startupProbe: path {route}, periodSeconds {timeouts.period} x failureThreshold "
             f"{timeouts.threshold} = {timeouts.period * timeouts.threshold} s",
             f"kubernetes readinessProbe: timeoutSeconds {timeouts.readiness_timeout} (one probe takes "
             f"{probe.probe_seconds if probe else 1.0:g} s: {probe.probe_seconds_why if probe else 'unknown engine'})",
             f"docker compose healthcheck: start_period {b.budget_seconds}s",
             f"CI step: timeout-minutes: {timeouts.ci_minutes}  (budget + 25 % for checkout, pull and teardown)"]
    for clock in timeouts.clocks:
        lines.append(clock.line())
    for flag in timeouts.flags:
        lines.append(f"! {flag}")
    return "\n".join(lines) + "\n"


def clock_sentence(budget: Budget) -> str:
    """Where the budget counts from, for a snippet's comment: start it with the server."""
    text = ("Counted from the server's launch: start this with the server, not when its log begins "
            f"({budget.clock or 'counted from launch'}).")
    if budget.side is not None:
        text += f" {budget.side}"
    return text


def _pitfall(probe: ReadyProbe | None, facts: Readiness) -> str:
    """The comment lines under a probe that a 200 alone would mislead: warm-up that no route tells
    from ready, an older version's trap, a body that `grep -q ok` never matches."""
    pitfall = ""
    if probe is not None and not probe.http_is_enough:
        pitfall = "\n# " + _comment_wrap(
            f"On these versions no route tells warm-up from ready: {probe.pitfall}. With only a URL "
            f"a 200 may come seconds before the server serves; give the log too.")
    elif probe is not None and probe.pitfall:
        pitfall = "\n# " + _comment_wrap(f"Older versions: {probe.pitfall}.")
    if facts.grep_trap:
        pitfall += "\n# So `curl -s ... | grep -q ok` can never match, not even when ready."
    return pitfall


def _probe_timeout_line(probe_timeout: int, probe_s: float, why: str) -> str:
    """Why the probe's timeoutSeconds: a route that takes a second needs more than the default 1 s;
    one that answers at once does not, and 5 s only spares a busy host a failed probe."""
    if probe_s >= 1.0:
        return _comment_wrap(f"timeoutSeconds {probe_timeout}, not the default 1: {why}.")
    return _comment_wrap(f"timeoutSeconds {probe_timeout}: {why}; the rest spares a busy host a failed probe.")


def _probe_facts(probe: ReadyProbe | None, facts: Readiness) -> tuple[str, str, float, int, str]:
    """(route, versions, seconds one probe takes, probe timeout, why that timeout): the version
    table's probe where there is one, else the format's readiness facts."""
    if probe is None:
        return facts.endpoint, "every version", 1.0, max(facts.probe_timeout, 0), facts.probe_timeout_why
    return (probe.route, probe.versions, probe.probe_seconds, max(facts.probe_timeout, probe.timeout_seconds),
            probe.probe_seconds_why)


def _cadence(seconds: int, timeouts: LayerTimeouts | None, probe_timeout: int, probe_s: float) -> tuple[int, int, int]:
    """(period, failure threshold, readiness probe timeout): the layer timeouts' where computed,
    else a probe every 5 s (10 s past 5 minutes) for the whole budget."""
    if timeouts is not None:
        return timeouts.period, timeouts.threshold, timeouts.readiness_timeout
    period = 5 if seconds <= 300 else 10
    return period, math.ceil(seconds / period), max(probe_timeout, math.ceil(probe_s * 3) + 1)


def snippets_for(budget: Budget, timeouts: LayerTimeouts | None = None) -> dict[str, str]:
    """{"bash": ..., "kubernetes": ..., "compose": ...[, "timeouts": ...]} for a budget (which must have seconds).

    The route, what it answers and how long a probe takes come from the format's per-version
    readiness table for the versions the budget's runs may be (`budget.version`)."""
    from firedup.core.health import ready_probe
    from firedup.formats import all_formats

    if budget.budget_seconds is None:
        raise ValueError("no budget, no snippet")
    fmt = all_formats().get(budget.engine or "")
    facts = readiness_of(fmt)
    probe = timeouts.probe if timeouts is not None else (
        ready_probe(fmt.serving.readiness, budget.version) if fmt is not None else None)
    route, versions, probe_s, probe_timeout, probe_why = _probe_facts(probe, facts)
    ready_lines = [lit for r in (fmt.parsing.rules if fmt is not None else ()) if r.name == READY for lit in r.literals]
    seconds = budget.budget_seconds
    period, threshold, readiness_timeout = _cadence(seconds, timeouts, probe_timeout, probe_s)
    values = {
        "NAME": facts.name, "ROUTE": route, "PITFALL": _pitfall(probe, facts),
        "ON_VERSIONS": f"on every {facts.name} version" if versions == "every version" else f"on {facts.name} {versions}",
        "PORT": str(budget.port or facts.default_port), "BUDGET": str(seconds),
        "LABEL": budget.label.replace("\n", " "), "METHOD": budget.method_label, "RISK_LABEL": budget.risk_label,
        "N": f"{budget.n} run" + ("" if budget.n == 1 else "s"),
        "WHEN_READY": facts.when_ready, "WHILE_STARTING": facts.while_starting,
        "PROBE_TIMEOUT": str(probe_timeout), "PROBE_SECONDS": f"{probe_s:g}",
        "PROBE_WHY": probe_why,
        "PROBE_TIMEOUT_LINE": _probe_timeout_line(probe_timeout, probe_s, probe_why),
        "READY_LINE": ready_lines[0] if ready_lines else "ready",
        "HTTP_IS_ENOUGH": "1" if probe is None or probe.http_is_enough else "0",
        "MARKERS": "".join(f" \\\n    -e '{m}'" for m in facts.crash_markers),  # a line each: 80 columns
        "MARKER_LIST": "".join(f"\n#   {m}" for m in facts.crash_markers),
        "PERIOD": str(period), "THRESHOLD": str(threshold), "ALLOWANCE": str(threshold * period),
        "READINESS_TIMEOUT": str(readiness_timeout), "COMPOSE_TIMEOUT": str(probe_timeout * 2),
        "CLOCK": _comment_wrap(clock_sentence(budget)),
    }
    # Controls escaped everywhere, and what comes from logs (the group's flags) on one line: a
    # flag value holding a newline must not become a line of a snippet pasted into a shell.
    values = {key: visible(value, one_line=key == "LABEL") for key, value in values.items()}
    out = {kind: _fit_comments(_fill(template, values)) for kind, template in TEMPLATES.items()}
    if timeouts is not None:
        out["timeouts"] = timeouts_text(timeouts)
    return out


__all__ = ["KINDS", "READINESS", "TEMPLATES", "Readiness", "all_readiness", "readiness", "readiness_of", "snippets_for",
           "timeouts_text"]

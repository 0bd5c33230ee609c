"""Every layer's timeout: the same rule over each clock's span, the runs' own values read back
from their args, and a flag for every one that contradicts the measured start-up."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

from _live import FIXTURES
from firedup.formats import get_format
from firedup.tables.budget import budgets
from firedup.tables.load import load
from firedup.tables.timeouts import advise_clock

OLD_PROBES = FIXTURES / "sglang_0.4.3_health_probes.log"


def _slow_warmup(tmp_path: Path, extra: float) -> Path:
    """The 0.4.3 fixture with `extra` seconds more between uvicorn starting and the ready line."""
    out = []
    shift = False
    for line in OLD_PROBES.read_text().splitlines():
        if "Prefill batch" in line:
            shift = True
        m = re.match(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})", line)
        if shift and m:
            ts = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") + timedelta(seconds=extra)
            line = f"[{ts:%Y-%m-%d %H:%M:%S}" + line[len(m.group(0)):]
        out.append(line)
    path = tmp_path / "slow-warmup.log"
    path.write_text("\n".join(out) + "\n")
    return path


def test_a_300_s_watchdog_against_a_10_minute_warmup_is_flagged(tmp_path: Path) -> None:
    log = _slow_warmup(tmp_path, 600)
    assert "watchdog_timeout=300" in log.read_text()
    report = budgets(load([str(log)]), [], 0.01)
    (t,) = report.timeouts
    assert t is not None
    watchdog = next(c for c in t.clocks if c.clock.name == "--watchdog-timeout")
    assert watchdog.run_values == {300.0: 1}
    assert max(watchdog.measured) >= 600
    assert any("--watchdog-timeout 300 s in the runs' args is below the measured the warmup phase" in f
               for f in t.flags), t.flags
    assert watchdog.setting is not None and watchdog.setting.startswith("--watchdog-timeout ")
    # SGLANG_WARMUP_TIMEOUT is not in the log: its default (600 s) is below the 10-minute warm-up
    warm = next(c for c in t.clocks if c.clock.name == "SGLANG_WARMUP_TIMEOUT")
    assert any(f.startswith("SGLANG_WARMUP_TIMEOUT defaults to 600 s, below") for f in warm.flags)
    data = report.as_json()["groups"][0]["timeouts"]
    assert data["flags"] == t.flags and data["ci_timeout_minutes"] >= 11


def test_a_healthy_start_has_no_flags_and_keeps_the_defaults(tmp_path: Path) -> None:
    report = budgets(load([str(OLD_PROBES)]), [], 0.01)
    (t,) = report.timeouts
    assert t is not None and t.flags == []
    assert all(c.setting is None for c in t.clocks if c.clock.default is not None)
    assert t.period * t.threshold >= (report.budgets[0].budget_seconds or 0)
    assert t.readiness_timeout > 1  # SGLang's probe runs a generation: >= 1 s


def test_a_clock_without_a_known_default_is_always_given_a_value() -> None:
    clock = next(c for c in get_format("vllm").timeouts.clocks if c.component == "router")
    advice = advise_clock(clock, [100.0, 120.0, 110.0], 0.01, {})
    assert advice.needed is not None and advice.needed >= 132
    assert advice.setting == f"--worker-startup-timeout-secs {advice.needed} (vllm-router)"
    assert advice.flags == []

"""The bash snippet `firedup budget --snippet bash` writes, run against `firedup replay` of real
startups: an old SGLang (0.4.3.post4, whose /health answers 200 during warm-up; derived from
corpus log 027), a new SGLang (503 until ready) and a vLLM (refused until ready). It must exit 0
on ready (never before the log's ready line where HTTP cannot tell), 3 on a crash with the crash
line, 124 when the budget runs out; with a URL, a log, or both; and wait for a log that does not
exist yet."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _live import CRASH_OOM, FIXTURES, NEW_READY, VLLM_READY, env, firedup, free_port, replaying, status_of

OLD_PROBES = FIXTURES / "sglang_0.4.3_health_probes.log"  # from corpus log 027: TP0's lines only


def _script(tmp_path: Path, log: Path, name: str = "wait.sh") -> Path:
    """`firedup budget LOG --snippet bash > wait.sh`, as a user would."""
    out = subprocess.run(firedup("budget", str(log), "--snippet", "bash"), capture_output=True, text=True, env=env(),
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    script = tmp_path / name
    script.write_text(out.stdout)
    return script


def _run(script: Path, timeout: float = 60, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("URL", "SERVER_LOG", "SERVER_PID", "BUDGET")}
    environment.update({"INTERVAL": "0.2", **variables})
    return subprocess.run(["bash", str(script)], env=environment, capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_the_script_is_a_script_comments_and_code_only(tmp_path: Path) -> None:
    for log in (OLD_PROBES, NEW_READY, VLLM_READY):
        text = _script(tmp_path, log).read_text()
        assert text.startswith("#!/usr/bin/env bash\n")
        syntax = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, syntax.stderr
        # nothing else runs: with neither URL nor log it says what to set and exits 2 (no "command not found")
        out = _run(tmp_path / "wait.sh", timeout=10)
        assert out.returncode == 2 and "command not found" not in out.stderr, out.stderr
        assert "set URL" in out.stderr


def test_old_sglang_waits_for_the_log_ready_line_not_the_early_200(tmp_path: Path) -> None:
    script = _script(tmp_path, OLD_PROBES)
    text = script.read_text()
    assert "/health_generate" in text and 'HTTP_IS_ENOUGH="${HTTP_IS_ENOUGH:-0}"' in text
    assert "during warm-up too" in " ".join(text.replace("\n#", " ").split())  # said in the (wrapped) comments
    port, out = free_port(), tmp_path / "server.log"  # does not exist yet: the script waits for it
    with replaying(OLD_PROBES, out, port, 4.0, "--hold", "30") as replay:
        result = _run(script, URL=f"http://127.0.0.1:{port}/health_generate", SERVER_LOG=str(out),
                      SERVER_PID=str(replay.pid))
        written = out.read_text()
        early = status_of(port, "/health")[0]
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert f"waiting for {out} to appear" in result.stdout
    # the log's ready line (line 20) was written before the script said ready, although the
    # replayed 0.4.3 server answered 200 from the moment its port opened (line 15)
    assert "fired up and ready to roll" in written
    assert early == 200


def test_old_sglang_http_alone_is_early_and_the_script_says_so(tmp_path: Path) -> None:
    # the same server probed with a URL only: 200 comes with the port (the line 77 vs 82);
    # the script cannot know better, and its comments say to give the log
    script = _script(tmp_path, OLD_PROBES)
    assert "With only a URL a 200 may come" in " ".join(script.read_text().replace("\n#", " ").split())
    port, out = free_port(), tmp_path / "server.log"
    with replaying(OLD_PROBES, out, port, 4.0, "--hold", "30"):
        result = _run(script, URL=f"http://127.0.0.1:{port}/health_generate")
        written = out.read_text()
    assert result.returncode == 0
    assert "fired up and ready to roll" not in written


@pytest.mark.parametrize("how", ["url", "log", "both"])
def test_new_sglang_ready_with_a_url_a_log_or_both(tmp_path: Path, how: str) -> None:
    script = _script(tmp_path, NEW_READY)
    text = script.read_text()
    port, out = free_port(), tmp_path / "server.log"
    route = "/ready" if "URL=http://127.0.0.1:30000/ready" in text else "/health"
    variables = {"URL": f"http://127.0.0.1:{port}{route}"} if how in ("url", "both") else {}
    if how in ("log", "both"):
        variables["SERVER_LOG"] = str(out)
    started = time.monotonic()
    with replaying(NEW_READY, out, port, 8.0, "--hold", "30"):
        result = _run(script, **variables)
        written = out.read_text()
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "fired up and ready to roll" in written
    assert time.monotonic() - started < 40


def test_vllm_ready_and_version_table(tmp_path: Path) -> None:
    script = _script(tmp_path, VLLM_READY)
    assert "URL=http://127.0.0.1:8000/health " in script.read_text()
    port, out = free_port(), tmp_path / "server.log"
    with replaying(VLLM_READY, out, port, 8.0, "--hold", "30") as replay:
        result = _run(script, URL=f"http://127.0.0.1:{port}/health", SERVER_LOG=str(out), SERVER_PID=str(replay.pid))
        written = out.read_text()
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Application startup complete" in written


def test_crash_prints_the_crash_line(tmp_path: Path) -> None:
    script = _script(tmp_path, NEW_READY)
    port, out = free_port(), tmp_path / "server.log"
    with replaying(CRASH_OOM, out, port, 8.0) as replay:
        result = _run(script, SERVER_LOG=str(out), SERVER_PID=str(replay.pid), URL=f"http://127.0.0.1:{port}/health")
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "crashed: the server log reports a failed start" in result.stderr
    crash_lines = [line for line in CRASH_OOM.read_text().splitlines()
                   if any(m in line for m in ("hit an exception", "Received sigquit", "scheduler is dead"))]
    assert crash_lines and crash_lines[0].strip() in result.stderr


def test_crash_with_a_process_exit_still_prints_the_crash_line(tmp_path: Path) -> None:
    # the process dies right after its last words: whichever the script sees first, the crash
    # line is printed (it was "process exited" without the line before)
    log = tmp_path / "server.log"
    script = _script(tmp_path, NEW_READY)
    proc = subprocess.Popen(["bash", "-c", f"sleep 0.5; echo '[2026-01-01 00:00:01 TP0] Scheduler hit an exception: "
                                           f"Traceback' >> {log}; exit 1"])
    result = _run(script, SERVER_LOG=str(log), SERVER_PID=str(proc.pid), INTERVAL="1")
    proc.wait()
    assert result.returncode == 3
    assert "Scheduler hit an exception" in result.stderr


def test_timeout_is_124(tmp_path: Path) -> None:
    script = _script(tmp_path, NEW_READY)
    port, out = free_port(), tmp_path / "server.log"
    with replaying(NEW_READY, out, port, 0.5):
        result = _run(script, SERVER_LOG=str(out), URL=f"http://127.0.0.1:{port}/health", BUDGET="2")
    assert result.returncode == 124, (result.stdout, result.stderr)
    assert "not ready after 2 s" in result.stderr


def test_the_route_comes_from_the_formats_readiness_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from firedup.core.health import ReadyProbe
    from firedup.formats import all_formats, get_format
    from firedup.render.snippets import snippets_for
    from firedup.tables.risk import budget_for

    vllm = get_format("vllm")
    changed = dataclasses.replace(vllm, serving=dataclasses.replace(
        vllm.serving, readiness=(ReadyProbe(route="/ping", probe_seconds=2.0, probe_seconds_why="a made-up slow probe"),)))
    monkeypatch.setitem(all_formats(), "vllm", changed)
    b = budget_for([60.0, 70.0, 80.0], 0.05)
    b.engine = "vllm"
    texts = snippets_for(b)
    assert "URL=http://127.0.0.1:8000/ping " in texts["bash"]
    assert "path: /ping" in texts["kubernetes"] and "a made-up slow probe" in texts["kubernetes"]
    assert "timeoutSeconds: 7  # above one probe's 2 s" in texts["kubernetes"]


def _short_runs(folder: Path) -> dict[str, Path]:
    """Five short debug starts (17-21 s first line -> ready), a production one (another group) and
    an OOM in graph capture: logmaker's shapes, seconds long, so that the replay is quick."""
    from datetime import datetime, timedelta

    from logmaker import Spec, write

    folder.mkdir(parents=True, exist_ok=True)
    base = datetime(2026, 12, 5, 9, 0, 0)
    small = {"tp": 1, "launch": 3, "dist_init": 1, "kv_cache": 1, "draft_load": 1, "http_start": 1, "warmup": 2}
    paths = {}
    for i, load in enumerate((10, 8, 9, 11, 12)):  # debug-0, replayed, is not the slowest
        paths[f"debug-{i}"] = folder / f"debug-{i}.log"
        write(paths[f"debug-{i}"], Spec(base + timedelta(hours=i), disable_cuda_graph=True, load_weights=load, **small))
    paths["prod-0"] = folder / "prod-0.log"
    write(paths["prod-0"], Spec(base + timedelta(days=1), load_weights=10, cuda_graph=20, draft_graph=5, **small))
    paths["oom"] = folder / "oom.log"
    write(paths["oom"], Spec(base + timedelta(days=2), load_weights=6, cuda_graph=8, crash_in="cuda_graph", **small))
    return paths


def test_a_script_started_with_the_server_outlasts_its_imports(tmp_path: Path) -> None:
    """Issue 27: `budget --group` over the other debug runs writes a script that, started together
    with `replay --launch-delay N` of a debug run (N the gap the budget allows before the first
    line), exits 0 when it gets ready and 3 on an OOM; with the budget counted from the first line
    (what firedup gave before) the same start times out (124)."""
    import json
    import math

    from firedup.tables.risk import budget_for

    runs = _short_runs(tmp_path / "logs")
    history = [str(runs[k]) for k in ("debug-1", "debug-2", "debug-3", "debug-4", "prod-0")]
    # two groups: a snippet needs --group, and without it says which there are (exit 2)
    refused = subprocess.run(firedup("budget", *history, "--snippet", "bash"), capture_output=True, text=True,
                             env=env(), timeout=60, check=False)
    assert refused.returncode == 2 and "disable_cuda_graph=True" in refused.stderr and "--group" in refused.stderr
    made = subprocess.run(firedup("budget", *history, "--snippet", "bash", "--group", "disable_cuda_graph=True"),
                          capture_output=True, text=True, env=env(), timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    script = tmp_path / "wait.sh"
    script.write_text(made.stdout)
    assert "Counted from the server's launch" in made.stdout
    data = json.loads(subprocess.run(firedup("budget", *history, "--json", "--group", "disable_cuda_graph=True"),
                                     capture_output=True, text=True, env=env(), timeout=60, check=True).stdout)
    [group] = data["groups"]
    budget = group["budget_seconds"]
    assert f'BUDGET="${{BUDGET:-{budget}}}"' in made.stdout
    parsed = json.loads(subprocess.run(firedup("parse", *history[:4], "--json"), capture_output=True, text=True,
                                       env=env(), timeout=60, check=True).stdout)["runs"]
    delay = max(r["launch"]["range"][1] for r in parsed)  # the gap the budget allows: the top of the range
    first_line = budget_for([r["total_seconds"] for r in parsed], 0.01).budget_seconds  # counted from the first line
    assert first_line is not None and budget >= max(r["total_seconds"] for r in parsed) + delay
    speed = 2.0

    def start(log: Path, wall_budget: float) -> subprocess.CompletedProcess[str]:
        port, out = free_port(), tmp_path / f"{log.stem}-{wall_budget:g}.out"
        with replaying(log, out, port, speed, "--hold", "60", "--launch-delay", f"{delay:g}") as replay:
            return _run(script, timeout=120, URL=f"http://127.0.0.1:{port}/health", SERVER_LOG=str(out),
                        SERVER_PID=str(replay.pid), BUDGET=str(math.ceil(wall_budget)))

    ready = start(runs["debug-0"], budget / speed)
    assert ready.returncode == 0, (ready.stdout, ready.stderr)
    crashed = start(runs["oom"], budget / speed)
    assert crashed.returncode == 3, (crashed.stdout, crashed.stderr)
    assert "out of memory" in crashed.stderr or "hit an exception" in crashed.stderr
    # the budget counted from the first line stops the same healthy start
    too_short = start(runs["debug-0"], first_line / speed)
    assert too_short.returncode == 124, (too_short.stdout, too_short.stderr)


# --- issue 40: every snippet kind against a replay with split writes --------------------------
#
# Each snippet is made by `budget LOG --snippet KIND` from the ready log, and run (the bash script
# itself; the Kubernetes probe and the compose healthcheck by an emulator of the kubelet's and
# Docker's documented semantics, their periods divided by the replay's speed; the timeouts'
# numbers through the same emulators) against `replay --split-writes` of a ready log, a crash log
# and a log that never gets ready: 0 ready, 3 crashed (the script sees the crash line or the
# process exit; a probe sees its container exit), 124 not ready within the budget.

SPEED = 15.0
# each line in two flushes this far apart: long enough for the bash loop to read between them;
# short for the probes, which read no log (the pauses of the lines after a crash add up)
SPLIT = {"bash": "0.15"}


def _never_ready(tmp_path: Path) -> Path:
    """NEW_READY cut before its ready line: the port opens, /health answers 503, never 200."""
    lines = NEW_READY.read_text().splitlines(keepends=True)
    path = tmp_path / "never-ready.log"
    path.write_text("".join(line for line in lines if "fired up and ready" not in line and "/generate" not in line))
    return path


def _snippet(kind: str) -> str:
    out = subprocess.run(firedup("budget", str(NEW_READY), "--snippet", kind), capture_output=True, text=True,
                         env=env(), timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _budget_and_delay() -> tuple[float, float]:
    import json

    data = json.loads(subprocess.run(firedup("budget", str(NEW_READY), "--json"), capture_output=True, text=True,
                                     env=env(), timeout=60, check=True).stdout)
    [group] = data["groups"]
    run = json.loads(subprocess.run(firedup("parse", str(NEW_READY), "--json"), capture_output=True, text=True,
                                    env=env(), timeout=60, check=True).stdout)["runs"][0]
    return float(group["budget_seconds"]), float(run["launch"]["range"][1])


def _get(port: int, route: str, timeout: float) -> int | None:
    try:
        return status_of(port, route, timeout)[0]
    except OSError:
        return None


def _kubelet(replay: object, port: int, route: str, period: float, threshold: int, timeout: float) -> int:
    """A startupProbe as the kubelet runs it: a GET every period; 200-399 is a success (ready, 0);
    `threshold` failures in a row and the container is restarted (124); the container exiting
    first is a crashed start (3)."""
    failures = 0
    while True:
        time.sleep(period)
        if replay.poll() not in (None, 0):  # type: ignore[attr-defined]
            return 3
        status = _get(port, route, timeout)
        if status is not None and 200 <= status < 400:
            return 0
        failures += 1
        if failures >= threshold:
            return 124


def _docker(replay: object, command: str, start_period: float, interval: float, retries: int) -> int:
    """A compose healthcheck as Docker runs it: the command every interval; its first success is
    healthy (0); failures during start_period do not count, `retries` after it make it unhealthy
    (124); the container exiting first is a crashed start (3)."""
    started, failures = time.monotonic(), 0
    while True:
        time.sleep(interval)
        if replay.poll() not in (None, 0):  # type: ignore[attr-defined]
            return 3
        ok = subprocess.run(["sh", "-c", command], capture_output=True, timeout=30, check=False).returncode == 0
        if ok:
            return 0
        if time.monotonic() - started > start_period:
            failures += 1
            if failures >= retries:
                return 124


def _value(text: str, pattern: str) -> str:
    import re

    found = re.search(pattern, text)
    assert found is not None, (pattern, text)
    return found.group(1)


def _run_kind(kind: str, text: str, tmp_path: Path, log: Path, budget: float, delay: float) -> int:
    port, out = free_port(), tmp_path / f"{kind}-{log.stem}.out"
    with replaying(log, out, port, SPEED, "--hold", "60", "--launch-delay", f"{delay:g}",
                   "--split-writes", SPLIT.get(kind, "0.02")) as replay:
        if kind == "bash":
            script = tmp_path / "wait.sh"
            script.write_text(text)
            route = _value(text, r"URL=http://127\.0\.0\.1:\d+(\S+) ")
            # BUDGET as a duration, as `wait --timeout` takes it
            result = _run(script, timeout=120, URL=f"http://127.0.0.1:{port}{route}", SERVER_LOG=str(out),
                          SERVER_PID=str(replay.pid), INTERVAL="0.05", BUDGET=f"{budget / SPEED / 60:.4f}min")
            return result.returncode
        if kind == "kubernetes":
            import yaml

            probe = yaml.safe_load(text)["startupProbe"]
            return _kubelet(replay, port, probe["httpGet"]["path"], probe["periodSeconds"] / SPEED,
                            probe["failureThreshold"], probe["timeoutSeconds"])
        if kind == "compose":
            import yaml

            check = yaml.safe_load(text)["healthcheck"]
            command = check["test"][1].replace(":30000/", f":{port}/")
            return _docker(replay, command, float(check["start_period"].rstrip("s")) / SPEED,
                           float(check["interval"].rstrip("s")) / SPEED, check["retries"])
        # timeouts: the numbers it gives each layer, run by the same emulators
        route = _value(text, r"startupProbe: path (\S+),")
        period, threshold = int(_value(text, r"periodSeconds (\d+)")), int(_value(text, r"failureThreshold (\d+)"))
        assert period * threshold >= budget
        return _kubelet(replay, port, route, period / SPEED, threshold, 5.0)


@pytest.mark.parametrize("kind", ["bash", "kubernetes", "compose", "timeouts"])
def test_every_snippet_against_a_replay_with_split_writes(tmp_path: Path, kind: str) -> None:
    budget, delay = _budget_and_delay()
    text = _snippet(kind)
    assert f"{budget:g}" in text
    expected = {NEW_READY: 0, CRASH_OOM: 3, _never_ready(tmp_path): 124}
    got = {log: _run_kind(kind, text, tmp_path, log, budget, delay) for log in expected}
    assert got == expected, {log.name: code for log, code in got.items()}


@pytest.mark.parametrize("budget, seconds", [("15m", 900), ("1m30s", 90), ("1.5h", 5400), ("90", 90), (".5min", 30),
                                             ("2 h 30 min", 9000)])
def test_the_bash_budget_takes_durations_as_wait_timeout_does(tmp_path: Path, budget: str, seconds: int) -> None:
    """Issue 40: `BUDGET=15m` made the deadline empty and the script never timed out."""
    from firedup.live.options import parse_duration

    assert parse_duration(budget, "--timeout") == seconds
    script = tmp_path / "wait.sh"
    script.write_text(_snippet("bash").replace('sleep "$INTERVAL"', 'echo "deadline in $(( deadline - $(date +%s) ))"'
                                                                     '; exit 9'))
    log = tmp_path / "server.log"
    log.write_text("")
    result = _run(script, timeout=30, SERVER_LOG=str(log), BUDGET=budget)
    assert result.returncode == 9, result.stderr
    left = int(result.stdout.split("deadline in ")[-1].split()[0])
    assert seconds - 2 <= left <= seconds


@pytest.mark.parametrize("budget", ["15x", "soon", "1e400", "-5"])
def test_a_budget_the_script_cannot_read_is_exit_2(tmp_path: Path, budget: str) -> None:
    script = tmp_path / "wait.sh"
    script.write_text(_snippet("bash"))
    log = tmp_path / "server.log"
    log.write_text("")
    result = _run(script, timeout=30, SERVER_LOG=str(log), BUDGET=budget)
    assert result.returncode == 2 and "BUDGET=" in result.stderr, (result.stdout, result.stderr)


@given(st.sampled_from(["ready", "crash"]), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_bash_script_reads_lines_whatever_the_flush_points(tmp_path: Path, ending: str, cuts: list[float]) -> None:
    """Issue 40: a ready or crash line written in two flushes (block-buffered stdout) was never
    seen: 124 on a healthy start, 124 instead of 3 on a crash. The writer here flushes the last
    line in pieces at random points, pausing between them longer than the script's interval."""
    import threading

    script = tmp_path / "wait.sh"
    if not script.exists():
        script.write_text(_snippet("bash"))
    log = tmp_path / f"server-{time.monotonic_ns()}.log"
    head = "".join(line for line in NEW_READY.read_text().splitlines(keepends=True)[:5])
    last = ("[2026-10-30 10:00:36] The server is fired up and ready to roll!\n" if ending == "ready" else
            "[2026-10-30 10:00:36 TP0] Scheduler hit an exception: Traceback (most recent call last):\n")
    points = sorted({max(1, min(len(last) - 1, int(c * len(last)))) for c in cuts})
    pieces = [last[a:b] for a, b in zip([0, *points], [*points, len(last)], strict=True)]

    def write() -> None:
        with log.open("a") as fh:
            fh.write(head)
            fh.flush()
            for piece in pieces:
                time.sleep(0.3)
                fh.write(piece)
                fh.flush()

    log.write_text("")
    writer = threading.Thread(target=write)
    writer.start()
    try:
        result = _run(script, timeout=30, SERVER_LOG=str(log), INTERVAL="0.05", BUDGET="5")
    finally:
        writer.join()
    assert result.returncode == (0 if ending == "ready" else 3), (pieces, result.stdout, result.stderr)

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

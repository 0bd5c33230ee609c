"""`firedup wait`: timeouts, probing, and end-to-end runs against `firedup replay` (what history tells
it: tests/test_history.py).

The end-to-end cases run `wait` and `replay` as real processes that talk over loopback
HTTP and a real growing file. Expected figures come from the fixture text itself (its
timestamps, read with the test's own regex), never from firedup's output.
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from _live import (
    CRASH_OOM,
    NEW_READY,
    OLD_READY,
    VLLM_READY,
    Replay,
    Waiting,
    env,
    firedup,
    free_port,
    human,
    replaying,
    run_wait,
    seconds_to_ready,
    wait_for_text,
    watched,
)
from conftest import CORPUS, SAMPLE_LOGS
from firedup.live.options import WaitOptions
from firedup.live.probe import probe
from firedup.live.proc import ProcFS, pid_alive
from firedup.live.wait import Waiter
from firedup.timeline.pipeline import parse_paths


def _runs(*logs: Path):  # type: ignore[no-untyped-def]
    return parse_paths([str(p) for p in logs]).runs


def _ready_line(log: Path) -> int:
    return 1 + next(i for i, t in enumerate(log.read_text().splitlines()) if "fired up and ready" in t)


# --- pure parts -----------------------------------------------------------------------------


def test_pid_alive_sees_exits_and_zombies() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while pid_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.02)  # exited but not reaped: a zombie, which is dead for `wait`
    assert not pid_alive(child.pid)
    child.wait()
    assert not pid_alive(child.pid)


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers by path: /ok 200, /starting 503, /redirect 302 to /login (200), /slow-body 200 whose
    body never ends."""

    def do_GET(self) -> None:
        if self.path == "/slow-body":
            self.send_response(200)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            self.wfile.write(b"x")
            self.wfile.flush()
            time.sleep(3)
            return
        code = {"/ok": 200, "/login": 200, "/health": 200, "/starting": 503, "/redirect": 302}.get(self.path, 404)
        self.send_response(code)
        if code == 302:
            self.send_header("Location", "/login")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_probe_reads_the_status_code_only(http_server: int) -> None:
    base = f"http://127.0.0.1:{http_server}"
    assert probe(f"{base}/ok") == (200, None)
    assert probe(f"{base}/starting") == (503, None)
    assert probe(f"{base}/nope") == (404, None)
    began = time.monotonic()
    assert probe(f"{base}/slow-body", timeout=2) == (200, None)  # the body is never read
    assert time.monotonic() - began < 1.5
    assert probe(f"http://127.0.0.1:{free_port()}/health") == (None, "connection refused")


def test_probe_gives_up_on_a_server_that_never_answers() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # accepts into the backlog, never answers
        port = listener.getsockname()[1]
        began = time.monotonic()
        status, error = probe(f"http://127.0.0.1:{port}/health", timeout=0.5)
        assert status is None and error == "no answer within 0.5 s"
        assert time.monotonic() - began < 2


# --- end to end: real processes, real files, real loopback HTTP ------------------------------
#
# Each scenario runs `firedup replay` and `firedup wait` as real processes; the scenarios
# run side by side (they mostly sleep at the log's pace), and each test then checks one.


@dataclass
class Outcome:
    result: subprocess.CompletedProcess[str]
    out: Path
    port: int = 0
    other: int = 0  # a second port or a pid, as the scenario needs
    replay: Replay | None = None


SCENARIOS: dict[str, Callable[[Path], Outcome | None]] = {}


def scenario(func: Callable[[Path], Outcome | None]) -> Callable[[Path], Outcome | None]:
    SCENARIOS[func.__name__] = func
    return func


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome | None]:
    with ThreadPoolExecutor(max_workers=5) as pool:
        futures = {name: pool.submit(func, tmp_path_factory.mktemp(name)) for name, func in SCENARIOS.items()}
        return {name: future.result() for name, future in futures.items()}


def _outcome(outcomes: dict[str, Outcome | None], name: str) -> Outcome:
    found = outcomes[name]
    if found is None:
        pytest.skip("the shared corpus is not available")
    return found


@scenario
def ready(tmp: Path) -> Outcome:
    out, port = tmp / "server.log", free_port()
    result, server = watched(NEW_READY, out, port, 20, "--url", f"http://127.0.0.1:{port}/ready", "--timeout", "60")
    return Outcome(result, out, port, replay=server)


def test_ready_exits_0_with_the_time_to_ready_and_the_phase_table(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "ready")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    expected = human(seconds_to_ready(NEW_READY))  # 10:00:00 -> 10:00:36
    assert o.result.stdout.startswith(f"READY in {expected} by the log's clock (line {_ready_line(NEW_READY)}); "
                                      f"http://127.0.0.1:{o.port}/ready answered 200")
    assert re.search(r"^\s+8\.1 s .* cuda_graph \(decode\)\s+reported$", o.result.stdout, re.M)  # elapsed=8.05 s
    assert re.search(r"^\s+10 s .* load_weights\s+reported$", o.result.stdout, re.M)  # elapsed=10.20 s
    # Without a TTY: one line per phase, in order.
    phases = re.findall(r"^\s+\+\d+:\d\d\s+(\S+)", o.result.stderr, re.M)
    assert phases == ["launch", "dist_init", "load_weights", "kv_cache", "cuda_graph", "http_start", "warmup"]
    # never faster than one probe a second, counted by the server
    assert o.replay is not None
    probes = int(re.search(r"answered (\d+) requests", o.replay.stderr).group(1))  # type: ignore[union-attr]
    waited = float(re.search(r"waited ([\d.]+) s", o.result.stdout).group(1))  # type: ignore[union-attr]
    assert 1 <= probes <= waited + 1


@scenario
def vllm(tmp: Path) -> Outcome:
    out, port = tmp / "server.log", free_port()
    result, _ = watched(VLLM_READY, out, port, 20, "--url", f"http://127.0.0.1:{port}/health", "--timeout", "60")
    return Outcome(result, out, port)


def test_vllm_ready_after_connection_refused_throughout_the_startup(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "vllm")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    assert "warning" not in o.result.stderr  # refused until ready is vLLM's normal, not a wrong URL
    # 09:07:30 (the banner) to 09:08:21, the last timestamp before `Application startup complete`
    assert o.result.stdout.startswith("READY in 51 s by the log's clock")
    assert "[vllm]" in o.result.stdout


VLLM_SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "vllm-tp2-compiled.log"


@scenario
def vllm_sample(tmp: Path) -> Outcome:
    out, port = tmp / "server.log", free_port()
    result, server = watched(VLLM_SAMPLE, out, port, 25, "--url", f"http://127.0.0.1:{port}/health",
                             "--timeout", "60")
    return Outcome(result, out, port, replay=server)


def test_vllm_sample_behind_kubectl_waits_through_refusals_compile_and_capture(
        outcomes: dict[str, Outcome | None]) -> None:
    import json

    o = _outcome(outcomes, "vllm_sample")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    truth = json.loads((VLLM_SAMPLE.parent / "truth.json").read_text())["files"][VLLM_SAMPLE.name]["runs"][0]
    m = re.match(r"READY in (?:(\d+) min )?(\d+) s by the log's clock \(line (\d+)\); "
                 r"http://127\.0\.0\.1:\d+/health answered 200", o.result.stdout)
    assert m, o.result.stdout
    assert abs(int(m[1] or 0) * 60 + int(m[2]) - truth["ready_offset_s"]) <= 1.0
    assert int(m[3]) == truth["ready_line"]
    # vLLM's stages as they came, and nothing after ready passes for a warm-up; its timers
    # around other steps (model_loading, engine_init) are reported when they end, and their
    # tails here last a second or less: not stages of their own
    phases = re.findall(r"^\s+\+\d+:\d\d\s+(\S+)", o.result.stderr, re.M)
    assert phases == ["launch", "dist_init", "load_weights", "torch_compile", "kv_cache", "cuda_graph",
                      "http_start"]
    assert "warning" not in o.result.stderr
    # the replay refused until ready, so every probe it answered was a 200
    assert o.replay is not None
    answered = re.search(r"answered \d+ requests: (.*)", o.replay.stderr)
    assert answered and answered[1].startswith("/health 200x") and "503" not in answered[1], o.replay.stderr


@scenario
def crash(tmp: Path) -> Outcome:
    out = tmp / "server.log"
    result, server = watched(CRASH_OOM, out, free_port(), 50, "--timeout", "60")
    return Outcome(result, out, replay=server)


def test_a_crash_exits_3_with_the_diagnosis(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "crash")
    assert o.result.returncode == 3, o.result.stdout + o.result.stderr
    lines = CRASH_OOM.read_text().splitlines()
    # a chained traceback: the diagnosis quotes the last exception, the one that ended the process
    exception = [line for line in lines if re.match(r"^[\w.]*(Error|Exception): ", line)][-1]
    assert exception.startswith("Exception: Capture cuda graph failed: CUDA out of memory")
    crash_line = 1 + next(i for i, line in enumerate(lines) if "hit an exception" in line)
    assert re.match(rf"CRASHED \(oom\) in cuda_graph after [\w ]+, line {crash_line} of {re.escape(str(o.out))}",
                    o.result.stdout)
    assert o.result.stdout.count(f"error: {exception}") == 1  # said once: the timeline under it leaves it out
    assert "crash: oom" not in o.result.stdout
    assert "hint:  lower --cuda-graph-max-bs or --mem-fraction-static" in o.result.stdout
    assert o.replay is not None and o.replay.proc.returncode == -signal.SIGKILL


@scenario
def timeout(tmp: Path) -> Outcome:
    lines = NEW_READY.read_text().splitlines(keepends=True)
    stuck = tmp / "stuck.log"  # the log stops in capture, at batch 2 of 4
    stuck.write_text("".join(lines[: next(i for i, t in enumerate(lines) if "2/4" in t) + 1]))
    out = tmp / "server.log"
    with replaying(stuck, out, free_port(), 50):
        result = run_wait("--log", str(out), "--timeout", "2", "--history", str(NEW_READY))
    return Outcome(result, out)


def test_timeout_exits_124_with_the_phase_reached_the_last_lines_and_the_budget(
        outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "timeout")
    assert o.result.returncode == 124, o.result.stdout + o.result.stderr
    stdout = o.result.stdout
    assert re.match(rf"TIMED OUT after 2\.\d s waiting for {re.escape(str(o.out))}\n", stdout)
    assert "phase reached: cuda_graph (batches 2/4)" in stdout
    assert "it usually takes 8.1 s" in stdout  # elapsed=8.05 s in the history log
    # from launch, as `budget` counts: the run's estimated gap, and the launch margin added once
    from firedup.formats import get_format
    from firedup.tables.risk import round_up

    gap = get_format("sglang").timeouts.launch_gap
    assert gap is not None
    slowest = seconds_to_ready(NEW_READY) + gap.typical
    budget = round_up(slowest * 2 + gap.high - gap.typical)
    assert f"budget {human(budget)} (the budget of `firedup budget` over 1 history run" in stdout
    assert f"rule of thumb (2 x the only run) + {gap.high - gap.typical:g} s for a slower launch, rule of thumb: risk unknown" in stdout
    assert f"(slowest {human(slowest)} from launch)" in stdout
    last = o.out.read_text().splitlines()[-1]
    assert last.startswith("Capturing batches") and last[:150] in stdout  # the last log line


@scenario
def stall(tmp: Path) -> Outcome:
    # The fixture's warm-up is 18 s without a timestamped line (FlashInfer JIT): 1.8 s at 10x.
    out = tmp / "server.log"
    result, _ = watched(OLD_READY, out, free_port(), 10, "--stall-after", "0.5", "--timeout", "60")
    return Outcome(result, out)


def test_a_silent_phase_earns_a_stall_warning_naming_the_phase_and_culprits(
        outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "stall")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    # (the 8 s of launch before the first rank line is a silence too, 0.8 s at 10x)
    warnings = [line for line in o.result.stderr.splitlines() if "stall?" in line]
    warning = next(line for line in warnings if " in warmup " in line)
    assert "in warmup (--stall-after 0.5 s)" in warning
    assert "JIT compilation" in warning


@scenario
def wrong_url(tmp: Path) -> Outcome:
    out, port, wrong = tmp / "server.log", free_port(), free_port()
    result, _ = watched(NEW_READY, out, port, 50, "--url", f"http://127.0.0.1:{wrong}/health", "--url-grace", "2",
                        "--timeout", "60")
    return Outcome(result, out, port, wrong)


def test_the_log_says_ready_but_the_url_never_answers_names_the_port(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "wrong_url")
    wrong = o.other
    assert o.result.returncode == 1, o.result.stdout + o.result.stderr
    assert o.result.stdout.startswith(f"URL NEVER READY: the log says ready (line {_ready_line(NEW_READY)}), but "
                                      f"http://127.0.0.1:{wrong}/health did not answer 200")
    assert "connection refused" in o.result.stdout
    assert f"the log says the server listens on port {o.port}" in o.result.stdout
    assert f"you probed port {wrong}" in o.result.stdout


@scenario
def url_early(tmp: Path) -> Outcome:
    # SGLang <= 0.4.8 (no skip_server_warmup): /health is 200 during the 19 s warm-up (3.8 s at 5x,
    # so several probes, one a second, land in it).
    out, port = tmp / "server.log", free_port()
    result, _ = watched(OLD_READY, out, port, 5, "--url", f"http://127.0.0.1:{port}/health", "--timeout", "60")
    return Outcome(result, out, port)


def test_health_200_before_the_ready_line_is_named_and_not_trusted(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "url_early")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    warning = next(line for line in o.result.stderr.splitlines() if "answered 200 while the log" in line)
    assert "still in warmup" in warning
    assert "On SGLang 0.4.10.post1 and older /health is 200 during warm-up" in warning
    assert "0.4.8 or older" in warning
    # the per-version readiness table the budget snippets use: the same route, the same caveat
    assert "Its readiness route is /health_generate; no route tells warm-up from ready there" in warning
    assert o.result.stdout.startswith(f"READY in {human(seconds_to_ready(OLD_READY))} by the log's clock "
                                      f"(line {_ready_line(OLD_READY)})")


@scenario
def late(tmp: Path) -> Outcome:
    out, port = tmp / "later" / "server.log", free_port()
    waiting = Waiting("--log", str(out), "--timeout", "60")
    waiting.until("firedup wait:")
    time.sleep(1.0)
    running = waiting.proc.poll() is None
    out.parent.mkdir()
    with replaying(NEW_READY, out, port, 50):
        result = waiting.finish()
    return Outcome(result, out, other=running)


def test_a_log_that_appears_late_is_picked_up(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "late")
    assert o.other  # still waiting for the file a second later
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    assert f"note: {o.out} appeared" in o.result.stderr
    assert o.result.stdout.startswith(f"READY in {human(seconds_to_ready(NEW_READY))}")


def _rotating(tmp: Path, how: str) -> Outcome:
    out = tmp / "server.log"
    lines = NEW_READY.read_text().splitlines(keepends=True)
    half = next(i for i, t in enumerate(lines) if "Memory pool end" in t)
    out.write_text("".join(lines[:half]))
    waiting = Waiting("--log", str(out), "--timeout", "60")
    waiting.until("load_weights")  # it has read the first half
    if how == "rotate":
        out.rename(tmp / "server.log.1")
        out.write_text("".join(lines[half:]))
    else:
        with open(out, "r+") as f:
            f.truncate(0)
        time.sleep(0.8)  # let the follower see the shorter file before it grows again
        with open(out, "a") as f:
            f.write("".join(lines[half:]))
    return Outcome(waiting.finish(), out)


@scenario
def rotate(tmp: Path) -> Outcome:
    return _rotating(tmp, "rotate")


@scenario
def copytruncate(tmp: Path) -> Outcome:
    return _rotating(tmp, "copytruncate")


@pytest.mark.parametrize("how", ["rotate", "copytruncate"])
def test_a_rotated_or_truncated_log_is_followed_to_ready(outcomes: dict[str, Outcome | None], how: str) -> None:
    o = _outcome(outcomes, how)
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    assert ("was rotated" if how == "rotate" else "was truncated") in o.result.stderr
    assert o.result.stdout.startswith(f"READY in {human(seconds_to_ready(NEW_READY))}")
    assert re.search(r"^\s+10 s .* load_weights\s+reported$", o.result.stdout, re.M)  # phases span both files


@scenario
def died(tmp: Path) -> Outcome:
    lines = NEW_READY.read_text().splitlines(keepends=True)
    log = tmp / "loading.log"  # a startup still loading weights when the OOM killer strikes
    log.write_text("".join(lines[:9]))
    out = tmp / "server.log"
    with replaying(log, out, free_port(), 50) as server:
        waiting = Waiting("--log", str(out), "--pid", str(server.pid), "--timeout", "60")
        wait_for_text(out, "Multi-thread loading shards:  40%")
        waiting.until("load_weights")
        os.kill(server.pid, signal.SIGKILL)
        result = waiting.finish()
    return Outcome(result, out, other=server.pid)


def test_the_process_dying_without_a_word_exits_3(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "died")
    assert o.result.returncode == 3, o.result.stdout + o.result.stderr
    assert o.result.stdout.startswith(f"DIED: process {o.other} is gone before the server was ready; "
                                      "the log stops in load_weights")
    assert "dmesg" in o.result.stdout
    last = NEW_READY.read_text().splitlines()[8]
    assert last[:60] in o.result.stdout  # the last lines are shown


def _corpus(name: str) -> Path | None:
    found = sorted((CORPUS / "sglang").glob(f"{name}_*.log"))
    return found[0] if found else None


def _corpus_ready(tmp: Path, name: str) -> Outcome | None:
    log = _corpus(name)
    if log is None:
        return None
    out, port = tmp / "server.log", free_port()
    result, _ = watched(log, out, port, 200, "--url", f"http://127.0.0.1:{port}/health", "--timeout", "60")
    return Outcome(result, log, port)


def _corpus_crash(tmp: Path, name: str) -> Outcome | None:
    log = _corpus(name)
    if log is None:
        return None
    out = tmp / "server.log"
    result, _ = watched(log, out, free_port(), 20, "--timeout", "60")
    return Outcome(result, log)


for _name in ("001", "024", "054"):
    SCENARIOS[f"corpus_ready_{_name}"] = functools.partial(_corpus_ready, name=_name)
for _name in ("048", "050"):
    SCENARIOS[f"corpus_crash_{_name}"] = functools.partial(_corpus_crash, name=_name)


@pytest.mark.parametrize("name", ["001", "024", "054"])
def test_corpus_logs_with_a_ready_ending_exit_0(outcomes: dict[str, Outcome | None], name: str) -> None:
    o = _outcome(outcomes, f"corpus_ready_{name}")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    assert o.result.stdout.startswith(f"READY in {human(seconds_to_ready(o.out))} by the log's clock")


@pytest.mark.parametrize("name", ["048", "050"])
def test_corpus_logs_with_a_crash_exit_3_with_their_exception(outcomes: dict[str, Outcome | None], name: str) -> None:
    o = _outcome(outcomes, f"corpus_crash_{name}")
    exception = [t for t in o.out.read_text().splitlines() if re.match(r"^[\w.]*(Error|Exception): ", t)][-1]
    assert o.result.returncode == 3, o.result.stdout + o.result.stderr
    assert o.result.stdout.startswith("CRASHED (")
    assert f"error: {exception.strip()}" in o.result.stdout


# --- quick ones, no server needed ----------------------------------------------------------------


def test_a_log_already_complete_is_judged_at_once() -> None:
    ready = run_wait("--log", str(NEW_READY), "--timeout", "30")
    assert ready.returncode == 0
    assert ready.stdout.startswith(f"READY in {human(seconds_to_ready(NEW_READY))}")
    crashed = run_wait("--log", str(CRASH_OOM), "--timeout", "30")
    assert crashed.returncode == 3
    assert crashed.stdout.startswith("CRASHED (oom) in cuda_graph")


@pytest.mark.parametrize(("args", "message"), [
    (["--timeout", "soon"], "--timeout 'soon'"),
    (["--url", "localhost:30000/health"], "give a full URL"),
    (["--store=/nonexistent/store"], "no such directory"),
    (["--pid", "0"], "--pid must be a positive"),
    (["--url", "http://alice:s3cr3t@[::1:80/health"], "--url 'http://***@[::1:80/health'"),  # urlsplit raised
])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_wait("--log", str(tmp_path / "x.log"), *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr and "s3cr3t" not in result.stderr


def test_a_closed_stdin_is_a_one_line_error() -> None:
    """`wait --log -` started with stdin closed (`<&-`): an AttributeError on `None.fileno` before."""
    proc = subprocess.run([sys.executable, "-m", "firedup", "wait", "--log", "-", "--timeout", "5"], capture_output=True,
                          text=True, env=env(), timeout=60, check=False, preexec_fn=lambda: os.close(0))
    assert proc.returncode == 1 and proc.stderr.strip() == "firedup: -: stdin is closed: nothing to read"


def test_the_password_of_the_url_is_never_printed_or_recorded(tmp_path: Path) -> None:
    """`--url http://user:secret@...`: the status line, the verdict and the record showed the password."""
    record = tmp_path / "record.json"
    port = free_port()  # nothing listens: the wait times out, and says so with the URL
    result = run_wait("--url", f"http://alice:s3cr3t@127.0.0.1:{port}/health", "--timeout", "2", "--no-inspect",
                      "--record", str(record))
    assert result.returncode == 124, result.stderr
    assert f"http://***@127.0.0.1:{port}/health" in result.stdout and "http://***@" in result.stderr
    assert "s3cr3t" not in result.stdout + result.stderr + record.read_text()
    assert f"http://***@127.0.0.1:{port}/health" in record.read_text()


def test_the_wait_itself_never_loads_polars() -> None:
    """`wait` starts in every pod: no heavy import on its path (the store, when asked for, loads
    in a thread and is not asked for here)."""
    code = ("import sys\nsys.argv = ['firedup', 'wait', '--log', sys.argv[1], '--timeout', '30', '--history', sys.argv[1]]\n"
            "from firedup.cli import main\ntry:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
            "print('exit', code, 'loaded:', *(m for m in ('polars', 'matplotlib', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, str(NEW_READY)], capture_output=True, text=True, env=env(),
                          timeout=60)
    assert proc.stdout.splitlines()[-1] == "exit 0 loaded:", proc.stdout + proc.stderr


# --- the loop in-process, on a clock the test drives -----------------------------------------


class _Script:
    """Appends chunks of a log to a file on the waiter's (fake) sleeps, with a fake clock."""

    def __init__(self, path: Path, chunks: list[str]) -> None:
        self.path, self.chunks, self.t = path, list(chunks), 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        if self.chunks:
            with open(self.path, "a") as f:
                f.write(self.chunks.pop(0))


def _waiter(log: Path, script: _Script, **options: object) -> tuple[Waiter, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    opts = WaitOptions(log, timeout=600, auto_timeout=False, **options)  # type: ignore[arg-type]
    return Waiter(opts, out, err, tty=False, now=script.now, sleep=script.sleep), out, err


def test_a_crash_followed_at_once_by_a_restart_keeps_waiting_for_the_new_startup(tmp_path: Path) -> None:
    source = SAMPLE_LOGS / "crash-then-restart.log"
    if not source.exists():
        pytest.skip("sample_logs/ is not there")
    lines = source.read_text().splitlines(keepends=True)
    restart = next(i for i, t in enumerate(lines) if "server_args=" in t and i > 10)
    log = tmp_path / "server.log"
    log.write_text("".join(lines[:40]))  # the first startup, just before its crash
    # the crash and the restart arrive within the second firedup waits for a traceback to end
    script = _Script(log, ["".join(lines[40:restart + 3]), "".join(lines[restart + 3:])])
    waiter, out, err = _waiter(log, script)
    assert waiter.run_loop() == 0
    # the new process's first line is the launcher's banner right after the SIGQUIT line
    sigquit = next(i for i, t in enumerate(lines) if "Received sigquit" in t)
    banner = 1 + next(i for i, t in enumerate(lines) if "python -m sglang.l" in t and i > sigquit)
    assert banner == sigquit + 2
    assert f"note: a new startup begins at line {banner} (the server restarted)" in err.getvalue()
    assert out.getvalue().startswith("READY in 15 min 10 s")  # the second startup: 12:03:52 -> 12:19:02


def test_a_stage_entered_again_is_listed_only_when_it_lasts(tmp_path: Path) -> None:
    """Ranks interleave: TP1 still ending a stage must not make the phase list flap; and the
    prefill graph's end (0.5.14+ captures it first) is not the end of graph capture."""
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-01-10 10:00:00] server_args={'model_path': 'm', 'tp_size': 2}\n"
        "[2026-01-10 10:00:01 TP0] Load weight begin. avail mem=78.50 GB\n"
        "[2026-01-10 10:00:01 TP1] Load weight begin. avail mem=78.50 GB\n"
        "[2026-01-10 10:00:20 TP0] Load weight end. type=M, avail mem=60.00 GB\n"
        "[2026-01-10 10:00:20 TP0] Memory pool end. avail mem=10.00 GB\n"
        "[2026-01-10 10:00:20 TP1] Load weight end. type=M, avail mem=60.00 GB\n"  # a flap back to kv_cache
        "[2026-01-10 10:00:20 TP1] Memory pool end. avail mem=10.00 GB\n"
        "[2026-01-10 10:00:21 TP0] Capture target prefill CUDA graph begin. backend=breakable, avail mem=9.0 GB\n"
        "[2026-01-10 10:00:40 TP0] Capture target prefill CUDA graph end. elapsed=19.00 s, avail mem=8.0 GB.\n"
        "[2026-01-10 10:00:41 TP0] Capture target decode CUDA graph begin. backend=full, avail mem=8.0 GB\n"
        "[2026-01-10 10:01:00 TP0] Capture target decode CUDA graph end. elapsed=19.00 s, avail mem=7.0 GB.\n"
        "[2026-01-10 10:01:01] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        "[2026-01-10 10:01:05] The server is fired up and ready to roll!\n")
    waiter, _, err = _waiter(log, _Script(log, []))
    assert waiter.run_loop() == 0
    listed = re.findall(r"^\s+(\+\d+:\d\d)\s+(\S+(?: again)?)", err.getvalue(), re.M)
    assert listed == [("+0:00", "launch"), ("+0:01", "load_weights"), ("+0:20", "kv_cache"),
                      ("+0:21", "cuda_graph"), ("+1:00", "http_start"), ("+1:01", "warmup")]


def test_a_bar_still_being_redrawn_shows_as_progress(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-10 10:00:00] server_args={'model_path': 'm', 'tp_size': 1}\n"
                   "[2026-01-10 10:00:01] Load weight begin. avail mem=78.50 GB\n")
    script = _Script(log, ["Multi-thread loading shards:   0% Completed | 0/4 [00:00<?, ?it/s]",
                           "\rMulti-thread loading shards:  50% Completed | 2/4 [00:04<00:04,  2.00s/it]",
                           "\r[2026-01-10 10:00:10] Load weight end. type=M, avail mem=60.00 GB\n"
                           "[2026-01-10 10:00:11] Memory pool end. avail mem=10.00 GB\n"
                           "[2026-01-10 10:00:12] The server is fired up and ready to roll!\n"])
    waiter, _, _ = _waiter(log, script)
    seen: list[str] = []
    sleep = script.sleep

    def watch(seconds: float) -> None:
        seen.append(waiter.status(script.t))
        sleep(seconds)

    waiter.sleep = watch
    assert waiter.run_loop() == 0
    assert any(s.startswith("load_weights shards 2/4 ·") for s in seen), seen
    assert not any("shards" in s for s in seen[seen.index(next(s for s in seen if "2/4" in s)) + 2:])


@scenario
def auto_timeout(tmp: Path) -> Outcome:
    # A history run of the same config (the same args line) that was ready 2 s after its launch, which
    # a stamped launch command states (an estimated one would add the usual import time): budget 4 s.
    args = NEW_READY.read_text().splitlines()[0]
    history = tmp / "fast.log"
    history.write_text("2026-10-30 10:00:00 python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B\n"
                       f"{args}\n"
                       "[2026-10-30 10:00:01] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
                       "[2026-10-30 10:00:02] The server is fired up and ready to roll!\n")
    lines = NEW_READY.read_text().splitlines(keepends=True)
    stuck = tmp / "stuck.log"
    stuck.write_text("".join(lines[:10]))
    result = run_wait("--log", str(stuck), "--history", str(history))
    return Outcome(result, stuck)


def test_timeout_auto_takes_the_budget_of_the_same_config_and_says_so(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "auto_timeout")
    assert o.result.returncode == 124, o.result.stdout + o.result.stderr
    expected = ("--timeout auto: 4.0 s = the budget of `firedup budget` over 1 history run of this config "
                "(slowest 2.0 s from launch): rule of thumb (2 x the only run), rule of thumb: risk unknown")  # 2 x 2 s
    assert expected in o.result.stderr
    assert f"  limit: {expected}" in o.result.stdout
    assert "phase reached: load_weights (shards 4/5)" in o.result.stdout


def test_quiet_prints_the_verdict_only() -> None:
    result = run_wait("--log", str(NEW_READY), "--quiet")
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.startswith("READY in 36 s")


def test_the_url_alone_decides_when_the_log_shows_no_startup(tmp_path: Path, http_server: int) -> None:
    """`--log-level warning` leaves the log without startup lines: a 200 is then all there is."""
    log = tmp_path / "quiet-server.log"
    log.write_text("WARNING: something unrelated\n")
    out, err = io.StringIO(), io.StringIO()
    opts = WaitOptions(log, url=f"http://127.0.0.1:{http_server}/ok", timeout=30, auto_timeout=False)
    assert Waiter(opts, out, err, tty=False).run_loop() == 0
    assert out.getvalue().startswith(f"READY: http://127.0.0.1:{http_server}/ok answered 200 (the log {log} "
                                     "shows no startup lines")


def test_from_end_waits_for_a_new_startup_in_an_appended_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(NEW_READY.read_text())  # yesterday's startup, ready
    new_run = OLD_READY.read_text()
    script = _Script(log, [new_run[: len(new_run) // 2], new_run[len(new_run) // 2:]])
    waiter, out, _ = _waiter(log, script, from_end=True)
    assert waiter.run_loop() == 0
    first_new = len(NEW_READY.read_text().splitlines()) + 1
    assert out.getvalue().startswith(f"READY in {human(seconds_to_ready(OLD_READY))} by the log's clock "
                                     f"(line {first_new - 1 + _ready_line(OLD_READY)})")
    assert f"{log}  (startup #2 in this file)" not in out.getvalue()  # only the new lines were read


def test_a_pipe_is_refused_rather_than_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "server.pipe"
    os.mkfifo(fifo)
    result = run_wait("--log", str(fifo), "--timeout", "5")
    assert result.returncode == 2
    assert "not a regular file" in result.stderr


def test_on_a_terminal_one_status_line_is_redrawn_instead_of_phase_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    lines = NEW_READY.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:5]))
    upto = 1 + next(i for i, t in enumerate(lines) if "| 2/5 [" in t)  # the log stops at shard 2 of 5 for a while
    script = _Script(log, ["".join(lines[5:upto]), "", "", "".join(lines[upto:])])
    out, err = io.StringIO(), io.StringIO()
    opts = WaitOptions(log, timeout=600, auto_timeout=False, history=_runs(NEW_READY))
    assert Waiter(opts, out, err, tty=True, now=script.now, sleep=script.sleep).run_loop() == 0
    shown = [frame for frame in err.getvalue().split("\r\x1b[K") if frame.strip()]
    assert any(frame.startswith("load_weights shards 2/5 · ") and " · ETA " in frame for frame in shown), shown
    assert not re.search(r"^\s+\+\d+:\d\d\s+load_weights", err.getvalue(), re.M)  # no phase list on a TTY
    assert err.getvalue().endswith("\r\x1b[K")  # the status line is cleared before the verdict
    assert out.getvalue().startswith("READY in 36 s")


def test_a_log_of_no_known_engine_is_said_so_and_read_once_an_engine_shows(tmp_path: Path) -> None:
    """A wrapper's chatter before the server starts used to be read as one default engine after
    200 lines, so a vLLM startup behind it was read with the wrong rules and never got ready."""
    log = tmp_path / "server.log"
    log.write_text("".join(f"wrapper: waiting for the model volume ({i})\n" for i in range(250)))
    script = _Script(log, ["", VLLM_READY.read_text()])
    waiter, out, err = _waiter(log, script)
    assert waiter.run_loop() == 0, err.getvalue()
    assert err.getvalue().count("no known engine") == 1
    assert f"note: {log}: no known engine: none of sglang, vllm recognises its first lines" in err.getvalue()
    assert waiter.seen.fmt is not None and waiter.seen.fmt.name == "vllm"
    assert out.getvalue().startswith("READY in ")


def test_a_log_without_years_takes_the_files_date_as_parse_does(tmp_path: Path) -> None:
    """vLLM prints no year: `wait` said 1970 where `parse` and `timeline` said the file's year
    (regression: only `parse` read the file's modification time)."""
    log = tmp_path / "server.log"
    log.write_text(VLLM_READY.read_text())
    written = time.mktime((2025, 6, 10, 12, 0, 0, 0, 0, -1))
    os.utime(log, (written, written))
    waiter, out, _ = _waiter(log, _Script(log, []))
    assert waiter.run_loop() == 0
    (parsed,) = parse_paths([str(log)]).runs
    assert parsed.first_ts is not None and parsed.first_ts.iso.startswith("2025-06-05T")
    assert waiter.seen.run is not None and waiter.seen.run.first_ts == parsed.first_ts
    assert waiter.seen.run.date_source == parsed.date_source == "mtime"
    assert f"from {parsed.first_ts.iso} to " in out.getvalue()
    assert "1970" not in out.getvalue()


def test_the_stage_line_names_the_line_where_the_stage_began(tmp_path: Path) -> None:
    """SGLang's `Capture cuda graph end` points to http_start, and a piecewise capture begins
    in the same second: http_start begins after the last capture, not at the first capture's
    end (regression: `+0:28 http_start [line 25]` on small-tp1, then `cuda_graph again`)."""
    source = SAMPLE_LOGS / "small-tp1.log"
    if not source.exists():
        pytest.skip("sample_logs/ is not there")
    lines = source.read_text().splitlines(keepends=True)
    log = tmp_path / "server.log"
    log.write_text(lines[0])
    waiter, _, err = _waiter(log, _Script(log, lines[1:]))  # the log arrives line by line
    assert waiter.run_loop() == 0
    listed = re.findall(r"^\s+(\+\d+:\d\d)\s+(\S+(?: again)?)(?:\s+\(.*\))?\s+\[line (\d+)\]", err.getvalue(), re.M)
    stages = [stage for _, stage, _ in listed]
    assert stages == ["launch", "dist_init", "load_weights", "kv_cache", "cuda_graph", "http_start", "warmup"]
    last_capture_end = max(i for i, t in enumerate(lines, start=1) if re.search(r"Capture .*graph end", t))
    uvicorn = next(i for i, t in enumerate(lines, start=1) if "Uvicorn running on" in t)
    offset, _, line = listed[stages.index("http_start")]
    assert last_capture_end <= int(line) < uvicorn
    assert offset == "+1:06"  # 14:21:10 -> 14:22:16, as `timeline` starts http_start


def test_a_timer_reported_at_its_end_is_not_announced_as_the_stage_it_ends(tmp_path: Path) -> None:
    """vLLM reports `init engine ... took 90.54 s` when the engine is up: the second after the
    graph capture is its tail, not a stage that usually takes 90 s (regression: `engine_init
    (usually 1 min 31 s)` one second before ready)."""
    lines = VLLM_SAMPLE.read_text().splitlines(keepends=True)
    (history,) = parse_paths([str(VLLM_SAMPLE)]).runs
    log = tmp_path / "server.log"
    log.write_text(lines[0])
    waiter, out, err = _waiter(log, _Script(log, lines[1:]), history=[history])
    assert waiter.run_loop() == 0, out.getvalue() + err.getvalue()
    said = err.getvalue()
    assert "usually" in said  # the history was used
    listed = re.findall(r"^\s+\+\d+:\d\d\s+(\S+)", said, re.M)
    assert "engine_init" not in listed and "model_loading" not in listed, said
    assert listed[-2:] == ["cuda_graph", "http_start"]
    # what a live engine_init usually lasts is its tail after the capture, not the whole timer
    from firedup.live.history import History

    assert History([history]).typical_stage("engine_init") == 0.0
    assert history.phase_seconds()["engine_init"] > 90


# --- issue 17: a stream on stdin, the URL alone, silences classified, the engine's own figures ---


def _with_metrics(tmp: Path, load_weight: str = "10.20") -> Path:
    """NEW_READY started with --enable-metrics (and, if asked, another load_weight in its timings line)."""
    text = NEW_READY.read_text().replace("'attention_backend': 'flashinfer'}",
                                         "'attention_backend': 'flashinfer', 'enable_metrics': True}")
    assert "'enable_metrics': True" in text
    text = text.replace("load_weight=10.20,", f"load_weight={load_weight},")
    log = tmp / f"metrics-{load_weight}.log"
    log.write_text(text)
    return log


def _phases(stderr: str) -> list[str]:
    return re.findall(r"^\s+\+\d+:\d\d\s+(\S+)", stderr, re.M)


@scenario
def stdin_stream(tmp: Path) -> Outcome:
    """`kubectl logs -f pod | firedup wait --log -`, with `tail -F` as the streaming writer."""
    out, port = tmp / "server.log", free_port()
    out.touch()
    tail = subprocess.Popen(["tail", "-n", "+1", "-s", "0.1", "-F", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        waiting = Waiting("--log", "-", "--url", f"http://127.0.0.1:{port}/ready", "--timeout", "1m30s",
                          stdin=tail.stdout)
        waiting.until("firedup wait:")
        with replaying(NEW_READY, out, port, 20):
            result = waiting.finish()
    finally:
        tail.kill()
        tail.wait()
    return Outcome(result, out, port)


def test_a_log_streamed_on_stdin_is_read_live_like_a_file(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "stdin_stream")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    assert "reading the log from standard input" in o.result.stderr
    assert "timeout 1 min 30 s" in o.result.stderr  # a kubectl-style duration
    assert o.result.stdout.startswith(f"READY in {human(seconds_to_ready(NEW_READY))} by the log's clock "
                                      f"(line {_ready_line(NEW_READY)}); http://127.0.0.1:{o.port}/ready answered 200")
    assert _phases(o.result.stderr) == ["launch", "dist_init", "load_weights", "kv_cache", "cuda_graph",
                                        "http_start", "warmup"]


@scenario
def url_only(tmp: Path) -> Outcome:
    out, port = tmp / "server.log", free_port()
    waiting = Waiting("--url", f"http://127.0.0.1:{port}", "--engine", "sglang", "--timeout", "60")
    waiting.until("firedup wait:")
    with replaying(NEW_READY, out, port, 20) as server:
        result = waiting.finish()
    return Outcome(result, out, port, replay=server)


def test_the_url_alone_replaces_a_curl_loop_and_finds_the_readiness_path(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "url_only")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    # a base URL: the engine's dedicated readiness endpoint (0.5.20+ has /ready), status code only
    assert o.result.stdout.startswith(f"READY: http://127.0.0.1:{o.port}/ready answered 200 (no log given; waited ")
    assert o.replay is not None
    answered = re.search(r"answered \d+ requests: (.*)", o.replay.stderr)
    assert answered and "/ready 200x" in answered[1] and "/health" not in answered[1], o.replay.stderr
    # the engine's own figures, from /server_info (no --enable-metrics in this log): its timings line
    timings = re.search(r"load_weight=([\d.]+), kv_cache_allocation=([\d.]+)", NEW_READY.read_text())
    assert timings is not None
    telemetry = next(line for line in o.result.stdout.splitlines() if "engine telemetry" in line)
    assert f"(http://127.0.0.1:{o.port}/server_info)" in telemetry
    assert f"load_weight {human(float(timings[1]))}" in telemetry and "cuda_graph.decode 8.1 s" in telemetry


@scenario
def metrics(tmp: Path) -> Outcome:
    out, port = tmp / "server.log", free_port()
    result, server = watched(_with_metrics(tmp), out, port, 20, "--url", f"http://127.0.0.1:{port}/ready",
                             "--timeout", "60", "--record", str(tmp / "record.json"))
    return Outcome(result, out, port, replay=server)


def test_startup_metrics_are_read_from_metrics_and_agree_with_the_log(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "metrics")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    stdout = o.result.stdout
    # the same figures as the log's timings line, which the timeline shows: one line says they agree
    agrees = next(line for line in stdout.splitlines() if "engine telemetry" in line)
    assert agrees.startswith(f"  engine telemetry (http://127.0.0.1:{o.port}/metrics): agrees with the log: ")
    assert "the log's own timings line (10 figures)" in agrees and "load_weights 10 s" in agrees
    assert stdout.count("kv_cache_allocation") == 1, stdout  # each figure printed once
    assert "disagreement" not in stdout
    assert o.replay is not None and "/metrics 200x" in o.replay.stderr
    # and kept beside the log's phases: --record writes them with the run as `parse --json` shows it
    import json

    record = json.loads((o.out.parent / "record.json").read_text())
    first = stdout.splitlines()[0]  # the headline fitted to 80 columns: its first line begins it
    assert record["exit_code"] == 0 and record["headline"].startswith(first) and first.startswith("READY in ")
    assert record["telemetry"]["source"] == f"http://127.0.0.1:{o.port}/metrics"
    assert record["telemetry"]["phases"]["load_weight"] == 10.2
    assert record["telemetry"]["phases"]["cuda_graph.decode"] == 8.05
    assert record["telemetry"]["disagrees"] == [] and record["telemetry"]["agrees"]
    assert record["run"]["engine_timings"]["load_weight"] == 10.2 and record["run"]["outcome"] == "ready"


@scenario
def metrics_disagree(tmp: Path) -> Outcome:
    """The log of one server, the URL of another whose weights took 30 s: the figures disagree."""
    out, other_out, port, other = tmp / "server.log", tmp / "other.log", free_port(), free_port()
    waiting = Waiting("--log", str(out), "--url", f"http://127.0.0.1:{other}/ready", "--timeout", "60")
    waiting.until("firedup wait:")
    with replaying(_with_metrics(tmp, "30.00"), other_out, other, 20), replaying(_with_metrics(tmp), out, port, 20):
        result = waiting.finish()
    return Outcome(result, out, port, other)


def test_startup_metrics_that_disagree_with_the_log_are_flagged(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "metrics_disagree")
    assert o.result.returncode == 0, o.result.stdout + o.result.stderr
    lines = [line for line in o.result.stdout.splitlines() if "disagreement:" in line]
    assert lines[0].strip() == ("disagreement: load_weight 30.00 s here vs 10.20 s in the log's own timings line "
                                "(another run? a restarted server?)")
    assert any("load_weight 30 s here vs load_weights 10 s by the log's lines" in line for line in lines)


def _stuck_log(tmp: Path) -> Path:
    lines = NEW_READY.read_text().splitlines(keepends=True)
    stuck = tmp / "stuck.log"  # the log stops in capture, at batch 2 of 4, and stays silent
    stuck.write_text("".join(lines[: next(i for i, t in enumerate(lines) if "2/4" in t) + 1]))
    return stuck


def _fake_server(tmp: Path, compiler: bool) -> subprocess.Popen[bytes]:
    """A stand-in for the server's main process; with a child whose executable is named `ptxas`,
    working (a sleeping one compiles nothing)."""
    ptxas = tmp / "ptxas"
    ptxas.symlink_to(Path(sys.executable))
    work = "import time\\nend = time.time() + 60\\nwhile time.time() < end: pass"
    child = f"subprocess.Popen([{str(ptxas)!r}, '-c', '{work}'])\n" if compiler else ""
    return subprocess.Popen([sys.executable, "-c", f"import subprocess, time\n{child}time.sleep(60)"])


def _silent_with(tmp: Path, compiler: bool) -> Outcome:
    server = _fake_server(tmp, compiler)
    out = tmp / "server.log"
    try:
        if not compiler:
            os.kill(server.pid, signal.SIGSTOP)
        with replaying(_stuck_log(tmp), out, free_port(), 50):
            wait_for_text(out, "2/4")
            result = run_wait("--log", str(out), "--pid", str(server.pid), "--timeout", "4", "--stall-after", "1",
                              "--record", str(tmp / "record.json"))
    finally:
        for p in reversed(ProcFS().tree(server.pid)):
            os.kill(p.pid, signal.SIGKILL)
        server.wait()
    return Outcome(result, out, other=server.pid)


@scenario
def silent_compiling(tmp: Path) -> Outcome:
    return _silent_with(tmp, compiler=True)


@scenario
def silent_stopped(tmp: Path) -> Outcome:
    return _silent_with(tmp, compiler=False)


def test_a_silence_with_a_compiler_child_is_compiling_and_times_out_busy(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "silent_compiling")
    assert o.result.returncode == 124, o.result.stdout + o.result.stderr
    assert o.result.stdout.startswith("TIMED OUT while busy after 4")
    assert f"  process tree of pid {o.other}: compiling kernels (ptxas)" in o.result.stdout
    # without a terminal, said as it was seen (the tree is watched from the start: maybe before the
    # silence), and in the stall warning
    assert re.search(rf"^note: (no log output for [\d.]+ s in cuda_graph; )?process tree of pid {o.other}: "
                     r"compiling kernels \(ptxas\)$", o.result.stderr, re.M), o.result.stderr
    assert "Process tree of pid" in next(line for line in o.result.stderr.splitlines() if "stall?" in line)


def test_a_silence_with_a_stopped_tree_is_stuck_and_exits_4(outcomes: dict[str, Outcome | None]) -> None:
    o = _outcome(outcomes, "silent_stopped")
    assert o.result.returncode == 4, o.result.stdout + o.result.stderr
    assert o.result.stdout.startswith("TIMED OUT while stuck after 4")
    assert f"  process tree of pid {o.other}: stopped: 1 process suspended" in o.result.stdout
    assert "hint:  nothing in the tree works" in o.result.stdout
    import json

    record = json.loads((o.out.parent / "record.json").read_text())
    assert record["exit_code"] == 4 and record["pid"] == o.other
    assert record["process_tree"] == {"pid": o.other, "kind": "stuck", "busy": False,
                                      "text": "stopped: 1 process suspended (SIGSTOP, a debugger, a frozen cgroup)",
                                      "evidence": ["state T (stopped) in every process of the tree"]}
    assert record["run"]["outcome"] == "incomplete"


def test_a_log_on_stdin_that_ends_decides_at_once() -> None:
    crashed = subprocess.run(firedup("wait", "--log", "-", "--timeout", "30"), input=CRASH_OOM.read_text(),
                             capture_output=True, text=True, env=env(), timeout=60)
    assert crashed.returncode == 3, crashed.stdout + crashed.stderr
    assert crashed.stdout.startswith("CRASHED (oom) in cuda_graph after ") and " of stdin" in crashed.stdout
    cut = "".join(NEW_READY.read_text().splitlines(keepends=True)[:10])
    ended = subprocess.run(firedup("wait", "--log", "-", "--timeout", "30"), input=cut, capture_output=True,
                           text=True, env=env(), timeout=60)
    assert ended.returncode == 3, ended.stdout + ended.stderr
    assert ended.stdout.startswith("LOG ENDED: standard input closed in load_weights")
    ready = subprocess.run(firedup("wait", "--log", "-", "--quiet"), input=NEW_READY.read_text(),
                           capture_output=True, text=True, env=env(), timeout=60)
    assert ready.returncode == 0 and ready.stdout.startswith("READY in 36 s")


def test_timeout_0_checks_once_as_kubectl_wait(tmp_path: Path, http_server: int) -> None:
    began = time.monotonic()
    assert run_wait("--log", str(NEW_READY), "--timeout", "0").returncode == 0
    stuck = _stuck_log(tmp_path)
    late = run_wait("--log", str(stuck), "--timeout", "0")
    assert late.returncode == 124 and late.stdout.startswith("TIMED OUT after ")
    assert "phase reached: cuda_graph (batches 2/4)" in late.stdout
    ok = run_wait("--url", f"http://127.0.0.1:{http_server}/ok", "--timeout", "0")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    starting = run_wait("--url", f"http://127.0.0.1:{http_server}/starting", "--timeout", "0")
    assert starting.returncode == 124 and "/starting: HTTP 503 x1" in starting.stdout
    assert time.monotonic() - began < 20  # four processes, no waiting


def _real_waiter(opts: WaitOptions) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = Waiter(opts, out, err, tty=False).run_loop()
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("log", [CRASH_OOM, SAMPLE_LOGS / "oom-in-cuda-graph.log",
                                 Path(__file__).parent / "fixtures" / "crash" / "bare_traceback_time.log"],
                         ids=["fatal-line", "sample", "bare-traceback"])
def test_timeout_0_on_a_finished_crash_log_is_crashed(log: Path) -> None:
    """`wait --timeout 0` on a log that ends in a crash said TIMED OUT (exit 124): the crash had
    not "settled" (the log quiet for a second after it) in the one check. The log read once is
    all there is, judged as a stream read to its end is: a crash in it is a crash."""
    code, out, _ = _real_waiter(WaitOptions(log, timeout=0, auto_timeout=False))
    assert code == 3 and out.startswith("CRASHED (oom) in cuda_graph"), out


def test_a_200_before_any_line_of_the_log_is_not_readiness(tmp_path: Path, http_server: int) -> None:
    """An old server still on the port answered 200 and `wait` said READY before the new
    server wrote a line (issue 13)."""
    log = tmp_path / "server.log"  # the new server has not started writing
    url = f"http://127.0.0.1:{http_server}/ok"
    code, out, err = _real_waiter(WaitOptions(log, url=url, timeout=2.5, auto_timeout=False))
    assert code == 124, out + err
    assert f"warning: {url} answers 200 but {log} has no line of this startup yet" in err
    assert "an older server still on the port?" in err
    log.write_text("")  # an empty file is no line either
    assert _real_waiter(WaitOptions(log, url=url, timeout=2.5, auto_timeout=False))[0] == 124


def test_a_redirect_is_not_readiness(http_server: int) -> None:
    """A redirect to a login page answering 200 was followed and taken as ready (issue 13)."""
    url = f"http://127.0.0.1:{http_server}/redirect"
    assert probe(url) == (302, "redirect to /login")
    code, out, err = _real_waiter(WaitOptions(None, url=url, timeout=2.5, auto_timeout=False))
    assert code == 124, out + err
    assert "answers HTTP 302 (redirect to /login): a redirect is not readiness" in err
    assert "HTTP 302 (redirect to /login) x" in out


@pytest.mark.parametrize(("args", "message"), [
    ([], "nothing to wait for"),
    (["--url", "http://127.0.0.1:1/x", "--timeout", "inf"], "--timeout 'inf'"),
    (["--url", "http://127.0.0.1:1/x", "--timeout", "1e400"], "--timeout '1e400'"),
    (["--url", "http://127.0.0.1:1/x", "--timeout", "nan"], "--timeout 'nan'"),
    (["--url", "http://127.0.0.1:1/x", "--stall-after", "nan"], "--stall-after"),
    (["--log", "-", "--from-end"], "--from-end"),
    (["--url", "http://127.0.0.1:1/x", "--record", "/nonexistent/dir/r.json"], "no such directory"),
])
def test_more_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run_wait(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_the_status_line_and_the_notes_name_what_a_silent_tree_does(tmp_path: Path) -> None:
    """In-process, on a fake /proc tree and a clock the test drives: a compiler child shows on
    the terminal's status line; without a terminal it is said once, then the change to idle."""
    from _proctree import FakeProc
    from firedup.live.proc import TreeWatch

    root = tmp_path / "proc"
    root.mkdir()
    fake = FakeProc(root)
    fake.add(100, 1, "python3", ["/usr/bin/python3", "-m", "server"])
    log = tmp_path / "server.log"
    log.write_text("".join(_stuck_log(tmp_path).read_text().splitlines(keepends=True)))
    for tty in (True, False):
        fake.add(101, 100, "ptxas", state="R")
        script = _Script(log, [])
        out, err = io.StringIO(), io.StringIO()
        opts = WaitOptions(log, timeout=30, auto_timeout=False, inspect_after=5)
        waiter = Waiter(opts, out, err, tty=tty, now=script.now, sleep=script.sleep)
        waiter.watch, waiter.seen.watch_pid = TreeWatch(100, ProcFS(root), gpu=None), 100
        seen: list[str] = []
        sleep = script.sleep

        def tick(seconds: float, waiter: Waiter = waiter, seen: list[str] = seen, sleep: Callable = sleep,
                 script: _Script = script) -> None:
            seen.append(waiter.status(script.t))
            sleep(seconds)
            if 12 <= script.t < 12.5 and 101 in fake.procs:
                fake.remove(101)  # the compiler is done; nothing moves any more

        waiter.sleep = tick
        assert waiter.run_loop() == 124  # no --pid given: a timeout never claims "stuck"
        if tty:
            assert any(s.startswith("cuda_graph batches 2/4 · ") and s.endswith(" · compiling kernels (ptxas)")
                       for s in seen), seen
            assert any("idle: no CPU" in s for s in seen)
        else:
            notes = [line for line in err.getvalue().splitlines()
                     if line.startswith("note: ") and "process tree of pid 100: " in line]
            assert [n.split("process tree of pid 100: ")[1][:18] for n in notes] == ["compiling kernels ",
                                                                                   "idle: no CPU (0% o"]
            assert "process tree of pid 100: idle: no CPU" in out.getvalue()
            assert out.getvalue().startswith("TIMED OUT after 30")


def test_a_local_log_that_names_the_server_pid_has_its_tree_looked_at(tmp_path: Path) -> None:
    """No --pid: uvicorn's `Started server process [N]` names it; the tree is then watched (but a
    pid read from a log never makes a timeout "stuck": it may have been reused)."""
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lines = NEW_READY.read_text().splitlines(keepends=True)
        upto = next(i for i, t in enumerate(lines) if "Started server process" in t)
        log = tmp_path / "server.log"
        log.write_text("".join(lines[:upto]) + lines[upto].replace("[4321]", f"[{server.pid}]"))
        code, out, err = _real_waiter(WaitOptions(log, timeout=3.5, auto_timeout=False, stall_after=1))
        assert code == 124, out + err
        assert f"note: watching the process tree of pid {server.pid} every second (named by the log, " \
               f"line {upto + 1})" in err
        assert re.search(rf"^note: no log output for [\d.]+ s in http_start; process tree of pid {server.pid}: idle",
                         err, re.M), err
        assert out.startswith("TIMED OUT after ")  # neither "while busy" nor "while stuck"
    finally:
        server.kill()
        server.wait()
    # a pid of no Python process of this machine (the log came from elsewhere) is left alone
    code, out, err = _real_waiter(WaitOptions(log, timeout=0.5, auto_timeout=False, stall_after=1))
    assert "watching the process tree" not in err


def test_a_base_url_moves_from_a_missing_readiness_path_to_the_health_path(http_server: int) -> None:
    """A server without /ready (vLLM, SGLang before 0.5.20): the 404 there moves the probe to /health."""
    base = f"http://127.0.0.1:{http_server}"
    code, out, err = _real_waiter(WaitOptions(None, url=base, timeout=10, auto_timeout=False))
    assert code == 0, out + err
    assert f"note: {base}/ready does not exist there (404); probing {base}/health instead" in err
    assert out.startswith(f"READY: {base}/health answered 200 (no log given; waited ")


def test_wait_fits_80_columns_when_piped(tmp_path: Path) -> None:
    """Without a terminal (a CI log) every line fits 80 columns, the verdict too (issue 44: it was
    up to 123): its first line is the answer, for `head -1`; --record keeps it whole."""
    log = tmp_path / "server.log"
    log.write_bytes((Path(__file__).resolve().parents[1] / "sample_logs" / "oom-in-cuda-graph.log").read_bytes())
    proc = subprocess.run(firedup("wait", "--log", str(log), "--timeout", "30"), capture_output=True, text=True,
                          env={**env(), "COLUMNS": "80"}, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("CRASHED (oom) in cuda_graph")
    assert [line for line in out + proc.stderr.splitlines() if len(line) > 80] == []
    assert "error: Exception: Capture cuda graph failed: CUDA out of memory" in " ".join(proc.stdout.split())


# --- what the machine shows while the log is silent, and where the clock starts (issue 28) --------


class _Timed:
    """A fake clock whose sleeps append log chunks and run actions when their time has come."""

    def __init__(self, path: Path, events: list[tuple[float, str | Callable[[], None]]]) -> None:
        self.path, self.events, self.t = path, sorted(events, key=lambda e: e[0]), 0.0
        self.seen: list[str] = []
        self.waiter: Waiter | None = None

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        if self.waiter is not None:
            self.seen.append(self.waiter.status(self.t))
        self.t += seconds
        while self.events and self.events[0][0] <= self.t:
            _, what = self.events.pop(0)
            if callable(what):
                what()
            else:
                with open(self.path, "a") as f:
                    f.write(what)


def _fake_tree(tmp: Path, started: float) -> Any:
    """A fake /proc holding the server's process 100, launched at `started` (seconds since the epoch)."""
    from _proctree import BTIME, FakeProc

    root = tmp / "proc"
    root.mkdir()
    fake = FakeProc(root)
    fake.add(100, 1, "python3", ["/usr/bin/python3", "-m", "server"],
             start=round((started - BTIME) * os.sysconf("SC_CLK_TCK")))
    return fake


def _stamped(wall: float, zone: timedelta = timedelta(0)) -> str:
    return (datetime.fromtimestamp(wall) + zone).strftime("[%Y-%m-%d %H:%M:%S]")


def _timed_waiter(log: Path, fake: Any, script: _Timed, **options: Any) -> tuple[Waiter, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    opts = WaitOptions(log, **{"timeout": 120, "auto_timeout": False, "pid": 100, **options})
    waiter = Waiter(opts, out, err, tty=False, now=script.now, sleep=script.sleep, procfs=ProcFS(fake.root),
                    gpu=lambda: None)
    script.waiter = waiter
    return waiter, out, err


PRELOG = ("/tmp/site/torchao/quantization/quant_api.py:1731: SyntaxWarning: invalid escape sequence '\\.'\n"
          '  """Configuration class for applying different quantization configs to modules or parameters.\n'
          "\x1b[1;33m'--cuda-graph-max-bs' is deprecated and will be removed in a future release.\x1b[0m\n")


def test_no_engine_alarm_before_the_server_log_begins(tmp_path: Path) -> None:
    """realgpu: `note: ... no known engine: none of sglang, vllm recognises its first lines` while
    only Python's warnings had come, before the server's first stamped line; the wait says it
    waits for that line, and counts from the measured launch."""
    log = tmp_path / "server.log"
    fake = _fake_tree(tmp_path, time.time() - 3)
    events: list[tuple[float, str | Callable[[], None]]] = [(0.5, PRELOG)]
    script = _Timed(log, events)
    waiter, _, err = _timed_waiter(log, fake, script, timeout=40)
    w0 = waiter.seen.clock.wall_at_start
    events += [(12.0, f"{_stamped(w0 + 12)} Attention backend not specified. Use fa3 backend by default.\n"),
               (16.0, f"{_stamped(w0 + 16)} server_args=ServerArgs(model_path='/tmp/model', tp_size=1)\n"
                      f"{_stamped(w0 + 16)} Init torch distributed begin.\n")]
    script.events = sorted(events, key=lambda e: e[0])
    assert waiter.run_loop() == 4  # the fake tree sits idle: stuck
    assert "no known engine" not in err.getvalue()
    # (the tree's activity follows a " · ": it is watched from the start)
    before = [s.split(" · ")[0] for s in script.seen if s.startswith("waiting for the server's first log line (launched ")]
    assert before[0] in ("waiting for the server's first log line (launched 3.0 s ago)",  # the log appeared at 0.5 s
                         "waiting for the server's first log line (launched 4.0 s ago)"), before
    assert before[-1] in ("waiting for the server's first log line (launched 14 s ago)",
                          "waiting for the server's first log line (launched 15 s ago)"), before
    assert any(s.startswith("the log has begun; waiting for a line that shows its engine (launched 1") for s in script.seen)
    assert re.search(r"^note: pid 100 was launched (14|15) s before the log's first line", err.getvalue(), re.M)


def test_lines_no_format_reads_do_raise_the_alarm(tmp_path: Path) -> None:
    """A stamped line in a layout no format reads is a log of another engine: said, once the log pauses."""
    log = tmp_path / "server.log"
    script = _Timed(log, [(0.5, "22:38:01 worker 0 starting\n22:38:02 worker 0 listening on :9000\n")])
    out, err = io.StringIO(), io.StringIO()
    waiter = Waiter(WaitOptions(log, timeout=8, auto_timeout=False), out, err, tty=False, now=script.now,
                    sleep=script.sleep)
    assert waiter.run_loop() == 124
    assert "no known engine: none of" in err.getvalue()


def test_the_pid_start_is_the_measured_launch_on_the_log_clock(tmp_path: Path) -> None:
    """The server prints in another zone than this machine's (a container printing UTC): the
    launch, taken from /proc, is put on the log's clock by the quarter hours between them."""
    log = tmp_path / "server.log"
    zone = timedelta(hours=5, minutes=30)
    fake = _fake_tree(tmp_path, time.time() - 20)
    script = _Timed(log, [])
    record = tmp_path / "record.json"
    waiter, out, _ = _timed_waiter(log, fake, script, record=record)
    w0 = waiter.seen.clock.wall_at_start
    body = ("{s0} server_args=ServerArgs(model_path='/tmp/model', tp_size=1)\n"
            "{s0} Load weight begin. avail mem=78.50 GB\n{s1} Load weight end. type=M, avail mem=60.00 GB\n"
            "{s1} Memory pool end. avail mem=10.00 GB\n"
            "{s2} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
            "{s3} The server is fired up and ready to roll!\n")
    script.events = [(2.0, body.format(s0=_stamped(w0 + 2, zone), s1=_stamped(w0 + 4, zone),
                                       s2=_stamped(w0 + 6, zone), s3=_stamped(w0 + 8, zone)))]
    assert waiter.run_loop() == 0
    run = waiter.seen.run
    assert run is not None and run.launch is not None and run.launch.source == "measured"
    assert waiter.seen.clock.launch_wall is not None and abs(waiter.seen.clock.launch_wall - (w0 - 20)) < 1  # the fake's start, to 10 ms
    launched = datetime.fromtimestamp(waiter.seen.clock.launch_wall) + zone  # on the log's clock
    expected = (datetime.fromtimestamp(w0 + 2) + zone).replace(microsecond=0) - launched
    assert run.launch.gap == pytest.approx(expected.total_seconds(), abs=0.01)
    assert run.launch.ts is not None and abs((run.launch.ts.dt - launched).total_seconds()) < 0.01
    assert "the log's clock runs 5 h 30 min ahead of this machine's" in run.launch.basis
    headline = out.getvalue().splitlines()[0]
    assert re.match(r"READY in 6\.0 s by the log's clock \(line 6\), (27|28) s from launch \((21|22) s before the "
                    r"log's first line\); waited ", headline), headline
    saved = json.loads(record.read_text())
    assert saved["run"]["launch"]["source"] == "measured"
    assert saved["run"]["launch"]["seconds_before_first_line"] == pytest.approx(expected.total_seconds(), abs=0.05)


def test_a_pid_reused_after_the_server_died_is_a_death(tmp_path: Path) -> None:
    """The server died and the kernel gave its pid to a new process: the signal test sees a live
    pid; the start time in /proc is another process's."""
    log = tmp_path / "server.log"
    log.write_text("[2026-01-10 10:00:00] server_args={'model_path': 'm', 'tp_size': 1}\n"
                   "[2026-01-10 10:00:01] Load weight begin. avail mem=78.50 GB\n")
    fake = _fake_tree(tmp_path, time.time() - 5)
    script = _Timed(log, [(3.0, lambda: fake.set(100, start=fake.procs[100]["start"] + 500))])
    waiter, out, _ = _timed_waiter(log, fake, script, timeout=30)
    assert waiter.run_loop() == 3
    assert out.getvalue().startswith("DIED: process 100 is gone (its pid now belongs to another process) before the "
                                     "server was ready; the log stops in load_weights")


def _free_pid() -> int:
    taken = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    return next(p for p in range(max(taken) + 5000, 10**7) if p not in taken and not pid_alive(p))


@pytest.mark.parametrize("pid", ["free", "99999999999"])
def test_a_pid_that_is_not_running_is_a_usage_error_not_a_death(pid: str) -> None:
    number = str(_free_pid()) if pid == "free" else pid
    result = run_wait("--pid", number, "--url", "http://127.0.0.1:1/health", "--timeout", "5")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--pid {number}: no such process is running" in result.stderr
    assert "OOM" not in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_a_pid_not_running_beside_a_log_says_so(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-10 10:00:00] server_args={'model_path': 'm', 'tp_size': 1}\n")
    pid = _free_pid()
    result = run_wait("--log", str(log), "--pid", str(pid), "--timeout", "5")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.startswith(f"NO PROCESS: pid {pid} was not running when the wait began")
    assert "OOM" not in result.stdout


def test_compilers_seen_in_graph_capture_make_the_kernel_jit_cold(tmp_path: Path) -> None:
    """realgpu, cold EAGLE-3: the tree showed cc1plus/cicc/nvcc in graph capture, the verdict said
    `kernel_jit warm ... nothing slow was compiled`. What `wait --pid` saw now joins the verdict."""
    log = tmp_path / "server.log"
    fake = _fake_tree(tmp_path, time.time() - 5)
    record = tmp_path / "record.json"
    script = _Timed(log, [])
    waiter, out, err = _timed_waiter(log, fake, script, record=record)
    w0 = waiter.seen.clock.wall_at_start
    s = [_stamped(w0 + t) for t in (1, 2, 40, 41, 43)]
    script.events = [
        (1.0, f"{s[0]} server_args={{'model_path': 'm', 'tp_size': 1}}\n{s[0]} Load weight begin. avail mem=78.5 GB\n"
              f"{s[0]} Load weight end. type=M, avail mem=60.00 GB\n{s[0]} Memory pool end. avail mem=10.00 GB\n"
              f"{s[1]} Capture target decode CUDA graph begin. backend=full, avail mem=9.0 GB\n"),
        (15.0, lambda: fake.add(101, 100, "nvcc", ["/usr/local/cuda/bin/nvcc", "jit.cu"], state="R")),
        (17.0, lambda: fake.add(102, 101, "cicc", ["/usr/local/cuda/nvvm/bin/cicc", "jit.cu"], state="R")),
        (25.0, lambda: (fake.remove(102), fake.remove(101))),
        (40.0, f"{s[2]} Capture target decode CUDA graph end. elapsed=38.00 s, avail mem=8.0 GB.\n"
               f"{s[3]} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
               f"{s[4]} The server is fired up and ready to roll!\n"),
    ]
    assert waiter.run_loop() == 0
    assert re.search(r"^note: no log output for 1\d s in cuda_graph; process tree of pid 100: compiling kernels "
                     r"\(nvcc\)", err.getvalue(), re.M), err.getvalue()
    summary = " ".join(out.getvalue().split())
    assert "kernel_jit cold: compilers ran in the server's process tree in cuda_graph (cicc, nvcc; seen by wait " \
           "--pid for about" in summary, summary
    saved = json.loads(record.read_text())
    verdict = saved["run"]["caches"]["kernel_jit"]
    assert verdict["verdict"] == "cold" and verdict["basis"] == "process" and verdict["phase"] == "cuda_graph"
    compiling = [x for x in saved["process_timeline"] if x["kind"] == "compiling"]
    assert compiling and compiling[0]["phase"] == "cuda_graph" and compiling[0]["compilers"] == ["cicc", "nvcc"]
    assert s[1][1:] <= compiling[0]["since"].replace("T", " ") <= s[2][1:]
    assert any(e.startswith("compiler processes: nvcc (pid 101)") for e in compiling[0]["evidence"])


def test_a_busy_gpu_in_graph_capture_through_nvml(tmp_path: Path) -> None:
    """A real `firedup wait` with `nvidia-ml-py` importable (a fake `pynvml` module that answers
    for the watched pid): the silent tree in graph capture is `GPU busy (capturing graphs ...)`."""
    fakes = tmp_path / "site"
    fakes.mkdir()
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (fakes / "pynvml.py").write_text(
        "from types import SimpleNamespace as N\nclass NVMLError(Exception): pass\n"
        "def nvmlInit(): pass\ndef nvmlDeviceGetCount(): return 1\ndef nvmlDeviceGetHandleByIndex(i): return i\n"
        "def nvmlDeviceGetMinorNumber(h): return 0\n"
        f"def nvmlDeviceGetComputeRunningProcesses(h): return [N(pid={server.pid}, usedGpuMemory=30 << 30)]\n"
        "def nvmlDeviceGetUtilizationRates(h): return N(gpu=85, memory=40)\n"
        "def nvmlDeviceGetMemoryInfo(h): return N(used=31 << 30, total=80 << 30, free=49 << 30)\n")
    try:
        stuck = _stuck_log(tmp_path)
        record = tmp_path / "record.json"
        result = subprocess.run(firedup("wait", "--log", str(stuck), "--pid", str(server.pid), "--timeout", "5",
                                        "--stall-after", "1", "--record", str(record)),
                                capture_output=True, text=True, timeout=60,
                                env={**env(), "PYTHONPATH": f"{fakes}{os.pathsep}{env()['PYTHONPATH']}"})
    finally:
        server.kill()
        server.wait()
    assert result.returncode == 124, result.stdout + result.stderr
    assert result.stdout.startswith("TIMED OUT while busy")
    assert f"process tree of pid {server.pid}: GPU busy (capturing graphs: 85% on GPU 0, 30.0 GB)" in result.stdout
    saved = json.loads(record.read_text())
    assert saved["gpu"] == {"source": "NVML", "off": None}


CHILD = """
import sys, time
from datetime import datetime, timedelta
log, shard = sys.argv[1], sys.argv[2]
for name in ("numpy", "yaml", "PIL.Image", "pyarrow", "polars", "duckdb", "matplotlib.pyplot", "hyperscan"):
    try:
        __import__(name)  # each maps its shared libraries
    except ImportError:
        pass
    time.sleep(0.5)
def stamp():  # the server prints in a zone two hours from this machine's
    return (datetime.now() + timedelta(hours=2)).strftime("[%Y-%m-%d %H:%M:%S]")
with open(log, "a") as f:
    f.write(f"{stamp()} server_args=ServerArgs(model_path='{shard.rsplit('/', 1)[0]}', tp_size=1)\\n")
    f.write(f"{stamp()} Load weight begin. avail mem=78.50 GB\\n")
with open(shard, "rb") as f:
    while f.read(4 << 20):
        time.sleep(0.12)
time.sleep(600)
"""


def test_a_real_server_stand_in_imports_reads_weights_then_idles(tmp_path: Path) -> None:
    """`firedup wait --pid` beside a real Python child that imports modules, then reads a 200 MB
    `.safetensors` file slowly, then sits idle: importing, reading weights and idle, in that
    order; the launch measured from /proc, its gap to the log's first line right."""
    model = tmp_path / "model"
    model.mkdir()
    shard = model / "model-00001-of-00001.safetensors"
    block = os.urandom(1 << 20)
    with open(shard, "wb") as f:
        for _ in range(200):
            f.write(block)
    log, record = tmp_path / "server.log", tmp_path / "record.json"
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(log), str(shard)], env=env())
    try:
        result = subprocess.run(firedup("wait", "--log", str(log), "--pid", str(child.pid), "--timeout", "26",
                                        "--stall-after", "1", "--record", str(record)),
                                capture_output=True, text=True, timeout=90, env=env())
    finally:
        child.kill()
        child.wait()
    assert result.returncode == 4, result.stdout + result.stderr
    saved = json.loads(record.read_text())
    kinds = [x["kind"] for x in saved["process_timeline"]]
    order = [k for k in kinds if k in ("importing", "reading", "stuck")]
    assert [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k] == ["importing", "reading", "stuck"], \
        saved["process_timeline"]
    reading = next(x for x in saved["process_timeline"] if x["kind"] == "reading")
    assert "model-00001-of-00001.safetensors" in reading["text"] and reading["phase"] == "load_weights"
    importing = next(x for x in saved["process_timeline"] if x["kind"] == "importing")
    assert importing["phase"] is None and importing["since"] is not None  # before the first line, on the log's clock
    assert re.search(r"^note: waiting for the server's first log line \(launched [\d.]+ s ago\); process tree of pid "
                     rf"{child.pid}: importing \(", result.stderr, re.M), result.stderr
    # the launch: measured, and its gap is the first line's stamp (two hours ahead) minus the start
    launch = saved["run"]["launch"]
    first = datetime.strptime(log.read_text()[1:20], "%Y-%m-%d %H:%M:%S") - timedelta(hours=2)
    assert launch["source"] == "measured"
    assert abs(launch["seconds_before_first_line"] - (first.timestamp() - before)) <= 1.5, launch
    assert "process tree of pid" in result.stdout and "idle: no CPU" in result.stdout


CHILD_GB = """
import sys, time
from datetime import datetime
log, shard = sys.argv[1], sys.argv[2]
for name in ("numpy", "yaml", "PIL.Image", "pyarrow", "polars", "duckdb", "matplotlib.pyplot", "hyperscan"):
    try:
        __import__(name)  # each maps its shared libraries
    except ImportError:
        pass
    time.sleep(0.5)
def say(text):
    with open(log, "a") as f:
        f.write(datetime.now().strftime("[%Y-%m-%d %H:%M:%S] ") + text + "\\n")
say("Load weight begin. avail mem=78.50 GB")
done, said = 0, time.time()
with open(shard, "rb") as f:
    while True:
        piece = f.read(32 << 20)
        if not piece:
            break
        done += len(piece)
        if time.time() - said >= 1.0:  # a progress line every second: the log never falls silent
            say(f"Loading safetensors checkpoint shards: {done * 100 // (1 << 30)}% Completed")
            said = time.time()
        time.sleep(0.2)
say("Loading safetensors checkpoint shards: 100% Completed")
time.sleep(9)
"""


def test_default_wait_pid_sees_imports_a_weight_read_and_idle_while_the_log_speaks(tmp_path: Path) -> None:
    """Issue 41: a real child imports, reads a 1 GB `.safetensors` file (sparse) in 32 MB pieces
    while printing a progress line every second, then idles: `wait --pid` with its default
    options says importing, reading weights, idle, in that order (it looked at the tree only
    after 10 s without a line, and said nothing of the read)."""
    shard = tmp_path / "model" / "model-00001-of-00001.safetensors"
    shard.parent.mkdir()
    with open(shard, "wb") as f:
        f.truncate(1 << 30)
    log = tmp_path / "server.log"
    child = subprocess.Popen([sys.executable, "-c", CHILD_GB, str(log), str(shard)], env=env())
    try:
        result = subprocess.run(firedup("wait", "--log", str(log), "--pid", str(child.pid)),
                                capture_output=True, text=True, timeout=120, env=env())
    finally:
        child.kill()
        child.wait()
    notes = [line.split(f"process tree of pid {child.pid}: ", 1)[1] for line in result.stderr.splitlines()
             if line.startswith("note: ") and f"process tree of pid {child.pid}: " in line]
    kinds = [k for n in notes for k in ("importing", "reading weights", "idle") if n.startswith(k)]
    assert kinds[:1] == ["importing"] and "reading weights" in kinds, result.stderr
    first_read = kinds.index("reading weights")
    assert "idle" in kinds[first_read:] and "importing" not in kinds[first_read:], result.stderr
    assert any("model-00001-of-00001.safetensors" in n for n in notes if n.startswith("reading weights"))
    assert result.returncode == 3, result.stdout + result.stderr  # the child exits before any ready line


def test_ingest_keeps_the_measured_launch_in_the_history(tmp_path: Path) -> None:
    """`wait --pid ... --ingest` stores the start-up with the launch it measured: the history's
    runs (what `--timeout auto` and budgets read) count from it."""
    from firedup.live.history import store_runs

    store = tmp_path / "history"
    store.mkdir()
    log = tmp_path / "server.log"
    before = time.time()
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(1.5)
        now = time.time()
        log.write_text(f"{_stamped(now)} server_args={{'model_path': 'm', 'tp_size': 1}}\n"
                       f"{_stamped(now)} Load weight begin. avail mem=78.50 GB\n"
                       f"{_stamped(now)} Load weight end. type=M, avail mem=60.00 GB\n"
                       f"{_stamped(now)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
                       f"{_stamped(now)} The server is fired up and ready to roll!\n")
        result = run_wait("--log", str(log), "--pid", str(server.pid), f"--store={store}", "--ingest",
                          "--timeout", "20")
    finally:
        server.kill()
        server.wait()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"note: --ingest: 1 start-up of {log} stored in {store} (launch measured)" in result.stderr
    [run] = store_runs(str(store))
    assert run.launch is not None and run.launch.source == "measured" and run.launch.gap is not None
    first = datetime.strptime(log.read_text()[1:20], "%Y-%m-%d %H:%M:%S").timestamp()
    assert abs(run.launch.gap - (first - before)) <= 1.0
    again = run_wait("--log", str(log), "--pid", str(os.getpid()), f"--store={store}", "--ingest", "--timeout", "20")
    assert "already holds these bytes" in again.stderr


def test_a_log_whose_stamps_are_not_this_clock_gets_no_measured_launch(tmp_path: Path) -> None:
    """An old log replayed or copied: its stamps are days (or odd minutes) from this machine's clock,
    so the pid's start cannot be put on them; the run keeps its estimated launch, and says why."""
    log = tmp_path / "server.log"
    fake = _fake_tree(tmp_path, time.time() - 5)
    script = _Timed(log, [(1.0, NEW_READY.read_text())])
    waiter, _, err = _timed_waiter(log, fake, script, timeout=20)
    assert waiter.run_loop() == 0
    assert waiter.seen.run is not None and waiter.seen.run.launch is not None and waiter.seen.run.launch.source == "estimated"
    assert "note: the log's stamps do not follow this machine's clock (its newest, 2026-10-30T10:00:36, is " \
           in err.getvalue()
    # a clock seven minutes off: no zone is that far from a quarter hour
    (tmp_path / "skewed").mkdir()
    skewed = tmp_path / "skewed" / "server.log"
    odd = _Timed(skewed, [(1.0, f"{_stamped(time.time() + 7 * 60)} server_args={{'model_path': 'm'}}\n")])
    waiter, _, err = _timed_waiter(skewed, _fake_tree(tmp_path / "skewed", time.time() - 5), odd, timeout=3)
    waiter.run_loop()
    assert waiter.seen.run is not None and waiter.seen.run.launch is not None and waiter.seen.run.launch.source != "measured"
    assert re.search(r"is (6 min 5\d|7 min 0\d) s from now, not whole quarter hours", err.getvalue()), err.getvalue()


def test_wait_needs_neither_polars_nor_matplotlib(tmp_path: Path) -> None:
    """`wait` runs beside a real server on a machine where firedup's heavy dependencies may be
    missing: with `polars` and `matplotlib` unimportable it follows a log, watches a pid (its
    tree, its launch) and writes its record."""
    log, record = tmp_path / "server.log", tmp_path / "record.json"
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(1.2)
        now = time.time()
        log.write_text(f"{_stamped(now)} server_args={{'model_path': 'm', 'tp_size': 1}}\n"
                       f"{_stamped(now)} Load weight begin. avail mem=78.50 GB\n")
        code = ("import sys\nfor name in ('polars', 'matplotlib', 'numpy', 'jinja2'):\n    sys.modules[name] = None\n"
                "from firedup.cli import main\nsys.argv = ['firedup', *sys.argv[1:]]\nmain()")
        result = subprocess.run([sys.executable, "-c", code, "wait", "--log", str(log), "--pid", str(server.pid),
                                 "--timeout", "4", "--stall-after", "1", "--record", str(record)],
                                capture_output=True, text=True, env=env(), timeout=60)
    finally:
        server.kill()
        server.wait()
    assert result.returncode == 4, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    saved = json.loads(record.read_text())
    assert saved["run"]["launch"]["source"] == "measured" and saved["process_timeline"][-1]["kind"] == "stuck"


# --- "check once" reads what a first pass would (issue 45) ---------------------------------------


def test_check_once_does_not_read_a_big_log_to_its_end_first(tmp_path: Path) -> None:
    """A log ready at its line ~60 and then tens of MB of request lines: `--timeout 0` answered
    after reading all of it (154 s for 2 GB); it reads what the first pass of a long wait reads."""
    log = tmp_path / "big.log"
    ready = NEW_READY.read_bytes()
    stamp = ready.splitlines()[-1][:21].decode()
    filler = (f"{stamp} Decode batch. #running-req: 1, #token: 90, token usage: 0.00, gen throughput "
              "(token/s): 41.52, #queue-req: 0\n").encode()
    with open(log, "wb") as f:
        f.write(ready)
        f.write(filler * (24_000_000 // len(filler)))
    out, err = io.StringIO(), io.StringIO()
    waiter = Waiter(WaitOptions(log, timeout=0, auto_timeout=False), out, err, tty=False)
    assert waiter.run_loop() == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().startswith("READY in ")
    assert waiter.log.follower.bytes_read <= 3 * 2**20, waiter.log.follower.bytes_read  # a pass or two, not 24 MB


# --- the pid's launch: the log's age is no time zone, a restart is not the supervisor's (issue 40) ---


def test_a_wait_attached_late_does_not_read_the_logs_age_as_a_zone(tmp_path: Path) -> None:
    """The log began 15 min before the wait (stamps on this machine's clock), its newest stamped
    line is that old and a progress bar written since: `launched 15 min 34 s before the log's
    first line` for a true 34 s. The zone is read from a stamp that comes as the wait watches."""
    log = tmp_path / "server.log"
    w0 = time.time()
    fake = _fake_tree(tmp_path, w0 - 900 - 34)
    log.write_text(f"{_stamped(w0 - 900)} server_args=ServerArgs(model_path='/tmp/model', tp_size=1)\n"
                   f"{_stamped(w0 - 899)} Load weight begin. avail mem=78.50 GB\n"
                   "Loading safetensors checkpoint shards:  50% Completed | 1/2 [14:50<14:50, 890.0s/it]\n")
    script = _Timed(log, [])
    waiter, out, err = _timed_waiter(log, fake, script, timeout=60)
    w0 = waiter.seen.clock.wall_at_start
    script.events = [(3.0, f"{_stamped(w0 + 3)} Load weight end. type=M, avail mem=60.00 GB\n"
                           f"{_stamped(w0 + 3)} Memory pool end. avail mem=10.00 GB\n"
                           f"{_stamped(w0 + 4)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
                           f"{_stamped(w0 + 5)} The server is fired up and ready to roll!\n")]
    assert waiter.run_loop() == 0, out.getvalue() + err.getvalue()
    run = waiter.seen.run
    assert run is not None and run.launch is not None and run.launch.source == "measured", err.getvalue()
    assert run.launch.gap == pytest.approx(34, abs=1.5)
    assert re.search(r"note: pid 100 was launched 3[345] s before the log's first line", err.getvalue()), err.getvalue()
    assert "min 3" not in out.getvalue().split("from launch (")[1].split(")")[0]
    assert "the log's clock is this machine's" in run.launch.basis


def test_a_restart_is_not_credited_with_the_supervisors_launch(tmp_path: Path) -> None:
    """--pid names a supervisor that started the server, saw it crash and started it again: the
    restart (its own process, a minute later) is not launched by the supervisor's start."""
    log = tmp_path / "server.log"
    w0 = time.time()
    fake = _fake_tree(tmp_path, w0 - 100)
    log.write_text(f"{_stamped(w0 - 80)} server_args=ServerArgs(model_path='/tmp/model', tp_size=1)\n"
                   f"{_stamped(w0 - 79)} Load weight begin. avail mem=78.50 GB\n"
                   f"{_stamped(w0 - 75)} Scheduler hit an exception: Traceback (most recent call last):\n"
                   "RuntimeError: boom\n"
                   f"{_stamped(w0 - 74)} Received sigquit from a child process. It usually means the child failed.\n"
                   f"{_stamped(w0 - 10)} server_args=ServerArgs(model_path='/tmp/model', tp_size=1)\n"
                   f"{_stamped(w0 - 9)} Load weight begin. avail mem=78.50 GB\n")
    script = _Timed(log, [])
    waiter, out, err = _timed_waiter(log, fake, script, timeout=60)
    w0 = waiter.seen.clock.wall_at_start
    script.events = [(2.0, f"{_stamped(w0 + 2)} Load weight end. type=M, avail mem=60.00 GB\n"
                           f"{_stamped(w0 + 2)} Memory pool end. avail mem=10.00 GB\n"
                           f"{_stamped(w0 + 3)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
                           f"{_stamped(w0 + 4)} The server is fired up and ready to roll!\n")]
    assert waiter.run_loop() == 0, out.getvalue() + err.getvalue()
    run = waiter.seen.run
    assert run is not None and run.first_line == 6
    assert run.launch is None or run.launch.source != "measured", run.launch
    assert "from launch" not in out.getvalue().splitlines()[0]


@pytest.mark.parametrize("how", ["gzip", "utf-16 file", "utf-16 stdin"])
def test_wait_reads_gzip_and_utf16_logs_as_parse_does(tmp_path: Path, how: str) -> None:
    """Issue 45 item 2, issue 41 item 3: `parse` reads a gzipped or UTF-16 ready log as ready;
    `wait` said "the log shows no server startup" (gzip), timed out (a UTF-16 file) or "LOG ENDED"
    (UTF-16 on stdin)."""
    import gzip

    text = NEW_READY.read_text()
    if how == "utf-16 stdin":
        result = subprocess.run(firedup("wait", "--log", "-", "--timeout", "20"), input=text.encode("utf-16"),
                                capture_output=True, env=env(), timeout=60)
        out, err = result.stdout.decode(), result.stderr.decode()
    else:
        log = tmp_path / ("base.log.gz" if how == "gzip" else "base.log")
        log.write_bytes(gzip.compress(text.encode()) if how == "gzip" else text.encode("utf-16"))
        done = run_wait("--log", str(log), "--timeout", "20")
        out, err = done.stdout, done.stderr
        result = done  # type: ignore[assignment]
    assert result.returncode == 0, out + err
    assert out.startswith("READY in 36 s"), out

"""Helpers for the end-to-end tests of `wait` and `replay`: real processes, real ports."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OLD_READY = FIXTURES / "sglang_0.4_ready.log"  # SGLang <= 0.4.8: /health is 200 during warm-up
NEW_READY = FIXTURES / "sglang_0.5_ready.log"  # SGLang 0.5.21-style: /health 503 until ready, /ready exists
CRASH_OOM = FIXTURES / "sglang_crash_oom.log"
VLLM_READY = FIXTURES / "vllm_ready.log"  # synthetic vLLM 0.9-style startup: refused until ready

_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    """The subprocesses run this checkout's code, wherever pytest was started."""
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + out.get("PYTHONPATH", "")
    out.pop("FIREDUP_STORE", None)
    out["NO_COLOR"] = "1"
    # wide enough that the wait tests read whole sentences; the 80 columns of a CI log are tested
    # by test_wait's test_wait_fits_80_columns_when_piped, which sets COLUMNS itself
    out["COLUMNS"] = "1000"
    return out


def firedup(*args: str) -> list[str]:
    return [sys.executable, "-m", "firedup", *args]


def start_replay(log: Path, out: Path, port: int, speed: float, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(firedup("replay", str(log), "--out", str(out), "--speed", str(speed),
                                    "--port", str(port), *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def run_wait(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(firedup("wait", *args), capture_output=True, text=True, env=env(), timeout=timeout)


class Replay:
    """A running `firedup replay`; `stderr` is filled in when the context ends."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.stderr = ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()


@contextlib.contextmanager
def replaying(log: Path, out: Path, port: int, speed: float, *extra: str) -> Iterator[Replay]:
    replay = Replay(start_replay(log, out, port, speed, *extra))
    proc = replay.proc
    try:
        yield replay
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            _, replay.stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, replay.stderr = proc.communicate()


def status_of(port: int, path: str, timeout: float = 2.0) -> tuple[int | None, bytes, dict[str, str]]:
    """(status, body, headers) of a GET, or (None, b"", {}) when the connection is refused."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    except ConnectionRefusedError:
        return None, b"", {}
    finally:
        conn.close()


def wait_for_text(path: Path, text: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            content = path.read_text()
            if text in content:
                return content
        time.sleep(0.01)
    raise AssertionError(f"{text!r} never appeared in {path}")


def stamps(log: Path) -> list[datetime]:
    """The server's own timestamps, read with a regex of the test's own (not firedup's)."""
    out = []
    for line in log.read_text().splitlines():
        m = _STAMP.match(line)
        if m:
            out.append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
    return out


def seconds_to_ready(log: Path) -> float:
    """First timestamp to the timestamp of the ready line, computed independently."""
    first = stamps(log)[0]
    for line in log.read_text().splitlines():
        if "fired up and ready to roll" in line:
            m = _STAMP.match(line)
            assert m, line
            return (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") - first).total_seconds()
    raise AssertionError(f"{log} has no ready line")


def human(seconds: float) -> str:
    """How a duration of whole seconds reads in firedup's output (`38 s`, `1 min 03 s`)."""
    total = round(seconds)
    return f"{total} s" if total < 60 else f"{total // 60} min {total % 60:02d} s"


class Waiting:
    """A running `firedup wait`, its stderr read as it comes so a test can wait for a line."""

    def __init__(self, *args: str, stdin: IO[bytes] | None = None) -> None:
        self.proc = subprocess.Popen(firedup("wait", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env(), stdin=stdin)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def until(self, text: str, timeout: float = 30.0) -> None:
        """Block until `text` shows up on stderr (e.g. the start line: `wait` is watching)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.01)
        raise AssertionError(f"{text!r} never appeared on wait's stderr: {''.join(self.lines)}")

    def finish(self, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        assert self.proc.stdout is not None
        stdout = self.proc.stdout.read()
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, stdout, "".join(self.lines))


def watched(log: Path, out: Path, port: int, speed: float, *wait_args: str,
            replay_args: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], Replay]:
    """Start `wait` on `out`, then (once it is watching) a replay of `log` into `out`."""
    waiting = Waiting("--log", str(out), *wait_args)
    waiting.until("firedup wait:")
    with replaying(log, out, port, speed, *replay_args) as replay:
        result = waiting.finish()
    return result, replay

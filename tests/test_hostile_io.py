"""Hostile input, round two (issue 33), through the real `firedup` process: writes that
follow a link or race, files that change under the reader, servers and processes that lie,
inputs slow on purpose, the store under faults. Real files, real processes, real HTTP
servers on loopback."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SAMPLE_LOGS

SRC = ROOT / "src"
LOG = SAMPLE_LOGS / "sglang-warm-start.log"


def run(args: list[str], timeout: float = 180, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1", **kw.pop("env", {})}
    env.pop("FIREDUP_STORE", None)
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False, encoding="utf-8", errors="surrogateescape", **kw)


def start(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1", **kw.pop("env", {})}
    env.pop("FIREDUP_STORE", None)
    return subprocess.Popen([sys.executable, "-m", "firedup", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


# --- 4. writes that follow a link or race -------------------------------------------------------

# (command, the paths firedup writes, relative to the scratch folder); {d} is the folder
WRITERS = [
    (["report", str(LOG), "-o", "{d}/out"], ["out/index.html", "out/report.md", "out/timeline.png"]),
    (["export", "--format", "csv", str(LOG), "-o", "{d}/t.csv"], ["t.csv"]),
    (["export", "--format", "parquet", str(LOG), "-o", "{d}/t.parquet"], ["t.parquet"]),
    (["export", "--format", "chrome-trace", str(LOG), "-o", "{d}/t.json"], ["t.json"]),
    (["runs", "--format", "csv", str(LOG), "-o", "{d}/r.csv"], ["r.csv"]),
    (["plot", "timeline", str(LOG), "-o", "{d}/p.png"], ["p.png"]),
    (["wait", "--log", str(LOG), "--timeout", "0", "--record", "{d}/w.json"], ["w.json"]),
    (["synth", "{d}/s", "--scenario", "small-tp1"], ["s/small-tp1.log", "s/truth.json"]),
    (["replay", str(LOG), "--out", "{d}/replayed.log", "--speed", "1000", "--port", "0", "--hold", "0"],
     ["replayed.log"]),
]


@pytest.mark.parametrize(("args", "targets"), WRITERS, ids=[w[0][0] + " " + w[0][2] for w in WRITERS])
def test_no_writer_follows_a_symlink_planted_at_its_target(tmp_path: Path, args: list[str],
                                                           targets: list[str]) -> None:
    """`report -o OUT` overwrote whatever a planted `OUT/index.html` link pointed to, and so
    did `wait --record`, `synth` and the other writers: the link is now replaced, its target
    never opened (docs/hostile-input.md)."""
    victims = {}
    for i, rel in enumerate(targets):
        victim = tmp_path / f"victim{i}"
        victim.write_text("precious\n")
        victims[rel] = victim
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).symlink_to(victim)
    proc = run([a.replace("{d}", str(tmp_path)) for a in args])
    assert proc.returncode in (0, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    for rel, victim in victims.items():
        assert victim.read_text() == "precious\n", f"{rel}: wrote through the link"
        assert (tmp_path / rel).is_file() and not (tmp_path / rel).is_symlink(), rel
        assert (tmp_path / rel).stat().st_size > 0


def _name(suffix: str) -> str:
    """A 250-character file name (255 is the limit of most file systems)."""
    return "n" * (250 - len(suffix)) + suffix


@pytest.mark.parametrize("args", [
    ["export", "--format", "csv", str(LOG), "-o", "{d}/" + _name(".csv")],
    ["export", "--format", "chrome-trace", str(LOG), "-o", "{d}/" + _name(".json")],
    ["runs", "--format", "json", str(LOG), "-o", "{d}/" + _name(".json")],
    ["plot", "timeline", str(LOG), "-o", "{d}/" + _name(".png")],
    ["wait", "--log", str(LOG), "--timeout", "0", "--record", "{d}/" + _name(".json")],
    ["report", str(LOG), "-o", "{d}/" + _name("")],
], ids=["export csv", "export chrome-trace", "runs", "plot", "wait --record", "report"])
def test_a_250_character_output_name_works(tmp_path: Path, args: list[str]) -> None:
    """The temporary name was `.NAME.PID.tmp`, past 255 characters for a valid 250-character name."""
    proc = run([a.replace("{d}", str(tmp_path)) for a in args])
    assert proc.returncode == 0, proc.stderr
    written = [p for p in tmp_path.iterdir() if len(p.name) == 250]
    assert len(written) == 1 and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _charts_of(html: str) -> dict[str, bytes]:
    found = re.findall(r'<figure id="chart-(\w+)">\s*<img src="data:image/png;base64,([^"]+)"', html)
    return {kind: base64.b64decode(data) for kind, data in found}


def test_two_reports_into_one_folder_at_once_leave_one_whole_report(tmp_path: Path) -> None:
    """Both exited 0 and the folder held one report's text with the other's charts. Now the
    last writer's whole report is there: its pages and its charts."""
    one = [str(SAMPLE_LOGS / "sglang-warm-start.log")]
    many = [str(p) for p in sorted(SAMPLE_LOGS.glob("prod-tp8-eagle3-0*.log"))]
    out = tmp_path / "same"
    for delay in (0.0, 0.5, 1.0, 2.0, 3.0):  # the small report starts while the big one draws
        procs = [start(["report", *many, "-o", str(out)])]
        time.sleep(delay)
        procs.append(start(["report", *one, "-o", str(out)]))
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        html, md = (out / "index.html").read_text(), (out / "report.md").read_text()
        runs_html = re.search(r"all runs: (\d+) runs? ready", html)
        runs_md = re.search(r"all runs: (\d+) runs? ready", md)
        assert runs_html and runs_md and runs_html.group(1) == runs_md.group(1), "pages of two reports"
        charts = _charts_of(html)
        on_disk = {p.stem: p.read_bytes() for p in out.glob("*.png")}
        assert charts == on_disk, "the charts on disk are not the page's"


# --- 5. files that change under the reader: wait --------------------------------------------------


@pytest.mark.parametrize("how", ["swapped", "appears"])
def test_wait_never_hangs_on_a_log_that_is_or_becomes_a_fifo(tmp_path: Path, how: str) -> None:
    """Opening a FIFO blocks until a writer comes: the wait hung forever, its --timeout never
    looked at. Now the path is not opened while it is no regular file, and said once."""
    log = tmp_path / "server.log"
    if how == "swapped":
        log.write_text(LOG.read_text().split("Load weight begin")[0])
    proc = start(["wait", "--log", str(log), "--timeout", "6"])
    time.sleep(1.5)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.replace(fifo, log)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 124, err
    assert "server.log is a FIFO now, not a log file: not opened" in " ".join(err.split())
    assert "Traceback" not in err


# --- 6. servers and processes that lie -----------------------------------------------------------


def test_wait_takes_no_answer_cut_off_mid_header_for_ready() -> None:
    from _lying import lying_server, says

    with lying_server(says(b"HTTP/1.1 200 OK\r\nContent-Ty")) as port:
        proc = run(["wait", "--url", f"http://127.0.0.1:{port}/health", "--engine", "sglang", "--timeout", "0"])
    assert proc.returncode != 0 and "READY" not in proc.stdout, proc.stdout
    assert "cut off before its headers ended" in proc.stdout + proc.stderr


def test_wait_timeout_0_against_a_trickling_server_checks_once_within_the_probe_deadline(tmp_path: Path) -> None:
    """A byte a second made `--timeout 0` ("check once") take a minute."""
    from _lying import lying_server, trickles

    record = tmp_path / "r.json"
    with lying_server(trickles(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 40 + b"\r\n", every=0.5)) as port:
        proc = run(["wait", "--url", f"http://127.0.0.1:{port}/health", "--engine", "sglang", "--timeout", "0",
                    "--record", str(record)], timeout=120)
    assert proc.returncode != 0 and "no answer within 5 s" in proc.stdout + proc.stderr, proc.stdout
    waited = json.loads(record.read_text())["waited_s"]
    assert waited < 15, waited


def test_wait_with_credentials_in_the_url_probes_the_host() -> None:
    """Was "cannot resolve 127.0.0.1": urllib took `user:secret@127.0.0.1` for the host."""
    import base64 as b64

    from _lying import lying_server

    def answer(conn: Any, request: bytes) -> None:
        ok = b"Authorization: Basic " + b64.b64encode(b"user:secret") in request
        conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n" if ok else b"HTTP/1.1 401 Unauthorized\r\n\r\n")

    with lying_server(answer) as port:
        proc = run(["wait", "--url", f"http://user:secret@127.0.0.1:{port}/health", "--engine", "sglang",
                    "--timeout", "0"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cannot resolve" not in proc.stdout + proc.stderr


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_wait_pid_of_a_process_that_does_not_exist_is_a_usage_error() -> None:
    """Was "DIED: process N is gone ... (OOM killer?)" for a typo."""
    pid = _dead_pid()
    proc = run(["wait", "--pid", str(pid), "--timeout", "5"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--pid {pid}: no such process" in proc.stderr and "OOM" not in proc.stdout + proc.stderr


def test_a_reused_pid_does_not_hide_the_death() -> None:
    """The pid of the server, given to another process after the server died, looked alive:
    its start time (/proc/PID/stat) tells them apart."""
    import io

    from firedup.live.wait import Waiter, WaitOptions, pid_alive, process_start

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start_time = process_start(other.pid)
        assert start_time is not None and pid_alive(other.pid, start_time)
        assert not pid_alive(other.pid, start_time - 1)  # the pid now names a process started later
        out, err = io.StringIO(), io.StringIO()
        waiter = Waiter(WaitOptions(pid=other.pid, timeout=30, auto_timeout=False), out, err, tty=False)
        waiter.pid_start = start_time - 1  # as if the server of that pid had died and the pid been reused
        began = time.monotonic()
        assert waiter.run_loop() == 3
        assert time.monotonic() - began < 20 and "DIED" in out.getvalue()
    finally:
        other.kill()


def _peak_rss_kb(proc: subprocess.Popen[Any]) -> int:
    peak = 0
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    peak = max(peak, int(line.split()[1]))
        time.sleep(0.05)
    return peak


def test_a_flood_on_stdin_keeps_memory_flat_and_the_timeout(tmp_path: Path) -> None:
    """3.9 GB and 57 s for `--timeout 10`: every chunk was queued ahead of the reading."""
    record = tmp_path / "r.json"
    line = b'[2026-11-12 14:06:23] INFO:     127.0.0.1:40830 - "GET /health HTTP/1.1" 200 OK\n'
    flood = subprocess.Popen([sys.executable, "-c",
                              f"import sys\nb={line!r}*10000\nwhile True: sys.stdout.buffer.write(b)"],
                             stdout=subprocess.PIPE)
    try:
        proc = start(["wait", "--log", "-", "--timeout", "6", "--record", str(record)], stdin=flood.stdout)
        peak = _peak_rss_kb(proc)
        proc.communicate(timeout=120)
    finally:
        flood.kill()
    assert proc.returncode == 124
    assert peak < 300_000, f"peak RSS {peak // 1024} MB"
    assert json.loads(record.read_text())["waited_s"] < 6 + 2


def test_a_big_log_does_not_carry_wait_past_its_timeout(tmp_path: Path) -> None:
    """A poll read 8 MB of lines before the deadline was looked at again: seconds late."""
    log = tmp_path / "big.log"
    line = b'[2026-11-12 14:06:23] INFO:     127.0.0.1:40830 - "GET /health HTTP/1.1" 200 OK\n'
    with open(log, "wb") as fh:
        for _ in range(100):
            fh.write(line * 20_000)  # 160 MB, no startup in it
    record = tmp_path / "r.json"
    proc = run(["wait", "--log", str(log), "--timeout", "2", "--record", str(record)], timeout=120)
    assert proc.returncode == 124, proc.stderr
    assert json.loads(record.read_text())["waited_s"] < 2 + 1.0

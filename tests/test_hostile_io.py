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
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    # the old poll was 10 s late; a loaded machine may add a second or two to any process
    assert json.loads(record.read_text())["waited_s"] < 2 + 4.0


# --- 5. files that change under the reader: parse ------------------------------------------------


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A start-up, then 1.5 M health probes (about 120 MB): parse reads it for a second or two."""
    path = tmp_path_factory.mktemp("long") / "long.log"
    head = LOG.read_text().split("The server is fired up and ready to roll!")[0]
    line = '[2026-11-12 14:07:00] INFO:     10.0.0.1:40000 - "GET /v1/models HTTP/1.1" 200 OK\n'
    with open(path, "w") as fh:
        fh.write(head + "[2026-11-12 14:06:00] The server is fired up and ready to roll!\n")
        for _ in range(150):
            fh.write(line * 10_000)
    return path


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(delay=st.floats(0.0, 2.0), keep=st.floats(0.0, 1.0), scanner=st.sampled_from(["batch", "incremental"]))
def test_a_log_truncated_while_parse_reads_it_is_said_in_one_line(long_log: Path, tmp_path_factory: pytest.TempPathFactory,
                                                                   delay: float, keep: float, scanner: str) -> None:
    """logrotate's copytruncate while `parse` read a log: SIGBUS, exit 135, no message (the
    file was mapped). Any moment, any new size: a clean exit, and a shrinking file is one
    line that says so, with the runs read before it. What parse says is what the command
    prints of its inputs (`unread_lines`): a file cut to its first bytes before the reading
    began (delay 0, keep 1e-7: `/usr/local/lib`) is a file of no known engine, said so."""
    log = tmp_path_factory.mktemp("trunc") / "server.log"
    shutil.copyfile(long_log, log)
    code = ("import sys\nfrom firedup.timeline.pipeline import parse_paths\n"
            "from firedup.render.answers import unread_lines\n"
            f"r = parse_paths([{str(log)!r}], scanner={scanner!r})\n"
            "print(len(r.runs)); print(*unread_lines(r), sep='\\n', file=sys.stderr)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    time.sleep(delay)
    with open(log, "r+b") as fh:
        fh.truncate(int(keep * log.stat().st_size))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, (proc.returncode, err)  # never killed by a signal (SIGBUS: -7)
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.strip()]
    assert len(errors) <= 1, err
    if errors:
        assert "server.log" in errors[0] and any(why in errors[0] for why in (
            "shrank while it was read", "empty file", "no known engine", "no server startup found")), err
    if int(out.split()[0]) == 0:
        assert errors, "no run and no word why"


@pytest.mark.parametrize("moment", ["a window's lines read", "after the head's sniff"])
def test_a_log_emptied_at_the_moments_the_race_hit_is_said_in_one_line(long_log: Path, tmp_path: Path, moment: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The flaky IndexError of the test above, at the moments it hit: a log emptied (copytruncate)
    while the batch engine read a window's lines lost that window's events but kept the lines it
    had counted, and the timeline had no run for them (`split._by_run`: IndexError); emptied after
    the head was sniffed, the scan saw an empty file and said nothing ("no run and no word why")."""
    from firedup.read import batch, windows
    from firedup.timeline.pipeline import parse_paths

    log = tmp_path / "server.log"
    shutil.copyfile(long_log, log)
    calls = [0]

    def emptying(real: Any, nth: int) -> Any:
        def hooked(*args: Any) -> Any:
            calls[0] += 1
            if calls[0] == nth:
                os.truncate(log, 0)
            return real(*args)
        return hooked

    if moment == "a window's lines read":  # this process reads a forked scan's lines (LazyWindow)
        monkeypatch.setattr(windows.LazyWindow, "_block", emptying(windows.LazyWindow._block, 20))
    else:
        monkeypatch.setattr(batch, "sniff_format", emptying(batch.sniff_format, 1))
    result = parse_paths([str(log)], scanner="batch")
    assert calls[0] >= 1
    assert [str(e) for e in result.errors] == [
        f"{log}: the file shrank while it was read (rotated with copytruncate?): it ends at byte 0 of the "
        f"{long_log.stat().st_size:,} it had; what was read before is kept"]


def test_a_worker_killed_mid_folder_is_that_files_error_and_the_rest_is_read(tmp_path: Path) -> None:
    """A pool worker killed by the OOM killer hung `parse` of a folder forever. Here the
    worker reading one file kills itself; that file's error line says so, the others are read."""
    for i in range(40):
        shutil.copyfile(LOG, tmp_path / f"f{i:02d}.log")
    code = f"""
import os, signal, sys
from firedup.timeline import pipeline
real = pipeline._parse_one
def dying(source, *args, **kw):
    if source.name.endswith("f13.log"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(source, *args, **kw)
pipeline._parse_one = dying
result = pipeline.parse_paths([{str(tmp_path)!r}], jobs=2)
print(len(result.runs), [e.reason for e in result.errors], [e.source.rsplit("/", 1)[-1] for e in result.errors])
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("39 ")
    assert "killed by SIGKILL (the OOM killer?)" in proc.stdout and "['f13.log']" in proc.stdout


# --- 7. inputs slow on purpose, or by nature ------------------------------------------------------


def _gz(data: bytes, level: int = 6) -> bytes:
    import gzip

    return gzip.compress(data, level)


def test_a_gz_with_a_bad_crc_or_trailing_garbage_keeps_what_reads(tmp_path: Path) -> None:
    """The whole file was refused, losing a start-up that read fine."""
    packed = _gz(LOG.read_bytes())
    bad_crc = tmp_path / "crc.log.gz"
    bad_crc.write_bytes(packed[:-8] + bytes([packed[-8] ^ 0xFF]) + packed[-7:])
    trailing = tmp_path / "trailing.log.gz"
    trailing.write_bytes(packed + b"not gzip at all\n")
    for path, note in ((bad_crc, "gzip CRC check failed: the data may be damaged"),
                       (trailing, "garbage after the gzip data, ignored")):
        proc = run(["parse", str(path)])
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert f"{path.name}" in proc.stdout and "ready" in proc.stdout, proc.stdout  # the start-up is there
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and note in lines[0], proc.stderr


def _bomb(tmp_path: Path) -> Path:
    """A start-up, then 400 MB of one repeated line: about 1,000 times its compressed size."""
    import gzip

    path = tmp_path / "bomb.log.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(LOG.read_bytes())
        block = (b"A" * 199 + b"\n") * 50_000
        for _ in range(40):
            fh.write(block)
    return path


def test_a_gzip_bomb_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    """`replay` died with MemoryError and nothing else refused it."""
    bomb = _bomb(tmp_path)
    assert bomb.stat().st_size < 2_000_000
    proc = run(["parse", str(bomb)])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "a gzip bomb?" in proc.stderr and "FIREDUP_GZIP_MAX_RATIO=0 reads it whole" in proc.stderr
    assert "ready" in proc.stdout  # what came before stands
    replay = run(["replay", str(bomb), "--out", str(tmp_path / "out.log"), "--port", "0", "--hold", "0"])
    assert replay.returncode == 1 and "Traceback" not in replay.stderr and "MemoryError" not in replay.stderr
    assert "a gzip bomb?" in replay.stderr, replay.stderr
    allowed = run(["parse", str(bomb)], env={"FIREDUP_GZIP_MAX_RATIO": "0"})
    assert allowed.returncode == 0, allowed.stderr  # the limit is the user's to lift


def _ranks_log(path: Path, n: int) -> Path:
    lines = [f"[2026-03-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size={n})"]
    lines += [f"[2026-03-01 10:00:01 TP{r}] Load weight begin. avail mem=70.00 GB" for r in range(n)]
    lines += [f"[2026-03-01 10:00:{20 + r % 30:02d} TP{r}] Load weight end. type=X, dtype=torch.bfloat16, "
              "avail mem=50.00 GB, mem usage=20.00 GB." for r in range(n)]
    lines.append("[2026-03-01 10:01:30] The server is fired up and ready to roll!")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_thousand_ranks_draw_a_heatmap_of_bounded_height_that_says_so(tmp_path: Path) -> None:
    """2,000 ranks made the ranks chart 72,220 px tall (3 GB, 28 s)."""
    import struct

    log = _ranks_log(tmp_path / "ranks.log", 2000)
    out = tmp_path / "ranks.png"
    proc = run(["plot", "ranks", str(log), "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    _width, height = struct.unpack(">II", out.read_bytes()[16:24])
    assert height < 4000, height
    svg = tmp_path / "ranks.svg"
    assert run(["plot", "ranks", str(log), "-o", str(svg)]).returncode == 0
    assert "64 of 2,000 ranks shown" in " ".join(svg.read_text().split())


def test_a_report_of_ten_thousand_ranks_is_written_whole(tmp_path: Path) -> None:
    """10,000 ranks: MemoryError, and a report folder without index.html."""
    log = _ranks_log(tmp_path / "ranks.log", 10_000)
    proc = run(["report", str(log), "-o", str(tmp_path / "r")], timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert (tmp_path / "r" / "index.html").is_file() and (tmp_path / "r" / "ranks.png").is_file()

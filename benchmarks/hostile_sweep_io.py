"""A sweep of hostile cases against `firedup`, issue 33's classes 4 to 8, and what came out.

Each case runs the real command (or, where only the library can set it up, a real child
process running the library) on real files, real processes and real HTTP servers on
loopback, and is judged by one rule of its class:

4. writes that follow a link or race: a file a planted symlink points to changed, a valid
   250-character name refused, a FIFO without a reader waited on, two reports into one
   folder mixed;
5. files that change under the reader: a log truncated while `parse` reads it, a pool
   worker killed, a log swapped for a FIFO under `wait`;
6. servers and processes that lie: cut or trickled answers, deep JSON, labels that inject,
   `--pid` of no process, a reused pid, floods on stdin, big logs against `--timeout`,
   credentials in a URL;
7. inputs slow on purpose or by nature: probes for weeks after ready, thousands of restarts,
   gzip bombs and damaged `.gz`, thousands of ranks;
8. the store under faults: ingests killed at every step and at random moments (DuckDB's
   view of the store against firedup's), damaged Parquet files, glob characters in its name.

Outcomes: ok, hang (past the case's time limit), traceback (or a death by a signal),
injection (a hostile value that took effect), wrong (a wrong answer or exit code, a cliff),
lost/doubled (runs missing or counted twice). It prints one row per class and every case
that was not ok, with why.

    python benchmarks/hostile_sweep_io.py                      # this checkout (about 20 minutes)
    python benchmarks/hostile_sweep_io.py --src OLD/src        # another checkout's code (before)
    python benchmarks/hostile_sweep_io.py --classes 6,8 --quick
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the lying HTTP servers the tests use

from _lying import lying_server as lying  # noqa: E402
from _lying import says, trickles  # noqa: E402

OUTCOMES = ("ok", "hang", "traceback", "injection", "wrong", "lost/doubled")
LOG = ROOT / "sample_logs" / "sglang-warm-start.log"
TP8 = ROOT / "sample_logs" / "prod-tp8-eagle3-01.log"


@dataclass
class Sweep:
    src: Path
    docs: Path
    tmp: Path
    quick: bool
    results: list[tuple[int, str, str, str]] = field(default_factory=list)  # (class, case, outcome, why)

    def env(self, **extra: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(self.src), "NO_COLOR": "1", **extra}
        env.pop("FIREDUP_STORE", None)
        return env

    def cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "firedup", *args]

    def run(self, args: list[str], timeout: float = 120, stdin: Any = None, **extra: str) -> subprocess.CompletedProcess[str] | None:
        """The command's result; None when it ran past `timeout` (killed: a hang)."""
        try:
            return subprocess.run(self.cmd(*args), capture_output=True, text=True, env=self.env(**extra),
                                  timeout=timeout, check=False, stdin=stdin, errors="replace")
        except subprocess.TimeoutExpired:
            return None

    def py(self, code: str, timeout: float = 120) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=self.env(),
                                  timeout=timeout, check=False, errors="replace")
        except subprocess.TimeoutExpired:
            return None

    def record(self, klass: int, case: str, outcome: str, why: str = "") -> None:
        assert outcome in OUTCOMES, outcome
        self.results.append((klass, case, outcome, why))
        mark = "." if outcome == "ok" else outcome[0].upper()
        print(mark, end="", flush=True)

    def folder(self, name: str) -> Path:
        path = Path(tempfile.mkdtemp(prefix=name + "-", dir=self.tmp))
        return path


def crashed(proc: subprocess.CompletedProcess[str] | None) -> str | None:
    """hang / traceback when the process did not end cleanly, else None."""
    if proc is None:
        return "hang"
    if proc.returncode < 0 or proc.returncode in (134, 135, 137, 139) or "Traceback" in proc.stderr:
        return "traceback"
    return None


# --- 4. writes that follow a link or race -------------------------------------------------------

WRITERS: list[tuple[str, list[str], list[str]]] = [
    ("report", ["report", str(LOG), "-o", "{d}/out"], ["out/index.html", "out/report.md", "out/timeline.png"]),
    ("export csv", ["export", "--format", "csv", str(LOG), "-o", "{d}/t.csv"], ["t.csv"]),
    ("export json", ["export", "--format", "json", str(LOG), "-o", "{d}/t.json"], ["t.json"]),
    ("export parquet", ["export", "--format", "parquet", str(LOG), "-o", "{d}/t.parquet"], ["t.parquet"]),
    ("export chrome-trace", ["export", "--format", "chrome-trace", str(LOG), "-o", "{d}/c.json"], ["c.json"]),
    ("export prometheus", ["export", "--format", "prometheus", str(LOG), "-o", "{d}/m.txt"], ["m.txt"]),
    ("export otlp-json", ["export", "--format", "otlp-json", str(LOG), "-o", "{d}/o.json"], ["o.json"]),
    ("runs csv", ["runs", "--format", "csv", str(LOG), "-o", "{d}/r.csv"], ["r.csv"]),
    ("runs parquet", ["runs", "--format", "parquet", str(LOG), "-o", "{d}/r.parquet"], ["r.parquet"]),
    ("plot timeline png", ["plot", "timeline", str(LOG), "-o", "{d}/p.png"], ["p.png"]),
    ("plot compare svg", ["plot", "compare", str(LOG), "-o", "{d}/p.svg"], ["p.svg"]),
    ("plot ranks", ["plot", "ranks", str(TP8), "-o", "{d}/k.png"], ["k.png"]),
    ("wait --record", ["wait", "--log", str(LOG), "--timeout", "0", "--record", "{d}/w.json"], ["w.json"]),
    ("synth", ["synth", "{d}/s", "--scenario", "small-tp1"], ["s/small-tp1.log", "s/truth.json"]),
    ("replay --out", ["replay", str(LOG), "--out", "{d}/replayed.log", "--speed", "1000", "--port", "0",
                      "--hold", "0"], ["replayed.log"]),
]


def sweep_writes(s: Sweep) -> None:
    for name, args, targets in WRITERS:
        for how in ("link to a file", "dangling link"):
            d = s.folder("w")
            victims = {}
            for i, rel in enumerate(targets):
                victim = d / f"victim{i}"
                if how == "link to a file":
                    victim.write_text("precious\n")
                victims[rel] = victim
                (d / rel).parent.mkdir(parents=True, exist_ok=True)
                (d / rel).symlink_to(victim)
            proc = s.run([a.replace("{d}", str(d)) for a in args])
            bad = crashed(proc)
            if bad:
                s.record(4, f"{name}: {how}", bad, (proc.stderr[-300:] if proc else "timed out"))
                continue
            changed = [rel for rel, v in victims.items() if (v.exists() and v.read_bytes() != b"precious\n")
                       or (how == "dangling link" and v.exists())]
            replaced = all((d / rel).is_file() and not (d / rel).is_symlink() for rel in targets)
            if changed:
                s.record(4, f"{name}: {how}", "injection", f"wrote through the link at {changed[0]}")
            elif not replaced:
                s.record(4, f"{name}: {how}", "wrong", "the target is not the new file")
            else:
                s.record(4, f"{name}: {how}", "ok")
    for name, args, _ in WRITERS:
        if name in ("synth", "plot ranks"):
            continue
        d = s.folder("n")
        out = next(a for a in args if a.startswith("{d}/"))
        suffix = Path(out).suffix
        longer = [a.replace(out, "{d}/" + "n" * (250 - len(suffix)) + suffix) for a in args]
        proc = s.run([a.replace("{d}", str(d)) for a in longer])
        bad = crashed(proc)
        if bad:
            s.record(4, f"{name}: 250-character name", bad, proc.stderr[-300:] if proc else "timed out")
        elif proc is not None and proc.returncode not in (0, 3):
            s.record(4, f"{name}: 250-character name", "wrong", proc.stderr.strip()[-200:])
        else:
            s.record(4, f"{name}: 250-character name", "ok")
    for name, args in (("export csv", ["export", "--format", "csv", str(LOG), "-o", "{fifo}"]),
                       ("runs json", ["runs", "--format", "json", str(LOG), "-o", "{fifo}"])):
        d = s.folder("f")
        os.mkfifo(d / "fifo")
        proc = s.run([a.replace("{fifo}", str(d / "fifo")) for a in args], timeout=60)
        s.record(4, f"{name}: -o a FIFO nobody reads", crashed(proc) or "ok", "waited forever" if proc is None else "")
    one, many = [str(LOG)], [str(p) for p in sorted((ROOT / "sample_logs").glob("prod-tp8-eagle3-0*.log"))]
    for delay in (0.0, 0.5, 1.0, 2.0) if not s.quick else (0.5,):
        d = s.folder("r") / "same"
        env = s.env()
        procs = [subprocess.Popen(s.cmd("report", *many, "-o", str(d)), env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)]
        time.sleep(delay)
        procs.append(subprocess.Popen(s.cmd("report", *one, "-o", str(d)), env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
        for p in procs:
            p.communicate(timeout=600)
        html, md = (d / "index.html").read_text(), (d / "report.md").read_text()
        charts = dict(re.findall(r'<figure id="chart-(\w+)">\s*<img src="data:image/png;base64,([^"]+)"', html))
        disk = {p.stem: base64.b64encode(p.read_bytes()).decode() for p in d.glob("*.png")}
        n_html = re.search(r"all runs: (\d+) runs? ready", html)
        n_md = re.search(r"all runs: (\d+) runs? ready", md)
        whole = charts == disk and n_html and n_md and n_html.group(1) == n_md.group(1)
        s.record(4, f"two reports into one folder, {delay} s apart", "ok" if whole else "wrong",
                 "" if whole else "one report's pages with the other's charts")


# --- 5. files that change under the reader ------------------------------------------------------

def _long_log(s: Sweep) -> Path:
    path = s.tmp / "long.log"
    if not path.exists():
        head = LOG.read_text().split("The server is fired up and ready to roll!")[0]
        line = '[2026-11-12 14:07:00] INFO:     10.0.0.1:40000 - "GET /v1/models HTTP/1.1" 200 OK\n'
        with open(path, "w") as fh:
            fh.write(head + "[2026-11-12 14:06:00] The server is fired up and ready to roll!\n")
            for _ in range(150):
                fh.write(line * 10_000)
    return path


def sweep_changing(s: Sweep) -> None:
    rng = random.Random(33)
    long_log = _long_log(s)
    for i in range(6 if s.quick else 16):
        scanner = ("batch", "incremental")[i % 2]
        delay, keep = rng.uniform(0.0, 2.0), rng.choice([0.0, 0.01, 0.3, 0.7])
        d = s.folder("t")
        log = d / "server.log"
        shutil.copyfile(long_log, log)
        code = ("import sys\nfrom firedup.timeline.pipeline import parse_paths\n"
                f"r = parse_paths([{str(log)!r}], scanner={scanner!r})\n"
                "print(len(r.runs)); print(*(str(e) for e in r.errors), sep='\\n', file=sys.stderr)")
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=s.env())
        time.sleep(delay)
        with open(log, "r+b") as fh:
            fh.truncate(int(keep * log.stat().st_size))
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            s.record(5, f"truncated to {keep:.0%} after {delay:.1f} s ({scanner})", "hang")
            continue
        case = f"truncated to {keep:.0%} after {delay:.1f} s ({scanner})"
        if proc.returncode != 0 or "Traceback" in err:
            s.record(5, case, "traceback", f"exit {proc.returncode} (SIGBUS is -7) {err[-200:]}")
        elif int(out.split()[0]) == 0 and not err.strip():
            s.record(5, case, "wrong", "no run and no word why")
        elif err.strip() and not re.search(r"shrank while it was read|empty file", err):
            s.record(5, case, "wrong", f"unclear: {err.strip()[:200]}")
        else:
            s.record(5, case, "ok")
    folder = s.folder("pool")
    for i in range(48):
        shutil.copyfile(LOG, folder / f"f{i:02d}.log")
    for victim in (5, 23) if s.quick else (1, 13, 30, 47):
        code = f"""
import os, signal
from firedup.timeline import pipeline
real = pipeline._parse_one
def dying(source, *args, **kw):
    if source.name.endswith("f{victim:02d}.log"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(source, *args, **kw)
pipeline._parse_one = dying
r = pipeline.parse_paths([{str(folder)!r}], jobs=2)
print(len(r.runs), len(r.errors), *(e.reason for e in r.errors))
"""
        proc = s.py(code, timeout=180)
        case = f"a pool worker killed reading file {victim} of 48"
        if proc is None:
            s.record(5, case, "hang", "parse of the folder never ended")
        elif crashed(proc):
            s.record(5, case, "traceback", proc.stderr[-300:])
        elif not proc.stdout.startswith("47 1 ") or "SIGKILL" not in proc.stdout:
            s.record(5, case, "wrong", proc.stdout[:200])
        else:
            s.record(5, case, "ok")
    for how in ("swapped for a FIFO", "appears as a FIFO", "swapped for a socket"):
        d = s.folder("fifo")
        log = d / "server.log"
        if how != "appears as a FIFO":
            log.write_text(LOG.read_text().split("Load weight begin")[0])
        proc = subprocess.Popen(s.cmd("wait", "--log", str(log), "--timeout", "5"), env=s.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        other = d / "other"
        if how.endswith("socket"):
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(other))
        else:
            os.mkfifo(other)
        os.replace(other, log)
        try:
            _, err = proc.communicate(timeout=60)
            s.record(5, f"wait: log {how}", "traceback" if "Traceback" in err else
                     "ok" if proc.returncode == 124 else "wrong", err[-200:])
        except subprocess.TimeoutExpired:
            proc.kill()
            s.record(5, f"wait: log {how}", "hang", "the wait never ended")


# --- 6. servers and processes that lie ------------------------------------------------------------

CUT_ANSWERS = [
    ("status line only", b"HTTP/1.1 200 OK\r\n"),
    ("cut in a header name", b"HTTP/1.1 200 OK\r\nContent-Ty"),
    ("cut in a header value", b"HTTP/1.1 200 OK\r\nContent-Type: text/pl"),
    ("cut after one header", b"HTTP/1.1 200 OK\r\nServer: x\r\n"),
    ("no CRLF at all", b"HTTP/1.1 200 OK"),
    ("nothing", b""),
    ("garbage", b"hello there\r\n\r\n"),
    ("a bare status", b"200\r\n\r\n"),
    ("an SSH banner", b"SSH-2.0-OpenSSH_9.6\r\n"),
]


def sweep_lying(s: Sweep) -> None:
    for name, data in CUT_ANSWERS:
        with lying(says(data)) as port:
            proc = s.run(["wait", "--url", f"http://127.0.0.1:{port}/health", "--engine", "sglang", "--timeout", "0"],
                         timeout=60)
        bad = crashed(proc)
        if bad:
            s.record(6, f"wait --url: {name}", bad, proc.stderr[-200:] if proc else "")
        elif proc is not None and proc.returncode == 0:
            s.record(6, f"wait --url: {name}", "wrong", "taken for ready (200)")
        else:
            s.record(6, f"wait --url: {name}", "ok")
    for name, data in (("a whole 200", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
                       ("HTTP/1.0 200, no headers", b"HTTP/1.0 200 OK\r\n\r\n")):
        with lying(says(data)) as port:
            proc = s.run(["wait", "--url", f"http://127.0.0.1:{port}/health", "--engine", "sglang", "--timeout", "0"],
                         timeout=60)
        s.record(6, f"wait --url: {name}", crashed(proc) or ("ok" if proc and proc.returncode == 0 else "wrong"),
                 "a real 200 not taken" if proc and proc.returncode else "")
    for every in (1.0, 0.3):
        d = s.folder("tr")
        with lying(trickles(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 60 + b"\r\n", every)) as port:
            began = time.monotonic()
            proc = s.run(["wait", "--url", f"http://127.0.0.1:{port}/health", "--engine", "sglang", "--timeout", "0",
                          "--record", str(d / "r.json")], timeout=90)
            took = time.monotonic() - began
        bad = crashed(proc)
        s.record(6, f"wait --timeout 0: a byte every {every} s", bad or ("ok" if took < 20 else "wrong"),
                 f"took {took:.0f} s" if took >= 20 else "")
    for name, body in (("a 200,000-deep array", b"[" * 200_000 + b"]" * 200_000),
                       ("a 200,000-deep object", b'{"a":' * 200_000 + b"1" + b"}" * 200_000),
                       ("startup_time 5,000 deep", b'{"startup_time":' + b'{"a":' * 5000 + b"1" + b"}" * 5001),
                       ("invalid UTF-8", b'{"startup_time": {"load\xff": 1}}'),
                       ("a body cut short", None)):
        data = (b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{\"startup_time\":" if body is None else
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        with lying(says(data)) as port:
            code = f"""
import threading
from firedup.formats.sglang import TELEMETRY
from firedup.live.telemetry import TelemetryReader
died = []
threading.excepthook = lambda args: died.append(args.exc_type.__name__)
r = TelemetryReader("http://127.0.0.1:{port}/health", TELEMETRY, version="0.5.20", config={{"enable_metrics": False}},
                    attempts=1, retry=0)
r.start()
found = r.result(wait=60)
print("died" if died else "ok", None if found is None else found.phases)
"""
            proc = s.py(code, timeout=120)
        bad = crashed(proc)
        if bad:
            s.record(6, f"/server_info: {name}", bad, proc.stderr[-200:] if proc else "")
        elif proc is not None and not proc.stdout.startswith("ok"):
            s.record(6, f"/server_info: {name}", "traceback", "the telemetry thread died")
        else:
            s.record(6, f"/server_info: {name}", "ok")
    injections = [
        'sglang:startup_time_seconds{phase="load_weight",model_name="z} 999 "} 12.5',
        'sglang:startup_time_seconds{phase="load_weight",model_name="a} 999"} 12.5',
        'sglang:startup_time_seconds{phase="load_weight",model_name="\\"} 999 #"} 12.5',
        'sglang:startup_time_seconds{phase="load_weight",model_name="x",tag="} 999 "} 12.5',
        'sglang:startup_time_seconds{phase="load_weight",model_name="x\\\\"} 999 "} 12.5',
    ]
    for i, line in enumerate(injections):
        # a page with a malformed line is refused whole (issue 45): "refused" is as right as a sample
        # read without the forged value; only 999.0 is an injection
        code = ("from firedup.formats.sglang import TELEMETRY\nimport firedup.live.telemetry as t\n"
                "refused = getattr(t, 'MalformedMetrics', ())\n"
                f"try:\n    print(t.parse_metrics({line!r}, TELEMETRY).get('load_weight'))\n"
                "except refused:\n    print('refused')")
        proc = s.py(code)
        bad = crashed(proc)
        value = proc.stdout.strip() if proc else ""
        s.record(6, f"/metrics label injection {i + 1}", bad or ("injection" if value == "999.0" else "ok"),
                 f"load_weight read as {value}" if value == "999.0" else "")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    for name, pid in (("a process that just ended", child.pid), ("a pid never used", 4_000_000),
                      ("pid 2**31-1", 2**31 - 1)):
        proc = s.run(["wait", "--pid", str(pid), "--timeout", "5"], timeout=60)
        bad = crashed(proc)
        if bad:
            s.record(6, f"--pid {name}", bad, proc.stderr[-200:] if proc else "")
        elif proc is not None and (proc.returncode != 2 or "OOM" in proc.stdout + proc.stderr):
            s.record(6, f"--pid {name}", "wrong", (proc.stdout + proc.stderr).strip()[:150])
        else:
            s.record(6, f"--pid {name}", "ok")
    code = """
import io, subprocess, sys, time
from firedup.live import wait as w
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
waiter = w.Waiter(w.WaitOptions(pid=other.pid, timeout=15, auto_timeout=False), io.StringIO(), io.StringIO(), tty=False)
if getattr(waiter, "pid_identity", None) is not None:  # the start time (clock ticks) seen when the wait began
    waiter.pid_identity -= 1  # the pid now names a process that started later: ours died
elif hasattr(w, "process_start"):  # the code of an earlier round
    waiter.pid_start = w.process_start(other.pid) - 1
code = waiter.run_loop()
other.kill()
print(code)
"""
    proc = s.py(code, timeout=120)
    bad = crashed(proc)
    s.record(6, "a reused pid", bad or ("ok" if proc and proc.stdout.strip() == "3" else "wrong"),
             "" if proc and proc.stdout.strip() == "3" else "the death went unseen (timed out instead)")
    floods = [("health lines", b'[2026-11-12 14:06:23] INFO:     127.0.0.1:40830 - "GET /health HTTP/1.1" 200 OK\n'),
              ("one endless line", b"x" * 4096), ("blank lines", b"\n" * 4096)]
    for name, unit in floods:
        d = s.folder("fl")
        flood = subprocess.Popen([sys.executable, "-c", f"import sys\nb={unit!r}*1000\nwhile True: sys.stdout.buffer.write(b)"],
                                 stdout=subprocess.PIPE)
        proc = subprocess.Popen(s.cmd("wait", "--log", "-", "--timeout", "6", "--record", str(d / "r.json")),
                                stdin=flood.stdout, env=s.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        peak, began = 0, time.monotonic()
        while proc.poll() is None and time.monotonic() - began < 90:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        peak = max(peak, int(line.split()[1]))
            time.sleep(0.05)
        hung = proc.poll() is None
        if hung:
            proc.kill()
        _, err = proc.communicate()
        flood.kill()
        took = time.monotonic() - began
        case = f"stdin flood of {name}, --timeout 6"
        if hung:
            s.record(6, case, "hang", "ignored its timeout for 90 s")
        elif "Traceback" in err:
            s.record(6, case, "traceback", err[-200:])
        elif peak > 400_000 or took > 6 + 8:
            s.record(6, case, "wrong", f"{peak // 1024} MB, {took:.0f} s")
        else:
            s.record(6, case, "ok")
    big = s.tmp / "flood.log"
    if not big.exists():
        with open(big, "wb") as fh:
            for _ in range(100):
                fh.write(b'[2026-11-12 14:06:23] INFO:     127.0.0.1:40830 - "GET /health HTTP/1.1" 200 OK\n' * 20_000)
    for timeout in (2, 4):
        d = s.folder("big")
        proc = s.run(["wait", "--log", str(big), "--timeout", str(timeout), "--record", str(d / "r.json")], timeout=120)
        bad = crashed(proc)
        over = json.loads((d / "r.json").read_text())["waited_s"] - timeout if (d / "r.json").exists() else 99.0
        s.record(6, f"160 MB log, --timeout {timeout}", bad or ("ok" if over < 1.0 else "wrong"),
                 f"{over:.1f} s past the timeout" if over >= 1.0 else "")
    for name, userinfo, want in (("user:secret", "user:secret", b"user:secret"), ("user only", "user", b"user:"),
                                 ("an @ in the password", "user:s%40cret", b"user:s@cret")):
        def answer(conn: socket.socket, request: bytes, want: bytes = want) -> None:
            ok = b"Authorization: Basic " + base64.b64encode(want) in request
            conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n" if ok else b"HTTP/1.1 401 Unauthorized\r\n\r\n")

        with lying(answer) as port:
            proc = s.run(["wait", "--url", f"http://{userinfo}@127.0.0.1:{port}/health", "--engine", "sglang",
                          "--timeout", "0"], timeout=60)
        bad = crashed(proc)
        said = (proc.stdout + proc.stderr) if proc else ""
        s.record(6, f"--url with credentials ({name})", bad or ("ok" if proc and proc.returncode == 0 else "wrong"),
                 said.strip()[-150:] if proc and proc.returncode else "")


# --- 7. inputs slow on purpose, or by nature ------------------------------------------------------

def _timed(s: Sweep, args: list[str], timeout: float = 300) -> tuple[float, subprocess.CompletedProcess[str] | None]:
    began = time.monotonic()
    proc = s.run(args, timeout=timeout)
    return time.monotonic() - began, proc


def _probes_log(path: Path, n: int, request_at: int | None, probe: str) -> Path:
    text = LOG.read_text()
    # the sample log's start-up up to the line that holds ready (its whole line: cut inside it,
    # the new ready line would follow that line's header and read as a harness's re-logged line)
    head = text[:text.rfind("\n", 0, text.index("The server is fired up and ready to roll!")) + 1]
    with open(path, "w") as fh:
        fh.write(head + "[2026-11-12 14:06:00] The server is fired up and ready to roll!\n")
        chunk = 100_000
        for start in range(0, n, chunk):
            lines = []
            for i in range(start, min(n, start + chunk)):
                path_ = "/v1/chat/completions" if i == request_at else probe
                method = "POST" if i == request_at else "GET"
                lines.append(f'[2026-11-12 14:07:00] INFO:     10.42.0.1:{40000 + i % 20000} - "{method} {path_} HTTP/1.1" 200 OK\n')
            fh.write("".join(lines))
    return path


def _restarts_log(path: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        s_, e_ = f"2026-03-01 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}", f"2026-03-02 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        lines += [f"[{s_}] server_args=ServerArgs(model_path='m', tp_size=1)",
                  f"[{s_}] Load weight begin. avail mem=70.00 GB",
                  f"[{e_}] Load weight end. type=X, dtype=torch.bfloat16, avail mem=50.00 GB, mem usage=20.00 GB.",
                  f"[{e_}] The server is fired up and ready to roll!"]
    path.write_text("\n".join(lines) + "\n")
    return path


def sweep_slow(s: Sweep) -> None:
    n = 1_000_000 if s.quick else 2_000_000
    for probe in ("/health", "/metrics") if s.quick else ("/health", "/metrics", "/ready", "/v1/models", "/healthz"):
        health = _probes_log(s.tmp / f"probes{probe.replace('/', '-')}.log", n, None, probe)
        one_post = _probes_log(s.tmp / f"post{probe.replace('/', '-')}.log", n, n // 2, probe)
        t_post, p_post = _timed(s, ["parse", str(one_post)])
        t_health, p_health = _timed(s, ["parse", str(health)], timeout=max(120.0, 20 * t_post))
        bad = crashed(p_health) or crashed(p_post)
        case = f"{n:,} {probe} lines after ready"
        if bad:
            s.record(7, case, bad, "")
        elif t_health > 3 * t_post + 2:
            s.record(7, case, "wrong", f"a cliff: {t_health:.1f} s, {t_post:.1f} s with one POST among them")
        else:
            s.record(7, case, "ok", f"{t_health:.1f} s ({t_post:.1f} s with one POST)")
    sizes = (500, 2000) if s.quick else (1000, 4000)
    commands = [["parse"], ["runs"], ["check", "--history", "{h}"]]
    if not s.quick:
        commands += [["timeline"], ["compare"], ["budget"], ["export", "--format", "csv", "-o", "-"]]
    for command in commands:
        times = []
        for size in sizes:
            log = _restarts_log(s.tmp / f"restarts{size}.log", size)
            hist = _restarts_log(s.tmp / f"hist{size}.log", size // 2)
            t, proc = _timed(s, [a.replace("{h}", str(hist)) for a in [command[0], str(log), *command[1:]]], timeout=600)
            times.append((t, proc))
        (t1, p1), (t4, p4) = times
        bad = crashed(p1) or crashed(p4)
        case = f"{command[0]}: {sizes[0]:,} vs {sizes[1]:,} restarts in one file"
        ratio = sizes[1] / sizes[0]
        if bad:
            s.record(7, case, bad, "")
        elif t4 > ratio * 1.8 * t1 + 2:
            s.record(7, case, "wrong", f"superlinear: {t1:.1f} s -> {t4:.1f} s for x{ratio:.0f} the restarts")
        else:
            s.record(7, case, "ok", f"{t1:.1f} s -> {t4:.1f} s")
    packed = gzip.compress(LOG.read_bytes())
    damaged = {
        "bad CRC": packed[:-8] + bytes([packed[-8] ^ 0xFF]) + packed[-7:],
        "trailing garbage": packed + b"not gzip\n",
        "trailing zeros": packed + b"\0" * 1000,
        "two members, garbage after": packed + packed + b"junk",
        "bad ISIZE": packed[:-4] + b"\x00\x00\x00\x00",
    }
    for cut in (0.2, 0.5, 0.8, 0.95, 0.999) if not s.quick else (0.5,):
        damaged[f"a cut at {cut:.1%}"] = packed[: int(len(packed) * cut)]
    for name, data in damaged.items():
        path = s.tmp / f"damaged-{name.replace(' ', '-')}.log.gz"
        path.write_bytes(data)
        proc = s.run(["parse", str(path)])
        bad = crashed(proc)
        kept = proc is not None and ("ready" in proc.stdout or "incomplete" in proc.stdout)
        said = proc is not None and (proc.returncode == 0 or len(proc.stderr.strip().splitlines()) == 1)
        s.record(7, f".gz with {name}", bad or ("ok" if kept and said else "wrong"),
                 "" if kept and said else f"what reads fine is lost: {(proc.stderr if proc else '').strip()[:150]}")
    bomb = s.tmp / "bomb.log.gz"
    if not bomb.exists():
        with gzip.open(bomb, "wb", compresslevel=9) as fh:
            fh.write(LOG.read_bytes())
            block = (b"A" * 199 + b"\n") * 50_000
            for _ in range(200):
                fh.write(block)
    for command in (["parse"], ["timeline"], ["runs"], ["ingest", "--store", "{o}.store"],
                    ["replay", "--out", "{o}", "--port", "0", "--hold", "0"]):
        d = s.folder("bomb")
        t, proc = _timed(s, [a.replace("{o}", str(d / "out.log")) for a in [command[0], str(bomb), *command[1:]]],
                         timeout=300)
        bad = crashed(proc)
        said = proc is not None and "gzip bomb" in proc.stderr
        s.record(7, f"gzip bomb (2 GB in {bomb.stat().st_size // 1024} kB): {command[0]}",
                 bad or ("ok" if said else "wrong"),
                 "" if said else f"not refused ({t:.0f} s) {(proc.stderr if proc else '')[-150:]}")
    for ranks in (2000, 10_000):
        lines = [f"[2026-03-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size={ranks})"]
        lines += [f"[2026-03-01 10:00:01 TP{r}] Load weight begin. avail mem=70.00 GB" for r in range(ranks)]
        lines += [f"[2026-03-01 10:00:{20 + r % 30:02d} TP{r}] Load weight end. type=X, dtype=torch.bfloat16, "
                  "avail mem=50.00 GB, mem usage=20.00 GB." for r in range(ranks)]
        lines.append("[2026-03-01 10:01:30] The server is fired up and ready to roll!")
        log = s.tmp / f"ranks{ranks}.log"
        log.write_text("\n".join(lines) + "\n")
        d = s.folder("ranks")
        proc = s.run(["plot", "ranks", str(log), "-o", str(d / "r.png")], timeout=600)
        bad = crashed(proc)
        height = struct.unpack(">II", (d / "r.png").read_bytes()[16:24])[1] if (d / "r.png").exists() else 0
        s.record(7, f"{ranks:,} ranks: plot ranks", bad or ("ok" if 0 < height < 4000 else "wrong"),
                 f"{height} px tall" if height >= 4000 or not height else "")
        proc = s.run(["report", str(log), "-o", str(d / "report")], timeout=900)
        bad = crashed(proc)
        whole = (d / "report" / "index.html").is_file()
        s.record(7, f"{ranks:,} ranks: report", bad or ("ok" if whole else "wrong"), "" if whole else "no index.html")
        proc = s.run(["plot", "timeline", "--ranks", str(log), "-o", str(d / "t.png")], timeout=600)
        bad = crashed(proc)
        height = struct.unpack(">II", (d / "t.png").read_bytes()[16:24])[1] if (d / "t.png").exists() else 0
        s.record(7, f"{ranks:,} ranks: plot timeline --ranks", bad or ("ok" if 0 < height < 4000 else "wrong"),
                 f"{height} px tall" if height >= 4000 or not height else "")


# --- 8. the store under faults ---------------------------------------------------------------------

def _views_sql(s: Sweep, store: Path) -> str:
    """The committed views of this checkout's docs/store.md; a checkout without them: the
    plain `read_parquet` over each table that its docs promised."""
    text = (s.docs / "store.md").read_text() if (s.docs / "store.md").exists() else ""
    blocks = [b for b in re.findall(r"```sql\n(.*?)```", text, re.S) if "CREATE VIEW runs" in b]
    if blocks:
        return blocks[0].replace("'history/", f"'{store}/")
    return "\n".join(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{store}/{t}/**/*.parquet', "
                     "hive_partitioning = true, union_by_name = true);" for t in ("runs", "phases", "milestones"))


def _store_facts(s: Sweep, store: Path) -> tuple[dict[str, tuple[int, int, int]], dict[str, tuple[int, int, int]] | str]:
    """Per run: (copies, phases rows, milestones rows) by DuckDB's views and by firedup's reads."""
    import duckdb

    duck: dict[str, tuple[int, int, int]] = {}
    if (store / "runs").is_dir() and list((store / "runs").rglob("*.parquet")):
        con = duckdb.connect()
        con.execute(_views_sql(s, store))
        runs = Counter(r for (r,) in con.execute("select run_id from runs").fetchall())
        counts = {}
        for t in ("phases", "milestones"):
            counts[t] = dict(con.execute(f"select run_id, count(*) from {t} group by run_id").fetchall()) \
                if list((store / t).rglob("*.parquet")) else {}
        ids = set(runs) | set(counts["phases"])
        duck = {r: (runs.get(r, 0), counts["phases"].get(r, 0), counts["milestones"].get(r, 0)) for r in ids}
    code = f"""
import json
from firedup.tables.load import load
from firedup.tables.store import Store
r = load(Store({str(store)!r}))
p = dict(r.phases.group_by("run_id").len().iter_rows()); m = dict(r.milestones.group_by("run_id").len().iter_rows())
from collections import Counter
c = Counter(r.runs["run_id"].to_list())
print(json.dumps({{k: [c[k], p.get(k, 0), m.get(k, 0)] for k in set(c) | set(p)}}))
"""
    if not (store / "_firedup_store.json").exists():
        return duck, {}
    proc = s.py(code)
    if proc is None or proc.returncode != 0:
        return duck, (proc.stderr[-200:] if proc else "hang")
    return duck, {k: tuple(v) for k, v in json.loads(proc.stdout).items()}


def _judge_store(s: Sweep, case: str, store: Path, truth: dict[str, tuple[int, int]], must: set[str]) -> None:
    duck, own = _store_facts(s, store)
    if isinstance(own, str):
        s.record(8, case, "traceback", own)
        return
    for name, facts in (("DuckDB", duck), ("firedup", own)):
        for run_id, (copies, phases, milestones) in facts.items():
            if run_id not in truth or copies != 1:
                s.record(8, case, "lost/doubled", f"{name}: run {run_id[:20]} counted {copies} times"
                         + (" (a phantom: no runs file)" if copies == 0 else ""))
                return
            if (phases, milestones) != truth[run_id]:
                s.record(8, case, "lost/doubled", f"{name}: run {run_id[:20]} has {phases} phase rows, "
                                                  f"{truth[run_id][0]} are its own")
                return
        missing = must - set(facts)
        if missing:
            s.record(8, case, "lost/doubled", f"{name}: {len(missing)} runs lost")
            return
    if set(duck) != set(own):
        s.record(8, case, "wrong", "DuckDB and firedup see different runs")
        return
    s.record(8, case, "ok")


KILLED_AT = """
import os, sys
from firedup.tables import store
at, done = int(os.environ["KILL_AT"]), [0]
for name in ("put", "remove"):
    def step(self, *args, _orig=getattr(store._Folder, name), **kw):
        if done[0] == at:
            os._exit(137)
        done[0] += 1
        return _orig(self, *args, **kw)
    setattr(store._Folder, name, step)
from firedup.cli import main
sys.argv = ["firedup", *sys.argv[1:]]
main()
"""


def sweep_store(s: Sweep) -> None:
    logs_dir = s.folder("storelogs")
    names = []
    base = TP8.read_text()
    for i in range(3):
        path = logs_dir / f"run{i}.log"
        path.write_text(base + "\n" * (i + 1))  # three contents, three hashes
        names.append(str(path))
    clean = s.folder("clean") / "store"
    proc = s.run(["ingest", "--store", str(clean), *names])
    assert proc is not None and proc.returncode == 0, proc.stderr if proc else "hang"
    _, own = _store_facts(s, clean)
    assert isinstance(own, dict)
    truth = {k: (v[1], v[2]) for k, v in own.items()}
    for scenario in ("ingest", "--force --date (a move)"):
        for step in range(12):
            store = s.folder("kill") / "store"
            if scenario == "ingest":
                args = ["ingest", "--store", str(store), *names]
            else:
                first = s.run(["ingest", "--store", str(store), "--date", "2025-01-15", *names])
                assert first is not None and first.returncode == 0
                args = ["ingest", "--store", str(store), "--force", "--date", "2024-06-30", names[0]]
            proc = subprocess.run([sys.executable, "-c", KILLED_AT, *args], env=s.env(KILL_AT=str(step)),
                                  capture_output=True, text=True, timeout=300, check=False)
            if proc.returncode not in (0, 137) or "Traceback" in proc.stderr:
                s.record(8, f"{scenario} killed before write {step}", "traceback", proc.stderr[-200:])
                break
            must = set(truth) if scenario != "ingest" else set()
            _judge_store(s, f"{scenario} killed before write {step}", store, truth, must)
            again = s.run(["ingest", "--store", str(store), *names])
            if again is None or again.returncode != 0:
                s.record(8, f"{scenario} killed at {step}, ingested again", "traceback", again.stderr if again else "")
            else:
                _judge_store(s, f"{scenario} killed before write {step}, ingested again", store, truth, set(truth))
            if proc.returncode != 137:
                break
    rng = random.Random(8)
    for _i in range(4 if s.quick else 10):
        store = s.folder("rand") / "store"
        delay = rng.uniform(0.3, 4.0)
        proc = subprocess.Popen(s.cmd("ingest", "--store", str(store), *names), env=s.env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        _judge_store(s, f"ingest SIGKILLed after {delay:.1f} s", store, truth, set())
    for table in ("runs", "phases", "milestones"):
        for damage in ("truncated", "zero-byte", "foreign", "wrong-schema", "not Parquet"):
            store = s.folder("dmg") / "store"
            shutil.copytree(clean, store)
            victim = sorted((store / table).rglob("*.parquet"))[0]
            data = victim.read_bytes()
            if damage == "truncated":
                victim.write_bytes(data[: len(data) // 2])
            elif damage == "zero-byte":
                victim.write_bytes(b"")
            elif damage == "not Parquet":
                victim.write_text("run_id,seconds\nx,1\n")
            else:
                code = f"""
import polars as pl
p = {str(victim)!r}
if {damage!r} == "foreign":
    pl.DataFrame({{"x": [1, 2], "y": ["a", "b"]}}).write_parquet(p)
else:
    col = {{"runs": "ready_seconds", "phases": "seconds", "milestones": "offset"}}[{table!r}]
    pl.read_parquet(p).with_columns(pl.lit("not a number").alias(col)).write_parquet(p)
"""
                s.py(code)
            proc = s.run(["runs", "--store", str(store)])
            case = f"{table} file {damage}"
            bad = crashed(proc)
            if bad:
                s.record(8, case, bad, proc.stderr[-200:] if proc else "")
                continue
            assert proc is not None
            shown = [line for line in proc.stdout.splitlines() if ".log" in line]
            named = str(victim.relative_to(store)) in proc.stderr
            if len(shown) < (len(names) - 1 if table == "runs" else len(names)):
                s.record(8, case, "lost/doubled", f"{len(shown)} of {len(names)} runs read: "
                                                  f"{proc.stderr.strip()[:150]}")
            elif not named:
                s.record(8, case, "wrong", "the file is not named")
            else:
                s.record(8, case, "ok")
    for name in ("st[1]", "st**", "s?t", "st{a,b}", "st[!x]"):
        store = s.folder("glob") / name
        proc = s.run(["ingest", "--store", str(store), *names])
        back = s.run(["runs", "--store", str(store)])
        bad = crashed(proc) or crashed(back)
        ok = back is not None and len([line for line in back.stdout.splitlines() if ".log" in line]) == len(names)
        s.record(8, f"a store folder named {name}", bad or ("ok" if ok else "lost/doubled"),
                 "" if ok else (back.stderr.strip()[:150] if back else ""))


SWEEPS = {4: sweep_writes, 5: sweep_changing, 6: sweep_lying, 7: sweep_slow, 8: sweep_store}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the checkout's src/ to run (default: this one)")
    parser.add_argument("--classes", default="4,5,6,7,8", help="which classes (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer and smaller cases")
    parser.add_argument("--json", type=Path, help="also write every case's outcome here")
    args = parser.parse_args()
    src = args.src.resolve()
    with tempfile.TemporaryDirectory(prefix="hostile-io-") as tmp:
        sweep = Sweep(src, src.parent / "docs", Path(tmp), args.quick)
        classes = [int(c) for c in args.classes.split(",")]
        print(f"code: {src}")
        for klass in classes:
            print(f"class {klass}: ", end="", flush=True)
            began = time.monotonic()
            try:
                SWEEPS[klass](sweep)
            except Exception as exc:  # a broken sweep says so and goes on to the next class
                sweep.record(klass, "the sweep itself", "traceback", f"{type(exc).__name__}: {exc}")
            print(f"  ({time.monotonic() - began:.0f} s)")
    print()
    header = f"{'class':<34}{'tried':>6}" + "".join(f"{o:>13}" for o in OUTCOMES[1:])
    print(header)
    names = {4: "4 writes: links, races", 5: "5 files changing under reads", 6: "6 servers, processes that lie",
             7: "7 slow inputs", 8: "8 the store under faults"}
    totals: Counter[str] = Counter()
    for klass in classes:
        got = Counter(outcome for k, _, outcome, _ in sweep.results if k == klass)
        tried = sum(got.values())
        totals.update(got)
        totals["tried"] += tried
        print(f"{names[klass]:<34}{tried:>6}" + "".join(f"{got[o]:>13}" for o in OUTCOMES[1:]))
    print(f"{'all':<34}{totals['tried']:>6}" + "".join(f"{totals[o]:>13}" for o in OUTCOMES[1:]))
    bad = [r for r in sweep.results if r[2] != "ok"]
    if bad:
        print("\nnot ok:")
        for klass, case, outcome, why in bad:
            print(f"  [{klass}] {outcome}: {case}" + (f": {why}" if why else ""))
    if args.json:
        args.json.write_text(json.dumps([{"class": k, "case": c, "outcome": o, "why": w}
                                         for k, c, o, w in sweep.results], indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

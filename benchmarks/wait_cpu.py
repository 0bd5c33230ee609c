"""CPU that `firedup wait` burns per minute of waiting, against `sleep` doing nothing.

`wait` runs for the whole startup of a server (often 10-30 minutes, in every pod), so its
idle cost must be negligible. Each case runs `firedup wait` as a child process until its
timeout. Its CPU time (user + system) is read from /proc after a start-up allowance and
again just before it ends: the difference, scaled to a minute, is the steady cost without
the one-off start-up (imports, reading the log). The whole run's CPU comes from
`resource.getrusage(RUSAGE_CHILDREN)`. `sleep` for the same time is the floor.

Cases:
- idle log: the log sits in weight loading and nothing more arrives (the common case);
- idle log + URL: the same, probing a loopback URL that answers 503 once a second;
- growing log: a line every second (a chatty startup);
- idle log + --pid: the same idle log, with the server's process tree (a parent and 8
  children, like a TP8 server, each holding 200 open files as a server holds sockets, pipes
  and devices) inspected through /proc every 2 s of the silence (`--stall-after 1` starts the
  inspection after 1 s instead of 10 s);
- the same with NVML: a stand-in `pynvml` module on the path that reports the tree's 9
  processes on 8 GPUs, so what `wait` does with NVML's answers every 2 s is measured (the
  driver's own cost is not: it needs a GPU).

    python benchmarks/wait_cpu.py            # 62 s per case (about 6 minutes)
    python benchmarks/wait_cpu.py --short    # 6 s per case, for a CI smoke check
    python benchmarks/wait_cpu.py --src OLD/src   # another checkout's code (a baseline)
"""

from __future__ import annotations

import argparse
import http.server
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = """[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1, disable_cuda_graph=False)
[2026-01-10 10:00:05 TP0] Init torch distributed begin.
[2026-01-10 10:00:06 TP0] Init torch distributed ends. mem usage=0.00 GB
[2026-01-10 10:00:06 TP0] Load weight begin. avail mem=78.50 GB
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a live process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


SRC = ROOT / "src"
# A stand-in for nvidia-ml-py: 8 GPUs, the watched tree's pids on them (FAKE_NVML_PIDS).
FAKE_NVML = """import os
from types import SimpleNamespace as N
class NVMLError(Exception): pass
PIDS = [int(p) for p in os.environ.get("FAKE_NVML_PIDS", "").split(",") if p]
def nvmlInit(): pass
def nvmlDeviceGetCount(): return 8
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetMinorNumber(h): return h
def nvmlDeviceGetComputeRunningProcesses(h): return [N(pid=p, usedGpuMemory=2 << 30) for p in PIDS[h::8]]
def nvmlDeviceGetUtilizationRates(h): return N(gpu=0, memory=0)
def nvmlDeviceGetMemoryInfo(h): return N(used=3 << 30, total=80 << 30, free=77 << 30)
"""


def env(*extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([*extra, str(SRC), out.get("PYTHONPATH", "")])
    return out


def measure(argv: list[str], seconds: float, settle: float,
            during: Callable[[float], None] | None = None, environ: dict[str, str] | None = None,
            ) -> tuple[float, float, float]:
    """(whole-run CPU from getrusage, CPU at `settle` s, CPU just before the end) of one child run."""
    before = children_cpu()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environ or env())
    worker = threading.Thread(target=during, args=(seconds,), daemon=True) if during else None
    if worker:
        worker.start()
    time.sleep(settle)
    at_settle = process_cpu(proc.pid)
    time.sleep(max(0.0, seconds - settle - 0.5))
    at_end = process_cpu(proc.pid)
    proc.wait()
    if worker:
        worker.join()
    return children_cpu() - before, at_settle, at_end


def _tree(pid: int) -> list[int]:
    """The process and its children, deepest first."""
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return [k for kid in kids for k in _tree(kid)] + [pid]


class _Starting(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="6 s runs (CI smoke) instead of 62 s")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the firedup code to run (another checkout's src/)")
    parser.add_argument("--only", default="", help="run only the cases whose name holds this text")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per case (default 62; --short 6)")
    args = parser.parse_args()
    seconds = args.seconds or (6.0 if args.short else 62.0)
    global SRC
    SRC = args.src.resolve()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Starting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"

        def wait_argv(seconds: float, *extra: str) -> list[str]:
            log.write_text(START)
            return [sys.executable, "-m", "firedup", "wait", "--log", str(log), "--timeout", f"{seconds:g}",
                    "--quiet", *extra]

        def grow(seconds: float) -> None:
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                time.sleep(1.0)
                n += 1
                with open(log, "a") as f:
                    f.write(f"[2026-01-10 10:00:{6 + n % 50:02d} TP0] Using model weights format ['*.safetensors'] #{n}\n")

        # a stand-in for a TP8 server: a parent and 8 sleeping children, each with 200 files open
        hold = "import os, time; files = [open(os.devnull) for _ in range(200)]; time.sleep(3600)"
        tree = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                                 f"kids = [subprocess.Popen([sys.executable, '-c', {hold!r}]) "
                                 f"for _ in range(8)]\n{hold}"])
        time.sleep(1.0)
        nvml = Path(tmp) / "nvml"
        nvml.mkdir()
        (nvml / "pynvml.py").write_text(FAKE_NVML)
        with_nvml = {**env(str(nvml)), "FAKE_NVML_PIDS": ",".join(str(p) for p in _tree(tree.pid))}
        watch = ["--pid", str(tree.pid), "--stall-after", "1"]
        cases: list[tuple[str, Callable[[float], list[str]], Callable[[float], None] | None,
                          dict[str, str] | None]] = [
            ("sleep (baseline)", lambda s: ["sleep", f"{s:g}"], None, None),
            ("wait: idle log", lambda s: wait_argv(s), None, None),
            ("wait: idle log + URL probe 1/s", lambda s: wait_argv(s, "--url", url), None, None),
            ("wait: log grows 1 line/s", lambda s: wait_argv(s), grow, None),
            ("wait: idle log + --pid tree of 9", lambda s: wait_argv(s, *watch), None, None),
            ("wait: idle log + --pid tree of 9 + NVML", lambda s: wait_argv(s, *watch), None, with_nvml),
        ]
        cases = [c for c in cases if args.only in c[0]]
        settle = 1.5
        print(f"code: {SRC}")
        print(f"each case runs {seconds:g} s; the steady cost is the process's CPU (from /proc) between "
              f"{settle:g} s and {seconds - 0.5:g} s, scaled to a minute")
        print(f"{'case':<40} {'whole run':>10} {'start-up':>9} {'s CPU/min':>10} {'% core':>7}")
        results = {}
        for name, argv, during, environ in cases:
            whole, at_settle, at_end = measure(argv(seconds), seconds, settle, during, environ)
            per_min = (at_end - at_settle) / (seconds - 0.5 - settle) * 60
            results[name] = per_min
            print(f"{name:<40} {whole:>9.3f}s {at_settle:>8.2f}s {per_min:>10.4f} {per_min / 60 * 100:>6.3f}%")
        for pid in _tree(tree.pid):
            os.kill(pid, 9)
        tree.wait()
    server.shutdown()
    base = results.get("sleep (baseline)", 0.0)
    worst = max(v for k, v in results.items() if k.startswith("wait"))
    print(f"\nworst steady cost of wait: {worst:.4f} CPU s per minute of waiting "
          f"({worst / 60 * 100:.3f}% of one core; sleep: {base:.4f} s/min)")


if __name__ == "__main__":
    main()

"""What a silent server is doing: its process tree read from `/proc` (and `nvidia-smi`).

A server that prints nothing for ten minutes may be compiling kernels, reading weights
from a slow mount, allocating GPU memory, or waiting for a peer that will never come
(an engine issue reported ten silent minutes that looked like a hang). The log cannot tell these apart;
the process tree can: compiler children, read bytes growing, GPU memory growing, CPU
time growing, or none of them.

Only four files per process are read (`stat`, `cmdline`, `io`, and the kernel's
`task/*/children` lists, with a scan of every `stat` where those lists are missing), so
a fake `/proc` tree in a temporary folder stands in for the real one in tests
(`ProcFS(root)`). psutil reads the same files but through one global `PROCFS_PATH` and
many more of them; this is all `wait` needs, without a dependency.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Executables whose presence in the tree means kernels are being compiled (CUDA's
# nvcc -> cicc -> ptxas chain, C/C++ builds of JIT extensions under ninja, a linker).
COMPILERS = frozenset({"nvcc", "cicc", "ptxas", "fatbinary", "nvlink", "ninja", "gcc", "g++", "cc", "c++", "cc1",
                       "cc1plus", "clang", "clang++", "ld", "ld.lld", "as", "hipcc", "cmake", "make"})
# Words in a Python worker's command line that mark a compile worker (Triton, Inductor).
COMPILE_WORKERS = ("compile_worker", "triton", "_inductor")

WINDOW_S = 10.0  # rates are measured over the newest samples within this span
MIN_SPAN_S = 1.5  # a verdict needs samples at least this far apart
READ_MB_S = 1.0  # read rate that means "reading"
BUSY_CPU = 0.10  # share of one core that means "busy"
GPU_GROWTH_MB = 64.0  # GPU memory growth over the window that means "allocating"


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    state: str  # R, S, D, T (stopped), t (traced), Z, X, ...
    comm: str
    cpu_ticks: int  # user + system
    read_bytes: int | None  # from storage (None: /proc/PID/io unreadable)
    rchar: int | None  # every read() (network filesystems, pipes)
    cmdline: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The executable's name: the command line's first word, else the kernel's `comm`."""
        return os.path.basename(self.cmdline[0]) if self.cmdline and self.cmdline[0] else self.comm


class ProcFS:
    """The few `/proc` files `wait` reads, under `root` (a fake tree in tests)."""

    def __init__(self, root: Path | str = "/proc") -> None:
        self.root = Path(root)
        self.ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def info(self, pid: int) -> ProcInfo | None:
        base = self.root / str(pid)
        try:
            stat = (base / "stat").read_text()
        except OSError:
            return None
        try:
            head, rest = stat.rsplit(")", 1)
            comm = head.split("(", 1)[1]
            fields = rest.split()
            state, ppid = fields[0], int(fields[1])
            cpu = int(fields[11]) + int(fields[12])
        except (IndexError, ValueError):
            return None
        read_bytes = rchar = None
        try:
            for line in (base / "io").read_text().splitlines():
                key, _, value = line.partition(":")
                if key == "read_bytes":
                    read_bytes = int(value)
                elif key == "rchar":
                    rchar = int(value)
        except (OSError, ValueError):
            pass
        try:
            cmdline = tuple(p for p in (base / "cmdline").read_bytes().decode(errors="replace").split("\0") if p)
        except OSError:
            cmdline = ()
        return ProcInfo(pid, ppid, state, comm, cpu, read_bytes, rchar, cmdline)

    def pids(self) -> list[int]:
        try:
            return [int(p.name) for p in self.root.iterdir() if p.name.isdigit()]
        except OSError:
            return []

    def children(self, pid: int) -> list[int] | None:
        """The kernel's list of a process's children (None where the kernel keeps none)."""
        tasks = self.root / str(pid) / "task"
        try:
            lists = [t / "children" for t in tasks.iterdir()]
        except OSError:
            return None
        found: list[int] = []
        seen = False
        for path in lists:
            try:
                found.extend(int(p) for p in path.read_text().split())
                seen = True
            except (OSError, ValueError):
                continue
        return found if seen else None

    def tree(self, pid: int) -> list[ProcInfo]:
        """`pid` and all its descendants (empty when `pid` is gone)."""
        root = self.info(pid)
        if root is None:
            return []
        out = [root]
        by_parent: dict[int, list[ProcInfo]] | None = None
        queue = [pid]
        seen = {pid}
        while queue:
            parent = queue.pop()
            kids = self.children(parent)
            if kids is None:
                if by_parent is None:  # no children lists: one scan of every process
                    by_parent = {}
                    for other in self.pids():
                        info = self.info(other)
                        if info is not None:
                            by_parent.setdefault(info.ppid, []).append(info)
                infos = by_parent.get(parent, [])
            else:
                infos = [i for i in (self.info(k) for k in kids) if i is not None]
            for info in infos:
                if info.pid not in seen:
                    seen.add(info.pid)
                    out.append(info)
                    queue.append(info.pid)
        return out


def gpu_memory_by_pid(timeout: float = 5.0) -> dict[int, float] | None:
    """MB of GPU memory per process from `nvidia-smi` (None when it is absent or fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=timeout, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    used: dict[int, float] = {}
    for line in out.splitlines():
        pid, _, mb = line.partition(",")
        try:
            used[int(pid)] = used.get(int(pid), 0.0) + float(mb)
        except ValueError:
            continue
    return used


@dataclass(frozen=True)
class Activity:
    """What the tree did over the last seconds, in words, and whether that is work."""

    kind: str  # "compiling" | "reading" | "allocating" | "busy" | "stuck" | "gone"
    text: str
    busy: bool  # clearly working: a timeout now is "timed out while busy"
    processes: int = 0

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class _Sample:
    at: float
    alive: bool
    processes: int
    stopped: int
    cpu_ticks: int
    read_bytes: int
    compilers: tuple[str, ...]
    gpu_mb: float | None


class TreeWatch:
    """Samples a process tree and says what it is doing (`sample`, then `activity`)."""

    def __init__(self, pid: int, procfs: ProcFS | None = None,
                 gpu: Callable[[], dict[int, float] | None] | None = gpu_memory_by_pid,
                 gpu_every: float = 10.0) -> None:
        self.pid = pid
        self.procfs = procfs or ProcFS()
        self.gpu = gpu
        self.gpu_every = gpu_every
        self.samples: deque[_Sample] = deque(maxlen=64)
        self._gpu_at: float | None = None
        self._gpu_mb: float | None = None

    def sample(self, now: float) -> None:
        tree = self.procfs.tree(self.pid)
        if self.gpu is not None and (self._gpu_at is None or now - self._gpu_at >= self.gpu_every):
            self._gpu_at = now
            used = self.gpu()
            if used is None:
                self.gpu = None  # no nvidia-smi here: never ask again
            else:
                pids = {p.pid for p in tree}
                self._gpu_mb = sum(mb for pid, mb in used.items() if pid in pids)
        compilers = sorted({p.name for p in tree[1:] if _is_compiler(p)})
        reads = sum(max(p.read_bytes or 0, p.rchar or 0) for p in tree)
        self.samples.append(_Sample(now, bool(tree), len(tree), sum(p.state in "Tt" for p in tree),
                                    sum(p.cpu_ticks for p in tree), reads, tuple(compilers), self._gpu_mb))
        while self.samples and now - self.samples[0].at > WINDOW_S:
            self.samples.popleft()

    def activity(self) -> Activity | None:
        """The verdict over the window (None until samples span MIN_SPAN_S)."""
        if not self.samples:
            return None
        last = self.samples[-1]
        if not last.alive:
            return Activity("gone", f"process {self.pid} is gone", busy=False)
        if last.stopped == last.processes:
            n = last.processes
            return Activity("stuck", f"stopped: {n} process{'es' if n != 1 else ''} suspended (SIGSTOP, a debugger, "
                                     "a frozen cgroup)", busy=False, processes=n)
        if last.compilers:
            return Activity("compiling", f"compiling kernels ({', '.join(last.compilers)})", busy=True,
                            processes=last.processes)
        first = next((s for s in self.samples if s.alive), last)
        span = last.at - first.at
        if span < MIN_SPAN_S:
            return None
        read_mb_s = max(0, last.read_bytes - first.read_bytes) / span / 1e6
        cpu = max(0, last.cpu_ticks - first.cpu_ticks) / self.procfs.ticks / span
        if read_mb_s >= READ_MB_S:
            return Activity("reading", f"reading weights ({read_mb_s:.0f} MB/s)", busy=True, processes=last.processes)
        if first.gpu_mb is not None and last.gpu_mb is not None and last.gpu_mb - first.gpu_mb >= GPU_GROWTH_MB:
            grown = (last.gpu_mb - first.gpu_mb) / 1024
            return Activity("allocating", f"allocating GPU memory (+{grown:.1f} GB)", busy=True,
                            processes=last.processes)
        if cpu >= BUSY_CPU:
            return Activity("busy", f"busy on CPU ({cpu * 100:.0f}% of a core)", busy=True, processes=last.processes)
        return Activity("stuck", f"idle: no CPU ({cpu * 100:.0f}% of a core), no reads, no compiler in "
                                 f"{last.processes} process{'es' if last.processes != 1 else ''}: waiting on a peer "
                                 "(an NCCL rendezvous?) or stuck", busy=False, processes=last.processes)


def _is_compiler(info: ProcInfo) -> bool:
    if info.name in COMPILERS or info.comm in COMPILERS:
        return True
    line = " ".join(info.cmdline[:4])
    return "python" in info.name and any(word in line for word in COMPILE_WORKERS)


def looks_like_server(procfs: ProcFS, pid: int) -> bool:
    """A pid a log names is this machine's server only if it exists and runs Python."""
    info = procfs.info(pid)
    return info is not None and any("python" in part for part in info.cmdline[:2])


__all__ = ["Activity", "ProcFS", "ProcInfo", "TreeWatch", "gpu_memory_by_pid", "looks_like_server"]

"""What a silent server is doing: its process tree read from `/proc` (its GPUs: `live.gpu`).

A server that prints nothing for minutes may be importing Python and CUDA, reading weights
from a slow mount, compiling kernels, capturing CUDA graphs, allocating GPU memory, or
waiting for a peer that will never come. The log cannot tell these apart; the machine can,
and each verdict names what it saw:

* the files the tree reads: `/proc/PID/fd` targets and, for a process whose reads grow with
  no weight file open, the files it maps (`/proc/PID/maps`: safetensors are mapped, not read,
  and shared libraries are mapped as they are imported); the bytes from `/proc/PID/io`;
* compiler children (`nvcc`, `cicc`, `ptxas`, `ninja`, `cc1plus`, ...) and Triton/Inductor
  compile workers that use CPU;
* the GPUs the tree uses (NVML through `nvidia-ml-py` where it imports, else `nvidia-smi`;
  optional, read off the wait loop's thread, so a wedged driver cannot stall it).

`TreeWatch.sample` records what one look saw (a `Look`); `live.activity.classify` turns the
looks of the last seconds into an `Activity`, a pure function of them (tests feed it fake
trees and a fake NVML). Only a few files per process are read, and the costly ones (fd links, maps)
only for processes that read or work, so a fake `/proc` in a temporary folder stands in for
the real one (`ProcFS(root)`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from firedup.live.activity import (
    BUSY_CPU,
    GPU_BUSY_PCT,
    WINDOW_S,
    Activity,
    GpuSeen,
    Look,
    Seen,
    classify,
    printable,
)
from firedup.live.gpu import GpuReading, GpuWatch

# Executables whose presence in the tree means kernels are being compiled (CUDA's
# nvcc -> cicc -> ptxas chain, C/C++ builds of JIT extensions under ninja, a linker).
COMPILERS = frozenset({"nvcc", "cicc", "ptxas", "fatbinary", "nvlink", "ninja", "gcc", "g++", "cc", "c++", "cc1",
                       "cc1plus", "clang", "clang++", "ld", "ld.lld", "as", "hipcc", "cmake", "make"})
# Words in a Python worker's command line that mark a compile worker (Triton, Inductor). A pool
# of them outlives the compiling, so one counts only while it uses CPU.
COMPILE_WORKERS = ("compile_worker", "triton", "_inductor")

# What a file is, by its path (`file_kind`).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt")
# Kernel caches and JIT build folders (Triton, Inductor, torch.compile, FlashInfer, DeepGEMM,
# torch C++ extensions, the CUDA driver's PTX cache) and the files a kernel build handles.
CACHE_MARKERS = ("/.triton/", "/torchinductor_", "/torch_compile_cache/", "/.nv/computecache/", "/torch_extensions/",
                 "/.cache/flashinfer", "/.cache/deep_gemm", "/.cache/triton", "/.cache/tvm-ffi", "/.cache/cutlass",
                 "/.cache/torch/kernels")
CACHE_SUFFIXES = (".cubin", ".ptx", ".cu", ".cuh", ".fatbin", ".o", ".ninja")
# Files in a cache folder that no build handles: a JIT library's own log (FlashInfer opens
# `flashinfer_jit.log` when it is imported: seen on a real start), its locks, its indexes.
NOT_BUILD = (".log", ".lock", ".json", ".txt")
# Files beside the weights in a model folder that are no weights (configs, tokenizers, docs).
NOT_WEIGHTS = (".json", ".txt", ".md", ".jinja", ".model", ".tiktoken", ".vocab", ".yaml", ".py", ".lock")
_SHARED_LIB = re.compile(r"\.so(?:\.[0-9]+){0,4}$")
_GPU_DEVICE = re.compile(r"/dev/nvidia([0-9]{1,3})")

READER_BYTES = 256 * 1024  # a process that read this much since the last look has its files looked at
FULL_SCAN_S = 30.0  # a working process's fd links are read again this often (a GPU opened later)
MAX_FDS = 4096  # fd links read per process at most (a server with more is not read whole)
MAX_MAPS_BYTES = 8 << 20  # of /proc/PID/maps, read at most


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
    start_ticks: int | None = None  # clock ticks after boot the process started (stat field 22)

    @cached_property
    def name(self) -> str:
        """The executable's name: the command line's first word, else the kernel's `comm`."""
        return os.path.basename(self.cmdline[0]) if self.cmdline and self.cmdline[0] else self.comm

    @property
    def reads(self) -> int | None:
        """Bytes read so far, from storage or not (None: unreadable)."""
        if self.read_bytes is None and self.rchar is None:
            return None
        return max(self.read_bytes or 0, self.rchar or 0)


class ProcFS:
    """The few `/proc` files `wait` reads, under `root` (a fake tree in tests)."""

    def __init__(self, root: Path | str = "/proc") -> None:
        self.root = Path(root)
        self._root = str(root)  # paths as strings: pathlib's joins cost more than the reads, every look
        self.ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._btime: float | None = None
        self._cmdlines: dict[tuple[int, int | None], tuple[str, ...]] = {}

    def _read(self, pid: int, name: str) -> bytes:
        with open(f"{self._root}/{pid}/{name}", "rb") as f:
            return f.read()

    def stat(self, pid: int) -> tuple[str, list[str]] | None:
        """(comm, the fields after it) of `/proc/PID/stat`; None when gone or garbled."""
        try:
            text = self._read(pid, "stat").decode(errors="replace")
            head, rest = text.rsplit(")", 1)
            return head.split("(", 1)[1], rest.split()
        except (OSError, IndexError, ValueError):
            return None

    def _cmdline(self, pid: int, start: int | None) -> tuple[str, ...]:
        """The command line, read once per process (by pid and start time: a reused pid is
        another process)."""
        key = (pid, start)
        found = self._cmdlines.get(key)
        if found is None:
            try:
                found = tuple(p for p in self._read(pid, "cmdline").decode(errors="replace").split("\0") if p)
            except OSError:
                return ()
            if found and start is not None:
                if len(self._cmdlines) > 4096:
                    self._cmdlines.clear()
                self._cmdlines[key] = found
        return found

    def info(self, pid: int) -> ProcInfo | None:
        stat = self.stat(pid)
        if stat is None:
            return None
        comm, fields = stat
        try:
            state, ppid = fields[0], int(fields[1])
            cpu = int(fields[11]) + int(fields[12])
        except (IndexError, ValueError):
            return None
        start = _start_ticks(fields)
        read_bytes = rchar = None
        try:
            for line in self._read(pid, "io").split(b"\n"):
                key, _, value = line.partition(b":")
                if key == b"read_bytes":
                    read_bytes = int(value)
                elif key == b"rchar":
                    rchar = int(value)
        except (OSError, ValueError):
            pass
        return ProcInfo(pid, ppid, state, comm, cpu, read_bytes, rchar, self._cmdline(pid, start), start)

    def start_ticks(self, pid: int) -> int | None:
        """When `pid` started, in clock ticks after boot: the identity of a process (a pid is
        reused; a (pid, start) pair is not). None when there is no such process."""
        stat = self.stat(pid)
        return None if stat is None else _start_ticks(stat[1])

    def state(self, pid: int) -> tuple[str, int | None] | None:
        """(state letter, start ticks) of `pid` from one read of its stat; None when gone."""
        stat = self.stat(pid)
        if stat is None or not stat[1]:
            return None
        return stat[1][0], _start_ticks(stat[1])

    def boot_time(self) -> float | None:
        """The machine's boot, in seconds since the epoch (`btime` of /proc/stat)."""
        if self._btime is None:
            try:
                for line in (self.root / "stat").read_text().splitlines():
                    if line.startswith("btime "):
                        self._btime = float(line.split()[1])
                        break
            except (OSError, ValueError, IndexError):
                return None
        return self._btime

    def start_time(self, pid: int) -> float | None:
        """When `pid` started, in seconds since the epoch (None: no such process, or no /proc)."""
        ticks, boot = self.start_ticks(pid), self.boot_time()
        if ticks is None or boot is None:
            return None
        return boot + ticks / self.ticks

    def pid_max(self) -> int | None:
        try:
            return int((self.root / "sys" / "kernel" / "pid_max").read_text())
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        try:
            return [int(p.name) for p in self.root.iterdir() if p.name.isdigit()]
        except OSError:
            return []

    def fds(self, pid: int) -> list[str] | None:
        """What the process's open file descriptors point at (paths, `socket:[N]`, ...);
        None when they cannot be read (another user's process, gone)."""
        folder = f"{self.root}/{pid}/fd"
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        out = []
        for name in names[:MAX_FDS]:
            with contextlib.suppress(OSError):
                out.append(os.readlink(f"{folder}/{name}"))
        return out

    def maps(self, pid: int) -> set[str] | None:
        """The files the process maps (shared libraries, mapped weights); None when unreadable."""
        try:
            with open(f"{self.root}/{pid}/maps", "rb") as f:
                data = f.read(MAX_MAPS_BYTES)
        except OSError:
            return None
        found: set[bytes] = set()
        for line in data.splitlines():
            at = line.find(b" /")  # the path is the last field; nothing before it holds " /"
            if at >= 0:
                found.add(line[at + 1:])
        return {os.fsdecode(p).removesuffix(" (deleted)") for p in found}

    def children(self, pid: int) -> list[int] | None:
        """The kernel's list of a process's children (None where the kernel keeps none)."""
        tasks = f"{self._root}/{pid}/task"
        try:
            tids = os.listdir(tasks)
        except OSError:
            return None
        found: list[int] = []
        seen = False
        for tid in tids:
            try:
                with open(f"{tasks}/{tid}/children", "rb") as f:
                    found.extend(int(p) for p in f.read().split())
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


def _start_ticks(fields: Sequence[str]) -> int | None:
    try:
        return int(fields[19])  # field 22 of stat; `fields` starts at field 3 (the state)
    except (IndexError, ValueError):
        return None


def file_kind(path: str, model_dirs: Sequence[str] = ()) -> str | None:
    """What a file the tree has open or mapped is, by its path: "weights", "module" (Python
    code, a shared library), "cache" (a kernel cache or build file), "gpu" (an NVIDIA device
    node), or None (anything else: sockets, pipes, logs)."""
    if not path.startswith("/"):
        return None  # socket:[N], pipe:[N], anon_inode:...
    device = _GPU_DEVICE.fullmatch(path)
    if device is not None:
        return "gpu"
    if path.startswith(("/dev/", "/proc/", "/sys/")):
        return None
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    if any(m in low for m in CACHE_MARKERS) or name.endswith(CACHE_SUFFIXES):
        return None if name.endswith(NOT_BUILD) else "cache"
    if name.endswith((".py", ".pyc")) or _SHARED_LIB.search(name):
        return "module"
    installed = "/site-packages/" in low or "/dist-packages/" in low
    if name.endswith(WEIGHT_SUFFIXES) and not installed:
        return "weights"
    in_model = any(path.startswith(d.rstrip("/") + "/") for d in model_dirs if d.startswith("/")) \
        or ("/models--" in path and ("/blobs/" in path or "/snapshots/" in path))  # a hub cache
    if in_model and not name.endswith(NOT_WEIGHTS):
        return "weights"
    return None


def gpu_minor(path: str) -> int | None:
    m = _GPU_DEVICE.fullmatch(path)
    return int(m.group(1)) if m else None


class TreeWatch:
    """Samples a process tree and says what it is doing (`sample`, then `activity`).

    Only what tells the classes apart is read: `stat`, `cmdline` and `io` of every process;
    the fd links of a process seen for the first time, every FULL_SCAN_S while it works, and
    whenever it read READER_BYTES since the last look; its maps on first sight (the baseline
    of its libraries), then only when it reads or works with no weight file or kernel cache
    open and neither a compiler nor a busy GPU already explains the tree."""

    def __init__(self, pid: int, procfs: ProcFS | None = None, gpu: GpuWatch | None = None,
                 model_dirs: Sequence[str] = ()) -> None:
        self.pid = pid
        self.procfs = procfs or ProcFS()
        self.gpu = gpu
        self.model_dirs = tuple(model_dirs)
        self.phase: str | None = None  # the log's stage, set by the caller
        self.looks: deque[Look] = deque(maxlen=64)
        self.identity = self.procfs.start_ticks(pid)  # a reused pid is another process
        self._prev: dict[int, ProcInfo] = {}
        self._fds_at: dict[int, float] = {}
        self._gpus: dict[int, tuple[int, ...]] = {}
        self._libs: dict[int, tuple[float, set[str]]] = {}  # pid -> (when, what it mapped then)

    @property
    def samples(self) -> deque[Look]:
        return self.looks

    def _files(self, info: ProcInfo, now: float, read: int, worked: bool) -> tuple[tuple[str, ...], ...]:
        """(weights, modules, caches) open, scanning fd links only when worth it (first sight, a
        reader, a worker not scanned for FULL_SCAN_S: an idle process opens nothing); also the GPUs."""
        pid = info.pid
        due = pid not in self._fds_at or (worked and now - self._fds_at[pid] >= FULL_SCAN_S)
        if not (due or read >= READER_BYTES):
            return (), (), ()
        links = self.procfs.fds(pid)
        self._fds_at[pid] = now
        if links is None:
            return (), (), ()
        kinds: dict[str, list[str]] = {"weights": [], "module": [], "cache": [], "gpu": []}
        for link in links:
            kind = file_kind(link, self.model_dirs)
            if kind is not None:
                kinds[kind].append(link)
        self._gpus[pid] = tuple(sorted({m for m in (gpu_minor(g) for g in kinds["gpu"]) if m is not None}))
        return tuple(kinds["weights"]), tuple(kinds["module"]), tuple(kinds["cache"])

    def _mapped(self, pid: int, now: float) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """(weights mapped, shared libraries newly mapped, kernel-cache files newly mapped): new
        since the previous look, where its maps were read then too (else this read is a baseline
        only: what was mapped since an older read may have been mapped long ago)."""
        paths = self.procfs.maps(pid)
        if paths is None:
            return (), (), ()
        weights, libs, caches = [], set(), set()
        for path in paths:
            kind = file_kind(path, self.model_dirs)
            if kind == "weights":
                weights.append(path)
            elif kind == "module":
                libs.add(path)
            elif kind == "cache":
                caches.add(path)
        at, old = self._libs.get(pid, (None, set()))
        self._libs[pid] = (now, libs | caches)
        if at is None or not self.looks or at != self.looks[-1].at:
            return tuple(weights), (), ()  # a baseline
        return tuple(weights), tuple(sorted(libs - old)), tuple(sorted(caches - old))

    def sample(self, now: float) -> None:
        tree = self.procfs.tree(self.pid)
        if tree and self.identity is not None and tree[0].start_ticks not in (None, self.identity):
            tree = []  # the pid is another process's now: the watched one is gone
        reading = self.gpu.request(now) if self.gpu is not None else None
        span = now - self.looks[-1].at if self.looks else 0.0
        gpu = self._gpu_seen(reading, tree)
        # a compiler child or a busy GPU already explains the tree: no maps read to find out more
        explained = any(_is_compiler(p) for p in tree[1:]) or (
            gpu is not None and gpu.util is not None and gpu.util >= GPU_BUSY_PCT)
        seen = [self._seen(info, info is not tree[0], now, span, explained) for info in tree]
        self._prev = {i.pid: i for i in tree}
        for gone in set(self._fds_at) - set(self._prev):
            self._fds_at.pop(gone, None)
            self._gpus.pop(gone, None)
            self._libs.pop(gone, None)
        self.looks.append(Look(now, tuple(seen), gpu))
        while self.looks and now - self.looks[0].at > WINDOW_S:
            self.looks.popleft()

    def _seen(self, info: ProcInfo, child: bool, now: float, span: float, explained: bool) -> Seen:
        """One process at this look: its files read where worth it (`_files`, `_mapped`)."""
        old = self._prev.get(info.pid)
        read = (info.reads or 0) - ((old.reads or 0) if old is not None else (info.reads or 0))
        worked = old is not None and span > 0 and \
            (info.cpu_ticks - old.cpu_ticks) / self.procfs.ticks / span >= BUSY_CPU
        weights, modules, caches = self._files(info, now, read, worked)
        new_libs: tuple[str, ...] = ()
        if (not (weights or caches or explained) and (read >= READER_BYTES or worked)) \
                or info.pid not in self._libs:  # first sight: the baseline of what it maps
            mapped, new_libs, new_caches = self._mapped(info.pid, now)
            weights, caches = weights + mapped, caches + new_caches
        return Seen(info.pid, printable(info.name), info.state, info.cpu_ticks, info.reads,
                    compiler=child and _is_compiler(info) and not _is_worker(info),
                    worker=child and _is_worker(info), weights=weights, modules=modules,
                    caches=caches, new_libraries=new_libs, gpus=self._gpus.get(info.pid, ()))

    def _gpu_seen(self, reading: GpuReading | None, tree: Sequence[ProcInfo]) -> GpuSeen | None:
        """The tree's GPUs: those the driver lists its pids on, else those it has open (a
        container sees its own pids, the driver the host's)."""
        if reading is None:
            return None
        pids = {p.pid for p in tree}
        mine = [pid for pid in reading.used_mb if pid in pids]
        indexes = {i for pid in mine for i in reading.by_pid.get(pid, ())}
        minors = {m for pid in pids for m in self._gpus.get(pid, ())}
        indexes |= {d.index for d in reading.devices if d.minor is not None and d.minor in minors}
        devices = [d for d in reading.devices if d.index in indexes]
        utils = [d.util for d in devices if d.util is not None]
        if mine:
            used: float | None = sum(reading.used_mb[p] for p in mine)
            basis = "processes"
        else:
            totals = [d.used_mb for d in devices if d.used_mb is not None]
            used, basis = (sum(totals) if totals else None), "devices"
        return GpuSeen(tuple(sorted(indexes)), max(utils) if utils else None, used, basis)

    def activity(self) -> Activity | None:
        """The verdict over the window (None until looks span MIN_SPAN_S)."""
        found = classify(list(self.looks), self.phase, self.procfs.ticks)
        if found is not None and found.kind == "gone":
            return Activity("gone", f"process {self.pid} is gone", busy=False)
        return found


def _is_worker(info: ProcInfo) -> bool:
    line = " ".join(info.cmdline[:4])
    return "python" in info.name and any(word in line for word in COMPILE_WORKERS)


def _is_compiler(info: ProcInfo) -> bool:
    return info.name in COMPILERS or info.comm in COMPILERS or _is_worker(info)


def pid_alive(pid: int) -> bool:
    """False once the process is gone, zombies included (their parent has not reaped them)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):  # OverflowError: no pid is that large
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        state = stat.rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return True


def looks_like_server(procfs: ProcFS, pid: int) -> bool:
    """A pid a log names is this machine's server only if it exists and runs Python."""
    info = procfs.info(pid)
    return info is not None and any("python" in part for part in info.cmdline[:2])


__all__ = ["ProcFS", "ProcInfo", "TreeWatch", "file_kind", "gpu_minor", "looks_like_server", "pid_alive"]

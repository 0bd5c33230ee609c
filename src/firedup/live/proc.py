"""What a silent server is doing: its process tree read from `/proc`, and its GPUs.

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

`TreeWatch.sample` records what one look saw (a `Look`); `classify` turns the looks of the
last seconds into an `Activity`, a pure function of them (tests feed it fake trees and a
fake NVML). Only a few files per process are read, and the costly ones (fd links, maps)
only for processes that read or work, so a fake `/proc` in a temporary folder stands in for
the real one (`ProcFS(root)`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

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
# Files beside the weights in a model folder that are no weights (configs, tokenizers, docs).
NOT_WEIGHTS = (".json", ".txt", ".md", ".jinja", ".model", ".tiktoken", ".vocab", ".yaml", ".py", ".lock")
_SHARED_LIB = re.compile(r"\.so(?:\.[0-9]+){0,4}$")
_GPU_DEVICE = re.compile(r"/dev/nvidia([0-9]{1,3})")

WINDOW_S = 10.0  # rates are measured over the newest looks within this span
MIN_SPAN_S = 1.5  # a verdict needs looks at least this far apart
READ_MB_S = 1.0  # read rate that means "reading"
BUSY_CPU = 0.10  # share of one core that means "busy"
WORKER_CPU = 0.05  # share of one core a compile worker uses while it compiles
GPU_GROWTH_MB = 64.0  # GPU memory growth over the window that means "allocating"
GPU_BUSY_PCT = 10.0  # GPU utilisation (mean over the window) that means "busy"
READER_BYTES = 256 * 1024  # a process that read this much since the last look has its files looked at
FULL_SCAN_S = 30.0  # a working process's fd links are read again this often (a GPU opened later)
MAX_FDS = 4096  # fd links read per process at most (a server with more is not read whole)
MAX_MAPS_BYTES = 8 << 20  # of /proc/PID/maps, read at most
SHOWN = 3  # file or library names a note shows


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
        return "cache"
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


# --- the GPUs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    index: int
    minor: int | None  # /dev/nvidiaN
    util: float | None  # % of the last sample period a kernel ran
    used_mb: float | None  # memory in use on the device, by anyone


@dataclass(frozen=True)
class GpuReading:
    """One reading of the machine's GPUs: memory per process (the pids the driver reports) and
    each device's utilisation and memory."""

    used_mb: Mapping[int, float]  # pid -> MB
    devices: tuple[Device, ...]
    by_pid: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # pid -> device indexes


class GpuSource(Protocol):
    name: str
    every: float  # seconds between reads

    def read(self) -> GpuReading | None: ...


class Nvml:
    """NVML through `nvidia-ml-py` (imported as `pynvml`), or a module with its functions (tests)."""

    name = "NVML"
    every = 2.0

    def __init__(self, module: Any) -> None:
        self.nvml = module
        module.nvmlInit()
        self._handles = [module.nvmlDeviceGetHandleByIndex(i) for i in range(module.nvmlDeviceGetCount())]
        self._minors: list[int | None] = [self._call(module.nvmlDeviceGetMinorNumber, h) for h in self._handles]

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # NVMLError_NotSupported and kin: that figure is not there (MIG, old boards)
            return None

    def read(self) -> GpuReading:
        nvml = self.nvml
        used: dict[int, float] = {}
        by_pid: dict[int, list[int]] = {}
        devices = []
        for index, handle in enumerate(self._handles):
            for p in self._call(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or ():
                mb = (getattr(p, "usedGpuMemory", None) or 0) / 2**20
                used[p.pid] = used.get(p.pid, 0.0) + mb
                by_pid.setdefault(p.pid, []).append(index)
            rates = self._call(nvml.nvmlDeviceGetUtilizationRates, handle)
            memory = self._call(nvml.nvmlDeviceGetMemoryInfo, handle)
            devices.append(Device(index, self._minors[index], float(rates.gpu) if rates is not None else None,
                                  memory.used / 2**20 if memory is not None else None))
        return GpuReading(used, tuple(devices), {p: tuple(d) for p, d in by_pid.items()})


class NvidiaSmi:
    """`nvidia-smi --query-*` where NVML does not import: two short commands, each with a timeout."""

    name = "nvidia-smi"
    every = 10.0  # a process start costs more than NVML's call

    def __init__(self, exe: str, timeout: float = 5.0) -> None:
        self.exe = exe
        self.timeout = timeout

    def _query(self, what: str) -> list[list[str]]:
        out = subprocess.run([self.exe, what, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=self.timeout, check=True).stdout
        return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]

    def read(self) -> GpuReading:
        devices, uuid_index = [], {}
        for row in self._query("--query-gpu=index,uuid,utilization.gpu,memory.used"):
            if len(row) < 4 or not row[0].isdigit():
                continue
            uuid_index[row[1]] = int(row[0])
            devices.append(Device(int(row[0]), None, _number(row[2]), _number(row[3])))
        used: dict[int, float] = {}
        by_pid: dict[int, list[int]] = {}
        for row in self._query("--query-compute-apps=pid,used_memory,gpu_uuid"):
            if len(row) < 3 or not row[0].isdigit():
                continue
            pid = int(row[0])
            used[pid] = used.get(pid, 0.0) + (_number(row[1]) or 0.0)
            if row[2] in uuid_index:
                by_pid.setdefault(pid, []).append(uuid_index[row[2]])
        return GpuReading(used, tuple(devices), {p: tuple(d) for p, d in by_pid.items()})


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"
    return value if value == value and abs(value) < 1e15 else None


def gpu_source() -> tuple[GpuSource | None, str]:
    """NVML if `nvidia-ml-py` imports and initialises, else `nvidia-smi` if on PATH, else none;
    and a phrase saying which (or why none)."""
    why = "no NVML (nvidia-ml-py)"
    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]

        return Nvml(pynvml), "NVML"
    except ImportError:
        pass
    except Exception as exc:  # the driver is absent or refuses: no GPU to consult
        why = f"NVML did not start ({type(exc).__name__})"
    exe = shutil.which("nvidia-smi")
    if exe is not None:
        return NvidiaSmi(exe), "nvidia-smi"
    return None, f"{why} and no nvidia-smi"


class GpuWatch:
    """Reads the GPUs in a thread of its own, at most every `every` seconds of its source, so a
    wedged driver (NVML's start or call, an `nvidia-smi` that never returns) cannot stall the
    wait: a read that takes longer than `timeout` turns the GPU off for the rest of the wait,
    and `off` says why. `make` finds the source (`gpu_source`: NVML, else nvidia-smi), on the
    first read; `background=False` reads in the caller's thread (tests)."""

    def __init__(self, make: Callable[[], tuple[GpuSource | None, str]] = gpu_source, timeout: float = 6.0,
                 background: bool = True) -> None:
        self.make = make
        self.timeout = timeout
        self.background = background
        self.source: GpuSource | None = None
        self.latest: GpuReading | None = None
        self.off: str | None = None  # why the GPU is not (or no longer) consulted
        self._asked = threading.Event()
        self._lock = threading.Lock()
        self._since: float | None = None  # monotonic start of the read in flight
        self._last: float | None = None
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.source.name if self.source is not None else "the GPU query"

    def _read(self) -> None:
        if self.source is None:
            try:
                source, why = self.make()
            except Exception as exc:  # NVML's start failed in a way gpu_source did not foresee
                self.off = f"no GPU query ({type(exc).__name__})"
                return
            if source is None:
                self.off = why
                return
            self.source = source
        try:
            reading = self.source.read()
        except subprocess.TimeoutExpired as exc:
            self.off = f"{self.name} did not answer in {exc.timeout:g} s"
            return
        except Exception as exc:
            self.off = f"{self.name} failed ({type(exc).__name__})"
            return
        with self._lock:
            self.latest = reading

    def _loop(self) -> None:
        while self.off is None:
            self._asked.wait()
            self._asked.clear()
            self._since = time.monotonic()
            self._read()
            self._since = None

    def request(self, now: float) -> GpuReading | None:
        """Ask for a fresh reading (if one is due) and return the newest one there is."""
        if self.off is not None:
            return None
        every = self.source.every if self.source is not None else 2.0
        due = self._last is None or now - self._last >= every
        if not self.background:
            if due:
                self._last = now
                self._read()
            return None if self.off else self.latest
        since = self._since
        if since is not None and time.monotonic() - since > self.timeout:
            self.off = f"{self.name} did not answer in {self.timeout:g} s"
            return None
        if due and since is None:
            self._last = now
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="firedup-gpu", daemon=True)
                self._thread.start()
            self._asked.set()
        with self._lock:
            return self.latest


# --- looks and verdicts --------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One process at one look."""

    pid: int
    name: str
    state: str
    cpu_ticks: int
    reads: int | None
    compiler: bool = False  # a compiler executable
    worker: bool = False  # a Python compile worker (counts only while it uses CPU)
    weights: tuple[str, ...] = ()  # weight files open or mapped
    modules: tuple[str, ...] = ()  # Python modules or shared libraries open
    caches: tuple[str, ...] = ()  # kernel cache or build files open (or newly mapped)
    new_libraries: tuple[str, ...] = ()  # shared libraries mapped since the process's last maps read
    gpus: tuple[int, ...] = ()  # /dev/nvidiaN minors it has open


@dataclass(frozen=True)
class GpuSeen:
    """The tree's share of the GPUs at one look."""

    devices: tuple[int, ...]  # indexes the tree uses
    util: float | None  # the busiest of them, %
    used_mb: float | None  # the tree's memory on them
    basis: str  # "processes" (the driver names the tree's pids) | "devices" (their devices' totals)


@dataclass(frozen=True)
class Look:
    """What one look at the tree saw (`TreeWatch.sample`)."""

    at: float
    procs: tuple[Seen, ...]
    gpu: GpuSeen | None = None

    @property
    def alive(self) -> bool:
        return bool(self.procs)


@dataclass(frozen=True)
class Activity:
    """What the tree did over the last seconds, in words, whether that is work, and what was seen."""

    kind: str  # compiling | reading | gpu | allocating | importing | busy | stuck | gone
    text: str
    busy: bool  # clearly working: a timeout now is "timed out while busy"
    processes: int = 0
    evidence: tuple[str, ...] = ()
    compilers: tuple[str, ...] = ()  # compiler processes seen (the cache verdicts use them)

    def __str__(self) -> str:
        return self.text


GPU_DOING = {"cuda_graph": "capturing graphs", "warmup": "warming up"}


def printable(text: str) -> str:
    """A file or process name as a note may show it: what does not print (a newline that would
    forge a line, an escape sequence) is written as its escape."""
    return text if text.isprintable() else "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _names(paths: Iterable[str], limit: int = SHOWN) -> str:
    names = list(dict.fromkeys(printable(p.rsplit("/", 1)[-1]) for p in paths))
    shown = ", ".join(names[:limit])
    return shown + (f", +{len(names) - limit} more" if len(names) > limit else "")


def _paths(paths: Iterable[str], limit: int = 8) -> str:
    unique = list(dict.fromkeys(printable(p) for p in paths))
    return ", ".join(unique[:limit]) + (f", +{len(unique) - limit} more" if len(unique) > limit else "")


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"1 {word}" if n == 1 else f"{n} {words or word + 's'}"


def classify(looks: Sequence[Look], phase: str | None = None, ticks: int = 100) -> Activity | None:
    """The verdict over `looks` (oldest first; the newest within WINDOW_S count), a pure
    function of what they saw. None until they span MIN_SPAN_S (except a gone, stopped or
    compiling tree, which one look shows). `phase`: the log's stage, which names what a busy
    GPU is doing; `ticks`: clock ticks per second of the cpu figures."""
    if not looks:
        return None
    last = looks[-1]
    window = [x for x in looks if last.at - x.at <= WINDOW_S]
    if not last.alive:
        return Activity("gone", "the process is gone", busy=False)
    n = len(last.procs)
    if all(p.state in "Tt" for p in last.procs):
        return Activity("stuck", f"stopped: {_plural(n, 'process', 'processes')} suspended (SIGSTOP, a debugger, a frozen cgroup)",
                        busy=False, processes=n, evidence=("state T (stopped) in every process of the tree",))
    first = next((x for x in window if x.alive), last)
    span = last.at - first.at
    before = {p.pid: p for p in first.procs}

    def cpu_of(p: Seen) -> float:
        old = before.get(p.pid)
        return max(0, p.cpu_ticks - (old.cpu_ticks if old else 0)) / ticks / span if span > 0 else 0.0

    def read_of(p: Seen) -> float:
        old = before.get(p.pid)
        if p.reads is None or old is None or old.reads is None:
            return 0.0
        return max(0, p.reads - old.reads) / span / 1e6 if span > 0 else 0.0

    compilers = sorted({p.name for p in last.procs if p.compiler})
    workers = [p for p in last.procs if p.worker and span > 0 and cpu_of(p) >= WORKER_CPU]
    if compilers or workers:
        names = compilers + sorted({p.name for p in workers} - set(compilers))
        evidence = [f"compiler processes: {', '.join(f'{p.name} (pid {p.pid})' for p in last.procs if p.compiler)}"] \
            if compilers else []
        if workers:
            evidence.append("compile workers using CPU: " + ", ".join(f"pid {p.pid}" for p in workers))
        return Activity("compiling", f"compiling kernels ({', '.join(names)})", busy=True, processes=n,
                        evidence=tuple(evidence), compilers=tuple(compilers))
    if span < MIN_SPAN_S:
        return None
    cpu = sum(cpu_of(p) for p in last.procs)
    reads = sum(read_of(p) for p in last.procs)
    # weights: files of a model open (or mapped) in processes whose reads grow
    holders = {p.pid for x in window for p in x.procs if p.weights}
    weight_rate = sum(read_of(p) for p in last.procs if p.pid in holders)
    weights = [w for x in reversed(window) for p in x.procs for w in p.weights]
    if weights and weight_rate >= READ_MB_S:
        return Activity("reading", f"reading weights ({weight_rate:.0f} MB/s: {_names(weights)})", busy=True,
                        processes=n, evidence=(f"weight files open: {_paths(weights)}",
                                               f"{weight_rate:.1f} MB/s read by "
                                               f"{_plural(len(holders), 'process', 'processes')} holding them"))
    # kernel caches: build files opened, or cached kernels mapped, during the window
    caches = [c for x in window[1:] for p in x.procs for c in p.caches]
    if caches and (cpu >= BUSY_CPU or reads >= READ_MB_S):
        return Activity("compiling", f"compiling kernels (kernel cache: {_names(caches)})", busy=True, processes=n,
                        evidence=(f"kernel cache or build files: {_paths(caches)}",))
    gpu = [x.gpu for x in window if x.gpu is not None]
    gpu_evidence: tuple[str, ...] = ()
    if gpu and gpu[-1].devices:
        now = gpu[-1]
        utils = [g.util for g in gpu if g.util is not None]
        util = sum(utils) / len(utils) if utils else None
        where = f"GPU {', '.join(str(d) for d in now.devices)}"
        memory = f", {now.used_mb / 1024:.1f} GB" if now.used_mb is not None else ""
        whose = "" if now.basis == "processes" else " (the devices' totals: the driver does not name this tree's pids)"
        gpu_evidence = (f"{where}: {util:.0f}% busy{memory}{whose}" if util is not None
                        else f"{where}{memory}{whose}",)
        if util is not None and util >= GPU_BUSY_PCT:
            doing = GPU_DOING.get((phase or "").removeprefix("draft."))
            what = f"{doing}: " if doing else (f"in {phase}: " if phase else "")
            return Activity("gpu", f"GPU busy ({what}{util:.0f}% on {where}{memory})", busy=True, processes=n,
                            evidence=gpu_evidence)
        mem = [g for g in gpu if g.used_mb is not None and g.basis == now.basis]
        if len(mem) >= 2 and mem[-1].used_mb is not None and mem[0].used_mb is not None:
            grown = mem[-1].used_mb - mem[0].used_mb
            if grown >= GPU_GROWTH_MB:
                return Activity("allocating", f"allocating (GPU memory rising: +{grown / 1024:.1f} GB in "
                                f"{last.at - first.at:.0f} s on {where}{memory})", busy=True, processes=n,
                                evidence=gpu_evidence)
    libraries = [lib for x in window for p in x.procs for lib in p.new_libraries]
    modules = [m for p in last.procs if read_of(p) > 0 or cpu_of(p) >= BUSY_CPU for m in p.modules]
    if libraries or (modules and (cpu >= BUSY_CPU or reads >= READ_MB_S)):
        loaded = f"{_plural(len(set(libraries)), 'shared library', 'shared libraries')} loaded: {_names(libraries)}" if libraries \
            else f"modules open: {_names(modules)}"
        rate = f"; {reads:.0f} MB/s read" if reads >= READ_MB_S else ""
        return Activity("importing", f"importing ({loaded}{rate})", busy=True, processes=n,
                        evidence=(loaded, f"{reads:.1f} MB/s read, {cpu * 100:.0f}% of a core", *gpu_evidence))
    if reads >= READ_MB_S:
        return Activity("busy", f"busy: reading {reads:.0f} MB/s, no weight file open ({cpu * 100:.0f}% of a core)",
                        busy=True, processes=n, evidence=(f"{reads:.1f} MB/s read with no weight file, module or "
                                                          "kernel cache open", *gpu_evidence))
    if cpu >= BUSY_CPU:
        return Activity("busy", f"busy on CPU ({cpu * 100:.0f}% of a core)", busy=True, processes=n,
                        evidence=(f"{cpu * 100:.0f}% of a core", *gpu_evidence))
    blocked = [p for p in last.procs if p.state == "D"]
    if blocked:  # uninterruptible sleep: a read or write the storage has not answered yet
        return Activity("busy", f"waiting on storage ({_plural(len(blocked), 'process', 'processes')} in "
                                f"uninterruptible I/O: a slow disk or network filesystem?)", busy=True, processes=n,
                        evidence=("state D in " + ", ".join(f"pid {p.pid}" for p in blocked),
                                  f"{reads:.2f} MB/s read", *gpu_evidence))
    idle_gpu = ", GPU idle" if gpu_evidence else ""
    return Activity("stuck", f"idle: no CPU ({cpu * 100:.0f}% of a core), no reads, no compiler{idle_gpu} in "
                             f"{_plural(n, 'process', 'processes')}: waiting on a peer (an NCCL rendezvous?) or stuck",
                    busy=False, processes=n,
                    evidence=(f"{cpu * 100:.0f}% of a core, {reads:.2f} MB/s read, no compiler", *gpu_evidence))


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
        compilers = any(_is_compiler(p) for p in tree[1:])
        gpu = self._gpu_seen(reading, tree)
        gpu_busy = gpu is not None and gpu.util is not None and gpu.util >= GPU_BUSY_PCT
        seen = []
        for info in tree:
            old = self._prev.get(info.pid)
            read = (info.reads or 0) - ((old.reads or 0) if old is not None else (info.reads or 0))
            worked = old is not None and span > 0 and \
                (info.cpu_ticks - old.cpu_ticks) / self.procfs.ticks / span >= BUSY_CPU
            weights, modules, caches = self._files(info, now, read, worked)
            new_libs: tuple[str, ...] = ()
            if (not (weights or caches or compilers or gpu_busy) and (read >= READER_BYTES or worked)) \
                    or info.pid not in self._libs:  # first sight: the baseline of what it maps
                mapped, new_libs, new_caches = self._mapped(info.pid, now)
                weights, caches = weights + mapped, caches + new_caches
            seen.append(Seen(info.pid, printable(info.name), info.state, info.cpu_ticks, info.reads,
                             compiler=info is not tree[0] and _is_compiler(info) and not _is_worker(info),
                             worker=info is not tree[0] and _is_worker(info), weights=weights, modules=modules,
                             caches=caches, new_libraries=new_libs, gpus=self._gpus.get(info.pid, ())))
        self._prev = {i.pid: i for i in tree}
        for gone in set(self._fds_at) - set(self._prev):
            self._fds_at.pop(gone, None)
            self._gpus.pop(gone, None)
            self._libs.pop(gone, None)
        self.looks.append(Look(now, tuple(seen), gpu))
        while self.looks and now - self.looks[0].at > WINDOW_S:
            self.looks.popleft()

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


def looks_like_server(procfs: ProcFS, pid: int) -> bool:
    """A pid a log names is this machine's server only if it exists and runs Python."""
    info = procfs.info(pid)
    return info is not None and any("python" in part for part in info.cmdline[:2])


__all__ = ["Activity", "Device", "GpuReading", "GpuSeen", "GpuSource", "GpuWatch", "Look", "NvidiaSmi", "Nvml",
           "ProcFS", "ProcInfo", "Seen", "TreeWatch", "classify", "file_kind", "gpu_source", "looks_like_server"]

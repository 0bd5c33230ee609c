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
import math
import os
import re
from collections import deque
from collections.abc import Mapping, Sequence
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
MAX_SMAPS_BYTES = 64 << 20  # of /proc/PID/smaps, read at most (only while weight files are mapped)
MAX_CACHE_ENTRIES = 1024  # entries of a kernel cache folder whose times are looked at, per look
SAMPLE_EVERY_S = 1.0  # the loop's ticks look at the tree this often, from the start
SETTLE_LOOKS = 2  # a new kind of activity is news once this many looks in a row show it


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
        links = self.fd_links(pid)
        return None if links is None else [target for _, target in links]

    def fd_links(self, pid: int) -> list[tuple[str, str]] | None:
        """(fd number, target) of each open file descriptor; a file deleted while open is named
        by its path (the kernel's ` (deleted)` dropped: a weight file is still read after it)."""
        folder = f"{self.root}/{pid}/fd"
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        out = []
        for name in names[:MAX_FDS]:
            with contextlib.suppress(OSError):
                out.append((name, os.readlink(f"{folder}/{name}").removesuffix(" (deleted)")))
        return out

    def fd_target(self, pid: int, fd: str) -> str | None:
        try:
            return os.readlink(f"{self._root}/{pid}/fd/{fd}").removesuffix(" (deleted)")
        except OSError:
            return None

    def fd_pos(self, pid: int, fd: str) -> int | None:
        """How far into its file a descriptor has read or written (`pos:` of /proc/PID/fdinfo/FD)."""
        try:
            for line in self._read(pid, f"fdinfo/{fd}").split(b"\n"):
                if line.startswith(b"pos:"):
                    return int(line[4:])
        except (OSError, ValueError):
            return None
        return None

    def mapped_rss(self, pid: int, paths: set[str]) -> dict[str, int] | None:
        """Bytes of each of `paths` the process has paged in through its mappings (the `Rss:` of
        its /proc/PID/smaps entries): a mapped weight file is read as its pages come in."""
        try:
            with open(f"{self._root}/{pid}/smaps", "rb") as f:
                data = f.read(MAX_SMAPS_BYTES)
        except OSError:
            return None
        out: dict[str, int] = {}
        for path in paths:
            needle = b" " + os.fsencode(path)
            at = data.find(needle)
            while at >= 0:
                end = data.find(b"\n", at)
                tail = data[at + len(needle):end]
                if tail in (b"", b" (deleted)"):
                    rss = data.find(b"\nRss:", end)
                    if rss >= 0:
                        value = data[rss + 5:data.find(b"\n", rss + 1)].split()
                        with contextlib.suppress(ValueError, IndexError):
                            out[path] = out.get(path, 0) + int(value[0]) * 1024
                at = data.find(needle, end)
        return out

    def environ(self, pid: int) -> dict[str, str]:
        """The process's environment (empty when unreadable): where its kernel caches live."""
        try:
            data = self._read(pid, "environ")
        except OSError:
            return {}
        out = {}
        for item in data.split(b"\0"):
            key, sep, value = item.partition(b"=")
            if sep:
                out[os.fsdecode(key)] = os.fsdecode(value)
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


def cache_dirs(env: Mapping[str, str]) -> tuple[str, ...]:
    """The kernel-cache folders a server with environment `env` writes as it compiles (Triton,
    Inductor, the CUDA driver's PTX cache, C++ extensions, JIT kernel libraries): each given by
    its variable, else its default place."""
    home = env.get("HOME", "")
    cache = env.get("XDG_CACHE_HOME") or (f"{home}/.cache" if home else "")
    user = env.get("USER") or env.get("LOGNAME") or ""
    tmp = env.get("TMPDIR") or "/tmp"
    found = [
        env.get("TRITON_CACHE_DIR") or (f"{home}/.triton/cache" if home else ""),
        env.get("TORCHINDUCTOR_CACHE_DIR") or (f"{tmp}/torchinductor_{user}" if user else ""),
        env.get("CUDA_CACHE_PATH") or (f"{home}/.nv/ComputeCache" if home else ""),
        env.get("TORCH_EXTENSIONS_DIR") or (f"{cache}/torch_extensions" if cache else ""),
        *([f"{cache}/flashinfer", f"{cache}/deep_gemm", f"{cache}/tvm-ffi", f"{cache}/torch/kernels"] if cache else []),
    ]
    return tuple(dict.fromkeys(d for d in found if d.startswith("/")))


def dir_stamp(folder: str) -> float | None:
    """The newest change in a cache folder: its own time and its entries' (a kernel is a new entry
    in the folder, or a new file in one of its entries); None when there is no such folder."""
    try:
        newest = os.stat(folder).st_mtime
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_CACHE_ENTRIES:
                    break
                with contextlib.suppress(OSError):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    except OSError:
        return None
    return newest


def gpu_minor(path: str) -> int | None:
    m = _GPU_DEVICE.fullmatch(path)
    return int(m.group(1)) if m else None


class TreeWatch:
    """Samples a process tree and says what it is doing (`sample`, then `activity`); the wait
    loop calls `tick` on every pass (a look every SAMPLE_EVERY_S, from the start, whatever the
    log does) and says `news` (a settled change of what the tree does).

    Only what tells the classes apart is read: `stat`, `cmdline` and `io` of every process;
    the fd links of a process seen for the first time, every FULL_SCAN_S while it works, and
    whenever it read READER_BYTES since the last look; the positions (`fdinfo`) of the weight
    files it holds open and the pages it has in (`smaps`) of those it maps, every look while
    it holds them: the bytes read from weights are those, never the process's total; its maps
    on first sight (the baseline of its libraries), then only when it reads or works with no
    weight file or kernel cache open and neither a compiler nor a busy GPU already explains the
    tree; the times of its kernel-cache folders (`cache_dirs`), every look."""

    def __init__(self, pid: int, procfs: ProcFS | None = None, gpu: GpuWatch | None = None,
                 model_dirs: Sequence[str] = (), every: float = SAMPLE_EVERY_S) -> None:
        self.pid = pid
        self.procfs = procfs or ProcFS()
        self.gpu = gpu
        self.model_dirs = tuple(model_dirs)
        self.every = every
        self.phase: str | None = None  # the log's stage, set by the caller
        self.looks: deque[Look] = deque(maxlen=64)
        self.identity = self.procfs.start_ticks(pid)  # a reused pid is another process
        self.current: Activity | None = None  # the verdict after the newest look
        self._looked_at = -math.inf
        self._said: str | None = None
        self._prev: dict[int, ProcInfo] = {}
        self._fds_at: dict[int, float] = {}
        self._gpus: dict[int, tuple[int, ...]] = {}
        self._libs: dict[int, tuple[float, set[str]]] = {}  # pid -> (when, what it mapped then)
        self._weight_fds: dict[int, dict[str, str]] = {}  # pid -> {fd: weight file}
        self._weight_maps: dict[int, set[str]] = {}  # pid -> weight files it maps
        self._pos: dict[tuple[int, str], tuple[str, int]] = {}  # (pid, fd) -> (file, position)
        self._rss: dict[tuple[int, str], int] = {}  # (pid, file) -> bytes paged in
        self._weight_bytes: dict[int, int] = {}  # pid -> bytes read from weight files while watched
        self._cache_dirs: tuple[str, ...] | None = None
        self._cache_stamps: dict[str, float | None] = {}

    @property
    def samples(self) -> deque[Look]:
        return self.looks

    # -- the loop's interface --------------------------------------------------------------------

    def tick(self, now: float, phase: str | None = None, model_dirs: Sequence[str] | None = None,
             force: bool = False) -> bool:
        """One pass of the wait loop: a look when one is due (every `every` seconds, or `force`),
        and the verdict on the looks so far in `current`. True when it looked."""
        self.phase = phase
        if model_dirs is not None:
            self.model_dirs = tuple(model_dirs)
        if not force and now - self._looked_at < self.every:
            return False
        self._looked_at = now
        self.sample(now)
        self.current = self.activity()
        return True

    def news(self) -> Activity | None:
        """The verdict, once, when what the tree does has changed: a new kind that held for
        SETTLE_LOOKS looks in a row (one look for a tree gone, stopped or compiling)."""
        now = self.current
        if now is None or now.kind == self._said:
            return None
        if now.kind not in ("gone", "compiling") and not now.text.startswith("stopped"):
            recent = [classify(list(self.looks)[:len(self.looks) - back], self.phase, self.procfs.ticks)
                      for back in range(1, SETTLE_LOOKS)]
            if any(r is None or r.kind != now.kind for r in recent):
                return None
        self._said = now.kind
        return now

    # -- a look ----------------------------------------------------------------------------------

    def _files(self, info: ProcInfo, now: float, read: int, worked: bool) -> tuple[tuple[str, ...], ...]:
        """(weights, modules, caches) open, scanning fd links only when worth it (first sight, a
        reader, a worker not scanned for FULL_SCAN_S: an idle process opens nothing); also the
        GPUs, and the weight files' descriptors (their positions are read every look)."""
        pid = info.pid
        due = pid not in self._fds_at or (worked and now - self._fds_at[pid] >= FULL_SCAN_S)
        if not (due or read >= READER_BYTES):
            held = self._weight_fds.get(pid, {})
            return tuple(dict.fromkeys(held.values())), (), ()
        links = self.procfs.fd_links(pid)
        self._fds_at[pid] = now
        if links is None:
            return (), (), ()
        kinds: dict[str, list[str]] = {"weights": [], "module": [], "cache": [], "gpu": []}
        weight_fds = {}
        for fd, link in links:
            kind = file_kind(link, self.model_dirs)
            if kind is not None:
                kinds[kind].append(link)
            if kind == "weights":
                weight_fds[fd] = link
        self._weight_fds[pid] = weight_fds
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
        self._weight_maps[pid] = set(weights)
        at, old = self._libs.get(pid, (None, set()))
        self._libs[pid] = (now, libs | caches)
        if at is None or not self.looks or at != self.looks[-1].at:
            return tuple(weights), (), ()  # a baseline
        return tuple(weights), tuple(sorted(libs - old)), tuple(sorted(caches - old))

    def _weights_read(self, pid: int, first_sight: bool, read: int) -> int | None:
        """Bytes the process has read from weight files while watched: the positions of the weight
        files it holds open, and the pages in of those it maps, each counted from its first sight
        (a file found already read that far was read before); a weight file closed since the last
        look takes the process's reads since then (its last pieces: its position is gone with it).
        None when neither can be read."""
        known = False
        grown = 0
        closed = False
        for fd, path in list(self._pos_fds(pid).items()):
            if self.procfs.fd_target(pid, fd) != path:  # closed, or the number reused for another file
                self._weight_fds.get(pid, {}).pop(fd, None)
                closed = closed or self._pos.pop((pid, fd), None) is not None
                continue
            pos = self.procfs.fd_pos(pid, fd)
            if pos is None:
                continue
            known = True
            old = self._pos.get((pid, fd))
            if old is not None and old[0] == path and not first_sight:
                grown += max(0, pos - old[1])
            self._pos[(pid, fd)] = (path, pos)
        maps = self._weight_maps.get(pid)
        if maps:
            rss = self.procfs.mapped_rss(pid, maps)
            if rss is not None:
                known = True
                for path in maps:
                    now = rss.get(path)
                    if now is None:
                        self._rss.pop((pid, path), None)
                        continue
                    old_rss = self._rss.get((pid, path))
                    if old_rss is not None:
                        grown += max(0, now - old_rss)
                    self._rss[(pid, path)] = now
                self._weight_maps[pid] = {p for p in maps if p in rss}
        if closed:
            known, grown = True, max(grown, read)
        if known or pid in self._weight_bytes:
            self._weight_bytes[pid] = self._weight_bytes.get(pid, 0) + grown
        return self._weight_bytes.get(pid)

    def _pos_fds(self, pid: int) -> dict[str, str]:
        """The weight files' descriptors whose positions are followed: those open now, and those
        read at the last look (closed since, they are found gone)."""
        held = dict(self._weight_fds.get(pid, {}))
        for (owner, fd), (path, _) in self._pos.items():
            if owner == pid:
                held.setdefault(fd, path)
        return held

    def _caches_written(self) -> tuple[str, ...]:
        """The kernel-cache folders of the server's environment changed since the previous look."""
        if self._cache_dirs is None:
            self._cache_dirs = cache_dirs(self.procfs.environ(self.pid))
        written = []
        for folder in self._cache_dirs:
            stamp = dir_stamp(folder)
            old = self._cache_stamps.get(folder, stamp)
            if stamp is not None and (old is None or stamp > old) and folder in self._cache_stamps:
                written.append(folder)
            self._cache_stamps[folder] = stamp
        return tuple(written)

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
        # the cache folders' times only while the tree works (what they would show counts only then)
        ticks = sum(i.cpu_ticks - self._prev[i.pid].cpu_ticks for i in tree if i.pid in self._prev)
        working = span > 0 and ticks / self.procfs.ticks / span >= BUSY_CPU
        written = self._caches_written() if tree and (working or self._cache_dirs is None) else ()
        self._prev = {i.pid: i for i in tree}
        for gone in set(self._fds_at) - set(self._prev):
            self._fds_at.pop(gone, None)
            self._gpus.pop(gone, None)
            self._libs.pop(gone, None)
            self._weight_fds.pop(gone, None)
            self._weight_maps.pop(gone, None)
            self._weight_bytes.pop(gone, None)
            self._pos = {k: v for k, v in self._pos.items() if k[0] != gone}
            self._rss = {k: v for k, v in self._rss.items() if k[0] != gone}
        self.looks.append(Look(now, tuple(seen), gpu, written))
        while self.looks and now - self.looks[0].at > WINDOW_S:
            self.looks.popleft()

    def _seen(self, info: ProcInfo, child: bool, now: float, span: float, explained: bool) -> Seen:
        """One process at this look: its files read where worth it (`_files`, `_mapped`)."""
        old = self._prev.get(info.pid)
        first_sight = info.pid not in self._fds_at
        read = (info.reads or 0) - ((old.reads or 0) if old is not None else (info.reads or 0))
        worked = old is not None and span > 0 and \
            (info.cpu_ticks - old.cpu_ticks) / self.procfs.ticks / span >= BUSY_CPU
        weights, modules, caches = self._files(info, now, read, worked)
        new_libs: tuple[str, ...] = ()
        if (not (weights or caches or explained) and (read >= READER_BYTES or worked)) \
                or info.pid not in self._libs:  # first sight: the baseline of what it maps
            mapped, new_libs, new_caches = self._mapped(info.pid, now)
            weights, caches = weights + mapped, caches + new_caches
        elif self._weight_maps.get(info.pid):
            weights = weights + tuple(sorted(self._weight_maps[info.pid]))
        weight_bytes = self._weights_read(info.pid, first_sight, max(0, read))
        return Seen(info.pid, printable(info.name), info.state, info.cpu_ticks, info.reads,
                    compiler=child and _is_compiler(info) and not _is_worker(info),
                    worker=child and _is_worker(info), weights=tuple(dict.fromkeys(weights)), modules=modules,
                    caches=caches, new_libraries=new_libs, gpus=self._gpus.get(info.pid, ()),
                    weight_bytes=weight_bytes)

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

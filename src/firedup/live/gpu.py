"""The GPUs a silent server's process tree uses: NVML through `nvidia-ml-py` where it imports,
else `nvidia-smi`; read off the wait loop's thread (`GpuWatch`), so a wedged driver cannot
stall it. `live.proc.TreeWatch` takes the tree's share of each reading."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


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


__all__ = ["Device", "GpuReading", "GpuSource", "GpuWatch", "NvidiaSmi", "Nvml", "gpu_source"]

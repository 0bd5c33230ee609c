"""A /proc tree on disk and a fake NVML, for the tests of `firedup.live.proc`, `.activity` and
`.gpu` (and `wait`'s): written as the kernel lays it out (stat, cmdline, io, fd links, maps), so
the real `ProcFS` reads it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from firedup.live.gpu import GpuWatch, Nvml
from firedup.live.proc import ProcFS, TreeWatch

BTIME = 1_765_000_000


class FakeProc:
    """A /proc tree in a folder: stat (with the start time), cmdline, io, fd links with their
    fdinfo (positions), maps, smaps (the pages in of each mapped file), environ and
    task/<tid>/children per process, and /proc/stat's btime."""

    def __init__(self, root: Path, children_lists: bool = True) -> None:
        self.root = root
        self.children_lists = children_lists
        self.procs: dict[int, dict[str, Any]] = {}
        (root / "stat").write_text(f"cpu  1 2 3 4\nbtime {BTIME}\nprocesses 9\n")

    def add(self, pid: int, ppid: int, comm: str, cmdline: list[str] | None = None, state: str = "S",
            cpu: int = 0, read_bytes: int = 0, start: int = 1000, fds: list[str] | None = None,
            maps: list[str] | None = None, rchar: int | None = None, environ: dict[str, str] | None = None) -> None:
        self.procs[pid] = {"ppid": ppid, "comm": comm, "cmdline": cmdline or [comm], "state": state, "cpu": cpu,
                           "read_bytes": read_bytes, "rchar": rchar, "start": start, "fds": fds or [],
                           "maps": maps or [], "pos": {}, "rss": {}, "environ": environ or {}}
        self.write()

    def set(self, pid: int, **values: object) -> None:
        self.procs[pid].update(values)
        self.write()

    def grow(self, pid: int, read_mb: float = 0.0, cpu_ticks: int = 0, at: str | None = None) -> None:
        """The process reads `read_mb` (from the file `at`: its fd's position, or its mapped pages
        in, grow with it) and uses `cpu_ticks`."""
        p = self.procs[pid]
        p["read_bytes"] += int(read_mb * 1e6)
        p["cpu"] += cpu_ticks
        if at is not None:
            where = "rss" if at in p["maps"] and at not in p["fds"] else "pos"
            p[where][at] = p[where].get(at, 0) + int(read_mb * 1e6)
        self.write()

    def remove(self, pid: int) -> None:
        del self.procs[pid]
        self.write()

    def write(self) -> None:
        for old in self.root.iterdir():
            if old.name.isdigit() and int(old.name) not in self.procs:
                shutil.rmtree(old)
        for pid, p in self.procs.items():
            base = self.root / str(pid)
            (base / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
            # the comm may hold spaces and parentheses: the kernel's own layout, fields after the last ')'
            fields = [p["state"], p["ppid"], pid, pid, 0, -1, 4194304, 0, 0, 0, 0, p["cpu"], 0, 0, 0, 20, 0, 1, 0,
                      p["start"], 12345678, 300]
            (base / "stat").write_text(f"{pid} ({p['comm']}) " + " ".join(str(f) for f in fields) + "\n")
            (base / "cmdline").write_bytes(b"\0".join(str(a).encode() for a in p["cmdline"]) + b"\0")
            rchar = p["rchar"] if p["rchar"] is not None else p["read_bytes"]
            (base / "io").write_text(f"rchar: {rchar}\nwchar: 0\nsyscr: 1\nsyscw: 1\n"
                                     f"read_bytes: {p['read_bytes']}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
            fd = base / "fd"
            if fd.exists():
                shutil.rmtree(fd)
            fd.mkdir()
            info = base / "fdinfo"
            if info.exists():
                shutil.rmtree(info)
            info.mkdir()
            for n, target in enumerate(["/dev/null", "pipe:[1]", "socket:[2]", *p["fds"]]):
                os.symlink(target, fd / str(n))
                (info / str(n)).write_text(f"pos:\t{p['pos'].get(target, 0)}\nflags:\t0100000\nmnt_id:\t25\n")
            maps = ["/usr/bin/python3.12", *p["maps"]]
            lines = [f"7f{i:010x}000-7f{i:010x}fff r-xp 00000000 08:02 {1000 + i} {path}\n" for i, path in enumerate(maps)]
            (base / "maps").write_text("".join(lines) + "7ffd0000-7ffd1000 rw-p 0 0 0 [stack]\n")
            (base / "smaps").write_text("".join(
                f"{line}Size:            4096 kB\nRss:   {p['rss'].get(path, 0) // 1024} kB\nPss:  0 kB\n"
                for line, path in zip(lines, maps, strict=True)))
            (base / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in p["environ"].items()))
            children = base / "task" / str(pid) / "children"
            if self.children_lists:
                kids = [str(k) for k, q in self.procs.items() if q["ppid"] == pid]
                children.write_text(" ".join(kids) + (" " if kids else ""))
            elif children.exists():
                children.unlink()


class FakeNvml:
    """The few pynvml functions `Nvml` calls, over devices a test changes as it goes."""

    class NVMLError(Exception):
        pass

    def __init__(self, devices: int = 1) -> None:
        self.devices = [{"util": 0.0, "used": 500 * 2**20, "procs": {}, "minor": i} for i in range(devices)]
        self.calls = 0

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return int(self.devices[h]["minor"])

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        self.calls += 1
        return [SimpleNamespace(pid=pid, usedGpuMemory=mb * 2**20) for pid, mb in self.devices[h]["procs"].items()]

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        if self.devices[h]["util"] is None:
            raise self.NVMLError("Not Supported")
        return SimpleNamespace(gpu=self.devices[h]["util"], memory=0)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        used = self.devices[h]["used"] + sum(mb * 2**20 for mb in self.devices[h]["procs"].values())
        return SimpleNamespace(used=used, total=80 * 2**30, free=80 * 2**30 - used)


def nvml_watch(nvml: FakeNvml) -> GpuWatch:
    return GpuWatch(lambda: (Nvml(nvml), "NVML"), background=False)


def server_tree(root: Path, children_lists: bool = True) -> FakeProc:
    """A server (100) with its scheduler child (101), and a compiler outside its tree (200)."""
    proc = FakeProc(root, children_lists=children_lists)
    proc.add(1, 0, "init")
    proc.add(100, 1, "python3", ["/usr/bin/python3", "-m", "sglang.launch_server"])
    proc.add(101, 100, "sglang::schedul", ["sglang::scheduler_TP0"])
    proc.add(200, 1, "unrelated", ["/usr/bin/nvcc"])  # a compiler outside the tree
    return proc


def tree_watch(fake: FakeProc, gpu: GpuWatch | None = None, model_dirs: tuple[str, ...] = ()) -> TreeWatch:
    return TreeWatch(100, ProcFS(fake.root), gpu=gpu, model_dirs=model_dirs)


def looks(watch: TreeWatch, fake: FakeProc, steps: int, every: float = 2.0, start: float = 0.0,
          **grow: Any) -> None:
    """`steps` looks `every` seconds apart, the processes growing by `grow` (pid -> (MB, ticks) or
    (MB, ticks, file read)) between them."""
    for i in range(steps):
        if i:
            for pid, how in grow.get("by", {}).items():
                fake.grow(pid, *how)
        watch.sample(start + i * every)

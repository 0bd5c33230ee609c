"""`firedup.live.proc`: what a silent server's process tree is doing, on a fake /proc tree
(written to disk as the kernel lays it out) and once on the real one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from firedup.live.proc import ProcFS, TreeWatch, looks_like_server


class FakeProc:
    """A /proc tree in a folder: stat, cmdline, io and task/<tid>/children per process."""

    def __init__(self, root: Path, children_lists: bool = True) -> None:
        self.root = root
        self.children_lists = children_lists
        self.procs: dict[int, dict[str, object]] = {}

    def add(self, pid: int, ppid: int, comm: str, cmdline: list[str] | None = None, state: str = "S",
            cpu: int = 0, read_bytes: int = 0) -> None:
        self.procs[pid] = {"ppid": ppid, "comm": comm, "cmdline": cmdline or [comm], "state": state, "cpu": cpu,
                           "read_bytes": read_bytes}
        self.write()

    def set(self, pid: int, **values: object) -> None:
        self.procs[pid].update(values)
        self.write()

    def remove(self, pid: int) -> None:
        del self.procs[pid]
        self.write()

    def write(self) -> None:
        for old in self.root.iterdir():
            if old.name.isdigit() and int(old.name) not in self.procs:
                for f in sorted(old.rglob("*"), reverse=True):
                    f.unlink() if f.is_file() else f.rmdir()
                old.rmdir()
        for pid, p in self.procs.items():
            base = self.root / str(pid)
            (base / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
            # the comm may hold spaces and parentheses: the kernel's own layout, fields after the last ')'
            fields = [p["state"], p["ppid"], pid, pid, 0, -1, 4194304, 0, 0, 0, 0, p["cpu"], 0, 0, 0, 20, 0, 1, 0]
            (base / "stat").write_text(f"{pid} ({p['comm']}) " + " ".join(str(f) for f in fields) + "\n")
            (base / "cmdline").write_bytes(b"\0".join(str(a).encode() for a in p["cmdline"]) + b"\0")  # type: ignore[attr-defined]
            (base / "io").write_text(f"rchar: {p['read_bytes']}\nwchar: 0\nsyscr: 1\nsyscw: 1\n"
                                     f"read_bytes: {p['read_bytes']}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
            children = base / "task" / str(pid) / "children"
            if self.children_lists:
                kids = [str(k) for k, q in self.procs.items() if q["ppid"] == pid]
                children.write_text(" ".join(kids) + (" " if kids else ""))
            elif children.exists():
                children.unlink()


@pytest.fixture(params=[True, False], ids=["children-lists", "scan"])
def fake(tmp_path: Path, request: pytest.FixtureRequest) -> FakeProc:
    proc = FakeProc(tmp_path, children_lists=request.param)
    proc.add(1, 0, "init")
    proc.add(100, 1, "python3", ["/usr/bin/python3", "-m", "sglang.launch_server"])
    proc.add(101, 100, "sglang::schedul", ["sglang::scheduler_TP0"])
    proc.add(200, 1, "unrelated", ["/usr/bin/nvcc"])  # a compiler outside the tree
    return proc


def _watch(fake: FakeProc) -> TreeWatch:
    return TreeWatch(100, ProcFS(fake.root), gpu=None)


def test_the_tree_is_the_process_and_its_descendants_only(fake: FakeProc) -> None:
    fake.add(102, 101, "ninja", ["/usr/bin/ninja", "-v"])
    assert sorted(p.pid for p in ProcFS(fake.root).tree(100)) == [100, 101, 102]
    assert ProcFS(fake.root).tree(999) == []


def test_a_compiler_child_means_compiling(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    assert watch.activity() is None or watch.activity().kind != "compiling"  # type: ignore[union-attr]
    fake.add(103, 101, "cicc", ["/usr/local/cuda/nvvm/bin/cicc", "x.cu"])
    fake.add(104, 103, "ptxas", ["/usr/local/cuda/bin/ptxas", "-arch=sm_90"])
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling" and activity.busy
    assert activity.text == "compiling kernels (cicc, ptxas)"  # the nvcc outside the tree is not named


def test_a_triton_compile_worker_means_compiling(fake: FakeProc) -> None:
    fake.add(105, 100, "python3", ["/usr/bin/python3", "-m", "torch._inductor.compile_worker", "--workers=8"])
    watch = _watch(fake)
    watch.sample(0.0)
    assert watch.activity().kind == "compiling"  # type: ignore[union-attr]


def test_growing_reads_mean_reading_weights_with_the_rate(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    fake.set(101, read_bytes=400_000_000, cpu=50)
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading"
    assert activity.text == "reading weights (200 MB/s)"


def test_growing_gpu_memory_means_allocating(fake: FakeProc) -> None:
    used = iter([{101: 1000.0, 999: 5000.0}, {101: 9192.0, 999: 5000.0}])
    watch = TreeWatch(100, ProcFS(fake.root), gpu=lambda: next(used), gpu_every=1.0)
    watch.sample(0.0)
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "allocating"
    assert activity.text == "allocating GPU memory (+8.0 GB)"


def test_cpu_alone_means_busy(fake: FakeProc) -> None:
    ticks = ProcFS(fake.root).ticks
    watch = _watch(fake)
    watch.sample(0.0)
    fake.set(101, cpu=ticks)  # one CPU second in two seconds
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "busy" and activity.text == "busy on CPU (50% of a core)"


def test_nothing_moving_means_stuck_and_too_short_a_span_means_no_verdict(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    watch.sample(1.0)
    assert watch.activity() is None  # 1 s is too short to call anything idle
    watch.sample(3.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck" and not activity.busy
    assert "waiting on a peer" in activity.text and "2 processes" in activity.text


def test_a_stopped_tree_is_stuck_even_with_a_compiler_in_it(fake: FakeProc) -> None:
    fake.add(106, 101, "ptxas")
    for pid in (100, 101, 106):
        fake.set(pid, state="T")
    watch = _watch(fake)
    watch.sample(0.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck" and activity.text.startswith("stopped: 3 processes suspended")


def test_a_vanished_root_is_gone(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    fake.remove(101)
    fake.remove(100)
    watch.sample(2.0)
    assert watch.activity().kind == "gone"  # type: ignore[union-attr]


def test_unreadable_or_odd_files_are_skipped(fake: FakeProc) -> None:
    (fake.root / "101" / "io").unlink()  # another user's process: io is not readable
    (fake.root / "abc").mkdir()
    procfs = ProcFS(fake.root)
    info = procfs.info(101)
    assert info is not None and info.read_bytes is None
    (fake.root / "100" / "stat").write_text("garbage")
    assert procfs.info(100) is None


def test_a_pid_the_log_names_is_used_only_for_a_local_python_process(fake: FakeProc) -> None:
    procfs = ProcFS(fake.root)
    assert looks_like_server(procfs, 100)
    assert not looks_like_server(procfs, 1) and not looks_like_server(procfs, 4242)


def test_the_real_proc_sees_a_child_compiler_and_a_stopped_tree(tmp_path: Path) -> None:
    ptxas = tmp_path / "ptxas"
    ptxas.symlink_to(Path(sys.executable))
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, time; subprocess.Popen([{str(ptxas)!r}, "
                               "'-c', 'import time; time.sleep(30)']); time.sleep(30)"])
    try:
        watch = TreeWatch(parent.pid, gpu=None)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            watch.sample(time.monotonic())
            activity = watch.activity()
            if activity is not None and activity.kind == "compiling":
                break
            time.sleep(0.1)
        assert activity is not None and activity.text == "compiling kernels (ptxas)"
        for p in ProcFS().tree(parent.pid):
            os.kill(p.pid, 19)  # SIGSTOP
        time.sleep(0.2)
        watch.sample(time.monotonic())
        assert watch.activity().kind == "stuck"  # type: ignore[union-attr]
    finally:
        for p in ProcFS().tree(parent.pid):
            os.kill(p.pid, 9)
        parent.wait()

"""`firedup.live.proc`: what a silent server's process tree is doing, on a fake /proc tree
(written to disk as the kernel lays it out: stat, cmdline, io, fd links, maps) with a fake
NVML, and on the real /proc.

The situations are those `wait --pid` met beside six real SGLang start-ups
(`../shared/realgpu/*.wait.txt`, README's second set): Python and CUDA imports before the
first log line, a random-weight load, graph capture with the kernel JIT cold, the GPU busy
capturing graphs, a hang in distributed init, the exit; and a real weight read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from firedup.live.activity import Look, Seen, classify
from firedup.live.gpu import GpuWatch, NvidiaSmi, Nvml
from firedup.live.proc import ProcFS, TreeWatch, file_kind, looks_like_server

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


@pytest.fixture(params=[True, False], ids=["children-lists", "scan"])
def fake(tmp_path: Path, request: pytest.FixtureRequest) -> FakeProc:
    proc = FakeProc(tmp_path, children_lists=request.param)
    proc.add(1, 0, "init")
    proc.add(100, 1, "python3", ["/usr/bin/python3", "-m", "sglang.launch_server"])
    proc.add(101, 100, "sglang::schedul", ["sglang::scheduler_TP0"])
    proc.add(200, 1, "unrelated", ["/usr/bin/nvcc"])  # a compiler outside the tree
    return proc


def _watch(fake: FakeProc, gpu: GpuWatch | None = None, model_dirs: tuple[str, ...] = ()) -> TreeWatch:
    return TreeWatch(100, ProcFS(fake.root), gpu=gpu, model_dirs=model_dirs)


def _run(watch: TreeWatch, fake: FakeProc, steps: int, every: float = 2.0, start: float = 0.0,
         **grow: Any) -> None:
    """`steps` looks `every` seconds apart, the processes growing by `grow` (pid -> (MB, ticks) or
    (MB, ticks, file read)) between them."""
    for i in range(steps):
        if i:
            for pid, how in grow.get("by", {}).items():
                fake.grow(pid, *how)
        watch.sample(start + i * every)


# --- the tree ---------------------------------------------------------------------------------


def test_the_tree_is_the_process_and_its_descendants_only(fake: FakeProc) -> None:
    fake.add(102, 101, "ninja", ["/usr/bin/ninja", "-v"])
    assert sorted(p.pid for p in ProcFS(fake.root).tree(100)) == [100, 101, 102]
    assert ProcFS(fake.root).tree(999) == []


def test_the_start_time_is_boot_time_plus_the_ticks_of_stat_field_22(fake: FakeProc) -> None:
    procfs = ProcFS(fake.root)
    fake.set(100, start=123_456)
    assert procfs.start_ticks(100) == 123_456
    assert procfs.start_time(100) == pytest.approx(BTIME + 123_456 / procfs.ticks)
    assert procfs.start_time(4242) is None


def test_the_real_proc_dates_this_process_start(tmp_path: Path) -> None:
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10)"])
    try:
        started = ProcFS().start_time(child.pid)
        assert started is not None and before - 1.0 <= started <= time.time() + 1.0  # ticks: 10 ms
    finally:
        child.kill()
        child.wait()


def test_what_a_file_is_by_its_path() -> None:
    assert file_kind("/models/qwen/model-00001-of-00004.safetensors") == "weights"
    assert file_kind("/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/blobs/5f3e9a0b") == "weights"
    assert file_kind("/data/llama/shard-7", model_dirs=("/data/llama",)) == "weights"
    assert file_kind("/data/llama/config.json", model_dirs=("/data/llama",)) is None
    assert file_kind("/data/llama/tokenizer.json", model_dirs=("/data/llama",)) is None
    assert file_kind("/usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so") == "module"
    assert file_kind("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0") == "module"
    assert file_kind("/usr/lib/python3/site-packages/sglang/srt/server_args.py") == "module"
    assert file_kind("/usr/lib/python3/site-packages/torch/foo.bin") is None  # installed, not a model's
    assert file_kind("/root/.triton/cache/ab12/kernel.cubin") == "cache"
    assert file_kind("/root/.cache/flashinfer/jit/batch_prefill.so") == "cache"  # a JIT build, not an import
    # a JIT library's own log in its cache folder is no build: FlashInfer opens it when imported
    # (a real H100 start, 2026-12-06, was called "compiling kernels" 13 s after launch for it)
    assert file_kind("/root/.cache/flashinfer/0.6.14/90a/flashinfer_jit.log") is None
    assert file_kind("/root/.triton/cache/AB12/__grp__kernel.json") is None
    assert file_kind("/tmp/torchinductor_root/ab/cabcd.py") == "cache"
    assert file_kind("/dev/nvidia3") == "gpu" and file_kind("/dev/nvidiactl") is None
    assert file_kind("socket:[12345]") is None and file_kind("/var/log/server.log") is None


# --- the situations of the real start-ups ---------------------------------------------------------


def test_imports_before_the_first_line_are_importing_not_reading_weights(fake: FakeProc) -> None:
    """realgpu: `reading weights (43 MB/s)` 12 s after launch, while Python imported torch and
    CUDA's libraries (random weights: no weight file was ever read)."""
    libs = ["/opt/site/torch/lib/libtorch_cuda.so", "/opt/site/nvidia/cudnn/lib/libcudnn.so.9",
            "/opt/site/torch/lib/libc10.so", "/opt/site/triton/_C/libtriton.so"]
    fake.set(100, maps=libs[:1], cpu=0)
    watch = _watch(fake)
    for i in range(4):
        if i:
            fake.set(100, maps=libs[:i + 1])
            fake.grow(100, read_mb=43, cpu_ticks=75)  # 43 MB/s: the libraries paged in
        watch.sample(i * 1.0)  # a look a second (`TreeWatch.tick`)
    activity = watch.activity()
    assert activity is not None and activity.kind == "importing", activity
    assert activity.text.startswith("importing (3 shared libraries loaded: libcudnn.so.9, libc10.so, libtriton.so")
    assert "43 MB/s read" in activity.text and "weights" not in activity.text
    assert any("3 shared libraries loaded" in e for e in activity.evidence)


def test_a_random_weight_load_is_not_reading_weights(fake: FakeProc) -> None:
    """realgpu `--load-format dummy`: the scheduler process starts and imports (71 MB/s of reads),
    with the model folder's config and tokenizer open: no weight file, so no "reading weights"."""
    model = "/tmp/model"
    fake.set(101, fds=[f"{model}/config.json", f"{model}/tokenizer.json"],
             maps=["/opt/site/torch/lib/libtorch_cuda.so"])
    watch = _watch(fake, model_dirs=(model,))
    watch.sample(0.0)
    fake.set(101, maps=["/opt/site/torch/lib/libtorch_cuda.so", "/opt/site/sgl_kernel/common_ops.abi3.so"])
    fake.grow(101, read_mb=142, cpu_ticks=180)
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "importing" and "common_ops.abi3.so" in activity.text
    # reads with no weight file open and nothing imported are not weights either
    fake.grow(101, read_mb=20, cpu_ticks=10)
    watch.sample(4.0)
    fake.grow(101, read_mb=20, cpu_ticks=10)
    watch.sample(14.5)  # the import is out of the window now
    fake.grow(101, read_mb=20, cpu_ticks=10)
    watch.sample(16.5)
    activity = watch.activity()
    assert activity is not None and activity.kind == "busy" and activity.text.startswith(
        "busy: reading 10 MB/s, no weight file open"), activity


def test_a_real_weight_read_names_the_files_and_the_rate(fake: FakeProc) -> None:
    shard = "/models/qwen/model-00001-of-00004.safetensors"
    fake.set(101, fds=[shard])
    watch = _watch(fake)
    _run(watch, fake, 2, by={101: (400, 50, shard)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading" and activity.busy
    assert activity.text == "reading weights (200 MB/s: model-00001-of-00004.safetensors)"
    assert any(shard in e for e in activity.evidence)


def test_mapped_weights_with_no_fd_open_are_read_too(fake: FakeProc) -> None:
    """safetensors maps its file: the fd may be closed while the pages come in (read_bytes grows)."""
    shard = "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/blobs/9f0e1d2c3b4a"
    fake.set(101, maps=[shard])
    watch = _watch(fake)
    _run(watch, fake, 3, by={101: (300, 20, shard)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading" and "150 MB/s" in activity.text
    assert "9f0e1d2c3b4a" in activity.text


def test_a_weight_file_held_open_with_no_reads_is_not_reading(fake: FakeProc) -> None:
    fake.set(101, fds=["/models/m/model.gguf"])
    watch = _watch(fake)
    _run(watch, fake, 3)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck"


def test_the_kernel_jit_is_compiling_with_the_compilers_named(fake: FakeProc) -> None:
    """realgpu, cold EAGLE-3: `compiling kernels (cc1plus, cicc, ninja, nvcc)` in graph capture."""
    watch = _watch(fake)
    watch.sample(0.0)
    assert watch.activity() is None or watch.activity().kind != "compiling"  # type: ignore[union-attr]
    fake.add(102, 101, "ninja", ["/usr/bin/ninja", "-v"])
    fake.add(103, 102, "nvcc", ["/usr/local/cuda/bin/nvcc", "x.cu"])
    fake.add(104, 103, "cicc", ["/usr/local/cuda/nvvm/bin/cicc", "x.cu"], cpu=150)  # nvcc and ninja wait on it
    fake.add(105, 102, "cc1plus", ["/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "y.cpp"], state="R")
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling" and activity.busy
    assert activity.text == "compiling kernels (cc1plus, cicc, ninja, nvcc)"  # the nvcc outside the tree is not named
    assert activity.compilers == ("cc1plus", "cicc", "ninja", "nvcc")


def test_a_sleeping_process_named_like_a_compiler_compiles_nothing(fake: FakeProc) -> None:
    """Issue 41: a sleeping copy of `nvcc` in the tree was "compiling kernels" (a timeout's exit
    124, "busy", instead of 4, "stuck"): a compiler counts while it, or its chain, uses CPU."""
    fake.add(102, 101, "nvcc", ["/usr/local/cuda/bin/nvcc", "x.cu"])
    watch = _watch(fake)
    _run(watch, fake, 3, every=1.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck", activity
    assert any("asleep: nvcc" in e for e in activity.evidence)
    fake.add(103, 102, "ptxas", ["/usr/local/cuda/bin/ptxas", "x.ptx"])
    fake.grow(103, cpu_ticks=80)
    watch.sample(3.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling" and activity.compilers == ("nvcc", "ptxas")


def test_a_compile_worker_counts_only_while_it_uses_cpu(fake: FakeProc) -> None:
    """Inductor keeps its pool of compile workers after compiling: an idle pool compiles nothing."""
    fake.add(105, 100, "python3", ["/usr/bin/python3", "-m", "torch._inductor.compile_worker", "--workers=8"])
    watch = _watch(fake)
    _run(watch, fake, 2)
    assert watch.activity().kind == "stuck"  # type: ignore[union-attr]
    fake.grow(105, cpu_ticks=ProcFS(fake.root).ticks)
    watch.sample(4.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling" and activity.compilers == ()
    assert "compile workers using CPU: pid 105" in activity.evidence


def test_kernel_cache_files_opened_while_working_are_compiling(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    fake.set(101, fds=["/root/.triton/cache/AB12/_fwd_kernel.ptx"])
    fake.grow(101, read_mb=1, cpu_ticks=100)
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling"
    assert activity.text == "compiling kernels (kernel cache: _fwd_kernel.ptx)" and activity.compilers == ()


def test_graph_capture_on_a_busy_gpu_is_gpu_busy_not_reading_weights(fake: FakeProc) -> None:
    """realgpu, cold EAGLE-3 at 1 min 05 s of graph capture: `reading weights (8 MB/s)`; the GPU
    was capturing graphs. NVML names the tree's pid; the reads (8 MB/s, no weight file) do not
    make weights."""
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 30_000.0}
    nvml.devices[0]["util"] = 87.0
    fake.set(101, fds=["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"])
    watch = _watch(fake, nvml_watch(nvml))
    watch.phase = "cuda_graph"
    _run(watch, fake, 3, by={101: (16, 100)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "gpu" and activity.busy
    assert activity.text == "GPU busy (capturing graphs: 87% on GPU 0, 29.3 GB)"
    watch.phase = "warmup"
    assert watch.activity().text.startswith("GPU busy (warming up: ")  # type: ignore[union-attr]


def test_a_container_sees_its_gpu_by_the_device_it_has_open(fake: FakeProc) -> None:
    """In a container NVML reports the host's pids: the tree's GPU is the device node it holds."""
    nvml = FakeNvml(devices=4)
    nvml.devices[3]["procs"] = {987654: 20_000.0}  # the host's pid of our process
    nvml.devices[3]["util"] = 95.0
    nvml.devices[1]["util"] = 100.0  # another tenant's GPU
    fake.set(101, fds=["/dev/nvidia3"])
    watch = _watch(fake, nvml_watch(nvml))
    watch.phase = "cuda_graph"
    _run(watch, fake, 2)
    activity = watch.activity()
    assert activity is not None and activity.kind == "gpu" and "95% on GPU 3" in activity.text
    assert any("the devices' totals" in e for e in activity.evidence)


def test_gpu_memory_rising_is_allocating(fake: FakeProc) -> None:
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 1000.0}
    watch = _watch(fake, nvml_watch(nvml))
    watch.sample(0.0)
    nvml.devices[0]["procs"] = {101: 9192.0}
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "allocating"
    assert activity.text == "allocating (GPU memory rising: +8.0 GB in 2 s on GPU 0, 9.0 GB)"


def test_the_idle_hang_is_idle_with_the_gpu_idle(fake: FakeProc) -> None:
    """realgpu hang2: four processes waiting in distributed init for a node that never came."""
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 600.0}
    fake.add(102, 100, "python3", ["python3", "-c", "from multiprocessing.resource_tracker import main"])
    fake.add(103, 100, "sglang::detoken", ["sglang::detokenizer"])
    fake.set(101, fds=["/dev/nvidia0"])
    watch = _watch(fake, nvml_watch(nvml))
    watch.sample(0.0)
    watch.sample(1.0)
    assert watch.activity() is None  # 1 s is too short to call anything idle
    fake.grow(101, cpu_ticks=3)
    watch.sample(3.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck" and not activity.busy
    assert activity.text.startswith("idle: no CPU (1% of a core), no reads, no compiler, GPU idle in 4 processes: "
                                    "waiting on a peer")
    assert any(e.startswith("GPU 0: 0% busy, 0.6 GB") for e in activity.evidence)


def test_a_process_blocked_on_storage_is_not_idle(fake: FakeProc) -> None:
    fake.set(101, state="D")
    watch = _watch(fake)
    _run(watch, fake, 2)
    activity = watch.activity()
    assert activity is not None and activity.busy and activity.text.startswith(
        "waiting on storage (1 process in uninterruptible I/O")


def test_the_exit_is_gone(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    fake.remove(101)
    fake.remove(100)
    watch.sample(2.0)
    assert watch.activity().kind == "gone"  # type: ignore[union-attr]


def test_a_pid_reused_by_another_process_is_gone(fake: FakeProc) -> None:
    watch = _watch(fake)
    watch.sample(0.0)
    fake.set(100, start=999_999)  # the server died, the kernel gave its pid to a new process
    watch.sample(2.0)
    assert watch.activity().kind == "gone"  # type: ignore[union-attr]


def test_cpu_alone_means_busy(fake: FakeProc) -> None:
    ticks = ProcFS(fake.root).ticks
    watch = _watch(fake)
    watch.sample(0.0)
    fake.grow(101, cpu_ticks=ticks)  # one CPU second in two seconds
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "busy" and activity.text == "busy on CPU (50% of a core)"


def test_a_stopped_tree_is_stuck_even_with_a_compiler_in_it(fake: FakeProc) -> None:
    fake.add(106, 101, "ptxas")
    for pid in (100, 101, 106):
        fake.set(pid, state="T")
    watch = _watch(fake)
    watch.sample(0.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck" and activity.text.startswith("stopped: 3 processes suspended")


def test_file_and_process_names_are_shown_escaped(fake: FakeProc) -> None:
    """A file name is hostile text: a newline in it must not forge a line of a note."""
    evil = "/models/m/evil\nREADY in 1 s\x1b[2J.safetensors"
    fake.set(101, fds=[evil])
    fake.add(102, 101, "nvcc", ["/usr/bin/nvcc\x1b]0;pwned\x07"], state="R")
    watch = _watch(fake)
    _run(watch, fake, 2, by={101: (100, 10, evil)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling"
    assert activity.text == "compiling kernels (nvcc\\x1b]0;pwned\\x07)" and "\x1b" not in "".join(activity.evidence)
    fake.remove(102)
    fake.grow(101, 100, 10, evil)
    watch.sample(4.0)
    reading = watch.activity()
    assert reading is not None and reading.kind == "reading"
    assert "evil\\nREADY in 1 s\\x1b[2J.safetensors" in reading.text and "\n" not in reading.text + "".join(reading.evidence)


def test_the_classes_come_in_their_order_of_evidence() -> None:
    """classify is a function of the looks alone: a compiler outranks weights, weights a busy GPU."""
    def look(at: float, reads: int, **seen: Any) -> Look:
        return Look(at, (Seen(1, "python3", "S", int(at * 100), reads, **seen),))

    weights = {"weights": ("/m/a.safetensors",)}
    assert classify([look(0, 0, **weights), look(2, 10**8, **weights)]).kind == "reading"  # type: ignore[union-attr]
    both = [Look(0, (Seen(1, "python3", "S", 0, 0, weights=("/m/a.bin",)), Seen(2, "nvcc", "R", 0, 0, compiler=True))),
            Look(2, (Seen(1, "python3", "S", 0, 10**8, weights=("/m/a.bin",)), Seen(2, "nvcc", "R", 9, 0, compiler=True)))]
    assert classify(both).kind == "compiling"  # type: ignore[union-attr]
    assert classify([look(0, 0)]) is None and classify([]) is None


# --- the GPU query: optional, never a hang -------------------------------------------------------


def test_no_gpu_query_is_skipped_cleanly(fake: FakeProc) -> None:
    gpu = GpuWatch(lambda: (None, "no NVML (nvidia-ml-py) and no nvidia-smi"), background=False)
    watch = _watch(fake, gpu)
    _run(watch, fake, 2)
    assert watch.activity().kind == "stuck" and gpu.off == "no NVML (nvidia-ml-py) and no nvidia-smi"  # type: ignore[union-attr]


def test_a_gpu_query_that_never_returns_does_not_stall_the_look(fake: FakeProc) -> None:
    class Wedged:
        name, every = "NVML", 0.1

        def read(self) -> None:
            time.sleep(30)

    gpu = GpuWatch(lambda: (Wedged(), "NVML"), timeout=0.3)
    watch = _watch(fake, gpu)
    began = time.monotonic()
    for i in range(5):
        watch.sample(i * 0.2)
        time.sleep(0.2)
    assert time.monotonic() - began < 3
    assert gpu.off == "NVML did not answer in 0.3 s"


def _fake_smi(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return str(exe)


def test_nvidia_smi_where_nvml_does_not_import(tmp_path: Path, fake: FakeProc) -> None:
    smi = _fake_smi(tmp_path, 'case "$1" in\n'
                              '  --query-gpu=*) echo "0, GPU-aaaa, 91, 40000" ;;\n'
                              '  --query-compute-apps=*) echo "101, 39000, GPU-aaaa" ;;\nesac')
    reading = NvidiaSmi(smi).read()
    assert reading.used_mb == {101: 39000.0} and reading.by_pid == {101: (0,)}
    assert reading.devices[0].util == 91.0
    watch = _watch(fake, GpuWatch(lambda: (NvidiaSmi(smi), "nvidia-smi"), background=False))
    watch.phase = "cuda_graph"
    _run(watch, fake, 2)
    assert watch.activity().text == "GPU busy (capturing graphs: 91% on GPU 0, 38.1 GB)"  # type: ignore[union-attr]
    (tmp_path / "slow").mkdir()
    slow = _fake_smi(tmp_path / "slow", "sleep 30")
    gpu = GpuWatch(lambda: (NvidiaSmi(slow, timeout=0.5), "nvidia-smi"), background=False)
    began = time.monotonic()
    assert gpu.request(0.0) is None and time.monotonic() - began < 5
    assert gpu.off == "nvidia-smi did not answer in 0.5 s"


# --- odd and real /proc --------------------------------------------------------------------------


def test_unreadable_or_odd_files_are_skipped(fake: FakeProc) -> None:
    (fake.root / "101" / "io").unlink()  # another user's process: io is not readable
    shutil.rmtree(fake.root / "101" / "fd")
    (fake.root / "abc").mkdir()
    procfs = ProcFS(fake.root)
    info = procfs.info(101)
    assert info is not None and info.read_bytes is None and procfs.fds(101) is None
    watch = _watch(fake)
    _run(watch, fake, 2)
    assert watch.activity() is not None
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
        watch = TreeWatch(parent.pid)
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


def test_the_real_proc_sees_a_weight_file_read(tmp_path: Path) -> None:
    """A real process reading a `.safetensors` file: its fd link and its reads."""
    shard = tmp_path / "model-00001-of-00001.safetensors"
    shard.write_bytes(os.urandom(1 << 20) * 40)
    reader = subprocess.Popen([sys.executable, "-c", f"import time\nf = open({str(shard)!r}, 'rb')\n"
                               "while f.read(1 << 20):\n    time.sleep(0.02)\ntime.sleep(30)"])
    try:
        watch = TreeWatch(reader.pid)
        for _ in range(15):
            watch.sample(time.monotonic())
            activity = watch.activity()
            if activity is not None and activity.kind == "reading":
                break
            time.sleep(0.25)
        assert activity is not None and activity.kind == "reading", activity
        assert "model-00001-of-00001.safetensors" in activity.text
    finally:
        reader.kill()
        reader.wait()


# --- issue 41: bytes from weight files, compilers that work, caches written, GPU together ---------


def test_a_process_reading_dev_zero_with_a_weight_file_open_is_not_reading_weights(fake: FakeProc) -> None:
    """Issue 41: the process's total reads were the weights' ("reading weights (51 GB/s)"); the
    weight file's own position does not move."""
    fake.set(101, fds=["/models/m/model.safetensors", "/dev/zero"])
    watch = _watch(fake)
    _run(watch, fake, 3, every=1.0, by={101: (500, 100)})  # rchar grows: /dev/zero
    activity = watch.activity()
    assert activity is not None and activity.kind == "busy", activity
    assert activity.text.startswith("busy: reading 500 MB/s, not from the weight files open")


def test_a_deleted_weight_file_still_read_is_reading_weights(fake: FakeProc) -> None:
    """Issue 41: a weight file deleted while open (`... (deleted)` in its fd link) was "no weight file open"."""
    shard = "/models/m/model-00002-of-00002.safetensors (deleted)"
    fake.set(101, fds=[shard])
    watch = _watch(fake)
    _run(watch, fake, 3, every=1.0, by={101: (200, 30, shard)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading", activity
    assert activity.text == "reading weights (200 MB/s: model-00002-of-00002.safetensors)"


def test_mapped_weights_paged_in_from_the_page_cache_are_reading_weights(fake: FakeProc) -> None:
    """Shards already in memory: no byte comes from storage (read_bytes, rchar still), yet the
    mapping's pages come in as the tensors are copied out: that is reading the weights."""
    shard = "/models/m/model-00001-of-00005.safetensors"
    fake.set(101, maps=[shard])
    watch = _watch(fake)
    for i in range(4):
        fake.set(101, rss={shard: i * 900_000_000}, cpu=i * 60)
        watch.sample(float(i))
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading", activity
    assert activity.text == "reading weights (900 MB/s: model-00001-of-00005.safetensors)"


def test_a_load_that_ended_seconds_ago_is_not_reading_now(fake: FakeProc) -> None:
    """Issue 41: rates are what changed lately, not a 10 s average: a tree idle for 4 s after a
    1 GB read is idle, not "reading weights"."""
    shard = "/models/m/model.safetensors"
    fake.set(101, fds=[shard])
    watch = _watch(fake)
    _run(watch, fake, 4, every=1.0, by={101: (250, 20, shard)})
    assert watch.activity().kind == "reading"  # type: ignore[union-attr]
    _run(watch, fake, 5, every=1.0, start=4.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck", activity


def test_inductor_work_inside_the_server_is_compiling(fake: FakeProc, tmp_path: Path) -> None:
    """Issue 41: 52 s of Inductor work inside the server (no compiler child, no compile worker)
    was "busy on CPU": its kernel cache (TORCHINDUCTOR_CACHE_DIR) was written all along."""
    cache = tmp_path / "inductor-cache"
    cache.mkdir()
    fake.set(100, environ={"TORCHINDUCTOR_CACHE_DIR": str(cache), "HOME": str(tmp_path / "home")})
    watch = _watch(fake)
    ticks = ProcFS(fake.root).ticks
    for i in range(4):
        if i:
            fake.grow(101, cpu_ticks=ticks)
            kernel = cache / f"c{i}"
            kernel.mkdir()
            os.utime(cache, (1000.0 + i, 1000.0 + i))  # each look sees the folder newer
        watch.sample(float(i))
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling", activity
    assert activity.text == "compiling kernels (kernel cache written: inductor-cache)"
    assert activity.busy and any("kernel-cache folders written" in e for e in activity.evidence)


def test_a_busy_gpu_with_memory_rising_is_busy_with_both_said(fake: FakeProc) -> None:
    """Issue 41: right after graph capture, a GPU at 100 % with memory rising was "allocating":
    its utilisation was averaged with 9 s of idle looks. Utilisation is what it is now, and the
    memory rising is said with it."""
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 20_000.0}
    watch = _watch(fake, nvml_watch(nvml))
    watch.phase = "warmup"
    for i in range(12):
        if i >= 9:
            nvml.devices[0]["util"] = 100.0
            nvml.devices[0]["procs"] = {101: 20_000.0 + (i - 8) * 1024}
        watch.sample(float(i))
    activity = watch.activity()
    assert activity is not None and activity.kind == "gpu", activity
    assert activity.text.startswith("GPU busy (warming up: ") and ", memory +2.0 GB in 10 s)" in activity.text


def test_the_loop_ticks_every_second_and_says_a_change_once_it_holds(fake: FakeProc) -> None:
    """`tick` looks once a second however often the loop passes; `news` gives a new kind once,
    after two looks in a row show it."""
    shard = "/models/m/model.safetensors"
    fake.set(101, fds=[shard])
    watch = _watch(fake)
    said = []
    looked = 0
    for step in range(48):  # twelve seconds of a loop passing every 0.25 s: idle, reading 3 s, idle
        now = step * 0.25
        if 16 <= step < 28 and step % 4 == 0:
            fake.grow(101, 100, 10, shard)
        looked += watch.tick(now)
        news = watch.news()
        if news is not None:
            said.append(news.kind)
    assert looked == 12
    assert said == ["stuck", "reading", "stuck"]

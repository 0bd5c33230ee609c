"""`firedup.live.proc`: the server's process tree read from /proc (`ProcFS`) and looked at
once a second (`TreeWatch`): the tree, start times, what a file is, the bytes read from weight
files (fd positions, mapped pages, deleted files), kernel-cache folders written, on a fake /proc
tree (`_proctree`) and on the real /proc.

The situations are those `wait --pid` met beside six real SGLang start-ups
(`../shared/realgpu/*.wait.txt`, README's second set)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _proctree import BTIME, FakeProc, looks, server_tree, tree_watch
from firedup.live.proc import ProcFS, TreeWatch, file_kind, looks_like_server


@pytest.fixture(params=[True, False], ids=["children-lists", "scan"])
def fake(tmp_path: Path, request: pytest.FixtureRequest) -> FakeProc:
    return server_tree(tmp_path, children_lists=request.param)


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


def test_the_exit_is_gone(fake: FakeProc) -> None:
    watch = tree_watch(fake)
    watch.sample(0.0)
    fake.remove(101)
    fake.remove(100)
    watch.sample(2.0)
    assert watch.activity().kind == "gone"  # type: ignore[union-attr]


def test_a_pid_reused_by_another_process_is_gone(fake: FakeProc) -> None:
    watch = tree_watch(fake)
    watch.sample(0.0)
    fake.set(100, start=999_999)  # the server died, the kernel gave its pid to a new process
    watch.sample(2.0)
    assert watch.activity().kind == "gone"  # type: ignore[union-attr]


# --- what is read of weight files and kernel caches -----------------------------------------------


def test_mapped_weights_with_no_fd_open_are_read_too(fake: FakeProc) -> None:
    """safetensors maps its file: the fd may be closed while the pages come in (read_bytes grows)."""
    shard = "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/blobs/9f0e1d2c3b4a"
    fake.set(101, maps=[shard])
    watch = tree_watch(fake)
    looks(watch, fake, 3, by={101: (300, 20, shard)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading" and "150 MB/s" in activity.text
    assert "9f0e1d2c3b4a" in activity.text


def test_a_process_reading_dev_zero_with_a_weight_file_open_is_not_reading_weights(fake: FakeProc) -> None:
    """Issue 41: the process's total reads were the weights' ("reading weights (51 GB/s)"); the
    weight file's own position does not move."""
    fake.set(101, fds=["/models/m/model.safetensors", "/dev/zero"])
    watch = tree_watch(fake)
    looks(watch, fake, 3, every=1.0, by={101: (500, 100)})  # rchar grows: /dev/zero
    activity = watch.activity()
    assert activity is not None and activity.kind == "busy", activity
    assert activity.text.startswith("busy: reading 500 MB/s, not from the weight files open")


def test_a_deleted_weight_file_still_read_is_reading_weights(fake: FakeProc) -> None:
    """Issue 41: a weight file deleted while open (`... (deleted)` in its fd link) was "no weight file open"."""
    shard = "/models/m/model-00002-of-00002.safetensors (deleted)"
    fake.set(101, fds=[shard])
    watch = tree_watch(fake)
    looks(watch, fake, 3, every=1.0, by={101: (200, 30, shard)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading", activity
    assert activity.text == "reading weights (200 MB/s: model-00002-of-00002.safetensors)"


def test_mapped_weights_paged_in_from_the_page_cache_are_reading_weights(fake: FakeProc) -> None:
    """Shards already in memory: no byte comes from storage (read_bytes, rchar still), yet the
    mapping's pages come in as the tensors are copied out: that is reading the weights."""
    shard = "/models/m/model-00001-of-00005.safetensors"
    fake.set(101, maps=[shard])
    watch = tree_watch(fake)
    for i in range(4):
        fake.set(101, rss={shard: i * 900_000_000}, cpu=i * 60)
        watch.sample(float(i))
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading", activity
    assert activity.text == "reading weights (900 MB/s: model-00001-of-00005.safetensors)"


def test_inductor_work_inside_the_server_is_compiling(fake: FakeProc, tmp_path: Path) -> None:
    """Issue 41: 52 s of Inductor work inside the server (no compiler child, no compile worker)
    was "busy on CPU": its kernel cache (TORCHINDUCTOR_CACHE_DIR) was written all along."""
    cache = tmp_path / "inductor-cache"
    cache.mkdir()
    fake.set(100, environ={"TORCHINDUCTOR_CACHE_DIR": str(cache), "HOME": str(tmp_path / "home")})
    watch = tree_watch(fake)
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


def test_the_loop_ticks_every_second_and_says_a_change_once_it_holds(fake: FakeProc) -> None:
    """`tick` looks once a second however often the loop passes; `news` gives a new kind once,
    after two looks in a row show it."""
    shard = "/models/m/model.safetensors"
    fake.set(101, fds=[shard])
    watch = tree_watch(fake)
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


# --- odd and real /proc --------------------------------------------------------------------------


def test_unreadable_or_odd_files_are_skipped(fake: FakeProc) -> None:
    (fake.root / "101" / "io").unlink()  # another user's process: io is not readable
    shutil.rmtree(fake.root / "101" / "fd")
    (fake.root / "abc").mkdir()
    procfs = ProcFS(fake.root)
    info = procfs.info(101)
    assert info is not None and info.read_bytes is None and procfs.fds(101) is None
    watch = tree_watch(fake)
    looks(watch, fake, 2)
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

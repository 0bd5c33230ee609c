"""`firedup.live.gpu`: the tree's GPUs, from NVML (faked) or `nvidia-smi` (a script), read
off the loop's thread and never a hang; and what they make of a tree's looks (GPU busy,
allocating, a container's device)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from _proctree import FakeNvml, FakeProc, looks, nvml_watch, server_tree, tree_watch
from firedup.live.gpu import GpuWatch, NvidiaSmi


@pytest.fixture(params=[True, False], ids=["children-lists", "scan"])
def fake(tmp_path: Path, request: pytest.FixtureRequest) -> FakeProc:
    return server_tree(tmp_path, children_lists=request.param)


def test_graph_capture_on_a_busy_gpu_is_gpu_busy_not_reading_weights(fake: FakeProc) -> None:
    """realgpu, cold EAGLE-3 at 1 min 05 s of graph capture: `reading weights (8 MB/s)`; the GPU
    was capturing graphs. NVML names the tree's pid; the reads (8 MB/s, no weight file) do not
    make weights."""
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 30_000.0}
    nvml.devices[0]["util"] = 87.0
    fake.set(101, fds=["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"])
    watch = tree_watch(fake, nvml_watch(nvml))
    watch.phase = "cuda_graph"
    looks(watch, fake, 3, by={101: (16, 100)})
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
    watch = tree_watch(fake, nvml_watch(nvml))
    watch.phase = "cuda_graph"
    looks(watch, fake, 2)
    activity = watch.activity()
    assert activity is not None and activity.kind == "gpu" and "95% on GPU 3" in activity.text
    assert any("the devices' totals" in e for e in activity.evidence)


def test_gpu_memory_rising_is_allocating(fake: FakeProc) -> None:
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 1000.0}
    watch = tree_watch(fake, nvml_watch(nvml))
    watch.sample(0.0)
    nvml.devices[0]["procs"] = {101: 9192.0}
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "allocating"
    assert activity.text == "allocating (GPU memory rising: +8.0 GB in 2 s on GPU 0, 9.0 GB)"


def test_a_busy_gpu_with_memory_rising_is_busy_with_both_said(fake: FakeProc) -> None:
    """Issue 41: right after graph capture, a GPU at 100 % with memory rising was "allocating":
    its utilisation was averaged with 9 s of idle looks. Utilisation is what it is now, and the
    memory rising is said with it."""
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 20_000.0}
    watch = tree_watch(fake, nvml_watch(nvml))
    watch.phase = "warmup"
    for i in range(12):
        if i >= 9:
            nvml.devices[0]["util"] = 100.0
            nvml.devices[0]["procs"] = {101: 20_000.0 + (i - 8) * 1024}
        watch.sample(float(i))
    activity = watch.activity()
    assert activity is not None and activity.kind == "gpu", activity
    assert activity.text.startswith("GPU busy (warming up: ") and ", memory +2.0 GB in 10 s)" in activity.text


# --- the GPU query: optional, never a hang -------------------------------------------------------


def test_no_gpu_query_is_skipped_cleanly(fake: FakeProc) -> None:
    gpu = GpuWatch(lambda: (None, "no NVML (nvidia-ml-py) and no nvidia-smi"), background=False)
    watch = tree_watch(fake, gpu)
    looks(watch, fake, 2)
    assert watch.activity().kind == "stuck" and gpu.off == "no NVML (nvidia-ml-py) and no nvidia-smi"  # type: ignore[union-attr]


def test_a_gpu_query_that_never_returns_does_not_stall_the_look(fake: FakeProc) -> None:
    class Wedged:
        name, every = "NVML", 0.1

        def read(self) -> None:
            time.sleep(30)

    gpu = GpuWatch(lambda: (Wedged(), "NVML"), timeout=0.3)
    watch = tree_watch(fake, gpu)
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
    watch = tree_watch(fake, GpuWatch(lambda: (NvidiaSmi(smi), "nvidia-smi"), background=False))
    watch.phase = "cuda_graph"
    looks(watch, fake, 2)
    assert watch.activity().text == "GPU busy (capturing graphs: 91% on GPU 0, 38.1 GB)"  # type: ignore[union-attr]
    (tmp_path / "slow").mkdir()
    slow = _fake_smi(tmp_path / "slow", "sleep 30")
    gpu = GpuWatch(lambda: (NvidiaSmi(slow, timeout=0.5), "nvidia-smi"), background=False)
    began = time.monotonic()
    assert gpu.request(0.0) is None and time.monotonic() - began < 5
    assert gpu.off == "nvidia-smi did not answer in 0.5 s"

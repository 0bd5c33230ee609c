"""`firedup.live.activity`: the class a process tree's looks earn (`classify`, its evidence
rules in order), on looks of a fake /proc tree (`_proctree`) taken by `TreeWatch`, and on
looks built by hand.

The situations are those `wait --pid` met beside six real SGLang start-ups
(`../shared/realgpu/*.wait.txt`, README's second set): Python and CUDA imports before the
first log line, a random-weight load, graph capture with the kernel JIT cold, a hang in
distributed init; and a real weight read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _proctree import FakeNvml, FakeProc, looks, nvml_watch, server_tree, tree_watch
from firedup.live.activity import Look, Seen, classify
from firedup.live.proc import ProcFS


@pytest.fixture(params=[True, False], ids=["children-lists", "scan"])
def fake(tmp_path: Path, request: pytest.FixtureRequest) -> FakeProc:
    return server_tree(tmp_path, children_lists=request.param)


def test_imports_before_the_first_line_are_importing_not_reading_weights(fake: FakeProc) -> None:
    """realgpu: `reading weights (43 MB/s)` 12 s after launch, while Python imported torch and
    CUDA's libraries (random weights: no weight file was ever read)."""
    libs = ["/opt/site/torch/lib/libtorch_cuda.so", "/opt/site/nvidia/cudnn/lib/libcudnn.so.9",
            "/opt/site/torch/lib/libc10.so", "/opt/site/triton/_C/libtriton.so"]
    fake.set(100, maps=libs[:1], cpu=0)
    watch = tree_watch(fake)
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
    watch = tree_watch(fake, model_dirs=(model,))
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
    watch = tree_watch(fake)
    looks(watch, fake, 2, by={101: (400, 50, shard)})
    activity = watch.activity()
    assert activity is not None and activity.kind == "reading" and activity.busy
    assert activity.text == "reading weights (200 MB/s: model-00001-of-00004.safetensors)"
    assert any(shard in e for e in activity.evidence)


def test_a_weight_file_held_open_with_no_reads_is_not_reading(fake: FakeProc) -> None:
    fake.set(101, fds=["/models/m/model.gguf"])
    watch = tree_watch(fake)
    looks(watch, fake, 3)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck"


def test_a_load_that_ended_seconds_ago_is_not_reading_now(fake: FakeProc) -> None:
    """Issue 41: rates are what changed lately, not a 10 s average: a tree idle for 4 s after a
    1 GB read is idle, not "reading weights"."""
    shard = "/models/m/model.safetensors"
    fake.set(101, fds=[shard])
    watch = tree_watch(fake)
    looks(watch, fake, 4, every=1.0, by={101: (250, 20, shard)})
    assert watch.activity().kind == "reading"  # type: ignore[union-attr]
    looks(watch, fake, 5, every=1.0, start=4.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck", activity


def test_the_kernel_jit_is_compiling_with_the_compilers_named(fake: FakeProc) -> None:
    """realgpu, cold EAGLE-3: `compiling kernels (cc1plus, cicc, ninja, nvcc)` in graph capture."""
    watch = tree_watch(fake)
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
    watch = tree_watch(fake)
    looks(watch, fake, 3, every=1.0)
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
    watch = tree_watch(fake)
    looks(watch, fake, 2)
    assert watch.activity().kind == "stuck"  # type: ignore[union-attr]
    fake.grow(105, cpu_ticks=ProcFS(fake.root).ticks)
    watch.sample(4.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling" and activity.compilers == ()
    assert "compile workers using CPU: pid 105" in activity.evidence


def test_kernel_cache_files_opened_while_working_are_compiling(fake: FakeProc) -> None:
    watch = tree_watch(fake)
    watch.sample(0.0)
    fake.set(101, fds=["/root/.triton/cache/AB12/_fwd_kernel.ptx"])
    fake.grow(101, read_mb=1, cpu_ticks=100)
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "compiling"
    assert activity.text == "compiling kernels (kernel cache: _fwd_kernel.ptx)" and activity.compilers == ()


def test_the_idle_hang_is_idle_with_the_gpu_idle(fake: FakeProc) -> None:
    """realgpu hang2: four processes waiting in distributed init for a node that never came."""
    nvml = FakeNvml()
    nvml.devices[0]["procs"] = {101: 600.0}
    fake.add(102, 100, "python3", ["python3", "-c", "from multiprocessing.resource_tracker import main"])
    fake.add(103, 100, "sglang::detoken", ["sglang::detokenizer"])
    fake.set(101, fds=["/dev/nvidia0"])
    watch = tree_watch(fake, nvml_watch(nvml))
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
    watch = tree_watch(fake)
    looks(watch, fake, 2)
    activity = watch.activity()
    assert activity is not None and activity.busy and activity.text.startswith(
        "waiting on storage (1 process in uninterruptible I/O")


def test_cpu_alone_means_busy(fake: FakeProc) -> None:
    ticks = ProcFS(fake.root).ticks
    watch = tree_watch(fake)
    watch.sample(0.0)
    fake.grow(101, cpu_ticks=ticks)  # one CPU second in two seconds
    watch.sample(2.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "busy" and activity.text == "busy on CPU (50% of a core)"


def test_a_stopped_tree_is_stuck_even_with_a_compiler_in_it(fake: FakeProc) -> None:
    fake.add(106, 101, "ptxas")
    for pid in (100, 101, 106):
        fake.set(pid, state="T")
    watch = tree_watch(fake)
    watch.sample(0.0)
    activity = watch.activity()
    assert activity is not None and activity.kind == "stuck" and activity.text.startswith("stopped: 3 processes suspended")


def test_file_and_process_names_are_shown_escaped(fake: FakeProc) -> None:
    """A file name is hostile text: a newline in it must not forge a line of a note."""
    evil = "/models/m/evil\nREADY in 1 s\x1b[2J.safetensors"
    fake.set(101, fds=[evil])
    fake.add(102, 101, "nvcc", ["/usr/bin/nvcc\x1b]0;pwned\x07"], state="R")
    watch = tree_watch(fake)
    looks(watch, fake, 2, by={101: (100, 10, evil)})
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

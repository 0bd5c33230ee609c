"""An SGLang start-up that fails, as `synth.sglang` writes it: the tracebacks its ranks print
when a captured forward runs out of memory, or when NCCL cannot create its shared memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firedup.synth._output import Tqdm
from firedup.synth.model import CrashTruth

if TYPE_CHECKING:
    from firedup.synth.sglang import _Run

_SITE = "/usr/local/lib/python3.12/dist-packages"
_SRC = "/sgl-workspace/sglang/python/sglang"


def oom_capture(run: _Run, t: float, sizes: list[int], stage: str) -> None:
    """§4.2: a rank's captured forward runs out of memory; SIGQUIT; the tree is killed."""
    n_done = run.r.randint(1, min(3, len(sizes) - 1))
    bar = Tqdm(run.s, t, len(sizes), None)
    for n in sizes[:n_done]:
        bar.set_description(t, f"Capturing batches (bs={n} avail_mem={run.avail[0]:.2f} GB)")
        t += run.u(7.0, 9.0)
        run.avail[0] -= run.r.uniform(0.6, 1.1)
        bar.update(t)
    bar.set_description(t, f"Capturing batches (bs={sizes[n_done]} avail_mem={run.avail[0]:.2f} GB)")
    t += run.u(2.0, 5.0)
    order = list(range(len(run.ranks)))
    run.r.shuffle(order)
    failing = order[: min(2, len(order))]
    cap = run.spec.gpu.capacity_gb
    for j, i in enumerate(failing):
        rank = run.ranks[i]
        gpu = i
        tried = run.r.choice((1.27, 1.5, 2.0, 2.5))
        free = run.r.uniform(0.3, 1.1)
        in_use = cap - free
        oom = (f"CUDA out of memory. Tried to allocate {tried:.2f} GiB. GPU {gpu} has a total capacity of "
               f"{cap:.2f} GiB of which {free * 1024:.2f} MiB is free. Process {run.main_pid + 60 + 3 * i} has "
               f"{in_use:.2f} GiB memory in use. Of the allocated memory {in_use - 4.2:.2f} GiB is allocated by "
               f"PyTorch, with {run.r.uniform(2.0, 3.5):.2f} GiB allocated in private pools (e.g., CUDA Graphs), "
               f"and {run.r.uniform(0.5, 1.5):.2f} GiB is reserved by PyTorch but unallocated. If reserved but "
               "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
               "fragmentation.  See documentation for Memory Management  "
               "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
        tb = _OOM_TRACEBACK.format(src=_SRC, site=_SITE, oom=oom, stage=stage,
                                   flag="--cuda-graph-max-bs-decode" if run.era_c else "--cuda-graph-max-bs")
        lines = tb.split("\n")
        te = t + j * run.u(0.05, 0.4)
        seq = run.log(te, "Scheduler hit an exception: " + lines[0], rank)
        for line in lines[1:]:
            run.raw(te, line)
        if j == 0:
            run.crash_seq = seq
            run.crash = CrashTruth("oom", "cuda_graph", 0, rank, "Exception: Capture cuda graph failed: " + oom)
    t_quit = t + run.u(0.4, 0.9)
    run.log(t_quit, "Received sigquit from a child process. It usually means the child failed.")
    for i in range(len(run.ranks)):
        if i in failing or run.r.random() < 0.5:
            continue
        tw = t_quit + run.u(0.01, 0.2)
        run.raw(tw, f"[rank{i}]:[W{run.s.clock.glog(tw)} ProcessGroupNCCL.cpp:1538] Warning: WARNING: "
                     "destroy_process_group() was not called before program exit, which can leak resources. "
                     "For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown "
                     "(function operator())")

def nccl_shm(run: _Run, t: float) -> None:
    """NCCL cannot create its shared-memory segment (a small /dev/shm in a container)."""
    order = list(range(len(run.ranks)))
    run.r.shuffle(order)
    failing = order[: min(3, len(order))]
    for j, i in enumerate(failing):
        rank = run.ranks[i]
        seg = "".join(run.r.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(6))
        tb = _NCCL_SHM_TRACEBACK.format(src=_SRC, site=_SITE, seg=seg)
        lines = tb.split("\n")
        te = t + j * run.u(0.02, 0.3)
        seq = run.log(te, "Scheduler hit an exception: " + lines[0], rank)
        for line in lines[1:]:
            run.raw(te, line)
        if j == 0:
            run.crash_seq = seq
            first_exc = next(line for line in lines if line.startswith("torch.distributed.DistBackendError"))
            run.crash = CrashTruth("distributed", "dist_init", 0, rank, first_exc)
    run.log(t + run.u(0.3, 0.8), "Received sigquit from a child process. It usually means the child failed.")


_OOM_TRACEBACK = """Traceback (most recent call last):
  File "{src}/srt/model_executor/runner/decode_cuda_graph_runner.py", line 486, in capture
    self._capture_all(stream)
  File "{src}/srt/model_executor/runner/decode_cuda_graph_runner.py", line 541, in _capture_all
    graph, output_buffers = self.capture_one_batch_size(bs, forward, stream_idx)
  File "{src}/srt/model_executor/runner/decode_cuda_graph_runner.py", line 735, in capture_one_batch_size
    run_once()
  File "{src}/srt/model_executor/runner/decode_cuda_graph_runner.py", line 722, in run_once
    logits_output_or_pp_proxy_tensors = forward(
  File "{site}/torch/utils/_contextlib.py", line 120, in decorate_context
    return func(*args, **kwargs)
  File "{src}/srt/models/qwen3_moe.py", line 912, in forward
    hidden_states = self.model(
  File "{site}/torch/nn/modules/module.py", line 1775, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "{src}/srt/layers/moe/fused_moe_triton/fused_moe.py", line 331, in fused_experts_impl
    intermediate_cache1 = torch.empty(
torch.OutOfMemoryError: {oom}

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "{src}/srt/managers/scheduler.py", line 3318, in run_scheduler_process
    scheduler = Scheduler(
  File "{src}/srt/managers/scheduler.py", line 412, in __init__
    self.init_model_worker()
  File "{src}/srt/managers/scheduler.py", line 633, in init_model_worker
    self.init_tp_model_worker()
  File "{src}/srt/managers/tp_worker.py", line 262, in __init__
    self._init_model_runner()
  File "{src}/srt/model_executor/model_runner.py", line 431, in __init__
    self.initialize(min_per_gpu_memory)
  File "{src}/srt/model_executor/model_runner_components/cuda_graph_setup.py", line 118, in init_device_graphs
    self.graph_runner = DecodeCudaGraphRunner(self)
  File "{src}/srt/model_executor/runner/decode_cuda_graph_runner.py", line 372, in __init__
    self.capture()
  File "{src}/srt/model_executor/runner/decode_cuda_graph_runner.py", line 492, in capture
    raise Exception(
Exception: Capture cuda graph failed: {oom}
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
2. set {flag} to a smaller value (e.g., 16)
3. disable torch compile by not using --enable-torch-compile
4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)
Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose
"""

_NCCL_SHM_TRACEBACK = """Traceback (most recent call last):
  File "{src}/srt/managers/scheduler.py", line 3318, in run_scheduler_process
    scheduler = Scheduler(
  File "{src}/srt/managers/scheduler.py", line 412, in __init__
    self.init_model_worker()
  File "{src}/srt/managers/tp_worker.py", line 262, in __init__
    self._init_model_runner()
  File "{src}/srt/model_executor/model_runner.py", line 418, in __init__
    self.init_parallel()
  File "{src}/srt/distributed/bootstrap.py", line 205, in init_parallel
    initialize_model_parallel(
  File "{src}/srt/distributed/parallel_state.py", line 1537, in initialize_model_parallel
    _TP = init_model_parallel_group(
  File "{src}/srt/distributed/parallel_state.py", line 1301, in init_model_parallel_group
    return GroupCoordinator(
  File "{src}/srt/distributed/parallel_state.py", line 311, in __init__
    torch.distributed.barrier(group=self.device_group)
  File "{site}/torch/distributed/c10d_logger.py", line 81, in wrapper
    return func(*args, **kwargs)
  File "{site}/torch/distributed/distributed_c10d.py", line 4798, in barrier
    work = group.barrier(opts=opts)
torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
Error while creating shared memory segment /dev/shm/nccl-{seg} (size 9637888), error: No space left on device (28)
"""

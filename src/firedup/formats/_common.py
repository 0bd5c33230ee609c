"""Lines that are the same whichever engine prints them: uvicorn's (SGLang and vLLM both
serve with it) and Python's and NCCL's error output.

Not an engine: the registry skips modules whose name starts with `_`.
"""

from __future__ import annotations

from firedup.formats.base import Example, Rule
from firedup.formats.convert import to_int

# What launched the server, with the launcher's own time (timeline.launch; `Kind.launch`):
# systemd starting a unit (journald), a container runtime's start event (`docker events`).
SERVICE = Rule("run.service", r"^Start(?:ed|ing) (?P<unit>[\w@.:-]+\.service)", ("Started ", "Starting "),
               starts_run="after_end", evidence=0,
               examples=(Example("Feb 22 06:34:42 gpu-host systemd[1]: Started vllm.service - vLLM OpenAI Server.",
                                 {"unit": "vllm.service"}),
                         "Dec 05 22:46:30 gpu1 systemd[1]: Starting sglang.service - SGLang..."))
CONTAINER_START = Rule("run.container",
                       r"^container start (?P<container>[0-9a-f]{12,64})(?:$|\s(?:\((?P<attrs>[^()]{0,2000})\))?)",
                       "container start ", starts_run="after_end",
                       evidence=0, examples=(Example("2026-12-05T22:46:20.500000000Z container start 3f2a6b9c0d1e2f3a4b5c "
                                         "(image=lmsysorg/sglang:v0.5.16, name=sglang)",
                                         {"container": "3f2a6b9c0d1e2f3a4b5c",
                                          "attrs": "image=lmsysorg/sglang:v0.5.16, name=sglang"}),))

# DJL Serving (SageMaker LMI) runs the engine inside its own Python worker and serves HTTP itself:
# no uvicorn line; its front end binds the API once the worker has loaded the model, and the
# endpoint answers from then on ("INFO  ModelServer BOTH API bind to: http://0.0.0.0:8080", the
# console's "[INFO ] ModelServer - BOTH API bind to: ...").
DJL_READY = Rule("ready", r"ModelServer (?:- )?(?:BOTH|INFERENCE|Inference) API bind to: (?P<url>\S+)", "API bind to: ",
                 evidence=0,
                 examples=(Example("INFO  ModelServer BOTH API bind to: http://0.0.0.0:8080",
                                   {"url": "http://0.0.0.0:8080"}),
                           "2024-02-15T17:07:02.101-05:00 | [INFO ] ModelServer - BOTH API bind to: http://0.0.0.0:8080"))

STARTED = Rule("http.started", r"^Started server process \[(?P<pid>\d+)\]", "Started server process", evidence=0,
               examples=("INFO:     Started server process [3604]",))
STARTUP_FAILED = Rule("http.startup_failed", r"Application startup failed", "Application startup failed", evidence=0,
                      examples=("ERROR:    Application startup failed. Exiting.",))
ACCESS = Rule("http.access",
              r"^(?P<client>\S+) - \"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+\" (?P<status>\d{3})",
              "HTTP/", fields={"status": to_int}, evidence=0,
              examples=('INFO:     127.0.0.1:47550 - "GET /health HTTP/1.1" 200 OK',
                        Example('INFO:     10.0.0.7:51012 - "POST /v1/chat/completions HTTP/1.1" 503 '
                                "Service Unavailable",
                                {"method": "POST", "path": "/v1/chat/completions", "status": 503})))
SHUTDOWN = Rule("http.shutdown", r"^(?:Shutting down$|Finished server process|Waiting for application shutdown)",
                ("Shutting down", "Finished server process", "application shutdown"), evidence=0,
                examples=("INFO:     Shutting down",
                          "INFO:     Waiting for application shutdown.",
                          "INFO:     Finished server process [3604]"))

# Python tracebacks and the NCCL/CUDA errors inside them, in the order the rules are tried.
PYTHON_ERRORS = (
    # A native check that prints and exits, no Python exception: the CUDACHECK of the custom
    # all-reduce kernels both engines ship ("Failed: Cuda error FILE:LINE 'MSG'", older builds
    # "Failed: FILE:LINE 'MSG'"), then `exit(1)`: the process is gone.
    Rule("error.native_abort",
         r"^Failed: (?:Cuda error )?(?P<file>[^\s:']{1,400}\.(?:cuh|cu|cc|cpp|h|hpp)):(?P<lineno>\d{1,7}) "
         r"'(?P<cuda_msg>[^']{0,300})'",
         "Failed: ", evidence=0,
         examples=(Example("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'invalid argument'",
                           {"file": "/workspace/csrc/custom_all_reduce.cuh", "lineno": "455",
                            "cuda_msg": "invalid argument"}),
                   "Failed: /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:310 'invalid argument'")),
    Rule("error.nccl", r"(?:NCCL WARN|NCCL error|ncclSystemError|ncclInternalError|ncclRemoteError"
                       r"|ncclUnhandledCudaError|Watchdog caught collective operation timeout)",
         ("NCCL", "nccl", "collective operation timeout"), evidence=0,
         examples=("gpu-node-6:1180824:1180824 [3] os/linux.cc:200 NCCL WARN ncclOsSocketPollConnect: "
                   "connect to 10.0.0.49<58525> returned Connection refused, exceeded error retry count "
                   "after 35 attempts",
                   "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
                   "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                   "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")),
    # NCCL's "Last error:" detail, printed raw after the exception that it explains.
    Rule("error.detail", r"^(?:Error while (?:creating|attaching to) shared memory segment|.*No space left on device)",
         ("shared memory segment", "No space left on device"), evidence=0,
         examples=("Error while creating shared memory segment /dev/shm/nccl-TL2C5S (size 9637888), error: "
                   "No space left on device (28)",)),
    Rule("error.frame", r'^File "(?P<file>[^"]+)", line (?P<lineno>\d+), in (?P<func>\S+)', 'File "', evidence=0,
         examples=(Example('File "/usr/lib/python3.12/site-packages/torch/cuda/graphs.py", line 186, in '
                           "capture_end",
                           {"file": "/usr/lib/python3.12/site-packages/torch/cuda/graphs.py", "lineno": "186",
                            "func": "capture_end"}),)),
    Rule("error.exception",
         r"^(?P<exc_type>(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Interrupt|Exit|Failure|Invalid))(?:: (?P<exc_msg>.*))?$",
         ("Error", "Exception", "Interrupt", "Exit", "Failure", "Invalid"), evidence=0,
         examples=(Example("ValueError: FlashInfer allreduce fusion requires SM90 or SM10X NVIDIA GPUs.",
                           {"exc_type": "ValueError",
                            "exc_msg": "FlashInfer allreduce fusion requires SM90 or SM10X NVIDIA GPUs."}),
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a "
                   "total capacity of 79.19 GiB of which 301.94 MiB is free.",
                   "KeyboardInterrupt")),
    Rule("error.cuda", r"(?:CUDA out of memory|CUDA error: |torch\.OutOfMemoryError|HIP out of memory)",
         ("out of memory", "CUDA error", "OutOfMemoryError"), evidence=0,
         examples=("[2026-03-02 09:14:07 TP3] CUDA error: an illegal memory access was encountered",)),
)

# The text of an error raised in (or printed by) the custom all-reduce, the all-reduce over CUDA
# IPC buffers both engines run between the GPUs of one node: its init (`CustomAllreduce`,
# `init_custom_ar`), its kernels (custom_all_reduce.cuh) or its graph buffers.
CUSTOM_ALL_REDUCE = r"custom_all_reduce|CustomAllreduce|init_custom_ar|custom_ar\b"

# Frames that place a crash in a phase, by the function the model runner was in; both
# engines' runners (and the distributed libraries they share) use these names. Graph
# *capture* only: a replay during the warm-up request is not the capture phase. Text until
# a crash needs them (`re` compiles and caches them then).
FRAME_STAGES = (
    ("dist_init", r"in (?:init_torch_distributed|init_distributed_environment|initialize_model_parallel)$"),
    ("load_weights", r"in (?:load_model|load_weights\w*|process_weights_after_loading|weight_loader)$"),
    ("kv_cache", r"in (?:init_memory_pool|profile_max_num_token|init_cache_with_memory_pool"
                 r"|determine_num_available_blocks|profile_run|_initialize_kv_caches)$"),
    ("cuda_graph", r"in (?:\w*capture_cuda_graph\w*|init_cuda_graphs|init_device_graphs|capture|capture_one_batch_size|_capture_graph)$"
                   r"|cuda_graph_runner\.py\", line \d+, in __init__$"),
)
# Error lines that prove a crash happened inside graph capture (so graphs were on).
CAPTURE_TRACE = (r"capture_cuda_graph|cuda_graph_runner|init_cuda_graphs|CudaGraphRunner"
                 r"|Capture cuda graph failed|capture_one_batch_size|graph_capture")

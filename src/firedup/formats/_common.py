"""Lines that are the same whichever engine prints them: uvicorn's (SGLang and vLLM both
serve with it) and Python's and NCCL's error output.

Not an engine: the registry skips modules whose name starts with `_`.
"""

from __future__ import annotations

from firedup.formats.base import Rule, to_int

STARTED = Rule("http.started", r"^Started server process \[(?P<pid>\d+)\]", "Started server process", evidence=0)
STARTUP_FAILED = Rule("http.startup_failed", r"Application startup failed", "Application startup failed", evidence=0)
ACCESS = Rule("http.access",
              r"^(?P<client>\S+) - \"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+\" (?P<status>\d{3})",
              "HTTP/", fields={"status": to_int}, evidence=0)
SHUTDOWN = Rule("http.shutdown", r"^(?:Shutting down$|Finished server process|Waiting for application shutdown)",
                ("Shutting down", "Finished server process", "application shutdown"), evidence=0)

# Python tracebacks and the NCCL/CUDA errors inside them, in the order the rules are tried.
PYTHON_ERRORS = (
    Rule("error.nccl", r"(?:NCCL WARN|NCCL error|ncclSystemError|ncclInternalError|ncclRemoteError"
                       r"|ncclUnhandledCudaError|Watchdog caught collective operation timeout)",
         ("NCCL", "nccl", "collective operation timeout"), evidence=0),
    # NCCL's "Last error:" detail, printed raw after the exception that it explains.
    Rule("error.detail", r"^(?:Error while (?:creating|attaching to) shared memory segment|.*No space left on device)",
         ("shared memory segment", "No space left on device"), evidence=0),
    Rule("error.frame", r'^File "(?P<file>[^"]+)", line (?P<lineno>\d+), in (?P<func>\S+)', 'File "', evidence=0),
    Rule("error.exception",
         r"^(?P<exc_type>(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Interrupt|Exit|Failure|Invalid))(?:: (?P<exc_msg>.*))?$",
         ("Error", "Exception", "Interrupt", "Exit", "Failure", "Invalid"), evidence=0),
    Rule("error.cuda", r"(?:CUDA out of memory|CUDA error: |torch\.OutOfMemoryError|HIP out of memory)",
         ("out of memory", "CUDA error", "OutOfMemoryError"), evidence=0),
)

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

"""Lines that are the same whichever engine prints them: uvicorn's (SGLang and vLLM both
serve with it) and Python's and NCCL's error output.

Not an engine: the registry skips modules whose name starts with `_`.
"""

from __future__ import annotations

from firedup.formats.base import Rule, to_int

STARTED = Rule("http.started", r"^Started server process \[(?P<pid>\d+)\]", "Started server process")
STARTUP_FAILED = Rule("http.startup_failed", r"Application startup failed", "Application startup failed")
ACCESS = Rule("http.access",
              r"^(?P<client>\S+) - \"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+\" (?P<status>\d{3})",
              "HTTP/", fields={"status": to_int})
SHUTDOWN = Rule("http.shutdown", r"^(?:Shutting down$|Finished server process|Waiting for application shutdown)",
                ("Shutting down", "Finished server process", "application shutdown"))

# Python tracebacks and the NCCL/CUDA errors inside them, in the order the rules are tried.
PYTHON_ERRORS = (
    Rule("error.nccl", r"(?:NCCL WARN|NCCL error|ncclSystemError|ncclInternalError|ncclRemoteError"
                       r"|ncclUnhandledCudaError|Watchdog caught collective operation timeout)",
         ("NCCL", "nccl", "collective operation timeout")),
    # NCCL's "Last error:" detail, printed raw after the exception that it explains.
    Rule("error.detail", r"^(?:Error while (?:creating|attaching to) shared memory segment|.*No space left on device)",
         ("shared memory segment", "No space left on device")),
    Rule("error.frame", r'^File "(?P<file>[^"]+)", line (?P<lineno>\d+), in (?P<func>\S+)', 'File "'),
    Rule("error.exception",
         r"^(?P<exc_type>(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Interrupt|Exit|Failure|Invalid))(?:: (?P<exc_msg>.*))?$",
         ("Error", "Exception", "Interrupt", "Exit", "Failure", "Invalid")),
    Rule("error.cuda", r"(?:CUDA out of memory|CUDA error: |torch\.OutOfMemoryError|HIP out of memory)",
         ("out of memory", "CUDA error", "OutOfMemoryError")),
)

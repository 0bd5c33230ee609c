"""uvicorn's own lines, the same whichever engine runs it (SGLang and vLLM both serve with it).

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

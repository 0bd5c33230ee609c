"""Lines behind a prefix an unknown harness writes before each line of the engine (issue 29):
how far into a line the engine's own header is looked for, and what in such a prefix names its
source (two servers re-logged by one harness are told apart by it)."""

from __future__ import annotations

import re

# --- wrappers: a prefix an unknown harness writes before each line of the engine ----------------
# ("[2025-07-25 02:04:12] [harness.server_manager] [INFO] [worker_0] " before the server's own
# "[2025-07-25 02:04:12] Load weight begin."). The engine's own header is looked for in the
# first WRAPPER_CHARS characters of a line only: a long line costs no more than a short one.
WRAPPER_CHARS = 256
# What every header with a time holds ("02:04:12"): a literal first, so `re` scans for it fast.
TIME_COLONS = re.compile(r":\d\d:")
# A process tag at the end of a wrapper, "(EngineCore_DP0 pid=311) " (`collectors.COLLECTOR["process-tag"]`, inside a line).
PROC_INSIDE = re.compile(r"[ \t]\((?P<proc>[A-Za-z_][\w-]{0,64}(?: rank=\d{1,9}| [A-Z]{1,16}\d{1,9}(?:_[A-Z]{1,16}\d{1,9}){0,8})?)"
                          r" pid=(?P<pid>\d{1,9})(?:, ip=[\d.:a-fA-F]{1,64})?\) ?")
# A wrapper's words, and those that do not name its source: a date or time, a level, a file
# position ("server_manager.py:123"), a stream name ("worker_0:stdout" is worker_0's).
_WORD = re.compile(r"[^\s\[\]()|]+")
_STAMP_WORD = re.compile(r"\d{1,4}[-/:.T]\d{1,2}")
_LEVEL_WORDS = frozenset({"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL"})
_FILE_POSITION = re.compile(r"\.\w{1,8}:\d{1,9}$")
_STREAM = re.compile(r"[:._-]?(?:stdout|stderr)$")


def wrapper_tag(wrapper: str) -> str | None:
    """What names a wrapper's source: its words that number something (`[worker_0]`,
    `node-3`), without stamps, levels, file positions and stream names, nor a bare number (a
    line number, as `cat -n` or a report quoting a log puts there: it names no source); None
    when no word does (one source). Two servers behind one harness differ by it."""
    words: list[str] = []
    for word in _WORD.findall(wrapper):
        word = word.strip(":-")
        if word.upper() in _LEVEL_WORDS or _STAMP_WORD.match(word) or _FILE_POSITION.search(word):
            continue
        word = _STREAM.sub("", word)
        if any(ch.isdigit() for ch in word) and not word.isdigit():
            words.append(word)
    return " ".join(words) or None


__all__ = ["PROC_INSIDE", "TIME_COLONS", "WRAPPER_CHARS", "wrapper_tag"]

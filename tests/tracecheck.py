"""A strict structural check of Chrome Trace Event JSON (what Perfetto and chrome://tracing need)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def _no_nan(value: str) -> Any:
    raise AssertionError(f"{value} is not valid JSON")


def validate_trace(data: Any) -> list[dict[str, Any]]:
    """The Trace Event Format as Perfetto's JSON importer and chrome://tracing read it (anchors A5)."""
    assert isinstance(data, dict) and set(data) >= {"traceEvents"}
    assert data.get("displayTimeUnit", "ms") in ("ms", "ns")
    events = data["traceEvents"]
    assert isinstance(events, list) and events
    named_threads: set[tuple[int, int]] = set()
    named_processes: set[int] = set()
    used: set[tuple[int, int]] = set()
    for ev in events:
        assert isinstance(ev["name"], str) and ev["name"], ev
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int), ev
        ph = ev["ph"]
        assert ph in ("X", "i", "C", "M"), ev
        if ph == "M":
            assert ev["name"] in METADATA, ev
            if ev["name"] == "process_name":
                named_processes.add(ev["pid"])
                assert isinstance(ev["args"]["name"], str)
            elif ev["name"] == "thread_name":
                named_threads.add((ev["pid"], ev["tid"]))
                assert isinstance(ev["args"]["name"], str)
            else:
                assert isinstance(ev["args"]["sort_index"], int)
            continue
        assert isinstance(ev["ts"], int) and ev["ts"] >= 0, ev  # microseconds
        if ph == "X":
            assert isinstance(ev["dur"], int) and ev["dur"] >= 0, ev
            assert isinstance(ev["cat"], str) and isinstance(ev["args"], dict)
            used.add((ev["pid"], ev["tid"]))
        elif ph == "i":
            assert ev["s"] in ("g", "p", "t"), ev
            used.add((ev["pid"], ev["tid"]))
        else:
            assert ev["args"] and all(isinstance(v, (int, float)) for v in ev["args"].values()), ev
        assert ev["pid"] in named_processes or any(e.get("name") == "process_name" and e["pid"] == ev["pid"]
                                                   for e in events)
    assert used <= named_threads, used - named_threads
    # duration events on one track must nest or not overlap
    tracks: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for ev in events:
        if ev["ph"] == "X":
            tracks[(ev["pid"], ev["tid"])].append((ev["ts"], ev["ts"] + ev["dur"]))
    for key, spans in tracks.items():
        stack: list[tuple[int, int]] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
            while stack and stack[-1][1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1][1], (key, (start, end), stack[-1])
            stack.append((start, end))
    return list(events)


def no_nan(value: str) -> Any:
    """json.loads(parse_constant=...): NaN/Infinity are not JSON, and trace viewers reject them."""
    raise AssertionError(f"{value} is not valid JSON")

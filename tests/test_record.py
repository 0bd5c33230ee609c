"""live/record.py: `--record`'s JSON and `--ingest`'s store, written from what the wait saw."""

from __future__ import annotations

import json
import time
from datetime import date, timedelta
from pathlib import Path

from _live import NEW_READY
from firedup.live.activity import Activity
from firedup.live.pidclock import PidClock
from firedup.live.record import ingest, write_record
from firedup.live.sofar import SoFar, Stretch
from firedup.read.sources import Line
from firedup.timeline.pipeline import DatePolicy, LogReader
from firedup.timeline.run import Run


def _runs() -> list[Run]:
    reader = LogReader(str(NEW_READY), "sglang", DatePolicy(None, date(2026, 1, 1)))
    reader.feed([Line(i + 1, t) for i, t in enumerate(NEW_READY.read_text().splitlines())])
    return reader.runs()


def test_the_record_holds_the_verdict_the_run_and_what_the_tree_did(tmp_path: Path) -> None:
    w0 = time.time()
    clock = PidClock(7, w0 - 30, 0.0, w0, None, quiet=True)
    clock.zone = timedelta(0)
    seen = SoFar(clock, 0.0, log_name="server.log", url="http://u:1/", probed="http://u:1/health", pid=7,
                 watch_pid=7, gpu=("nvml", None))
    seen.run = _runs()[-1]
    seen.activity = Activity("compiling", "compiling kernels (nvcc)", True, evidence=("compiler processes: nvcc (pid 8)",))
    seen.observed.append(Stretch("compiling", "compiling kernels (nvcc)", w0 - 10, w0 - 4, "cuda_graph", ["e"], ["nvcc"]))
    path = tmp_path / "record.json"
    write_record(seen, path, 0, "READY in 1 min", 12.3456)
    saved = json.loads(path.read_text())
    assert saved["exit_code"] == 0 and saved["headline"] == "READY in 1 min" and saved["waited_s"] == 12.346
    assert saved["url"] == "http://u:1/health" and saved["pid"] == 7 and saved["gpu"] == {"source": "nvml", "off": None}
    assert saved["run"]["outcome"] == "ready"
    assert saved["process_tree"]["kind"] == "compiling" and saved["process_tree"]["busy"] is True
    assert saved["process_tree"]["evidence"] == ["compiler processes: nvcc (pid 8)"]
    [stretch] = saved["process_timeline"]
    assert stretch["seconds"] == 6.0 and stretch["since_launch_s"] == 20.0 and stretch["since"] is not None


def test_ingest_says_why_nothing_was_stored_and_never_fails(tmp_path: Path) -> None:
    said: list[str] = []
    seen = SoFar(PidClock(None, None, 0.0, time.time(), None, quiet=True), 0.0, log_name="stdin")
    ingest(seen, [], log_is_file=False, store_at=str(tmp_path), say=said.append)
    assert said == ["note: --ingest: nothing stored (it stores a log file's start-ups; this wait read no start-up)"]
    said.clear()
    ingest(seen, _runs(), log_is_file=False, store_at=str(tmp_path), say=said.append)
    assert said and "this log is not a file" in said[0]

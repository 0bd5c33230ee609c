"""A real start-up reading a real 16 GB checkpoint from disk, with the default `firedup wait --pid`
beside it (tests/data/realgpu/h200-2026-12-06, its README says how it was recorded): issue 41's
proof that `wait` sees weights being read, held against the machine's own per-second record of
the process tree (`NAME.io.txt`, written by the kit's iosample.py) and the outside poller."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from firedup.timeline.pipeline import parse_paths

DATA = Path(__file__).resolve().parent / "data" / "realgpu" / "h200-2026-12-06"
NAME = "sglang_realckpt"
_POLL = re.compile(r"^\s*([0-9.]+)\s+\d\d:\d\d:\d\d\s+(\S+)")
_IO = re.compile(r"^\s*([0-9.]+)\s+(\d\d:\d\d:\d\d)\s+\d+\s+(\d+)\s")


def _record() -> dict[str, Any]:
    return json.loads((DATA / f"{NAME}.wait.json").read_text())  # type: ignore[no-any-return]


def _first_200() -> float:
    for line in (DATA / f"{NAME}.health.txt").read_text().splitlines():
        m = _POLL.match(line)
        if m and m.group(2) == "200":
            return float(m.group(1))
    raise AssertionError("the poller never saw 200")


def _disk_read_mb(since: str, until: str) -> float:
    """MB the server's tree read from storage between two clock times (iosample's read_MB column)."""
    rows = [(clock, int(mb)) for _t, clock, mb in
            (m.groups() for m in map(_IO.match, (DATA / f"{NAME}.io.txt").read_text().splitlines()) if m)]
    inside = [mb for clock, mb in rows if since <= clock <= until]
    return float(inside[-1] - inside[0])


def test_default_wait_said_reading_weights_while_the_checkpoint_was_read() -> None:
    """The default options (no --stall-after) named the load: the 10 s-silence blindness is gone."""
    printed = (DATA / f"{NAME}.wait.txt").read_text()
    said = re.search(r"reading weights \((\d+) MB/s:\s+model-0000\d-of-00005\.safetensors", printed)
    assert said, printed
    # between `load_weights` and `kv_cache` in what wait printed, in that order
    assert printed.index("load_weights  [line 16]") < said.start() < printed.index("kv_cache  [line 19]")
    reading = [t for t in _record()["process_timeline"] if t["kind"] == "reading"]
    assert reading and reading[0]["phase"] == "load_weights" and reading[0]["seconds"] >= 5
    # the machine's own record: the load (23:32:20 -> 23:32:31) read the 16.4 GB checkpoint from disk
    assert _disk_read_mb("23:32:20", "23:32:32") > 15_000
    assert int(said.group(1)) <= 16_400 / 5  # a rate the disk could give, not a total


def test_wait_was_ready_with_the_launch_measured_against_the_poller() -> None:
    record = _record()
    assert record["exit_code"] == 0
    assert (DATA / f"{NAME}.wait.txt").read_text().rstrip().endswith(
        re.search(r"firedup wait rc=0 at \d\d:\d\d:\d\d", (DATA / f"{NAME}.wait.txt").read_text()).group(0))  # type: ignore[union-attr]
    launch = record["run"]["launch"]
    assert launch["source"] == "measured"
    assert abs(launch["seconds_to_ready"] - _first_200()) <= 2.0  # 1 s stamps, 0.5 s polls


def test_parse_reads_the_record_beside_the_log_and_calls_the_cold_capture_cold() -> None:
    """The `.wait.json` beside the log is the run's process evidence (issue 38): compilers ran in
    the capture, so the kernel cache is cold, and the launch is the measured one."""
    [run] = parse_paths([str(DATA / f"{NAME}.log")]).runs
    doc = run.as_contract()
    assert doc["launch"]["source"] == "measured"
    assert abs(doc["launch"]["seconds_to_ready"] - _record()["run"]["launch"]["seconds_to_ready"]) < 0.01
    kernel = doc["caches"]["kernel_jit"]
    assert (kernel["verdict"], kernel["basis"]) == ("cold", "process"), kernel


def test_advice_does_not_ask_for_what_the_log_already_does() -> None:
    """The log prints `Multi-thread loading shards`: parallel loading is on, so the weights' advice
    must not tell the user to turn it on (it did before this run was read)."""
    [run] = parse_paths([str(DATA / f"{NAME}.log")]).runs
    text = json.dumps(run.as_contract())
    assert "Multi-thread loading shards" in (DATA / f"{NAME}.log").read_text()
    assert "enable_multithread_load" not in text

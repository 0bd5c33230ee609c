"""The one table of collector prefixes: what `sources` strips is what the batch scan marks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firedup.read import batch
from firedup.read.collectors import COLLECTOR, COLLECTORS
from firedup.read.sources import normalise, strip_outer

# One line each collector writes, in front of the server's "INFO ready".
EXAMPLES = {
    "kubectl": "2026-09-22T06:49:56.336833841Z INFO ready",
    "docker-desktop": "2025-02-04 21:21:40.123 INFO ready",
    "journald": "Feb 22 06:34:42 host env[1633]: INFO ready",
    "journald-iso": "2026-02-22T06:34:42+0000 host env[1633]: INFO ready",
    "journald-full": "Sun 2026-02-22 06:34:42 UTC host env[1633]: INFO ready",
    "ts": "Jun 02 14:21:10 INFO ready",
    "compose": "sglang-1  | INFO ready",
    "djl": "[INFO ] PyProcess - Model-stdout: INFO ready",
    "djl-file": "[INFO ] 2025-02-14 08:22:13 PyProcess - W-123-model-stdout: INFO ready",
    "djl-plain": "INFO  PyProcess W-162-chat-film-stdout: INFO ready",
    "mpi-tag": "[1,0]<stdout>:INFO ready",
    "torch-rank": "[rank0]: INFO ready",
    "process-tag": "(EngineCore_DP0 pid=217) INFO ready",
}


def test_every_collector_has_an_example() -> None:
    assert set(EXAMPLES) == set(COLLECTOR) and len(COLLECTORS) == len(COLLECTOR)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_prefix_is_stripped_and_its_start_marked(name: str) -> None:
    line, collector = EXAMPLES[name], COLLECTOR[name]
    text, outer, _proc, pid = strip_outer(line)
    assert text == "INFO ready"
    assert (outer is not None) == (collector.stamp is not None)
    assert (pid is not None) == collector.process_tag
    assert re.match(collector.start, line), "the scan's start pattern is where the prefix starts"


@pytest.mark.skipif(not batch.available(), reason="the batch scan needs hyperscan")
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_batch_scan_marks_every_prefixed_line(name: str) -> None:
    """A prefixed line is one the batch engine reads with the full normaliser (`read_head` takes
    the normalised lines of the lines its scan marks)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one.log"
        path.write_text("plain line\n" + EXAMPLES[name] + "\n")
        _sample, normalised = batch.read_head(path)
    assert normalised == {2: normalise(EXAMPLES[name], 2)}


@pytest.mark.parametrize("line", [
    "Jun 02 14:21:10 [2026-06-02 14:21:11] server_args=ServerArgs(model_path='m')",
    "Jun 02 14:21:10 W0602 14:21:09.031018 3017 torch/utils/cpp_extension.py:2425] TORCH_CUDA_ARCH_LIST is not set",
    "Jun 02 14:21:10 INFO 06-02 14:21:10 [api_server.py:1354] vLLM API server version 0.13.0",
])
def test_moreutils_ts_is_stripped_whole_not_read_as_journald(line: str) -> None:
    """Issue 42, class 2: journald's reading took "[2026-06-02" for a host and "14" for an ident,
    and cut the engine's own header in two (the args line, model and flags lost)."""
    text, outer, _proc, _pid = strip_outer(line)
    assert text == line[len("Jun 02 14:21:10 "):]
    assert outer is not None and (outer.month, outer.day, outer.time) == (6, 2, "14:21:10")


@pytest.mark.parametrize("line", [
    # issue 42, class 8: DJL Serving's shapes by its log4j pattern, and mpirun's rank tag
    "[INFO ] PyProcess - W-332-model-stdout: INFO 02-15 22:06:44 llm_engine.py:275] Loading model weights took 13.4966 GB",
    "[INFO ] - W-332-model-stdout: INFO 02-15 22:06:44 llm_engine.py:275] Loading model weights took 13.4966 GB",
    "INFO  PyProcess W-123-model-stdout: INFO 02-15 22:06:44 llm_engine.py:275] Loading model weights took 13.4966 GB",
    "WARN PyProcess W-252-model-stderr: INFO 02-15 22:06:44 llm_engine.py:275] Loading model weights took 13.4966 GB",
    "[INFO ] 2024-02-15 22:06:44 PyProcess - W-332-model-stdout: INFO 02-15 22:06:44 llm_engine.py:275] Loading "
    "model weights took 13.4966 GB",
    "[INFO ] PyProcess - W-144-model-stdout: [1,0]<stdout>:INFO 02-15 22:06:44 llm_engine.py:275] Loading model "
    "weights took 13.4966 GB",
])
def test_djl_prefixes_leave_the_engines_line(line: str) -> None:
    text, _outer, _proc, _pid = strip_outer(line)
    assert text == "INFO 02-15 22:06:44 llm_engine.py:275] Loading model weights took 13.4966 GB"


@pytest.mark.parametrize("line", [
    "INFO 02-15 22:06:44 llm_engine.py:275] Loading model weights took 13.4966 GB",  # vLLM's own header
    "INFO:     Application startup complete.",  # uvicorn's
    "INFO  ModelServer BOTH API bind to: http://0.0.0.0:8080",  # DJL's own line: no worker's output
])
def test_lines_that_are_not_a_djl_workers_keep_their_start(line: str) -> None:
    assert strip_outer(line)[0] == line


@pytest.mark.parametrize(("line", "written", "frac"), [
    # issue 42, class 8: journalctl's other outputs; `-o short-precise` has no year either
    ("Dec 06 10:00:01.123456 gpu-host python3[1633]: INFO ready", "Dec 06 10:00:01.123456", "123456"),
    ("Dec  6 10:00:01 gpu-host python3[1633]: INFO ready", "Dec 6 10:00:01", ""),
    ("2025-12-06T10:00:01.123456+00:00 gpu-host python3[1633]: INFO ready", "2025-12-06T10:00:01.123456+00:00", "123456"),
])
def test_journalds_outputs_are_stripped_whole_with_their_stamp(line: str, written: str, frac: str) -> None:
    text, outer, _proc, _pid = strip_outer(line)
    assert text == "INFO ready"
    assert outer is not None and outer.text == written and outer.frac == frac and outer.time == "10:00:01"


_ENGINE_LINE = "INFO 02-15 22:06:44 llm_engine.py:275] # GPU blocks: 2050, # CPU blocks: 2048"


@given(level=st.sampled_from(["INFO", "WARN", "ERROR", "DEBUG"]), shape=st.sampled_from(["console", "plain", "file"]),
       worker=st.from_regex(r"W-[0-9]{1,5}-[a-z][a-z0-9-]{0,20}", fullmatch=True),
       stream=st.sampled_from(["stdout", "stderr"]), mpi=st.booleans(),
       day=st.integers(1, 28), frac=st.sampled_from(["", ".5", ".123456"]))
def test_a_djl_workers_line_leaves_the_engines_line_whatever_its_shape(level: str, shape: str, worker: str, stream: str,
                                                                        mpi: bool, day: int, frac: str) -> None:
    """DJL's three log4j shapes, any level, worker (named after the model) and stream, with or
    without mpirun's rank tag: what is left is the engine's own line; only serving.log's carries a stamp."""
    tag = f"{worker}-{stream}: " + ("[1,0]<stdout>:" if mpi else "")
    prefix = {"console": f"[{level:<5}] PyProcess - ", "plain": f"{level:<5} PyProcess ",
              "file": f"[{level:<5}] 2025-02-{day:02d} 08:22:13{frac} PyProcess - "}[shape]
    text, outer, _proc, _pid = strip_outer(prefix + tag + _ENGINE_LINE)
    assert text == _ENGINE_LINE
    assert (outer is not None) == (shape == "file")
    if outer is not None:
        assert (outer.day, outer.time, outer.frac) == (day, "08:22:13", frac[1:])


@given(output=st.sampled_from(["short", "short-precise", "short-iso", "short-iso-precise", "short-full"]),
       month=st.integers(1, 12), day=st.integers(1, 28), micro=st.integers(0, 999999),
       ident=st.from_regex(r"[a-z][a-z0-9_.-]{0,15}", fullmatch=True), pid=st.integers(1, 4194304))
def test_every_journald_output_leaves_the_servers_line(output: str, month: int, day: int, micro: int, ident: str,
                                                        pid: int) -> None:
    """journalctl's year-less outputs (its default `short`, `short-precise`) and its ISO ones:
    the prefix goes whole and its stamp is read."""
    mon = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[month - 1]
    frac = f".{micro:06d}" if output.endswith("precise") else ""
    stamp = (f"2026-{month:02d}-{day:02d}T10:00:01{frac}+0000" if "iso" in output
             else f"Sat 2026-{month:02d}-{day:02d} 10:00:01 UTC" if output == "short-full"
             else f"{mon} {day:2d} 10:00:01{frac}")
    text, outer, _proc, _pid = strip_outer(f"{stamp} gpu-host {ident}[{pid}]: INFO ready")
    assert text == "INFO ready"
    assert outer is not None and (outer.month, outer.day, outer.time, outer.frac) == (month, day, "10:00:01", frac[1:])
    assert outer.year == (2026 if "iso" in output or "full" in output else None)

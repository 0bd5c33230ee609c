"""The batch engine against the incremental one: identical events on every sample, corpus and
generated log; and the access-event compaction never changes a timeline.

The reference is `engine.scan` over `sources.read_lines`, the path `firedup wait` runs.
"""

from __future__ import annotations

import itertools
import os
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLE_LOGS, corpus_logs
from firedup.formats import Format, get_format, sniff_format
from firedup.read import batch, prefilter, windows
from firedup.read.compact import compact
from firedup.read.engine import Event, LineStats, scan
from firedup.read.sources import Source, file_date, read_lines
from firedup.timeline.build import build_timeline
from firedup.timeline.pipeline import parse_paths

pytestmark = pytest.mark.skipif(not batch.available(), reason="the batch engine needs hyperscan and numpy")

LOGS = sorted(SAMPLE_LOGS.glob("*.log")) + corpus_logs("sglang") + corpus_logs("vllm")


def _incremental(path: Path, fmt: Format) -> tuple[list[Event], LineStats, str | None]:
    source = Source(str(path), path)
    events, stats, clock = scan(fmt, read_lines(source), file_date=file_date(source))
    return events, stats, clock.date_source


def _batch(path: Path, fmt: Format) -> tuple[list[Event], LineStats, str | None]:
    events, stats, clock = batch.scan_file(path, fmt, file_date=file_date(Source(str(path), path)))
    return events, stats, clock.date_source


def _format_of(path: Path) -> Format:
    head = itertools.islice(read_lines(Source(str(path), path)), 2000)
    fmt = sniff_format("\n".join(line.text for line in head))
    assert fmt is not None, f"{path}: no known engine"
    return fmt


def _assert_same(path: Path, fmt: Format) -> LineStats | None:
    """Both engines on `path`; None when the batch engine (rightly) handed the file back."""
    head = itertools.islice(read_lines(Source(str(path), path)), 2000)
    sample = "\n".join(line.text for line in head)
    assert batch.head_sample(path) == sample, "parse sniffs from this"
    assert batch.sniff_format(sample) is sniff_format(sample)
    want, want_stats, want_dates = _incremental(path, fmt)
    try:
        got, got_stats, got_dates = _batch(path, fmt)
    except batch.NeedExact:
        return None
    want_keys, got_keys = [e.key() for e in want], [e.key() for e in got]
    for i, (a, b) in enumerate(itertools.zip_longest(want_keys, got_keys)):
        assert a == b, f"{path.name}: event {i} differs:\n incremental {a}\n batch       {b}"
    assert got_dates == want_dates
    # Counts: the same lines; those the batch engine skipped unread are "skipped".
    w, g = want_stats, got_stats
    assert (g.physical, g.logical, g.matched) == (w.physical, w.logical, w.matched)
    assert g.runtime + g.timestamped + g.other + g.skipped == w.runtime + w.timestamped + w.other
    # Silences and unknown lines of the start-ups: measured on the same lines
    assert [x.key() for x in g.gaps] == [x.key() for x in w.gaps], f"{path.name}: gaps differ"
    assert [x.key() for x in g.process_gaps] == [x.key() for x in w.process_gaps], f"{path.name}: process gaps differ"
    assert g.unmatched == w.unmatched, f"{path.name}: unmatched lines differ"
    # What parse runs: access lines `compact` would drop stay unread. The same compacted
    # stream as the incremental engine's, and the same lines, some of them unread.
    scanner = batch.new_scanner(fmt, file_date=file_date(Source(str(path), path)))
    try:  # it leaves more lines unread than scan_file, so it may have to hand back where that did not
        fast = [e.key() for e in compact(batch.iter_file(path, scanner), fmt)]
    except batch.NeedExact:
        return None
    assert fast == [e.key() for e in compact(want, fmt)]
    s = scanner.stats
    assert (s.physical, s.logical) == (w.physical, w.logical)
    assert s.matched + s.runtime + s.timestamped + s.other + s.skipped == w.matched + w.runtime + w.timestamped + w.other
    assert s.matched <= w.matched
    assert [x.key() for x in s.gaps] == [x.key() for x in w.gaps], f"{path.name}: gaps differ (iter_file)"
    assert [x.key() for x in s.process_gaps] == [x.key() for x in w.process_gaps], \
        f"{path.name}: process gaps differ (iter_file)"
    assert s.unmatched == w.unmatched, f"{path.name}: unmatched lines differ (iter_file)"
    return got_stats


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_same_events_on_every_real_and_sample_log(path: Path) -> None:
    assert _assert_same(path, _format_of(path)) is not None, "no fallback expected on these logs"


def test_the_samples_really_skip_lines() -> None:
    """The differential test above is only worth something if the skipping path runs."""
    path = SAMPLE_LOGS / "prod-tp8-eagle3-01.log"
    if not path.exists():
        pytest.skip("sample_logs/ absent")
    stats = _assert_same(path, get_format("sglang"))
    assert stats is not None and stats.skipped > 0


# --- generated logs ----------------------------------------------------------------------

_TRAFFIC = (
    "[{d} {t} TP0] Decode batch, #running-req: 3, #token: 5000, token usage: 0.01, cuda graph: True, gen throughput (token/s): 88.4, #queue-req: 0",
    "[{d} {t} TP0] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0",
    '[{d} {t}] INFO:     10.0.0.7:41234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '[{d} {t}] INFO:     10.0.0.1:50000 - "GET /health HTTP/1.1" 200 OK',
    '[{d} {t}] INFO:     10.0.0.1:50000 - "GET /get_model_info HTTP/1.1" 200 OK',
    "[{d} {t} DP1 TP1] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, cuda graph: True",
    "[{d} {t}] Cache flushed successfully!",
    "[{d} {t} TP3] Some third-party warning without any rule word",
    # a request whose path holds another rule's literal: read as a request all the same
    '[{d} {t}] INFO:     10.0.0.7:41234 - "GET /v1/Error/Killed HTTP/1.1" 404 Not Found',
)
_STARTUP = (
    "[{d} {t}] server_args=ServerArgs(model_path='m', tp_size=2, disable_cuda_graph=False)",
    "[{d} {t} TP0] Init torch distributed begin.",
    "[{d} {t} TP1] Init torch distributed ends. mem usage=0.10 GB",
    "[{d} {t} TP0] Load weight begin. avail mem=78.5 GB",
    "[{d} {t} TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB, mem usage=16.2 GB.",
    "[{d} {t} TP0] KV Cache is allocated. #tokens: 100000, K size: 5.0 GB, V size: 5.0 GB",
    "[{d} {t} TP0] Memory pool end. avail mem=30.0 GB",
    "[{d} {t} TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=29.0 GB",
    "[{d} {t} TP0] Capture cuda graph end. Time elapsed: 12.5 s. mem usage=1.2 GB. avail mem=27.8 GB.",
    "[{d} {t} TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384",
    "[{d} {t}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "[{d} {t}] The server is fired up and ready to roll!",
    "[{d} {t}] Scheduler hit an exception: Traceback (most recent call last):",
    "Traceback (most recent call last):",
    '  File "/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "[{d} {t}] Received sigquit from a child process. It usually means the child failed.",
    "INFO:     Started server process [4242]",
    "INFO:     Application startup complete.",
    "Killed",
)
_ODD = (
    "",
    "   ",
    "junk \x07less text \ufffd",
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.5it/s]\r"
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.6it/s]",
    "Capturing batches (bs=4 avail_mem=3.1 GB):  40%|████      | 2/5 [00:01<00:01]\r"
    "[{d} {t} TP0] Capture cuda graph end. Time elapsed: 3.0 s. mem usage=0.5 GB",
    "2026-09-22T06:49:56.336833841Z [{d} {t}] Decode batch, #running-req: 1",
    "2026-09-22T06:49:57.000000000Z INFO:     10.0.0.7:1 - \"GET /health HTTP/1.1\" 200 OK",
    "sglang-1  | [{d} {t} TP0] Load weight end. avail mem=1 GB",
    "\x1b[32m[{d} {t}] The server is fired up\x1b[0m and ready to roll!",
    "(SchedulerActor pid=77) [{d} {t} TP0] Memory pool end. avail mem=30.0 GB [repeated 3x across cluster]",
    "[{d} {t}] Decode batch and HTTP/ in the same line",
    "[gpu_id=0] Init nccl begin.",
    "WARNING:root:something happened with Error in it",
    "    indented [{d} {t} TP0] Decode batch, #token: 4",
    "\u00a0(SchedulerActor pid=78) [{d} {t} TP1] Load weight begin. avail mem=70 GB",
    "\x1c[{d} {t} TP0] Decode batch, #token: 4",
    "[{d} {t}] INFO:     10.0.0.8:4 - \"GET /v1/caf\u00e9 HTTP/1.1\" 200 OK",
    "[{d} {t} TP0] Prefill batch with Exception text, #new-seq: 1",
)
# Stamps completed from earlier ones (time only, no year): the batch engine hands a log back
# when they follow skipped dated lines.
_STATEFUL = (
    "[{t} TP0] Load weight begin. avail mem=10 GB",
    "[{t}] Decode batch, #running-req: 1",
    "INFO {md} {t} [loader.py:12] Loading weights took 3.5 seconds",
)
# Behind a collector's stamp and the harness's prefix (`_WRAPPER`) alike: the engine's own
# header is read behind both.
_STATEFUL_SHAPE = re.compile(r"^(?:\S+Z )?(?:\[[-\d]+ [:.\d]+\] \[harness\.server_manager\] \[INFO\] \[worker_\d\] )?"
                             r"(?:\[\d\d:\d\d:\d\d|INFO \d\d-\d\d )")
# Lines without a clock of their own (glog, a launcher's warning, print output): behind a
# collector they carry only its stamp, and the first of them where a run may start is where
# it began (engine.CLOCK_OUTER_FIRST, once a line shows both clocks).
_UNTIMED = (
    "I0922 06:49:55.123456  1361 transfer_engine_impl.cpp:274] Topology discovery complete. Found 1 HCAs.",
    "/sglang/launch_server.py:31: UserWarning: 'python -m sglang.launch_server' is still supported, but "
    "'sglang serve' is the recommended entrypoint.",
    "  warnings.warn(",
    "loading the tokenizer",
)


def _render(template: str, moment: float, rng: random.Random) -> str:
    import time as _time

    whole = int(moment)
    date_text = _time.strftime("%Y-%m-%d", _time.gmtime(whole))
    time_text = _time.strftime("%H:%M:%S", _time.gmtime(whole))
    if rng.random() < 0.2:
        time_text += f".{rng.randint(0, 999):03d}"
    md = _time.strftime("%m-%d", _time.gmtime(whole))
    return template.replace("{d}", date_text).replace("{t}", time_text).replace("{md}", md)


# An unknown harness re-logging each line of one of two servers behind its own prefix
# (`formats.base.Format.layout`): its stamp is shaped like SGLang's own header.
_WRAPPER = "[{d} {t}] [harness.server_manager] [INFO] [worker_{n}] "


def _wrapped(line: str, moment: float, rng: random.Random) -> str:
    return _render(_WRAPPER.replace("{n}", str(rng.randint(0, 1))), moment, rng) + line


def _collected(line: str, moment: float, offset: float, rng: random.Random) -> str:
    """`line` behind `kubectl logs --timestamps`, whose clock runs `offset` s from the server's
    and stamps a line a little after the server wrote it."""
    import time as _time

    at = moment + offset + rng.random() * 0.05
    whole = int(at)
    return f"{_time.strftime('%Y-%m-%dT%H:%M:%S', _time.gmtime(whole))}.{int((at - whole) * 1e9):09d}Z {line}"


@st.composite
def _soups(draw: Any) -> list[str]:
    """A log of real line shapes: startups, runtime traffic (long stretches of it), odd lines."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    odd_rate = draw(st.sampled_from([0.0, 0.01, 0.1]))
    stateful_rate = draw(st.sampled_from([0.0, 0.0, 0.0, 0.02]))
    backwards = draw(st.booleans())  # clocks that step back now and then
    # a collector's stamp on (nearly) every line: its clock minus the server's, in seconds
    collector = draw(st.sampled_from([None, None, 0.0, 0.0, 7200.0, -3600.0]))
    wrapped = draw(st.sampled_from([False, False, True]))  # a harness's prefix on (nearly) every line
    lines: list[str] = []
    moment = 1_790_000_000.0 + rng.random() * 1e6
    for _block in range(draw(st.integers(1, 6))):
        kind = rng.random()
        count = rng.randint(1, 400)
        untimed = rng.randint(0, 3) if collector is not None else 0  # a process's first prints
        for i in range(count):
            moment += rng.random() * (2 if not backwards or rng.random() > 0.05 else -30)
            pool = _STARTUP if kind < 0.35 else _TRAFFIC
            if rng.random() < odd_rate:
                pool = _ODD
            if rng.random() < stateful_rate:
                pool = _STATEFUL
            if i < untimed or (collector is not None and rng.random() < 0.02):
                pool = _UNTIMED
            line = _render(rng.choice(pool), moment, rng)
            if wrapped and rng.random() < 0.95:
                line = _wrapped(line, moment, rng)
            if collector is not None and rng.random() < 0.95:
                line = _collected(line, moment, collector, rng)
            lines.append(line)
    return lines


def _write(tmp: Path, lines: Sequence[str], crlf: bool, last_newline: bool = True) -> Path:
    path = tmp / "soup.log"
    end = "\r\n" if crlf else "\n"
    tail = end.encode() if lines and last_newline else b""
    path.write_bytes(end.join(lines).encode("utf-8", errors="replace") + tail)
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_soups(), crlf=st.booleans(), last_newline=st.booleans())
def test_same_events_on_generated_logs(tmp_path: Path, lines: list[str], crlf: bool, last_newline: bool) -> None:
    if not any(line.strip() for line in lines):
        return
    path = _write(tmp_path, lines, crlf, last_newline)
    if _assert_same(path, get_format("sglang")) is None:
        assert any(_STATEFUL_SHAPE.match(line) for line in lines), "handed back without a reason"


def test_a_time_only_stamp_behind_the_harness_prefix_is_a_reason_to_hand_back(tmp_path: Path) -> None:
    """Found by hypothesis: a time-only stamp behind `_WRAPPER` after two unread dated lines (the
    second's own header follows a control byte, not a blank, so the scan leaves it unread) is
    the documented reason to hand a log back (`Clock.history_skipped`), which `_STATEFUL_SHAPE`
    did not see behind the harness's prefix: "handed back without a reason"."""
    lines = ["[2026-09-27 12:02:43] [harness.server_manager] [INFO] [worker_0] \x1b[32m[2026-09-27 12:02:43.253] "
             "The server is fired up\x1b[0m and ready to roll!",
             "[2026-09-27 12:03:57 TP0] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0",
             "[2026-09-27 12:03:59] [harness.server_manager] [INFO] [worker_0] \x1c[2026-09-27 12:03:59 TP0] Decode batch",
             "[2026-09-27 12:04:04.865] [harness.server_manager] [INFO] [worker_1] [12:04:04] Decode batch, #running-req: 1"]
    path = _write(tmp_path, lines, False, last_newline=False)
    fmt = get_format("sglang")
    with pytest.raises(batch.NeedExact, match="time-only"):
        _batch(path, fmt)
    assert _assert_same(path, fmt) is None
    assert [bool(_STATEFUL_SHAPE.match(line)) for line in lines] == [False, False, False, True]
    forced = parse_paths([str(path)], scanner="batch").as_contract()
    assert forced["runs"] == parse_paths([str(path)], scanner="incremental").as_contract()["runs"]


# --- generated vLLM logs: every line decorated -------------------------------------------
# vLLM puts a process tag in front of every line, coloured on a terminal
# (`\x1b[1;36m(APIServer pid=1)\x1b[0;0m `), and is mostly read behind `kubectl logs
# --timestamps`. Its own stamps have no year (`INFO 11-01 12:13:00`): the collector's, when
# there, gives it. Runtime traffic after `ready` is uvicorn's access lines, which have no
# clock at all.
_VLLM_STARTUP = (
    "INFO {md} {t} [api_server.py:1354] vLLM API server version 0.13.0",
    "INFO {md} {t} [utils.py:253] non-default args: {'model': 'Qwen/Qwen3-32B', 'tensor_parallel_size': 2}",
    "INFO {md} {t} [core.py:93] Initializing a V1 LLM engine (v0.13.0) with config: model='Qwen/Qwen3-32B'",
    "INFO {md} {t} [parallel_state.py:1208] world_size=2 rank=0 local_rank=0 "
    "distributed_init_method=tcp://127.0.0.1:41234 backend=nccl",
    "INFO {md} {t} [gpu_model_runner.py:3562] Starting to load model Qwen/Qwen3-32B...",
    "INFO {md} {t} [default_loader.py:308] Loading weights took 12.34 seconds",
    "INFO {md} {t} [gpu_model_runner.py:3659] Model loading took 30.5 GiB memory and 14.2 seconds",
    "INFO {md} {t} [gpu_worker.py:375] Available KV cache memory: 40.1 GiB",
    "INFO {md} {t} [core.py:259] init engine (profile, create kv cache, warmup model) took 60.2 seconds",
    "INFO {md} {t} [api_server.py:1425] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "WARNING {md} {t} [utils.py:12] a warning no rule knows",
    "INFO:     Started server process [1]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
    "ERROR {md} {t} [core.py:710] EngineCore failed to start.",
    "Traceback (most recent call last):",
    '  File "/vllm/v1/engine/core.py", line 701, in run_engine_core',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
)
_VLLM_TRAFFIC = (
    'INFO:     10.42.1.63:42737 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    'INFO:     10.42.1.63:42738 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    'INFO:     10.42.0.1:44497 - "GET /health HTTP/1.1" 200 OK',
    "INFO {md} {t} [loggers.py:236] Engine 000: Avg prompt throughput: 12.0 tokens/s, Avg generation "
    "throughput: 80.1 tokens/s, Running: 3 reqs",
    "INFO:     a uvicorn line no rule knows",
    "a print() line",
)
# Colour that is not a tag's: inside a message (splitting a rule literal), before a message's
# own parenthesis or after its closing one, a tag no reader takes, a second tag, the message
# glued to the tag; and lines the full reader changes in other ways.
_VLLM_ODD = (
    "INFO:     Application \x1b[1mstartup\x1b[0m complete.",
    "INFO:     Initializing a V1 LLM engine \x1b[1m(v0.13.0) with config",
    "INFO:     init engine (profile\x1b[0m, create kv cache) took 3.0 seconds",
    "INFO:     done (x)\x1b[0m Application startup complete.",
    "\x1b[1;36m(EngineCore_DP0 pid=2)\x1b[0;0m INFO {md} {t} [core.py:1] a second tag",
    "(Worker_TP1 pid=291) INFO:     Application startup complete.",
    "INFO {md} {t} [loggers.py:236] Engine 000: Avg prompt throughput: 1.0 tokens/s \x1b[0m",
    "\rLoading safetensors checkpoint shards:   6% Completed | 1/17 [00:02<00:42,  2.68s/it]",
    "Jan  1 10:00:00 host vllm[1]: INFO:     a journald stamp after the tag",
    "2026-01-01 10:00:00 INFO:     a local stamp after the tag",
    "2026-01-01T10:00:00Z INFO:     a second collector stamp",
    "[rank0]: Traceback (most recent call last):",
    "",
    "  INFO:     indented",
    "\u00a0INFO:     after a non-ASCII space",
)
_VLLM_TAGS = ("APIServer pid=1", "EngineCore_DP0 pid=217", "Worker_TP0 pid=290", "Worker_TP1 pid=291",
              "VllmWorker rank=1 pid=300", "pid=4, ip=10.0.0.1", "Worker PP1_TP0 pid=3", "API Server pid=1")


def _tagged(line: str, rng: random.Random) -> str:
    """`line` as vLLM prints it: behind a process tag, coloured on a terminal (nearly always)."""
    x = rng.random()
    if x < 0.08:
        return line
    tag = f"({rng.choice(_VLLM_TAGS[:3] if rng.random() < 0.8 else _VLLM_TAGS)})"
    if x < 0.9:
        codes = ("\x1b[1;36m", "\x1b[0;0m") if rng.random() < 0.95 else ("\x1b[36m", "\x1b[0m")
        tag = f"{codes[0]}{tag}{codes[1]}"
    return f"{tag}{' ' if rng.random() < 0.97 else ''}{line}"


@st.composite
def _vllm_soups(draw: Any) -> list[str]:
    """A vLLM log: start-ups reaching `ready`, long stretches of access lines after it, odd lines."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    odd_rate = draw(st.sampled_from([0.0, 0.01, 0.05]))
    collector = draw(st.sampled_from([None, 0.0, 0.0, 0.0, 7200.0, -3600.0]))
    backwards = draw(st.booleans())
    wrapped = draw(st.sampled_from([False, False, True]))
    lines: list[str] = []
    moment = 1_790_000_000.0 + rng.random() * 3e7
    for _block in range(draw(st.integers(1, 6))):
        startup = rng.random() < 0.4
        count = rng.randint(1, 40) if startup else rng.randint(1, 400)
        untimed = rng.randint(0, 3) if collector is not None else 0
        for i in range(count):
            moment += rng.random() * (2 if not backwards or rng.random() > 0.05 else -30)
            if startup:
                # mostly in order, so that runs reach `ready`
                template = _VLLM_STARTUP[min(len(_VLLM_STARTUP) - 1, i * 14 // count)] if rng.random() < 0.7 \
                    else rng.choice(_VLLM_STARTUP)
            else:
                template = rng.choice(_VLLM_TRAFFIC)
            if rng.random() < odd_rate:
                template = rng.choice(_VLLM_ODD)
            if i < untimed or (collector is not None and rng.random() < 0.02):
                template = rng.choice(_UNTIMED)
            line = _tagged(_render(template, moment, rng), rng)
            if wrapped and rng.random() < 0.95:
                line = _wrapped(line, moment, rng)
            if collector is not None and rng.random() < 0.95:
                line = _collected(line, moment, collector, rng)
            lines.append(line)
    return lines


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_vllm_soups(), crlf=st.booleans(), last_newline=st.booleans())
def test_same_events_on_generated_vllm_logs(tmp_path: Path, lines: list[str], crlf: bool, last_newline: bool) -> None:
    """Decorated lines (a collector's stamp, a coloured process tag) no longer make a line a
    candidate: both engines still agree, and no stamp of vLLM's makes the batch engine give up."""
    if not any(line.strip() for line in lines):
        return
    path = _write(tmp_path, lines, crlf, last_newline)
    assert _assert_same(path, get_format("vllm")) is not None, "handed back"


def _vllm_file(tmp_path: Path) -> Path:
    """A log as the throughput benchmark writes them: vLLM 0.13 behind kubectl, padded to
    200 kB with traffic after `ready`."""
    from firedup.synth.bulk import write_many

    made = write_many(tmp_path / "many", n=8, seed=0)
    return next(p for p in made if p.stem.endswith("-vllm") and "-prod-" in p.stem)


def test_a_decorated_vllm_log_is_read_by_the_batch_engine_and_its_traffic_skipped(tmp_path: Path) -> None:
    path = _vllm_file(tmp_path)
    raw = path.read_bytes()
    assert raw.startswith(b"20") and b"\x1b[1;36m(APIServer pid=1)\x1b[0;0m " in raw, "kubectl stamps, coloured tags"
    fmt = get_format("vllm")
    assert _assert_same(path, fmt) is not None, "handed back"
    # what parse runs leaves the access lines after `ready` unread: nearly the whole file
    scanner = batch.new_scanner(fmt, file_date=file_date(Source(str(path), path)))
    list(batch.iter_file(path, scanner))
    assert scanner.stats.skipped > scanner.stats.physical * 0.8
    # parse takes it too (its head is not handed to the incremental engine), and says the same
    forced = parse_paths([str(path)], scanner="batch").as_contract()
    plain = parse_paths([str(path)], scanner="incremental").as_contract()
    assert forced["runs"] == plain["runs"] and forced["runs"][0]["outcome"] == "ready"
    assert forced["sources"][0]["lines"]["skipped"] > 0


# Lines of a vLLM log and whether the batch engine must read them (a rule literal, or what the
# full reader does to them may change their meaning); the decorations themselves do not count.
_K = "2026-11-01T12:15:05.344722748Z "
_TAG = "\x1b[1;36m(APIServer pid=1)\x1b[0;0m "
_DECORATED = [
    (f'{_K}{_TAG}INFO:     10.42.1.63:42737 - "POST /v1/chat/completions HTTP/1.1" 200 OK', False),
    (f"{_K}{_TAG}INFO:     a uvicorn line", False),
    (f"{_K}\x1b[1;36m(Worker_TP0 pid=290)\x1b[0;0m a print", False),
    (f"{_K}\x1b[1;36m(VllmWorker rank=1 pid=300)\x1b[0;0m a print", False),
    ("\x1b[1;36m(EngineCore_DP0 pid=217)\x1b[0;0m a print", False),
    (f"{_K}(Worker_TP1 pid=291) a print", False),
    ("(pid=4, ip=10.0.0.1) a print", False),
    (f"{_K}a print", False),
    ("2026-11-01T12:15:05Z a print", False),
    ("a print", False),
    (f"{_K}{_TAG}INFO 11-01 12:15:05 [loggers.py:236] Engine 000: Avg prompt throughput: 1.0 tokens/s", True),
    (f"{_K}\x1b[1;36m(APIServer pid=1)\x1b[0;0mINFO 11-01 12:15:05 [x.py:1] glued to the tag", True),
    (f"{_K}(APIServer pid=1) INFO 11-01 12:15:05 [x.py:1] year-less", True),
    (f"{_K}{_TAG}INFO:     Application startup complete.", True),
    (f"{_K}{_TAG}INFO:     Application \x1b[1mstartup\x1b[0m complete.", True),
    (f"{_K}{_TAG}INFO:     a V1 LLM engine \x1b[1m(v0.13.0)", True),
    (f"{_K}{_TAG}INFO:     (x)\x1b[0m a print", True),
    (f"{_K}{_TAG}a print \x1b[0m", True),
    (f"{_K}\x1b[1;36m(API Server pid=1)\x1b[0;0m a print", True),
    (f"{_K}\x1b[1;36m(APIServer pid=1) a print", True),
    (f"{_K}(APIServer pid=1)\x1b[0;0m a print", True),
    (f"{_K}{_TAG}\x1b[1;36m(Worker_TP0 pid=290)\x1b[0;0m a print", True),
    (f"{_K}{_TAG}(Worker_TP0 pid=290) a print", True),
    (f"{_K}{_TAG}2026-11-01T12:15:05Z a print", True),
    (f"{_K}{_TAG}Nov  1 12:15:05 host vllm[1]: a print", True),
    (f"{_K}Nov  1 12:15:05 host vllm[1]: a print", True),
    (f"{_K}{_TAG} a print", True),
    (f"{_K}{_TAG}\u00a0a print", True),
    (f"2026-11-01T12:15:05+00:00 {_TAG}a print", True),
    (f"2026-11-01T12:15:05.1Z  {_TAG}a print", True),
    (f"x {_K}{_TAG}a print", True),
    (f"{_K}\x1b[1;36m\x1b[1m(APIServer pid=1)\x1b[0;0m a print", True),
    (f"{_K}{_TAG}[1;36m a print", True),
    (f"{_K}\x1b(B{_TAG}a print", True),
    (f"{_K}{_TAG}\rLoading safetensors checkpoint shards:   6% Completed | 1/17 [00:02<00:42,  2.68s/it]", True),
    ("2026-11-01 12:15:05 a print", True),
    ("Nov  1 12:15:05 host vllm[1]: a print", True),
    ("sglang-1  | a print", True),
]


def test_decorations_alone_do_not_make_a_vllm_line_a_candidate(tmp_path: Path) -> None:
    path = tmp_path / "decorated.log"
    path.write_bytes("\n".join(line for line, _ in _DECORATED).encode() + b"\n")
    pre = prefilter.for_format(get_format("vllm"))
    found = windows.scan_window(path.read_bytes(), pre, 0)
    read = {newlines + 1 for _start, _end, newlines, _patterns in found.candidates}
    for number, (line, want) in enumerate(_DECORATED, start=1):
        assert (number in read) == want, f"line {number} {'not ' if want else ''}read: {line!r}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_soups())
def test_compaction_never_changes_a_timeline(tmp_path: Path, lines: list[str]) -> None:
    if not any(line.strip() for line in lines):
        return
    path = _write(tmp_path, lines, False)
    _assert_compaction_is_invisible(path, get_format("sglang"))


def _assert_compaction_is_invisible(path: Path, fmt: Format) -> None:
    events, _stats, clock = scan(fmt, read_lines(Source(str(path), path)))
    full = build_timeline(events, path.name, fmt, clock.date_source)
    # build_run annotates event fields: compact a fresh copy
    events2, _stats2, clock2 = scan(fmt, read_lines(Source(str(path), path)))
    compacted = list(compact(events2, fmt))
    assert len(compacted) <= len(events2)
    short = build_timeline(compacted, path.name, fmt, clock2.date_source)
    assert [r.as_contract() for r in short] == [r.as_contract() for r in full]


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_compaction_never_changes_a_real_timeline(path: Path) -> None:
    _assert_compaction_is_invisible(path, _format_of(path))


def test_a_stepped_back_access_line_compaction_drops_changes_no_warning(tmp_path: Path) -> None:
    """Found by hypothesis: a probe dated 63 s before the run's first time, between two access
    lines `compact` keeps, is left out by it; the timeline's "the clock stepped back" warning
    named that line, so the run said it read in full and not once compacted."""
    lines = ["[2026-09-28 19:14:55 DP1 TP1] Decode batch, #running-req: 1, #token: 10, token usage: 0.00",
             '[2026-09-28 19:14:38] INFO:     10.0.0.1:50000 - "GET /get_model_info HTTP/1.1" 200 OK',
             '[2026-09-28 19:13:52] INFO:     10.0.0.1:50000 - "GET /get_model_info HTTP/1.1" 200 OK',
             '[2026-09-28 19:13:55] INFO:     10.0.0.7:41234 - "POST /v1/chat/completions HTTP/1.1" 200 OK']
    path = _write(tmp_path, lines, False)
    fmt = get_format("sglang")
    events, _stats, _clock = scan(fmt, read_lines(Source(str(path), path)))
    assert 3 not in [e.line for e in compact(events, fmt)]
    _assert_compaction_is_invisible(path, fmt)


def test_compaction_drops_the_bulk_of_runtime_access_lines(tmp_path: Path) -> None:
    """2,000 requests after ready leave a handful of access events, and the first request is kept."""
    lines = [_render(t, 1_790_000_000 + i, random.Random(i)) for i, t in enumerate(_STARTUP[:12])]
    lines += [f'[2026-09-22 07:{i // 60 % 60:02d}:{i % 60:02d}] INFO:     10.0.0.7:{i} - "POST /generate HTTP/1.1" 200 OK'
              for i in range(2000)]
    path = _write(tmp_path, lines, False)
    fmt = get_format("sglang")
    events, _stats, _clock = scan(fmt, read_lines(Source(str(path), path)))
    kept = [e for e in compact(events, fmt) if e.name == "http.access"]
    assert sum(e.name == "http.access" for e in events) == 2000
    assert 2 <= len(kept) <= 6
    assert kept[0].line == 13 and kept[-1].line == 2012
    _assert_compaction_is_invisible(path, fmt)


# --- falling back ------------------------------------------------------------------------


def test_time_only_stamp_after_skipped_dated_lines_hands_the_file_back(tmp_path: Path) -> None:
    """Days of time-only lines depend on the latest dated stamp; skipped lines may hold it."""
    # after `ready`: during a start-up the batch engine reads every line (silences are measured)
    lines = ["[2026-01-01 10:00:00] server_args=ServerArgs(tp_size=1)",
             "[2026-01-01 10:00:00] The server is fired up and ready to roll!"]
    lines += [f"[2026-01-01 {h:02d}:00:00 TP0] Decode batch, #token: 1" for h in (23, 11, 12)]
    lines += ["[00:30:00 TP0] Load weight begin. avail mem=3 GB"]
    path = _write(tmp_path, lines, False)
    fmt = get_format("sglang")
    with pytest.raises(batch.NeedExact):
        _batch(path, fmt)
    # parse hands it to the incremental engine and says the same as it
    forced = parse_paths([str(path)], scanner="batch").as_contract()
    plain = parse_paths([str(path)], scanner="incremental").as_contract()
    assert forced["runs"] == plain["runs"]
    assert "skipped" not in forced["sources"][0]["lines"]


def test_a_year_less_stamp_after_unread_access_lines_hands_the_file_back(tmp_path: Path) -> None:
    """Found by hypothesis: `scan_file` reads every access line, `iter_file` (what parse runs)
    leaves them unread, so only the latter may not know the latest date a year-less stamp
    needs. It hands the file back, and parse reads it with the incremental engine."""
    request = '[2026-09-23 14:34:{}] INFO:     10.0.0.7:41234 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    # after `ready`: during a start-up the batch engine reads every line (silences are measured)
    lines = ["[2026-09-23 14:34:19] The server is fired up and ready to roll!", request.format("19.824"),
             "[2026-09-23 14:34:22 DP1 TP1] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, cuda graph: True",
             request.format(23), request.format(25),
             "INFO 09-23 14:34:25.761 [loader.py:12] Loading weights took 3.5 seconds"]
    path = _write(tmp_path, lines, False)
    fmt = get_format("sglang")
    assert _batch(path, fmt)[0] == _incremental(path, fmt)[0]  # scan_file read the access lines: no hand-back
    with pytest.raises(batch.NeedExact, match="year-less"):
        list(batch.iter_file(path, batch.new_scanner(fmt)))
    forced = parse_paths([str(path)], scanner="batch").as_contract()
    assert forced == parse_paths([str(path)], scanner="incremental").as_contract()


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_overlong_last_line_is_left_to_the_incremental_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 jobs: int) -> None:
    """The incremental engine names the line in its error; the batch engine hands it over,
    also when a worker process finds the line."""
    monkeypatch.setattr(windows, "scan_jobs", lambda size: jobs)
    path = tmp_path / "tail.log"
    path.write_bytes(b"[2026-01-01 10:00:00] The server is fired up and ready to roll!\n" + b"y" * (9 << 20))
    with pytest.raises(batch.NeedExact):
        _batch(path, get_format("sglang"))
    result = parse_paths([str(path)], scanner="batch")
    assert [(e.line, e.reason) for e in result.errors] == [(2, "a line longer than 8 MB: not a line-oriented text log")]


def test_parse_gives_the_same_contract_with_either_engine() -> None:
    logs = [p for p in LOGS if p.suffix == ".log"][:40]
    if not logs:
        pytest.skip("no logs")
    paths = [str(p) for p in logs]
    forced = parse_paths(paths, scanner="batch").as_contract()
    plain = parse_paths(paths, scanner="incremental").as_contract()
    assert forced["runs"] == plain["runs"]
    assert forced["errors"] == plain["errors"]


def test_line_of_the_batch_engine_is_the_line_of_the_file(tmp_path: Path) -> None:
    """Line numbers counted independently: the ready line's number is its index in the file."""
    lines = [_render(_TRAFFIC[i % 3], 1_790_000_000 + i, random.Random(i)) for i in range(5000)]
    ready_at = 3217
    lines[ready_at - 1] = "[2026-09-22 08:00:00] The server is fired up and ready to roll!"
    path = _write(tmp_path, lines, False)
    events, stats, _clock = _batch(path, get_format("sglang"))
    assert [e.line for e in events if e.name == "ready"] == [ready_at]
    assert stats.physical == 5000
    assert isinstance(events[0], Event) and all(isinstance(e.line, int) for e in events)


def _startups_and_traffic(seed: int, blocks: int, startup_every: int, lines_per_block: int) -> list[str]:
    """Blocks of startup lines between blocks of traffic (and odd lines), one second apart at most."""
    rng = random.Random(seed)
    lines = []
    moment = 1_790_000_000.0
    for block in range(blocks):
        pool = _STARTUP if block % startup_every == 0 else _TRAFFIC + _ODD[:4]
        for _ in range(lines_per_block):
            moment += rng.random()
            lines.append(_render(rng.choice(pool), moment, rng))
    return lines


def test_windows_scanned_in_worker_processes_give_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Big files are scanned window by window by forked processes while this one feeds the
    engine: small windows here make a generated log many of them."""
    path = _write(tmp_path, _startups_and_traffic(seed=7, blocks=12, startup_every=3, lines_per_block=300), False)
    monkeypatch.setattr(windows, "WINDOW", 4096)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 2)
    assert path.stat().st_size > 40 * 4096
    stats = _assert_same(path, get_format("sglang"))
    assert stats is not None and stats.skipped > 0


def test_windows_scanned_in_small_pieces_give_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each window is scanned piece by piece, cut at line ends (and a line longer than a
    piece is one piece): tiny pieces cut nearly every line apart from the next."""
    path = _write(tmp_path, _startups_and_traffic(seed=11, blocks=6, startup_every=2, lines_per_block=200), False)
    monkeypatch.setattr(windows, "_SCAN_PIECE", 97)
    stats = _assert_same(path, get_format("sglang"))
    assert stats is not None and stats.skipped > 0


def test_a_head_of_progress_bar_lines_stays_with_the_batch_engine(tmp_path: Path) -> None:
    """Bars (here one per line, as tqdm writes them when not on a terminal) are not on every
    line of a file: the traffic after them may still be skipped."""
    bars = [f"Loading safetensors checkpoint shards:  {i % 100}% Completed | {i % 100}/100 [00:0{i % 10}<00:01, 1.5it/s]"
            for i in range(300)]
    path = _write(tmp_path, [*bars, *_startups_and_traffic(seed=3, blocks=2, startup_every=1, lines_per_block=100)], False)
    sample, normalised = batch.read_head(path, 2000, refuse_mostly_flagged=True)
    assert sample == batch.head_sample(path) and len(normalised) >= 300


def test_a_head_of_prefixed_lines_goes_to_the_incremental_engine(tmp_path: Path) -> None:
    """Behind `kubectl logs --timestamps` every line of an SGLang log needs the full reader (a
    line with two clocks sets the offset between them), which the incremental engine is quicker
    at: parse hands such a file over before normalising it. A vLLM log behind kubectl stays
    with the batch engine, which leaves its decorated traffic unread."""
    rng = random.Random(5)
    lines = _startups_and_traffic(seed=3, blocks=2, startup_every=1, lines_per_block=100)
    prefixed = _write(tmp_path, [_collected(line, 1_790_000_000 + i, 0.0, rng) for i, line in enumerate(lines)], False)
    decorated = SAMPLE_LOGS / "vllm-tp2-eager.log"
    plain = SAMPLE_LOGS / "prod-tp8-eagle3-01.log"
    assert decorated.read_text().startswith("20"), "this sample is stamped by kubectl"
    with pytest.raises(batch.NeedExact, match="most lines"):
        batch.read_head(prefixed, 2000, refuse_mostly_flagged=True)
    assert batch.read_head(prefixed, 2000)[0] == batch.head_sample(prefixed)
    for path in (decorated, plain):
        assert batch.read_head(path, 2000, refuse_mostly_flagged=True)[0] == batch.head_sample(path)
    for path, read_by_batch in ((prefixed, False), (decorated, True)):
        forced = parse_paths([str(path)], scanner="batch").as_contract()
        assert forced["runs"] == parse_paths([str(path)], scanner="incremental").as_contract()["runs"]
        assert ("skipped" in forced["sources"][0]["lines"]) is read_by_batch
    assert forced["runs"][0]["outcome"] == "ready"


def test_both_engines_carry_the_ray_actor_pid_and_read_through_its_repeat_summary() -> None:
    """Several engines in one Ray log are told apart by the actor's pid: both engines give it
    on every event, and Ray's "[repeated Nx across cluster]" does not hide a milestone."""
    path = Path(__file__).resolve().parent / "fixtures" / "logs2026" / "sglang_ray_two_engines_interleaved.log"
    fmt = get_format("sglang")
    assert _assert_same(path, fmt) is not None
    events = [e for e in _batch(path, fmt)[0] if e.name == "dist_init.begin"]
    assert [(e.line, e.rank, e.pid, e.fields.get("repeated")) for e in events] == [
        (3, "TP0", 26107, None), (4, "TP0", 26103, None), (10, "TP1", 26107, 3)]


def test_compiled_scans_are_cached_and_a_broken_cache_is_compiled_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import hyperscan

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    patterns = [prefilter.to_line_end(p) for p in ("fired up", r"Load weight \w+")]
    text = b"[x] Load weight begin\n[x] The server is fired up and ready to roll!\nnothing\n"

    def matches(database: object) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        database.scan(text, match_event_handler=lambda i, start, stop, flags, ctx: found.append((i, stop)))  # type: ignore[attr-defined]
        return sorted(found)

    want = [(0, text.index(b"\nnothing")), (1, text.index(b"\n[x] The"))]  # each at its line's end
    assert matches(prefilter.compile_database(patterns, hyperscan.HS_FLAG_MULTILINE)) == want
    (cached,) = (tmp_path / "firedup").glob("hyperscan-*.db")
    compile_for_real = hyperscan.Database

    def no_compiling() -> object:
        raise AssertionError("compiled again instead of loading the cached database")

    monkeypatch.setattr(hyperscan, "Database", no_compiling)
    assert matches(prefilter.compile_database(patterns, hyperscan.HS_FLAG_MULTILINE)) == want
    monkeypatch.setattr(hyperscan, "Database", compile_for_real)
    cached.write_bytes(b"not a database" * 100)
    assert matches(prefilter.compile_database(patterns, hyperscan.HS_FLAG_MULTILINE)) == want
    assert cached.read_bytes() != b"not a database" * 100  # written again
    # a file under the same name compiled from other patterns (a checksum's collision, another
    # firedup's table) is a database too, but not this one: its header says so, and it is not used
    other = [prefilter.to_line_end(p) for p in ("nothing",)]
    prefilter.compile_database(other, hyperscan.HS_FLAG_MULTILINE)
    (other_file,) = set((tmp_path / "firedup").glob("hyperscan-*.db")) - {cached}
    other_file.replace(cached)
    assert matches(prefilter.compile_database(patterns, hyperscan.HS_FLAG_MULTILINE)) == want


def test_a_request_whose_path_holds_another_rules_literal_is_still_a_request(tmp_path: Path) -> None:
    """The access rule's literal is not in the scan: a line found by another rule's literal
    ("Error") must still be tried as a request (it once crashed the batch engine instead)."""
    path = tmp_path / "err.log"
    path.write_text("[2026-01-01 10:00:00] server_args=ServerArgs(tp_size=1)\n"
                    '[2026-01-01 10:00:01] INFO:     10.0.0.1:5 - "GET /Error HTTP/1.1" 500 Internal Server Error\n'
                    "[2026-01-01 10:00:02] The server is fired up and ready to roll!\n")
    result = parse_paths([str(path)], scanner="batch")
    assert result.errors == []
    assert [(m.name, m.line) for m in result.runs[0].milestones] == [("server_args", 1), ("http.first_request", 2),
                                                                     ("ready", 3)]


# --- a head read until the sniff is settled ---------------------------------------------------


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_a_head_read_until_settled_sniffs_and_dates_as_the_whole_head(path: Path) -> None:
    """`read_head(until_settled=True)` may stop early: only where no later line could change
    the format sniffed or the engine version's release that dates the log."""
    whole, _ = batch.read_head(path, 2000)
    early, normalised = batch.read_head(path, 2000, until_settled=True)
    assert whole.startswith(early)
    fmt = batch.sniff_format(whole)
    assert batch.sniff_format(early) is fmt
    if fmt is not None:
        assert fmt.release_hint(early) == fmt.release_hint(whole)
    assert all(number <= early.count("\n") + 1 for number in normalised)


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize("until_settled", [False, True])
def test_the_head_hands_on_the_sniff_literals_of_its_sample(path: Path, until_settled: bool) -> None:
    """The sniff literals `read_head` collects piece by piece are those one scan of the sample
    finds: `sniff_format` takes them instead of scanning the head again."""
    literals: set[str] = set()
    sample, _ = batch.read_head(path, 2000, until_settled=until_settled, literals=literals)
    assert literals == batch._sniff_found(sample)
    assert batch.sniff_format(sample, literals) is batch.sniff_format(sample)


def test_a_vllm_head_settles_after_its_first_lines(tmp_path: Path) -> None:
    """The benchmark's vLLM log behind kubectl: 1,400 coloured lines, each normalised to sniff
    before; the sniff settles on the first hundred (the version line is the first)."""
    from firedup.synth.bulk import write_many

    paths = write_many(tmp_path, n=12, seed=3, target_bytes=60_000)
    vllm_log = next(p for p in paths if p.stem.endswith("-vllm"))
    early, normalised = batch.read_head(vllm_log, 2000, until_settled=True)
    whole, _ = batch.read_head(vllm_log, 2000)
    assert early.count("\n") + 1 == 100 < whole.count("\n") + 1
    assert len(normalised) <= 100
    # the same runs either way (line counts differ as documented: unread lines are "skipped")
    assert parse_paths([str(vllm_log)], scanner="batch").as_contract()["runs"] == \
        parse_paths([str(vllm_log)], scanner="incremental").as_contract()["runs"]


def _vllm_lines(count: int, version_at: int | None) -> list[str]:
    lines = []
    for i in range(count):
        if i == version_at:
            lines.append("INFO 11-01 12:13:00 [api_server.py:1354] vLLM API server version 0.13.0")
        else:
            lines.append(f"INFO 11-01 12:13:{i % 60:02d} [core.py:71] Initializing a V1 LLM engine (v) with "
                         f"config: model='m', tensor_parallel_size=1, enforce_eager=True, step={i}")
    return lines


def test_a_head_does_not_settle_before_the_line_that_dates_the_log(tmp_path: Path) -> None:
    """Settled sniff, but the version line (which dates a year-less log) comes later: reading
    goes on until it, so the hint is the whole head's."""
    path = tmp_path / "late-version.log"
    path.write_text("\n".join(_vllm_lines(400, version_at=250)) + "\n")
    early, _ = batch.read_head(path, 2000, until_settled=True)
    assert "vLLM API server version 0.13.0" in early
    fmt = get_format("vllm")
    assert fmt.release_hint(early) == fmt.release_hint(batch.read_head(path, 2000)[0]) is not None


def test_a_head_without_a_decisive_lead_is_read_whole(tmp_path: Path) -> None:
    """A lead that another format's literals could still overtake does not settle."""
    text = "\n".join(["[2026-11-01 00:00:01 TP0] Init torch distributed begin."] * 50 + ["plain line"] * 300)
    assert batch.settled_format(text) is None
    path = tmp_path / "sglang-ish.log"
    path.write_text(text + "\n")
    early, _ = batch.read_head(path, 2000, until_settled=True)
    assert early == batch.read_head(path, 2000)[0]


def test_no_sniff_literal_spans_lines() -> None:
    """`read_head` finds the sniff literals piece by piece, on the new lines only: exact only
    while no literal (formats' or foreign engines') holds a newline."""
    from firedup.formats import sniff_literals

    assert sniff_literals() and not [literal for literal in sniff_literals() if "\n" in literal]


def test_the_head_flags_the_lines_the_scan_marks_in_every_piece(tmp_path: Path) -> None:
    """The lines to normalise are found by counting newlines up to each match: coloured and
    redrawn lines in the first piece and in later ones come back normalised, by number."""
    lines = [f"[2026-11-01 00:00:{i % 60:02d}] plain line {i}" for i in range(450)]
    for at in (0, 99, 100, 101, 250, 449):
        lines[at] = f"\x1b[32m[2026-11-01 00:00:01] coloured {at}\x1b[0m"
    lines[300] = "Loading:  50%|#####     | 2/4 [00:01<00:01]\rLoading: 100%|##########| 4/4 [00:02<00:00]"
    path = tmp_path / "marked.log"
    path.write_text("\n".join(lines) + "\n")
    sample, normalised = batch.read_head(path, 2000, until_settled=True)  # pieces: 100, 200, 400, 450 lines
    assert sorted(normalised) == [1, 100, 101, 102, 251, 301, 450]
    assert sample.split("\n")[101] == "[2026-11-01 00:00:01] coloured 101"
    assert [line.text for line in normalised[301]] == ["Loading: 100%|##########| 4/4 [00:02<00:00]"]


def test_the_access_line_search_finds_lines_with_and_without_kubectls_stamp() -> None:
    """`_spanning_access` reads each unread access line's stamp from this one search: kubectl's
    at the line's start from its groups, any other from the normalised line (`_stamp_key`)."""
    pre = prefilter.for_format(get_format("vllm"))
    assert pre.access_line is not None
    tag = "\x1b[1;36m(APIServer pid=1)\x1b[0;0m "
    access = 'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK'
    stamped = pre.access_line.match(f"2026-11-01T12:14:42.437607045Z {tag}{access}".encode())
    assert stamped is not None and (stamped[1], stamped[2]) == (b"2026-11-01T12:14:42", b"437607045")
    bare = pre.access_line.match(f"{tag}{access}".encode())
    assert bare is not None and bare[1] is None and bare.end() == len(f"{tag}{access}".encode())
    assert pre.access_line.match(f"{tag}INFO 11-01 12:14:42 [core.py:1] no request".encode()) is None
    # a line with the literal twice, or a stamp-like text inside: still the whole line, and the
    # stamp at its start (the search is greedy and steps back to the last literal)
    lines = [f"2026-11-01T12:14:43Z {tag}{access} HTTP/2 2026-11-01T12:14:44Z", f"{tag}{access}",
             "2026-11-01T12:14:45.5Z plain line", f"  2026-11-01T12:14:46.123Z {access}"]
    text = "\n".join(lines).encode()
    found = [(m.span(), m.groups()) for m in pre.access_line.finditer(text)]
    starts = [sum(len(line) + 1 for line in lines[:i]) for i in range(len(lines))]
    assert found == [((starts[0], starts[0] + len(lines[0])), (b"2026-11-01T12:14:43", None)),
                     ((starts[1], starts[1] + len(lines[1])), (None, None)),
                     ((starts[3], starts[3] + len(lines[3])), (b"2026-11-01T12:14:46", b"123"))]


_STAMPED_ACCESS = '{stamp} \x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK'


@settings(max_examples=60, deadline=None)
@given(stamps=st.lists(st.tuples(st.integers(0, 3), st.text("0123456789", max_size=9).filter(lambda f: f != "")
                                 | st.just("")), min_size=0, max_size=40),
       chunk=st.sampled_from([1, 2, 3, 4096]))
def test_earliest_and_latest_are_the_first_of_the_stable_sorts(stamps: list[tuple[int, str]], chunk: int) -> None:
    """`_earliest_and_latest` keys every access line a chunk at a time with C-level calls: it
    picks what the per-line path's stable sorts pick first, ties and fractions of every length
    (cut to six digits, padded) and chunk edges included."""
    lines = [_STAMPED_ACCESS.format(stamp=f"2026-11-01T12:00:0{second}{'.' + frac if frac else ''}Z")
             for second, frac in stamps]
    text = "\n".join(lines).encode()
    pre = prefilter.for_format(get_format("vllm"))
    assert pre.access_line is not None
    keyed = [(batch._kubectl_key(m[1], m[2]), *m.span()) for m in pre.access_line.finditer(text)]
    assert len(keyed) == len(lines)
    want = ([] if not keyed else
            [sorted(keyed, key=lambda k: k[0])[0], sorted(keyed, key=lambda k: k[0], reverse=True)[0]])
    old = batch._CHUNK_LINES
    batch._CHUNK_LINES = chunk
    try:
        assert batch._earliest_and_latest(pre.access_line.finditer(text)) == want
        # a line without kubectl's stamp at its start: its stamp is read from the normalised line
        bare = "\n".join([*lines, _STAMPED_ACCESS.format(stamp="").lstrip()]).encode()
        assert batch._earliest_and_latest(pre.access_line.finditer(bare)) is None
    finally:
        batch._CHUNK_LINES = old


@pytest.mark.parametrize("change", ["invalid earliest", "invalid latest", "unstamped line", "none"])
def test_access_stamps_that_do_not_count_are_read_line_by_line(tmp_path: Path, change: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's vLLM log behind kubectl, one access line after ready changed: an
    earliest or latest stamp that is no time (month 0 or 13), or a line without kubectl's stamp, sends
    its stretch to the per-line path, which looks on in the stamps' order; both engines agree."""
    path = _vllm_file(tmp_path)
    lines = path.read_bytes().split(b"\n")
    ready = next(i for i, line in enumerate(lines) if b"Application startup complete" in line)
    access = [i for i, line in enumerate(lines) if i > ready and b"HTTP/1.1" in line]
    assert len(access) > 50
    if change == "invalid earliest":
        lines[access[20]] = b"2026-00-01T00:00:00Z" + lines[access[20]][lines[access[20]].index(b"Z ") + 1:]
    elif change == "invalid latest":
        lines[access[20]] = b"2026-13-31T23:59:59Z" + lines[access[20]][lines[access[20]].index(b"Z ") + 1:]
    elif change == "unstamped line":
        lines[access[20]] = lines[access[20]][lines[access[20]].index(b"Z ") + 2:]
    path.write_bytes(b"\n".join(lines))
    calls = []
    per_line = batch._State._spanning_access_lines

    def counted(self: Any, *args: Any) -> set[tuple[int, int]]:
        calls.append(args)
        return per_line(self, *args)

    monkeypatch.setattr(batch._State, "_spanning_access_lines", counted)
    assert _assert_same(path, get_format("vllm")) is not None, "handed back"
    assert bool(calls) == (change != "none")


# --- an unknown wrapper ------------------------------------------------------------------------

WRAPPED = Path(__file__).resolve().parent / "fixtures" / "wrapped"


@pytest.mark.parametrize("name", ["two_servers.log", "two_vllm_servers.log"])
def test_same_events_and_runs_behind_an_unknown_wrapper(name: str) -> None:
    """Two servers behind a harness's prefix: both engines find the engine's header behind it,
    tag each event with the wrapper's source, and parse the same two runs."""
    path = WRAPPED / name
    fmt = _format_of(path)
    assert _assert_same(path, fmt) is not None, "handed back"
    events, _, _ = _batch(path, fmt)
    assert {e.wrapper for e in events if e.name == "server_args"} == {"worker_0", "worker_1"}
    runs = {scanner: parse_paths([str(path)], scanner=scanner).as_contract()["runs"]
            for scanner in ("batch", "incremental")}
    assert runs["batch"] == runs["incremental"] and len(runs["batch"]) == 2


def test_a_time_only_header_behind_a_wrapper_is_read_in_order(tmp_path: Path) -> None:
    """A stamp without a date behind a wrapper depends on the dated lines before it: the scan
    marks it wherever it starts, so the batch engine never skips it (or hands the file back)."""
    lines = ["[2026-11-01 23:59:58 TP0] Load weight begin. avail mem=70 GB"]
    lines += [f"[2026-11-01 23:59:59] [harness] [INFO] [worker_0] [23:59:{59 if i < 5 else 58}] plain line {i}"
              for i in range(10)]
    lines += ["[00:00:01] [harness] [INFO] [worker_0] [00:00:01 TP0] Load weight end. avail mem=60 GB"]
    path = tmp_path / "wrapped-time-only.log"
    path.write_text("\n".join(lines) + "\n")
    _assert_same(path, get_format("sglang"))  # the same events, or handed back (NeedExact): never different
    scan = windows.scan_window(path.read_bytes(), prefilter.for_format(get_format("sglang")), 0)
    assert len(scan.candidates) == len(lines), "every wrapped time-only line is a candidate"


# --- probes after ready: weeks of them, skipped unread --------------------------------------

# Paths a probe or a request may have: probes (and paths that start with one), near misses
# that are requests, tokens that hold a probe path later on
_PATHS = ("/health", "/health", "/healthz", "/metrics", "/ready", "/v1/models", "/get_model_info?x=1",
          "/healt", "/he", "/", "/v1/chat/completions", "/x/health", "/readyz-not", "/metricsX", "*",
          "/v1/models2", "/he\u00e9alth", "/hea\x1b[0mlth")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), probes=st.integers(50, 2000), request_at=st.one_of(st.none(), st.floats(0, 1)),
       kubectl=st.booleans())
def test_probes_after_ready_stay_unread_and_the_first_request_is_found(
        tmp_path: Path, seed: int, probes: int, request_at: float | None, kubectl: bool) -> None:
    """Probed every second for weeks: 5 M `GET /health` lines after ready were each read (31 µs
    a line, 400 MB past 120 s) while one request among them let the rest go unread. The scan
    now tells requests from probes; both engines still give the same compacted events."""
    rng = random.Random(seed)
    moment = 1_790_000_000.0
    lines = [_render(t, moment + i, rng) for i, t in enumerate(_STARTUP[:12])]
    at = None if request_at is None else min(int(request_at * probes), probes - 1)
    for i in range(probes):
        moment += 1
        path = rng.choice(_PATHS) if at is None or i != at else "/v1/chat/completions"
        if at is not None and i < at and not path.startswith(("/health", "/metrics", "/ready", "/v1/models", "/get_")):
            path = "/health"  # only probes before the request
        if at is None and not path.startswith(("/health", "/metrics", "/ready", "/v1/models", "/get_")):
            path = "/metrics"
        line = _render(f'[{{d}} {{t}}] INFO:     10.0.0.1:{40000 + i} - "GET {path} HTTP/1.1" 200 OK', moment, rng)
        lines.append(_collected(line, moment, 0.0, rng) if kubectl else line)
    path = _write(tmp_path, lines, False)
    fmt = get_format("sglang")
    assert _assert_same(path, fmt) is not None
    scanner = batch.new_scanner(fmt)
    events = list(compact(batch.iter_file(path, scanner), fmt))
    if not kubectl and (at is None or at > probes // 2):
        # the probes before the request (or all of them) went unread (behind kubectl's stamps
        # an SGLang log's every line is read: its collector prefix marks it)
        assert scanner.stats.skipped >= probes // 2 - 5, (scanner.stats.skipped, probes)
    runs = build_timeline(events, str(path), fmt, stats=scanner.stats)
    first = runs[-1].milestone("request.first")
    assert (first is None) == (at is None)
    if at is not None:
        assert first is not None and first.line == 12 + at + 1


def test_probes_behind_an_unknown_wrapper_are_kept_by_both_engines(tmp_path: Path) -> None:
    """Issue 33's probe skip (access lines after ready left unread) missed issue 29's rule that
    every access line is kept once a line came behind an unknown wrapper: the batch engine
    dropped an unwrapped `/health` probe among wrapped lines that `compact` keeps."""
    wrap = "[2027-07-11 19:04:{:02d}] [harness.server_manager] [INFO] [worker_{}] "
    lines = [
        wrap.format(16, 1) + '\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO:     10.42.0.1:44497 - "GET /health HTTP/1.1" 200 OK',
        wrap.format(22, 0) + '(Worker_TP0 pid=290) INFO:     10.42.1.63:42738 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        wrap.format(28, 0) + "(Worker_TP0 pid=290) INFO 07-11 19:04:28 [loggers.py:236] Engine 000: Avg prompt "
                             "throughput: 12.0 tokens/s, Avg generation throughput: 80.1 tokens/s, Running: 3 reqs",
        '\x1b[1;36m(Worker_TP1 pid=291)\x1b[0;0m INFO:     10.42.0.1:44497 - "GET /health HTTP/1.1" 200 OK',
        '(APIServer pid=1) INFO:     10.42.1.63:42738 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        wrap.format(36, 0) + '(EngineCore_DP0 pid=217) INFO:     10.42.0.1:44497 - "GET /health HTTP/1.1" 200 OK',
    ]
    path = _write(tmp_path, lines, False)
    assert _assert_same(path, get_format("vllm")) is not None, "handed back"


def test_a_year_less_collector_stamp_gets_the_same_date_from_both_engines(tmp_path: Path) -> None:
    """journald's stamps have no year: `Clock.outer_datetime` is the one conversion of them both
    engines call. Across New Year the year nearest the engine's own stamp is the next one, so a
    uvicorn line with no time of its own, behind "Jan  1 00:00:07", is dated 2026-01-01 (on the
    engine's clock, 2 s behind the collector's), by the batch engine as by the incremental one."""
    lines = ["Dec 31 23:59:58 host sglang[7]: [2025-12-31 23:59:56] server_args=ServerArgs(tp_size=1)",
             "Jan  1 00:00:05 host sglang[7]: [2026-01-01 00:00:03] The server is fired up and ready to roll!",
             'Jan  1 00:00:07 host sglang[7]: INFO:     10.0.0.7:41234 - "POST /v1/chat/completions HTTP/1.1" 200 OK']
    path = _write(tmp_path, lines, False)
    fmt = get_format("sglang")
    (want, _, _), (got, _, _) = _incremental(path, fmt), _batch(path, fmt)
    assert [e.key() for e in got] == [e.key() for e in want]
    access = [e for e in got if e.name == "http.access"]
    assert [e.ts.iso if e.ts else None for e in access] == ["2026-01-01T00:00:05"]


def test_a_file_truncated_under_the_worker_processes_is_said_not_a_signal(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers scan the file mapped: once it shrinks (logrotate's copytruncate), their next
    page past its end is a SIGBUS. That ends only the worker; its window is read again here,
    by `read`, which finds the file shorter and says so (`Truncated`), with the windows before kept."""
    path = _write(tmp_path, _startups_and_traffic(seed=7, blocks=12, startup_every=3, lines_per_block=300), False)
    size = path.stat().st_size
    monkeypatch.setattr(windows, "WINDOW", 4096 * 4)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 2)
    real_scans = windows.forked_scans

    def truncating_first(*args: object, **kwargs: object) -> object:
        os.truncate(path, size // 2)  # after the mapping is made, before a worker reads a page
        return real_scans(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(windows, "forked_scans", truncating_first)
    pre = prefilter.for_format(get_format("sglang"))
    seen: list[int] = []
    with open(path, "rb") as fh, pytest.raises(windows.Truncated) as caught:
        for found, _data in windows.scanned(fh.fileno(), size, pre):
            seen.append(found.end)
    assert caught.value.size == size and caught.value.at <= size // 2
    assert seen and all(end <= size // 2 for end in seen)


def test_a_file_shorter_than_its_size_before_the_mapping_is_truncated(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrunk between its size read and its mapping: mapped at the size it had, not silently shorter."""
    path = _write(tmp_path, _startups_and_traffic(seed=7, blocks=4, startup_every=3, lines_per_block=300), False)
    size = path.stat().st_size
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 2)
    os.truncate(path, size - 100)
    with open(path, "rb") as fh, pytest.raises(windows.Truncated):
        list(windows.scanned(fh.fileno(), size, prefilter.for_format(get_format("sglang"))))


def test_a_file_that_cannot_be_mapped_is_read_by_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system that maps nothing (mmap's OSError): the workers read their windows instead."""
    path = _write(tmp_path, _startups_and_traffic(seed=5, blocks=6, startup_every=3, lines_per_block=300), False)
    monkeypatch.setattr(windows, "WINDOW", 4096)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 2)

    def unmappable(*args: object, **kwargs: object) -> object:
        raise OSError(19, "No such device")

    monkeypatch.setattr(windows.mmap, "mmap", unmappable)
    stats = _assert_same(path, get_format("sglang"))
    assert stats is not None and stats.skipped > 0


@pytest.mark.parametrize("piece", [61, 997, 1 << 20])
def test_a_big_file_on_one_core_is_scanned_here_a_piece_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  piece: int) -> None:
    """One core, a big file: this process scans it, read a piece at a time (`windows.scan_read`),
    no worker and no mapping. Pieces of a few dozen bytes leave many lines longer than a piece
    (read on to their end); the events are the incremental engine's."""
    path = _write(tmp_path, _startups_and_traffic(seed=9, blocks=6, startup_every=3, lines_per_block=200), False)
    monkeypatch.setattr(windows, "WINDOW", 4096 * 3)
    monkeypatch.setattr(windows, "PARALLEL_FROM", 4096)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 1)
    monkeypatch.setattr(windows, "_READ_PIECE", piece)
    def no_pool(*args: object, **kwargs: object) -> object:
        raise AssertionError("no worker on one core")

    monkeypatch.setattr(windows, "forked_scans", no_pool)
    monkeypatch.setattr(windows.os, "fork", no_pool)
    monkeypatch.setattr(windows.mmap, "mmap", no_pool)
    stats = _assert_same(path, get_format("sglang"))
    assert stats is not None and stats.skipped > 0
    pre = prefilter.for_format(get_format("sglang"))
    with open(path, "rb") as fh:  # the windows' candidates and counts, as a whole window's scan finds them
        whole = path.read_bytes()
        for found, _data in windows.scanned(fh.fileno(), len(whole), pre):
            alike = windows.scan_window(whole[found.base:found.end], pre, found.base)
            assert (found.candidates, found.newlines) == (alike.candidates, alike.newlines)


def test_a_big_file_on_one_core_that_shrinks_is_truncated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read, not mapped: a file that shrinks under the one-core scan is a short read, said
    (`Truncated`) with the windows before it kept, never a signal."""
    path = _write(tmp_path, _startups_and_traffic(seed=7, blocks=12, startup_every=3, lines_per_block=300), False)
    size = path.stat().st_size
    monkeypatch.setattr(windows, "WINDOW", 4096 * 4)
    monkeypatch.setattr(windows, "PARALLEL_FROM", 4096)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 1)
    monkeypatch.setattr(windows, "_READ_PIECE", 4096)
    pre = prefilter.for_format(get_format("sglang"))
    seen: list[int] = []
    with open(path, "rb") as fh, pytest.raises(windows.Truncated) as caught:
        for found, _data in windows.scanned(fh.fileno(), size, pre):
            seen.append(found.end)
            if len(seen) == 2:
                os.truncate(path, size // 2)
    assert caught.value.size == size and caught.value.at <= size // 2
    assert len(seen) >= 2 and all(end <= size // 2 for end in seen[2:])


@pytest.mark.parametrize("extra", [-1, 0, 1, 5000])
def test_a_line_at_the_limit_on_one_core_is_read_or_handed_back_as_elsewhere(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch,
                                                                             extra: int) -> None:
    """A line longer than a piece is read on to its end; one over `MAX_LINE_BYTES` hands the
    file back (`NeedExact`), as the scan of a whole window does, at the same length."""
    monkeypatch.setattr(windows, "MAX_LINE_BYTES", 5000)
    monkeypatch.setattr(windows, "PARALLEL_FROM", 4096)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 1)
    monkeypatch.setattr(windows, "_READ_PIECE", 300)
    head = b"[2026-01-01 10:00:00] The server is fired up and ready to roll!\n"
    data = head + b"y" * (5000 + extra - 1) + b"\n" + head * 100
    path = tmp_path / "long.log"
    path.write_bytes(data)
    pre = prefilter.for_format(get_format("sglang"))
    whole = _outcome(lambda: windows.scan_window(data, pre, 0))
    with open(path, "rb") as fh:
        pieces = _outcome(lambda: [(f.candidates, f.newlines) for f, _ in windows.scanned(fh.fileno(), len(data), pre)])
    assert (whole == "NeedExact") is (extra > 0)
    assert pieces == ("NeedExact" if extra > 0 else [(whole.candidates, whole.newlines)])  # type: ignore[union-attr]


def _outcome(run: Callable[[], Any]) -> Any:
    try:
        return run()
    except batch.NeedExact:
        return "NeedExact"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_windows_read_lazily_in_tiny_blocks_give_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 seed: int) -> None:
    """Where workers scanned the windows, this process reads only what it looks at, a block at
    a time (`windows.LazyWindow`), and looks for the first request a piece at a time: blocks
    and pieces of a few dozen bytes cut lines, literals and newlines everywhere."""
    monkeypatch.setattr(windows, "WINDOW", 4096)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 2)
    monkeypatch.setattr(windows, "_LAZY_BLOCK", 61)
    monkeypatch.setattr(batch, "_REQUEST_PIECE", 97)
    rng = random.Random(seed)
    lines = _startups_and_traffic(seed=seed, blocks=6, startup_every=3, lines_per_block=150)
    moment = 1_790_000_000.0 + 10**6
    lines += [_render(t, moment + i, rng) for i, t in enumerate(_STARTUP[:12])]
    for i in range(600):  # probes after ready, one request among them
        path = "/v1/chat/completions" if i == 300 + seed else rng.choice(("/health", "/metrics", "/v1/models"))
        lines.append(_render(f'[{{d}} {{t}}] INFO:     10.0.0.1:{40000 + i} - "GET {path} HTTP/1.1" 200 OK',
                             moment + 12 + i, rng))
    path = _write(tmp_path, lines, False)
    stats = _assert_same(path, get_format("sglang"))
    assert stats is not None and stats.skipped > 0


def _digits(n: int) -> st.SearchStrategy[str]:
    """`n` digits, or now and then another number of them."""
    return st.one_of(st.text(alphabet="0123456789", min_size=n, max_size=n),
                     st.text(alphabet="0123456789", min_size=1, max_size=3))


_DATEISH = st.builds(lambda y, mo, d, h, mi, s, lead, br: f"{lead}{br}{y}-{mo}-{d} {h}:{mi}:{s}",
                     _digits(4), _digits(2), _digits(2), _digits(2), _digits(2), _digits(2),
                     st.sampled_from(["", " ", "\t", "x "]), st.sampled_from(["", "["]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_DATEISH, st.text(alphabet=" [-:0123456789a", max_size=30)), min_size=1, max_size=6))
def test_the_scan_marks_the_lines_where_the_engine_finds_a_header_behind_a_wrapper(pieces: list[str]) -> None:
    """The scan's marks of an own header behind a wrapper (`Header.wrapped_starts`, split so
    that Hyperscan finds each by a literal) mark exactly the lines in which the engine looks
    for one (`Format._wrapped_start`), with Python's `re` and with Hyperscan."""
    import hyperscan

    line = "".join(pieces)
    fmt = get_format("sglang")
    assert fmt._wrapped_start is not None
    want = fmt._wrapped_start.search(line) is not None
    marks = [r"[ \t]" + start for header in fmt.parsing.headers if header.own_timed for start in header.wrapped_starts]
    assert any(re.search(mark, line) for mark in marks) == want, line
    database = prefilter.compile_database([prefilter.to_line_end(p) for p in marks], hyperscan.HS_FLAG_MULTILINE)
    found: list[int] = []
    database.scan(line.encode(), match_event_handler=lambda i, start, stop, flags, ctx, found=found: found.append(i))
    assert bool(found) == want, line


def test_behind_a_wrapper_only_a_bracketed_header_is_the_engines(tmp_path: Path) -> None:
    """SGLang's header may lose its opening bracket where a paste cut a line's first character:
    at a line's start it is still the engine's, any year. Behind a wrapper, which prefixes the
    whole line, only the bracketed header is (the scan looks for a blank and `[`, not for a
    blank and four digits, which every traffic line's ` 200 OK` holds). Both engines alike."""
    fmt = get_format("sglang")
    assert fmt.layout("2026-12-07 10:00:00] Load weight begin.").header is not None
    assert fmt.layout("1999-12-07 10:00:00 TP0] Load weight begin.").header is not None
    assert fmt.layout("worker-1 | [1999-12-07 10:00:00] Load weight begin.").header is not None
    assert fmt.layout("worker-1 | 2026-12-07 10:00:00] Load weight begin.").header is None
    lines = [f"{lead}{y}-12-07 10:00:0{i}] Load weight begin."
             for i, (lead, y) in enumerate((("worker-1 | ", 2026), ("worker-1 | [", 1999), ("", 2026), ("", 1999)))]
    _assert_same(_write(tmp_path, lines, False), fmt)


_TAGGY = st.lists(st.sampled_from(["(", ")", " (", "Z (", "x (", " pid=", "pid=7", " rank=2", " TP0_EP1", "Worker",
                                   "APIServer", "_a-b", "\t", " ", "x", "1", "Z", "(token/s)", "Decode batch",
                                   "[2026-01-01 10:00:00 TP0] ", "\x1b[0m"]), max_size=12).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TAGGY, min_size=1, max_size=8))
def test_a_process_tag_behind_a_wrapper_marks_the_lines_its_exact_pattern_does(lines: list[str]) -> None:
    """The scan finds a process tag behind a wrapper by what leads to it (` pid=`, rare where
    no process tag decorates the lines) and checks those lines with the exact pattern
    (`Prefilter.verify`): the candidates are those of a scan with the exact pattern."""
    import hyperscan

    pre = prefilter.for_format(get_format("sglang"))
    assert pre.verify  # SGLang's lines carry no process tag: the lead is in its scan
    (lead,) = pre.verify
    data = ("\n".join(lines) + "\n").encode()
    got = [(start, stop) for start, stop, _n, _p in windows.scan_window(data, pre, 0).candidates]

    exact = prefilter.compile_database(
        [prefilter.to_line_end(p) for p in [*_scan_patterns(pre, get_format("sglang"))[:lead], prefilter._PROC_BEHIND]],
        hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY)
    ends: set[int] = set()
    exact.scan(data, match_event_handler=lambda i, start, stop, flags, ctx, ends=ends: ends.add(max(stop - 1, 0)))
    want = sorted({(data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)) for at in ends})
    assert got == want


def _scan_patterns(pre: prefilter.Prefilter, fmt: Format) -> list[str]:
    """The patterns of `pre`'s scan, in id order (as `Prefilter` builds them)."""
    literals = sorted({lit for rule in fmt.parsing.rules for lit in rule.literals}
                      - {lit.decode() for lit in pre.access_literals})
    return [re.escape(lit) for lit in literals] + prefilter._markers(fmt)


def test_two_engines_in_one_file_are_said_to_mix_by_the_batch_engine_too(tmp_path: Path) -> None:
    """The batch engine hands the head's sniff literals to the check for a second engine's
    lines (`pipeline._mixed_with`): an SGLang and a vLLM log interleaved are both read and said
    to mix, as the incremental engine reads them."""
    sglang = (SAMPLE_LOGS / "small-tp1.log").read_text().splitlines()
    vllm = (SAMPLE_LOGS / "vllm-warm-start.log").read_text().splitlines()
    merged = [line for pair in itertools.zip_longest(sglang, vllm) for line in pair if line is not None]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(merged) + "\n")
    want = parse_paths([str(path)], scanner="incremental").runs
    got = parse_paths([str(path)], scanner="batch").runs
    assert sorted(r.engine for r in got) == ["sglang", "vllm"]
    assert [(r.engine, r.outcome, r.ready_ts, r.warnings) for r in got] == [
        (r.engine, r.outcome, r.ready_ts, r.warnings) for r in want]


@pytest.mark.parametrize("name", ["small-tp1.log", "vllm-warm-start.log"])
def test_a_literal_that_colour_splits_on_a_marked_line_is_found_after_normalising(tmp_path: Path, name: str) -> None:
    """A marked line's rules are those of the literals the scan found in the raw line, where its
    message is a substring of it (`Scanner.feed`'s `found`); colour inside a literal (the raw
    line does not hold it, the normalised one does) is looked for in the message: the same
    events as the incremental engine."""
    from firedup.read.engine import _literal_index

    text = (SAMPLE_LOGS / name).read_text(encoding="utf-8")
    fmt = get_format("vllm" if name.startswith("vllm") else "sglang")
    literals = sorted((lit for lit in _literal_index(fmt)[0] if len(lit) > 3), key=len, reverse=True)
    lines = []
    for i, line in enumerate(text.splitlines()):
        held = next((lit for lit in literals if lit in line), None)
        if held is not None and i % 2:
            at = line.find(held) + len(held) // 2
            line = line[:at] + "\x1b[0m" + line[at:]
        lines.append(f"2026-02-12T19:46:{i % 60:02d}.000000000Z {line}")
    path = _write(tmp_path, lines, crlf=False)
    assert _assert_same(path, fmt) is not None, "handed back"


_HEAD_LINES = st.sampled_from([
    "[2026-02-12 19:46:44] Load weight begin. avail mem=76.40 GB", "", "   ", "plain words",
    "2026-02-12T19:46:44.123456789Z INFO 02-12 19:46:44 [core.py:1] ready",
    "Capturing batches (bs=4 avail_mem=9.74 GB):   5%|▌         | 1/20 [00:01<00:25,  1.35s/it]\r"
    "Capturing batches (bs=2 avail_mem=9.70 GB):  10%|█         | 2/20 [00:02<00:24,  1.35s/it]",
    "\x1b[32mcoloured\x1b[0m line"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.lists(_HEAD_LINES, min_size=1, max_size=40), lines=st.integers(1, 30), crlf=st.booleans(),
       last_newline=st.booleans(), piece=st.sampled_from([None, 7, 64]))
def test_the_head_is_the_first_lines_read_lines_gives(tmp_path: Path, body: list[str], lines: int, crlf: bool,
                                                      last_newline: bool, piece: int | None) -> None:
    """`read_head` takes the newlines of its first piece from the split it makes of it, and
    counts each later piece once: its sample is the first `lines` logical lines `read_lines`
    gives, for logs shorter and longer than the head, with or without a last newline, read
    in one piece or in many (`piece` bytes at a time)."""
    import io

    path = _write(tmp_path, body, crlf, last_newline)
    if not path.stat().st_size:
        return  # an empty file: `read_lines` says so, and parse never reads its head
    want = "\n".join(line.text for line in itertools.islice(read_lines(Source(str(path), path)), lines))
    if piece is None:
        assert batch.read_head(path, lines)[0] == want
        return
    real_open = open

    class Pieces(io.BufferedReader):
        def read(self, size: int | None = -1) -> bytes:
            return super().read(piece)

    def small_reads(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        return Pieces(real_open(file, "rb", buffering=0)) if file == path and mode == "rb" else \
            real_open(file, mode, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("builtins.open", small_reads)
        assert batch.read_head(path, lines)[0] == want


def _release_texts() -> list[str]:
    from firedup.formats import release_literals

    return sorted(release_literals())


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.one_of(st.sampled_from([*_release_texts(), "] Init nccl", " begin.", "[gpu_id", "=0]", "\n",
                                                   "vLLM API server version 0.13.0\n", "█ ▌"]),
                                 st.text(max_size=12)), max_size=12))
def test_the_release_hint_by_the_heads_scan_is_the_samples_own(pieces: list[str]) -> None:
    """The head's scan finds the release hints' literals with the sniff literals (`_sniff_found`),
    and `release_hint` takes them from it: what it gives searching the sample itself, whole
    literals, cut ones and none, every format."""
    from firedup.formats import all_formats

    sample = "".join(pieces)
    found = batch._sniff_found(sample)
    for fmt in all_formats().values():
        assert fmt.release_hint(sample, found) == fmt.release_hint(sample)
        assert fmt.release_hint_settled(sample, found) == fmt.release_hint_settled(sample)


def test_the_release_hint_by_the_heads_scan_on_every_sample_and_corpus_log() -> None:
    """The same on the heads `parse` reads (`read_head`), for the format each is read as."""
    for path in LOGS:
        literals: set[str] = set()
        sample, _ = batch.read_head(path, 2000, literals=literals)
        fmt = _format_of(path)
        assert fmt.release_hint(sample, literals) == fmt.release_hint(sample), path.name


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
@pytest.mark.parametrize(("cores", "in_worker", "want"), [(1, False, 1), (2, False, 2), (2, True, 1)])
def test_the_scan_asks_for_its_processes_without_importing_the_pool(cores: int, in_worker: bool, want: int) -> None:
    """One process on one core, and inside a pool's worker (parse's own, of a folder); one per
    core else. Saying so imports neither multiprocessing nor `core.pool` (~10 ms a run)."""
    import subprocess
    import sys

    if len(os.sched_getaffinity(0)) < cores:
        pytest.skip(f"needs {cores} cores")
    worker = "import firedup.core.pool as p; p._IN_WORKER[0] = True; " if in_worker else ""
    code = (f"import os, sys; os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:{cores}]); {worker}"
            "from firedup.read import windows; print(windows.scan_jobs(1 << 30), "
            "'firedup.core.pool' in sys.modules, 'multiprocessing' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(want), str(in_worker), str(in_worker)]
    assert windows.scan_jobs(windows.PARALLEL_FROM - 1) == 1


@pytest.mark.parametrize("every", [False, True])
def test_a_scanner_killed_mid_file_leaves_its_windows_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      every: bool) -> None:
    """A forked scanner that dies (the OOM killer's SIGKILL) sends no more: the window it had
    taken is scanned here, the others by the scanners left or, once none is, here; every
    window's scan is what one whole scan finds, in order."""
    import signal

    path = _write(tmp_path, _startups_and_traffic(seed=3, blocks=8, startup_every=3, lines_per_block=300), False)
    monkeypatch.setattr(windows, "WINDOW", 4096 * 2)
    monkeypatch.setattr(windows, "scan_jobs", lambda size: 2)
    real_scan = windows._scan_forked
    parent = os.getpid()

    def dying(bounds: tuple[int, int]) -> windows.Window:
        if os.getpid() != parent and bounds[0] > 4 * 4096 * 2 and (every or bounds[0] // (4096 * 2) % 2 == 1):
            os.kill(os.getpid(), signal.SIGKILL)  # the one that takes such a window dies
        return real_scan(bounds)

    monkeypatch.setattr(windows, "_scan_forked", dying)
    here: list[int] = []
    real_here = windows._scan_here

    def counted_here(bounds: tuple[int, int]) -> windows.Window:
        here.append(bounds[0])
        return real_here(bounds)

    monkeypatch.setattr(windows, "_scan_here", counted_here)
    pre = prefilter.for_format(get_format("sglang"))
    whole = path.read_bytes()
    with open(path, "rb") as fh:
        got = [(f.base, f.end, f.candidates, f.newlines) for f, _ in windows.scanned(fh.fileno(), len(whole), pre)]
    assert len(got) > 8 and got[-1][1] == len(whole)
    assert here and min(here) > 4 * 4096 * 2  # the dead child's windows, from where it died
    for base, end, candidates, newlines in got:
        alike = windows.scan_window(whole[base:end], pre, base)
        assert (candidates, newlines) == (alike.candidates, alike.newlines)

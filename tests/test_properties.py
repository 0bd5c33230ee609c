"""Property tests: no input makes the parser raise, and every input line is accounted for.

Inputs go through the whole path a user's file takes: bytes on disk -> `read_lines` ->
`scan` -> `build_timeline` -> the JSON contract. The only exception allowed is the
`InputError` that refuses a whole file (empty, binary, ...).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firedup.formats import get_format
from firedup.read.engine import scan
from firedup.read.sources import SNIFF_BYTES, InputError, Source, bom_encoding, read_lines
from firedup.timeline.build import build_timeline

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "crash"
SGLANG = get_format("sglang")
SCRATCH = Path(tempfile.mkdtemp(prefix="firedup-properties-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Real message shapes: every line of the fixture logs, without its own header.
REAL_LINES = sorted({line for path in sorted(FIXTURES.glob("*.log")) for line in path.read_text().splitlines()})
MESSAGES = sorted({line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line.strip()
                   for line in REAL_LINES} - {""})


def physical_lines(data: bytes) -> int:
    """How many lines a reader splitting on b"\\n" sees (the last one may lack its newline),
    after a byte-order mark; UTF-16/32 text with one is counted on the decoded text."""
    encoding = bom_encoding(data) if b"\x00" in data[:SNIFF_BYTES] else None
    if encoding is not None:
        text = data.decode(encoding, errors="replace").removeprefix("\ufeff")
        return text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark is dropped before the first line
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def run_pipeline(data: bytes, name: str = "input.log") -> tuple[int, int] | None:
    """Parse `data` like a file; return (physical lines counted, logical lines read), or None
    when the whole file is refused with an InputError."""
    path = SCRATCH / name
    path.write_bytes(data)
    source = Source(str(path), path)
    logical = 0

    def counted():  # type: ignore[no-untyped-def]
        nonlocal logical
        for line in read_lines(source):
            logical += 1
            yield line

    try:
        events, stats, clock = scan(SGLANG, counted())
    except InputError:
        return None
    runs = build_timeline(events, source.name, SGLANG, clock.date_source)
    json.dumps([run.as_contract() for run in runs])  # the contract is always serialisable
    assert stats.logical == logical
    assert stats.logical == stats.matched + stats.runtime + stats.timestamped + stats.other
    return stats.physical, logical


# Most random byte strings hold a NUL and are refused as binary at once; the second kind has
# its NULs turned into newlines so that arbitrary bytes reach the line parser too.
arbitrary_bytes = st.one_of(st.binary(max_size=4096),
                            st.binary(max_size=4096).map(lambda b: b.replace(b"\x00", b"\n")))


@PROPERTY
@given(arbitrary_bytes)
def test_arbitrary_bytes_never_raise_and_every_line_is_counted(data: bytes) -> None:
    counted = run_pipeline(data)
    if counted is not None:
        physical, logical = counted
        assert physical == physical_lines(data)
        assert logical >= physical


# --- line soups ---------------------------------------------------------------------------

digits = st.integers(min_value=0, max_value=99).map(lambda n: f"{n:02d}")
dates = st.builds(lambda y, m, d: f"{y}-{m}-{d}", st.sampled_from(["1970", "2024", "2025", "2026", "9999"]), digits, digits)
times = st.builds(lambda h, m, s: f"{h}:{m}:{s}", digits, digits, digits)
fracs = st.sampled_from(["", ".5", ",388", ".336833841"])
ranks = st.lists(st.sampled_from(["TP0", "TP1", "TP7", "DP0", "PP1", "EP3", "ATTN_CP0"]), max_size=3).map(
    lambda tags: "".join(" " + t for t in tags))

headers = st.one_of(
    st.builds(lambda d, t, f, r: f"[{d} {t}{f}{r}] ", dates, times, fracs, ranks),
    st.builds(lambda t, r: f"[{t}{r}] ", times, ranks),
    st.builds(lambda n: f"[gpu_id={n}] ", st.integers(0, 15)),
    st.builds(lambda d, t, f: f"[{d} {t}{f}] INFO engine.py:124: ", dates, times, fracs),
    st.builds(lambda md, t: f"INFO {md} {t} [weight_utils.py:243] ", st.builds(lambda m, d: f"{m}-{d}", digits, digits), times),
    st.sampled_from(["", "INFO:     ", "ERROR:    ", "WARNING:sglang.srt.server_args:", "  ", "\t"]),
)
outers = st.one_of(
    st.just(""),
    st.builds(lambda d, t, f: f"{d}T{t}{f}Z ", dates, times, fracs),
    st.builds(lambda d, t: f"{d} {t} ", dates, times),
    st.builds(lambda mon, d, t: f"{mon} {d} {t} host python3[77]: ",
              st.sampled_from(["Jan", "Feb", "Dec"]), st.integers(1, 31), times),
    st.sampled_from(["sglang-1  | ", "(WorkerDict pid=26105) ", "(EngineCore_DP0 pid=3361) ", "\x1b[1;36m", "#033[0;0m"]),
)
bars = st.builds(
    lambda desc, n, total: f"{desc}: {min(n, total) * 100 // max(total, 1):3d}%|#   | {min(n, total)}/{total} [00:01<00:02,  1.5it/s]",
    st.sampled_from(["Loading safetensors checkpoint shards", "Capturing batches (bs=4 avail_mem=3.1 GB)", ""]),
    st.integers(0, 40), st.integers(0, 40))
junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=80)
messages = st.one_of(st.sampled_from(MESSAGES), st.sampled_from(REAL_LINES), bars, junk)
lines = st.one_of(
    st.builds(lambda o, h, m: o + h + m, outers, headers, messages),
    st.builds(lambda a, b: a + "\r" + b, bars, st.one_of(bars, messages)),  # redraws and glued lines
)
soups = st.tuples(st.lists(lines, max_size=60), st.sampled_from(["\n", "\r\n"]), st.booleans())


@PROPERTY
@given(soups)
def test_line_soups_never_raise_and_every_line_is_counted(soup: tuple[list[str], str, bool]) -> None:
    body, newline, final_newline = soup
    text = newline.join(body) + (newline if final_newline and body else "")
    data = text.encode("utf-8", errors="surrogatepass")
    counted = run_pipeline(data)
    if counted is None:
        assert data == b"" or b"\x00" in data[:65536]  # only an empty or binary file is refused
        return
    physical, logical = counted
    assert physical == physical_lines(data)
    assert logical >= physical


@PROPERTY
@given(st.lists(st.sampled_from(REAL_LINES), min_size=1, max_size=120))
def test_real_lines_in_any_order_never_raise(body: list[str]) -> None:
    data = ("\n".join(body) + "\n").encode()
    counted = run_pipeline(data)
    assert counted is not None and counted[0] == len(body)

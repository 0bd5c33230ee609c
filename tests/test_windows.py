"""read/windows.py: `LazyWindow` (a window read where it is looked at) answers what the bytes
would, on random data, at any block size, and says a file that shrank under it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firedup.read import windows


@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=0, max_size=300).map(lambda b: bytes(x % 4 + 97 if x % 7 else 10 for x in b)),
       block=st.integers(1, 40), base=st.integers(0, 20),
       subs=st.lists(st.text("abcd\n", min_size=1, max_size=5).map(str.encode), min_size=1, max_size=3),
       low=st.integers(-5, 320), high=st.integers(-5, 320))
def test_a_lazy_window_answers_as_its_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes, block: int,
                                           base: int, subs: list[bytes], low: int, high: int) -> None:
    path = tmp_path_factory.mktemp("lazy") / "w.bin"
    path.write_bytes(b"x" * base + data + b"y" * 3)
    old = windows._LAZY_BLOCK
    windows._LAZY_BLOCK = block
    fd = os.open(path, os.O_RDONLY)
    try:
        lazy = windows.LazyWindow(fd, base, len(data), base + len(data) + 3)
        low_c, high_c = max(low, 0), max(high, 0)
        for sub in subs:
            assert lazy.find(sub, low_c, high_c) == data.find(sub, low_c, high_c), (sub, low_c, high_c)
            assert lazy.rfind(sub, low_c, high_c) == data.rfind(sub, low_c, high_c), (sub, low_c, high_c)
        assert windows.find_any(lazy, subs, low_c, high_c) == windows.find_any(data, subs, low_c, high_c)
        assert windows.find_any(lazy, (), low_c, high_c) == windows.rfind_any(lazy, (), low_c, high_c) == -1
        assert windows.rfind_any(lazy, subs, low_c, high_c) == windows.rfind_any(data, subs, low_c, high_c)
        assert lazy[low:high] == data[low:high] and len(lazy) == len(data)
        if data:
            at = low % len(data)
            assert lazy[at] == data[at] and lazy[-1] == data[-1]
        if low_c <= high_c:
            assert lazy.newlines(low_c, high_c) == data.count(b"\n", low_c, high_c)
    finally:
        windows._LAZY_BLOCK = old
        os.close(fd)


def test_a_lazy_window_reads_only_the_blocks_looked_at(tmp_path: Path) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes((b"a" * 99 + b"\n") * 40_000)  # 4 MB: 62 blocks
    fd = os.open(path, os.O_RDONLY)
    try:
        lazy = windows.LazyWindow(fd, 0, 4_000_000, 4_000_000)
        assert lazy.rfind(b"\n", 0, 3_000_050) == 3_000_000 - 1
        assert lazy[2_000_000:2_000_100] == b"a" * 99 + b"\n"
        assert lazy.blocks_read == 2
    finally:
        os.close(fd)


def test_a_lazy_window_of_a_file_that_shrank_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(b"line\n" * 100_000)
    fd = os.open(path, os.O_RDONLY)
    try:
        lazy = windows.LazyWindow(fd, 0, 500_000, 500_000)
        assert lazy[0:5] == b"line\n"
        os.truncate(path, 100_000)
        with pytest.raises(windows.Truncated) as caught:
            lazy.find(b"x", 0, 500_000)
        assert caught.value.at == 100_000 and caught.value.size == 500_000
    finally:
        os.close(fd)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=1, max_size=3000).map(lambda b: bytes(x % 4 + 97 if x % 5 else 10 for x in b)),
       piece=st.integers(1, 700), copy=st.integers(0, 200), numpy=st.booleans(),
       ranges=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 3000)), min_size=1, max_size=8))
def test_a_newline_counter_counts_as_bytes_count_does(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                                      piece: int, copy: int, numpy: bool,
                                                      ranges: list[tuple[int, int]]) -> None:
    """In a buffer and in a mapping, with numpy and without, whatever the pieces counted at a time."""
    import mmap

    import numpy as np

    path = tmp_path_factory.mktemp("count") / "w.bin"
    path.write_bytes(data)
    saved = windows._COUNT_PIECE, windows._COPY_COUNT, list(windows._NUMPY)
    windows._COUNT_PIECE, windows._COPY_COUNT, windows._NUMPY[:] = piece, copy, [np] if numpy else []
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            for held in (bytearray(data), mapped):
                base = len(data) // 3
                counter = windows.NewlineCounter(held, base, len(data))
                for low, high in ranges:
                    start, stop = base + low % (len(data) - base + 1), base + high % (len(data) - base + 1)
                    start, stop = min(start, stop), max(start, stop)
                    assert counter.count(start, stop) == data.count(b"\n", start, stop), (start, stop)
                del counter  # a numpy view of the buffer
    finally:
        windows._COUNT_PIECE, windows._COPY_COUNT = saved[0], saved[1]
        windows._NUMPY[:] = saved[2]


def test_numpy_is_imported_only_for_enough_bytes_to_repay_it(tmp_path: Path) -> None:
    """`count_in_bulk` below `NUMPY_FROM` leaves numpy out (its import costs more than it
    saves) and the count is `bytes.count`'s; from it on, numpy is imported at once (before any
    worker forks) and counts. A fresh interpreter, as parse is."""
    import subprocess
    import sys

    path = tmp_path / "w.log"
    path.write_bytes(b"a\n" * 5000)
    code = ("import sys, mmap; from firedup.read import windows as w; f = open(sys.argv[1], 'rb'); "
            "m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n"
            "w.count_in_bulk(w.NUMPY_FROM - 1); print(w.NewlineCounter(m, 0, len(m)).count(0, len(m)), 'numpy' in sys.modules)\n"
            "w.count_in_bulk(w.NUMPY_FROM); print('numpy' in sys.modules, w.NewlineCounter(m, 0, len(m)).chunk is not None)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["5000", "False", "True", "True"]

"""The follower on real files: late files, partial lines, rotation, truncation."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from firedup.read.follow import Follower, FollowError, StreamFollower


def _texts(lines: list) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in lines]


def test_a_file_that_does_not_exist_yet_is_picked_up_when_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    follower = Follower(path)
    assert follower.poll(now=0.0) == []
    assert not follower.exists
    path.write_text("one\ntwo\n")
    assert _texts(follower.poll(now=1.0)) == [(1, "one"), (2, "two")]
    assert [n.kind for n in follower.take_notes()] == ["appeared"]


def test_a_complete_log_is_read_at_once(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    lines = [f"line {i}" for i in range(1, 501)]
    path.write_text("\n".join(lines) + "\n")
    got = Follower(path).poll(now=0.0)
    assert [line.text for line in got] == lines
    assert got[-1].number == 500


def test_half_a_line_is_never_handed_out(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    follower = Follower(path, partial_grace=60.0)
    with open(path, "w") as f:
        f.write("done\nThe server is fired ")
        f.flush()
        assert _texts(follower.poll(now=0.0)) == [(1, "done")]
        assert follower.partial == "The server is fired "
        f.write("up and ready to roll!\n")
        f.flush()
        assert _texts(follower.poll(now=1.0)) == [(2, "The server is fired up and ready to roll!")]
        assert follower.partial == ""


def test_a_last_line_without_newline_is_taken_after_the_grace_and_its_rest_keeps_its_number(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    follower = Follower(path, partial_grace=2.0)
    with open(path, "w") as f:
        f.write("a\nCapturing batches:  50%|#####     | 2/4 [00:01<00:01]")
        f.flush()
        assert _texts(follower.poll(now=0.0)) == [(1, "a")]
        assert follower.poll(now=1.0) == []  # still within the grace
        flushed = follower.poll(now=2.5)
        assert _texts(flushed) == [(2, "Capturing batches:  50%|#####     | 2/4 [00:01<00:01]")]
        f.write("\rCapturing batches: 100%|##########| 4/4 [00:02<00:00]\nnext\n")
        f.flush()
        rest = follower.poll(now=3.0)
    assert [(r.number, r.continued) for r in rest] == [(2, True), (3, False)]
    assert rest[1].text == "next"


def test_rotation_reads_the_old_file_to_its_end_then_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("1\n2\n")
    follower = Follower(path)
    assert _texts(follower.poll(now=0.0)) == [(1, "1"), (2, "2")]
    with open(path, "a") as f:  # written just before the rename
        f.write("3\n")
    os.rename(path, tmp_path / "server.log.1")
    path.write_text("4\n5\n")
    assert _texts(follower.poll(now=1.0)) == [(3, "3"), (4, "4"), (5, "5")]
    notes = follower.take_notes()
    assert [n.kind for n in notes if n.kind != "appeared"] == ["rotated"]


def test_truncation_restarts_from_the_top(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("first line of a long log\nsecond line\n")
    follower = Follower(path)
    assert len(follower.poll(now=0.0)) == 2
    with open(path, "r+") as f:  # copytruncate
        f.truncate(0)
    with open(path, "a") as f:
        f.write("after\n")
    assert _texts(follower.poll(now=1.0)) == [(3, "after")]
    assert "truncated" in [n.kind for n in follower.take_notes()]


def test_a_removed_file_is_noted_once_and_a_new_one_followed(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("old\n")
    follower = Follower(path)
    follower.poll(now=0.0)
    follower.take_notes()
    path.unlink()
    follower.poll(now=1.0)
    follower.poll(now=2.0)
    assert [n.kind for n in follower.take_notes()] == ["vanished"]
    path.write_text("new\n")
    assert _texts(follower.poll(now=3.0)) == [(2, "new")]


def test_drain_hands_out_the_unfinished_last_line(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("a\nKilled")
    follower = Follower(path, partial_grace=60.0)
    assert _texts(follower.poll(now=0.0)) == [(1, "a")]
    assert _texts(follower.drain()) == [(2, "Killed")]


def test_growth_time_counts_bytes_not_lines(tmp_path: Path) -> None:
    """A progress bar redrawn in place is output even though no newline arrives."""
    path = tmp_path / "server.log"
    follower = Follower(path, partial_grace=60.0)
    with open(path, "w") as f:
        f.write("start\n")
        f.flush()
        follower.poll(now=0.0)
        assert follower.last_growth == 0.0
        f.write("\rLoading: 10%")
        f.flush()
        assert follower.poll(now=5.0) == []
        assert follower.last_growth == 5.0
        assert follower.poll(now=9.0) == []
        assert follower.last_growth == 5.0


def test_from_end_skips_what_is_there_but_keeps_the_numbering(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("old 1\nold 2\nold 3\nhalf of a li")
    follower = Follower(path, from_end=True, partial_grace=60.0)
    assert follower.poll(now=0.0) == []
    with open(path, "a") as f:
        f.write("ne\nnew\n")
    assert _texts(follower.poll(now=1.0)) == [(4, "half of a line"), (5, "new")]


def test_an_unreadable_file_is_an_error_not_a_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "server.log"
    path.write_text("x\n")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    follower = Follower(path)
    monkeypatch.setattr("os.open", denied)  # root reads everything: simulate the mode bits
    with pytest.raises(FollowError, match="cannot read it"):
        follower.poll(now=0.0)


def test_a_bar_redrawn_thousands_of_times_on_one_line_stays_cheap(tmp_path: Path) -> None:
    from firedup.read.follow import MAX_PARTIAL

    path = tmp_path / "server.log"
    follower = Follower(path, partial_grace=600.0)
    frame = "\rDeepGEMM warmup: {pct:3d}%|##########| {n}/200000 [00:01<00:00, 5000.00it/s]"
    with open(path, "w") as f:
        f.write("start\n")
        for block in range(20):
            f.write("".join(frame.format(pct=n // 2000, n=n) for n in range(block * 10000, (block + 1) * 10000)))
            f.flush()
            follower.poll(now=float(block))
    assert follower.partial_size <= MAX_PARTIAL  # 15 MB of redraws, a bounded buffer
    assert follower.partial_tail().endswith("| 199999/200000 [00:01<00:00, 5000.00it/s]")
    with open(path, "a") as f:
        f.write("\n")
    (line,) = follower.poll(now=30.0)
    assert line.number == 2 and line.text.endswith("199999/200000 [00:01<00:00, 5000.00it/s]")


def _poll_until(follower: StreamFollower, count: int, now: float = 0.0) -> list:
    got: list = []
    deadline = time.monotonic() + 10
    while len(got) < count and time.monotonic() < deadline:
        got += follower.poll(now=now)
        time.sleep(0.01)
    return got


def test_a_stream_is_read_as_it_comes_partial_lines_kept_until_their_end() -> None:
    read, write = os.pipe()
    follower = StreamFollower(Path("<stdin>"), fd=read, partial_grace=60.0)
    assert follower.exists and follower.poll(now=0.0) == []  # nothing written: never blocks
    os.write(write, b"one\ntwo\nthe server is fi")
    assert _texts(_poll_until(follower, 2)) == [(1, "one"), (2, "two")]
    assert follower.partial == "the server is fi" and not follower.ended
    os.write(write, b"red up\r\nlast, no newline")
    assert _texts(_poll_until(follower, 1)) == [(3, "the server is fired up\r")]
    os.close(write)
    deadline = time.monotonic() + 10
    while not follower.ended and time.monotonic() < deadline:
        follower.poll(now=1.0)
        time.sleep(0.01)
    assert follower.ended  # the writer closed its end
    assert _texts(follower.drain()) == [(4, "last, no newline")]
    os.close(read)


# --- issue 41 item 3, issue 45 item 2: what `parse` decodes, `wait` decodes -----------------------

LINES = ["[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m')", "[2026-01-10 10:00:01] déjà vu ✓",
         "[2026-01-10 10:00:02] The server is fired up and ready to roll!"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_utf16_or_utf32_log_with_its_bom_is_followed_decoded(tmp_path: Path, encoding: str) -> None:
    """Issue 41: `parse` decodes UTF-16 logs (a Windows redirect), `wait` read their bytes as UTF-8."""
    path = tmp_path / "server.log"
    data = ("\n".join(LINES) + "\n").encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    half = len(data) // 2 + 1  # cut inside a character: the decoder keeps the odd byte
    path.write_bytes(data[:half])
    follower = Follower(path)
    got = follower.poll(now=0.0)
    with open(path, "ab") as f:
        f.write(data[half:])
    got += follower.poll(now=1.0)
    assert _texts(got) == list(enumerate(LINES, 1))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_from_end_on_a_utf16_log_counts_its_lines_and_decodes_what_comes(tmp_path: Path, encoding: str) -> None:
    """`wait --from-end` on a UTF-16 log counted raw 0x0a bytes as newlines (`Ċ`, U+010A, holds one)
    and then read the new lines as UTF-8 (the BOM, at offset 0 only, was skipped with the old
    lines); the file's end, cut inside a code unit, must stay aligned to its code units."""
    path = tmp_path / "server.log"
    bom = b"\xfe\xff" if encoding == "utf-16-be" else b""  # the others write their own, once
    before = "old Ċ one\nold two\nhalf of a li"
    data = bom + (before + "ne\n" + "\n".join(LINES) + "\n").encode(encoding)
    cut = len(bom + before.encode(encoding)) + 1  # the writer is inside a code unit
    path.write_bytes(data[:cut])
    follower = Follower(path, from_end=True, partial_grace=60.0)
    assert follower.poll(now=0.0) == []
    with open(path, "ab") as f:
        f.write(data[cut:])
    assert _texts(follower.poll(now=1.0)) == [(3, "half of a line"), *enumerate(LINES, 4)]


def test_a_utf16_stream_is_decoded() -> None:
    read, write = os.pipe()
    follower = StreamFollower(Path("<stdin>"), fd=read)
    os.write(write, ("\n".join(LINES) + "\n").encode("utf-16"))
    os.close(write)
    assert _texts(_poll_until(follower, 3)) == list(enumerate(LINES, 1))
    os.close(read)


def test_a_gzipped_log_is_followed_inflated(tmp_path: Path) -> None:
    """Issue 45: `wait --log base.log.gz` read gzip bytes as lines."""
    import gzip

    path = tmp_path / "server.log.gz"
    packed = gzip.compress(("\n".join(LINES[:2]) + "\n").encode()) + gzip.compress((LINES[2] + "\n").encode())
    path.write_bytes(packed[:7])  # less than a header: nothing to say yet
    follower = Follower(path)
    assert follower.poll(now=0.0) == []
    with open(path, "ab") as f:
        f.write(packed[7:])
    assert _texts(follower.poll(now=1.0)) == list(enumerate(LINES, 1))  # both members


def test_a_broken_gzip_keeps_what_inflated_and_says_why(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress(("\n".join(LINES) + "\n").encode()) + b"GARBAGE after the end")
    follower = Follower(path)
    assert _texts(follower.drain()) == list(enumerate(LINES, 1))
    notes = [n for n in follower.take_notes() if n.kind == "undecodable"]
    assert len(notes) == 1 and "garbage after the gzip stream's end" in notes[0].text


def test_a_short_plain_log_is_not_held_back(tmp_path: Path) -> None:
    """Fewer bytes than a byte-order mark's: handed out when the writer is done (drain)."""
    path = tmp_path / "server.log"
    path.write_bytes(b"ok")
    follower = Follower(path)
    assert follower.poll(now=0.0) == []
    assert _texts(follower.drain()) == [(1, "ok")]


def test_the_servers_answers_to_probes_are_no_growth(tmp_path: Path) -> None:
    """Issue 41: the server logs each `/health` probe (wait's own and others'): a warm-up compile
    behind probes was never a silence. GET/HEAD access lines are not the start-up's progress; the
    engine's own warm-up POST and every other line are."""
    path = tmp_path / "server.log"
    follower = Follower(path)
    probe = '[2026-01-10 10:00:05] INFO:     127.0.0.1:47550 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
    with open(path, "w") as f:
        f.write("[2026-01-10 10:00:00] Capture cuda graph begin.\n")
        f.flush()
        follower.poll(now=0.0)
        for t in (1.0, 2.0, 3.0):
            f.write(probe + 'INFO:     10.0.0.9:5 - "HEAD /v1/models HTTP/1.1" 200 OK\n')
            f.flush()
            assert len(follower.poll(now=t)) == 2
        assert follower.last_growth == 0.0
        f.write('[2026-01-10 10:00:09] INFO:     127.0.0.1:47551 - "POST /generate HTTP/1.1" 200 OK\n')
        f.flush()
        follower.poll(now=4.0)
        assert follower.last_growth == 4.0
        f.write(probe + "[2026-01-10 10:00:10] Capture cuda graph end.\n")
        f.flush()
        follower.poll(now=5.0)
        assert follower.last_growth == 5.0

"""core/files.py: every write whole, never through a link planted at the target, short
temporary names, a FIFO the user named written into, a folder written by one writer at a time."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from firedup.core import files
from firedup.errors import OutputError


def test_a_symlink_at_the_target_is_replaced_and_its_target_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out.csv"
    out.symlink_to(victim)
    files.write_text(out, "new\n")
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink() and out.read_text() == "new\n"


def test_a_dangling_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.symlink_to(tmp_path / "elsewhere" / "created.txt")
    (tmp_path / "elsewhere").mkdir()
    files.write_text(out, "x")
    assert not (tmp_path / "elsewhere" / "created.txt").exists() and out.read_text() == "x"


def test_a_250_character_name_works(tmp_path: Path) -> None:
    out = tmp_path / ("a" * 246 + ".csv")
    files.write_text(out, "x")
    assert out.read_text() == "x"
    assert len(files.temp_name()) <= 25


def test_a_failed_write_leaves_nothing_behind_and_names_the_path(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("old")

    def boom(fh: object) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match=r"cannot write .*out\.csv: No space left on device"):
        files.write_file(out, boom)
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_fifo_the_user_named_is_written_into_one_firedup_named_is_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    files.write_text(fifo, "through\n")
    reader.join(10)
    assert got == [b"through\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    files.write_text(fifo, "replaced\n", named=False)  # inside a report's folder: replaced, never opened
    assert fifo.is_file() and fifo.read_text() == "replaced\n"


def test_a_fifo_nobody_reads_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="a FIFO that no process reads"):
        files.write_text(fifo, "x")


def test_a_directory_at_the_target_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        files.write_text(tmp_path / "d", "x")


def test_open_log_replaces_a_symlink_and_appends_after(tmp_path: Path) -> None:
    victim = tmp_path / "victim.log"
    victim.write_text("precious\n")
    out = tmp_path / "replayed.log"
    out.symlink_to(victim)
    with files.open_log(out, append=False) as fh:
        fh.write(b"one\n")
    with files.open_log(out, append=True) as fh:
        fh.write(b"two\n")
    assert victim.read_text() == "precious\n" and out.read_text() == "one\ntwo\n" and not out.is_symlink()


def test_writers_of_one_folder_take_turns(tmp_path: Path) -> None:
    """Two reports into one folder at once: the second waits for the first's lock, then writes
    all of its files (flock is per open file, so two threads contend as two processes do)."""
    from firedup.render.report import write_folder

    out = tmp_path / "report"
    out.mkdir()
    started = threading.Event()
    done = threading.Event()

    def second() -> None:
        started.set()
        write_folder(out, {"index.html": b"B", "report.md": b"B"})
        done.set()

    with files.folder_lock(out):
        thread = threading.Thread(target=second)
        thread.start()
        started.wait(10)
        assert not done.wait(0.5), "wrote while another writer held the folder"
        for name in ("index.html", "report.md", "timeline.png"):
            (out / name).write_bytes(b"A")
    thread.join(10)
    assert done.is_set()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {"index.html": b"B", "report.md": b"B"}

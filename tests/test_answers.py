"""render.answers: what the commands say besides their views, as the library gives it."""

from __future__ import annotations

from pathlib import Path

from firedup import api
from firedup.render.answers import ingest_lines, n_runs, unread_lines
from firedup.tables.store import IngestReport


def test_n_runs_says_one_run_and_many_runs() -> None:
    assert [n_runs(n) for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]


def test_ingest_lines_answer_first_then_files_only_when_verbose() -> None:
    report = IngestReport(added=[("a.log", 2), ("b.log", 1)], present=["c.log"], empty=["notes.txt"])
    quiet = ingest_lines(report, "ST", verbose=False)
    assert quiet == ["3 runs added to ST from 2 files (1 file already in the store; 1 with no server startup)",
                     "  no server startup found: notes.txt", "(-v lists each file)"]
    loud = ingest_lines(report, "ST", verbose=True)
    assert loud[0] == quiet[0] and "(-v lists each file)" not in loud
    assert loud[1:4] == ["  added 2 runs from a.log", "  added 1 run from b.log", "  already in the store: c.log"]


def test_unread_lines_name_a_file_no_engine_wrote(tmp_path: Path) -> None:
    path = tmp_path / "notes.log"
    path.write_text("hello\nnothing a server printed\n")
    lines = unread_lines(api.parse([str(path)]))
    assert len(lines) == 1 and lines[0].startswith(f"firedup: {path}: ")

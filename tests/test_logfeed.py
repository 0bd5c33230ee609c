"""live/logfeed.py: the log `wait` follows, read by the reader `parse` uses as it grows: its
engine found once its lines show one, said once when they show none, its last lines kept, and
which lines came as the wait watched."""

from __future__ import annotations

from pathlib import Path

from _live import NEW_READY
from firedup.live.logfeed import SNIFF_NOTE_LINES, LogFeed
from firedup.live.options import WaitOptions
from firedup.live.sofar import LAST_LINES


def test_a_log_is_read_as_it_grows_and_its_last_lines_kept(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    lines = NEW_READY.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:10]))
    said: list[str] = []
    feed = LogFeed(WaitOptions(log), said.append)
    assert feed.take(feed.poll(0.0), 0.0)
    assert feed.lines == 10 and feed.fmt is not None and feed.fmt.name == "sglang" and feed.dirty
    assert not feed.live  # what the log held when the wait began
    runs = feed.runs()
    assert runs and not feed.dirty
    with open(log, "a") as f:
        f.writelines(lines[10:])
    assert feed.take(feed.poll(1.0), 1.0) and feed.live  # written as the wait watched
    assert feed.lines == len(lines) and len(feed.last_lines) == LAST_LINES
    assert feed.last_lines[-1] == (len(lines), lines[-1].rstrip("\n"))
    assert feed.runs()[-1].outcome == "ready" and said == []


def test_a_log_of_no_known_engine_is_said_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"12:00:{i % 60:02d} worker {i} ready to do something\n" for i in range(SNIFF_NOTE_LINES)))
    said: list[str] = []
    feed = LogFeed(WaitOptions(log), said.append)
    feed.take(feed.poll(0.0), 0.0)
    feed.take(feed.poll(5.0), 5.0)
    assert feed.fmt is None and len(said) == 1 and "the URL and the process decide" in said[0]


def test_python_warnings_before_the_log_begins_are_no_alarm(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("/site/x.py:1: SyntaxWarning: invalid escape sequence '\\.'\n")
    said: list[str] = []
    feed = LogFeed(WaitOptions(log), said.append)
    feed.take(feed.poll(0.0), 0.0)
    feed.take(feed.poll(5.0), 5.0)  # a pause: the engine is chosen if it can be, nothing said if it cannot
    assert feed.fmt is None and said == [] and not feed.began


def test_a_log_that_does_not_exist_yet_is_waited_for_and_its_lines_are_live(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    said: list[str] = []
    feed = LogFeed(WaitOptions(log), said.append)
    assert not feed.take(feed.poll(0.0), 0.0) and not feed.follower.exists
    log.write_text(NEW_READY.read_text())
    assert feed.take(feed.poll(1.0), 1.0) and feed.live

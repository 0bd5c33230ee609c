"""live/stages.py: the progress bars of a followed start-up, and which changes of stage are news
(a stage is told once it has lasted: a rank's line that flaps back is not news)."""

from __future__ import annotations

from datetime import date

from _live import NEW_READY
from firedup.formats import get_format
from firedup.live.history import History
from firedup.live.stages import Progress, StageNews, progress_of
from firedup.read.engine import Event
from firedup.read.sources import Line
from firedup.timeline.pipeline import DatePolicy, LogReader
from firedup.timeline.run import Run


def _run(lines: list[str]) -> Run:
    reader = LogReader("server.log", "sglang", DatePolicy(None, date(2026, 1, 1)))
    reader.feed([Line(i + 1, t) for i, t in enumerate(lines)])
    return reader.runs()[-1]


def test_each_stage_is_told_once_in_order_with_its_line() -> None:
    run = _run(NEW_READY.read_text().splitlines())
    news = StageNews()
    assert not news.restarted(run)  # the first start-up is no restart
    told = news.news(run, get_format("sglang"), None, History([]))
    stages = [line.split()[1] for line in told]
    assert stages[:3] == ["launch", "dist_init", "load_weights"] and "serving" not in stages
    assert all(line.rstrip().endswith("]") and "[line " in line for line in told)
    assert news.news(run, get_format("sglang"), None, History([])) == []  # told once


def test_a_new_start_up_begins_a_new_list() -> None:
    args = "server_args=ServerArgs(model_path='/tmp/model', tp_size=1)"
    first = [f"[2026-01-10 10:00:00] {args}", "[2026-01-10 10:00:01] Load weight begin. avail mem=78.50 GB",
             "[2026-01-10 10:00:06] Received sigquit from a child process. It usually means the child failed."]
    news = StageNews()
    assert not news.restarted(_run(first))
    restart = _run([*first, f"[2026-01-10 10:01:10] {args}"])
    assert restart.first_line == 4
    assert news.restarted(restart) and not news.restarted(restart)


def test_a_progress_bar_reads_as_its_unit_and_counts() -> None:
    fmt = get_format("sglang")
    units = fmt.vocab.progress
    kind = next(iter(units))
    bar = progress_of(Event(kind, 3, None, fields={"n": 3, "total": 8}), units)
    assert bar is not None and (bar.n, bar.total) == (3, 8) and str(bar).endswith("3/8")
    assert progress_of(Event(kind, 3, None, fields={"n": "3", "total": 8}), units) is None
    assert str(Progress("", 1, 2)) == "1/2"

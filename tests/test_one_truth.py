"""One log, one truth: every command that reads a log tells the same facts about its runs.

`parse`, the timeline view, and a live `wait` following a `replay` of the log all read it
through `firedup.timeline.pipeline.LogReader`; this test holds them to the same outcome,
first timestamp (with its year), time to ready, crash time and phase names, for every
bundled sample and every real-GPU startup in ../shared/realgpu (skipped without ../shared).

Cases are added per command: `facts(run)` is what every reader must agree on; a command
that yields runs (report, runs) adds a test comparing its `facts` to `parsed_facts(log)`.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from _live import free_port, replaying
from conftest import SAMPLE_LOGS, SHARED
from firedup.live.options import WaitOptions
from firedup.live.replay import load_script
from firedup.live.wait import Waiter
from firedup.render.text import timeline_text
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

REALGPU = SHARED / "realgpu"
# The wall time a replay may take: logs of 15 minutes are replayed in a few seconds.
REPLAY_SECONDS = 1.5
# One of each kind for a quick run (`-m "not slow"`): SGLang ready, SGLang crash then a
# restart, vLLM behind a collector prefix, and SGLang's piecewise capture.
FAST = {"small-tp1.log", "crash-then-restart.log", "vllm-tp2-eager.log", "oom-in-cuda-graph.log"}


def _logs() -> list[Any]:
    found = sorted(SAMPLE_LOGS.glob("*.log"))
    if REALGPU.is_dir():
        found += sorted(REALGPU.glob("*.log"))
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}",
                         marks=() if p.name in FAST else pytest.mark.slow) for p in found]


LOGS = _logs()


def facts(run: Run) -> dict[str, Any]:
    """What every reader of a log must say alike about one of its runs.

    A crash after the ready line is left out: `wait` has returned by then (the server was
    ready), so it is no fact a live reader can share.
    """
    first = run.first_ts
    crash = run.crash if run.crash is not None and not run.crash.after_ready else None
    return {
        "first_line": run.first_line,
        "outcome": run.outcome,
        "first_ts": first.iso if first is not None else None,  # with its year
        "date_source": run.date_source,
        "ready_s": round(run.ready_ts.minus(first), 3) if run.ready_ts is not None and first is not None else None,
        "crash_line": crash.line if crash is not None else None,
        "crash_s": round(crash.ts.minus(first), 3) if crash is not None and crash.ts is not None and first else None,
        "crash_phase": crash.phase if crash is not None else None,
        "phases": sorted({p.name for p in run.run_phases() if p.name != "total" and _before_end(run, p.start)}),
    }


def _before_end(run: Run, start: Any) -> bool:
    """A phase that begins by the ready line (or the crash): what a live reader has seen."""
    end = run.ready_ts or (run.crash.ts if run.crash is not None and not run.crash.after_ready else None)
    return end is None or start is None or start <= end


def _copy(log: Path, tmp_path: Path) -> Path:
    """The log as a file written now: a replay writes its copy now, and a year-less log
    takes its year from the file's date, so both readers must see the same date."""
    copy = tmp_path / log.name
    shutil.copyfile(log, copy)
    return copy


def parsed(log: Path) -> list[Run]:
    result = parse_paths([str(log)])
    assert not result.errors, result.errors
    return result.runs


def _run_with_first_line(runs: list[Run], first_line: int | None) -> Run:
    matching = [r for r in runs if r.first_line == first_line]
    assert matching, f"no parsed run begins at line {first_line}: {[r.first_line for r in runs]}"
    return matching[0]


def replayed_and_waited(log: Path, tmp_path: Path) -> tuple[Waiter, str]:
    """`firedup replay LOG` (a real process, on loopback) while the library's `wait` follows
    its output; the waiter (its run) and what it printed."""
    out = tmp_path / "replayed.log"
    speed = max(20.0, load_script(log).duration / REPLAY_SECONDS)
    printed, said = io.StringIO(), io.StringIO()
    with replaying(log, out, free_port(), speed, "--hold", "5") as server:
        # --pid: a log that ends in a crash ends the wait when the replay exits like the server
        opts = WaitOptions(out, pid=server.pid, timeout=60, auto_timeout=False)
        waiter = Waiter(opts, printed, said, tty=False)
        code = waiter.run_loop()
    assert code in (0, 3), printed.getvalue() + said.getvalue()
    return waiter, printed.getvalue()


@pytest.mark.parametrize("log", LOGS)
def test_parse_and_a_live_wait_on_a_replay_tell_the_same_facts(log: Path, tmp_path: Path) -> None:
    copy = _copy(log, tmp_path)
    runs = parsed(copy)
    waiter, printed = replayed_and_waited(copy, tmp_path)
    assert waiter.seen.run is not None, printed
    truth = _run_with_first_line(runs, waiter.seen.run.first_line)
    assert facts(waiter.seen.run) == facts(truth)
    assert waiter.seen.fmt is not None and waiter.seen.fmt.name == truth.engine
    # the timeline `wait` prints is the one `timeline` shows: same span, same year
    span = re.search(r"^  from .*$", timeline_text(truth), re.M)
    assert span is not None
    assert span.group(0) in printed.splitlines()


@pytest.mark.parametrize("log", LOGS)
def test_parse_and_replay_read_the_same_runs(log: Path, tmp_path: Path) -> None:
    """`replay` decides when the port opens, the ready line and the crash from its runs."""
    copy = _copy(log, tmp_path)
    script = load_script(copy)
    assert [facts(r) for r in script.runs] == [facts(r) for r in parsed(copy)]
    assert script.fmt.name == parsed(copy)[0].engine


def _corpus() -> list[Any]:
    from conftest import corpus_logs

    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for engine in ("sglang", "vllm") for p in corpus_logs(engine)]


@pytest.mark.parametrize("log", _corpus())
def test_the_live_reader_fed_in_pieces_reads_each_corpus_log_as_parse_does(log: Path) -> None:
    """`wait`'s path without the waiting: the log fed to a `LogReader` a few lines at a time,
    choosing its format as soon as a live reader would, gives `parse`'s runs exactly; so does
    `replay`'s reading, and its pacing keeps to the server's clock (corpus 002, Docker
    Desktop's host-local prefix over UTC, once made 58066 s of a 490 s log)."""
    from firedup.read.sources import Source, read_lines
    from firedup.timeline.pipeline import DatePolicy, LogReader

    parse = parse_paths([str(log)])
    if parse.errors:
        pytest.skip(f"{log.name}: {parse.errors[0]}")  # unreadable corpus files are parse's tests
    reader = LogReader(str(log), dates=DatePolicy.of(Source(str(log), log)))
    batch: list[Any] = []
    for line in read_lines(Source(str(log), log)):
        batch.append(line)
        if len(batch) == 7:
            reader.feed(batch)
            batch = []
    reader.feed(batch, force=True)
    runs = reader.runs()
    assert [r.as_contract() for r in runs] == [r.as_contract() for r in parse.runs]
    # and `replay` reads it alike, on one clock: the log's lines span what its runs span
    script = load_script(log)
    assert [r.as_contract() for r in script.runs] == [r.as_contract() for r in parse.runs]
    if parse.runs and parse.runs[0].first_ts is not None and parse.runs[-1].last_ts is not None:
        span = parse.runs[-1].last_ts.minus(parse.runs[0].first_ts)
        assert span - 1 <= script.duration <= span + 60  # lines after the last stamp of a run

"""What compaction may drop (compact.py's contract), on logs whose answers are worked out here
from the text: the batch engine leaves the other access lines unread, and both engines give
the milestones, crash and times the lines themselves say.

The general property (timelines with and without compaction are identical, on every sample,
corpus and generated log) is tested in test_batch.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from firedup.read import batch
from firedup.timeline.pipeline import parse_paths

GOOD = (Path(__file__).resolve().parent / "fixtures" / "crash" / "ready_tp1.log").read_text()
STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})\]")
ENGINES = ["incremental", "batch"] if batch.available() else ["incremental"]


def _traffic(count: int, first_request_at: int, health_at: int | None) -> list[str]:
    """Serving traffic after the fixture's ready line (17:49:40): batch lines and requests,
    the first non-probe request at `first_request_at`, one /health probe at `health_at`."""
    out = []
    for i in range(count):
        stamp = f"[2025-08-31 {17 + (49 * 60 + 41 + i // 20) // 3600 % 24:02d}:" \
                f"{(49 * 60 + 41 + i // 20) // 60 % 60:02d}:{(41 + i // 20) % 60:02d}]"
        if i == health_at:
            out.append(f'{stamp} INFO:     10.0.0.9:5{i % 10000:04d} - "GET /health HTTP/1.1" 200 OK')
        elif i >= first_request_at and i % 4 == 0:
            out.append(f'{stamp} INFO:     10.0.0.7:4{i % 10000:04d} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        elif i < first_request_at and i % 4 == 0:
            out.append(f'{stamp} INFO:     10.0.0.7:4{i % 10000:04d} - "GET /get_model_info HTTP/1.1" 200 OK')
        else:
            out.append(f"{stamp} Decode batch. #running-req: 3, #token: {i}, token usage: 0.01, gen throughput (token/s): 8.0")
    return out


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "serving.log"
    path.write_text(GOOD + "\n".join(lines) + "\n")
    return path


def _line_of(path: Path, pattern: str, after: int = 0) -> int:
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if number > after and re.search(pattern, text):
            return number
    raise AssertionError(pattern)


def _milestone(run: dict, name: str) -> int | None:
    found = [m["line"] for m in run["milestones"] if m["name"] == name]
    return found[0] if found else None


@pytest.mark.parametrize("scanner", ENGINES)
def test_after_ready_and_the_first_request_the_access_lines_stay_unread(tmp_path: Path, scanner: str) -> None:
    path = _write(tmp_path, _traffic(20000, first_request_at=300, health_at=9000))
    ready = _line_of(path, "fired up and ready to roll")
    result = parse_paths([str(path)], scanner=scanner)
    (run,) = result.as_contract()["runs"]
    assert _milestone(run, "request.first") == _line_of(path, r'"POST /v1/chat', after=ready)
    assert _milestone(run, "health.first") == _line_of(path, r'"GET /health')
    assert _milestone(run, "http.first_request") == _line_of(path, r"HTTP/1\.1")
    access_lines = sum("HTTP/1.1" in line for line in path.read_text().splitlines())
    lines = result.sources[0].lines
    if scanner == "batch":  # read: the fixture's, those up to the first request, the probe
        assert lines["matched"] < 120 < access_lines - 100 < lines["skipped"]
    else:
        assert lines["matched"] >= access_lines


@pytest.mark.parametrize("scanner", ENGINES)
def test_the_first_health_probe_is_found_among_many_requests(tmp_path: Path, scanner: str) -> None:
    path = _write(tmp_path, _traffic(20000, first_request_at=0, health_at=19990))
    (run,) = parse_paths([str(path)], scanner=scanner).as_contract()["runs"]
    assert _milestone(run, "health.first") == _line_of(path, r'"GET /health')
    assert _milestone(run, "health.first") == 21 + 19990 + 1


@pytest.mark.parametrize("scanner", ENGINES)
def test_a_fatal_line_right_after_requests_is_not_blamed_on_an_older_traceback(tmp_path: Path, scanner: str) -> None:
    """The crash reader walks back from a fatal line over bare error lines, up to any other
    line: the request lines in between must stop it, so they are kept (the last of them)."""
    lines = _traffic(3000, first_request_at=0, health_at=None)
    lines[1000:1000] = ["Traceback (most recent call last):", '  File "/srv/app.py", line 3, in handler',
                        "RuntimeError: a request failed"]
    lines.append("[2025-08-31 17:52:40] Received sigquit from a child process. It usually means the child failed.")
    path = _write(tmp_path, lines)
    (run,) = parse_paths([str(path)], scanner=scanner).as_contract()["runs"]
    crash = run["crash"]
    assert crash["line"] == _line_of(path, "Received sigquit")
    assert crash["message"] == "Received sigquit from a child process. It usually means the child failed."
    assert crash["after_ready"] is True


@pytest.mark.parametrize("scanner", ENGINES)
def test_probes_stamped_by_a_collector_stretch_a_hung_run(tmp_path: Path, scanner: str) -> None:
    """kubectl --timestamps in front of every line; the server hangs in graph capture while
    old uvicorn lines (no clock of their own) log health probes for ten minutes."""
    own = GOOD.splitlines()
    own = [line for line in own[: next(i for i, line in enumerate(own) if "Capture cuda graph begin" in line) + 1]
           if STAMP.match(line)]
    lines = []
    for line in own:
        date, time = STAMP.match(line).groups()  # type: ignore[union-attr]
        lines.append(f"{date}T{time}.000000000Z {line}")
    for i in range(600):  # from 17:50:00, one a second
        minute, second = divmod(50 * 60 + i, 60)
        lines.append(f'2025-08-31T17:{minute:02d}:{second:02d}.000000000Z INFO:     10.0.0.9:{1000 + i} '
                     f'- "GET /health HTTP/1.1" 503 Service Unavailable')
    path = tmp_path / "hung.log"
    path.write_text("\n".join(lines) + "\n")
    (run,) = parse_paths([str(path)], scanner=scanner).as_contract()["runs"]
    assert run["outcome"] == "incomplete"
    assert run["last_ts"] == "2025-08-31T17:59:59"  # the last probe's, not 17:49:34 (the last own line)
    assert run["lines"][1] == len(lines)


@pytest.mark.parametrize("scanner", ENGINES)
def test_a_request_stamped_after_the_last_line_does_not_stretch_the_run(tmp_path: Path, scanner: str) -> None:
    """Two processes' clocks a second apart: the last line is the batch line. Access lines,
    like batch lines, are traffic: the run ends at its last line's time."""
    lines = _traffic(400, first_request_at=0, health_at=None)
    lines.append('[2025-08-31 17:50:30] INFO:     10.0.0.7:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK')
    lines.append("[2025-08-31 17:50:29] Decode batch. #running-req: 1, #token: 9, token usage: 0.00")
    path = _write(tmp_path, lines)
    (run,) = parse_paths([str(path)], scanner=scanner).as_contract()["runs"]
    assert run["last_ts"] == "2025-08-31T17:50:29"
    assert run["lines"][1] == len(path.read_text().splitlines())

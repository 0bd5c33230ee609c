"""live/options.py: what `wait` is asked to watch, its durations as people write them, and what
cannot be waited for, refused before anything is watched."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firedup.errors import UsageError
from firedup.live.options import WaitOptions, check_options, parse_duration, parse_timeout


@pytest.mark.parametrize(("text", "expected"), [
    ("auto", (None, True)), ("0", (0.0, False)), ("900", (900.0, False)), ("90s", (90.0, False)),
    ("15m", (900.0, False)), ("1.5h", (5400.0, False)), ("AUTO", (None, True)), ("never", (None, False)),
    # as kubectl (Go durations) and systemd write them
    ("1m30s", (90.0, False)), ("15min", (900.0, False)), ("1h", (3600.0, False)), ("2h30m", (9000.0, False)),
    ("1 min 30 s", (90.0, False)), ("500ms", (0.5, False)), ("90 seconds", (90.0, False)),
])
def test_timeouts_read_like_people_write_them(text: str, expected: tuple[float | None, bool]) -> None:
    assert parse_timeout(text) == expected


# inf, nan and 1e400 gave a traceback (issue 13); a year is the most a timeout may be
@pytest.mark.parametrize("text", ["soon", "-5", "15x", "", "inf", "nan", "1e400", "-inf", "1m30", "m", "1.2.3s",
                                  "9" * 400, "400d", "5s5", "s5"])
def test_a_bad_timeout_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_timeout(text)


@given(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_a_duration_is_the_sum_of_its_parts(h: int, m: int, s: int) -> None:
    written = "".join(f"{n}{unit}" for n, unit in ((h, "h"), (m, "m"), (s, "s")) if n) or "0s"
    assert parse_duration(written, "--x") == h * 3600 + m * 60 + s


def test_a_directory_or_a_device_is_no_log(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        check_options(WaitOptions(tmp_path, timeout=1, auto_timeout=False))
    with pytest.raises(UsageError, match="not a regular file"):
        check_options(WaitOptions(Path("/dev/null"), timeout=1, auto_timeout=False))


def test_nothing_to_wait_for_and_a_record_nowhere_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="nothing to wait for"):
        check_options(WaitOptions(None))
    with pytest.raises(UsageError, match="no such directory"):
        check_options(WaitOptions(tmp_path / "x.log", record=tmp_path / "no" / "r.json"))
    check_options(WaitOptions(tmp_path / "not-yet.log"))  # a log that does not exist yet is waited for


def test_the_log_name_says_what_is_read() -> None:
    assert WaitOptions(None, log_stream=0).log_name == "stdin"
    assert WaitOptions(Path("a/server.log")).log_name == "a/server.log"
    assert WaitOptions(None, url="http://127.0.0.1:1/").log_name is None

"""Partial timestamps completed with the year or date they leave out, and where it came from."""

from __future__ import annotations

from datetime import date

import pytest

from firedup.read.clock import Clock


def _first(clock: Clock, month_day: str, time_text: str = "23:59:50") -> str:
    stamp = clock.resolve(month_day=month_day, time_text=time_text)
    assert stamp is not None
    return stamp.iso


@pytest.mark.parametrize(("given", "month_day", "expected"), [
    (date(2025, 6, 1), "12-31", "2025-12-31T23:59:50"),  # the year of --date
    (date(2026, 1, 1), "12-31", "2025-12-31T23:59:50"),  # New Year's night: December is last year's
    (date(2025, 12, 31), "01-01", "2026-01-01T23:59:50"),
    (date(2025, 12, 31), "12-31", "2025-12-31T23:59:50"),
])
def test_year_from_date(given: date, month_day: str, expected: str) -> None:
    clock = Clock(default_date=given, file_date=date(2030, 1, 1))
    assert _first(clock, month_day) == expected
    assert clock.date_source == "--date"


@pytest.mark.parametrize(("written", "month_day", "year"), [
    (date(2026, 3, 1), "12-31", 2025),  # the log was written before the file was
    (date(2026, 3, 1), "02-28", 2026),
    (date(2026, 3, 1), "03-02", 2026),  # one day of slack for time zones
    (date(2026, 3, 1), "03-03", 2025),
])
def test_year_from_the_files_modification_date(written: date, month_day: str, year: int) -> None:
    clock = Clock(file_date=written)
    assert _first(clock, month_day).startswith(f"{year}-{month_day}")
    assert clock.date_source == "mtime"


def test_month_day_lines_wrap_at_new_year() -> None:
    clock = Clock(file_date=date(2026, 1, 2))
    assert _first(clock, "12-31", "23:59:59") == "2025-12-31T23:59:59"
    assert _first(clock, "01-01", "00:00:01") == "2026-01-01T00:00:01"


def test_file_year_alone_still_works() -> None:
    clock = Clock(file_year=2024)
    assert _first(clock, "07-01") == "2024-07-01T23:59:50"
    assert clock.date_source == "mtime"


def test_a_date_outside_the_years_a_log_may_have_is_ignored_its_time_kept() -> None:
    """9999-12-31 and 0001-01-01 overflowed the date arithmetic (an OverflowError, "internal error")."""
    from firedup.read.clock import MAX_YEAR, MIN_YEAR

    clock = Clock()
    for text in ("9999-12-31", "0001-01-01", f"{MAX_YEAR + 1}-01-01", f"{MIN_YEAR - 1}-12-31"):
        stamp = clock.resolve(date_text=text, time_text="23:59:59")
        assert stamp is not None and stamp.iso.endswith("T23:59:59") and MIN_YEAR <= stamp.dt.year <= MAX_YEAR
    assert clock.refused == 4 and clock.refused_first == "9999-12-31"
    assert "the date of 4 stamps ignored" in (clock.refused_note() or "")
    assert Clock(default_date=date(9999, 12, 31)).default_date is None  # no evidence either


def test_midnight_wraps_stop_at_the_last_year() -> None:
    """A time-only log whose clock goes back every line: each wrap adds a day, up to MAX_YEAR (on to 9999, an OverflowError)."""
    from firedup.read.clock import MAX_YEAR

    clock = Clock(default_date=date(MAX_YEAR, 12, 30))
    for _ in range(6):
        for time_text in ("13:00:00", "00:00:00"):
            stamp = clock.resolve(time_text=time_text)
            assert stamp is not None and stamp.dt.year <= MAX_YEAR


def test_one_conversion_of_a_collector_stamp() -> None:
    """`Clock.outer_datetime`: a year-less stamp (journald's) takes the year closest to the
    engine's stamp beside it, else to the latest stamp dated, else none here (the source's year
    policy gives one); a day no calendar has is refused once, when the line is read, not again
    when measured."""
    from datetime import datetime

    from firedup.read.collectors import OuterStamp

    clock = Clock()
    journald = OuterStamp("Jan  1 00:00:07", None, 1, 1, "00:00:07", "")
    assert clock.outer_datetime(journald, datetime(2025, 12, 31, 23, 59, 58)) == datetime(2026, 1, 1, 0, 0, 7)
    assert clock.outer_datetime(journald) is None  # no stamp dated yet: the year policy decides
    clock.resolve(date_text="2025-12-31", time_text="23:59:59")
    assert clock.outer_datetime(journald) == datetime(2026, 1, 1, 0, 0, 7)  # the latest stamp's nearest year
    no_such_day = OuterStamp("2026-02-30T10:00:00Z", 2026, 2, 30, "10:00:00", "")
    assert clock.outer_datetime(no_such_day, datetime(2026, 2, 28)) is None
    assert clock.refused == 0
    assert clock.outer_datetime(no_such_day) is None
    assert clock.refused == 1

"""Timestamps as logs write them, completed with the date or year they leave out.

Some engine versions print only the time of day; some never print the year; journald
prints no year either. A collector prefix often carries what the line lacks. The `Clock`
fills the gaps in a fixed order and remembers which source it used, so a report can say
how much to trust a date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache

from firedup.read.collectors import OuterStamp

HALF_DAY = timedelta(hours=12)
ONE_DAY = timedelta(days=1)
# Ranks print the same moment seconds apart, out of order; a line this far behind the
# latest one just after midnight still belongs to the day before.
STRAGGLER = timedelta(minutes=5)
# The years a date read from a log may have: from the Unix epoch to the last whole year of
# 64-bit nanoseconds since it (April 2262), which every output holds (OTLP's unsigned nanos,
# Arrow and pandas timestamps) and which leaves a duration of `core.numbers.MAX_MEASURE`
# seconds either side of any such date inside Python's calendar. The date of a line dated
# 9999-12-31 or 0001-01-01 is ignored (its time of day counts as a time-only line's would),
# with a note on its run (`Clock.refused`).
MIN_YEAR, MAX_YEAR = 1970, 2261


def year_ok(year: int) -> bool:
    return MIN_YEAR <= year <= MAX_YEAR


@dataclass(frozen=True, slots=True, order=True)
class Stamp:
    """A point in time plus the ISO 8601 text it is shown as (the log's own precision)."""

    dt: datetime
    iso: str = field(compare=False)

    def minus(self, other: Stamp) -> float:
        """Seconds from `other` to `self`."""
        return (self.dt - other.dt).total_seconds()

    def plus(self, seconds: float) -> Stamp:
        dt = self.dt + timedelta(seconds=seconds)
        text = dt.isoformat(timespec="milliseconds" if dt.microsecond else "seconds")
        return Stamp(dt, text)

    def __str__(self) -> str:
        return self.iso


@lru_cache(maxsize=4096)
def _hms(time_text: str) -> tuple[int, int, int]:
    """"HH:MM:SS" as numbers: read once per distinct text (a collector's stamp with a fraction of
    its own is new on every line, its time of day is not)."""
    hh, mm, ss = (int(p) for p in time_text.split(":"))
    return hh, mm, ss


@lru_cache(maxsize=4096)
def make_stamp(day: date, time_text: str, frac: str = "") -> Stamp:
    iso = f"{day.isoformat()}T{time_text}" + (f".{frac}" if frac else "")
    return Stamp(_point(day, time_text, frac), iso)


def _point(day: date, time_text: str, frac: str) -> datetime:
    """`make_stamp(...).dt` without the stamp: a collector's stamp (nanoseconds, a new one on
    every line) as a point in time, neither written out nor cached."""
    hh, mm, ss = _hms(time_text)
    return datetime(day.year, day.month, day.day, hh, mm, ss, int((frac + "000000")[:6]) if frac else 0)


@lru_cache(maxsize=4096)
def _time_ok(time_text: str) -> bool:
    """A real time of day: "25:61:99" fits the headers' regex but is a garbled line."""
    hh, mm, ss = _hms(time_text)
    return hh < 24 and mm < 60 and ss < 60


def _closest_day(candidates: list[date], time_text: str, frac: str, anchor: datetime) -> date:
    def distance(day: date) -> float:
        return abs((make_stamp(day, time_text, frac).dt - anchor).total_seconds())

    return min(candidates, key=distance)


@lru_cache(maxsize=1024)
def _day_of(date_text: str) -> date | None:
    """A header's "YYYY-MM-DD" as a date (None if no such day); a log repeats a few days."""
    y, m, d = (int(p) for p in date_text.split("-"))
    return _safe_date(y, m, d)


def _safe_date(year: int, month: int, day: int) -> date | None:
    """The day, or None: Feb 29 in a year that has none, a garbled field, a year out of range."""
    if not year_ok(year):
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _in_range(day: date | None) -> date | None:
    return day if day is not None and year_ok(day.year) else None


def _year_of_date(month: int, anchor: date) -> int:
    """The year of --date, except across New Year: December lines with a January --date are
    from the year before, January lines with a December --date from the year after."""
    if month == 12 and anchor.month == 1:
        return anchor.year - 1
    if month == 1 and anchor.month == 12:
        return anchor.year + 1
    return anchor.year


def _year_on_or_after(month: int, dom: int, earliest: date) -> int:
    """The first year in which month-day falls on or after `earliest` (one day of slack)."""
    candidate = _safe_date(earliest.year, month, dom)
    if candidate is not None and candidate >= earliest - timedelta(days=1):
        return earliest.year
    return earliest.year + 1


def _year_not_after(month: int, dom: int, latest: date) -> int:
    """The last year in which month-day falls on or before `latest` (one day of slack for time zones)."""
    candidate = _safe_date(latest.year, month, dom)
    if candidate is not None and candidate <= latest + timedelta(days=1):
        return latest.year
    return latest.year - 1


def _nearest(outer: OuterStamp, years: tuple[int, ...], near: datetime) -> datetime | None:
    """The collector's stamp in whichever of `years` puts it closest to `near` (None when no
    such year has its day, or lies outside MIN_YEAR-MAX_YEAR)."""
    hh, mm, ss = _hms(outer.time)
    micro = int((outer.frac + "000000")[:6]) if outer.frac else 0
    best: datetime | None = None
    for year in years:
        if not year_ok(year):
            continue
        try:
            dt = datetime(year, outer.month, outer.day, hh, mm, ss, micro)
        except ValueError:
            continue
        if best is None or abs(dt - near) < abs(best - near):
            best = dt
    return best


def _fraction_digits(stamp: Stamp) -> int:
    """Digits of a second the stamp was printed with (0 for whole seconds), at most 6."""
    _, dot, frac = stamp.iso.partition(".")
    return min(len(frac), 6) if dot else 0


def _truncated(dt: datetime, digits: int) -> datetime:
    unit = 10 ** (6 - digits)
    return dt.replace(microsecond=dt.microsecond - dt.microsecond % unit)


class UnsureDate(Exception):
    """A stamp's missing date or year would come from lines a reader left unread
    (`Clock.history_skipped`): the batch engine hands such a source back."""


class Clock:
    """Resolves partial timestamps of one source, in order.

    `date_source` records where the date came from the first time one was needed:
    "log" (the line carries it), "outer" (a collector prefix), "--date", "version" (the
    year guessed from the release of the engine version the log shows), "mtime" (the
    file's modification year), "unknown" (month and day known, the year not: stamps carry
    1970 as a placeholder, views say "year unknown") or "default" (time-only lines with no
    date at all: 1970-01-01, as the contract asks).
    """

    def __init__(self, default_date: date | None = None, file_year: int | None = None,
                 file_date: date | None = None) -> None:
        # a date from outside the log (--date, the file's) out of range is no evidence either
        self.default_date = default_date = _in_range(default_date)
        self.file_date = file_date = _in_range(file_date)
        if file_year is not None and not year_ok(file_year):
            file_year = None
        self.file_year = file_date.year if file_date is not None and file_year is None else file_year
        self.date_source: str | None = None
        # stamps whose date no calendar has or lies outside MIN_YEAR-MAX_YEAR: how many, and the first
        self.refused = 0
        self.refused_first: str | None = None
        # In-log evidence (`Format.release_hint`): the date the log's engine version was
        # released, and why. A log is written on or after it; see `_year_for`.
        self.released: date | None = None
        self._day: date | None = None  # running day for time-only lines
        self._last: datetime | None = None
        self._year: int | None = None  # running year for month-day lines
        # The server's clock minus the collector's, once known: collectors often stamp in
        # host-local time in front of a server logging UTC (Docker Desktop: hours apart).
        # Kept by the lines this clock dates (it puts a time-only line on its day).
        self._outer_offset: timedelta | None = None
        # The same offset as the engine measures it, on lines with the engine's own clock only
        # (`measure_offset`): it moves a line with only a collector's stamp onto that clock.
        self.engine_offset: timedelta | None = None
        # The UTC offset of the collector's stamps `engine_offset` was measured on, where they
        # state one: a stamp written on another offset (`docker events` in +01:00 beside
        # `docker logs -t` in UTC) is moved onto it first.
        self._tz_base: int | None = None
        # Set by a reader that left dated lines unread (the batch engine): the running day and
        # year are then guesses, and completing a stamp from them raises `UnsureDate`.
        self.history_skipped = False
        # The last fully dated stamp read without a collector's (its date, time and fraction as
        # written, and the stamp): lines of one second repeat them, three in four of a start-up's.
        self._last_dated: tuple[str | None, str, str, Stamp] | None = None

    def _note(self, source: str) -> None:
        # "log" is the default; any completed date is the more telling fact, so it sticks.
        if self.date_source in (None, "log"):
            self.date_source = source

    def outer_datetime(self, outer: OuterStamp, near: datetime | None = None) -> datetime | None:
        """The one conversion of a collector's stamp to a point in time, for both engines.

        A stamp with a year is that day; a day no calendar has is None, and counted as refused
        when the line is being read (no `near`). One without a year (journald's) takes the year
        that puts it closest to `near` (the engine's stamp on the same line), else to the latest
        stamp this clock dated; before any, it is None here, and the source's year policy
        (`_year_for`) gives the year of what needs one."""
        found = self._outer_datetime(outer, near)
        if found is not None and outer.tz is not None and self._tz_base is not None and outer.tz != self._tz_base:
            found += timedelta(seconds=self._tz_base - outer.tz)
        return found

    def _outer_datetime(self, outer: OuterStamp, near: datetime | None) -> datetime | None:
        if not _time_ok(outer.time):
            return None
        if outer.year is None:
            near = near or self._last
            if near is None:
                return None
            return _nearest(outer, (near.year - 1, near.year, near.year + 1), near)
        if near is not None:  # a second look at a line read already: its refusal is counted
            return _nearest(outer, (outer.year,), near)
        day = _safe_date(outer.year, outer.month, outer.day)
        if day is None:
            self._refuse(f"{outer.year:04d}-{outer.month:02d}-{outer.day:02d}")
            return None
        return _point(day, outer.time, outer.frac)

    def measure_offset(self, outer: OuterStamp, own: Stamp) -> None:
        """A line with the engine's own stamp `own` behind a collector's `outer`: the offset
        between the two clocks (`engine_offset`)."""
        if self._tz_base is None and outer.tz is not None:
            self._tz_base = outer.tz
        outer_dt = self.outer_datetime(outer, own.dt)
        if outer_dt is not None:
            self.engine_offset = own.dt - outer_dt

    def on_engine_clock(self, outer: OuterStamp, near: Stamp) -> Stamp | None:
        """A collector's stamp moved onto the engine's clock by the offset measured last (None
        until one is, or for a stamp no calendar has); `near`: the engine's latest stamp."""
        if self.engine_offset is None:
            return None
        outer_dt = self.outer_datetime(outer, near.dt)
        if outer_dt is None:
            return None
        dt = outer_dt + self.engine_offset
        return Stamp(dt, dt.isoformat(timespec="milliseconds" if dt.microsecond else "seconds"))

    def first_on_engine_clock(self, early: OuterStamp, outer: OuterStamp, own: Stamp) -> Stamp | None:
        """The collector's stamp `early` on the engine's clock: moved by the offset between the
        two clocks on a line that carries both (`outer` in front of the engine's `own`).

        Both collector stamps are first cut to the precision the engine prints, as the engine
        cuts its own time: a server printing whole seconds at 09:24:44 behind a collector's
        09:24:44.93 shows clocks that agree, not clocks 0.93 s apart.
        """
        both = self.outer_datetime(outer, own.dt)
        if both is None:
            return None
        first = self.outer_datetime(early, both)
        if first is None:
            return None
        digits = _fraction_digits(own)
        dt = _truncated(first, digits) + (own.dt - _truncated(both, digits))
        text = dt.replace(microsecond=0).isoformat()
        if digits:
            text += f".{dt.microsecond:06d}"[:digits + 1]
        return Stamp(dt, text)

    def _refuse(self, text: str) -> None:
        self.refused += 1
        if self.refused_first is None:
            self.refused_first = text

    def refused_note(self) -> str | None:
        """The note a run of this source gets when some of its stamps were left undated."""
        if not self.refused:
            return None
        many = f"{self.refused} stamps" if self.refused > 1 else "a stamp"
        return (f"the date of {many} ignored (no calendar has it, or it lies outside {MIN_YEAR}-{MAX_YEAR}; "
                f"the first: {self.refused_first}): a line's own time of day still counts")

    def resolve(
        self,
        *,
        date_text: str | None = None,
        month_day: str | None = None,
        time_text: str | None = None,
        frac: str = "",
        outer: OuterStamp | None = None,
        foreign: bool = False,
    ) -> Stamp | None:
        """The full stamp of a line. `foreign` lines (a third-party logger's clock) are
        resolved the same way but never decide where the run's dates came from."""
        if not foreign:
            return self._resolve(date_text, month_day, time_text, frac, outer)
        saved = self.date_source
        try:
            return self._resolve(date_text, month_day, time_text, frac, outer)
        finally:
            self.date_source = saved

    def _resolve(
        self,
        date_text: str | None,
        month_day: str | None,
        time_text: str | None,
        frac: str,
        outer: OuterStamp | None,
    ) -> Stamp | None:
        last = self._last_dated
        if last is not None and outer is None and date_text == last[0] and time_text == last[1] and frac == last[2]:
            # The last dated stamp's text again: the same stamp (`make_stamp`), and remembering it
            # again changes nothing (`_remember` only moves forward); only where the dates came
            # from may have been set back since, by a foreign line (`resolve`).
            self._note("log")
            return last[3]
        if time_text is not None and not _time_ok(time_text):
            return None  # a garbled stamp is no stamp
        if outer is not None and not _time_ok(outer.time):
            outer = None
        if time_text is None:
            return self._from_outer(outer) if outer else None
        day = _day_of(date_text) if date_text is not None else None
        if date_text is not None and day is None:
            self._refuse(date_text)  # the time of day still counts: read as a line without a date
        elif day is not None:
            self._note("log")
            stamp = make_stamp(day, time_text, frac)
            full_outer = self.outer_datetime(outer, stamp.dt if outer.year is None else None) if outer else None
            if full_outer is not None:
                self._outer_offset = stamp.dt - full_outer
            self._remember(stamp)
            if outer is None:
                self._last_dated = (date_text, time_text, frac, stamp)
            return stamp
        if month_day is not None:
            month, dom = (int(p) for p in month_day.split("-"))
            return self._month_day(month, dom, time_text, frac, self.outer_datetime(outer) if outer else None)
        # Time of day only: the collector's prefix, when there is one, supplies the date.
        anchor = self._outer_anchor(outer) if outer else None
        if anchor is not None:
            day = self._day_by_outer(time_text, frac, anchor)
            self._note("outer")
        else:
            day = self._running_day(time_text)
        stamp = make_stamp(day, time_text, frac)
        self._remember(stamp)
        return stamp

    def _outer_anchor(self, outer: OuterStamp) -> datetime | None:
        """The collector's stamp as a point in time (`outer_datetime`); journald's, which has no
        year, before any stamp is dated takes the year the other year-less stamps of this
        source use."""
        if outer.year is not None or self._last is not None:
            return self.outer_datetime(outer)
        day = _safe_date(self._year_for(outer.month, outer.day), outer.month, outer.day)
        return _point(day, outer.time, outer.frac) if day else None

    def _day_by_outer(self, time_text: str, frac: str, anchor: datetime) -> date:
        """The day of a time-only line from the collector's stamp in front of it.

        The first such line takes the day that puts it nearest the collector's stamp (right
        for any time-zone gap under 12 h, and for a line written just before midnight and
        stamped just after). Later lines keep the offset between the two clocks that the
        previous line showed, or that a fully dated line proved, so a gap of any size stays
        consistent and midnight on either clock moves the date exactly once.
        """
        base = anchor.date()
        target = anchor if self._outer_offset is None else anchor + self._outer_offset
        day = _closest_day([base - ONE_DAY, base, base + ONE_DAY], time_text, frac, target)
        self._outer_offset = make_stamp(day, time_text, frac).dt - anchor
        return day

    def _running_day(self, time_text: str) -> date:
        if self.history_skipped:
            raise UnsureDate("a time-only stamp after skipped dated lines")
        if self._day is None:
            if self.default_date is not None:
                self._day = self.default_date
                self._note("--date")
            else:
                self._day = date(1970, 1, 1)
                self._note("default")
        candidate = make_stamp(self._day, time_text).dt
        if self._last is not None and self._last - candidate > HALF_DAY and self._day.year < MAX_YEAR:
            self._day += ONE_DAY  # the clock wrapped past midnight (a few million wraps stop at MAX_YEAR)
        elif self._last is not None and timedelta(0) <= self._last - (candidate - ONE_DAY) <= STRAGGLER:
            return self._day - ONE_DAY  # a rank's line from just before the wrap, printed late
        return self._day

    def _year_for(self, month: int, dom: int) -> int:
        """The year of a stamp that has none: the log's own full dates if they came first,
        else --date, else the file's modification date, else 1970."""
        if self.history_skipped:
            raise UnsureDate("a year-less stamp after skipped dated lines")
        if self._year is None:
            if self._last is not None:  # the log's own full dates came first: their year
                self._year = self._last.year
            elif self.default_date is not None:
                self._year = _year_of_date(month, self.default_date)
                self._note("--date")
            elif self.released is not None and not self._file_agrees(month, dom, self.released):
                # The version's release, from inside the log, over the date of a file that may
                # be a copy: the first month-day on or after the release.
                self._year = _year_on_or_after(month, dom, self.released)
                self._note("version")
            elif self.file_date is not None:
                # The log was written before the file was last modified.
                self._year = _year_not_after(month, dom, self.file_date)
                self._note("mtime")
            elif self.file_year is not None:
                self._year = self.file_year
                self._note("mtime")
            else:
                self._year = 1970  # a placeholder: "unknown" tells views not to show it
                self._note("unknown")
        elif self._last is not None and month < self._last.month - 6:
            self._year += 1  # December -> January: the year turned
        return self._year

    def _file_agrees(self, month: int, dom: int, released: date) -> bool:
        """The file's date puts the log within a year after its version's release: both agree,
        and the file's date is the closer bound (a file copied years later is not)."""
        if self.file_date is None:
            return False
        day = _safe_date(_year_not_after(month, dom, self.file_date), month, dom)
        return day is not None and released - timedelta(days=1) <= day <= released + timedelta(days=366)

    def _month_day(self, month: int, dom: int, time_text: str, frac: str, anchor: datetime | None) -> Stamp | None:
        if anchor is not None:
            years = [anchor.year - 1, anchor.year, anchor.year + 1]
            days = [d for d in (_safe_date(y, month, dom) for y in years) if d]
            if not days:
                return None
            day = _closest_day(days, time_text, frac, anchor)
            self._note("outer")
            self._year = day.year
        else:
            maybe = _safe_date(self._year_for(month, dom), month, dom)
            if maybe is None:
                return None
            day = maybe
        stamp = make_stamp(day, time_text, frac)
        self._remember(stamp)
        return stamp

    def _from_outer(self, outer: OuterStamp) -> Stamp | None:
        if outer.year is not None:
            day = _safe_date(outer.year, outer.month, outer.day)
            if day is None:
                self._refuse(f"{outer.year:04d}-{outer.month:02d}-{outer.day:02d}")
                return None
            self._note("outer")
            return make_stamp(day, outer.time, outer.frac)
        return self._month_day(outer.month, outer.day, outer.time, outer.frac, None)

    def _remember(self, stamp: Stamp) -> None:
        if self._last is None or stamp.dt > self._last:
            self._last = stamp.dt
        if self._day is None or stamp.dt.date() > self._day:
            self._day = stamp.dt.date()

"""Units and text fitting every view shares: durations, clock readings, names cut to fit.

Pure functions with no knowledge of runs, so that tables, live views and renderers use one
spelling of "4 min 02 s" without importing each other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from firedup.core.lazy import lazy_regex
from firedup.errors import UsageError

Style = Callable[..., str]
# The narrowest width a text view is fitted to: `COLUMNS=1` gets the 20-column view (a view's
# indents and fixed columns need some room; narrower, nothing would fit).
MIN_WIDTH = 20


def plain(text: str, **_: object) -> str:
    return text


def fmt_time_to_end(seconds: float | None, lower_bound: bool) -> str:
    """A run's time to its end as every view shows it: an excerpt's is a lower bound
    ("≥ 1 min 30 s"), and one that knows less than a second is unknown ("excerpt"), not "0 ms"."""
    if not lower_bound:
        return fmt_duration(seconds)
    if seconds is None or seconds < 1.0:
        return "excerpt"
    return "≥ " + fmt_duration(seconds)


def fmt_duration(seconds: float | None) -> str:
    """Human durations: `850 ms`, `4.2 s`, `58 s`, `4 min 02 s`, `1 h 03 min`."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    total = round(seconds)
    if total < 3600:
        return f"{total // 60} min {total % 60:02d} s"
    return f"{total // 3600} h {(total % 3600) // 60:02d} min"


def fmt_column(values: Sequence[float], signed: bool = False) -> list[str]:
    """A table column's durations in one unit, chosen by its largest value (`7.4 s` over
    `-685 ms` read as the bigger number): `ms` when all are under a second; seconds (one
    decimal under 10 s) under a minute; `4 min 02 s` (`0 min 08 s` too) under an hour; else
    `1 h 03 min`. `signed`: a `+` before positive values."""
    biggest = max((abs(v) for v in values if math.isfinite(v)), default=0.0)

    def one(v: float) -> str:
        a = abs(v)
        if biggest < 1:
            text = f"{a * 1000:.0f} ms"
        elif biggest < 60:
            text = f"{a:.1f} s" if biggest < 10 else f"{a:.0f} s"
        elif biggest < 3600:
            total = round(a)
            text = f"{total // 60} min {total % 60:02d} s"
        else:
            total = round(a / 60)
            text = f"{total // 60} h {total % 60:02d} min"
        return ("-" if v < 0 and text.strip("0 .hmins") else "+" if signed and v > 0 else "") + text

    return [one(v) if math.isfinite(v) else "?" for v in values]


def fmt_clock(seconds: float) -> str:
    """A clock reading: `0:00`, `4:30`, `-5:47`, `1:02:03` (hours only when needed)."""
    if not math.isfinite(seconds):
        return "?"
    total = round(seconds)
    sign = "-" if total < 0 else ""
    total = abs(total)
    if total >= 3600:
        return f"{sign}{total // 3600}:{(total % 3600) // 60:02d}:{total % 60:02d}"
    return f"{sign}{total // 60}:{total % 60:02d}"


def fmt_offset(seconds: float | None) -> str:
    """A start offset in the timeline view: the clock reading, signed."""
    if seconds is None:
        return ""
    text = fmt_clock(seconds)
    return text if text.startswith("-") else "+" + text


# --- fitting a table of runs to the terminal (`parse` here, `runs` in tables.py) ------------

# A source gives up no more than this to make a table fit a narrow terminal; other columns do.
MIN_SOURCE_WIDTH = 20
PHASE_WIDTH = 26  # `load_weights 10 min 18 s`
MIN_PHASE_WIDTH = 14


def common_folder(sources: Sequence[str]) -> str:
    """The folder every source is in (`sample_logs/`), or "" when they share none worth naming."""
    split = [source.split("/")[:-1] for source in sources]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    folder = "/".join(common) + "/" if common else ""
    return folder if folder.strip("/.") else ""


def without_common_folder(sources: Sequence[str]) -> tuple[list[str], str]:
    """The sources without the folder they all share, and the line that names it once (or "")."""
    folder = common_folder(sources)
    if not folder:
        return list(sources), ""
    return [source[len(folder):] for source in sources], f"(sources in {folder})"


def cut_middle(text: str, width: int) -> str:
    """`062_docs-ci-e…2025-03.log`: a file name keeps its number and its end."""
    if len(text) <= width:
        return text
    keep = max(width - 1, 0)
    head, tail = keep - keep // 2, keep // 2
    return text[:head] + "…" + (text[-tail:] if tail else "")


def cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def fit_lines(text: str, width: int | None) -> str:
    """Every line of a text view no wider than `width` (the terminal's): a longer line wraps at
    spaces, its continuation indented two more than the line itself, so a sentence or a list of
    files still reads as one item; a word longer than the room is cut across lines, never lost.
    Lines that already fit (tables sized to the width) are left exactly as they are."""
    if width is None:
        return text
    import textwrap

    width = max(width, MIN_WIDTH)
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = _DURATION().sub(lambda m: m.group(0).replace(" ", _GLUE), line.lstrip(" "))
        indent = " " * min(len(line) - len(line.lstrip(" ")), width // 2)
        out.extend(piece.replace(_GLUE, " ") for piece in textwrap.wrap(
            body, width, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=True,
            break_on_hyphens=False, drop_whitespace=True) or [line[:width]])
    return "\n".join(out)


def wrap(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    """`textwrap.wrap` that never cuts a duration between its number and its unit (`32 | s`)."""
    import textwrap

    glued = _DURATION().sub(lambda m: m.group(0).replace(" ", _GLUE), text)
    return [piece.replace(_GLUE, " ") for piece in textwrap.wrap(
        glued, width, initial_indent=initial_indent, subsequent_indent=subsequent_indent,
        break_on_hyphens=False)]


# a duration or a share is not cut between its number and its unit ("+11 | min 10 s" read badly)
# (each number starts where no digit precedes it, and is bounded: a run of a million digits in
# rendered text costs linear time, not a search from each of its digits to its end)
_DURATION = lazy_regex(r"(?<!\d)(?:\d{1,12} h \d{1,12} min|\d{1,12} min \d{1,12} s"
                       r"|\d{1,12}(?:\.\d{1,12})? (?:h|min|s|ms|%)(?![\w]))")
_GLUE = "\x00"


def outcome_word(outcome: str, category: str | None, ready_kind: str | None = None) -> str:
    """A run's outcome as the text views name it: ready, crashed, incomplete, hung (a crash of
    category `hang`: the server said it is stuck and did not die) or engine (its engine
    initialised and nothing in the log serves: `ready_kind` engine)."""
    if outcome == "crashed" and category == "hang":
        return "hung"
    return "engine" if outcome != "ready" and outcome != "crashed" and ready_kind == "engine" else outcome


def count_line(rows: Sequence[tuple[str, str | None, float | None, bool, str | None]],
               width: int | None = 80) -> str:
    """The answer of a table of runs, in one line of `width`: `22 runs: 20 ready, slowest
    15 min 16 s (~15 min 37 s from launch); 2 crashed (distributed, oom)`; where the line would be
    wider, the crashes' kinds go first, then the second clock, then the slowest time (the table
    shows them all).

    Each row is (outcome: the contract's, or "engine" for an engine ready with no server; crash
    category, seconds to its end, lower bound, time from launch as printed or None); the slowest
    ready run's time is the one its row shows."""
    n = len(rows)
    ready = [r for r in rows if r[0] == "ready"]
    head = launched = ""
    if ready:
        slowest = max(ready, key=lambda r: r[2] or 0.0)
        time = fmt_time_to_end(slowest[2], slowest[3])
        launched = f" ({slowest[4]} from launch)" if slowest[4] and not slowest[3] else ""
        head = (f"ready in {time}{launched}" if n == 1
                else f"{len(ready)} ready, " + ("in " if len(ready) == 1 else "slowest ") + time + launched)
    crashed = [r[1] or "unknown" for r in rows if r[0] == "crashed" and r[1] != "hang"]
    kinds = sorted(set(crashed), key=lambda c: (-crashed.count(c), c))
    hung = sum(1 for r in rows if r[0] == "crashed" and r[1] == "hang")
    incomplete = sum(1 for r in rows if r[0] == "incomplete")
    engine = sum(1 for r in rows if r[0] == "engine")

    def line(named: bool, launch: bool = True, short: bool = False) -> str:
        parts = [head if launch or not launched else head.replace(launched, "")] if head else []
        if short and parts and n > 1:
            parts = [f"{len(ready)} ready"]
        if crashed:
            what = f" ({', '.join(kinds)})" if named else ""
            parts.append(f"crashed{what}" if n == 1 else f"{len(crashed)} crashed{what}")
        if hung:
            parts.append("hung" if n == 1 else f"{hung} hung")
        if engine:
            parts.append("engine ready, no server" if n == 1 else
                         f"{engine} engine ready" + ("" if short else " (no server)"))
        if incomplete:
            parts.append("incomplete" if n == 1 else f"{incomplete} incomplete")
        return f"{n} run{'s' if n != 1 else ''}: " + "; ".join(parts)

    for text in (line(named=True), line(named=False), line(named=False, launch=False)):
        if width is None or len(text) <= width:
            return text
    return line(named=False, launch=False, short=True)


def parse_size(value: str) -> int:
    """`1G`, `200M`, `150k` or a plain byte count, in bytes; ValueError saying why otherwise (a
    negative size was once taken as "write nothing" and reported as done)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = value.strip().lower().removesuffix("b").removesuffix("i")
    try:
        size = int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)
    except (ValueError, OverflowError):
        raise ValueError(f"{value!r} is not a size like 1G, 200M or 150k") from None
    if size <= 0:
        raise ValueError(f"{value!r}: a size must be more than 0 bytes")
    return size


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
                   "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
                   "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
                   "d": 86400.0, "day": 86400.0, "days": 86400.0}
_DURATION_PART = lazy_regex(r"\s{0,16}(\d{1,12}(?:\.\d{1,12})?|\.\d{1,12})\s{0,16}([a-z]{1,16})\s{0,16}")
MAX_DURATION_S = 366 * 86400.0  # a year: more is a typo (and past what a thread can sleep)


# How `never` is written to an option that takes a duration (`wait --timeout never`).
NEVER = ("never", "none", "forever")


def parse_duration(text: str, option: str) -> float:
    """Seconds from `90`, `90s`, `1m30s`, `15min`, `1.5h`, `2 h 30 min` (as kubectl and
    systemd write them). Never inf or NaN: `1e400`, `inf` and `nan` are refused, as is
    anything over a year."""
    value = text.strip().lower()
    hint = f"{option} {text!r}: give seconds (900) or a duration (90s, 1m30s, 15min, 1h)"
    if re.fullmatch(r"\d+(?:\.\d+)?|\.\d+", value):
        seconds = float(value)
    else:
        seconds, at = 0.0, 0
        for m in _DURATION_PART().finditer(value):
            if m.start() != at or m.group(2) not in _DURATION_UNITS:
                raise UsageError(hint)
            seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
            at = m.end()
        if at == 0 or at != len(value):
            raise UsageError(hint)
    if not math.isfinite(seconds) or seconds > MAX_DURATION_S:
        raise UsageError(f"{option} {text!r}: at most a year")
    return seconds

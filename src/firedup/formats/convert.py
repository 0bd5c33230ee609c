"""Field converters: the text a rule's group read -> the value its event carries, checked.

A log is hostile: a number may be `inf`, 400 digits, or written in Arabic-Indic digits. Each
converter refuses what is not a value firedup holds (ValueError), and `convert_field` then
leaves the field out and lists it under `DROPPED`, so every reader of a field may take its type
for granted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from firedup.core.numbers import INT64_MAX, INT64_MIN, MAX_MEASURE, measure_ok, shown_number
from firedup.core.safe import valid_text

Converter = Callable[[str], Any]
# Where a converter refused a value, `convert` lists `key=text` under this key of the fields (the
# timeline turns each into a note on its run); a field named with a leading `_` is never shown.
DROPPED = "_dropped"


def to_float(text: str) -> float:
    """A measurement: ASCII digits, finite and at most `MAX_MEASURE` (`core.numbers`), else
    ValueError (`elapsed=9…9 s` of 400 nines is `inf` to `float()`)."""
    if not text.isascii():
        raise ValueError(f"{text!r} is not written in ASCII digits")
    value = float(text)
    if not -MAX_MEASURE <= value <= MAX_MEASURE:  # false for NaN too: `measure_ok`, inline
        raise ValueError(f"{text!r} is not a finite number of at most {MAX_MEASURE:g}")
    return value


def to_int(text: str) -> int:
    """A count: ASCII digits within 64 bits (`int()` takes superscripts' neighbours, Arabic-Indic
    and full-width digits; a log's numbers are ASCII)."""
    if not text.strip().isascii():
        raise ValueError(f"{text!r} is not written in ASCII digits")
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:  # `measure_ok`, inline
        raise ValueError(f"{text!r} does not fit in 64 bits")
    return value


def to_list(text: str) -> list[int]:
    """`[1, 2, 4]` or `1, 2, 4` as printed for captured batch sizes (ASCII digits, 64 bits)."""
    return [to_int(part) for part in re.findall(r"-?[0-9]{1,19}", text)]


def to_url(text: str) -> str:
    """A URL a server says it listens on (`host:port` alone is taken as http): http(s), a host,
    and a port of 1-65535 in ASCII digits when it has one; else ValueError (`wait` and `budget`
    read the port from it)."""
    from urllib.parse import urlsplit

    parts = urlsplit(text if "://" in text else f"http://{text}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text!r} is not an http(s) URL with a host")
    port = parts.port  # ValueError for a port out of range or not in ASCII digits
    if port == 0:
        raise ValueError(f"{text!r} names port 0")
    return text


def convert_field(conv: Converter, key: str, text: str, out: dict[str, Any]) -> None:
    """`out[key]` = `conv(text)`, checked: a converter that refuses the text, or a number that is
    not finite or not of a size firedup holds (`core.numbers.measure_ok`), leaves the field out
    and lists it under `DROPPED`. The text is never kept in the number's place: every reader of
    a field may then take its type for granted."""
    try:
        value = conv(text)
    except (ArithmeticError, TypeError, ValueError, RecursionError):
        value = _REFUSED
    kind = type(value)  # the common kinds checked inline: this runs for every field of every event
    if kind is str or (kind is float and -MAX_MEASURE <= value <= MAX_MEASURE) or (
            kind is int and INT64_MIN <= value <= INT64_MAX):
        out[key] = value
        return
    if value is _REFUSED or (isinstance(value, (int, float)) and not measure_ok(value)):
        out.setdefault(DROPPED, []).append(f"{key}={shown_number(text)}")
        return
    out[key] = value


_REFUSED = object()


def to_bool(text: str) -> bool:
    return text.strip().lower() in {"true", "1", "yes"}


def to_day_seconds(text: str) -> float:
    """`16:15:03,610` (or `.610`) as seconds since midnight: a time another logger printed on a
    line, kept as a field (its clock is not the engine's, so it never becomes the line's time)."""
    hms, _, frac = text.replace(",", ".").partition(".")
    hours, minutes, seconds = (int(part) for part in hms.split(":"))
    return hours * 3600 + minutes * 60 + seconds + (float(f"0.{frac}") if frac else 0.0)


def json_unescape(body: str) -> str:
    """The text of a JSON string body (`a \\"b\\" \\u2014`); the body itself if it is not valid.
    A lone surrogate (`\\ud800`, which JSON allows and no UTF-8 output can hold) stays written as
    its escape (`core.safe.valid_text`)."""
    if "\\" not in body:
        return body
    import json  # JSON-lines logs only

    try:
        text = json.loads(f'"{body}"')
    except ValueError:
        return body
    return valid_text(text) if isinstance(text, str) else body

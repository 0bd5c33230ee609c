"""The one rule for a number read from a log: finite, and of a size firedup can hold.

A log is text anyone can write. `elapsed=9…9 s` (400 nines) is `inf` to `float()`, a port of
thirty digits is no 64-bit integer, `1e999` in an args dump is `inf` again: such a value, used,
overflows a date, writes `Infinity` into JSON (which no JSON reader takes) or fails a polars
column. So every number is checked where it is read (a rule's field converter, the args dump,
a date) and one that fails is dropped, with a note on its run; every view then only meets
numbers that fit.

Two kinds of numbers come out of a log:

* measurements (seconds, GB, GiB, counts the engine printed): decimals finite and at most
  `MAX_MEASURE` in size (a billion: 31 years of seconds, an exabyte of GB), so that a duration
  added to any date the clock accepts stays a date; integers within 64 bits;
* flag values (`tp_size=2`, `rope_theta=1e6`): integers within 64 bits (a table column),
  decimals finite. Lists and dicts are checked item by item; one that holds a bad number is
  dropped whole.
"""

from __future__ import annotations

import math
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_MEASURE = 1e9


def measure_ok(value: float | int) -> bool:
    """A measurement firedup can use: a finite decimal of at most `MAX_MEASURE`, or an int64."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    return math.isfinite(value) and abs(value) <= MAX_MEASURE


def value_ok(value: Any, depth: int = 0) -> bool:
    """A flag value every output can hold: no integer beyond 64 bits and no NaN or infinity,
    in it or in any list or dict it holds (nested at most 32 deep)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > 32:
        return False
    if isinstance(value, (list, tuple)):
        return all(value_ok(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(value_ok(v, depth + 1) for v in value.values())
    return True


def shown_number(text: str, most: int = 24) -> str:
    """A number's text as a note quotes it: the digits of a 400-digit one cut in the middle."""
    return text if len(text) <= most else f"{text[:most // 2]}…{text[-(most // 2):]} ({len(text)} characters)"


__all__ = ["INT64_MAX", "INT64_MIN", "MAX_MEASURE", "measure_ok", "shown_number", "value_ok"]

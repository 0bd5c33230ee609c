"""The format registry: every module in this package that defines `FORMAT` is an engine.

Adding an engine means adding a module here; nothing else in firedup names engines.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Container
from functools import cache

from firedup.errors import UnknownEngineError
from firedup.formats.base import Format, Header, Rule

__all__ = ["Format", "Header", "Rule", "all_formats", "get_format", "sniff"]

_NOT_ENGINES = {"base"}


@cache
def all_formats() -> dict[str, Format]:
    """Import every engine module once, in name order."""
    found: dict[str, Format] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in _NOT_ENGINES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        fmt = getattr(module, "FORMAT", None)
        if isinstance(fmt, Format):
            found[fmt.name] = fmt
    return found


def get_format(name: str) -> Format:
    formats = all_formats()
    try:
        return formats[name]
    except KeyError:
        known = ", ".join(sorted(formats))
        raise UnknownEngineError(f"unknown engine {name!r} (known: {known})") from None


def sniff(sample: str, default: str = "sglang", found: Container[str] | None = None) -> Format:
    """The format whose sniff literals best explain `sample`; `default` on a tie at zero.
    `found`: the sniff literals a caller already found in `sample` (the batch engine's scan)."""
    formats = all_formats()
    scored = sorted(((fmt.sniff(sample, found), name) for name, fmt in formats.items()), reverse=True)
    if not scored or scored[0][0] <= 0:
        return formats[default]
    return formats[scored[0][1]]

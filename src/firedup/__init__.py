"""firedup: profile the startup of LLM inference servers from their logs.

    >>> import firedup
    >>> result = firedup.parse_paths(["sample_logs/"])
    >>> runs = firedup.load(["sample_logs/"])        # polars tables over many runs

Importing firedup is cheap: polars and matplotlib load only when a table or a chart is
asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from firedup.tables.frames import Runs, load
    from firedup.timeline.build import Run
    from firedup.timeline.pipeline import ParseResult, parse_paths

_LAZY = {
    "parse_paths": ("firedup.timeline.pipeline", "parse_paths"),
    "ParseResult": ("firedup.timeline.pipeline", "ParseResult"),
    "Run": ("firedup.timeline.build", "Run"),
    "load": ("firedup.tables.frames", "load"),
    "Runs": ("firedup.tables.frames", "Runs"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'firedup' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(target[0]), target[1])


__all__ = ["ParseResult", "Run", "Runs", "__version__", "load", "parse_paths"]

"""firedup: profile the startup of LLM inference servers from their logs.

    import firedup
    result = firedup.parse(["sample_logs/"])        # runs, milestones, phases, crashes
    runs = firedup.load(["sample_logs/"])           # polars tables over many runs
    firedup.compare(runs, by="disable_cuda_graph")  # also advise, budgets, check, plot, report, export, summary, ingest

The functions live in `firedup.api`, the errors in `firedup.errors` (every one a
`firedup.FiredupError`). Importing firedup is cheap: polars and matplotlib load only when a
table or a chart is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from firedup.errors import (
    DataError,
    FiredupError,
    FollowError,
    InputError,
    NoStartupError,
    OutputError,
    StoreError,
    UnknownEngineError,
    UnknownFlagError,
    UsageError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from firedup.api import (
        Chart,
        advise,
        budgets,
        check,
        compare,
        export,
        ingest,
        load,
        open_store,
        parse,
        plot,
        replay,
        report,
        summary,
        wait,
    )
    from firedup.render.report import ReportResult
    from firedup.tables.advice import Advice
    from firedup.tables.budget import BudgetReport
    from firedup.tables.check import CheckReport
    from firedup.tables.compare import Comparison, Delta
    from firedup.tables.frames import Runs
    from firedup.tables.grouping import Coverage, Group
    from firedup.tables.risk import Budget
    from firedup.tables.store import IngestReport, Store
    from firedup.timeline.pipeline import ParseResult, SourceReport, parse_paths
    from firedup.timeline.run import Crash, Milestone, Phase, Run

_API = ("advise", "budgets", "check", "compare", "export", "ingest", "load", "open_store", "parse", "plot", "replay",
        "report", "summary", "wait")
_LAZY: dict[str, tuple[str, str]] = {
    **{name: ("firedup.api", name) for name in _API},
    "parse_paths": ("firedup.timeline.pipeline", "parse_paths"),  # the layer below `parse`, kept for callers
    "ParseResult": ("firedup.timeline.pipeline", "ParseResult"),
    "SourceReport": ("firedup.timeline.pipeline", "SourceReport"),
    "Run": ("firedup.timeline.run", "Run"),
    "Milestone": ("firedup.timeline.run", "Milestone"),
    "Phase": ("firedup.timeline.run", "Phase"),
    "Crash": ("firedup.timeline.run", "Crash"),
    "Runs": ("firedup.tables.frames", "Runs"),
    "Comparison": ("firedup.tables.compare", "Comparison"),
    "Group": ("firedup.tables.grouping", "Group"),
    "Delta": ("firedup.tables.compare", "Delta"),
    "Budget": ("firedup.tables.risk", "Budget"),
    "BudgetReport": ("firedup.tables.budget", "BudgetReport"),
    "CheckReport": ("firedup.tables.check", "CheckReport"),
    "Store": ("firedup.tables.store", "Store"),
    "IngestReport": ("firedup.tables.store", "IngestReport"),
    "ReportResult": ("firedup.render.report", "ReportResult"),
    "Chart": ("firedup.api", "Chart"),
    "Advice": ("firedup.tables.advice", "Advice"),
    "Coverage": ("firedup.tables.grouping", "Coverage"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'firedup' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value  # once: later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Advice", "Budget", "BudgetReport", "Chart", "CheckReport", "Comparison", "Coverage", "Crash", "DataError", "Delta", "FiredupError", "FollowError",
    "Group", "IngestReport", "InputError", "Milestone", "NoStartupError", "OutputError", "ParseResult", "Phase",
    "ReportResult", "Run", "Runs", "SourceReport", "Store", "StoreError", "UnknownEngineError",
    "UnknownFlagError", "UsageError", "__version__", "advise", "budgets", "check", "compare", "export", "ingest",
    "load", "open_store", "parse", "parse_paths", "plot", "replay", "report", "summary", "wait",
]

"""What the commands say besides their views: the one-line answers of the commands that write
(`ingest`, `plot`, `export`, `report`) and the notes on inputs that held no server start-up.

Plain strings, so the library can say the same as the command line; the CLI only prints them
(through its terminal gate) and fits them to the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from firedup.tables.store import IngestReport
    from firedup.timeline.pipeline import ParseResult


def n_runs(n: int) -> str:
    """`1 run`, `22 runs`."""
    return f"{n} run{'s' if n != 1 else ''}"


def unread_lines(result: ParseResult) -> list[str]:
    """The inputs that could not be read, or held no startup, as `firedup: file: reason`."""
    out = [f"firedup: {err}" for err in result.errors]
    for report in result.sources:
        if report.engine is None and report.skipped:  # a format matched a line, but it is no server's log
            from firedup.timeline.pipeline import OWN_OUTPUT

            said = "note" if report.skipped.startswith(OWN_OUTPUT) else "firedup"  # ours: no error
            out.append(f"{said}: {report.source}: {report.skipped}")
        elif report.engine is None:  # readable, but no engine firedup knows wrote it
            from firedup.formats import no_known_engine

            out.append(f"firedup: {report.source}: {no_known_engine(report.looks_like)}")
        elif report.runs == 0 and report.cut_short is None:  # readable, but probably not the log the user meant
            out.append(f"firedup: {report.source}: no server startup found in it (read as {report.engine})")
    return out


def ingest_answer(report: IngestReport, root: str) -> str:
    """`22 runs added to ST from 21 files (3 files already in the store)`: ingest's answer."""
    files = len(report.added)
    text = f"{n_runs(report.runs_added)} added to {root}"
    if files:
        text += f" from {files} file{'s' if files != 1 else ''}"
    extra = []
    if report.present:
        extra.append(f"{len(report.present)} file{'s' if len(report.present) != 1 else ''} already in the store")
    if report.empty:
        extra.append(f"{len(report.empty)} with no server startup")
    return text + (f" ({'; '.join(extra)})" if extra else "")


def ingest_lines(report: IngestReport, root: str, verbose: bool) -> list[str]:
    """`ingest`'s output: the answer, then (`verbose`) each file, and always the files with no
    server startup (probably not the logs the user meant)."""
    out = [ingest_answer(report, root)]
    if verbose:
        out.extend(f"  added {n_runs(n)} from {source}" for source, n in report.added)
        out.extend(f"  already in the store: {source}" for source in report.present)
    out.extend(f"  no server startup found: {source}" for source in report.empty)
    if not verbose and (report.added or report.present):
        out.append("(-v lists each file)")
    return out


__all__ = ["ingest_answer", "ingest_lines", "n_runs", "unread_lines"]

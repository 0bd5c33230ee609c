"""Ingests that race: processes that start writing one store (a folder or a bucket) at the
same instant, for the tests that hold the store to "each log stored once"."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any


def hourly_logs(folder: Path, n: int) -> list[str]:
    """`n` ready TP2 start-ups an hour apart from 2026-04-01 08:00, each a little slower than
    the one before (names sorted): what the racing ingests share out."""
    from logmaker import Spec, write

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        write(folder / f"run-{i:02d}.log", Spec(datetime(2026, 4, 1, 8) + timedelta(hours=i), tp=2,
                                                cuda_graph=100 + i, load_weights=30 + i))
    return sorted(str(p) for p in folder.glob("*.log"))


def _ingest_at_the_barrier(store: str, names: list[str], barrier: Any, out: Any) -> None:
    """One of the racing processes: wait for all, then ingest (a bucket's credentials come
    with the environment). Any failure is put on `out` for the test, which fails on it."""
    barrier.wait(60)
    try:
        from firedup.tables.store import Store

        report = Store(store).ingest(names)
        out.put(("ok", report.runs_added, len(report.present)))
    except Exception as exc:
        out.put(("error", f"{type(exc).__name__}: {exc}", 0))


def race_ingests(store: str, name_lists: list[list[str]]) -> list[tuple[str, Any, int]]:
    """One process per list of logs, all ingesting into `store` at once; each one's
    ("ok", runs added, logs found present) or ("error", message, 0). Spawned, not forked:
    a fork of a process running polars threads can deadlock."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(len(name_lists)), ctx.Queue()
    procs = [ctx.Process(target=_ingest_at_the_barrier, args=(store, names, barrier, out)) for names in name_lists]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(60)
    return results

"""Logs, history stores, or both -> one `Runs`: the door every table command comes through.

Apart from `frames` (the data model) and `store` (its Parquet history) so that neither of
those two needs the other: a store writes frames, frames know nothing of stores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import date

import polars as pl

from firedup.read.sources import InputError
from firedup.tables.frames import MILESTONE_SCHEMA, PHASE_SCHEMA, RUN_SCHEMA, Runs, base_frames, empty, finish
from firedup.tables.store import Store, is_store, open_store


def load(
    paths_or_store: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | Store | None = None,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    engine: str | None = None,
    default_date: date | None = None,
    all_files: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> Runs:
    """Logs, a history store, or both -> `Runs`.

    `paths_or_store` is a path, a list of paths (files, directories, globs, "-"), a store
    directory, or a `Store`. `store=` adds a store to the paths. The same log found in both
    counts once (runs are identified by content hash and index).
    """
    from firedup.timeline.pipeline import parse_paths

    stores: list[Store] = []
    paths: list[str] = []
    if isinstance(paths_or_store, Store):
        stores.append(paths_or_store)
    elif isinstance(paths_or_store, (str, os.PathLike)):
        paths.append(os.fspath(paths_or_store))
    elif paths_or_store is not None:
        paths.extend(os.fspath(p) for p in paths_or_store)
    if store is not None:
        stores.append(store if isinstance(store, Store) else open_store(store))
    for p in list(paths):
        if p != "-" and is_store(p):
            paths.remove(p)
            stores.append(open_store(p))

    frames: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
    errors: list[InputError] = []
    skipped: list[str] = []
    if paths:
        from firedup.formats import no_known_engine

        result = parse_paths(paths, engine=engine, default_date=default_date, all_files=all_files,
                             progress=progress, content_hash=True)
        frames.append(base_frames(result.runs))
        errors.extend(result.errors)
        skipped = [f"{s.source}: {s.skipped or no_known_engine(s.looks_like)}" for s in result.sources
                   if s.engine is None]
    for st in stores:
        frames.append(st.read())
        errors.extend(st.notes)  # a stored file that cannot be read: named, the rest is read
    if not frames:
        out = finish(empty(RUN_SCHEMA), empty(PHASE_SCHEMA), empty(MILESTONE_SCHEMA), errors)
    else:
        runs_f, phases_f, milestones_f = (pl.concat([f[i] for f in frames], how="diagonal_relaxed") for i in range(3))
        out = finish(runs_f, phases_f, milestones_f, errors)
    out.skipped = skipped
    return out


__all__ = ["load"]

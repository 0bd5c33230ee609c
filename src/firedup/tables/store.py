"""The history store: parsed runs kept as a plain Hive-partitioned Parquet dataset.

Layout (documented in README, "firedup ingest"):

    STORE/_firedup_store.json                                   marker + layout version
    STORE/runs/engine=NAME/month=2026-03/<sha256>.parquet       one file per ingested log
    STORE/phases/engine=NAME/month=2026-03/<sha256>.parquet
    STORE/milestones/engine=NAME/month=2026-03/<sha256>.parquet

`<sha256>` is the hash of the log file's bytes, so re-ingesting a log is a no-op. The
partition columns (`engine`, `month` of the first run's start) live in the path only, as
Hive layouts do, so DuckDB (`read_parquet('STORE/runs/**/*.parquet', hive_partitioning=true)`),
Spark and Trino read the store as it is.

Why this is safe with concurrent ingests: no file is ever modified. Each log becomes new
files, written to a hidden temporary name and renamed into place (`os.replace` is atomic on
POSIX), phases and milestones first, runs last. A reader takes the runs files as the list of
complete ingests and ignores phases/milestones of any other run, so it never sees half an
ingest. Two processes ingesting the same log write identical files under the same name; the
second rename replaces the first with the same bytes.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import polars as pl

from firedup.errors import InputError, StoreError
from firedup.tables.frames import MILESTONE_SCHEMA, PHASE_SCHEMA, RUN_SCHEMA, base_frames, empty
from firedup.timeline.build import Run

MARKER = "_firedup_store.json"
LAYOUT_VERSION = 1
TABLES = ("runs", "phases", "milestones")
PARTITIONS = ("engine", "month")
_SCHEMAS = {"runs": RUN_SCHEMA, "phases": PHASE_SCHEMA, "milestones": MILESTONE_SCHEMA}
ENV = "FIREDUP_STORE"


def default_store_path() -> Path:
    """FIREDUP_STORE, else the user's data directory (e.g. ~/.local/share/firedup/store)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("firedup", appauthor=False)) / "store"


def is_store(path: Path) -> bool:
    return (path / MARKER).is_file()


@dataclass
class IngestReport:
    added: list[tuple[str, int]] = field(default_factory=list)  # (source, runs added)
    present: list[str] = field(default_factory=list)  # sources already in the store
    empty: list[str] = field(default_factory=list)  # readable, but no server startup in them
    errors: list[InputError] = field(default_factory=list)

    @property
    def runs_added(self) -> int:
        return sum(n for _, n in self.added)


@dataclass
class Store:
    root: Path

    def _files(self, table: str) -> list[Path]:
        folder = self.root / table
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.rglob("*.parquet") if not p.name.startswith("."))

    def hashes(self) -> set[str]:
        """Content hashes of the logs already stored (complete ingests only)."""
        return {p.stem for p in self._files("runs")}

    def has(self, chash: str) -> bool:
        """Whether the log of this content hash is stored, looked up in each partition folder
        (a few per engine and month), not by listing every stored file."""
        runs = self.root / "runs"
        if not runs.is_dir():
            return False
        return any((part / f"{chash}.parquet").is_file()
                   for engine in runs.iterdir() if engine.is_dir() for part in engine.iterdir())

    def _check(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"{self.root}: not a directory, so it cannot be a firedup store")
        if self.root.is_dir() and any(self.root.iterdir()) and not is_store(self.root):
            raise StoreError(f"{self.root}: not a firedup store (no {MARKER}); refusing to write into "
                             "a folder that holds other files")

    def _init(self) -> None:
        self._check()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not is_store(self.root):
                _atomic_write_bytes(self.root / MARKER, json.dumps(
                    {"layout_version": LAYOUT_VERSION, "tables": list(TABLES), "partitioning": list(PARTITIONS),
                     "format": "parquet", "written_by": "firedup"}, indent=1).encode())
        except OSError as exc:  # the user's folder (permissions, a full disk), not a bug
            raise StoreError(f"{self.root}: cannot write the store ({exc.strerror or exc})") from None

    def prepare(self) -> None:
        """Make the folder a store (marker) if it is not one yet; StoreError if it cannot be."""
        self._init()

    def ingest(self, paths: Iterable[str], *, engine: str | None = None, default_date: date | None = None,
               all_files: bool = False, force: bool = False, jobs: int | None = None,
               progress: Callable[[int, int, str], None] | None = None) -> IngestReport:
        """Parse logs and add every source not yet stored. `force` re-writes stored ones.
        `jobs`: processes parsing at once (`parse_paths`)."""
        from firedup.timeline.pipeline import parse_paths

        self._init()
        result = parse_paths(paths, engine=engine, default_date=default_date, all_files=all_files,
                             progress=progress, content_hash=True, jobs=jobs)
        report = IngestReport(errors=list(result.errors))
        by_source: dict[str, list[Run]] = {}
        for run in result.runs:
            by_source.setdefault(run.source, []).append(run)
        for src in result.sources:
            if src.source not in by_source:
                report.empty.append(src.source)
        for source, runs in by_source.items():
            status, added = self.add(runs, force=force)
            if status == "added":
                report.added.append((source, added))
            else:
                report.present.append(source)
        return report

    def add(self, runs: list[Run], *, force: bool = False) -> tuple[str, int]:
        """Store the runs of one log (all of one source): ("added", runs written), ("present", 0)
        when its content is stored already (unless `force`), ("empty", 0) for no runs. What one
        Ray worker calls per file (`tables.fleet`)."""
        if not runs:
            return "empty", 0
        frames, phases, milestones = base_frames(runs)
        chash = str(frames["content_hash"][0])
        if not force and self.has(chash):
            return "present", 0
        try:
            self._write(chash, frames, phases, milestones)
        except OSError as exc:  # the user's folder (permissions, a full disk), not a bug
            raise StoreError(f"{self.root}: cannot write the store ({exc.strerror or exc})") from None
        return "added", frames.height

    def _write(self, chash: str, runs: pl.DataFrame, phases: pl.DataFrame, milestones: pl.DataFrame) -> None:
        engine = str(runs["engine"][0])
        first = runs["first_ts"][0]
        month = first.strftime("%Y-%m") if first is not None else "unknown"
        part = Path(f"engine={_safe(engine)}") / f"month={month}"
        # runs last: its file is what makes the ingest visible to readers
        for table, frame in (("phases", phases), ("milestones", milestones), ("runs", runs)):
            folder = self.root / table / part
            folder.mkdir(parents=True, exist_ok=True)
            data = frame.drop([c for c in PARTITIONS if c in frame.columns])
            tmp = folder / f".{chash}.parquet.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            try:
                data.write_parquet(tmp)
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, folder / f"{chash}.parquet")
            finally:
                tmp.unlink(missing_ok=True)

    def read(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(runs, phases, milestones) of every complete ingest, with the tables' fixed schemas."""
        self._check()
        frames = []
        for table in TABLES:
            files = self._files(table)
            schema = _SCHEMAS[table]
            if not files:
                frames.append(empty(schema))
                continue
            try:
                frame = pl.read_parquet(files, hive_partitioning=True,
                                        hive_schema={"engine": pl.Utf8(), "month": pl.Utf8()},
                                        missing_columns="insert")
            except (pl.exceptions.PolarsError, OSError) as exc:
                raise StoreError(f"{self.root / table}: cannot read the store ({exc})") from None
            keep = [c for c in schema if c in frame.columns]
            frame = frame.select(keep).with_columns(
                [pl.lit(None, dtype=dtype).alias(c) for c, dtype in schema.items() if c not in frame.columns])
            frames.append(frame.select(list(schema)).cast(dict(schema.items())))
        runs, phases, milestones = frames
        ids = runs.select("run_id", "source")
        return (runs, phases.join(ids, on=["run_id", "source"], how="semi"),
                milestones.join(ids, on=["run_id", "source"], how="semi"))


def _safe(value: str) -> str:
    """A Hive partition value: no path separators or '=' in it."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in value) or "unknown"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def open_store(path: str | os.PathLike[str] | None) -> Store:
    """The store at `path`, or the default one (FIREDUP_STORE, else the user's data dir)."""
    return Store(Path(path).expanduser() if path else default_store_path())


__all__ = ["ENV", "IngestReport", "Store", "StoreError", "default_store_path", "is_store", "open_store"]

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

Why this is safe with concurrent ingests: writers take an exclusive lock on
`STORE/.firedup.lock` (flock) for the marker and for deciding what is new and writing it, so
a log is stored once whichever process comes first, and once only whatever month its
partition says (the month of a year-less log depends on the file's mtime or --date; the key
is the content). Parsing happens outside the lock. Each log becomes new files, written to a
hidden temporary name and renamed into place (`os.replace` is atomic on POSIX), phases and
milestones first, runs last; `--force` then removes the log's older copies in any other
partition. A reader takes the runs files as the list of complete ingests (one per content
hash, the newest) and the phases and milestones of those same partitions, so it never sees
half an ingest or two copies of one. A write that fails (a read-only folder, a full disk)
removes what it wrote of that log and says so in one line naming the store.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import polars as pl

from firedup.errors import InputError, StoreError
from firedup.tables.frames import MILESTONE_SCHEMA, PHASE_SCHEMA, RUN_SCHEMA, base_frames, empty
from firedup.timeline.build import Run

MARKER = "_firedup_store.json"
LOCK = ".firedup.lock"
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

    def _copies(self) -> dict[str, list[Path]]:
        """Content hash -> its runs files, newest first (more than one only while a --force
        ingest replaces a log, or after one died between writing and removing)."""
        by_hash: dict[str, list[Path]] = {}
        for path in self._files("runs"):
            by_hash.setdefault(path.stem, []).append(path)
        for paths in by_hash.values():
            paths.sort(key=_mtime, reverse=True)
        return by_hash

    def hashes(self) -> set[str]:
        """Content hashes of the logs already stored (complete ingests only)."""
        return set(self._copies())

    def _copies_of(self, chash: str) -> list[Path]:
        """The runs files of one content hash, newest first, looked up in each partition folder
        (a few per engine and month) rather than by listing every stored file."""
        runs = self.root / "runs"
        if not runs.is_dir():
            return []
        found = [part / f"{chash}.parquet" for engine in runs.iterdir() if engine.is_dir()
                 for part in engine.iterdir() if (part / f"{chash}.parquet").is_file()]
        return sorted(found, key=_mtime, reverse=True)

    def has(self, chash: str) -> bool:
        """Whether the log of this content hash is stored."""
        return bool(self._copies_of(chash))

    def _check(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"{self.root}: not a directory, so it cannot be a firedup store")
        try:
            others = self.root.is_dir() and any(not _ours(p.name) for p in self.root.iterdir())
        except OSError as exc:
            raise StoreError(f"{self.root}: cannot read the store ({exc.strerror or exc})") from None
        if others and not is_store(self.root):
            raise StoreError(f"{self.root}: not a firedup store (no {MARKER}); refusing to write into "
                             "a folder that holds other files")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the store for the length of the block (flock: released by the
        kernel if the process dies). Where flock does not exist, no lock (documented)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        try:
            fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"{self.root}: cannot write the store ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _init(self) -> None:
        self._check()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # the user's folder (permissions, a full disk), not a bug
            raise StoreError(f"{self.root}: cannot write the store ({exc.strerror or exc})") from None
        with self._locked():
            self._check()  # again, under the lock: another process may have written since
            if is_store(self.root):
                return
            try:
                _atomic_write_bytes(self.root / MARKER, json.dumps(
                    {"layout_version": LAYOUT_VERSION, "tables": list(TABLES), "partitioning": list(PARTITIONS),
                     "format": "parquet", "written_by": "firedup"}, indent=1).encode())
            except OSError as exc:
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
        done: set[str] = set()  # written by this call: a second copy of the same bytes is present
        for source, runs in by_source.items():
            status, added = self.add(runs, force=force, done=done)
            if status == "added":
                report.added.append((source, added))
            else:
                report.present.append(source)
        return report

    def add(self, runs: list[Run], *, force: bool = False, done: set[str] | None = None) -> tuple[str, int]:
        """Store the runs of one log (all of one source): ("added", runs written), ("present", 0)
        when its content is stored already (unless `force`; or in `done`, the hashes one call
        wrote), ("empty", 0) for no runs. What `ingest` and each Ray worker (`tables.fleet`)
        call per file. Under the store's lock: whichever process comes first stores a log,
        once, and `force` replaces its older copies in any partition."""
        if not runs:
            return "empty", 0
        frames, phases, milestones = base_frames(runs)
        chash = str(frames["content_hash"][0])
        with self._locked():  # what is new is decided, and written, by one process at a time
            copies = self._copies_of(chash)
            if (done is not None and chash in done) or (copies and not force):
                return "present", 0
            written = self._write(chash, frames, phases, milestones)
            for old in copies:  # --force: the new copy replaces every older one
                if old.parent != written.parent:
                    self._remove(chash, old.parent.relative_to(self.root / "runs"))
        if done is not None:
            done.add(chash)
        return "added", frames.height

    def _write(self, chash: str, runs: pl.DataFrame, phases: pl.DataFrame, milestones: pl.DataFrame) -> Path:
        """Write one log's three files (runs last: its file is what makes the ingest visible to
        readers) and return the runs file. All or nothing: a failed write removes the others."""
        engine = str(runs["engine"][0])
        first = runs["first_ts"][0]
        month = first.strftime("%Y-%m") if first is not None else "unknown"
        part = Path(f"engine={_safe(engine)}") / f"month={month}"
        existed = {table: (self.root / table / part / f"{chash}.parquet").exists() for table in TABLES}
        placed: list[Path] = []
        try:
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
                    placed.append(folder / f"{chash}.parquet")
                finally:
                    with contextlib.suppress(OSError):
                        tmp.unlink(missing_ok=True)
        except (OSError, pl.exceptions.PolarsError) as exc:  # the user's folder (permissions, a full disk)
            for path in placed:  # the log's files this call added; a copy that was there stays
                table = path.relative_to(self.root).parts[0]
                if not existed[table]:
                    with contextlib.suppress(OSError):
                        path.unlink()
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
            raise StoreError(f"{self.root}: cannot write the store ({reason}); it is left as it was") from None
        return self.root / "runs" / part / f"{chash}.parquet"

    def _remove(self, chash: str, part: Path) -> None:
        """Remove one stored copy of a log: runs first, so a reader never sees it half there."""
        for table in ("runs", "phases", "milestones"):
            with contextlib.suppress(FileNotFoundError):
                (self.root / table / part / f"{chash}.parquet").unlink()

    def read(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(runs, phases, milestones) of every complete ingest, with the tables' fixed schemas."""
        self._check()
        frames = []
        # one copy per content hash (the newest), and the phases and milestones beside it
        runs_files = sorted(paths[0] for paths in self._copies().values())
        parts = [p.relative_to(self.root / "runs") for p in runs_files]
        for table in TABLES:
            files = [f for f in (self.root / table / part for part in parts) if f.is_file()]
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


def _ours(name: str) -> bool:
    """A name firedup itself puts in a store folder before its marker: the lock and the
    marker's temporary file (so a second ingest starting at the same moment is not refused)."""
    return name == LOCK or (name.startswith(f".{MARKER}.") and name.endswith(".tmp"))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


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

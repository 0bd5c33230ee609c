"""The history store: parsed runs kept as a plain Hive-partitioned Parquet dataset, in a local
folder or in a bucket (`s3://bucket/prefix`, `gs://...`, `az://...`).

Layout (documented in docs/store.md), the same in both:

    STORE/_firedup_store.json                                   marker + layout version
    STORE/runs/engine=NAME/month=2026-03/<sha256>.parquet       one file per ingested log
    STORE/phases/engine=NAME/month=2026-03/<sha256>.parquet
    STORE/milestones/engine=NAME/month=2026-03/<sha256>.parquet

`<sha256>` is the hash of the log file's bytes, so re-ingesting a log is a no-op. The
partition columns (`engine`, `month` of the first run's start) live in the path only, as
Hive layouts do, so DuckDB (`read_parquet('STORE/runs/**/*.parquet', hive_partitioning=true)`),
Spark and Trino read the store as it is.

One design, two kinds of storage (`_Folder`, `_Bucket`: the few operations the store needs).
A log's three files are written phases and milestones first, runs last, and the runs file is
created only if absent (`os.link` of a finished temporary file in a folder; a conditional
write, S3's If-None-Match, GCS's ifGenerationMatch=0, Azure's If-None-Match, in a bucket):
the runs file is what makes an ingest visible, and exactly one writer creates it. A reader
takes the runs files as the list of complete ingests (one per content hash, the newest) and
the phases and milestones of those same partitions, so it never sees half an ingest or two
copies of one.

In a folder, writers also take an exclusive lock (flock on `STORE/.firedup.lock`) to decide
what is new and write it, so a log is stored once whatever month its partition says (the
month of a year-less log depends on the file's mtime or --date; the key is the content), and
a failed write (read-only folder, full disk) removes what it wrote. Object storage has no
lock and needs none: every object a log produces is named by its content hash, so two writers
of the same log write the same keys with the same rows (only `source`, the name it was read
under, may differ; a reader takes it from the runs file), and whichever runs object lands
first is the one stored; the other writer reports the log as already there. What a bucket
cannot promise without a lock: one log dated into two different months by two writers at
the same instant is stored twice (readers still count it once), and a write that fails
midway leaves its phases and milestones, which no reader takes without their runs object
(the next ingest of that log overwrites them).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import polars as pl

from firedup.errors import FiredupError, InputError, StoreError
from firedup.read.remote import is_url
from firedup.tables.frames import MILESTONE_SCHEMA, PHASE_SCHEMA, RUN_SCHEMA, base_frames, empty
from firedup.timeline.run import Run

MARKER = "_firedup_store.json"
LOCK = ".firedup.lock"
LAYOUT_VERSION = 1
TABLES = ("runs", "phases", "milestones")
PARTITIONS = ("engine", "month")
_SCHEMAS = {"runs": RUN_SCHEMA, "phases": PHASE_SCHEMA, "milestones": MILESTONE_SCHEMA}
_FILE = "_firedup_file"  # a column read() adds: the stored file a row came from
ENV = "FIREDUP_STORE"


def default_store_path() -> Path | str:
    """FIREDUP_STORE (a folder or a bucket URL), else the user's data directory (e.g.
    ~/.local/share/firedup/store)."""
    env = os.environ.get(ENV)
    if env:
        return env.rstrip("/") if is_url(env) else Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("firedup", appauthor=False)) / "store"


def is_store(path: Path | str) -> bool:
    """Whether `path` (a folder or a bucket URL) holds a store's marker; False when it cannot
    be read (as for a folder that is not there)."""
    try:
        return open_store(path).is_store()
    except StoreError:
        return False


@dataclass
class IngestReport:
    added: list[tuple[str, int]] = field(default_factory=list)  # (source, runs added)
    present: list[str] = field(default_factory=list)  # sources already in the store
    empty: list[str] = field(default_factory=list)  # readable, but no server startup in them
    errors: list[InputError] = field(default_factory=list)

    @property
    def runs_added(self) -> int:
        return sum(n for _, n in self.added)


# --- the storage under a store: a folder or a bucket prefix --------------------------------
# Paths below are relative to the store's root, with "/" separators ("runs/engine=x/month=y/h.parquet").


class _Folder:
    """A store in a local (or shared) folder: writes renamed into place, flock between writers."""

    exclusive = True  # `locked` excludes other writers: what is new is decided under it
    kind, things = "folder", "files"

    def __init__(self, root: Path) -> None:
        self.root = root

    def entries(self) -> list[str] | None:
        """Names at the root; None when there is no root yet."""
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"{self.root}: not a directory, so it cannot be a firedup store")
        try:
            return [p.name for p in self.root.iterdir()] if self.root.is_dir() else None
        except OSError as exc:
            raise StoreError(f"{self.root}: cannot read the store ({exc.strerror or exc})") from None

    def make_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def folders(self, rel: str) -> list[str]:
        folder = self.root / rel
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def find(self, table: str) -> dict[str, float]:
        """Every stored Parquet file of a table -> its mtime."""
        folder = self.root / table
        if not folder.is_dir():
            return {}
        return {p.relative_to(self.root).as_posix(): _mtime(p) for p in folder.rglob("*.parquet")
                if not p.name.startswith(".")}

    def mtime(self, rel: str) -> float:
        return _mtime(self.root / rel)

    def put(self, rel: str, data: bytes, *, exclusive: bool) -> bool:
        """Write a file whole: to a hidden temporary name, synced, then renamed into place
        (atomic on POSIX). `exclusive`: only if absent (a hard link fails on an existing
        name); False then."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            with os.fdopen(os.open(tmp, flags, 0o666), "wb") as fh:  # never a link planted there
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if not exclusive:
                os.replace(tmp, path)
                return True
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links: the lock makes check-then-rename safe
                if path.exists():
                    return False
                os.replace(tmp, path)
            return True
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    def remove(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.root / rel).unlink()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock on the store for the length of the block (flock: released by the
        kernel if the process dies). Where flock does not exist, no lock (documented)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        try:
            fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise StoreError(f"{self.root}: cannot write the store ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def read(self, rels: list[str]) -> pl.DataFrame | None:
        """The stored files that exist among `rels`, as one frame with each row's file (`_FILE`,
        relative to the root). The paths are never globbed: a store folder named `st[1]` or
        `st**` is read as it is."""
        found = [str(self.root / rel) for rel in rels if (self.root / rel).is_file()]
        if not found:
            return None
        frame = pl.read_parquet(found, glob=False, missing_columns="insert", include_file_paths=_FILE)
        root = len(str(self.root)) + 1
        return frame.with_columns(pl.col(_FILE).str.slice(root))


class _Bucket:
    """A store under a bucket prefix, through fsspec (s3fs, gcsfs, adlfs), with the credentials
    of the usual environment as for reading logs (`read.remote`). No lock: see the module."""

    exclusive = False
    kind, things = "prefix", "objects"

    def __init__(self, url: str) -> None:
        from firedup.read.remote import filesystem

        self.url = url
        try:
            # no listings cache: other writers add objects while this one runs
            self.fs, path = filesystem(url, use_listings_cache=False)
        except InputError as exc:
            raise StoreError(f"{url}: {exc.reason.replace('reading ', 'a store in ')}") from None
        self.path = path.rstrip("/")
        self.bucket = self.path.split("/", 1)[0]
        self.bucket_word = "container" if url.partition("://")[0].lower() in ("az", "abfs", "abfss") else "bucket"

    def _full(self, rel: str) -> str:
        return f"{self.path}/{rel}"

    def _rel(self, full: str) -> str:
        return full[len(self.path) + 1:] if full.startswith(self.path + "/") else full

    def entries(self) -> list[str] | None:
        try:
            names = self.fs.ls(self.path, detail=False)
        except FileNotFoundError:
            if not self.fs.exists(self.bucket):
                raise StoreError(f"{self.url}: no such {self.bucket_word} ({self.bucket})") from None
            return None
        return [n.rstrip("/").rsplit("/", 1)[-1] for n in names if n.rstrip("/") != self.path]

    def make_root(self) -> None:
        """Object storage has no folders; the bucket must exist (`entries` says so)."""

    def exists(self, rel: str) -> bool:
        return bool(self.fs.exists(self._full(rel)))

    def folders(self, rel: str) -> list[str]:
        try:
            listed = self.fs.ls(self._full(rel), detail=True)
        except FileNotFoundError:
            return []
        return sorted(str(info["name"]).rstrip("/").rsplit("/", 1)[-1] for info in listed
                      if info.get("type") == "directory")

    def find(self, table: str) -> dict[str, float]:
        try:
            listed = self.fs.find(self._full(table), detail=True)
        except FileNotFoundError:
            return {}
        from firedup.read.remote import object_mtime

        return {self._rel(name): object_mtime(info) or 0.0 for name, info in listed.items()
                if name.endswith(".parquet") and not name.rsplit("/", 1)[-1].startswith(".")}

    def mtime(self, rel: str) -> float:
        from firedup.read.remote import object_mtime

        try:
            return object_mtime(self.fs.info(self._full(rel))) or 0.0
        except FileNotFoundError:
            return 0.0

    def put(self, rel: str, data: bytes, *, exclusive: bool) -> bool:
        """One PUT (an object appears whole or not at all). `exclusive`: a conditional write
        that fails if the key exists; False then."""
        try:
            self.fs.pipe_file(self._full(rel), data, mode="create" if exclusive else "overwrite")
        except FileExistsError:
            return False
        return True

    def remove(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._full(rel))

    def locked(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def read(self, rels: list[str]) -> pl.DataFrame | None:
        """The objects that exist among `rels` (fetched concurrently), as one frame with the
        partition columns taken from their keys, as a Hive reader does."""
        if not rels:
            return None
        fetched = self.fs.cat([self._full(rel) for rel in rels], on_error="omit")
        frames = []
        for full, data in sorted(fetched.items()):
            frames.append(pl.read_parquet(io.BytesIO(data)).with_columns(pl.lit(self._rel(full)).alias(_FILE)))
        return pl.concat(frames, how="diagonal_relaxed") if frames else None


@contextlib.contextmanager
def _storage_errors(location: str, doing: str) -> Iterator[None]:
    """A backend's failure (permissions, a missing bucket, the network) as one line naming the
    store; firedup's own errors pass through."""
    try:
        yield
    except FiredupError:
        raise
    except PermissionError as exc:
        raise StoreError(f"{location}: permission denied ({_reason(exc)})") from None
    except Exception as exc:  # the backends' errors differ per library (botocore, aiohttp, azure)
        raise StoreError(f"{location}: cannot {doing} the store ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass
class Store:
    """A history store at `root`: a folder, or an object-storage URL (`s3://bucket/prefix`)."""

    root: Path | str
    _files: _Folder | _Bucket = field(init=False, repr=False, compare=False)
    # what the last `read` left out: stored files that cannot be read, one InputError each
    notes: list[InputError] = field(init=False, repr=False, compare=False, default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.root, str) and is_url(self.root):
            self.root = self.root.rstrip("/")
            self._files = _Bucket(self.root)
        else:
            self.root = Path(self.root)
            self._files = _Folder(self.root)

    @property
    def location(self) -> str:
        """The store as the user named it (a folder or a URL), for messages."""
        return str(self.root)

    def is_store(self) -> bool:
        """Whether the marker is there. StoreError when the storage cannot be asked (a missing
        bucket, no permission)."""
        with _storage_errors(self.location, "read"):
            return self._files.exists(MARKER)

    def _copies(self) -> dict[str, list[str]]:
        """Content hash -> its runs files, the one readers take first: the greatest partition,
        by engine then month (more than one only while a --force ingest moves a log to another
        month, after one died between its two steps, or in a bucket when two writers dated one
        log into two months at once). The rule DuckDB's query in docs/store.md follows too, so
        firedup and DuckDB read the same copy; the next ingest into a folder keeps the newest."""
        by_hash: dict[str, list[str]] = {}
        for rel in self._files.find("runs"):
            by_hash.setdefault(rel.rsplit("/", 1)[-1].removesuffix(".parquet"), []).append(rel)
        return {chash: sorted(found, key=_partition_key, reverse=True) for chash, found in by_hash.items()}

    def hashes(self) -> set[str]:
        """Content hashes of the logs already stored (complete ingests only)."""
        with _storage_errors(self.location, "read"):
            return set(self._copies())

    def _copies_of(self, chash: str) -> list[str]:
        """The runs files of one content hash, newest first, looked up in each partition (a few
        per engine and month) rather than by listing every stored file."""
        found = [f"runs/{engine}/{month}/{chash}.parquet" for engine in self._files.folders("runs")
                 for month in self._files.folders(f"runs/{engine}")]
        return sorted((rel for rel in found if self._files.exists(rel)), key=self._files.mtime, reverse=True)

    def has(self, chash: str) -> bool:
        """Whether the log of this content hash is stored."""
        with _storage_errors(self.location, "read"):
            return bool(self._copies_of(chash))

    def _check(self, *, writing: bool) -> None:
        """StoreError unless the root is a store, or nothing yet, or (writing) holds only what
        firedup puts there before its marker."""
        with _storage_errors(self.location, "write" if writing else "read"):
            entries = self._files.entries()
            others = entries is not None and any(not _ours(name) for name in entries)
            if others and not self._files.exists(MARKER):
                files = self._files
                raise StoreError(f"{self.location}: not a firedup store (no {MARKER})" + (
                    f"; refusing to write into a {files.kind} that holds other {files.things}" if writing else ""))

    def _init(self) -> None:
        self._check(writing=True)
        with _storage_errors(self.location, "write"):
            try:
                self._files.make_root()
            except OSError as exc:  # the user's folder (permissions, a full disk), not a bug
                raise StoreError(f"{self.location}: cannot write the store ({exc.strerror or exc})") from None
            with self._files.locked():
                self._check(writing=True)  # again, under the lock: another process may have written since
                if not self._files.exists(MARKER):
                    # the same bytes from every writer: whichever lands first is the marker
                    self._files.put(MARKER, json.dumps(
                        {"layout_version": LAYOUT_VERSION, "tables": list(TABLES), "partitioning": list(PARTITIONS),
                         "format": "parquet", "written_by": "firedup"}, indent=1).encode(), exclusive=True)
                if self._files.exclusive:
                    self._sweep()

    def _sweep(self) -> None:
        """Under the folder's lock, where no other writer is at work: what writers killed
        mid-write left goes. The phases and milestones files of a partition without the log's
        runs file (never committed, or a copy half removed), older copies of a log committed in
        two partitions (a --force move killed between its steps: the newest stays), and
        temporary files. Readers never took any of them (docs/store.md); now they are gone."""
        files = self._files
        assert isinstance(files, _Folder)
        by_hash: dict[str, list[tuple[float, str]]] = {}
        for rel, mtime in files.find("runs").items():
            by_hash.setdefault(rel.rsplit("/", 1)[-1].removesuffix(".parquet"), []).append((mtime, rel))
        committed: set[str] = set()
        for chash, found in by_hash.items():
            found.sort(reverse=True)
            committed.add(f"{_partition(found[0][1])}/{chash}")
            for _, rel in found[1:]:
                self._remove(chash, _partition(rel))
        for table in ("phases", "milestones"):
            for rel in files.find(table):
                if rel.split("/", 1)[1].removesuffix(".parquet") not in committed:
                    files.remove(rel)
        for table in TABLES:
            for tmp in (files.root / table).rglob(".*.tmp") if (files.root / table).is_dir() else ():
                with contextlib.suppress(OSError):
                    tmp.unlink()

    def prepare(self) -> None:
        """Make the folder or prefix a store (marker) if it is not one yet; StoreError if it cannot be."""
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
        call per file. Whichever writer comes first stores a log, once (under the folder's
        lock; by the runs object's conditional write in a bucket), and `force` replaces its
        older copies in any partition."""
        if not runs:
            return "empty", 0
        frames, phases, milestones = base_frames(runs)
        chash = str(frames["content_hash"][0])
        with _storage_errors(self.location, "write"), self._files.locked():
            copies = self._copies_of(chash)
            if (done is not None and chash in done) or (copies and not force):
                return "present", 0
            written = self._write(chash, frames, phases, milestones, exclusive=not force)
            if written is None:  # another writer's runs object landed first: the log is stored
                return "present", 0
            for old in copies:  # --force: the new copy replaces every older one
                if _partition(old) != written:
                    self._remove(chash, _partition(old))
        if done is not None:
            done.add(chash)
        return "added", frames.height

    def _write(self, chash: str, runs: pl.DataFrame, phases: pl.DataFrame, milestones: pl.DataFrame, *,
               exclusive: bool) -> str | None:
        """Write one log's three files (runs last, and only if absent when `exclusive`: its file
        is what makes the ingest visible to readers); the partition written, None when another
        writer's runs file was there first. In a folder, all or nothing: a failed write
        removes the files it added."""
        engine = str(runs["engine"][0])
        first = runs["first_ts"][0]
        month = first.strftime("%Y-%m") if first is not None else "unknown"
        part = f"engine={_safe(engine)}/month={month}"
        files = self._files
        existed = {table: files.exists(f"{table}/{part}/{chash}.parquet") for table in TABLES} if files.exclusive else {}
        placed: list[str] = []
        try:
            for table, frame in (("phases", phases), ("milestones", milestones), ("runs", runs)):
                rel = f"{table}/{part}/{chash}.parquet"
                buffer = io.BytesIO()
                frame.drop([c for c in PARTITIONS if c in frame.columns]).write_parquet(buffer)
                if not files.put(rel, buffer.getvalue(), exclusive=exclusive and table == "runs"):
                    return None
                placed.append(rel)
        except (OSError, pl.exceptions.PolarsError) as exc:  # the user's folder (permissions, a full disk)
            if files.exclusive:  # under the lock: the log's files this call added go; a copy that was there stays
                for rel in placed:
                    if not existed[rel.split("/", 1)[0]]:
                        with contextlib.suppress(OSError):
                            files.remove(rel)
                outcome = "it is left as it was"
            else:  # no lock: another writer may be storing the same log; without runs, no reader takes them
                outcome = "the log is not stored"
            if isinstance(exc, PermissionError):
                raise StoreError(f"{self.location}: permission denied ({_reason(exc)}); {outcome}") from None
            raise StoreError(f"{self.location}: cannot write the store ({_reason(exc)}); {outcome}") from None
        return part

    def _read_table(self, table: str, rels: list[str]) -> pl.DataFrame:
        """The files `rels` of one table in its schema: all at once, and file by file only
        when that fails, to leave out (and name) the files that cannot be read."""
        schema = _SCHEMAS[table]
        try:
            frame = self._files.read(rels)
            return empty(schema) if frame is None else self._conform(table, frame)
        except (pl.exceptions.PolarsError, OSError, ValueError, TypeError):
            pass
        frames = []
        for rel in rels:
            try:
                frame = self._files.read([rel])
                if frame is not None:
                    frames.append(self._conform(table, frame))
            except (pl.exceptions.PolarsError, OSError, ValueError, TypeError) as exc:
                self._note(rel, _reason(exc))
        return pl.concat(frames, how="vertical") if frames else empty(schema)

    def _conform(self, table: str, frame: pl.DataFrame) -> pl.DataFrame:
        """Rows read from stored files, in the table's schema with the partition columns of their
        paths. The rows of a file without the keys every firedup file has are left out and the
        file named; a value of another type raises (the caller reads file by file then)."""
        schema = _SCHEMAS[table]
        parts = pl.col(_FILE).str.extract_groups(r"(?:^|/)engine=(?P<engine>[^/]*)/month=(?P<month>[^/]*)/[^/]*$")
        frame = frame.with_columns(parts.struct.field("engine"), parts.struct.field("month"))
        keys = ["run_id", "content_hash"] if table == "runs" else ["run_id"]
        missing = [k for k in keys if k not in frame.columns]
        bad = frame if missing else frame.filter(pl.any_horizontal(pl.col(k).is_null() for k in keys))
        if bad.height:
            for rel in sorted(set(bad[_FILE].to_list())):
                self._note(rel, f"not a firedup {table} file (no {', '.join(missing or keys)})")
            frame = frame.filter(~pl.col(_FILE).is_in(bad[_FILE].unique().implode()))
        keep = [c for c in schema if c in frame.columns]
        frame = frame.select(keep).with_columns(
            [pl.lit(None, dtype=dtype).alias(c) for c, dtype in schema.items() if c not in frame.columns])
        return frame.select(list(schema)).cast(dict(schema.items()))

    def _note(self, rel: str, reason: str) -> None:
        what = "its log is left out" if rel.startswith("runs/") else "left out"
        self.notes.append(InputError(f"{self.location}/{rel}", f"unreadable store file ({reason[:200]}); {what}"))

    def _remove(self, chash: str, part: str) -> None:
        """Remove one stored copy of a log: runs first, so a reader never sees it half there."""
        for table in ("runs", "phases", "milestones"):
            self._files.remove(f"{table}/{part}/{chash}.parquet")

    def read(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(runs, phases, milestones) of every complete ingest, with the tables' fixed schemas.
        A stored file that cannot be read (cut short, empty, not Parquet, not firedup's, another
        schema) is left out and named in `notes` (a runs file: its whole log); the rest is read."""
        self._check(writing=False)
        self.notes = []
        frames = []
        with _storage_errors(self.location, "read"):
            # one copy per content hash (`_copies`), and the phases and milestones beside it
            chosen = sorted(paths[0] for paths in self._copies().values())
            for table in TABLES:
                frames.append(self._read_table(table, [f"{table}/{rel.split('/', 1)[1]}" for rel in chosen]))
        runs, phases, milestones = frames
        # a run's phases and milestones carry the name its runs file gives (in a bucket, two
        # writers of one log under two names may each have written one of its files)
        ids = runs.select("run_id", "source")
        return (runs, _beside(phases, ids, PHASE_SCHEMA), _beside(milestones, ids, MILESTONE_SCHEMA))


def _beside(table: pl.DataFrame, ids: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The rows of `table` whose run is in `ids`, with that run's source."""
    return table.drop("source").join(ids, on="run_id", how="inner", maintain_order="left").select(list(schema))


def _partition_key(rel: str) -> tuple[str, str]:
    """"runs/engine=x/month=y/h.parquet" -> ("x", "y"): the order readers choose copies by."""
    parts = dict(p.split("=", 1) for p in rel.split("/")[1:-1] if "=" in p)
    return parts.get("engine", ""), parts.get("month", "")


def _partition(rel: str) -> str:
    """"runs/engine=x/month=y/h.parquet" -> "engine=x/month=y"."""
    return rel.split("/", 1)[1].rsplit("/", 1)[0]


def _safe(value: str) -> str:
    """A Hive partition value: no path separators or '=' in it."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in value) or "unknown"


def _ours(name: str) -> bool:
    """A name firedup itself puts in a store before its marker: the lock and the marker's
    temporary file (so a second ingest starting at the same moment is not refused)."""
    return name == LOCK or (name.startswith(f".{MARKER}.") and name.endswith(".tmp"))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def open_store(path: str | os.PathLike[str] | None) -> Store:
    """The store at `path` (a folder or a bucket URL), or the default one (FIREDUP_STORE, else
    the user's data dir)."""
    if not path:
        return Store(default_store_path())
    text = os.fspath(path)
    return Store(text if is_url(text) else Path(text).expanduser())


__all__ = ["ENV", "IngestReport", "Store", "StoreError", "default_store_path", "is_store", "open_store"]

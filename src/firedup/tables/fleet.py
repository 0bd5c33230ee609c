"""`firedup ingest --ray`: the parse of many logs mapped over a Ray cluster with Ray Data.

A platform team has thousands of start-up logs a day in object storage; one machine parses
a few hundred a second at best. Ray is the engine their inference deployments already
run, so firedup brings no scheduler of its own: the driver lists the inputs (keys only, see
`read.remote`), Ray Data maps one task per file over the cluster's workers, and each worker
parses its file (`timeline.pipeline`) and writes that log's Parquet files into the store itself
(`tables.store`): no run travels back through the driver, only a one-line outcome per file.

One file's failure never stops the job: a log that cannot be read is its `InputError`
(as without Ray), an exception in the parse is caught in the worker and recorded the same way,
and a worker that dies outright (killed, out of memory) loses only its own file, which the
driver then reports as failed (Ray Data is told to tolerate that many failed blocks).

The workers need firedup installed (`pip install 'firedup[fleet]'` in the cluster's image;
a local cluster started here inherits this interpreter's environment) and must see the store:
a local folder for a cluster on this machine, a shared file system or a bucket (`--store
s3://bucket/prefix`, with the workers' own credentials from their environment) for a real one.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from typing import Any

from firedup.errors import ClusterError, InputError, UsageError
from firedup.read.sources import Source, expand_inputs
from firedup.tables.store import IngestReport, Store, open_store

LOCAL = "local"  # --ray local: a private cluster on this machine, started and stopped by the job


def ingest_on_ray(store: Store, paths: Iterable[str], address: str, *, engine: str | None = None,
                  default_date: date | None = None, all_files: bool = False, force: bool = False,
                  workers: int | None = None,
                  progress: Callable[[int, int, str], None] | None = None) -> IngestReport:
    """`Store.ingest`, with the parse and the writes mapped over the Ray cluster at `address`
    ("auto": the one `ray start` runs on this machine; "local": a private one on this machine,
    stopped afterwards; else host:port or ray://host:port). `workers`: how many files are
    parsed at once (a local cluster gets that many CPUs; default: every core)."""
    if engine is not None:
        from firedup.formats import get_format

        get_format(engine)  # UnknownEngineError before any cluster is started
    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1")
    sources, errors = expand_inputs(paths, all_files=all_files)
    if any(source.is_stdin for source in sources):
        raise UsageError("ingest --ray reads files and objects, not stdin ('-'): the workers cannot see it")
    store.prepare()
    report = IngestReport(errors=list(errors))
    if not sources:
        return report
    rows = [_row(source) for source in sources]
    started = _connect(address, workers)
    try:
        outcomes = _map(rows, functools.partial(
            _ingest_row, root=str(store.root), engine=engine, default_date=default_date, force=force),
            workers, progress)
    finally:
        if started:
            import ray

            ray.shutdown()
    for source in sources:  # in the inputs' order, whatever order the workers finished in
        _record(report, source.name, outcomes.get(source.name))
    if progress is not None:
        progress(len(sources), len(sources), "")
    return report


def _row(source: Source) -> dict[str, Any]:
    return {"name": source.name, "path": str(source.path) if source.path is not None else None,
            "url": source.url, "mtime": source.mtime}


def _source(row: dict[str, Any]) -> Source:
    return Source(row["name"], Path(row["path"]) if row.get("path") else None, url=row.get("url") or None,
                  mtime=row.get("mtime"))


def _connect(address: str, workers: int | None) -> bool:
    """Connect to (or start) the cluster; True when this call started it (so it stops it)."""
    if address == LOCAL:
        # A private cluster on this machine talks over loopback only (Ray would otherwise pick
        # the machine's network address and listen on it). Read when Ray is imported; the
        # workers it starts inherit it.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # and reports nothing anywhere
    try:
        import ray
    except ImportError:
        raise ClusterError("ingest --ray needs Ray: pip install 'firedup[fleet]'") from None
    if ray.is_initialized():  # called from inside a Ray driver: use its cluster as it is
        return False
    # Ray's notices (token auth, deprecations, progress bars off) are not the user's concern
    # here; its errors still are, and a failure to connect raises.
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False, "include_dashboard": False}
    try:
        if address == LOCAL:
            cpus = workers or os.cpu_count() or 1
            ray.init(address="local", num_cpus=cpus, object_store_memory=256 << 20, **quiet)
        else:
            ray.init(address=address, **quiet)
    except Exception as exc:  # ConnectionError, ValueError, RuntimeError: Ray's own words, on one line
        hint = "; --ray auto needs a running cluster (`ray start --head`), --ray local starts one" \
            if address == "auto" else ""
        raise ClusterError(f"cannot {'start a local Ray cluster' if address == LOCAL else 'reach the Ray cluster at ' + address}"
                           f" ({type(exc).__name__}: {exc}){hint}") from None
    return True


# Files per Ray task: a task costs tens of ms of scheduling, a small log a few ms to parse, so
# one task per file would spend most of the job on Ray. A worker that dies loses its task's
# files only (each reported failed); every worker still gets several tasks to balance the load.
FILES_PER_TASK = 16
TASKS_PER_WORKER = 4


def _map(rows: list[dict[str, Any]], job: Callable[[dict[str, Any]], dict[str, Any]], workers: int | None,
         progress: Callable[[int, int, str], None] | None) -> dict[str, dict[str, Any]]:
    """`job` over `rows` with Ray Data, a few files per block (`FILES_PER_TASK`); the outcomes
    by source name, as they arrive. Rows travel as JSON text: one string column whatever the
    fields hold (None, floats), so Arrow has no types to guess."""
    import ray

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # set again: importing ray.data configures it
    spread = TASKS_PER_WORKER * (workers or int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
    blocks = min(len(rows), max(spread, -(-len(rows) // FILES_PER_TASK)))
    context.max_errored_blocks = blocks  # a failed block is its files' error, not the job's end
    dataset = ray.data.from_items([{"row": json.dumps(row)} for row in rows], override_num_blocks=blocks)
    batch_job = functools.partial(_each_in_batch, job=job)
    compute = ray.data.TaskPoolStrategy(size=workers) if workers else None
    mapped = dataset.map_batches(batch_job, batch_size=None, batch_format="numpy", compute=compute)
    outcomes: dict[str, dict[str, Any]] = {}
    for item in mapped.iter_rows():
        outcome = json.loads(str(item["outcome"]))
        if progress is not None:
            progress(len(outcomes), len(rows), str(outcome["source"]))
        outcomes[str(outcome["source"])] = outcome
    return outcomes


def _each_in_batch(batch: dict[str, Any], job: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, list[str]]:
    """On a worker: `job` over the files of one block, one after the other."""
    return {"outcome": [json.dumps(job(json.loads(str(text))), default=str) for text in batch["row"]]}


def _ingest_row(row: dict[str, Any], *, root: str, engine: str | None, default_date: date | None, force: bool) -> dict[str, Any]:
    """On a worker: parse one file and write its runs into the store; a one-line outcome.
    Never raises: whatever goes wrong is this file's error."""
    from firedup.timeline.pipeline import _parse_one

    source = _source(row)
    outcome: dict[str, Any] = {"source": source.name, "status": "error", "runs": 0, "error": None, "line": None,
                               "cut_error": None, "cut_line": None}
    parsed = _parse_one(source, engine, default_date, "auto", content_hash=True)
    if isinstance(parsed, InputError):
        outcome.update(error=parsed.reason, line=parsed.line)
        return outcome
    runs, report = parsed
    if report.cut_short is not None:
        outcome.update(cut_error=report.cut_short.reason, cut_line=report.cut_short.line)
    try:
        status, added = _worker_store(root).add(runs, force=force)
    except Exception as exc:  # a full disk, a store turned unwritable: this file's error, the rest goes on
        outcome.update(error=f"cannot write it into the store ({type(exc).__name__}: {exc})")
        return outcome
    outcome.update(status=status, runs=added)
    return outcome


@functools.lru_cache(maxsize=8)
def _worker_store(root: str) -> Store:
    """On a worker: the store, opened once per process (a bucket's client is built once)."""
    return open_store(root)


def _record(report: IngestReport, name: str, outcome: dict[str, Any] | None) -> None:
    if outcome is None:
        report.errors.append(InputError(name, "its Ray task failed (the worker died?); run the ingest again to retry it"))
        return
    if outcome.get("cut_error"):
        report.errors.append(InputError(name, str(outcome["cut_error"]), _int(outcome.get("cut_line"))))
    status = outcome["status"]
    if status == "error":
        report.errors.append(InputError(name, str(outcome["error"]), _int(outcome.get("line"))))
    elif status == "added":
        report.added.append((name, int(outcome["runs"])))
    elif status == "present":
        report.present.append(name)
    else:
        report.empty.append(name)


def _int(value: Any) -> int | None:
    """A line number back from Arrow (an int, or None/NaN where a column had no value)."""
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


__all__ = ["LOCAL", "ingest_on_ray"]

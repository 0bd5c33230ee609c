"""`firedup ingest --ray` (firedup.tables.fleet): logs in an S3-compatible server on loopback
(moto), parsed on a local Ray cluster started by the command (`--ray local`, two workers),
written into a store that DuckDB then reads as one table."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from _s3 import BUCKET, S3, need, s3_server
from logmaker import Spec, render

ROOT = Path(__file__).resolve().parents[1]
N_LOGS = 200


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


def _fleet_of(folder: Path, n_logs: int = N_LOGS) -> dict[str, dict[str, object]]:
    """`n_logs` logs over up to three months: ready starts (with and without CUDA graphs), OOM
    crashes during the capture, binary junk, logs without a server start, and one log stored
    under two names. name -> what the store must say about it (outcome, seconds, month), or its error."""
    folder.mkdir(parents=True, exist_ok=True)
    base = datetime(2026, 1, 5, 8, 0, 0)
    truth: dict[str, dict[str, object]] = {}
    for i in range(n_logs - 1):
        name = f"node-{i % 7}/start-{i:03d}.log"
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        start = base + timedelta(hours=11 * i)
        if i % 50 == 7:
            path.write_bytes(b"\x7fELF\x00\x00" + bytes(range(256)))
            truth[name] = {"error": "binary data"}
            continue
        if i % 50 == 17:
            path.write_text("just a shell session\nnothing started here\n")
            truth[name] = {"empty": True}
            continue
        spec = Spec(start, tp=(8 if i % 3 else 4), disable_cuda_graph=(i % 4 == 0), load_weights=100 + i % 40,
                    crash_in="cuda_graph" if i % 10 == 3 else None)
        text, facts = render(spec)
        path.write_text(text)
        truth[name] = {"outcome": "ready" if facts["ready_seconds"] is not None else "crashed",
                       "ready_seconds": facts["ready_seconds"], "month": f"{start:%Y-%m}",
                       "sha256": hashlib.sha256(text.encode()).hexdigest()}
    # the same bytes under a second name (a re-upload): stored, and counted, once
    twin = "node-0/start-000.copy.log"
    (folder / twin).write_bytes((folder / "node-0/start-000.log").read_bytes())
    truth[twin] = dict(truth["node-0/start-000.log"])
    assert len(truth) == n_logs
    return truth


def _cli(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    # COLUMNS: the lines are compared whole, not as a terminal of 80 columns would wrap them
    env = {**env, "PYTHONPATH": str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", ""), "COLUMNS": "1000"}
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


@pytest.mark.slow
def test_ingest_200_logs_from_s3_on_ray_and_count_them_in_duckdb(s3: S3, tmp_path: Path) -> None:
    need("ray", "duckdb")
    import duckdb

    truth = _fleet_of(tmp_path / "logs")
    s3.upload(tmp_path / "logs", "e2e")
    store = tmp_path / "store"
    env = {**os.environ, **s3.env}
    proc = _cli(["ingest", "-v", "--ray", "local", "--workers", "2", "--store", str(store), f"s3://{BUCKET}/e2e/"],
                env, timeout=600)
    # every failed file is one line naming it; none stops the job (exit 1: some inputs bad)
    assert proc.returncode == 1, proc.stderr[-3000:]
    bad = sorted(name for name, t in truth.items() if "error" in t)
    assert sorted(proc.stderr.splitlines()) == sorted(
        f"firedup: s3://{BUCKET}/e2e/{name}: not a text log: binary data (NUL byte at offset 4)" for name in bad)
    empty = sorted(name for name, t in truth.items() if t.get("empty"))
    assert sorted(line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("no server startup")) == sorted(
        f"no server startup found: s3://{BUCKET}/e2e/{name}" for name in empty)
    runs = {name: t for name, t in truth.items() if "outcome" in t}
    distinct = {t["sha256"] for t in runs.values()}
    assert f"{len(distinct)} runs added to {store}" in proc.stdout
    assert proc.stdout.count("already in the store: ") == len(runs) - len(distinct) == 1

    glob = f"{store}/runs/**/*.parquet"
    con = duckdb.connect()
    rows = con.execute(
        "SELECT content_hash, source, outcome, ready_seconds, engine, month, count(*) OVER (PARTITION BY content_hash) "
        f"FROM read_parquet('{glob}', hive_partitioning = true)").fetchall()
    assert len(rows) == len(distinct)  # every run once, the twin too
    by_hash = {row[0]: row for row in rows}
    for name, t in runs.items():
        _, source, outcome, ready_seconds, engine, month, copies = by_hash[t["sha256"]]
        assert (outcome, ready_seconds, month, copies) == (t["outcome"], t["ready_seconds"], t["month"], 1), name
        assert engine == "sglang" and source.startswith(f"s3://{BUCKET}/e2e/node-")
    # the phases table joins on the run key
    orphans = con.execute(
        f"SELECT count(*) FROM read_parquet('{store}/phases/**/*.parquet', hive_partitioning = true) p "
        f"ANTI JOIN read_parquet('{glob}', hive_partitioning = true) r USING (run_id)").fetchone()
    assert orphans == (0,)

    # again, on this machine's processes and from the same objects: nothing new, the same ids
    again = _cli(["ingest", "-v", "--store", str(store), f"s3://{BUCKET}/e2e/"], env, timeout=600)
    assert again.returncode == 1 and f"0 runs added to {store}" in again.stdout
    assert again.stdout.count("already in the store: ") == len(runs)
    assert con.execute(f"SELECT count(*) FROM read_parquet('{glob}')").fetchone() == (len(distinct),)


def test_ray_refuses_stdin(tmp_path: Path) -> None:
    need("ray")
    proc = _cli(["ingest", "--ray", "local", "--store", str(tmp_path / "s"), "-"], dict(os.environ), timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "firedup: ingest --ray reads files and objects, not stdin ('-'): the workers cannot see it")


def _readme_queries(store: Path) -> list[str]:
    """The SQL statements of the Fleet page (docs/fleet.md), on `store`."""
    section = (ROOT / "docs" / "fleet.md").read_text()
    sql = section[section.index("```sql") + len("```sql"): section.index("```", section.index("```sql") + 6)]
    sql = sql.replace("STORE/", f"{store}/")
    lines = [line for line in sql.splitlines() if not line.startswith("--")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]


def _quantile_cont(values: list[float], q: float) -> float:
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def test_the_readme_queries_answer_the_three_questions(tmp_path: Path) -> None:
    """p90 per config per week, the slowest phase by week, crash categories: on a store of
    three weeks (debug starts, then production, then production with two OOM crashes),
    checked against the logs' own figures."""
    need("duckdb")
    import duckdb

    from firedup.tables.store import Store

    logs = tmp_path / "logs"
    logs.mkdir()
    monday = datetime(2026, 3, 2, 9)  # a Monday: weeks are whole
    ready: dict[tuple[str, bool, int], list[float]] = {}
    weeks = [("debug", True, None), ("prod", False, None), ("prod", False, "cuda_graph")]
    for week, (kind, no_graphs, crash) in enumerate(weeks):
        for i in range(4):
            spec = Spec(monday + timedelta(days=7 * week + i), disable_cuda_graph=no_graphs,
                        load_weights=180 + 10 * i if no_graphs else 120, cuda_graph=600 + 40 * i,
                        crash_in=crash if i % 2 else None)
            text, truth = render(spec)
            (logs / f"{kind}-w{week}-{i}.log").write_text(text)
            if truth["ready_seconds"] is not None:
                ready.setdefault((f"2026-03-{2 + 7 * week:02d}", no_graphs, week), []).append(float(truth["ready_seconds"]))
    report = Store(tmp_path / "store").ingest([str(logs)])
    assert report.runs_added == 12 and not report.errors

    con = duckdb.connect()
    *views, p90, slowest, crashes = _readme_queries(tmp_path / "store")
    for view in views:
        con.execute(view)
    got = {(str(week.date()), no_graphs): (n, p) for week, _model, _tp, no_graphs, n, p in con.execute(p90).fetchall()}
    assert got == {(week, no_graphs): (len(times), pytest.approx(_quantile_cont(times, 0.9)))
                   for (week, no_graphs, _), times in ready.items()}
    by_week = {(str(week.date()), phase): n for week, phase, n, _median in con.execute(slowest).fetchall()}
    assert by_week == {("2026-03-02", "load_weights"): 4, ("2026-03-09", "cuda_graph"): 4,
                       ("2026-03-16", "cuda_graph"): 4}
    rows = con.execute(crashes).fetchall()
    assert len(rows) == 1 and rows[0][1:3] == ("cuda_graph", 2) and rows[0][0]


def test_without_ray_installed_the_error_is_one_line(tmp_path: Path) -> None:
    """A `ray` that cannot be imported (shadowed here by a module that raises ImportError, as
    a missing package does): one line naming the extra, exit 1, no traceback."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "ray.py").write_text("raise ImportError('No module named ray')\n")
    log = tmp_path / "one.log"
    log.write_text(render(Spec(datetime(2026, 2, 1)))[0])
    env = {**os.environ, "PYTHONPATH": f"{shadow}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = _cli(["ingest", "--ray", "local", "--store", str(tmp_path / "s"), str(log)], env, timeout=120)
    assert (proc.returncode, proc.stderr) == (1, "firedup: ingest --ray needs Ray: pip install 'firedup[fleet]'\n")


# --- the store in a bucket: `--store s3://bucket/prefix` (and gs://, az://) ----------------


def _keys(s3: S3, prefix: str) -> list[str]:
    pages = s3.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))


def _stored(truth: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """Content hash -> what the store must hold for it (one entry per distinct log)."""
    return {str(t["sha256"]): t for t in truth.values() if "outcome" in t}


def _listed_runs(stdout: str) -> list[str]:
    """The run rows of `firedup runs --store` (each begins with its start date)."""
    return [line for line in stdout.splitlines() if line[:4].isdigit() and line[4:5] == "-"]


def _duckdb_over(url: str) -> Any:
    """DuckDB reading the bucket itself: the extension it would download (httpfs) cannot be
    fetched here, so its Python client is handed the same fsspec file system firedup uses."""
    import duckdb
    import fsspec

    con = duckdb.connect()
    con.register_filesystem(fsspec.filesystem(url.partition("://")[0], skip_instance_cache=True))
    return con


def test_ingest_into_a_bucket_store_then_read_it_back(s3: S3, tmp_path: Path) -> None:
    """`firedup ingest --store s3://...` writes the same Hive layout as a folder, named by
    content hash; `firedup runs --store`, `firedup.load(store=)` and DuckDB read it back."""
    need("duckdb")
    import firedup

    truth = _fleet_of(tmp_path / "logs", 24)
    s3.upload(tmp_path / "logs", "small")
    url = f"s3://{BUCKET}/stores/plain"
    env = {**os.environ, **s3.env}
    proc = _cli(["ingest", "-v", "--store", url, f"s3://{BUCKET}/small/"], env, timeout=300)
    stored = _stored(truth)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "binary data" in proc.stderr, proc.stderr
    assert f"{len(stored)} runs added to {url}" in proc.stdout
    assert proc.stdout.count("already in the store: ") == 1  # the twin
    tables = ("runs", "phases", "milestones")
    assert _keys(s3, "stores/plain/") == sorted(
        ["stores/plain/_firedup_store.json"] + [f"stores/plain/{table}/engine=sglang/month={t['month']}/{chash}.parquet"
                                                for chash, t in stored.items() for table in tables])

    listed = _cli(["runs", "--store", url], env, timeout=300)
    assert listed.returncode == 0 and not listed.stderr, listed.stderr
    assert len(_listed_runs(listed.stdout)) == len(stored)

    back = firedup.load(store=url)
    got = {row["content_hash"]: (row["outcome"], row["ready_seconds"]) for row in back.runs.iter_rows(named=True)}
    assert got == {chash: (t["outcome"], t["ready_seconds"]) for chash, t in stored.items()}
    assert set(back.phases["run_id"].to_list()) == set(back.runs["run_id"].to_list())

    con = _duckdb_over(url)
    rows = con.execute("SELECT content_hash, outcome, month, count(*) OVER (PARTITION BY content_hash) "
                       f"FROM read_parquet('{url}/runs/**/*.parquet', hive_partitioning = true)").fetchall()
    assert sorted(rows) == sorted((chash, t["outcome"], t["month"], 1) for chash, t in stored.items())

    again = firedup.ingest([f"s3://{BUCKET}/small/"], store=url)
    assert again.runs_added == 0 and len(again.present) == len(stored) + 1
    assert len(_keys(s3, "stores/plain/")) == 1 + 3 * len(stored)


def test_concurrent_ingests_into_one_bucket_store_count_each_run_once(s3: S3, tmp_path: Path) -> None:
    """Four processes started at one barrier, each log given to two of them, into a new bucket
    store: no lock anywhere, yet each log is added by exactly one (the runs object's
    conditional write), stored once, and read back whole."""
    need("duckdb")
    from _race import hourly_logs, race_ingests
    from firedup.tables.load import load
    from firedup.tables.store import Store
    from logmaker import ready_seconds_by_regex

    names = hourly_logs(tmp_path / "logs", 12)
    url = f"s3://{BUCKET}/stores/raced"
    results = race_ingests(url, [names[0:6], names[3:9], names[6:12], names[9:12] + names[0:3]])
    assert all(kind == "ok" for kind, _, _ in results), results
    assert sum(added for _, added, _ in results) == 12  # each log added by exactly one writer
    assert sum(present for _, _, present in results) == 12  # and found present by the other
    assert len([k for k in _keys(s3, "stores/raced/runs/") if k.endswith(".parquet")]) == 12
    rows = _duckdb_over(url).execute(
        f"SELECT run_id, count(*) FROM read_parquet('{url}/runs/**/*.parquet') GROUP BY run_id").fetchall()
    assert len(rows) == 12 and all(n == 1 for _, n in rows)
    back = load(Store(url))
    sources = dict(zip(back.runs["source"].to_list(), back.runs["ready_seconds"].to_list(), strict=True))
    assert sources == {name: ready_seconds_by_regex(Path(name)) for name in names}
    per_run = back.phases.filter(back.phases["scope"] == "run").group_by("run_id").len()
    assert per_run.height == 12


@pytest.mark.slow
def test_ray_ingests_into_a_bucket_store(s3: S3, tmp_path: Path) -> None:
    """`ingest --ray local` with `--store s3://...`: each worker writes its logs into the bucket."""
    need("ray", "duckdb")
    truth = _fleet_of(tmp_path / "logs", 24)
    s3.upload(tmp_path / "logs", "for-ray")
    url = f"s3://{BUCKET}/stores/ray"
    env = {**os.environ, **s3.env}
    proc = _cli(["ingest", "-v", "--ray", "local", "--workers", "2", "--store", url, f"s3://{BUCKET}/for-ray/"], env,
                timeout=600)
    stored = _stored(truth)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "binary data" in proc.stderr, proc.stderr[-2000:]
    assert f"{len(stored)} runs added to {url}" in proc.stdout
    assert proc.stdout.count("already in the store: ") == 1
    rows = _duckdb_over(url).execute(
        f"SELECT content_hash, outcome, ready_seconds FROM read_parquet('{url}/runs/**/*.parquet')").fetchall()
    assert sorted(rows) == sorted((chash, t["outcome"], t["ready_seconds"]) for chash, t in stored.items())
    listed = _cli(["runs", "--store", url], env, timeout=300)
    assert listed.returncode == 0 and len(_listed_runs(listed.stdout)) == len(stored), listed.stderr


def test_bucket_store_errors_are_one_line(s3: S3, tmp_path: Path) -> None:
    """A missing bucket and a prefix that is not a store: one line naming the store, for the
    writer and for a reader, and nothing written."""
    log = tmp_path / "one.log"
    log.write_text(render(Spec(datetime(2026, 2, 1)))[0])
    s3.client.put_object(Bucket=BUCKET, Key="not-a-store/notes.txt", Body=b"mine")
    env = {**os.environ, **s3.env}
    cases = [
        (["ingest", "--store", "s3://no-such-bucket/store", str(log)],
         "s3://no-such-bucket/store: no such bucket (no-such-bucket)"),
        (["runs", "--store", "s3://no-such-bucket/store"], "s3://no-such-bucket/store: no such bucket (no-such-bucket)"),
        (["ingest", "--store", f"s3://{BUCKET}/not-a-store", str(log)],
         f"s3://{BUCKET}/not-a-store: not a firedup store (no _firedup_store.json); refusing to write into a prefix "
         "that holds other objects"),
        (["runs", "--store", f"s3://{BUCKET}/not-a-store/"],
         f"s3://{BUCKET}/not-a-store: not a firedup store (no _firedup_store.json)"),
    ]
    for args, message in cases:
        proc = _cli(args, env, timeout=120)
        assert (proc.returncode, proc.stderr) == (1, f"firedup: {message}\n"), args
    assert _keys(s3, "not-a-store/") == ["not-a-store/notes.txt"]


def test_a_bucket_store_without_write_permission(tmp_path: Path) -> None:
    """On a server that checks IAM policies: a writer fills the store, a reader (GetObject and
    ListBucket only) reads it, and its ingest is one line saying permission denied."""
    from _s3 import locked_s3

    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    for i, path in enumerate(logs):
        path.write_text(render(Spec(datetime(2026, 2, 1 + i)))[0])
    with locked_s3("locked") as users:
        url = "s3://locked/store"
        wrote = _cli(["ingest", "--store", url, str(logs[0])], {**os.environ, **users["writer"]}, timeout=120)
        assert wrote.returncode == 0 and f"1 run added to {url}" in wrote.stdout, wrote.stderr
        reader = {**os.environ, **users["reader"]}
        listed = _cli(["runs", "--store", url], reader, timeout=120)
        assert listed.returncode == 0 and len(_listed_runs(listed.stdout)) == 1, listed.stderr
        denied = _cli(["ingest", "--store", url, str(logs[1])], reader, timeout=120)
        assert (denied.returncode, denied.stderr) == (
            1, f"firedup: {url}: permission denied (Access Denied); the log is not stored\n")
        again = _cli(["runs", "--store", url], reader, timeout=120)
        assert len(_listed_runs(again.stdout)) == 1


def _emulated_round_trip(scheme: str, bucket: str, server_env: dict[str, str], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Logs uploaded to `scheme://bucket/logs/`, ingested into `scheme://bucket/store`, read
    back by `firedup runs --store`; again: nothing new; a missing bucket: one line."""
    import fsspec

    truth = _fleet_of(tmp_path / "logs", 10)
    for key, value in server_env.items():
        monkeypatch.setenv(key, value)
    if scheme == "gs":  # gcsfs's plain file system: its default one probes a gRPC API (see gcs_server)
        from gcsfs.core import GCSFileSystem

        fs = GCSFileSystem(skip_instance_cache=True)
    else:
        fs = fsspec.filesystem(scheme, skip_instance_cache=True)
    for path in sorted(p for p in (tmp_path / "logs").rglob("*.log")):
        fs.pipe_file(f"{bucket}/logs/{path.relative_to(tmp_path / 'logs').as_posix()}", path.read_bytes())
    env = {**os.environ, **server_env}
    url = f"{scheme}://{bucket}/store"
    stored = _stored(truth)
    proc = _cli(["ingest", "--store", url, f"{scheme}://{bucket}/logs/"], env, timeout=300)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "binary data" in proc.stderr, proc.stderr[-2000:]
    assert f"{len(stored)} runs added to {url}" in proc.stdout and proc.stdout.count("already in the store") == 1
    assert sorted(k.rsplit("/", 1)[-1] for k in fs.find(f"{bucket}/store/runs")) == sorted(
        f"{chash}.parquet" for chash in stored)
    listed = _cli(["runs", "--store", url], env, timeout=300)
    assert listed.returncode == 0 and len(_listed_runs(listed.stdout)) == len(stored), listed.stderr[-2000:]
    again = _cli(["ingest", "--store", url, f"{scheme}://{bucket}/logs/"], env, timeout=300)
    assert f"0 runs added to {url}" in again.stdout
    word = "container" if scheme == "az" else "bucket"
    missing = _cli(["runs", "--store", f"{scheme}://no-such-{word}/store"], env, timeout=120)
    assert (missing.returncode, missing.stderr) == (
        1, f"firedup: {scheme}://no-such-{word}/store: no such {word} (no-such-{word})\n")


def test_gs_logs_into_a_gs_store_on_an_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _emulators import gcs_server

    with gcs_server("fleet-gcs") as server_env:
        _emulated_round_trip("gs", "fleet-gcs", server_env, tmp_path, monkeypatch)


def test_az_logs_into_an_az_store_on_azurite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _emulators import azure_server

    with azure_server("fleet-az") as server_env:
        _emulated_round_trip("az", "fleet-az", server_env, tmp_path, monkeypatch)

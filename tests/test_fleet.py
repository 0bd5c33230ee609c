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

import pytest

from _s3 import BUCKET, S3, need, s3_server
from logmaker import Spec, render

ROOT = Path(__file__).resolve().parents[1]
N_LOGS = 200


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


def _fleet_of(folder: Path) -> dict[str, dict[str, object]]:
    """N_LOGS logs over three months: ready starts (with and without CUDA graphs), OOM crashes
    during the capture, binary junk, logs without a server start, and one log stored under two
    names. name -> what the store must say about it (outcome, seconds, month), or its error."""
    folder.mkdir(parents=True, exist_ok=True)
    base = datetime(2026, 1, 5, 8, 0, 0)
    truth: dict[str, dict[str, object]] = {}
    for i in range(N_LOGS - 1):
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
    assert len(truth) == N_LOGS
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
    proc = _cli(["ingest", "--ray", "local", "--workers", "2", "--store", str(store), f"s3://{BUCKET}/e2e/"],
                env, timeout=600)
    # every failed file is one line naming it; none stops the job (exit 1: some inputs bad)
    assert proc.returncode == 1, proc.stderr[-3000:]
    bad = sorted(name for name, t in truth.items() if "error" in t)
    assert sorted(proc.stderr.splitlines()) == sorted(
        f"firedup: s3://{BUCKET}/e2e/{name}: not a text log: binary data (NUL byte at offset 4)" for name in bad)
    empty = sorted(name for name, t in truth.items() if t.get("empty"))
    assert sorted(line for line in proc.stdout.splitlines() if line.startswith("no server startup")) == sorted(
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
    again = _cli(["ingest", "--store", str(store), f"s3://{BUCKET}/e2e/"], env, timeout=600)
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

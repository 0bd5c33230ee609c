"""The history store: layout, dedupe by content, concurrent ingests in real processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from firedup.tables.frames import load
from firedup.tables.store import MARKER, Store, StoreError, default_store_path, open_store
from logmaker import Spec, ready_seconds_by_regex, write

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_ingest_then_read_back(fleet_logs: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    report = store.ingest([str(fleet_logs)])
    assert report.runs_added == 12 and not report.present
    runs = load(store)
    assert runs.runs.height == 12
    direct = load([str(fleet_logs)])
    cols = ["run_id", "source", "outcome", "ready_seconds", "disable_cuda_graph", "tp_size"]
    assert runs.runs.select(cols).sort("run_id").equals(direct.runs.select(cols).sort("run_id"))
    assert runs.phases.height == direct.phases.height
    assert runs.milestones.height == direct.milestones.height
    # the figures survive the round trip: check against the log text
    got = dict(zip(runs.runs["source"].to_list(), runs.runs["ready_seconds"].to_list(), strict=True))
    for path in fleet_logs.glob("*.log"):
        assert got[str(path)] == ready_seconds_by_regex(path)


def test_reingest_is_a_no_op(fleet_logs: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.ingest([str(fleet_logs / "prod-0.log")])
    files = sorted(p.relative_to(store.root) for p in store.root.rglob("*"))
    copy = tmp_path / "renamed.log"
    copy.write_bytes((fleet_logs / "prod-0.log").read_bytes())
    again = store.ingest([str(fleet_logs / "prod-0.log"), str(copy)])
    assert again.runs_added == 0 and sorted(again.present) == sorted([str(fleet_logs / "prod-0.log"), str(copy)])
    assert sorted(p.relative_to(store.root) for p in store.root.rglob("*")) == files


def test_layout_is_hive_partitioned_parquet(fleet_logs: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.ingest([str(fleet_logs / "debug-0.log"), str(fleet_logs / "small-tp1.log")])
    assert (store.root / MARKER).is_file()
    pattern = re.compile(r"^(runs|phases|milestones)/engine=sglang/month=2026-03/[0-9a-f]{64}\.parquet$")
    files = [p.relative_to(store.root).as_posix() for p in store.root.rglob("*.parquet")]
    assert len(files) == 6 and all(pattern.match(f) for f in files), files
    # partition values live in the path only, as Hive layouts do
    one = pl.read_parquet(next((store.root / "runs").rglob("*.parquet")))
    assert "engine" not in one.columns
    # a generic Hive reader (polars' own, not firedup's code) sees the partition columns
    frame = pl.read_parquet(str(store.root / "runs" / "**" / "*.parquet"), hive_partitioning=True)
    assert sorted(frame["engine"].to_list()) == ["sglang", "sglang"]
    assert frame.height == 2


def test_duckdb_reads_the_store(fleet_logs: Path, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    store = Store(tmp_path / "store")
    store.ingest([str(fleet_logs)])
    con = duckdb.connect()
    rows = con.execute(
        "select engine, count(*), max(ready_seconds) from read_parquet(?, hive_partitioning=true) group by engine",
        [str(store.root / "runs" / "**" / "*.parquet")]).fetchall()
    slowest = max(t for t in (ready_seconds_by_regex(p) for p in fleet_logs.glob("*.log")) if t is not None)
    assert rows == [("sglang", 12, slowest)]


def test_concurrent_ingests_lose_nothing(tmp_path: Path) -> None:
    fleet_logs = tmp_path / "fleet_logs"
    fleet_logs.mkdir()
    base = datetime(2026, 4, 1, 8)
    for i in range(12):
        write(fleet_logs / f"run-{i:02d}.log", Spec(base + timedelta(hours=i), tp=2, cuda_graph=100 + i, load_weights=30 + i))
    store_dir = tmp_path / "store"
    names = sorted(str(p) for p in fleet_logs.glob("*.log"))
    # four processes with overlapping inputs: every log is ingested by two of them at once
    chunks = [names[0:6], names[3:9], names[6:12], names[9:12] + names[0:3]]
    procs = [subprocess.Popen([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir), *chunk],
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for chunk in chunks]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    runs = load(Store(store_dir))
    assert sorted(runs.runs["source"].to_list()) == names
    assert runs.runs["run_id"].n_unique() == 12
    # every file is a complete Parquet file, and no temporary file is left behind
    for path in store_dir.rglob("*"):
        assert not path.name.endswith(".tmp"), path
        if path.suffix == ".parquet":
            pl.read_parquet(path)
    expected = {str(p): ready_seconds_by_regex(p) for p in fleet_logs.glob("*.log")}
    got = dict(zip(runs.runs["source"].to_list(), runs.runs["ready_seconds"].to_list(), strict=True))
    assert got == expected
    per_run = runs.phases.filter(pl.col("scope") == "run").group_by("run_id").len()
    assert per_run.height == 12


def test_half_written_ingest_is_invisible(fleet_logs: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.ingest([str(fleet_logs / "debug-0.log"), str(fleet_logs / "debug-1.log")])
    runs_file = next(p for p in (store.root / "runs").rglob("*.parquet")
                     if pl.read_parquet(p)["source"][0].endswith("debug-1.log"))
    runs_file.unlink()  # as if the process died after phases/milestones and before runs
    back = load(store)
    assert back.runs.height == 1
    assert set(back.phases["run_id"].to_list()) == set(back.runs["run_id"].to_list())
    assert set(back.milestones["run_id"].to_list()) == set(back.runs["run_id"].to_list())


def test_paths_and_store_together_count_each_log_once(fleet_logs: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.ingest([str(fleet_logs / "prod-0.log"), str(fleet_logs / "prod-1.log")])
    runs = load([str(fleet_logs / "prod-1.log"), str(fleet_logs / "prod-2.log")], store=store)
    assert runs.runs.height == 3


def test_store_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FIREDUP_STORE", str(tmp_path / "elsewhere"))
    assert default_store_path() == tmp_path / "elsewhere"
    assert open_store(None).root == tmp_path / "elsewhere"
    monkeypatch.delenv("FIREDUP_STORE")
    assert default_store_path().name == "store" and "firedup" in str(default_store_path())


def test_refuses_a_folder_that_is_not_a_store(fleet_logs: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not a firedup store"):
        Store(tmp_path).ingest([str(fleet_logs / "prod-0.log")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_empty_store_reads_as_no_runs(tmp_path: Path) -> None:
    assert load(Store(tmp_path / "nothing-yet")).runs.height == 0


def test_add_stores_one_log_and_has_finds_it_in_its_partition(fleet_logs: Path, tmp_path: Path) -> None:
    """`Store.add`, what each Ray worker calls per file: added once, then present; `has` looks
    the hash up in the partition folders."""
    from firedup.timeline.pipeline import file_sha256, parse_paths

    store = Store(tmp_path / "store")
    store.prepare()
    runs = parse_paths([str(fleet_logs / "prod-3.log")], content_hash=True).runs
    chash = file_sha256(fleet_logs / "prod-3.log")
    assert not store.has(chash) and store.add([]) == ("empty", 0)
    assert store.add(runs) == ("added", 1) and store.has(chash) and not store.has("0" * 64)
    assert store.add(runs) == ("present", 0)
    assert store.add(runs, force=True) == ("added", 1)
    assert sorted(p.relative_to(store.root).as_posix() for p in store.root.rglob(f"{chash}.parquet")) == sorted(
        f"{table}/engine=sglang/month=2026-03/{chash}.parquet" for table in ("milestones", "phases", "runs"))

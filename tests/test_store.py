"""The history store: layout, dedupe by content, concurrent ingests in real processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firedup.tables.load import load
from firedup.tables.store import MARKER, Store, StoreError, default_store_path, open_store
from logmaker import ready_seconds_by_regex

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
    from _race import hourly_logs

    names = hourly_logs(tmp_path / "fleet_logs", 12)
    store_dir = tmp_path / "store"
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
    expected = {name: ready_seconds_by_regex(Path(name)) for name in names}
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


# --- hostile conditions: concurrency, year inference, --force, unwritable folders (issue 13) ----

SAMPLES = ROOT / "sample_logs"


def _duckdb_rows(store_dir: Path) -> list[tuple[str, int]]:
    """(run_id, copies) of every run in the store, read by DuckDB over the Parquet files."""
    duckdb = pytest.importorskip("duckdb")
    return [(str(r), int(n)) for r, n in duckdb.connect().execute(
        "select run_id, count(*) from read_parquet(?, hive_partitioning=true) group by run_id order by run_id",
        [str(store_dir / "runs" / "**" / "*.parquet")]).fetchall()]


def test_eight_processes_ingest_into_a_new_folder_and_count_every_run_once(tmp_path: Path) -> None:
    from _race import hourly_logs, race_ingests

    names = hourly_logs(tmp_path / "logs", 16)
    store_dir = tmp_path / "new" / "store"  # no folder yet: all eight race to create it and its marker
    results = race_ingests(str(store_dir), [names[i:] + names[:i] for i in range(0, 16, 2)])
    assert all(kind == "ok" for kind, _, _ in results), results
    assert sum(added for _, added, _ in results) == 16  # each run added by exactly one process
    rows = _duckdb_rows(store_dir)
    assert len(rows) == 16 and all(n == 1 for _, n in rows), rows
    assert sorted(load(Store(store_dir)).runs["source"].to_list()) == names
    assert not [p for p in store_dir.rglob("*") if p.name.endswith(".tmp")]


def _yearless(path: Path, mtime: datetime) -> Path:
    """A vLLM log without its collector's stamps (so no year), dated by `mtime` alone."""
    data = (SAMPLES / "vllm-tp2-eager.log").read_bytes()
    path.write_bytes(b"".join(re.sub(rb"^\S+Z ", b"", line) for line in data.splitlines(keepends=True)))
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def test_identical_logs_dated_in_different_years_are_stored_once(tmp_path: Path) -> None:
    old = _yearless(tmp_path / "old.log", datetime(2025, 12, 30, 12))
    new = _yearless(tmp_path / "new.log", datetime(2026, 12, 30, 12))
    store = Store(tmp_path / "store")
    first = store.ingest([str(old)])
    assert first.runs_added == 1
    again = store.ingest([str(new)])
    assert again.runs_added == 0 and again.present == [str(new)]
    both = store.ingest([str(old), str(new)], force=True)  # one call, both copies, forced: still one
    assert both.runs_added == 1 and both.present == [str(new)]
    assert [n for _, n in _duckdb_rows(store.root)] == [1]
    assert len(list((store.root / "runs").rglob("*.parquet"))) == 1


def test_force_with_another_date_replaces_the_stored_copy(tmp_path: Path) -> None:
    log = _yearless(tmp_path / "v.log", datetime(2026, 6, 1, 12))
    store_dir = tmp_path / "store"
    for date, force in (("2025-01-15", False), ("2024-06-30", True)):
        proc = subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir), "--date", date,
                               *(["--force"] if force else []), str(log)], env=_env(), capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
    assert [n for _, n in _duckdb_rows(store_dir)] == [1]  # it was 2: the old month's copy stayed
    months = {p.parent.name for t in ("runs", "phases", "milestones") for p in (store_dir / t).rglob("*.parquet")}
    assert len(months) == 1 and months != {"month=2025-01"}, months
    runs = load(Store(store_dir))
    assert runs.runs.height == 1 and runs.phases["run_id"].n_unique() == 1


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _as_full_disk() -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_a_full_disk_is_one_line_and_leaves_the_store_as_it_was(fleet_logs: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    Store(store_dir).ingest([str(fleet_logs / "prod-0.log")])
    before = _files(store_dir)
    proc = subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir),
                           str(fleet_logs / "prod-1.log")], env=_env(), capture_output=True, text=True, timeout=120,
                          check=False, preexec_fn=_as_full_disk)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(store_dir) in proc.stderr and "left as it was" in proc.stderr
    assert _files(store_dir) == before
    assert [n for _, n in _duckdb_rows(store_dir)] == [1]


def _read_only(folder: Path, on: bool) -> None:
    """Make a folder tree read-only, for root too: `chattr +i` (root ignores permission bits),
    else the permission bits."""
    dirs = [folder, *(p for p in folder.rglob("*") if p.is_dir())]
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if on else "-i", *map(str, dirs)], check=True, capture_output=True)
    else:
        for d in dirs:
            os.chmod(d, 0o555 if on else 0o755)


def test_a_read_only_store_is_one_line_and_left_as_it_was(fleet_logs: Path, tmp_path: Path) -> None:
    import shutil

    if os.geteuid() == 0 and shutil.which("chattr") is None:
        pytest.skip("root ignores permission bits and there is no chattr to make a folder read-only")
    store_dir = tmp_path / "store"
    Store(store_dir).ingest([str(fleet_logs / "prod-0.log")])
    before = _files(store_dir)
    _read_only(store_dir, True)
    try:
        proc = subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir),
                               str(fleet_logs / "prod-1.log")], env=_env(), capture_output=True, text=True,
                              timeout=120, check=False)
    finally:
        _read_only(store_dir, False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(store_dir) in proc.stderr, proc.stderr
    assert _files(store_dir) == before
    assert [n for _, n in _duckdb_rows(store_dir)] == [1]


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


# --- the store under faults (issue 33): the commit rule, killed writers, unreadable files ------

DOCS = ROOT / "docs" / "store.md"


def _views(store_dir: Path) -> Any:
    """A DuckDB connection with the committed views of docs/store.md, read from the page (the
    query users copy is the one tested)."""
    duckdb = pytest.importorskip("duckdb")
    blocks = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S)
    views = next(b for b in blocks if "CREATE VIEW runs" in b)
    con = duckdb.connect()
    con.execute(views.replace("'history/", f"'{store_dir}/"))
    return con


def _facts_duckdb(store_dir: Path) -> dict[str, Any]:
    """Per committed run: its partition and how many phases and milestones rows it has."""
    if not (store_dir / "runs").is_dir() or not list((store_dir / "runs").rglob("*.parquet")):
        return {}
    con = _views(store_dir)
    runs = {r: (e, m) for r, e, m in con.execute("select run_id, engine, month from runs").fetchall()}
    assert len(runs) == con.execute("select count(*) from runs").fetchone()[0], "a run counted twice"
    out: dict[str, Any] = {r: [part, 0, 0] for r, part in runs.items()}
    for i, table in ((1, "phases"), (2, "milestones")):
        if list((store_dir / table).rglob("*.parquet")):
            for r, n in con.execute(f"select run_id, count(*) from {table} group by run_id").fetchall():
                out[r][i] = n
    return {r: tuple(v) for r, v in out.items()}


def _facts_firedup(store_dir: Path) -> dict[str, Any]:
    runs = load(Store(store_dir)) if (store_dir / MARKER).exists() else None
    if runs is None or not runs.runs.height:
        return {}
    phases = dict(runs.phases.group_by("run_id").len().iter_rows())
    milestones = dict(runs.milestones.group_by("run_id").len().iter_rows())
    return {r: (None, phases.get(r, 0), milestones.get(r, 0)) for r in runs.runs["run_id"].to_list()}


def _assert_committed(store_dir: Path, truth: dict[str, tuple[int, int]], complete: set[str] | None = None) -> None:
    """DuckDB's views and firedup's reads see the same runs, each once, each with exactly its
    own phases and milestones (no phantom, nothing doubled); `complete`: runs that must be there."""
    duck, own = _facts_duckdb(store_dir), _facts_firedup(store_dir)
    assert set(duck) == set(own), (sorted(duck), sorted(own))
    for run_id, (_part, phases, milestones) in duck.items():
        assert run_id in truth, f"a phantom run {run_id}"
        assert (phases, milestones) == truth[run_id], f"{run_id}: {phases}, {milestones} rows, want {truth[run_id]}"
        assert own[run_id][1:] == truth[run_id]
    if complete is not None:
        assert complete <= set(duck), f"lost: {sorted(complete - set(duck))}"


def _truth(logs: list[str], tmp_path: Path) -> dict[str, tuple[int, int]]:
    clean = tmp_path / "clean"
    Store(clean).ingest(logs)
    return {r: (p, m) for r, (_, p, m) in _facts_firedup(clean).items()}


# Runs `firedup` with the store's two writing operations counted: the process dies (as by
# SIGKILL: no clean-up) right before operation number KILL_AT.
_KILLED_AT = """
import os, sys
from firedup.tables import store
at, done = int(os.environ["KILL_AT"]), [0]
for name in ("put", "remove"):
    def step(self, *args, _orig=getattr(store._Folder, name), **kw):
        if done[0] == at:
            os._exit(137)
        done[0] += 1
        return _orig(self, *args, **kw)
    setattr(store._Folder, name, step)
from firedup.cli import main
sys.argv = ["firedup", *sys.argv[1:]]
main()
"""


def _ingest_killed_at(step: int, args: list[str]) -> int:
    proc = subprocess.run([sys.executable, "-c", _KILLED_AT, "ingest", *args], env=_env(KILL_AT=str(step)),
                          capture_output=True, text=True, timeout=180, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode


def test_an_ingest_killed_at_every_step_leaves_no_phantom_and_nothing_doubled(tmp_path: Path) -> None:
    """Killed after its phases and before its runs file, an ingest left runs that DuckDB over
    `phases/**` saw although no `runs` object said so; killed in a --force move, a log's phases
    in two month partitions. With the commit rule (docs/store.md) neither is ever seen, at
    any step, and the next ingest clears what the dead writer left."""
    logs = [_yearless(tmp_path / f"v{i}.log", datetime(2026, 6, 1, 12)) for i in range(2)]
    logs[1].write_bytes(logs[1].read_bytes() + b"\n")  # another content hash
    names = [str(p) for p in logs]
    truth = _truth(names, tmp_path)
    assert len(truth) == 2
    for scenario in ("ingest", "force-move"):
        for step in range(20):
            store_dir = tmp_path / f"{scenario}-{step}"
            if scenario == "ingest":
                args = ["--store", str(store_dir), *names]
            else:
                before = subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir),
                                         "--date", "2025-01-15", *names], env=_env(), capture_output=True, text=True,
                                        timeout=180, check=False)
                assert before.returncode == 0, before.stderr
                args = ["--store", str(store_dir), "--force", "--date", "2024-06-30", names[0]]
            code = _ingest_killed_at(step, args)
            _assert_committed(store_dir, truth, complete=set(truth) if scenario == "force-move" else None)
            # the next ingest completes and leaves no file a reader must filter out
            again = subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir), *names],
                                   env=_env(), capture_output=True, text=True, timeout=180, check=False)
            assert again.returncode == 0, again.stderr
            _assert_committed(store_dir, truth, complete=set(truth))
            raw = {t: len(list((store_dir / t).rglob("*.parquet"))) for t in ("runs", "phases", "milestones")}
            assert raw == {"runs": 2, "phases": 2, "milestones": 2}, (scenario, step, raw)
            assert not [p for p in store_dir.rglob("*") if p.name.endswith(".tmp")]
            if code != 137:
                break  # past the last step: the ingest ran to its end
        else:
            raise AssertionError(f"{scenario}: more steps than expected")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(delay=st.floats(0.2, 4.0), force=st.booleans())
def test_an_ingest_killed_at_a_random_moment_is_read_the_same_by_duckdb_and_firedup(
        tmp_path_factory: pytest.TempPathFactory, delay: float, force: bool) -> None:
    """SIGKILL at a random moment of a real `firedup ingest` of a few logs (in its parse, in
    a file's write, between two files): DuckDB's views and firedup agree, without phantom or
    doubled runs, and the next ingest completes the store."""
    from _race import hourly_logs

    tmp = tmp_path_factory.mktemp("killed")
    names = hourly_logs(tmp / "logs", 6)
    truth = _TRUTH.setdefault("hourly", _truth(names, tmp))
    store_dir = tmp / "store"
    if force:
        subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir), *names[:3]],
                       env=_env(), capture_output=True, timeout=180, check=True)
    proc = subprocess.Popen([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir),
                             *(["--force", "--date", "2025-02-01"] if force else []), *names], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    _assert_committed(store_dir, truth)
    subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir), *names],
                   env=_env(), capture_output=True, timeout=180, check=True)
    _assert_committed(store_dir, truth, complete=set(truth))


_TRUTH: dict[str, dict[str, tuple[int, int]]] = {}


@pytest.mark.parametrize("damage", ["truncated", "zero-byte", "foreign", "wrong-schema", "not-parquet"])
@pytest.mark.parametrize("table", ["runs", "phases", "milestones"])
def test_an_unreadable_store_file_is_named_and_the_rest_is_read(fleet_logs: Path, tmp_path: Path, damage: str,
                                                                 table: str) -> None:
    """One cut or foreign Parquet file made the whole store unreadable, without naming it."""
    store_dir = tmp_path / "store"
    Store(store_dir).ingest([str(fleet_logs)])
    victim = sorted((store_dir / table).rglob("*.parquet"))[0]
    data = victim.read_bytes()
    if damage == "truncated":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "zero-byte":
        victim.write_bytes(b"")
    elif damage == "foreign":
        pl.DataFrame({"x": [1, 2], "y": ["a", "b"]}).write_parquet(victim)
    elif damage == "wrong-schema":
        pl.read_parquet(victim).with_columns(pl.lit("not a number").alias(
            {"runs": "ready_seconds", "phases": "seconds", "milestones": "offset"}[table])).write_parquet(victim)
    else:
        victim.write_text("run_id,seconds\nx,1\n")
    proc = subprocess.run([sys.executable, "-m", "firedup", "runs", "--store", str(store_dir)], env=_env(),
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(notes) == 1 and str(victim.relative_to(store_dir)) in notes[0], proc.stderr
    assert "unreadable store file" in notes[0]
    shown = [line for line in proc.stdout.splitlines() if ".log" in line]
    assert len(shown) == (11 if table == "runs" else 12), proc.stdout  # the rest of the store is read


@pytest.mark.parametrize("name", ["st[1]", "st**", "s?t", "st{a,b}"])
def test_a_store_folder_with_glob_characters_in_its_name_is_read(fleet_logs: Path, tmp_path: Path, name: str) -> None:
    """`st[1]` could be written but never read: its path was globbed."""
    store_dir = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "firedup", "ingest", "--store", str(store_dir), str(fleet_logs)],
                          env=_env(), capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr
    back = load(Store(store_dir))
    assert back.runs.height == 12 and back.phases["run_id"].n_unique() == 12

"""Logs in object storage (firedup.read.remote): listed and parsed from a real S3-compatible
server on loopback (moto), with the same runs, ids and errors as the same files on disk."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _s3 import BUCKET, S3, s3_server
from firedup.read.remote import is_url
from firedup.read.sources import expand_inputs
from firedup.timeline.pipeline import file_sha256, parse_paths

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


@pytest.fixture(scope="module")
def uploaded(s3: S3, fleet_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The fleet's 12 logs, a gzipped copy of one, a binary file and a hidden one under s3://BUCKET/fleet/."""
    extra = tmp_path_factory.mktemp("extra")
    (extra / "zipped.log.gz").write_bytes(gzip.compress((fleet_logs / "prod-1.log").read_bytes(), mtime=0))
    (extra / "junk.log").write_bytes(b"\x00\x01binary\x00" * 10)
    (extra / ".hidden" / "x.log").parent.mkdir()
    (extra / ".hidden" / "x.log").write_bytes((fleet_logs / "prod-2.log").read_bytes())
    s3.upload(fleet_logs, "fleet/logs")
    s3.upload(extra, "fleet/extra")
    return f"s3://{BUCKET}/fleet"


def test_is_url() -> None:
    assert is_url("s3://b/k") and is_url("gs://b/k") and is_url("az://c/k") and is_url("S3://b/k")
    assert not is_url("/tmp/x.log") and not is_url("http://host/x.log") and not is_url("-")


def test_a_prefix_lists_like_a_directory(uploaded: str, fleet_logs: Path) -> None:
    sources, errors = expand_inputs([f"{uploaded}/logs/"])
    assert not errors
    local = sorted(p.name for p in fleet_logs.glob("*.log"))
    assert [s.name for s in sources] == [f"{uploaded}/logs/{name}" for name in local]
    assert all(s.path is None and s.url == s.name and s.mtime is not None and not s.is_stdin for s in sources)
    hidden, _ = expand_inputs([f"{uploaded}/extra"])
    assert sorted(s.name.rsplit("/", 1)[1] for s in hidden) == ["junk.log", "zipped.log.gz"]


def test_globs_and_missing_keys(uploaded: str) -> None:
    sources, errors = expand_inputs([f"{uploaded}/logs/prod-*.log", f"{uploaded}/nothing-here/",
                                     f"{uploaded}/logs/zzz-*.log"])
    assert len(sources) == 6  # prod-0..4 and prod-oom
    assert [e.source for e in errors] == [f"{uploaded}/nothing-here/", f"{uploaded}/logs/zzz-*.log"]
    assert "no such object or prefix" in errors[0].reason and "no object matches" in errors[1].reason


def test_parse_from_s3_equals_parse_from_disk(uploaded: str, fleet_logs: Path) -> None:
    remote = parse_paths([f"{uploaded}/logs/"], content_hash=True, jobs=1)
    local = parse_paths([str(fleet_logs)], content_hash=True, jobs=1)
    assert not remote.errors and len(remote.runs) == len(local.runs) == 12

    def facts(result: object, strip: str) -> list[tuple[object, ...]]:
        return sorted((r.source.replace(strip, ""), r.outcome, r.seconds_to_end, r.content_hash, len(r.phases))
                      for r in result.runs)  # type: ignore[attr-defined]

    assert facts(remote, f"{uploaded}/logs/") == facts(local, f"{fleet_logs}/")
    # the id of an object is the sha256 of its bytes, taken while streaming it: as for the file
    by_name = {r.source.rsplit("/", 1)[1]: r.content_hash for r in remote.runs}
    for path in fleet_logs.glob("*.log"):
        assert by_name[path.name] == file_sha256(path)


def test_gzip_binary_and_pool(uploaded: str, fleet_logs: Path) -> None:
    result = parse_paths([f"{uploaded}/extra/", f"{uploaded}/logs/prod-0.log"], content_hash=True, jobs=2)
    assert [e.source for e in result.errors] == [f"{uploaded}/extra/junk.log"]
    assert "binary data" in result.errors[0].reason
    zipped = [r for r in result.runs if r.source.endswith("zipped.log.gz")]
    assert len(zipped) == 1 and zipped[0].outcome == "ready"
    compressed = gzip.compress((fleet_logs / "prod-1.log").read_bytes(), mtime=0)
    import hashlib

    # the id is that of the object's bytes (the .gz as stored), the whole of them
    assert zipped[0].content_hash == hashlib.sha256(compressed).hexdigest()


def test_missing_backend_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """gcsfs made unimportable (as a missing package is: `sys.modules[name] = None`), whether
    or not it is installed, and fsspec's registry forgetting its class."""
    pytest.importorskip("fsspec")
    registry = sys.modules["fsspec.registry"]._registry  # the classes fsspec has imported already

    monkeypatch.setitem(sys.modules, "gcsfs", None)
    for protocol in ("gs", "gcs"):
        monkeypatch.delitem(registry, protocol, raising=False)
    sources, errors = expand_inputs(["gs://some-bucket/logs/"])
    assert not sources and len(errors) == 1
    assert errors[0].source == "gs://some-bucket/logs/" and "needs gcsfs" in errors[0].reason


def test_cli_parse_reads_s3(uploaded: str, s3: S3) -> None:
    env = {**os.environ, **s3.env, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "firedup", "parse", f"{uploaded}/logs/prod-oom.log",
                           f"{uploaded}/logs/absent.log"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "crashed" in proc.stdout and "prod-oom.log" in proc.stdout and f"{uploaded}/logs/" in proc.stdout
    assert proc.stderr.strip() == f"firedup: {uploaded}/logs/absent.log: no such object or prefix"

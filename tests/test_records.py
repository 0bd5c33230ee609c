"""A `wait --record` kept beside its log (timeline.records): read as that run's process evidence,
and never a reason to fail when it is broken, hostile or another run's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.records import record_beside

H100 = ROOT / "tests" / "data" / "realgpu" / "h100-2026-12-06"


def test_the_record_is_the_same_stem_beside_the_log() -> None:
    assert record_beside(Path("/x/server.log")) == Path("/x/server.wait.json")
    assert record_beside(Path("/x/server")) == Path("/x/server.wait.json")


def test_a_record_beside_its_log_gives_the_measured_launch_and_the_compilers(tmp_path: Path) -> None:
    shutil.copy(H100 / "sglang_eagle3.log", tmp_path)
    shutil.copy(H100 / "sglang_eagle3.wait.json", tmp_path)
    record = json.loads((tmp_path / "sglang_eagle3.wait.json").read_text())
    [run] = parse_paths([str(tmp_path / "sglang_eagle3.log")]).runs
    assert run.launch is not None and run.launch.source == "measured"
    assert run.launch_to_ready == pytest.approx(record["run"]["launch"]["seconds_to_ready"], abs=0.01)
    assert run.caches["kernel_jit"].verdict == "cold" and run.caches["kernel_jit"].basis == "process"
    assert not run.warnings


@pytest.mark.parametrize("text", [
    "{not json", "[]", '{"run": 3}', '{"run": {"first_ts": "2026-12-06T02:20:57", "launch": {"source": "measured", '
    '"ts": "yesterday"}}}', '{"run": {"first_ts": "2026-12-06T02:20:57"}, "process_timeline": [{"since": '
    '"2026-12-06T02:21:00+00:00", "until": "2026-12-06T02:22:00+00:00", "compilers": ["nvcc"]}]}',
    "\x1b[31m" + "x" * 1000])
def test_a_broken_record_is_one_warning_and_the_log_is_still_read(tmp_path: Path, text: str) -> None:
    shutil.copy(H100 / "sglang_eagle3.log", tmp_path)
    (tmp_path / "sglang_eagle3.wait.json").write_text(text)
    [run] = parse_paths([str(tmp_path / "sglang_eagle3.log")]).runs
    assert run.outcome == "ready" and run.launch is not None and run.launch.source == "estimated"
    assert len(run.warnings) == 1 and "sglang_eagle3.wait.json" in run.warnings[0]
    assert "\x1b" not in run.warnings[0]


def test_a_record_of_another_run_is_not_used(tmp_path: Path) -> None:
    shutil.copy(H100 / "sglang_eagle3.log", tmp_path)
    shutil.copy(H100 / "sglang_eagle3-warm.wait.json", tmp_path / "sglang_eagle3.wait.json")
    [run] = parse_paths([str(tmp_path / "sglang_eagle3.log")]).runs
    assert run.launch is not None and run.launch.source == "estimated"
    assert run.warnings and "records another run" in run.warnings[0]

"""Shared fixtures: where the bundled samples and the optional real-log corpus live."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = ROOT / "sample_logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# ../shared beside the checkout (the developers' workplace); FIREDUP_SHARED overrides it.
SHARED = Path(os.environ.get("FIREDUP_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"


def sample_truth() -> dict[str, Any]:
    """sample_logs/truth.json: what the generator meant each sample to say."""
    return json.loads((SAMPLE_LOGS / "truth.json").read_text())  # type: ignore[no-any-return]


def corpus_logs(engine: str) -> list[Path]:
    """The corpus logs of one engine, or [] when ../shared is absent."""
    folder = CORPUS / engine
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in {".log", ".txt", ".gz"})


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def fleet_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of hand-built runs (logmaker.fleet), written once: read-only for the tests."""
    from logmaker import fleet

    folder = tmp_path_factory.mktemp("fleet")
    fleet(folder)
    return folder


def run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The real entry point (`firedup.cli.main`), in-process: (exit code, stdout, stderr)."""
    from firedup.cli import main

    monkeypatch.setattr(sys, "argv", ["firedup", *args])
    code: Any = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return int(code or 0), out.out, out.err


# The slow end-to-end tests (seconds each: real HTTP servers re-enacting whole start-ups, a
# browser, the benchmark scripts, every docs example rerun), marked `slow` here in one list so
# that `make check` (`-m "not slow"`) is a fast loop; `make test` (what CI runs) runs them all.
SLOW_MODULES = {"test_snippets_replay.py", "test_report_browser.py", "test_benchmarks.py", "test_notebook.py"}
SLOW_TESTS = {
    "test_batch.py::test_same_events_on_generated_logs",
    "test_batch.py::test_compaction_never_changes_a_timeline",
    "test_api.py::test_the_readme_library_example_runs_and_prints_what_it_shows",
    "test_engine_neutral.py::test_a_registered_engine_replays_and_is_waited_for_over_real_http",
    "test_wait.py::test_a_real_server_stand_in_imports_reads_weights_then_idles",
    "test_facts_views.py::test_wait_against_a_replay_prints_the_budget_of_budget",
    "test_wait.py::test_default_wait_pid_sees_imports_a_weight_read_and_idle_while_the_log_speaks",
    "test_report.py::test_the_same_source_date_epoch_gives_byte_identical_files",
    "test_report.py::test_regenerating_gives_the_same_bytes",
    "test_report.py::test_make_demo_pins_the_committed_report_to_the_last_commit_of_the_samples",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = item.nodeid.split("/")[-1].split("[")[0]
        if item.path.name in SLOW_MODULES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)

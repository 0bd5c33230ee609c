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

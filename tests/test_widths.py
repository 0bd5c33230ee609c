"""Every text view fits the terminal: no line wider than $COLUMNS (80 and 120 here), over the
bundled samples and, when ../shared is next to the checkout, the real-log corpus.

The snippets `budget` prints after the budgets (bash, kubernetes, compose) are code to paste
verbatim: they are written within 80 columns whatever the terminal (tests/test_snippets.py checks
every line), never rewrapped to it; the test asks for `--snippet none` and `--snippet timeouts`
(prose, fitted) and checks `--snippet bash` alone is the same at any width.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
CORPUS = ROOT.parent / "shared" / "corpus"

COMMANDS = [
    ["parse"], ["timeline"], ["runs"], ["compare"], ["compare", "--by", "disable_cuda_graph"],
    ["budget", "--snippet", "none"], ["budget", "--snippet", "timeouts"],
]


def _run(args: list[str], width: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(width), "PYTHONPATH": str(ROOT / "src")}
    env.pop("LINES", None)
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, check=False, timeout=600)


def _too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


def _inputs() -> list[Path]:
    return [SAMPLES, CORPUS]


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("where", ["samples", "corpus"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c))
def test_no_text_view_is_wider_than_the_terminal(command: list[str], where: str, width: int) -> None:
    folder = SAMPLES if where == "samples" else CORPUS
    if not folder.is_dir():
        pytest.skip(f"{folder} is not next to this checkout")
    if command == ["compare", "--by", "disable_cuda_graph"] and where == "corpus":
        command = ["compare", "--by", "engine"]
    proc = _run([*command, str(folder)], width)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stdout.strip()
    assert _too_wide(proc.stdout, width) == []


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("where", ["samples", "corpus"])
def test_check_fits_the_terminal(where: str, width: int) -> None:
    folder = SAMPLES if where == "samples" else CORPUS
    if not folder.is_dir():
        pytest.skip(f"{folder} is not next to this checkout")
    new = SAMPLES / "prod-tp8-eagle3-01.log"
    proc = _run(["check", str(new), "--history", str(folder), "-v"], width)
    # the corpus holds no run of the new run's config: CANNOT JUDGE (6)
    assert proc.returncode in ((0, 1) if where == "samples" else (6,)), proc.stderr
    assert proc.stdout.startswith(("PASS ", "FAIL ", "CANNOT JUDGE ")) and "rule: " in proc.stdout
    assert _too_wide(proc.stdout, width) == []


def test_a_snippet_alone_is_pasted_verbatim() -> None:
    """The exemption: `--snippet bash` is a script, whatever the width."""
    args = ["budget", "--snippet", "bash", "--group", "disable_cuda_graph=False", str(SAMPLES)]
    narrow, wide = _run(args, 40), _run(args, 400)
    assert narrow.returncode == 0, narrow.stderr
    assert narrow.stdout == wide.stdout


@pytest.mark.slow
@pytest.mark.parametrize("where", ["samples", "corpus"])
def test_ingest_and_the_scenario_list_fit_80_columns(where: str, tmp_path: Path) -> None:
    folder = SAMPLES if where == "samples" else CORPUS
    if not folder.is_dir():
        pytest.skip(f"{folder} is not next to this checkout")
    proc = _run(["ingest", f"--store={tmp_path / ('a-store-folder-with-a-long-name' * 3)}", str(folder)], 80)
    assert proc.returncode in (0, 1), proc.stderr
    assert "added" in proc.stdout and _too_wide(proc.stdout, 80) == []
    listed = _run(["synth", "--list"], 80)
    assert listed.returncode == 0 and _too_wide(listed.stdout, 80) == []


# --- every command's default output, piped (80 columns), on the samples and the real start-ups ----

REALGPU = [ROOT / "tests" / "data" / "realgpu" / "h100-2026-12-06", ROOT.parent / "shared" / "realgpu"]


def _default_runs(folder: Path, tmp: Path) -> list[list[str]]:
    """Each command as a user first runs it on a folder (and wait on each of its logs)."""
    logs = sorted(str(p) for p in folder.glob("*.log"))
    d = str(folder)
    return [["parse", d], ["timeline", d], ["runs", d], ["compare", d], ["budget", d],
            ["check", logs[0], "--history", d], ["ingest", d, f"--store={tmp / 'store'}"],
            ["export", d, "--format", "prometheus", "-o", str(tmp / "m.txt")], ["synth", "--list"],
            ["plot", "timeline", d, "-o", str(tmp / "t.png")], ["report", d, "-o", str(tmp / "report")],
            *(["wait", "--log", log, "--timeout", "5", "--no-inspect"] for log in logs),
            ["replay", logs[0], "--out", str(tmp / "replayed.log"), "--speed", "1000", "--port", "0", "--hold", "0"]]


@pytest.mark.slow
@pytest.mark.parametrize("folder", [SAMPLES, *REALGPU], ids=["samples", "realgpu-tests", "realgpu-shared"])
def test_every_command_piped_fits_80_columns(folder: Path, tmp_path: Path) -> None:
    if not folder.is_dir():
        pytest.skip(f"{folder} is not next to this checkout")
    for args in _default_runs(folder, tmp_path):
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        env.pop("COLUMNS", None)  # piped: 80
        env.pop("LINES", None)
        proc = subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, check=False, timeout=600)
        assert proc.returncode in (0, 1, 3, 5, 6, 124), (args, proc.stderr)
        assert proc.stdout.strip() or args[0] == "replay", args
        assert _too_wide(proc.stdout, 80) == [], args

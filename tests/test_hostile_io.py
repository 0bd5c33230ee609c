"""Hostile input, round two (issue 33), through the real `firedup` process: writes that
follow a link or race, files that change under the reader, servers and processes that lie,
inputs slow on purpose, the store under faults. Real files, real processes, real HTTP
servers on loopback."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SAMPLE_LOGS

SRC = ROOT / "src"
LOG = SAMPLE_LOGS / "sglang-warm-start.log"


def run(args: list[str], timeout: float = 180, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1", **kw.pop("env", {})}
    env.pop("FIREDUP_STORE", None)
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False, encoding="utf-8", errors="surrogateescape", **kw)


def start(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1", **kw.pop("env", {})}
    env.pop("FIREDUP_STORE", None)
    return subprocess.Popen([sys.executable, "-m", "firedup", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


# --- 4. writes that follow a link or race -------------------------------------------------------

# (command, the paths firedup writes, relative to the scratch folder); {d} is the folder
WRITERS = [
    (["report", str(LOG), "-o", "{d}/out"], ["out/index.html", "out/report.md", "out/timeline.png"]),
    (["export", "--format", "csv", str(LOG), "-o", "{d}/t.csv"], ["t.csv"]),
    (["export", "--format", "parquet", str(LOG), "-o", "{d}/t.parquet"], ["t.parquet"]),
    (["export", "--format", "chrome-trace", str(LOG), "-o", "{d}/t.json"], ["t.json"]),
    (["runs", "--format", "csv", str(LOG), "-o", "{d}/r.csv"], ["r.csv"]),
    (["plot", "timeline", str(LOG), "-o", "{d}/p.png"], ["p.png"]),
    (["wait", "--log", str(LOG), "--timeout", "0", "--record", "{d}/w.json"], ["w.json"]),
    (["synth", "{d}/s", "--scenario", "small-tp1"], ["s/small-tp1.log", "s/truth.json"]),
    (["replay", str(LOG), "--out", "{d}/replayed.log", "--speed", "1000", "--port", "0", "--hold", "0"],
     ["replayed.log"]),
]


@pytest.mark.parametrize(("args", "targets"), WRITERS, ids=[w[0][0] + " " + w[0][2] for w in WRITERS])
def test_no_writer_follows_a_symlink_planted_at_its_target(tmp_path: Path, args: list[str],
                                                           targets: list[str]) -> None:
    """`report -o OUT` overwrote whatever a planted `OUT/index.html` link pointed to, and so
    did `wait --record`, `synth` and the other writers: the link is now replaced, its target
    never opened (docs/hostile-input.md)."""
    victims = {}
    for i, rel in enumerate(targets):
        victim = tmp_path / f"victim{i}"
        victim.write_text("precious\n")
        victims[rel] = victim
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).symlink_to(victim)
    proc = run([a.replace("{d}", str(tmp_path)) for a in args])
    assert proc.returncode in (0, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    for rel, victim in victims.items():
        assert victim.read_text() == "precious\n", f"{rel}: wrote through the link"
        assert (tmp_path / rel).is_file() and not (tmp_path / rel).is_symlink(), rel
        assert (tmp_path / rel).stat().st_size > 0


def _name(suffix: str) -> str:
    """A 250-character file name (255 is the limit of most file systems)."""
    return "n" * (250 - len(suffix)) + suffix


@pytest.mark.parametrize("args", [
    ["export", "--format", "csv", str(LOG), "-o", "{d}/" + _name(".csv")],
    ["export", "--format", "chrome-trace", str(LOG), "-o", "{d}/" + _name(".json")],
    ["runs", "--format", "json", str(LOG), "-o", "{d}/" + _name(".json")],
    ["plot", "timeline", str(LOG), "-o", "{d}/" + _name(".png")],
    ["wait", "--log", str(LOG), "--timeout", "0", "--record", "{d}/" + _name(".json")],
    ["report", str(LOG), "-o", "{d}/" + _name("")],
], ids=["export csv", "export chrome-trace", "runs", "plot", "wait --record", "report"])
def test_a_250_character_output_name_works(tmp_path: Path, args: list[str]) -> None:
    """The temporary name was `.NAME.PID.tmp`, past 255 characters for a valid 250-character name."""
    proc = run([a.replace("{d}", str(tmp_path)) for a in args])
    assert proc.returncode == 0, proc.stderr
    written = [p for p in tmp_path.iterdir() if len(p.name) == 250]
    assert len(written) == 1 and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _charts_of(html: str) -> dict[str, bytes]:
    found = re.findall(r'<figure id="chart-(\w+)">\s*<img src="data:image/png;base64,([^"]+)"', html)
    return {kind: base64.b64decode(data) for kind, data in found}


def test_two_reports_into_one_folder_at_once_leave_one_whole_report(tmp_path: Path) -> None:
    """Both exited 0 and the folder held one report's text with the other's charts. Now the
    last writer's whole report is there: its pages and its charts."""
    one = [str(SAMPLE_LOGS / "sglang-warm-start.log")]
    many = [str(p) for p in sorted(SAMPLE_LOGS.glob("prod-tp8-eagle3-0*.log"))]
    out = tmp_path / "same"
    for delay in (0.0, 0.5, 1.0, 2.0, 3.0):  # the small report starts while the big one draws
        procs = [start(["report", *many, "-o", str(out)])]
        time.sleep(delay)
        procs.append(start(["report", *one, "-o", str(out)]))
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        html, md = (out / "index.html").read_text(), (out / "report.md").read_text()
        runs_html = re.search(r"all runs: (\d+) runs? ready", html)
        runs_md = re.search(r"all runs: (\d+) runs? ready", md)
        assert runs_html and runs_md and runs_html.group(1) == runs_md.group(1), "pages of two reports"
        charts = _charts_of(html)
        on_disk = {p.stem: p.read_bytes() for p in out.glob("*.png")}
        assert charts == on_disk, "the charts on disk are not the page's"

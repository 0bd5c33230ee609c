"""The plain-text timeline view."""

from __future__ import annotations

from pathlib import Path

from firedup.parse import parse_paths
from firedup.render import timeline_text

CRASH_IN_CAPTURE = """\
[2026-11-07 04:28:48] server_args={'model_path': 'm', 'tp_size': 2}
[2026-11-07 04:28:50 TP0] Memory pool end. avail mem=8.40 GB
[2026-11-07 04:29:09 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=6.20 GB
[2026-11-07 04:29:29 TP0] Scheduler hit an exception: Traceback (most recent call last):
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
"""


def test_a_phase_cut_by_a_crash_says_so_within_80_columns(tmp_path: Path) -> None:
    # Bug: the row ended "timestamps, never " once open phases got a duration: 85 columns cut to 80.
    path = tmp_path / "crash.log"
    path.write_text(CRASH_IN_CAPTURE)
    [run] = parse_paths([str(path)]).runs
    text = timeline_text(run)
    [row] = [line for line in text.splitlines() if "cuda_graph (verify)" in line]
    assert row.rstrip().endswith("timestamps, no end") and len(row) <= 80
    assert "20 s" in row

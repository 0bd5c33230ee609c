"""history: what earlier startups of a config tell `firedup wait` (budget, usual phase durations,
remaining time, stall threshold, which runs count as the same config), from logs or the store.

Expected figures come from the fixture text itself (its timestamps and `elapsed=` values, read
with the test's own regex), never from firedup's output.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from _live import CRASH_OOM, NEW_READY, OLD_READY, seconds_to_ready
from firedup.live.history import MIN_STALL_S, History, select_history
from firedup.timeline.pipeline import parse_paths


def _runs(*logs: Path):  # type: ignore[no-untyped-def]
    return parse_paths([str(p) for p in logs]).runs


def test_budget_is_the_one_firedup_budget_gives_with_its_risk(tmp_path: Path) -> None:
    slower = tmp_path / "slower.log"
    # the same startup, 60 s slower in weight loading
    text = NEW_READY.read_text()
    lines = text.splitlines()
    shifted = []
    for line in lines:
        m = re.match(r"^\[2026-10-30 10:(\d\d):(\d\d)", line)
        if m and (int(m.group(1)) * 60 + int(m.group(2))) >= 18:
            total = int(m.group(1)) * 60 + int(m.group(2)) + 60
            line = f"[2026-10-30 10:{total // 60:02d}:{total % 60:02d}" + line[len("[2026-10-30 10:00:00"):]
        shifted.append(line)
    slower.write_text("\n".join(shifted) + "\n")
    history = History(_runs(NEW_READY, slower, CRASH_OOM))
    assert history.n == 2  # the crashed run is no evidence of how long a start takes
    slowest = seconds_to_ready(slower)
    assert slowest == seconds_to_ready(NEW_READY) + 60
    budget = history.budget()
    assert budget is not None
    # counted from launch as `budget` counts: each run's estimated gap before its first line, and a
    # launch margin (the top of the usual gap less it) added to the budget, never to the runs
    from firedup.formats import get_format

    gap = get_format("sglang").timeouts.launch_gap
    assert gap is not None
    assert budget.slowest == slowest + gap.typical
    # Two runs: `firedup budget`'s log-normal prediction bound (Student-t, 1 df), never below the
    # slowest + 10 %, rounded up to whole seconds (to 10 s past a minute). 36 s and 96 s are too far
    # apart for two runs to bound a 1 % risk: the slowest + 10 %, risk unknown, and it says so.
    from firedup.tables.risk import budget_for

    same = budget_for([slowest + gap.typical, seconds_to_ready(NEW_READY) + gap.typical], 0.01,
                      launch_margin=gap.high - gap.typical)
    assert same.raw_seconds is not None and same.raw_seconds >= (slowest + gap.typical) * 1.1
    raw = same.raw_seconds
    assert budget.seconds == (math.ceil(raw) if raw <= 60 else math.ceil(raw / 10) * 10)
    assert "the budget of `firedup budget` over 2 history runs" in budget.method
    assert same.method_label in budget.method and same.risk_label in budget.method
    assert "risk unknown" in budget.method
    assert history.median_ready() == pytest.approx((slowest + seconds_to_ready(NEW_READY)) / 2)


def _slowest_elapsed(log: Path, marker: str) -> float:
    return max(float(m) for m in re.findall(rf"{marker}.*? elapsed=([\d.]+) s", log.read_text()))


def test_usual_phase_durations_and_the_remaining_time() -> None:
    history = History(_runs(NEW_READY))
    # The phases as the log reports them, on the slowest rank.
    assert history.typical_stage("load_weights") == _slowest_elapsed(NEW_READY, "Load weight end")  # 10.20
    assert history.typical_stage("cuda_graph") == _slowest_elapsed(NEW_READY, "graph end")  # 8.05
    assert history.typical_stage("warmup") == 7.0  # Uvicorn running at +29 s, ready at +36 s
    # Capture is entered with its own begin line at +20 s: 36 - 20 = 16 s to go; 5 s in, 11 s.
    assert history.remaining("cuda_graph", 5.0, 24.0) == 11.0


def test_stall_threshold_is_the_longest_silence_of_the_phase_never_below_the_floor(tmp_path: Path) -> None:
    history = History(_runs(NEW_READY))
    threshold, why = history.stall_threshold("load_weights") or (0.0, "")
    assert threshold == MIN_STALL_S  # the fixture's 10 s silence is below the floor
    assert "10 s" in why
    slow = tmp_path / "slow.log"
    slow.write_text("[2025-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
                    "[2025-01-10 10:00:05 TP0] Init torch distributed begin.\n"
                    "[2025-01-10 10:00:06 TP0] Load weight begin. avail mem=78.50 GB\n"
                    "[2025-01-10 10:02:06 TP0] Load weight end. type=M, avail mem=60.00 GB\n"
                    "[2025-01-10 10:02:07 TP0] Memory pool end. avail mem=10.00 GB\n"
                    "[2025-01-10 10:02:07 TP0] max_total_num_tokens=1000\n"
                    "[2025-01-10 10:02:08] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
                    "[2025-01-10 10:02:09] The server is fired up and ready to roll!\n")
    assert History(_runs(slow)).stall_threshold("load_weights") == (
        120.0, "the longest silence in load_weights over 1 history run of this config is 2 min 00 s")


def test_only_runs_of_the_same_config_are_history(tmp_path: Path) -> None:
    other = tmp_path / "tp4.log"
    other.write_text(NEW_READY.read_text().replace("'tp_size': 2", "'tp_size': 4"))
    runs = _runs(NEW_READY, other, OLD_READY)
    live = next(r for r in runs if r.source == str(NEW_READY))
    history, sentence = select_history(runs, live.config, live.engine)
    assert history.n == 1
    assert sentence.startswith("1 of 3 history runs have this config")
    history, sentence = select_history(_runs(other), live.config, live.engine)
    assert history.n == 0
    assert "none of the 1 history runs" in sentence and "tp_size=2" in sentence


def test_a_stored_history_of_cold_and_warm_starts_gives_the_cold_starts_budget(tmp_path: Path) -> None:
    """A config's cold and warm starts are never pooled (as `budget` gives it): the store keeps
    each run's cache verdicts, so wait's budget from the store is the one from the logs (pooled,
    the store's said 3 min 00 s where the logs' say 5 min 10 s)."""
    from conftest import SAMPLE_LOGS
    from firedup.live.history import store_runs
    from firedup.tables.store import open_store

    logs = [str(SAMPLE_LOGS / "sglang-cold-start.log"), str(SAMPLE_LOGS / "sglang-warm-start.log")]
    open_store(tmp_path / "store").ingest(logs)
    from_logs = _runs(*map(Path, logs))
    from_store = store_runs(str(tmp_path / "store"))
    live = from_logs[0]
    a, _ = select_history(from_store, live.config, live.engine)
    b, _ = select_history(from_logs, live.config, live.engine)
    assert a.n == b.n == 2
    found = b.budget()
    assert found is not None and found.n == 1  # the cold start's
    assert a.budget() == found


def test_the_history_store_gives_the_same_history_as_the_logs(tmp_path: Path) -> None:
    """Runs rebuilt from the store's tables (`firedup ingest`) must tell what the parsed logs tell."""
    from firedup.live.history import load_history, store_runs
    from firedup.tables.store import open_store

    report = open_store(tmp_path / "store").ingest([str(NEW_READY), str(OLD_READY), str(CRASH_OOM)])
    assert report.runs_added == 3
    from_store = store_runs(str(tmp_path / "store"))
    from_logs = _runs(NEW_READY, OLD_READY, CRASH_OOM)
    for live in from_logs[:2]:
        a, sentence_a = select_history(from_store, live.config, live.engine)
        b, sentence_b = select_history(from_logs, live.config, live.engine)
        assert a.n == b.n == 1 and sentence_a == sentence_b
        assert a.budget() == b.budget()
        for stage in ("launch", "load_weights", "cuda_graph", "warmup"):
            assert a.typical_stage(stage) == b.typical_stage(stage)
            assert a.stall_threshold(stage) == b.stall_threshold(stage)
            assert a.remaining(stage, 1.0, 30.0) == b.remaining(stage, 1.0, 30.0)
    runs, notes = load_history([], str(tmp_path / "nothing-here"))
    assert runs == [] and "not a firedup history store" in notes[0]

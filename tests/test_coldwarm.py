"""Cold and warm starts of one configuration, never pooled (tables.coldwarm), on the real H200
EAGLE-3 start-ups (cold and warm) and on hand-made twins."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import firedup
from conftest import SHARED, run_cli
from firedup.tables.coldwarm import TWIN_RATIO, split
from logmaker import Spec, write

REALGPU = SHARED / "realgpu"
EAGLE3 = [REALGPU / "sglang_eagle3.log", REALGPU / "sglang_eagle3-warm.log"]
needs_realgpu = pytest.mark.skipif(not all(p.is_file() for p in EAGLE3), reason="../shared/realgpu is absent")


@needs_realgpu
def test_budget_names_the_cold_eagle3_start_and_gives_cold_and_warm_figures_under_10_min(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 27: the cold and warm production EAGLE-3 runs (2 min 05 s and 53 s by the log) gave
    `budget 24 h 00 min`; compare pooled them into one median of 1 min 29 s."""
    report = firedup.budgets(firedup.load([str(p) for p in EAGLE3]))
    [b] = report.budgets
    [apart] = report.splits
    assert apart is not None
    cold_split, cold, warm = apart
    runs = report.grouping.runs.runs
    name = dict(zip(runs["run_id"].to_list(), runs["source"].to_list(), strict=True))
    assert [Path(name[r]).name for r in cold_split.cold] == ["sglang_eagle3.log"]
    assert [Path(name[r]).name for r in cold_split.warm] == ["sglang_eagle3-warm.log"]
    assert "cuda_graph" in cold_split.reasons[cold_split.cold[0]]
    assert b is cold.budget and b.budget_seconds is not None and warm.budget.budget_seconds is not None
    assert b.budget_seconds < 600 and warm.budget.budget_seconds < 600
    assert b.budget_seconds > warm.budget.budget_seconds
    code, out, _ = run_cli(["budget", *map(str, EAGLE3)], monkeypatch, capsys)
    first = out.splitlines()[0]
    assert code == 0 and "from launch for a cold start; warm start" in first and "24 h" not in out
    assert "cold: " in out and "sglang_eagle3.log" in out
    code, out, _ = run_cli(["compare", *map(str, EAGLE3)], monkeypatch, capsys)
    assert code == 0
    assert out.splitlines()[0].startswith("all runs: cold starts ready in 2 min 05 s (1), warm starts in 53 s (1)")
    code, out, _ = run_cli(["compare", "--json", *map(str, EAGLE3)], monkeypatch, capsys)
    [figures] = json.loads(out)["cold_warm"].values()
    assert (figures["cold_median_seconds"], figures["warm_median_seconds"]) == (125.0, 53.0)


def _twins(folder: Path, graphs: tuple[int, ...]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, graph in enumerate(graphs):
        paths.append(folder / f"run-{i}.log")
        write(paths[-1], Spec(datetime(2026, 12, 1) + timedelta(hours=i), tp=1, cuda_graph=graph, load_weights=10,
                              draft_graph=5))
    return paths


def test_a_phase_many_times_its_twins_is_a_cold_start_and_close_phases_are_not(tmp_path: Path) -> None:
    paths = _twins(tmp_path, (12, 11, 75, 13))
    runs = firedup.load([str(p) for p in paths])
    ids = runs.runs["run_id"].to_list()
    apart = split(runs, ids)
    assert apart is not None and len(apart.cold) == 1 and len(apart.warm) == 3
    [cold] = apart.cold
    assert Path(apart.sources[cold]).name == "run-2.log"
    assert "cuda_graph took 1 min 15 s" in apart.reasons[cold] and "run-1.log" in apart.reasons[cold]
    # within the ratio (or under 20 s more), no split: one configuration's usual spread
    close = firedup.load([str(p) for p in _twins(tmp_path / "close", (12, 30, 14))])
    assert TWIN_RATIO * 12 > 30 and split(close, close.runs["run_id"].to_list()) is None


def test_a_changed_compile_cache_key_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM stores compiled graphs under torch_compile_cache/<hash>: two starts of one config under
    two keys cannot share them (vllm#47573)."""
    from conftest import SAMPLE_LOGS

    logs = []
    for i, key in enumerate(("d3eb35d1f0", "0123456789")):
        text = (SAMPLE_LOGS / "vllm-warm-start.log").read_text().replace("dca4213087", key)
        logs.append(tmp_path / f"w{i}.log")
        logs[-1].write_text(text)
    shutil.copy(SAMPLE_LOGS / "vllm-warm-start.log", tmp_path / "w2.log")
    runs = firedup.parse([str(logs[0])]).runs
    assert runs[0].cache_keys == {"torch_compile": "d3eb35d1f0"}
    code, out, _ = run_cli(["compare", *map(str, logs), str(tmp_path / "w2.log")], monkeypatch, capsys)
    out = " ".join(out.split())  # the note is wrapped to the width
    assert code == 0 and "the torch_compile cache key changed between runs of this configuration" in out
    assert "d3eb35d1f0" in out and "dca4213087" in out



def _three_views(paths: list[Path], monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> dict[str, set[str]]:
    """The logs each view calls cold by a twin: `timeline`'s kernel JIT verdict and `parse --json`'s,
    the `cache_start` column (`runs`, `compare --by cache_start`), `compare`'s cold/warm split and
    `advice`'s warm-twin item."""
    from firedup.tables.advice import run_items
    from firedup.timeline.advice import WARM_TWIN

    runs = firedup.load([str(p) for p in paths])
    name = dict(zip(runs.runs["run_id"].to_list(), (Path(s).name for s in runs.runs["source"].to_list()), strict=True))
    apart = split(runs, list(name))
    code, text, _ = run_cli(["timeline", *map(str, paths)], monkeypatch, capsys)
    assert code == 0
    blocks = {Path(b.splitlines()[1].split()[0]).name: " ".join(b.split()) for b in text.split("\n\nREADY ")}
    code, parsed, _ = run_cli(["parse", "--json", *map(str, paths)], monkeypatch, capsys)
    assert code == 0
    return {
        "timeline": {n for n, b in blocks.items() if "kernel_jit cold: cuda_graph took" in b},
        "parse --json": {Path(r["source"]).name for r in json.loads(parsed)["runs"]
                         if r["caches"]["kernel_jit"]["verdict"] == "cold"},
        "cache_start": {name[r] for r, c in zip(runs.runs["run_id"], runs.runs["cache_start"], strict=True)
                        if c == "cold"},
        "compare's cold/warm split": set() if apart is None else {name[r] for r in apart.cold},
        "advice": {name[rid] for rid, items in run_items(runs).items()
                   if any(i.basis == WARM_TWIN and i.phase == "cuda_graph" for i in items)},
    }


def test_one_twin_rule_in_timeline_compare_and_advice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38: "cold, a same-config twin did it several times faster" was three rules. A 36 s graph
    capture beside an 11 s twin (3.3 x, 25 s more) was cold by `compare`'s and advice's (20 s more)
    and not by the timeline's (30 s more): `timeline` called its kernel cache unknown while
    `compare` split it off as a cold start. Now one rule (`timeline.twins`) for every view."""
    paths = _twins(tmp_path, (11, 36))
    views = _three_views(paths, monkeypatch, capsys)
    assert len(views) == 5 and all(v == {"run-1.log"} for v in views.values()), views
    from firedup.timeline import twins

    # one rule: moved in its one place, every view moves with it
    monkeypatch.setattr(twins, "TWIN_SECONDS", 26.0)
    views = _three_views(paths, monkeypatch, capsys)
    assert not any(views.values()), views

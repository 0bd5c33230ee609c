"""How much the tables, the store and the exports add on top of parsing, for many runs.

    python benchmarks/bench_tables.py [N_LOGS]

Writes N hand-rolled TP8 logs (tests/logmaker.py), then times, in the same run:
parse_paths (the reference), load (parse + frames), compare, budget, ingest into a fresh
store, load from the store, and the Chrome trace. Prints seconds and the ratio to the
reference; trust the ratios, not the seconds, on a shared machine.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from firedup.tables.budget import budgets  # noqa: E402
from firedup.tables.compare import compare  # noqa: E402
from firedup.tables.export import chrome_trace  # noqa: E402
from firedup.tables.load import load  # noqa: E402
from firedup.tables.store import Store  # noqa: E402
from firedup.timeline.pipeline import parse_paths  # noqa: E402
from logmaker import Spec, write  # noqa: E402


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        base = datetime(2026, 5, 1, 8)
        for i in range(n):
            write(logs / f"run-{i:04d}.log", Spec(base + timedelta(hours=i), disable_cuda_graph=i % 2 == 0,
                                                  load_weights=100 + i % 37, cuda_graph=500 + i % 53))
        size = sum(p.stat().st_size for p in logs.iterdir())
        ref, _ = timed(lambda: parse_paths([str(logs)]))
        rows = [("parse_paths (reference)", ref)]
        t, runs = timed(lambda: load([str(logs)]))
        rows.append(("load (parse + frames)", t))
        rows.append(("compare --by disable_cuda_graph", timed(lambda: compare(runs, ["disable_cuda_graph"]))[0]))
        rows.append(("budget --by disable_cuda_graph", timed(lambda: budgets(runs, ["disable_cuda_graph"]))[0]))
        rows.append(("chrome trace", timed(lambda: chrome_trace(runs))[0]))
        store = Store(Path(tmp) / "store")
        rows.append(("ingest into a new store", timed(lambda: store.ingest([str(logs)]))[0]))
        t, back = timed(lambda: load(store))
        rows.append(("load from the store", t))
        assert back.runs.height == runs.runs.height
    print(f"{n} logs, {size / 1e6:.1f} MB, {runs.runs.height} runs, {runs.phases.height} phase rows, "
          f"{runs.milestones.height} milestone rows")
    for name, secs in rows:
        print(f"  {name:<34} {secs:8.3f} s   x{secs / ref:6.2f}")


if __name__ == "__main__":
    main()

"""The cost of a run's flags: `firedup runs --format csv` over two runs that state N flags each.

    python benchmarks/bench_flags.py                              # 2,500 to 20,000 flags
    python benchmarks/bench_flags.py --counts 1000,2000 --runs 1  # a smoke run
    python benchmarks/bench_flags.py --baseline ../old/src        # the code before a change, same rounds

A vLLM args line can state any number of keys, and every key is a column of the runs table
(`flag.KEY`). The time a flag costs must stay flat as their number grows (linear), not grow
with it (quadratic: before issue 33, 10,000 flags took 11 s and 20,000 took 40 s). Prints, per
count, the median seconds of the command (a fresh process each time: start-up included) and
the microseconds per flag above the same command over two runs with no extra flag.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "vllm-warm-start.log"
ARGS = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"


def write_runs(folder: Path, count: int) -> None:
    """Two runs of the vLLM sample, each stating `count` extra flags (values that differ)."""
    text = SAMPLE.read_text(encoding="utf-8")
    assert ARGS in text, "the sample's args line changed"
    folder.mkdir(parents=True, exist_ok=True)
    for run in range(2):
        extra = "".join(f", 'knob_{i}': {i * (run + 1)}" for i in range(count))
        (folder / f"run{run}.log").write_text(text.replace(ARGS, ARGS[:-1] + extra + "}"), encoding="utf-8")


def timed(folder: Path, src: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "firedup", "runs", "--format", "csv", str(folder)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"firedup from {src} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="2500,5000,10000,20000", help="flags per run, comma-separated")
    ap.add_argument("--runs", type=int, default=3, help="rounds per count (the median is printed)")
    ap.add_argument("--baseline", type=Path, help="another checkout's src/, timed in the same rounds")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    sources = [("this", ROOT / "src")] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    with tempfile.TemporaryDirectory(prefix="firedup-flags-") as tmp:
        base = Path(tmp) / "0"
        write_runs(base, 0)
        for _, src in sources:  # bytecode and page cache warm: no first run pays for them
            timed(base, src)
        zero = {name: statistics.median(timed(base, src) for _ in range(args.runs)) for name, src in sources}
        print(f"{'flags':>7}" + "".join(f"{name + ' s':>14}{'µs/flag':>10}" for name, _ in sources))
        print(f"{0:>7}" + "".join(f"{zero[name]:>14.2f}{'':>10}" for name, _ in sources))
        for count in counts:
            folder = Path(tmp) / str(count)
            write_runs(folder, count)
            row = f"{count:>7}"
            for name, src in sources:
                seconds = statistics.median(timed(folder, src) for _ in range(args.runs))
                row += f"{seconds:>14.2f}{(seconds - zero[name]) / count * 1e6:>10.0f}"
            print(row, flush=True)


if __name__ == "__main__":
    main()

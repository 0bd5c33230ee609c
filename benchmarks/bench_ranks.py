"""Rank charts at scale: `plot timeline --ranks` and `plot ranks` on 2k, 10k and 100k ranks.

Writes one SGLang start-up whose ranks load weights in 4-11 s (so they do not agree within a
second), parses it once, then times each chart from the parsed runs, and prints seconds per
chart and per 1,000 ranks: linear when that last column stays flat. It also prints the ranks
chart's title, which must be true of all the ranks, not only of the rows drawn.

    python benchmarks/bench_ranks.py [--ranks 2000,10000,100000] [--seed 45]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' log maker
from logmaker import write_many_ranks  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2000,10000,100000")
    parser.add_argument("--seed", type=int, default=45)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import firedup
    from firedup.render import charts
    from firedup.render.charts import ranks_data, timeline_data

    print(f"{'ranks':>8} {'parse s':>8} {'timeline_data s':>16} {'timeline png s':>15} {'ranks_data s':>13} "
          f"{'ranks png s':>12} {'png s/1k ranks':>15}")
    titles = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.ranks.split(",")):
            log = Path(tmp) / f"ranks{n}.log"
            write_many_ranks(log, n, args.seed)
            t = time.perf_counter()
            runs = firedup.load([log])
            parse_s = time.perf_counter() - t
            t = time.perf_counter()
            timeline_data(runs, ranks=True)
            tdata_s = time.perf_counter() - t
            t = time.perf_counter()
            firedup.plot("timeline", runs, Path(tmp) / "t.png", ranks=True)
            tpng_s = time.perf_counter() - t
            t = time.perf_counter()
            data = ranks_data(runs)
            rdata_s = time.perf_counter() - t
            t = time.perf_counter()
            firedup.plot("ranks", runs, Path(tmp) / "r.png")
            rpng_s = time.perf_counter() - t
            title = charts.ranks(runs, data.run_id).axes[0].get_title(loc="left")  # as drawn, any version
            titles.append(f"{n:>8,}: {' '.join(title.split())}")
            print(f"{n:>8,} {parse_s:>8.2f} {tdata_s:>16.2f} {tpng_s:>15.2f} {rdata_s:>13.2f} {rpng_s:>12.2f} "
                  f"{1000 * (tpng_s + rpng_s) / n:>15.3f}", flush=True)
    print("\nthe ranks chart's title, per size:")
    print("\n".join(titles))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Files per second of `firedup ingest` on 1 and 2 workers, from local files and from S3,
into a store in a folder and in a bucket.

    python benchmarks/fleet.py [--files N] [--runs R] [--stores local,s3] [--json FILE]

Writes N hand-rolled start-up logs (tests/logmaker.py, ~40 kB each), uploads them to an
S3-compatible server that this script starts on loopback (moto's server mode) and stops, then
ingests them into a fresh store for each case:

    input   local folder | s3://bucket/prefix/
    store   local folder | s3://bucket/prefix/ (the lock-free bucket store: an object per log,
            the runs object written last with a conditional write)
    engine  ray (`ingest --ray`, a local Ray cluster of that many CPUs, started before the
            clock starts: its start-up is printed apart) | pool (this machine's process pool,
            the reference, same worker count)
    workers 1 | 2

and prints files per second (the best of R runs). Needs `pip install -e '.[fleet,fleet-test]'`.
On a shared 2-core machine the seconds are noisy: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

BUCKET = "fleet-bench"


def write_logs(folder: Path, n: int) -> int:
    from logmaker import Spec, write

    folder.mkdir(parents=True, exist_ok=True)
    base = datetime(2026, 5, 1, 8)
    for i in range(n):
        write(folder / f"run-{i:04d}.log",
              Spec(base + timedelta(hours=5 * i), disable_cuda_graph=i % 2 == 0, load_weights=100 + i % 37,
                   cuda_graph=500 + i % 53, crash_in="cuda_graph" if i % 10 == 3 else None))
    return sum(p.stat().st_size for p in folder.iterdir())


def start_s3() -> Any:
    """moto's server on 127.0.0.1 with the standard AWS variables pointing at it."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://{host}:{port}")
    return server


def upload(folder: Path) -> str:
    import boto3

    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    for path in sorted(folder.iterdir()):
        client.put_object(Bucket=BUCKET, Key=f"logs/{path.name}", Body=path.read_bytes())
    return f"s3://{BUCKET}/logs/"


def one_case(inputs: str, engine: str, workers: int, runs: int, scratch: Path, store_in: str = "local") -> dict[str, Any]:
    from firedup import api
    from firedup.tables.fleet import LOCAL

    best = None
    report = None
    for r in range(runs):
        name = f"store-{engine}-{workers}-{r}-{time.monotonic_ns()}"  # a fresh store for every run
        store: str | Path = f"s3://{BUCKET}/{name}" if store_in == "s3" else scratch / name
        start = time.perf_counter()
        report = api.ingest([inputs], store=store, ray=LOCAL if engine == "ray" else None, workers=workers)
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    assert report is not None and best is not None
    files = len(report.added) + len(report.present) + len(report.empty) + len(report.errors)
    if report.errors:
        print(f"  ({len(report.errors)} files failed: {report.errors[0]})", file=sys.stderr)
    return {"files": files, "runs_added": report.runs_added, "seconds": round(best, 3),
            "files_per_s": round(files / best, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--stores", default="local,s3",
                        help="where the store is: local (a folder), s3 (a bucket on the same server)")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not stores or set(stores) - {"local", "s3"}:
        parser.error(f"--stores takes local, s3 or both, not {args.stores!r}")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # a local cluster on loopback
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    from firedup.tables.fleet import LOCAL, _connect

    figures: dict[str, Any] = {"files": args.files, "cases": []}
    server = start_s3()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            scratch = Path(tmp)
            size = write_logs(scratch / "logs", args.files)
            figures["bytes"] = size
            url = upload(scratch / "logs")
            print(f"{args.files} logs, {size / 1e6:.1f} MB; S3 on {os.environ['AWS_ENDPOINT_URL']}")
            print(f"{'input':<6} {'store':<6} {'engine':<5} {'workers':>7} {'files':>6} {'seconds':>8} {'files/s':>8}")
            for workers in (1, 2):
                for engine in ("ray", "pool"):
                    if engine == "ray":
                        start = time.perf_counter()
                        _connect(LOCAL, workers)  # started before the clock, kept for both inputs
                        figures[f"ray_start_s_{workers}"] = round(time.perf_counter() - start, 2)
                    try:
                        for store_in in stores:
                            for name, inputs in (("local", str(scratch / "logs")), ("s3", url)):
                                case = {"input": name, "store": store_in, "engine": engine, "workers": workers,
                                        **one_case(inputs, engine, workers, args.runs, scratch, store_in)}
                                figures["cases"].append(case)
                                print(f"{name:<6} {store_in:<6} {engine:<5} {workers:>7} {case['files']:>6} "
                                      f"{case['seconds']:>8.2f} {case['files_per_s']:>8.1f}", flush=True)
                    finally:
                        if engine == "ray":
                            ray.shutdown()  # the pool forks: no Ray driver threads in its parent
            print("(a local Ray cluster took " + ", ".join(
                f"{figures[f'ray_start_s_{w}']:.1f} s with {w} CPU{'s' if w > 1 else ''}" for w in (1, 2))
                  + " to start, not counted above)")
    finally:
        server.stop()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

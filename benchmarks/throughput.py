"""firedup parse against ripgrep, on the inputs real users have; plus start-up latency.

    python benchmarks/throughput.py                       # the issue's sizes: 1 GiB, 2,000 x 200 kB
    python benchmarks/throughput.py --size 20MB --files 50 --runs 1   # a smoke run (CI)
    python benchmarks/throughput.py --quick --baseline ../main/src     # the guard: about a minute

Three figures, each against a reference measured in the same run, runs alternating:
1. one long log (4 startups + runtime traffic): `firedup parse --json > /dev/null` over
   `rg -c <milestone alternation>`, and firedup's peak RSS;
2. a folder of startup logs: the same two commands over the folder, and where a file's time
   goes (CPU per stage: first line, head and sniff, events, timeline, JSON);
3. `firedup --help` and `firedup parse small.log`, in ms above a bare `python -c pass`;
4. (`--parts scale`) the folder at 200, 2,000 and 20,000 files: the cost a file stays flat.

Inputs come from the project's generator (`firedup.synth.bulk`) and are cached outside the
repo (default ~/.cache/firedup-bench) by size and seed. Timings on a shared machine are
noisy: trust the ratios (medians of runs that alternate with the reference), not the seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))

from firedup.synth.bulk import write_long_log, write_many  # noqa: E402

# The milestone lines a grep pipeline would look for (CONTRACT.md's SGLang milestones).
MILESTONES = ("server_args=", "Init torch distributed begin", "Load weight begin", "Load weight end",
              "KV Cache is allocated", "Memory pool end", "Capture cuda graph begin", "Capture cuda graph end",
              "max_total_num_tokens=", "Uvicorn running on", "fired up and ready to roll")
ALTERNATION = "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", m) for m in MILESTONES)
GOALS = {"long": 2.0, "many": 20.0, "startup_ms": 150.0, "rss_mb": 300.0}
# --quick: a few hundred MB of long log and a few hundred files, about a minute with --baseline
QUICK: dict[str, Any] = {"size": "300MB", "files": 300, "runs": 5, "parts": "long,many"}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]i?B?|B?)", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 20MB or 1GiB")
    unit = m[2].upper().rstrip("B")
    scale = {"": 1, "K": 1000, "KI": 1024, "M": 1000**2, "MI": 1024**2, "G": 1000**3, "GI": 1024**3}[unit]
    return int(float(m[1]) * scale)


# --baseline: another checkout's src/ (the code before a change), timed in the same run
BASELINE: list[Path] = []


def _env(src: Path = SRC) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users run from cached bytecode
    return env


def run(cmd: list[str], src: Path = SRC) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds (user and system, its reaped children's
    included: a long log's scanning processes) of one child process, its output thrown away.

    firedup scans a big file with worker processes, so the peak is of the whole process
    tree: the sum of the resident sets, sampled every 10 ms from /proc (Linux), or the
    largest single process's (`wait4`) where /proc is missing."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(src))
    tree_peak = [0]
    sampler = threading.Thread(target=_sample_tree_rss, args=(proc.pid, tree_peak), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if code not in (0, 1):  # rg -c exits 1 when nothing matches
        raise SystemExit(f"{' '.join(cmd[:4])}... exited {code}: {err.strip()[-500:]}")
    return elapsed, max(usage.ru_maxrss, tree_peak[0]) / 1024, usage.ru_utime + usage.ru_stime


def _sample_tree_rss(pid: int, peak: list[int]) -> None:
    """Until `pid` exits: the largest sum of VmRSS (kB) over it and its descendants."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    while True:
        pids, total = [pid], 0
        while pids:
            current = pids.pop()
            try:
                status = (proc / str(current) / "status").read_text()
                pids += [int(c) for c in (proc / str(current) / "task" / str(current) / "children").read_text().split()]
            except (OSError, ValueError):
                if current == pid:
                    return  # gone (or a zombie being reaped)
                continue
            if current == pid and "State:\tZ" in status:
                return
            total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        peak[0] = max(peak[0], total)
        time.sleep(0.01)


def compare(label: str, ours: list[str], reference: list[str] | None, runs: int,
            baselines: list[Path] | None = None) -> dict[str, Any]:
    """Alternate the commands `runs` times; medians and the median of per-run ratios. With
    --baseline, the same command from the baseline's sources runs in the same rounds
    (`baselines`: other sources than --baseline's, [] for none)."""
    baselines = BASELINE if baselines is None else baselines
    ours_t: list[float] = []
    ref_t: list[float] = []
    base_t: list[float] = []
    rss: list[float] = []
    cpu: dict[str, list[float]] = {"firedup": [], "rg": [], "before": []}
    run(ours)  # warm the page cache and the bytecode cache
    if reference:
        run(reference)
    for src in baselines:
        run(ours, src)
    for _ in range(runs):
        if reference:
            t, _peak, used = run(reference)
            ref_t.append(t)
            cpu["rg"].append(used)
        t, peak, used = run(ours)
        ours_t.append(t)
        rss.append(peak)
        cpu["firedup"].append(used)
        for src in baselines:
            t, _peak, used = run(ours, src)
            base_t.append(t)
            cpu["before"].append(used)
    out: dict[str, Any] = {"label": label, "firedup_s": statistics.median(ours_t), "peak_rss_mb": max(rss)}
    out.update({f"{who}_cpu_s": statistics.median(spent) for who, spent in cpu.items() if spent})
    if reference:
        out["rg_s"] = statistics.median(ref_t)
        out["ratio"] = statistics.median(o / r for o, r in zip(ours_t, ref_t, strict=True))
    if base_t:
        out["before_s"] = statistics.median(base_t)
        out["vs_before"] = statistics.median(o / b for o, b in zip(ours_t, base_t, strict=True))
        if reference:
            out["before_ratio"] = statistics.median(b / r for b, r in zip(base_t, ref_t, strict=True))
    return out


def floor(path: Path, reference: list[str], runs: int) -> dict[str, Any]:
    """`scan_floor.py` on the same input beside `reference` (rg), alternated as `compare` does
    (no baseline: the floor is the design's, not a checkout's): the least a design in Python
    that scans the rule tables with Hyperscan pays (start, load the scan, read, scan; no line
    read after), so the part of firedup's ratio to rg that is its own work is the rest."""
    row = compare("scan floor", [sys.executable, str(Path(__file__).with_name("scan_floor.py")), str(path)],
                  reference, runs, baselines=[])
    return {"floor_s": row["firedup_s"], "floor_cpu_s": row["firedup_cpu_s"], "rg_s": row["rg_s"],
            "ratio": row["ratio"]}


def machine() -> dict[str, Any]:
    """What the figures were measured on: the CPU's model, the cores this process may use
    and the machine's, its SIMD extensions, and what the Hyperscan library was built for
    (a portable build uses none of them; ripgrep does)."""
    info: dict[str, Any] = {"cpu": "unknown", "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                            else os.cpu_count(), "cpus": os.cpu_count(), "simd": []}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.MULTILINE)
    if model:
        info["cpu"] = model[1].strip()
    if flags:
        have = set(flags[1].split())
        info["simd"] = [f for f in ("sse4_2", "avx", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vbmi2")
                        if f in have]
    try:
        import hyperscan

        database = hyperscan.Database()
        database.compile(expressions=[b"x"])
        built = database.info().decode()
        info["hyperscan"] = re.sub(r"\s+", " ", built).strip()
    except Exception as exc:  # no Hyperscan: firedup runs its incremental engine
        info["hyperscan"] = f"absent ({type(exc).__name__})"
    return info


def cached(cache: Path, name: str, make: Any) -> Path:
    path = cache / name
    done = cache / (name + ".done")
    if not done.exists():
        if path.is_dir():
            shutil.rmtree(path)
        print(f"generating {path} ...", file=sys.stderr, flush=True)
        make(path)
        done.write_text("ok\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=parse_size("1GiB"), help="long log size (default 1GiB)")
    ap.add_argument("--files", type=int, default=2000, help="logs in the folder (default 2000)")
    ap.add_argument("--vllm-size", type=parse_size, default=parse_size("100MB"),
                    help="the vLLM log behind kubectl, for --parts vllm (default 100MB)")
    ap.add_argument("--file-size", type=parse_size, default=parse_size("200kB"), help="each (default 200kB)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each command (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "firedup-bench")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--baseline", type=Path, metavar="SRC",
                    help="also time another checkout's src/ (the code before a change) in the same rounds")
    ap.add_argument("--parts", default="long,many,startup",
                    help="which figures to measure, comma-separated: long, many, startup, scale, cliffs "
                         "(default long,many,startup)")
    ap.add_argument("--scale", default="200,2000,20000",
                    help="folder sizes of --parts scale (default 200,2000,20000; 20,000 files are 4 GB)")
    ap.add_argument("--quick", action="store_true",
                    help="the guard every change to read/, formats/ or timeline/ runs (about a minute): "
                         f"--size {QUICK['size']} --files {QUICK['files']} --runs {QUICK['runs']} --parts {QUICK['parts']}; "
                         "flags given with it still count")
    if "--quick" in (sys.argv[1:] if argv is None else argv):
        ap.set_defaults(size=parse_size(QUICK["size"]), files=QUICK["files"], runs=QUICK["runs"], parts=QUICK["parts"])
    args = ap.parse_args(argv)

    args.cache.mkdir(parents=True, exist_ok=True)
    if args.baseline is not None:
        if not (args.baseline / "firedup" / "__init__.py").is_file():
            ap.error(f"--baseline {args.baseline}: not a src/ folder holding firedup/")
        BASELINE[:] = [args.baseline.resolve()]
    rg = shutil.which("rg")
    if rg is None:
        print("ripgrep (rg) not found: ratios are skipped, only firedup's own times are shown "
              "(Debian: apt-get install ripgrep)", file=sys.stderr)
    firedup = [sys.executable, "-m", "firedup", "parse", "--json"]
    results: dict[str, Any] = {"python": sys.version.split()[0], "rg": rg, "alternation": ALTERNATION,
                               "machine": machine(), "quick": args.quick}
    if rg is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError, IndexError):
            results["rg_version"] = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split()[1]

    parts = set(args.parts.split(","))
    unknown = parts - {"long", "many", "startup", "scale", "cliffs", "vllm"}
    if unknown:
        ap.error(f"--parts: unknown {', '.join(sorted(unknown))} (choose from long, many, startup, scale, cliffs, vllm)")
    if "long" in parts:
        _long(args, results, firedup, rg)
    if "many" in parts:
        _many(args, results, firedup, rg)
    if "startup" in parts:
        results["startup"] = _startup(args)
    if "scale" in parts:
        results["scale"] = _scale(args, firedup, rg)
    if "cliffs" in parts:
        results["cliffs"] = _cliffs(args)
    if "vllm" in parts:
        _vllm_long(args, results, firedup, rg)
    _report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def _long(args: argparse.Namespace, results: dict[str, Any], firedup: list[str], rg: str | None) -> None:
    long_log = cached(args.cache, f"long-{args.size}-s{args.seed}.log",
                      lambda p: write_long_log(p, startups=4, target_bytes=args.size, seed=args.seed))
    results["long"] = compare("long log", [*firedup, str(long_log)], [rg, "-c", ALTERNATION, str(long_log)] if rg else None,
                              args.runs)
    results["long"]["bytes"] = long_log.stat().st_size
    if rg and not args.quick:
        results["long"]["floor"] = floor(long_log, [rg, "-c", ALTERNATION, str(long_log)], args.runs)


def write_vllm_long(path: Path, target_bytes: int, seed: int) -> None:
    """A vLLM 0.13 start-up behind `kubectl logs --timestamps` (the folder's generator), then its
    traffic up to `target_bytes`: access lines (probes, and a request in ten) every few ms by
    kubectl's clock, and the engine's throughput line every 500 lines: the layout of vLLM on
    Kubernetes, nearly all of it access lines."""
    import random
    import tempfile
    from datetime import UTC, datetime, timedelta

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        made = write_many(Path(tmp), n=8, seed=seed)
        head = next(p for p in made if p.stem.endswith("-vllm") and "-prod-" in p.stem).read_bytes()
    last = head.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode()
    moment = datetime.strptime(last[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    tag = "\x1b[1;36m(APIServer pid=1)\x1b[0;0m "
    with open(path, "wb") as out:
        out.write(head if head.endswith(b"\n") else head + b"\n")
        written, i = len(head), 0
        while written < target_bytes:
            lines = []
            for _ in range(10_000):
                moment += timedelta(microseconds=rng.randint(1, 20_000))
                stamp = moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond * 1000 + rng.randint(0, 999):09d}Z "
                if i % 500 == 499:
                    lines.append(f"{stamp}{tag}INFO {moment:%m-%d %H:%M:%S} [loggers.py:236] Engine 000: Avg prompt "
                                 "throughput: 812.4 tokens/s, Avg generation throughput: 55.0 tokens/s, Running: 2 reqs, "
                                 "Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 20.8%")
                elif rng.random() < 0.1:
                    lines.append(f'{stamp}{tag}INFO:     10.42.{rng.randint(0, 9)}.{rng.randint(1, 254)}:{rng.randint(30000, 60000)} '
                                 '- "POST /v1/chat/completions HTTP/1.1" 200 OK')
                else:
                    lines.append(f'{stamp}{tag}INFO:     10.42.0.1:{rng.randint(30000, 60000)} - "GET /health HTTP/1.1" 200 OK')
                i += 1
            block = ("\n".join(lines) + "\n").encode()
            out.write(block)
            written += len(block)


def _vllm_long(args: argparse.Namespace, results: dict[str, Any], firedup: list[str], rg: str | None) -> None:
    log = cached(args.cache, f"vllm-long-{args.vllm_size}-s{args.seed}.log",
                 lambda p: write_vllm_long(p, args.vllm_size, args.seed))
    results["vllm"] = compare("vLLM log behind kubectl", [*firedup, str(log)],
                              [rg, "-c", ALTERNATION, str(log)] if rg else None, args.runs)
    results["vllm"]["bytes"] = log.stat().st_size


def _many(args: argparse.Namespace, results: dict[str, Any], firedup: list[str], rg: str | None) -> None:
    folder = cached(args.cache, f"many-{args.files}x{args.file_size}-s{args.seed}",
                    lambda p: write_many(p, n=args.files, seed=args.seed, target_bytes=args.file_size))
    results["many"] = compare("folder", [*firedup, str(folder)], [rg, "-c", ALTERNATION, str(folder)] if rg else None,
                              args.runs)
    results["many"]["files"] = args.files
    if not args.quick:  # where a file's time goes: a profile, not a guard
        if rg:
            results["many"]["floor"] = floor(folder, [rg, "-c", ALTERNATION, str(folder)], args.runs)
        results["many"]["per_file_ms"] = _per_file(folder, args.runs)
        results["many"]["stages_ms"] = _stages(folder)


def _scale(args: argparse.Namespace, firedup: list[str], rg: str | None) -> list[dict[str, Any]]:
    """The folder at each size of --scale: seconds, ms a file and the ratio to rg. The same
    generator and seed, so the smaller folders are the first files of the bigger ones."""
    out = []
    for n in (int(x) for x in args.scale.split(",")):
        folder = cached(args.cache, f"many-{n}x{args.file_size}-s{args.seed}",
                        lambda p, n=n: write_many(p, n=n, seed=args.seed, target_bytes=args.file_size))
        row = compare(f"folder of {n}", [*firedup, str(folder)], [rg, "-c", ALTERNATION, str(folder)] if rg else None,
                      args.runs if n <= 2000 else 1)
        row["files"] = n
        row["ms_a_file"] = row["firedup_s"] / n * 1000
        out.append(row)
    return out


# The inputs that once made a cost grow faster than the input (issue 33's class 7): probes
# after ready (a cliff: millions read one by one), restarts in one file, flags of a run. Each
# is timed at n and 4n: linear is a ratio near 4 (less with the start-up), quadratic 16.
CLIFFS = (("probe lines after ready", 1_000_000), ("restarts in one file", 2_500), ("flags of each of 2 runs", 5_000))
# Part of a cached input's name: raised when a generator changes, so an input it wrote before is
# not reused (2: the probes' ready line follows a whole line of the sample log, not a cut one).
CLIFF_INPUTS = 2


def _cliffs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each of CLIFFS at n and 4n: wall and CPU seconds (median of --runs) of `parse --json`
    (`runs --format csv` for the flags, where a flag is a column), and the ratio of 4n to n."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_flags import write_runs
    from hostile_sweep_io import _probes_log, _restarts_log

    makers = {"probe lines after ready": lambda p, n: _probes_log(p, n, None, "/health"),
              "restarts in one file": lambda p, n: _restarts_log(p, n),
              "flags of each of 2 runs": lambda p, n: (write_runs(p, n), p)[1]}
    out = []
    for name, n in CLIFFS:
        row: dict[str, Any] = {"case": name, "sizes": [n, 4 * n], "wall_s": [], "cpu_s": []}
        for size in (n, 4 * n):
            path = cached(args.cache, f"cliff-{name.split()[0]}-{size}-g{CLIFF_INPUTS}", lambda p, size=size, name=name: makers[name](p, size))
            cmd = ([sys.executable, "-m", "firedup", "runs", "--format", "csv", str(path)] if name.startswith("flags")
                   else [sys.executable, "-m", "firedup", "parse", "--json", str(path)])
            run(cmd)
            timed = [run(cmd) for _ in range(max(1, min(args.runs, 3)))]
            row["wall_s"].append(statistics.median(t[0] for t in timed))
            row["cpu_s"].append(statistics.median(t[2] for t in timed))
        row["ratio"] = row["cpu_s"][1] / max(row["cpu_s"][0], 1e-3)
        out.append(row)
    return out


def _stages(folder: Path, most: int = 100) -> dict[str, dict[str, float]]:
    """Where a file's CPU goes, per kind of log, in this process (no pool): the stages of
    `pipeline.parse_source`, called one by one as it calls them (the profile behind the
    folder's figure). A file the batch engine hands back is timed whole as `incremental`."""
    import io

    from firedup.core import config
    from firedup.read import batch
    from firedup.read.sources import Source, read_lines
    from firedup.timeline import pipeline
    from firedup.timeline.build import build_timeline

    logs = sorted(folder.glob("*.log"))
    kinds = {"SGLang": [p for p in logs if not p.stem.endswith("-vllm")][:most],
             "vLLM behind kubectl": [p for p in logs if p.stem.endswith("-vllm")][:most]}
    out: dict[str, dict[str, float]] = {}
    for kind, paths in kinds.items():
        if not paths:
            continue
        pipeline.parse_paths([str(p) for p in paths[:3]], jobs=1)  # compile and cache the scans first
        spent = dict.fromkeys(("first line", "head", "sniff", "events", "timeline", "json", "incremental"), 0.0)
        for path in paths:
            config._parse_args_repr.cache_clear()  # each file's args dump read, as in a fresh process
            source = Source(str(path), path)
            clock = time.process_time
            t0 = clock()
            next(iter(read_lines(source)), None)
            t1 = clock()
            spent["first line"] += t1 - t0
            try:
                literals: set[str] = set()  # the head's sniff literals, handed to the sniff as parse does
                sample, normalised = batch.read_head(path, pipeline.SNIFF_LINES, refuse_mostly_flagged=True,
                                                     until_settled=True, literals=literals)
                t2 = clock()
                fmt = batch.sniff_format(sample, literals)
                t3 = clock()
                if fmt is None:
                    raise batch.NeedExact("no engine")
                events, stats, scanned = pipeline._events_batch(source, fmt, pipeline.DatePolicy.of(source), normalised,
                                                                sample)
            except batch.NeedExact:
                t2 = clock()
                result = pipeline.ParseResult()
                result.runs.extend(pipeline.parse_source(source, scanner="incremental")[0])
                pipeline.write_contract_json(result, io.StringIO())
                spent["incremental"] += clock() - t1
                continue
            t4 = clock()
            runs = build_timeline(events, source.name, fmt, scanned.date_source, stats=stats)
            t5 = clock()
            result = pipeline.ParseResult()
            result.runs.extend(runs)
            pipeline.write_contract_json(result, io.StringIO())
            t6 = clock()
            for stage, took in (("head", t2 - t1), ("sniff", t3 - t2), ("events", t4 - t3), ("timeline", t5 - t4),
                                ("json", t6 - t5)):
                spent[stage] += took
        out[kind] = {stage: took / len(paths) * 1000 for stage, took in spent.items()}
    return out


def _per_file(folder: Path, runs: int, most: int = 150) -> dict[str, dict[str, float]]:
    """CPU per file of each kind of log in the folder, in this process (parse and JSON, no
    pool): where the folder's time goes. The generator names vLLM logs `*-vllm.log`; they
    are written behind `kubectl logs --timestamps`, so every line carries a prefix."""
    import io

    from firedup.core import config
    from firedup.timeline.pipeline import parse_paths, write_contract_json

    logs = sorted(folder.glob("*.log"))
    kinds = {"SGLang": [p for p in logs if not p.stem.endswith("-vllm")],
             "vLLM behind kubectl": [p for p in logs if p.stem.endswith("-vllm")]}
    out: dict[str, dict[str, float]] = {}
    for kind, paths in kinds.items():
        chosen = [str(p) for p in paths[:most]]
        if not chosen:
            continue
        parse_paths(chosen[:3], jobs=1)  # compile and cache the scans first
        cpu: list[float] = []
        for _ in range(max(1, runs)):
            config._parse_args_repr.cache_clear()  # no file's args dump from the previous run
            start = time.process_time()
            write_contract_json(parse_paths(chosen, jobs=1), io.StringIO())
            cpu.append((time.process_time() - start) / len(chosen) * 1000)
        out[kind] = {"ms": statistics.median(cpu), "files": len(chosen), "share_of_folder": len(paths) / len(logs)}
    return out


def _startup(args: argparse.Namespace) -> dict[str, float | dict[str, float]]:
    # one startup, as the generator writes it, without traffic after ready
    small_dir = cached(args.cache, f"startup-s{args.seed}", lambda p: write_many(p, n=1, seed=args.seed, target_bytes=0))
    small = next(small_dir.glob("*.log"))
    bare = [sys.executable, "-c", "pass"]
    startup: dict[str, Any] = {"small_log_bytes": small.stat().st_size}
    base: list[float] = []
    for name, cmd in (("--help", [sys.executable, "-m", "firedup", "--help"]),
                      ("parse small.log", [sys.executable, "-m", "firedup", "parse", str(small)])):
        times, base, before = [], [], []
        run(cmd)
        for src in BASELINE:
            run(cmd, src)
        for _ in range(max(5, args.runs)):
            base.append(run(bare)[0])
            times.append(run(cmd)[0])
            for src in BASELINE:
                before.append(run(cmd, src)[0])
        startup[name] = {"ms": statistics.median(times) * 1000,
                         "above_python_ms": statistics.median(t - b for t, b in zip(times, base, strict=True)) * 1000}
        if before:
            startup[name]["before_above_python_ms"] = statistics.median(
                t - b for t, b in zip(before, base, strict=True)) * 1000
    startup["python -c pass ms"] = statistics.median(base) * 1000
    return startup


def _before(row: dict[str, Any]) -> str:
    """The baseline's figure on the same line, when --baseline was timed: its wall time, its
    ratio to rg, and this code's time over the baseline's (the median of the runs' ratios)."""
    if "before_s" not in row:
        return ""
    ratio = row.get("before_ratio")
    return (f"   before: {row['before_s']:.2f}s" + (f" ({ratio:.1f}x)" if ratio is not None else "")
            + f", now/before {row['vs_before']:.2f}")


def _report_cpu(name: str, row: dict[str, Any]) -> None:
    """CPU seconds (user and system, all processes) of the same runs, medians."""
    if "firedup_cpu_s" not in row:
        return
    parts = [f"firedup {row['firedup_cpu_s']:.2f}s"]
    if "rg_cpu_s" in row:
        parts.append(f"rg {row['rg_cpu_s']:.2f}s ({row['firedup_cpu_s'] / max(row['rg_cpu_s'], 1e-3):.1f}x)")
    if "before_cpu_s" in row:
        parts.append(f"before {row['before_cpu_s']:.2f}s")
    print(f"   CPU, {name.split('. ', 1)[-1]}: " + ", ".join(parts))


def _verdict(value: float | None, goal: float) -> str:
    if value is None:
        return "n/a"
    return "met" if value <= goal else "MISSED"


def _report(r: dict[str, Any]) -> None:
    m = r["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores usable of {m['cpus']}, SIMD: {' '.join(m['simd']) or 'none found'}; "
          f"hyperscan: {m['hyperscan']}")
    print(f"python {r['python']}; rg: {r['rg'] or 'absent'} {r.get('rg_version', '')}".rstrip())
    print(f"{'figure':<46}{'firedup':>10}{'rg':>9}{'ratio':>8}{'goal':>8}  verdict")
    rows = []
    if "long" in r:
        rows.append((f"1. long log {r['long']['bytes'] / 2**20:,.0f} MiB, 4 startups", r["long"], GOALS["long"]))
    if "many" in r:
        rows.append((f"2. folder of {r['many']['files']} logs", r["many"], GOALS["many"]))
    if "vllm" in r:  # no goal of its own: the long log's
        rows.append((f"6. vLLM behind kubectl {r['vllm']['bytes'] / 2**20:,.0f} MiB", r["vllm"], GOALS["long"]))
    for name, row, goal in rows:
        ratio = row.get("ratio")
        print(f"{name:<46}{row['firedup_s']:>9.2f}s{row.get('rg_s', float('nan')):>8.2f}s"
              f"{ratio if ratio is not None else float('nan'):>7.1f}x{goal:>7.1f}x  {_verdict(ratio, goal)}"
              + _before(row))
    for name, row, _goal in rows:
        _report_cpu(name, row)
    for _name, row, _goal in rows:
        if "floor" in row:
            f = row["floor"]
            label = f"   floor, {row['label']}: scan only"
            print(f"{label:<46}{f['floor_s']:>9.2f}s{f['rg_s']:>8.2f}s{f['ratio']:>7.1f}x"
                  f"   (CPU {f['floor_cpu_s']:.2f}s; firedup is {row['firedup_s'] / f['floor_s']:.2f}x it)")
    if "long" in r:
        rss = r["long"]["peak_rss_mb"]
        print(f"{'   peak RSS, long log (all processes)':<46}{rss:>8.0f}MB{'':>17}{GOALS['rss_mb']:>6.0f}MB  {_verdict(rss, GOALS['rss_mb'])}")
    if "many" in r:
        print(f"{'   peak RSS, folder (all processes)':<46}{r['many']['peak_rss_mb']:>8.0f}MB")
        for kind, row in r["many"].get("per_file_ms", {}).items():
            label = f"   CPU a file: {kind}, {row['share_of_folder']:.0%} of them"
            print(f"{label:<46}{row['ms']:>8.1f}ms")
        for kind, stages in r["many"].get("stages_ms", {}).items():
            shown = ", ".join(f"{stage} {ms:.2f}" for stage, ms in stages.items() if ms >= 0.005)
            print(f"   where it goes, {kind} (ms a file): {shown}")
    if "startup" in r:
        _report_startup(r["startup"])
    for row in r.get("cliffs", []):
        (n, n4), (w, w4), (c, c4) = row["sizes"], row["wall_s"], row["cpu_s"]
        verdict = "linear" if row["ratio"] <= 6 else "SUPERLINEAR"
        print(f"5. {n:,} -> {n4:,} {row['case']}: wall {w:.2f} -> {w4:.2f} s, CPU {c:.2f} -> {c4:.2f} s "
              f"(x{row['ratio']:.1f} for x4: {verdict})")
    for row in r.get("scale", []):
        ratio = row.get("ratio")
        label = f"4. folder of {row['files']:,} logs"
        print(f"{label:<46}{row['firedup_s']:>9.2f}s{row.get('rg_s', float('nan')):>8.2f}s"
              f"{ratio if ratio is not None else float('nan'):>7.1f}x{GOALS['many']:>7.1f}x  "
              f"{_verdict(ratio, GOALS['many'])}  ({row['ms_a_file']:.2f} ms a file, {row['peak_rss_mb']:.0f} MB)"
              + _before(row))


def _report_startup(st: dict[str, Any]) -> None:
    for name in ("--help", "parse small.log"):
        above = st[name]["above_python_ms"]
        before = st[name].get("before_above_python_ms")
        print(f"{'3. firedup ' + name + ' above python -c pass':<46}{above:>8.0f}ms{'':>17}{GOALS['startup_ms']:>6.0f}ms  "
              f"{_verdict(above, GOALS['startup_ms'])}" + (f"   before: {before:.0f}ms" if before is not None else ""))
    print(f"   (python -c pass itself: {st['python -c pass ms']:.0f} ms; small.log: {st['small_log_bytes'] / 1000:.0f} kB)")


if __name__ == "__main__":
    raise SystemExit(main())

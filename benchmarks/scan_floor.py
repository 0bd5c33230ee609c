"""The floor under `throughput.py`'s long-log and folder figures: what any design of firedup
in Python pays before it reads a single line, and nothing more.

One process starts, imports the formats, loads each engine's compiled scan (`Prefilter`, from
the Hyperscan cache as `parse` does), then forks one scanner per core; each scans its share
with the engine's database (a Python callback per match), a long log mapped and cut in equal
parts, a folder's files read whole, file by file. No line is split, no event made, no JSON
written. `throughput.py` times it beside `rg -c` in the same rounds: the ratio it prints is the
least firedup's own ratio can be while the rule tables are scanned this way.

    python benchmarks/scan_floor.py LOG_OR_FOLDER [--jobs N]
    python benchmarks/scan_floor.py --dump-patterns FILE [--engine sglang]

`--dump-patterns` writes the engine's database patterns, one a line, for `hs_host_scan.c` (the
same scan with a Hyperscan built for this machine), and prints the flags they compile with.

The engine of a folder's file is the generator's (`truth.json`), not sniffed (sniffing is
firedup's work); a long log is SGLang's, as `firedup.synth.bulk.write_long_log` writes it.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
import traceback
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from firedup.formats import get_format  # noqa: E402
from firedup.read.prefilter import for_format  # noqa: E402

PIECE = 16 << 20  # bytes of a long log scanned per call, as the batch engine's windows


def _engines(folder: Path, files: list[Path]) -> list[str]:
    """Each file's engine, as the generator wrote it."""
    try:
        truth = json.loads((folder / "truth.json").read_text())["files"]
    except (OSError, ValueError, KeyError):
        truth = {}
    return [(truth.get(f.name, {}).get("runs") or [{}])[0].get("engine", "sglang") for f in files]


_MATCHES = [0]  # what a scanner's callbacks counted: the least a callback a match can do


def _on_match(pattern: int, start: int, stop: int, flags: int, context: object) -> None:
    _MATCHES[0] += 1


def _scan_file_part(path: Path, part: int, parts: int, engine: str) -> None:
    """Scan the part-th of `parts` equal byte ranges of a mapped file."""
    database = for_format(get_format(engine)).database
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if not size:
            return
        with mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            low, high = size * part // parts, size * (part + 1) // parts
            for at in range(low, high, PIECE):
                database.scan(view[at:min(high, at + PIECE)], match_event_handler=_on_match)
            view.release()


def _scan_files(files: list[Path], engines: list[str]) -> None:
    """Read each file whole and scan it."""
    databases = {engine: for_format(get_format(engine)).database for engine in set(engines)}
    for path, engine in zip(files, engines, strict=True):
        databases[engine].scan(path.read_bytes(), match_event_handler=_on_match)


def dump_patterns(engine: str, out: Path) -> int:
    """Write the patterns `Prefilter` compiles for `engine`, one a line; print their flags."""
    from firedup.read import prefilter

    seen: dict[str, object] = {}
    compile_database = prefilter.compile_database

    def capture(patterns: list[str], flags: int) -> object:
        seen.update(patterns=patterns, flags=flags)
        return compile_database(patterns, flags)

    prefilter.compile_database = capture
    try:
        pre = prefilter.Prefilter(get_format(engine))
    finally:
        prefilter.compile_database = compile_database
    patterns = seen["patterns"]
    assert isinstance(patterns, list) and not any("\n" in p for p in patterns)
    out.write_text("".join(p + "\n" for p in patterns))
    print(f"{len(patterns)} patterns to {out}; flags {seen['flags']}; the first "
          f"{pre.literal_count} are the rule literals")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path, nargs="?", help="a long log, or a folder of logs")
    ap.add_argument("--dump-patterns", type=Path, metavar="FILE", help="write the database's patterns and stop")
    ap.add_argument("--engine", default="sglang", help="whose patterns --dump-patterns writes (default sglang)")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else (os.cpu_count() or 1), help="scanning processes (default: the cores this process may use)")
    args = ap.parse_args(argv)
    if args.dump_patterns is not None:
        return dump_patterns(args.engine, args.dump_patterns)
    if args.path is None:
        ap.error("a long log or a folder is needed (or --dump-patterns FILE)")
    if args.path.is_dir():
        files = sorted(args.path.glob("*.log"))
        engines = _engines(args.path, files)
        for engine in set(engines):
            for_format(get_format(engine))  # compiled (or loaded) once, before the fork
        work = [partial(_scan_files, files[j::args.jobs], engines[j::args.jobs]) for j in range(args.jobs)]
    else:
        for_format(get_format("sglang"))
        work = [partial(_scan_file_part, args.path, j, args.jobs, "sglang") for j in range(args.jobs)]
    if args.jobs == 1:
        work[0]()
        return 0
    children = []
    for job in work:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                job()
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    failed = 0
    for pid in children:
        _pid, status = os.waitpid(pid, 0)
        failed += status != 0
    return 2 if failed else 0  # not 1: `throughput.run` takes 1 for rg -c finding nothing


if __name__ == "__main__":
    sys.exit(main())

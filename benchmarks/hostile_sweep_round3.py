"""Logs as they are found, round three (issue 42): generated inputs of its seven open classes.

    python benchmarks/hostile_sweep_round3.py                    # this checkout's src/
    python benchmarks/hostile_sweep_round3.py --src ../old/src   # the code before a change
    python benchmarks/hostile_sweep_round3.py --quick            # a few inputs per class

Classes: 1 two servers in one file (two or three logs interleaved at random, with compose tags,
two engines untagged, one engine untagged); 2 a wrapper's clock (a harness stamp before every
line, ahead or behind by a random offset, behind a random padding; moreutils `ts`); 3 broken
bytes (NUL runs and single NULs at random places, a trailing megabyte of NULs, BOMs at line
starts); 4 flags a table cannot hold (random names, firedup's own columns and `_s` names among
them, random types mixed across runs, through `runs`, `compare` and `budget`); 5 deep values
(random nesting kind and depth in both dump forms, through `parse`); 6 a clock that steps back
(the ready line dated years to minutes before the start); 7 the library's edges (arguments of
every wrong kind to every public function). Each input is read in this process, a timer
catching hangs. Printed per class: inputs tried, hangs, tracebacks, wrong answers, runs lost
or doubled; then each finding (up to --show). The exit status is 1 when any count is not zero.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
import signal
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
KINDS = ("hangs", "tracebacks", "wrong answers", "runs lost or doubled")


def lines_of(name: str) -> list[str]:
    return [line + "\n" for line in (SAMPLES / f"{name}.log").read_bytes().decode().split("\n") if line]


class Hang(BaseException):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hang()


class Sweep:
    def __init__(self, quick: bool, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 4 if quick else 40
        self.tried: Counter[str] = Counter()
        self.found: Counter[tuple[str, str]] = Counter()
        self.details: list[tuple[str, str, str]] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="sweep42-"))
        self.count = 0
        self.safe_jobs = False

    def file(self, data: str | bytes) -> Path:
        self.count += 1
        path = self.tmp / f"in{self.count}.log"
        path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        return path

    def case(self, cls: str, what: str, check: Callable[[], str | None], timeout: float = 60) -> None:
        """One input: `check` returns None when right, else (kind, detail) as "kind: detail"."""
        self.tried[cls] += 1
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            problem = check()
        except Hang:
            problem = "hangs: no answer in time"
        except Exception as exc:
            problem = f"tracebacks: {type(exc).__name__}: {exc} @ {traceback.extract_tb(exc.__traceback__)[-1].name}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if problem:
            kind, _, detail = problem.partition(": ")
            self.found[(cls, kind)] += 1
            self.details.append((cls, what, f"{kind}: {detail}"[:300]))


def parse(path: Path, **kw: Any) -> Any:
    from firedup.timeline.pipeline import parse_paths

    result = parse_paths([str(path)], **kw)
    internal = [e for e in result.errors if "internal error" in str(e)]
    if internal:
        raise RuntimeError(str(internal[0]))
    return result


def facts(run: Any) -> tuple[Any, ...]:
    """What a run must keep whatever surrounds its lines; its ready time to the second: an engine
    that prints whole seconds behind a collector's fractions is placed by the offset between
    the two clocks its latest line showed, which another server's line in between moves
    within that second."""
    return (run.outcome, run.config.get("model_path") or run.config.get("model"),
            run.ready_ts and run.ready_ts.iso[:19])


def merged(logs: list[list[str]], picks: list[int]) -> str:
    at, out = [0] * len(logs), []
    for pick in picks:
        for j in (pick % len(logs), *range(len(logs))):
            if at[j] < len(logs[j]):
                out.append(logs[j][at[j]])
                at[j] += 1
                break
    for j, log in enumerate(logs):
        out.extend(log[at[j]:])
    return "".join(out)


def class1(s: Sweep) -> None:
    names = ["small-tp1", "sglang-warm-start", "vllm-warm-start", "vllm-tp2-eager", "sglang-cold-start"]
    alone = {name: facts(parse(s.file("".join(lines_of(name)))).runs[0]) for name in names}
    for _ in range(s.n):
        chosen = s.rng.sample(names, s.rng.choice([2, 3]))
        picks = [s.rng.randrange(3) for _ in range(s.rng.randint(50, 600))]
        text = merged([[f"svc-{i + 1}  | {line}" for line in lines_of(name)] for i, name in enumerate(chosen)], picks)

        def tagged(text: str = text, chosen: list[str] = chosen) -> str | None:
            runs = parse(s.file(text)).runs
            got, want = sorted(map(facts, runs), key=str), sorted((alone[n] for n in chosen), key=str)
            if len(got) != len(want):
                return f"runs lost or doubled: {len(got)} runs of {len(want)}"
            return None if got == want else f"wrong answers: {got} != {want}"
        s.case("1", f"compose {chosen}", tagged)
    for _ in range(s.n):
        sg, vl = s.rng.choice(["small-tp1", "sglang-warm-start"]), s.rng.choice(["vllm-warm-start", "vllm-tp2-eager"])
        picks = [s.rng.randrange(2) for _ in range(s.rng.randint(50, 400))]
        text = merged([lines_of(sg), lines_of(vl)], picks)

        def engines(text: str = text, sg: str = sg, vl: str = vl) -> str | None:
            runs = parse(s.file(text)).runs
            if sorted(r.engine for r in runs) != ["sglang", "vllm"]:
                return f"runs lost or doubled: engines {[r.engine for r in runs]}"
            got = {r.engine: facts(r) for r in runs}
            if got != {"sglang": alone[sg], "vllm": alone[vl]}:
                return f"wrong answers: {got}"
            return None if all(any("mixes" in w for w in r.warnings) for r in runs) else "wrong answers: not said"
        s.case("1", f"untagged {sg}+{vl}", engines)
    for _ in range(s.n):
        blocks = [s.rng.randint(1, 6) for _ in range(s.rng.randint(40, 120))]
        picks = [i % 2 for i, size in enumerate(blocks) for _ in range(size)]
        text = merged([lines_of("small-tp1"), lines_of("sglang-warm-start")], picks)

        def untagged(text: str = text) -> str | None:
            runs = parse(s.file(text)).runs
            if not runs:
                return "runs lost or doubled: no run"
            bad = [r for r in runs if not any("mixes servers" in w for w in r.warnings)
                   or (r.total_seconds or 0) > 3600]
            return f"wrong answers: {[(r.outcome, r.total_seconds) for r in bad]}" if bad else None
        s.case("1", "untagged sglang+sglang", untagged)


HEADER = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]")


def class2(s: Sweep) -> None:
    base = lines_of("small-tp1")
    for _ in range(s.n):
        offset, pad = s.rng.choice([s.rng.randint(-7200, 7200), 112, -112, 86400 * 3]), s.rng.randint(0, 300)
        last, out = dt.datetime(2026, 6, 2, 14, 21, 10), []
        for line in base:
            if (m := HEADER.search(line)) is not None:
                last = dt.datetime.fromisoformat(m[1])
            out.append(f"[{last + dt.timedelta(seconds=offset):%Y-%m-%d %H:%M:%S}] [harness] [INFO] {'x' * pad} {line}")

        def harness(text: str = "".join(out), pad: int = pad) -> str | None:
            run, = parse(s.file(text)).runs
            if pad < 190 and (run.ready_ts and run.ready_ts.iso, run.total_seconds) != ("2026-06-02T14:22:24", 74.0):
                return f"wrong answers: ready {run.ready_ts}, {run.total_seconds} s"
            if pad > 260 and not any("behind a prefix" in w for w in run.warnings):
                return "wrong answers: a prefix out of reach not said"
            return None
        s.case("2", f"harness {offset:+} s, pad {pad}", harness)
    for _ in range(max(1, s.n // 4)):
        def moreutils() -> str | None:
            last, out = dt.datetime(2026, 6, 2, 14, 21, 10), []
            for line in base:  # `ts` stamps each line as it comes: the engine's time, or later
                if (m := HEADER.search(line)) is not None:
                    last = dt.datetime.fromisoformat(m[1])
                out.append(f"{last + dt.timedelta(seconds=s.rng.choice([0, 0, 1])):%b %d %H:%M:%S} {line}")
            text = "".join(out)
            run, = parse(s.file(text)).runs
            # `ts` stamps a line when it arrives, up to a second after the engine's own time
            ok = run.config.get("model_path") == "Qwen/Qwen3-4B-Instruct-2507" and 73 <= (run.total_seconds or 0) <= 75
            return None if ok else f"wrong answers: model {run.config.get('model_path')}, {run.total_seconds} s"
        s.case("2", "moreutils ts", moreutils)


def class3(s: Sweep) -> None:
    good = (SAMPLES / "small-tp1.log").read_bytes()
    want = [(*facts(r), r.total_seconds) for r in parse(s.file(good)).runs]
    first = good.index(b"\n") + 1
    for _ in range(s.n):
        data = good
        for _ in range(s.rng.randint(1, 6)):
            at = s.rng.randint(first, len(data))
            what = s.rng.choice([b"\x00", b"\x00" * s.rng.randint(2, 5000), b"bom"])
            if what == b"bom":
                at = data.rfind(b"\n", 0, at) + 1
                what = b"" if data.startswith(b"\xef\xbb\xbf", at) else b"\xef\xbb\xbf"
            data = data[:at] + what + data[at:]
        data += s.rng.choice([b"", b"\x00" * (1 << 20)])

        def broken(data: bytes = data) -> str | None:
            result = parse(s.file(data))
            if result.errors:
                return f"runs lost or doubled: {result.errors[0]}"
            got = [(*facts(r), r.total_seconds) for r in result.runs]
            return None if got == want else f"wrong answers: {got}"
        s.case("3", "NUL/BOM insertions", broken)


def class4(s: Sweep) -> None:
    from click.testing import CliRunner

    from firedup.cli import cli

    text = (SAMPLES / "small-tp1.log").read_text(encoding="utf-8")
    names = ["watchdog_s", "load_weights_s", "total_s", "outcome", "run_id", "source", "tp_size", "x_s", "first_ts"]
    for _ in range(s.n):
        folder = s.tmp / f"flags{s.count}"
        s.count += 1
        folder.mkdir()
        keys = s.rng.sample(names, s.rng.randint(1, 4))
        for i in range(s.rng.randint(2, 3)):
            values = [s.rng.choice(["'abc'", "5", "3.5", "None", "True", "[1, 2]", "{'a': 1}", "''"]) for _ in keys]
            extra = "".join(f"{k}={v}, " for k, v in zip(keys, values, strict=True)) + f"sweep_run={i}, "
            (folder / f"r{i}.log").write_text(text.replace("server_args=ServerArgs(", "server_args=ServerArgs(" + extra))

        def tables(folder: Path = folder, keys: list[str] = keys) -> str | None:
            for args in (["runs", str(folder)], ["compare", str(folder)], ["budget", str(folder)],
                         ["compare", str(folder), "--by", keys[0]]):
                result = CliRunner().invoke(cli, args, env={"COLUMNS": "80"})
                if result.exception is not None and not isinstance(result.exception, SystemExit):
                    return f"tracebacks: {' '.join(args[:1])}: {type(result.exception).__name__}: {result.exception}"
                if "Traceback" in result.output:
                    return f"tracebacks: {args[0]}"
            return None
        s.case("4", f"flags {keys}", tables)


DEEP = {
    "minus": lambda n: "-" * n + "1", "attribute": lambda n: "a." * n + "b", "list": lambda n: "[" * n + "]" * n,
    "call": lambda n: "f(" * n + ")" * n, "not": lambda n: "not " * n + "x", "sum": lambda n: "x" + "+1" * n,
}


def class5(s: Sweep) -> None:
    text = (SAMPLES / "small-tp1.log").read_text(encoding="utf-8")
    vtext = (SAMPLES / "vllm-warm-start.log").read_text(encoding="utf-8")
    for _ in range(s.n):
        kind, depth = s.rng.choice(sorted(DEEP)), s.rng.choice([1, 50, 500, 5000, 50000])
        value = DEEP[kind](depth)
        if s.rng.random() < 0.5:
            log, model = text.replace("server_args=ServerArgs(", f"server_args=ServerArgs(w={value}, "), \
                "Qwen/Qwen3-4B-Instruct-2507"
        else:
            log, model = vtext.replace("'host': '0.0.0.0',", f"'w': {value}, 'host': '0.0.0.0',"), "Qwen/Qwen3-14B"

        def deep(log: str = log, model: str = model) -> str | None:
            runs = parse(s.file(log)).runs
            if len(runs) != 1:
                return f"runs lost or doubled: {len(runs)}"
            got = runs[0].config.get("model_path") or runs[0].config.get("model")
            return None if runs[0].outcome == "ready" and got == model else f"wrong answers: {runs[0].outcome} {got}"
        s.case("5", f"{kind} x{depth}", deep)


def class6(s: Sweep) -> None:
    text = (SAMPLES / "small-tp1.log").read_text(encoding="utf-8")
    for _ in range(s.n):
        back = s.rng.choice([61, 3600, 86400, 86400 * 365 * 6, s.rng.randint(61, 10**8)])
        when = dt.datetime(2026, 6, 2, 14, 22, 24) - dt.timedelta(seconds=back + 74)
        log = text.replace("[2026-06-02 14:22:24] The server is fired", f"[{when:%Y-%m-%d %H:%M:%S}] The server is fired")

        def stepped(log: str = log) -> str | None:
            run, = parse(s.file(log)).runs
            if run.total_seconds is not None and run.total_seconds < 74:
                return f"wrong answers: ready in {run.total_seconds} s"
            return None if any("stepped back" in w for w in run.warnings) else "wrong answers: not said"
        s.case("6", f"ready {back} s before the start", stepped)


def class7(s: Sweep) -> None:
    import firedup

    log = str(SAMPLES / "small-tp1.log")
    wrong: list[Any] = [123, 1.5, None, b"x.log", [1], {"a": 1}, object(), "", True, -1, 10**6, float("nan"), "x.log"]
    calls: list[tuple[str, Callable[[Any], Any]]] = [
        ("parse_paths(p)", lambda v: firedup.parse_paths(v)),
        ("parse(p)", lambda v: firedup.parse(v)),
        ("parse(jobs)", lambda v: firedup.parse([log], jobs=v)),
        ("parse(progress)", lambda v: firedup.parse([log], progress=v)),
        ("parse(date)", lambda v: firedup.parse([log], date=v)),
        ("parse(engine)", lambda v: firedup.parse([log], engine=v)),
        ("parse(launched_at)", lambda v: firedup.parse([log], launched_at=v)),
        ("parse_paths(jobs)", lambda v: firedup.parse_paths([log], jobs=v)),
        ("parse_paths(progress)", lambda v: firedup.parse_paths([log], progress=v)),
        ("load(progress)", lambda v: firedup.load([log], progress=v)),
        ("budgets(by)", lambda v: firedup.budgets([log], by=v)),
        ("budgets(by twice)", lambda v: firedup.budgets([log], by=(str(v), str(v)))),
        ("budgets(risk)", lambda v: firedup.budgets([log], risk=v)),
        ("compare(by)", lambda v: firedup.compare([log], by=v)),
        ("summary(fmt)", lambda v: firedup.summary([log], v)),
    ]
    for name, call in calls:
        for value in wrong:
            if s.safe_jobs and "jobs" in name and isinstance(value, int) and value > 64:
                continue  # code before the cap forks that many workers: not on a shared machine
            def edge(call: Callable[[Any], Any] = call, value: Any = value) -> str | None:
                try:
                    call(value)
                except firedup.FiredupError:
                    return None
                return None
            s.case("7", f"{name} = {value!r}"[:60], edge, timeout=90)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--show", type=int, default=5)
    parser.add_argument("--safe-jobs", action="store_true", help="skip jobs=10**6 (for code before the cap)")
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    sweep = Sweep(args.quick, args.seed)
    sweep.safe_jobs = args.safe_jobs
    for cls in (class1, class2, class3, class4, class5, class6, class7):
        cls(sweep)
    print(f"{'class':<6} {'inputs':>6}  " + "  ".join(f"{k:>10}" for k in KINDS))
    for cls in sorted(sweep.tried):
        print(f"{cls:<6} {sweep.tried[cls]:>6}  " + "  ".join(f"{sweep.found[(cls, k)]:>10}" for k in KINDS))
    total = sum(sweep.found.values())
    print(f"{'all':<6} {sum(sweep.tried.values()):>6}  " + "  ".join(
        f"{sum(v for (_, k), v in sweep.found.items() if k == kind):>10}" for kind in KINDS))
    shown: Counter[str] = Counter()
    for cls, what, detail in sweep.details:
        if shown[cls] < args.show:
            print(f"  [{cls}] {what}: {detail}")
            shown[cls] += 1
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())

"""Hostile values (issue 33, classes 1, 2, 3 and 9): hundreds of generated inputs through every command.

    python benchmarks/hostile_sweep_values.py                    # this checkout's src/
    python benchmarks/hostile_sweep_values.py --src ../old/src   # the code before a change
    python benchmarks/hostile_sweep_values.py --quick            # a few inputs per class (CI's smoke run)

Classes: 1 numbers that are not finite or not small (every numeric field of a log line, dates,
flags); 2 flags that are not what a column expects (keys named like firedup's own columns, keys
that differ by a dot, mixed types, formulas, 20,000 flags); 3 text that reaches people (invisible
characters, file names with a newline or an undecodable byte, lone surrogates, matplotlib math,
URLs, credentials); 9 the library's own errors (wrong argument types, narrow terminals, closed
stdin). Each input goes through the commands that read it, in this process (click's runner, a
timer for hangs) or, for `wait`, as a child process. Printed per class: inputs tried, commands
run, hangs, tracebacks, injections (a raw control or invisible character, invalid UTF-8 or JSON,
a formula in a CSV cell or header, a live link in report.md or index.html, a credential),
wrong answers and runs lost or doubled; then every finding (up to --show of each kind).

The counts are what the issue's closing note quotes; the exit status is 1 when any is not zero.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
SGLANG = (SAMPLES / "small-tp1.log").read_text(encoding="utf-8")
VLLM = (SAMPLES / "vllm-warm-start.log").read_text(encoding="utf-8")
VLLM_ARGS = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"
SGLANG_MODEL = "model_path='Qwen/Qwen3-4B-Instruct-2507'"
KINDS = ("hangs", "tracebacks", "injections", "wrong answers", "runs lost or doubled")

# What may never reach a person raw: C0 (but tab and newline), DEL, C1, line and paragraph
# separators, bidi controls, zero-width and other format characters, tag characters,
# variation selectors, invisible fillers; surrogates cannot be written as UTF-8 at all.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                 "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
                 "\U000e0000-\U000e0fff\ud800-\udfff]")
FORMULA = ("=", "+", "-", "@", "\t", "\r")
LINK = re.compile(r"(?:https?://|www\.)[^\s`<>)]*evil|\]\([^)]*evil")


@dataclass
class Finding:
    kind: str
    cls: str
    case: str
    command: str
    detail: str


@dataclass
class Tally:
    inputs: Counter[str] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)

    def add(self, kind: str, cls: str, case: str, command: str, detail: str) -> None:
        self.findings.append(Finding(kind, cls, case, command, " ".join(detail.split())[:300]))


TALLY = Tally()


class Hang(BaseException):
    """Raised by the timer in this process: a BaseException, so no `except Exception` swallows it."""


@dataclass
class Result:
    code: int | None
    out: bytes
    err: bytes
    exc: str | None  # a traceback's last line, when an exception escaped
    hung: bool = False


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hang()


def invoke(args: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    """`firedup ARGS` in this process (click's runner), stopped after `timeout` seconds."""
    from click.testing import CliRunner

    from firedup.cli import cli

    runner = CliRunner()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = runner.invoke(cli, args, env={"COLUMNS": "80", "NO_COLOR": "1", **(env or {})},
                               catch_exceptions=True)
    except Hang:
        return Result(None, b"", b"", None, hung=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    exc = None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        if isinstance(result.exception, Hang):
            return Result(None, b"", b"", None, hung=True)
        exc = f"{type(result.exception).__name__}: {result.exception}"
    return Result(result.exit_code, result.stdout_bytes, result.stderr_bytes, exc)


def child(args: list[str], src: Path, timeout: float = 60, **kw: Any) -> Result:
    """`python -m firedup ARGS` as a child process (what needs real signals, stdin or a pid)."""
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "80", "NO_COLOR": "1"}
    env.pop("FIREDUP_STORE", None)
    try:
        proc = subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, env=env,
                              timeout=timeout, check=False, **kw)
    except subprocess.TimeoutExpired:
        return Result(None, b"", b"", None, hung=True)
    exc = None
    if b"Traceback (most recent call last)" in proc.stderr:
        exc = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1]
    return Result(proc.returncode, proc.stdout, proc.stderr, exc)


# --- what every output is checked for -------------------------------------------------------------


def _text(data: bytes, what: str, cls: str, case: str, command: str) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        TALLY.add("injections", cls, case, command, f"{what}: invalid UTF-8 ({exc})")
        return None
    m = RAW.search(text)
    if m:
        TALLY.add("injections", cls, case, command, f"{what}: raw {m.group(0)!r} near {text[max(0, m.start() - 30):m.end() + 10]!r}")
    return text


def strict_json(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def check_json(text: str, cls: str, case: str, command: str) -> Any:
    try:
        return strict_json(text)
    except ValueError as exc:
        TALLY.add("injections", cls, case, command, f"invalid JSON: {exc}")
        return None


def check_csv(text: str, cls: str, case: str, command: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    for i, row in enumerate(rows):
        for cell in row:
            if cell.startswith(FORMULA) and not _is_number(cell):
                TALLY.add("injections", cls, case, command, f"CSV {'header' if i == 0 else 'cell'} is a formula: {cell[:80]!r}")
                return rows
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_nanos(trace: Any, cls: str, case: str, command: str) -> None:
    for rs in (trace or {}).get("resourceSpans", []):
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("startTimeUnixNano", "endTimeUnixNano"):
                    value = int(span[key])
                    if not 0 <= value < 2**64:
                        TALLY.add("injections", cls, case, command, f"OTLP {key} {value} is no uint64")
                        return
                if int(span["endTimeUnixNano"]) < int(span["startTimeUnixNano"]):
                    TALLY.add("wrong answers", cls, case, command, "OTLP span ends before it starts")
                    return


def check_prometheus(text: str, cls: str, case: str, command: str) -> None:
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        value = line.rsplit(" ", 1)[-1]
        if not re.fullmatch(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", value):
            TALLY.add("injections", cls, case, command, f"OpenMetrics sample value {value!r}")
            return


def check_report(folder: Path, cls: str, case: str) -> None:
    for name in ("report.md", "index.html"):
        path = folder / name
        if not path.is_file():
            TALLY.add("wrong answers", cls, case, "report", f"no {name} written")
            continue
        text = _text(path.read_bytes(), name, cls, case, "report")
        if text is None:
            continue
        if name == "report.md":
            bare = re.sub(r"(`+)[^`]*?\1", "", text)  # code spans are never links
            m = LINK.search(bare)
            if m:
                TALLY.add("injections", cls, case, "report", f"report.md: a live link {m.group(0)[:80]!r}")
        else:
            m = re.search(r"<a\b[^>]*href=[\"']?[^\"' >]*evil", text, re.IGNORECASE)
            if m:
                TALLY.add("injections", cls, case, "report", f"index.html: a link {m.group(0)[:80]!r}")


# The exit codes of a command that read what it was given: 0, 1 (some input unreadable, or `check`
# found a regression), 5 (no start-up in it), 6 (`check` cannot judge: no history of the config).
READ_CODES = (0, 1, 5, 6)


def outcome(cls: str, case: str, command: str, res: Result, ok_codes: tuple[int, ...] = READ_CODES) -> str | None:
    """Count the run's hang or traceback; its stdout as text (checked for raw characters), or None."""
    TALLY.commands[cls] += 1
    if res.hung:
        TALLY.add("hangs", cls, case, command, "no answer before the timer")
        return None
    errtext = _text(res.err, "stderr", cls, case, command) or ""
    if res.exc is not None:
        TALLY.add("tracebacks", cls, case, command, res.exc)
    elif "internal error" in errtext or "Traceback" in errtext:
        TALLY.add("tracebacks", cls, case, command, errtext.strip().splitlines()[-1])
    elif res.code not in ok_codes:
        TALLY.add("tracebacks", cls, case, command, f"exit {res.code}: {errtext.strip()[-200:]}")
    return _text(res.out, "stdout", cls, case, command)


# --- the commands every log goes through ----------------------------------------------------------


def through_commands(cls: str, case: str, path: Path, work: Path, want_runs: int | None,
                     extra: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The fast commands over one input; what `parse --json` said (for the class's own checks)."""
    p = str(path)
    got: dict[str, Any] = {}
    text = outcome(cls, case, "parse --json", invoke(["parse", "--json", p]))
    if text is not None:
        parsed = check_json(text, cls, case, "parse --json")
        if parsed is not None:
            got = parsed
            if want_runs is not None and len(parsed["runs"]) != want_runs:
                TALLY.add("runs lost or doubled", cls, case, "parse --json", f"{len(parsed['runs'])} runs, not {want_runs}")
    for args in (["parse"], ["timeline"], ["runs"], ["runs", "--format", "csv"], ["compare"], ["budget"]):
        text = outcome(cls, case, " ".join(args), invoke([*args, p]))
        if text is not None and "csv" in args:
            check_csv(text, cls, case, " ".join(args))
    for args in (["runs", "--format", "json"], ["compare", "--json"], ["budget", "--json"],
                 ["check", "--json", "--history", p], ["export", "--format", "chrome-trace", "-o", "-"],
                 ["export", "--format", "otlp-json", "-o", "-"], ["export", "--format", "json", "--table", "runs", "-o", "-"]):
        name = " ".join(a for a in args if a not in (p, "-o", "-"))
        res = invoke([*args, p])
        text = outcome(cls, case, name, res)
        if text is not None and text.strip() and res.code in (0, 1):
            value = check_json(text, cls, case, name)
            if "otlp-json" in args:
                check_nanos(value, cls, case, name)
            if args[:3] == ["runs", "--format", "json"] and value is not None:
                got["_runs_json"] = value
                if want_runs is not None and len(value) != want_runs:
                    TALLY.add("runs lost or doubled", cls, case, name, f"{len(value)} rows, not {want_runs}")
    text = outcome(cls, case, "export prometheus", invoke(["export", "--format", "prometheus", "-o", "-", p]))
    if text is not None:
        check_prometheus(text, cls, case, "export prometheus")
    text = outcome(cls, case, "export csv runs",
                   invoke(["export", "--format", "csv", "--table", "runs", "-o", "-", p]))
    if text is not None:
        check_csv(text, cls, case, "export csv runs")
    if extra is not None:
        extra(got)
    return got


def through_store(cls: str, case: str, inputs: list[Path], work: Path, want_runs: int) -> None:
    """Ingest, then read the store back: every run once, and every later read still works."""
    store = work / "store"
    outcome(cls, case, "ingest", invoke(["ingest", "--store", str(store), *map(str, inputs)]))
    res = invoke(["runs", "--store", str(store), "--format", "json"])
    text = outcome(cls, case, "runs --store", res)
    if text is not None and res.code == 0:
        rows = check_json(text, cls, case, "runs --store")
        if rows is not None and len(rows) != want_runs:
            TALLY.add("runs lost or doubled", cls, case, "runs --store", f"{len(rows)} runs in the store, not {want_runs}")
    for args in (["runs"], ["compare", "--json"], ["budget", "--json"], ["export", "--format", "otlp-json", "-o", "-"]):
        outcome(cls, case, f"{args[0]} --store", invoke([*args, "--store", str(store)]))


def through_charts(cls: str, case: str, folder: Path, work: Path) -> None:
    """report, and every kind of plot, over a folder of the class's inputs."""
    out = work / "report"
    res = invoke(["report", str(folder), "-o", str(out)], timeout=300)
    outcome(cls, case, "report", res)
    if res.code == 0:
        check_report(out, cls, case)
    for kind in ("timeline", "compare", "distribution", "ranks"):
        outcome(cls, case, f"plot {kind}", invoke(["plot", kind, str(folder), "-o", str(work / f"{kind}.png")],
                                                  timeout=300))


# --- class 1: numbers ------------------------------------------------------------------------------

# (engine log, what to find, a regex whose group 1 is the number to replace)
NUMBER_SITES = [
    ("sglang", "dist init elapsed", r"Init torch distributed ends\. elapsed=([\d.]+) s"),
    ("sglang", "load weight elapsed", r"Load weight end\. elapsed=([\d.]+) s"),
    ("sglang", "avail mem", r"Load weight begin\. avail mem=([\d.]+) GB"),
    ("sglang", "kv tokens", r"#tokens: (\d+)"),
    ("sglang", "graph elapsed", r"Capture cuda graph end\. Time elapsed: ([\d.]+) s"),
    ("sglang", "max tokens", r"max_total_num_tokens=(\d+)"),
    ("sglang", "context len", r"context_len=(\d+)"),
    ("sglang", "uvicorn port", r"Uvicorn running on http://127\.0\.0\.1:(\d+)"),
    ("sglang", "tp_size flag", r"\btp_size=(\d+)"),
    ("sglang", "port flag", r", port=(\d+)"),
    ("sglang", "mem fraction flag", r"mem_fraction_static=([\d.]+)"),
    ("sglang", "seed flag", r"random_seed=(\d+)"),
    ("sglang", "year", r"^\[(\d{4})-06-02 14:21:11\]"),
    ("vllm", "loading weights took", r"Loading weights took ([\d.]+) seconds"),
    ("vllm", "model loading GiB", r"Model loading took ([\d.]+) GiB"),
    ("vllm", "model loading seconds", r"GiB memory and ([\d.]+) seconds"),
    ("vllm", "dynamo", r"Dynamo bytecode transform time: ([\d.]+) s"),
    ("vllm", "torch.compile total", r"torch\.compile takes ([\d.]+) s in total"),
    ("vllm", "kv memory", r"Available KV cache memory: ([\d.]+) GiB"),
    ("vllm", "graph capture secs", r"Graph capturing finished in (\d+) secs"),
    ("vllm", "init engine", r"warmup model\) took ([\d.]+) seconds"),
    ("vllm", "world size", r"world_size=(\d+) rank=0"),
    ("vllm", "api port", r"Starting vLLM API server 0 on http://0\.0\.0\.0:(\d+)"),
    ("vllm", "collector year", r"^(\d{4})-11-13T13:23:52\.101380827Z"),
]
# flags added to the vLLM sample's args line: (what, the key)
ADDED_FLAGS = [("tensor_parallel_size flag", "tensor_parallel_size"), ("port flag", "port"), ("a flag of its own", "own_knob")]
FIXED_NUMBERS = ["9" * 400, "9" * 5000, "1" + "0" * 30, "18446744073709551616", "9223372036854775808",
                 "99999999999", "0", "0.0", "³⁰⁰⁰⁰", "٣٠٠٠٠", "３０", "1.2.3", "1e29", "1e309", "-1e309",
                 "inf", "nan", "9999", "0001", "0000"]


def _site_log(engine: str, regex: str, value: str) -> str | None:
    base = SGLANG if engine == "sglang" else VLLM
    m = re.search(regex, base, re.MULTILINE)
    if m is None:
        raise SystemExit(f"sweep: {regex!r} no longer matches the {engine} sample")
    return base[:m.start(1)] + value + base[m.end(1):]


def numbers(rng: random.Random, quick: bool) -> Iterator[tuple[str, str, str]]:
    """(case, file name, log text): every site with the fixed values and random ones."""
    for engine, site, regex in NUMBER_SITES:
        values = list(FIXED_NUMBERS)
        values += [f"{rng.randint(0, 10 ** rng.randint(1, 40))}.{rng.randint(0, 999)}" for _ in range(2)]
        values += ["".join(rng.choice("0123456789") for _ in range(rng.randint(16, 600)))]
        if quick:
            values = values[:3]
        for value in values:
            if site.endswith("year") and not re.fullmatch(r"\d{4}", value):
                continue
            text = _site_log(engine, regex, value)
            if text is not None:
                yield f"{site}={value[:24]}", f"{engine}-{len(value)}.log", text
    extra = [*FIXED_NUMBERS, "float('inf')", "1e999", "-1e999", "1e-400"]
    for site, key in ADDED_FLAGS:
        for value in extra[:3] if quick else extra:
            yield f"{site}={value[:24]}", "vllm.log", VLLM.replace(VLLM_ARGS, VLLM_ARGS[:-1] + f", '{key}': {value}}}")
    # a date at the end of time, with its start-up crossing midnight of 9999-12-31
    crossing = re.sub(r"\[2026-06-02 14:2(\d)", lambda m: f"[9999-12-31 23:5{m.group(1)}", SGLANG)
    yield "year 9999 across midnight", "y9999.log", crossing.replace("[9999-12-31 23:52:2", "[9999-12-31 23:59:5")
    yield "year 1 (negative OTLP nanos)", "y1.log", SGLANG.replace("2026-06-02", "0001-01-01")
    yield "time-only log from midnight", "midnight.log", re.sub(r"\[2026-06-02 14:2(\d):", r"[00:0\1:", SGLANG)


def sweep_numbers(work: Path, rng: random.Random, quick: bool) -> None:
    cls = "1 numbers"
    folder = work / "numbers"
    folder.mkdir()
    written: list[Path] = []
    for i, (case, name, text) in enumerate(numbers(rng, quick)):
        TALLY.inputs[cls] += 1
        path = folder / f"{i:04d}-{name}"
        path.write_text(text, encoding="utf-8")
        written.append(path)

        def bounds(got: dict[str, Any], case: str = case) -> None:
            for run in got.get("runs", []):
                for phase in run["phases"]:
                    s = phase["seconds"]
                    if s is not None and not 0 <= s <= 1e9:
                        TALLY.add("wrong answers", cls, case, "parse --json", f"phase {phase['name']} {s} s")
                        return
                for key, value in run["config"].items():
                    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
                        TALLY.add("wrong answers", cls, case, "parse --json", f"flag {key} = {value} (no int64)")
                        return
                if run["outcome"] != "ready":
                    TALLY.add("wrong answers", cls, case, "parse --json", f"outcome {run['outcome']}, not ready")
                    return

        scratch = work / f"n{i}"
        scratch.mkdir()
        through_commands(cls, case, path, scratch, 1, bounds)
    through_store(cls, "every number input, one store", written, work / "nstore", len(written))
    through_charts(cls, "every number input, one folder", folder, work / "ncharts")


# --- class 2: flags --------------------------------------------------------------------------------


def _vllm_with(flags: dict[str, Any]) -> str:
    extra = ", ".join(f"{k!r}: {v!r}" for k, v in flags.items())
    return VLLM.replace(VLLM_ARGS, VLLM_ARGS[:-1] + (", " + extra if extra else "") + "}")


OWN_COLUMNS = ["run_id", "content_hash", "source", "run_index", "engine", "outcome", "ready_seconds", "total_seconds",
               "first_ts", "end_ts", "seconds_to_end", "lower_bound", "stopped_in", "crash_category", "config_json",
               "health_url", "n_ranks", "tp_size", "model_path", "launch_s", "load_weights_s", "warmup_s", "cuda_graph_s",
               "torch_compile_s", "kv_cache_s", "dist_init_s", "http_start_s", "unattributed_s", "total_s",
               "flag.outcome", "flag.load_weights_s", "flag.", "flag..x", "phase", "scope", "seconds", "start", "end"]
DOTTED = [("a.b", "ab"), ("a.b", "a_b"), ("x", "x."), (".x", "x"), ("a..b", "a.b"), ("outcome", "flag.outcome"),
          ("load_weights_s", "flag.load_weights_s"), ("tp_size", "flag.tp_size"), ("x", "flag.x"), ("flag.", "flag")]
FORMULA_KEYS = ['=HYPERLINK("http://evil.example","x")', "+1", "-1+2", "@SUM(A1)", "\t=1", "\r=1", "=1+1"]
TYPED = [1, "abc", 2.5, True, None, [1, 2], {"a": 1}, "1", 10**30, -1]


def flag_cases(rng: random.Random, quick: bool) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(case, the flags of each of two or three runs)."""
    for key in OWN_COLUMNS[:4] if quick else OWN_COLUMNS:
        yield f"key {key}", [{key: 1}, {key: 2}]
    for a, b in DOTTED[:2] if quick else DOTTED:
        yield f"keys {a} and {b}", [{a: 1, b: 2}, {a: 3, b: 4}]
    for key in FORMULA_KEYS[:2] if quick else FORMULA_KEYS:
        yield f"formula key {key!r}", [{key: 1}, {key: 2}]
    for i, x in enumerate(TYPED):
        for y in TYPED[i + 1:] if not quick else TYPED[i + 1:i + 2]:
            yield f"typed {x!r} then {y!r}", [{"knob": x}, {"knob": y}]
    for common in ("tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "enforce_eager"):
        for value in ("abc", 2.5, [1], {"a": 1}, 10**30) if not quick else ("abc",):
            yield f"{common}={value!r}", [{common: value}, {common: 1}]
    for _ in range(3 if quick else 40):
        key = "".join(rng.choice("ab._-=+@ \t\u200b\u202e$\\'\"0") for _ in range(rng.randint(1, 8)))
        yield f"random key {key!r}", [{key: rng.choice(TYPED)}, {key: rng.choice(TYPED)}]


def sweep_flags(work: Path, rng: random.Random, quick: bool) -> None:
    cls = "2 flags"
    batch = work / "flags-all"
    batch.mkdir()
    for i, (case, runs) in enumerate(flag_cases(rng, quick)):
        TALLY.inputs[cls] += 1
        folder = work / f"flags{i}"
        folder.mkdir()
        for j, flags in enumerate(runs):
            text = _vllm_with({**flags, "sweep_run": j})  # two runs, never one log twice (that counts once)
            (folder / f"r{j}.log").write_text(text, encoding="utf-8")
            (batch / f"c{i}-r{j}.log").write_text(text, encoding="utf-8")

        def own_columns_intact(got: dict[str, Any], case: str = case, n: int = len(runs)) -> None:
            rows = got.get("_runs_json")
            if not rows:
                return
            truth = {r["source"].rsplit("/", 1)[-1]: r for r in got["runs"]}
            for row in rows:
                run = truth.get(str(row.get("source", "")).rsplit("/", 1)[-1])
                if run is None:
                    TALLY.add("wrong answers", cls, case, "runs --format json", f"source {row.get('source')!r} is not a log's")
                    return
                if row.get("outcome") != run["outcome"] or row.get("engine") != "vllm":
                    TALLY.add("wrong answers", cls, case, "runs --format json", "outcome/engine overwritten by a flag")
                    return
                sums: dict[str, float] = defaultdict(float)
                for p in run["phases"]:
                    if p["scope"] == "run" and p["seconds"] is not None:
                        sums[p["name"]] += p["seconds"]
                for name, seconds in sums.items():
                    if name != "total" and f"{name}_s" in row and abs((row[f"{name}_s"] or 0) - seconds) > 0.01:
                        TALLY.add("wrong answers", cls, case, "runs --format json",
                                  f"{name}_s = {row[f'{name}_s']!r}, the phase took {seconds}")
                        return
                if any(k.endswith("_right") for k in row):
                    TALLY.add("wrong answers", cls, case, "runs --format json", "a column renamed *_right")
                    return

        through_commands(cls, case, folder, work / f"fw{i}", len(runs), own_columns_intact)
        key = next(iter(runs[0]), None)
        if key is not None:
            outcome(cls, case, "compare --by KEY", invoke(["compare", str(folder), "--by", key]), ok_codes=(*READ_CODES, 2))
        out = work / f"fw{i}.parquet"
        outcome(cls, case, "runs --format parquet", invoke(["runs", "--format", "parquet", "-o", str(out), str(folder)]))
    if not quick:
        many_flags(work, cls)
    through_charts(cls, "every flag input, one folder", batch, work / "fcharts")


def many_flags(work: Path, cls: str, count: int = 20_000) -> None:
    """20,000 flags in two runs: `runs --format csv` must answer in seconds, not minutes."""
    TALLY.inputs[cls] += 1
    folder = work / "manyflags"
    folder.mkdir()
    for j in range(2):
        (folder / f"r{j}.log").write_text(_vllm_with({f"f{i}": i * (j + 1) for i in range(count)}), encoding="utf-8")
    start = time.perf_counter()
    text = outcome(cls, f"{count} flags", "runs --format csv", invoke(["runs", "--format", "csv", str(folder)], timeout=30))
    took = time.perf_counter() - start
    if text is not None:
        header = next(csv.reader(io.StringIO(text)))
        if sum(1 for h in header if h.removeprefix("flag.").startswith("f")) < count:
            TALLY.add("wrong answers", cls, f"{count} flags", "runs --format csv", f"{len(header)} columns")
    print(f"  {count} flags: runs --format csv {took:.1f} s", file=sys.stderr)


# --- class 3: text ---------------------------------------------------------------------------------

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u00ad", "\U000e0041\U000e0042",
             "\u2066", "\u202e", "\u061c", "\u180e", "\ufe0f", "\u034f", "\u3164", "\u115f"]
TEXT_PAYLOADS = [*INVISIBLE, "$x^2$", "$\\frac{1}{2}$", "$", "$$", "\\$a$", "http://evil.example/x",
                 "[click](http://evil.example)", "<http://evil.example>", "www.evil.example", "<script>x</script>",
                 "a|b", "`code`", "\x1b]8;;http://evil.example\x07x\x1b]8;;\x07"]


def _sglang_model(name: str) -> str:
    return SGLANG.replace(SGLANG_MODEL, f"model_path={name!r}")


def text_cases(rng: random.Random, quick: bool) -> Iterator[tuple[str, dict[str, str]]]:
    """(case, {file name: log text}) for a folder of logs."""
    payloads = TEXT_PAYLOADS[:4] if quick else TEXT_PAYLOADS
    for p in payloads:
        yield f"model name {p!r}", {"a.log": _sglang_model(f"Qwen{p}/m"), "b.log": _sglang_model("Qwen/m")}
        yield f"flag value {p!r}", {"a.log": _vllm_with({"knob": f"v{p}"}), "b.log": _vllm_with({"knob": "w"})}
        yield f"flag key {p!r}", {"a.log": _vllm_with({f"k{p}": 1}), "b.log": _vllm_with({f"k{p}": 2})}
        if "/" not in p:
            yield f"file name {p!r}", {f"log{p}.log": SGLANG, "plain.log": VLLM}
    for _ in range(3 if quick else 30):
        p = "".join(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff), rng.randint(0x2000, 0x206f),
                                    rng.randint(0xe0000, 0xe007f), rng.randint(0xfe00, 0xfeff)])) for _ in range(rng.randint(1, 12)))
        yield f"random model name {p!r}", {"a.log": _sglang_model(f"Q{p}"), "b.log": _sglang_model("Q")}
        yield f"random flag value {p!r}", {"a.log": _vllm_with({"knob": p}), "b.log": _vllm_with({"knob": "x"})}
        safe = p.replace("/", "_")
        yield f"random file name {safe!r}", {f"{safe}.log": SGLANG, "plain.log": VLLM}
    lines = [json.dumps({"asctime": "2026-02-26 14:45:40,100", "levelname": "INFO", "name": "vllm",
                         "processName": "MainProcess", "process": 1, "message": m})
             for m in ("non-default args: {'model': 'm\\ud800'}", "Starting to load model m\ud800...",
                       "Loading weights took 3.07 seconds \udfff")]
    yield "lone surrogates in a JSON-lines log", {"json.log": "\n".join(lines).replace("\\\\ud800", "\\ud800") + "\n"}


def sweep_text(work: Path, rng: random.Random, quick: bool, src: Path) -> None:
    cls = "3 text"
    for i, (case, files) in enumerate(text_cases(rng, quick)):
        TALLY.inputs[cls] += 1
        folder = work / f"text{i}"
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        through_commands(cls, case, folder, work / f"tw{i}", len(files))
        if i % (1 if quick else 3) == 0 or "$" in case or "evil" in case:
            through_charts(cls, case, folder, work / f"tc{i}")
    # a file name holding a newline and what looks like a row of `parse`
    TALLY.inputs[cls] += 1
    folder = work / "newline"
    folder.mkdir()
    (folder / "a.log\nready       1 min 14 s  cuda_graph 51 s   FORGED.log").write_text(SGLANG, encoding="utf-8")
    for args in (["parse"], ["runs"], ["timeline"], ["compare"]):
        text = outcome(cls, "file name with a newline", args[0], invoke([*args, str(folder)]))
        # the name escaped on its own row (a long one wraps, indented, in the timeline's heading)
        if text is not None and any("FORGED" in line and "\\n" not in line and not line.startswith(" ")
                                    for line in text.splitlines()):
            TALLY.add("injections", cls, "file name with a newline", args[0], "a forged row")
    # an undecodable byte in a file name, beside a good log
    TALLY.inputs[cls] += 1
    folder = work / "badbyte"
    folder.mkdir()
    (folder / "good.log").write_text(VLLM, encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"bad\xff\xfe.log"), "w", encoding="utf-8") as fh:
        fh.write(SGLANG)
    through_commands(cls, "undecodable file name", folder, work / "bb", 2)
    through_store(cls, "undecodable file name", [folder], work / "bbstore", 2)
    through_charts(cls, "undecodable file name", folder, work / "bbcharts")
    credentials(work, src, cls)


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def credentials(work: Path, src: Path, cls: str) -> None:
    """`wait --url` with a user and password: the password is never printed or recorded."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    log = work / "cred.log"
    log.write_text(SGLANG, encoding="utf-8")
    closed = _free_port()
    cases = [[f"--url=http://alice:s3cr3t@127.0.0.1:{port}/health", "--timeout", "5"],
             [f"--url=http://alice:s3cr3t@127.0.0.1:{closed}/health", "--timeout", "0"],
             [f"--url=http://alice:s3cr3t@127.0.0.1:{closed}/health", "--log", str(log), "--timeout", "3"],
             [f"--url=http://:s3cr3t@127.0.0.1:{closed}/health", "--timeout", "0"],
             [f"--url=http://alice:s3cr3t@[::1:{closed}/health", "--timeout", "0"]]
    for i, args in enumerate(cases):
        TALLY.inputs[cls] += 1
        record = work / f"record{i}.json"
        res = child(["wait", *args, "--record", str(record), "--no-inspect"], src, timeout=60)
        outcome(cls, f"wait {args[0][:40]}", "wait", res, ok_codes=(0, 1, 2, 3, 4, 124))
        seen = res.out + res.err + (record.read_bytes() if record.is_file() else b"")
        if b"s3cr3t" in seen:
            TALLY.add("injections", cls, f"wait {args[0][:40]}", "wait", "the password is printed or recorded")
    server.shutdown()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- class 9: the library's own errors -------------------------------------------------------------


def sweep_library(work: Path, quick: bool, src: Path) -> None:
    cls = "9 library"
    import firedup
    from firedup.errors import FiredupError

    log = work / "base.log"
    log.write_text(SGLANG, encoding="utf-8")
    other = work / "other.log"
    other.write_text(VLLM, encoding="utf-8")
    calls: list[tuple[str, str, Callable[[], Any]]] = []  # (call, "error" or "either", the call)
    for bad in (123, 1.5, None, True, b"x", [123], [None], {"a": 1}, "", [""], object()):
        calls.append((f"parse({bad!r})", "error", lambda bad=bad: firedup.parse(bad)))
        calls.append((f"load({bad!r})", "error", lambda bad=bad: firedup.load(bad)))
    for bad in (123, 1.5, [1], b"x", object()):
        calls.append((f"load(store={bad!r})", "error", lambda bad=bad: firedup.load([str(log)], store=bad)))
    for bad in (5, 1.5, [5], {"a": 1}, True, b"x"):
        calls.append((f"compare(by={bad!r})", "error", lambda bad=bad: firedup.compare([str(log)], by=bad)))
        calls.append((f"budgets(by={bad!r})", "error", lambda bad=bad: firedup.budgets([str(log)], by=bad)))
    for bad in ("0.1", None, float("nan"), float("inf"), -1, 0, 1, 2, True, [0.1]):
        calls.append((f"budgets(risk={bad!r})", "error", lambda bad=bad: firedup.budgets([str(log)], risk=bad)))
        calls.append((f"check(risk={bad!r})", "error", lambda bad=bad: firedup.check([str(log)], [str(log)], risk=bad)))
    for bad in (5, None, "", "nope"):
        calls.append((f"plot({bad!r})", "error", lambda bad=bad: firedup.plot(bad, [str(log)], str(work / "p.png"))))
        calls.append((f"export(fmt={bad!r})", "error",
                      lambda bad=bad: firedup.export([str(log)], bad, str(work / "e.json"))))
        calls.append((f"summary(fmt={bad!r})", "error", lambda bad=bad: firedup.summary([str(log)], bad)))
    for bad in (5, None, b"x.png", ""):
        calls.append((f"plot(out={bad!r})", "error", lambda bad=bad: firedup.plot("timeline", [str(log)], bad)))
    for bad, expect in (("x", "error"), (1.5, "error"), (True, "error"), (0, "either"), (-1, "either")):
        calls.append((f"summary(width={bad!r})", expect, lambda bad=bad: firedup.summary([str(log)], width=bad)))
    for bad in (5, "sglang ", "", b"sglang", ["sglang"]):
        calls.append((f"parse(engine={bad!r})", "error", lambda bad=bad: firedup.parse([str(log)], engine=bad)))
    for bad, expect in (("2026-01-01", "either"), (20260101, "error"), (True, "error")):
        calls.append((f"parse(date={bad!r})", expect, lambda bad=bad: firedup.parse([str(log)], date=bad)))
    calls.append(("parse(jobs='2')", "error", lambda: firedup.parse([str(log)], jobs="2")))
    calls.append(("report(out_dir=5)", "error", lambda: firedup.report([str(log)], 5)))
    calls.append(("export(table=5)", "error", lambda: firedup.export([str(log)], "csv", str(work / "t.csv"), table=5)))
    for name, expect, call in (calls[:12] if quick else calls):
        TALLY.inputs[cls] += 1
        TALLY.commands[cls] += 1
        try:
            call()
        except FiredupError as exc:
            if not str(exc) or "\n" in str(exc):
                TALLY.add("tracebacks", cls, name, "api", f"unclear: {exc!r}")
            continue
        except Exception as exc:
            TALLY.add("tracebacks", cls, name, "api", f"{type(exc).__name__}: {exc}"[:200])
            continue
        if expect == "error":
            what = "read the current directory" if "''" in name else "accepted"
            TALLY.add("wrong answers", cls, name, "api", what)
    # plot(run=...) given one name as a string: one run, not its characters
    TALLY.inputs[cls] += 1
    TALLY.commands[cls] += 1
    try:
        firedup.plot("timeline", [str(log), str(other)], str(work / "one.png"), run="base.log")
    except Exception as exc:
        TALLY.add("wrong answers", cls, "plot(run='base.log')", "api", f"{type(exc).__name__}: {exc}"[:200])
    # narrow terminals
    for columns in range(1, 4 if quick else 13):
        for args in (["parse"], ["timeline"], ["runs"], ["compare"], ["budget"], ["check", "--history", str(other)]):
            TALLY.inputs[cls] += 1
            outcome(cls, f"COLUMNS={columns}", args[0], invoke([*args, str(SAMPLES / "small-tp1.log"), str(other)],
                                                              env={"COLUMNS": str(columns)}))
    # an empty path is an error, not the current directory
    for args in (["parse", ""], ["runs", ""], ["parse", "--json", ""], ["ingest", "--store", str(work / "es"), ""]):
        TALLY.inputs[cls] += 1
        res = child(args, src, cwd=str(SAMPLES))
        outcome(cls, f"{args[0]} ''", args[0], res, ok_codes=(1, 2))
    # wait's own inputs: a closed stdin, pids no process can have
    TALLY.inputs[cls] += 1
    res = child(["wait", "--log", "-", "--timeout", "5"], src, stdin=subprocess.DEVNULL,
                preexec_fn=lambda: os.close(0))
    text = outcome(cls, "wait --log - (stdin closed)", "wait", res, ok_codes=(1, 2))
    if text is not None and res.err.decode("utf-8", "replace").count("\n") > 1:
        TALLY.add("tracebacks", cls, "wait --log - (stdin closed)", "wait", f"not one line: {res.err[-200:]!r}")
    for pid in ("99999999999", "-1", "0", "1e3", "²"):
        TALLY.inputs[cls] += 1
        res = child(["wait", "--pid", pid, "--timeout", "0", "--no-inspect"], src)
        outcome(cls, f"wait --pid {pid}", "wait", res, ok_codes=(2,))


# --- the run ---------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the firedup source to test (default: this checkout's)")
    ap.add_argument("--quick", action="store_true", help="a few inputs per class (a smoke run)")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--classes", default="1,2,3,9")
    ap.add_argument("--show", type=int, default=6, help="findings listed per kind and class")
    ap.add_argument("--json", type=Path, help="also write the counts and findings here")
    args = ap.parse_args()
    src = args.src.resolve()
    sys.path.insert(0, str(src))
    os.environ["PYTHONPATH"] = str(src)
    os.environ.pop("FIREDUP_STORE", None)
    import firedup

    if Path(firedup.__file__).resolve().parents[1] != src:
        raise SystemExit(f"sweep: imported firedup from {firedup.__file__}, not {src}")
    rng = random.Random(args.seed)
    wanted = set(args.classes.split(","))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="firedup-sweep-") as tmp:
        work = Path(tmp)
        steps = [("1", lambda: sweep_numbers(work / "c1", rng, args.quick)),
                 ("2", lambda: sweep_flags(work / "c2", rng, args.quick)),
                 ("3", lambda: sweep_text(work / "c3", rng, args.quick, src)),
                 ("9", lambda: sweep_library(work / "c9", args.quick, src))]
        for key, step in steps:
            if key in wanted:
                (work / f"c{key}").mkdir()
                t0 = time.perf_counter()
                step()
                print(f"class {key}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    counts = {cls: Counter(f.kind for f in TALLY.findings if f.cls == cls) for cls in TALLY.inputs}
    print(f"firedup from {src}  ({time.perf_counter() - started:.0f} s)")
    head = f"{'class':<12}{'inputs':>7}{'commands':>9}" + "".join(f"{k.split()[0]:>12}" for k in KINDS)
    print(head)
    for cls in sorted(TALLY.inputs):
        print(f"{cls:<12}{TALLY.inputs[cls]:>7}{TALLY.commands[cls]:>9}" + "".join(f"{counts[cls][k]:>12}" for k in KINDS))
    total = Counter(f.kind for f in TALLY.findings)
    print(f"{'all':<12}{sum(TALLY.inputs.values()):>7}{sum(TALLY.commands.values()):>9}"
          + "".join(f"{total[k]:>12}" for k in KINDS))
    print("(columns: hangs, tracebacks, injections, wrong answers, runs lost or doubled)")
    shown: Counter[tuple[str, str]] = Counter()
    for f in TALLY.findings:
        shown[(f.cls, f.kind)] += 1
        if shown[(f.cls, f.kind)] <= args.show:
            print(f"  [{f.cls}] {f.kind}: {f.case!r} / {f.command}: {f.detail}".encode("ascii", "backslashreplace").decode())
    if args.json:
        args.json.write_text(json.dumps({"src": str(src), "inputs": dict(TALLY.inputs), "commands": dict(TALLY.commands),
                                         "counts": {c: dict(v) for c, v in counts.items()},
                                         "findings": [vars(f) for f in TALLY.findings]}, indent=1, ensure_ascii=True))
    return 1 if TALLY.findings else 0


if __name__ == "__main__":
    sys.exit(main())

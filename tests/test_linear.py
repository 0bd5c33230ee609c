"""Every rule, header, field pattern and normaliser runs in time linear in the line length.

A long line that almost matches (a progress bar drawn half-way, a million digits, a shell
command echoed a thousand times) must not make firedup spin: a 1 MB line like that kept
`parse` busy for over ten minutes. Each pattern is fed near-miss lines of 10 kB and 1 MB and
the time must grow at most ~linearly: a measurement inside the test with a generous bound
(x1000 for x100 more text, where a quadratic pattern takes x10000), not an assertion on this
machine's speed. A 100 kB probe comes first so a quadratic pattern fails in seconds instead
of hanging the suite.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from firedup.core import config, lazy, safe
from firedup.core.config import parse_args_repr
from firedup.formats import _common as common
from firedup.formats import _sglang_read, _vllm_read, all_formats, base, sglang, vllm, wrappers
from firedup.read import sources
from firedup.read.collectors import COLLECTORS
from firedup.read.sources import normalise
from firedup.render.report import md_text
from firedup.timeline import config as timeline_config  # noqa: F401 (its lazy regexes: `lazy.MADE`)
from firedup.timeline import crash

SMALL, MID, BIG = 10_000, 100_000, 1_000_000
# Below this a 10 kB timing is mostly call overhead and noise (the machine is shared); every
# quadratic pattern found so far took milliseconds at 10 kB, so the floor hides none of them.
FLOOR = 0.5e-3
MID_RATIO, BIG_RATIO = 40.0, 1000.0  # linear: x10 and x100; quadratic: x100 and x10000

# What a near miss is made of: each repeated after a rule's literal, so a pattern that scans
# from every occurrence of its literal to the end of the line shows it.
FILLERS = ("a", "1", " ", "a=", "KV", "| 1/2 [00:00<00:00", "--a ", "(", "'", "\\'", "{", "A1 ", "1%|")


def _best(fn: Callable[[str], Any], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        config._parse_args_repr.cache_clear()  # each try reads the dump again, not the cache
        _vllm_read._engine_config.cache_clear()  # and the engine config line
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def _line(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def assert_linear(name: str, fn: Callable[[str], Any], unit: str) -> None:
    """`fn` over `unit` repeated to 10 kB, 100 kB and 1 MB grows at most ~linearly."""
    small = max(_best(fn, _line(unit, SMALL), 5), FLOOR)
    mid = _best(fn, _line(unit, MID), 3)
    assert mid <= MID_RATIO * small and mid < 2.0, (
        f"{name}: {unit[:40]!r} x{MID // SMALL} longer took x{mid / small:.0f} as long ({small * 1e3:.2f} -> "
        f"{mid * 1e3:.1f} ms): superlinear")
    big = _best(fn, _line(unit, BIG), 2)
    assert big <= BIG_RATIO * small, (
        f"{name}: {unit[:40]!r} x{BIG // SMALL} longer took x{big / small:.0f} as long ({small * 1e3:.2f} -> "
        f"{big * 1e3:.1f} ms): superlinear")


def _regexes() -> list[tuple[str, re.Pattern[str], tuple[str, ...]]]:
    """Every pattern of every format, the collector prefixes and the crash tables, with the
    literals that put a line in front of it."""
    out: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = []
    for fmt in all_formats().values():
        out += [(f"{fmt.name} header {h.name}", h.regex, ("",)) for h in fmt.parsing.headers]
        out += [(f"{fmt.name} rule {r.name} #{i}", r.regex, r.literals) for i, r in enumerate(fmt.parsing.rules)]
        out += [(f"{fmt.name} field {rx.pattern[:24]}", rx, ("",)) for rx, _, _ in fmt.compiled_fields]
        out += [(f"{fmt.name} proc rank {rx.pattern[:24]}", rx, ("",)) for rx, _ in fmt.compiled_proc_ranks]
        if fmt.compiled_level is not None:
            out.append((f"{fmt.name} level", fmt.compiled_level, ("",)))
    out += [(f"sources {n}", v, ("",)) for n, v in vars(sources).items() if isinstance(v, re.Pattern)]
    out += [(f"collector {c.name}", c.regex, ("",)) for c in COLLECTORS]
    out += [(f"lazy {make().pattern[:24]}", make(), ("",)) for make in lazy.MADE]
    out += [(f"formats.base {n}", v, ("",)) for n, v in vars(base).items() if isinstance(v, re.Pattern)]
    out += [(f"{fmt.name} wrapped header start", fmt._wrapped_start, (" ",)) for fmt in all_formats().values()
            if fmt._wrapped_start is not None]
    out += [(f"frame stage {s}", re.compile(p), ("in ",)) for s, p in common.FRAME_STAGES]
    out.append(("capture trace", re.compile(common.CAPTURE_TRACE), ("",)))
    near = ("KV cache memory", "Free memory on device", "port ", "connect to ")
    for table in (crash.CATEGORY_RULES, crash.SPECIFIC_HINTS):
        out += [(f"crash {row[0]} #{i}", re.compile(row[1]), near) for i, row in enumerate(table)]
    out.append(("crash exception line", re.compile(crash.EXCEPTION_LINE), ("a.", "Error")))
    return out


REGEXES = _regexes()


@pytest.mark.parametrize(("name", "regex", "literals"), REGEXES, ids=[r[0] for r in REGEXES])
def test_every_pattern_is_linear_on_near_misses(name: str, regex: re.Pattern[str], literals: tuple[str, ...]) -> None:
    def run(text: str) -> None:
        regex.search(text)
        regex.match(text)

    # the two slowest near misses at 10 kB are measured up to 1 MB
    units = [f"{lit} {filler}" if lit else filler for lit in literals for filler in FILLERS]
    slowest = sorted(units, key=lambda u: -_best(run, _line(u, SMALL), 1))[:2]
    for unit in slowest:
        assert_linear(name, run, unit)


def _access_line() -> re.Pattern[bytes]:
    """The batch engine's search for access lines (a format with access lines behind kubectl)."""
    from firedup.read import prefilter

    pattern = prefilter.for_format(vllm.FORMAT).access_line
    assert pattern is not None
    return pattern


# The cases the issue names, each shaped to hit the pattern or normaliser it names.
NAMED: list[tuple[str, Callable[[str], Any], str]] = [
    ("normalise: half-drawn bar", lambda t: normalise(t, 1), "| 1/2 [00:00<00:00, 1"),
    ("normalise: bar of digits", lambda t: normalise(t, 1), "1"),
    ("normalise: bar start, digits", lambda t: normalise(t, 1), "12%| 1/2 [00:00<0"),
    ("normalise: redraws", lambda t: normalise(t, 1), "\r 50%|#####| 1/2 [00:01<00:01, 1.00it/s]"),
    ("normalise: cut header ranks", lambda t: normalise("2026-01-01 00:00:00 " + t, 1), "KV"),
    ("normalise: ANSI remnants", lambda t: normalise(t, 1), "\x1b[1;2;3"),
    ("normalise: process tag", lambda t: normalise("(" + t, 1), "Worker_TP1 "),
    ("sglang [KV]+ size", lambda t: [rx.search(t) for rx, _, _ in sglang.FORMAT.compiled_fields], "KV"),
    ("sglang error.killed", sglang.FORMAT.rule("error.killed").regex.search,
     "Killed python -m sglang.launch_server --a <"),
    ("sglang config.command", sglang.FORMAT.rule("config.command").regex.search,
     "python -m sglang.launch_server --tp 2 "),
    ("sglang config.command, serve", sglang.FORMAT.rule("config.command").regex.search, "sglang serve --a "),
    ("sglang progress.weights", sglang.FORMAT.rule("progress.weights").regex.search, "Loading safetensors using a "),
    ("vllm progress.weights", vllm.FORMAT.rule("progress.weights").regex.search, "Loading checkpoint shards "),
    ("parse_timings: nested", _sglang_read.parse_timings, "a={a=1, "),
    ("parse_timings: one word", _sglang_read.parse_timings, "a"),
    ("parse_argv", _sglang_read.parse_argv, "--a 1 "),
    ("vllm args tokens: escaped quotes", _vllm_read._pythonise, "\\'"),
    ("vllm args tokens: enum reprs", _vllm_read._pythonise, "<a.b: "),
    ("vllm read_args", lambda t: _vllm_read.read_args("{'a': '" + t), "\\'"),
    ("vllm engine config", lambda t: _vllm_read.engine_config("(v0.13.0) with config: " + t), "model='m', a=["),
    ("vllm -O level", lambda t: _vllm_read._optimization_level(t + "x"), "1"),
    ("batch access line: none", lambda t: _access_line().findall(t.encode()), "2026-11-01T12:14:56.4Z a "),
    ("batch access line: many literals", lambda t: _access_line().findall(t.encode()), "HTTP/ "),
    ("batch access line: stamps", lambda t: _access_line().findall(("\n" + t).encode()), "2026-11-01T12:14:56Z "),
    ("args dump cut short", lambda t: parse_args_repr("ServerArgs(" + t), "a=1, "),
    ("args dump, fast path: a long list", lambda t: config._simple_fields("A(a=[" + t + "1])"), "1, "),
    ("args dump, fast path: an open quote", lambda t: config._simple_fields("A(a='" + t), "a"),
    ("args dump, fast path: many fields", lambda t: config._simple_fields("A(" + t + "z=1)"), "a=1, "),
    ("args dump: endless numbers", lambda t: config._without_endless_numbers(t + "x" * 5000), "1" * 3999 + "x"),
    ("a URL's credentials: schemes cut short", lambda t: safe.without_credentials("x://@" + t + "@"), "a.a:/"),
    ("a URL's credentials: many ://", lambda t: safe.without_credentials(t + "@"), "a://b"),
    ("invisible characters", safe.visible, "a\u200b"),
    ("Markdown text: URL-ish words", md_text, "http://a www.b c@d "),
    # an unknown wrapper: the engine's header looked for behind blanks (`Format.layout`)
    ("sglang layout: wrapped stamps", sglang.FORMAT.layout, " [2025-07-25 02:04:1"),
    ("sglang layout: wrapped stamps, a header first", lambda t: sglang.FORMAT.layout("[2025-07-25 02:04:12] " + t),
     " [2025-07-25 02:04:12 TP"),
    ("sglang layout: wrapper words", lambda t: sglang.FORMAT.layout("[2025-07-25 02:04:12] " + t), "[worker_0] "),
    ("vllm layout: wrapped stamps", vllm.FORMAT.layout, " INFO 07-25 02:04:1"),
    ("vllm layout: wrapped process tags", vllm.FORMAT.layout, " (Worker_TP1 pid=1"),
    ("wrapper tag", wrappers.wrapper_tag, "[worker_0:stdout] 02:04:12,1 "),
]


@pytest.mark.parametrize(("name", "fn", "unit"), NAMED, ids=[n[0] for n in NAMED])
def test_named_cases_are_linear(name: str, fn: Callable[[str], Any], unit: str) -> None:
    assert_linear(name, fn, unit)


def test_a_1mb_near_miss_line_parses_in_seconds(tmp_path: Any) -> None:
    """End to end: a 1 MB half-drawn progress bar and a 1 MB echoed command, in a log."""
    from firedup.timeline.pipeline import parse_paths

    log = tmp_path / "bar.log"
    head = "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
    log.write_text(head + _line("| 1/2 [00:00<00:00, 1", BIG) + "\n"
                   + "[2026-01-01 10:00:01] " + _line("sglang serve --a ", BIG) + "<\n"
                   + "[2026-01-01 10:00:05] The server is fired up and ready to roll!\n")
    start = time.perf_counter()
    result = parse_paths([str(log)], scanner="incremental")
    assert time.perf_counter() - start < 60  # it took over 10 minutes; linear, it is well under a second
    assert [r.outcome for r in result.runs] == ["ready"]

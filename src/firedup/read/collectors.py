"""The collector prefixes: what a log collector writes in front of the line the server printed.

kubectl, CloudWatch, Docker Desktop, journald, docker compose, DJL serving, torch.distributed
and Ray (or an engine's own worker processes) each decorate every line. This table is the one
place they are declared: `sources.strip_outer` takes them off a line with `regex`, in table
order, and the batch engine's scan (`batch`) marks the lines that may carry one with `start`
(the same prefix reduced to what starts it: Hyperscan has no look-arounds, and a wider net only
costs a few more candidates).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from firedup.core.lazy import lazy_regex

MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}


@dataclass(frozen=True, slots=True)
class OuterStamp:
    """A timestamp written by a collector in front of the server's own line."""

    text: str  # as written, ISO-ish: "2026-09-22T06:49:56.336833841Z", "2025-02-04 21:21:40"
    year: int | None  # None for journald, which prints no year
    month: int
    day: int
    time: str  # HH:MM:SS
    frac: str  # digits after the decimal point, "" when none
    # seconds east of UTC where the stamp says (`Z`: 0, `+01:00`: 3600): `docker events` beside
    # `docker logs -t` may write the same moment on two offsets (read.clock puts them on one)
    tz: int | None = None


# What a prefix may start with, as `first_key` tells it from the line's first character: a
# process tag's "(", a "[" (DJL's, torch's), an ASCII letter, anything else (digits first).
PAREN, BRACKET, LETTER, OTHER = "(", "[", "a", "0"


def first_key(first: str) -> str:
    """Which of PAREN, BRACKET, LETTER, OTHER a line starting with `first` is: only the
    prefixes that may start so are tried (a server's own "[2026-..." header costs one regex
    call per "[" prefix, not one per prefix)."""
    if first == "(":
        return PAREN
    if first == "[":
        return BRACKET
    return LETTER if first.isascii() and first.isalpha() else OTHER


@dataclass(frozen=True, slots=True)
class Collector:
    """One collector's prefix.

    `pattern` (anchored) is what `sources` strips, compiled on first use (`regex`: most logs
    have no collector prefix, and compiling every collector's cost ~5 ms a run); `start`, a
    Hyperscan pattern of what every such prefix starts with (the batch engine's scan).
    `firsts`: the `first_key`s its prefix may start with. `stamp` reads the collector's time a
    prefix carries (None: it carries none); `process_tag`: the prefix names a process (its name
    and pid). `accepts`: whether a match is really this prefix, given the line and the match's
    end. `decoration`: a prefix on every line of a format whose batch engine may leave such
    lines unread (`prefilter.skips_decorations`)."""

    name: str
    pattern: str
    start: str
    firsts: frozenset[str]
    stamp: Callable[[re.Match[str]], OuterStamp] | None = None
    accepts: Callable[[str, int], bool] | None = None
    process_tag: bool = False
    decoration: bool = False
    # the prefix names the service or container the line came from (its `service` group): two
    # servers in one file (`docker compose logs` of two replicas) are told apart by it
    source_tag: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)  # `re`'s own cache keeps it after the first use


def _rfc3339_stamp(m: re.Match[str]) -> OuterStamp:
    date, time, frac, tz = m.group("date", "time", "frac", "tz")  # a date of fixed width: YYYY-MM-DD
    return OuterStamp(m.group(0).rstrip(), int(date[:4]), int(date[5:7]), int(date[8:10]), time, frac or "",
                      None if tz is None else _tz_seconds(tz))


def _tz_seconds(tz: str | None) -> int | None:
    """`Z` -> 0, `+01:00` or `+0100` -> 3600, `-05:30` -> -19800; None when the stamp gives none."""
    if not tz:
        return None
    if tz == "Z":
        return 0
    digits = tz[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:4]) * 60
    return -seconds if tz[0] == "-" else seconds


def _journald_iso_stamp(m: re.Match[str]) -> OuterStamp:
    y, mo, d = (int(p) for p in m["date"].split("-"))
    written = f"{m['date']}T{m['time']}" + (f".{m['frac']}" if m["frac"] else "") + m["tz"]
    return OuterStamp(written, y, mo, d, m["time"], m["frac"] or "", _tz_seconds(m["tz"]))


def _local_stamp(m: re.Match[str]) -> OuterStamp:
    y, mo, d = (int(p) for p in m["date"].split("-"))
    written = f"{m['date']} {m['time']}" + (f".{m['frac']}" if m["frac"] else "")
    return OuterStamp(written, y, mo, d, m["time"], m["frac"] or "")


def _journald_stamp(m: re.Match[str]) -> OuterStamp:
    frac = m["frac"] or ""
    written = f"{m['mon']} {m['day']} {m['time']}" + (f".{frac}" if frac else "")
    return OuterStamp(written, None, MONTHS[m["mon"]], int(m["day"]), m["time"], frac)


# What follows a local stamp when the stamp is really an engine's header whose "[" a paste cut
# ("2026-06-28 23:41:27 DP1 PP1 TP1] Scheduler hit ..." from a paste): rank tags closing a
# bracket never opened. No collector content starts that way, so the stamp is left in place
# for the header to read, and the line stays on the server's clock instead of the host's.
_CUT_HEADER_CLOSE = lazy_regex(r"(?:[A-Z][A-Z_]{0,15}\d{1,6} ){0,8}[A-Z][A-Z_]{0,15}\d{1,6}\] ")


def _local_accepts(text: str, end: int) -> bool:
    """A local stamp is a collector's unless the rest of a Python logging line follows
    ("2026-04-05 16:52:19,388 - CUTE_DSL - WARNING" keeps its own comma format) or a cut header."""
    return not text[end:].startswith("-") and not _CUT_HEADER_CLOSE().match(text, end)


_MONTH_NAMES = "|".join(MONTHS)

# In the order `sources.strip_outer` tries them (and the batch engine numbers its marks).
COLLECTORS: tuple[Collector, ...] = (
    # journald's `-o short-iso` / `short-iso-precise`: "2025-12-06T10:00:01+0000 host ident[pid]: "
    # (a numeric offset, never kubectl's `Z`), host and ident as in its short form below
    Collector(
        "journald-iso",
        r"^(?P<date>\d{4}-\d{2}-\d{2})T(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
        r"(?P<tz>[+-]\d{2}:?\d{2}) (?P<host>[^\s\[]\S*) (?P<ident>[^\s\[:\d][^\s\[:]*)"
        r"(?:\[(?P<pid>\d+)\])?: ?",
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?[+-]\d{2}:?\d{2} ", frozenset({OTHER}), _journald_iso_stamp),
    # kubectl's `--timestamps`, CloudWatch's (and its console table: "<stamp> | <line>")
    Collector(
        "kubectl",
        r"^(?P<date>\d{4}-\d{2}-\d{2})T(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d+))?"
        r"(?P<tz>Z|[+-]\d{2}:?\d{2})?(?: +\| +|\s+)",
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", frozenset({OTHER}), _rfc3339_stamp, decoration=True),
    # Docker Desktop's view and Dozzle-like viewers: host-local "YYYY-MM-DD HH:MM:SS[.mmm] " or
    # "... | ", or alone on a line (Docker Desktop stamps the newline tqdm writes before a bar).
    Collector(
        "docker-desktop",
        r"^(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?(?: \| | +|$)",
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", frozenset({OTHER}), _local_stamp, _local_accepts),
    # journald's (syslog's) "Feb 22 06:34:42 host ident[pid]: ": a host that opens no bracket and
    # an ident that starts with no digit, so moreutils' `ts` before an engine's own header
    # ("Jun 02 14:21:10 [2026-06-02 14:21:10] ...", "Jun 02 14:21:10 W0602 14:21:09.03 ...") is not it
    Collector(
        "journald",
        rf"^(?P<mon>{_MONTH_NAMES}) +(?P<day>\d{{1,2}}) "
        r"(?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))? (?P<host>[^\s\[]\S*) (?P<ident>[^\s\[:\d][^\s\[:]*)"
        r"(?:\[(?P<pid>\d+)\])?: ?",
        rf"(?:{_MONTH_NAMES}) +\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}", frozenset({LETTER}), _journald_stamp),
    # journald's `-o short-full`: "Sat 2025-12-06 10:00:01 UTC host ident[pid]: " (a zone name: the
    # host's local time as written)
    Collector(
        "journald-full",
        r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})"
        r"(?:\.(?P<frac>\d{1,9}))? (?:[A-Z]{1,5}|[+-]\d{2}:?\d{2}) (?P<host>[^\s\[]\S*) "
        r"(?P<ident>[^\s\[:\d][^\s\[:]*)(?:\[(?P<pid>\d+)\])?: ?",
        r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", frozenset({LETTER}), _local_stamp),
    # moreutils' `ts` (`cmd | ts`): "Jun 02 14:21:10 " (its default), no year, no host
    Collector(
        "ts",
        rf"^(?P<mon>{_MONTH_NAMES}) +(?P<day>\d{{1,2}}) (?P<time>\d{{2}}:\d{{2}}:\d{{2}})(?:\.(?P<frac>\d{{1,9}}))? ",
        rf"(?:{_MONTH_NAMES}) +\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}", frozenset({LETTER}), _journald_stamp),
    Collector("compose", r"^(?P<service>[A-Za-z0-9][\w.-]*)\s+\| ", r"[A-Za-z0-9][\w.-]*\s+\| ",
              frozenset({LETTER, OTHER}), source_tag=True),
    # DJL Serving (SageMaker LMI) before each line of its Python worker: the console's
    # "[INFO ] PyProcess - W-332-model-stdout: " (older "[INFO ] - W-..."), its serving.log's
    # "[INFO ] 2025-02-14 08:22:13 PyProcess - W-..." (DJL's own clock), and 0.29+'s plain
    # "INFO  PyProcess W-123-model-stdout: " (log4j's "%-5level %c{1} %msg"); the worker is
    # named after the model ("W-162-chat-film-stdout").
    Collector("djl", r"^\[(?:INFO|WARN|ERROR|DEBUG|TRACE|FATAL) ?\] (?:\S+ )?- [\w-]+-(?:stdout|stderr): ",
              r"\[(?:INFO|WARN|ERROR|DEBUG|TRACE|FATAL) ?\] ", frozenset({BRACKET})),
    Collector("djl-file",
              r"^\[(?:INFO|WARN|ERROR|DEBUG|TRACE|FATAL) ?\] (?P<date>\d{4}-\d{2}-\d{2}) "
              r"(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))? \S+ - [\w-]+-(?:stdout|stderr): ",
              r"\[(?:INFO|WARN|ERROR|DEBUG|TRACE|FATAL) ?\] \d{4}-\d{2}-\d{2} ", frozenset({BRACKET}), _local_stamp),
    Collector("djl-plain",
              r"^(?:INFO|WARN|ERROR|DEBUG|TRACE|FATAL) +[A-Za-z][\w.$]{0,200} (?:- )?[\w-]+-(?:stdout|stderr): ",
              r"(?:INFO|WARN|ERROR|DEBUG|TRACE|FATAL) +[A-Za-z][\w.$]* (?:- )?[\w-]+-std", frozenset({LETTER})),
    # mpirun's --tag-output before each line of a rank (DJL runs multi-GPU workers under MPI):
    # "[1,0]<stdout>:" (job 1, rank 0)
    Collector("mpi-tag", r"^\[\d{1,6},\d{1,6}\]<std(?:out|err)>: ?", r"\[\d+,\d+\]<std",
              frozenset({BRACKET})),
    # torch.distributed's "[rank0]: " before every stderr line of a rank (torch 2.3+): tracebacks.
    Collector("torch-rank", r"^\[rank\d+\]: ?", r"\[rank\d+\]:", frozenset({BRACKET})),
    # "(EngineCore_DP0 pid=1)", "(Worker rank=1 pid=2)", "(Worker PP1_TP0 pid=3)" (engine worker
    # processes), Ray's "(pid=4, ip=10.0.0.1)".
    Collector(
        "process-tag",
        r"^\((?P<proc>(?:[A-Za-z_][\w-]*(?: rank=\d+| [A-Z]+\d+(?:_[A-Z]+\d+)*)?)? ?pid=(?P<pid>\d+)"
        r"(?:, ip=[\d.:a-fA-F]+)?)\) ?",
        r"\(", frozenset({PAREN}), process_tag=True, decoration=True),
)

COLLECTOR = {collector.name: collector for collector in COLLECTORS}
# For each `first_key`, the collectors whose prefix may start so, in table order.
BY_FIRST: dict[str, tuple[Collector, ...]] = {
    key: tuple(c for c in COLLECTORS if key in c.firsts) for key in (PAREN, BRACKET, LETTER, OTHER)}

"""The batch engine: the incremental engine's events, without reading every line.

Runtime traffic (`Decode batch` lines, access lines) is nearly all of a long log, and no
rule can match most of it. This engine lets one multi-literal scan (Hyperscan, over the
file, read a window at a time) find the candidate lines: those holding a rule literal of the format,
and those whose meaning a rule-free reading could get wrong (a collector prefix, ANSI codes,
a `\\r` redraw, a progress bar, a header whose clock depends on earlier lines, JSON). Only
candidates go through `sources.normalise` and `engine.Scanner.feed`, the very code the
incremental engine runs, with the rules narrowed to those whose literals the scan saw.

Every other line is inert: one logical line, no prefix, no rule literal, and either no
clock or the engine's own fully dated one. Such a line changes only the scanner's last
own-clock stamp (which events without a time inherit, and which closes a run) and, rarely,
marks a run's first stamp; `Scanner.skip` applies that, from the last such line before the
next candidate (found by reading back a line or two) and the first one when wanted.

During a start-up (`Scanner.watching`: from the first line, or a line that may start a run,
until `ready`) the lines between candidates are read after all, one by one, in order
(`_State._walk` feeding `Scanner.quiet_line`): silences are measured on every line with the
engine's own time, exactly as the incremental engine measures them, and the lines no rule
knows are kept for template mining. A start-up is a few thousand lines; the runtime traffic
after `ready`, nearly all of a long log, is still skipped unread.

Decorated lines. A format whose every clock header is read in order (`skips_decorations`:
an engine whose stamps have no year) leaves no line unread that has a clock of its own; its
lines are decorated (a process tag, often coloured, behind kubectl's stamp), and that alone
does not make them candidates (`_decorated_markers` says which shapes do). Every line this
engine reads of such a format goes through `sources.normalise`. An unread decorated line
changes no state but by its collector stamp, and only in three ways, which the engine reads
lines for: before any own-clock line, and while a run's first line is wanted and none with
only a collector's stamp is marked (`Scanner.collector_stamps_count`: `_skip_clockless` reads
on, in order, until neither holds), and as the earliest or latest access time of a stretch,
which `compact` keeps (`_spanning_access`). No stamp of a skipped line can then be missed by
the clock: such a format is never handed back for it.

Access lines (`http.access`, one request each) are the rest of the traffic, and events, but
the timeline reads few of them (compact.py states which). The scan leaves their literal out;
this engine keeps an `AccessNeeds` fed with the events it emits and reads access lines
(found with `bytes.find`) only while one may be kept: every one after a run starts until its
first request after `ready`, the `/health` ones until the first, all those in a crash
window, and the last before each candidate (`Scanner.makes_event` checks it first). The
others stay unread and are counted as `skipped`; `compact` then keeps from this stream
exactly what it keeps from the incremental engine's.

The scan is nearly all of a long log's time, and needs no engine state: files of
`PARALLEL_FROM` bytes and more are scanned window by window by forked processes (one per
core), which also count the lines up to each candidate, while this process feeds the
engine in file order. Every scan pattern runs to the end of its line, so Hyperscan reports
it once per line (a progress bar redrawn 300 times is one match), and compiled databases
are kept in the user's cache directory (loading one takes a tenth of a millisecond,
compiling it 50-100).

Two things the scan cannot prove send the source back to the incremental engine
(`NeedExact`): a line longer than `sources.MAX_LINE_BYTES`, and a time-only or year-less
stamp that would depend on the latest dated stamp among lines that were skipped.
`pipeline.parse_source` then reads the source again with the incremental engine.

`scan_file` reads every access line and gives exactly the incremental engine's events
(tests/test_batch.py); `iter_file`, what `parse` runs, gives them minus unread access
lines. Line counts differ in one documented way: lines left unread are counted as
`skipped`, not split into matched, runtime, timestamped and other.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import sys
from collections.abc import Iterator
from datetime import date, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

from firedup.formats.base import Format, Header, Rule
from firedup.read.clock import Clock, UnsureDate, year_ok
from firedup.read.collectors import COLLECTOR, COLLECTORS
from firedup.read.compact import ACCESS, HEALTH_PATH, AccessNeeds
from firedup.read.engine import Event, LineStats, Parsed, Scanner
from firedup.read.sources import _ANSI, _BAR, MAX_LINE_BYTES, Line, normalise

WINDOW = 16 << 20  # bytes scanned per step; pages are released after each step
# kubectl's stamp at a line's start, as `sources.strip_outer` reads it (`_Prefilter.access_line`)
_KUBECTL_AT_START = re.compile(rb"[ \t\r\f\v]*(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z ")

# Collector prefixes as `sources.strip_outer` reads them (`collectors.COLLECTORS`), reduced
# to what starts them, in the table's order.
_PREFIX_STARTS = tuple(collector.start for collector in COLLECTORS)
# A process tag behind a wrapper, as `formats.base._PROC_INSIDE` finds it; not one behind
# kubectl's stamp (its `Z`), which `sources` strips with the stamp.
_PROC_BEHIND = r"[^Z \t\r\f\v\x1b\n][ \t]\([A-Za-z_][\w-]*(?: rank=\d+| [A-Z]+\d+(?:_[A-Z]+\d+)*)? pid=\d"
# The decorations a format whose unread lines carry no clock may leave unread (`_decorated_markers`).
_DECORATION_STARTS = frozenset(collector.start for collector in COLLECTORS if collector.decoration)
_LINE_START = r"^[ \t\r\f\v]*"  # normalise() strips indentation before reading prefixes


class NeedExact(Exception):
    """The batch engine cannot prove this source's events equal; read it incrementally."""


def available() -> bool:
    """True when the batch engine's libraries are installed (Hyperscan has x86-64 wheels)."""
    try:
        import hyperscan  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


class _Prefilter:
    """One compiled scan for a format: rule literals plus the marks of lines to read."""

    def __init__(self, fmt: Format) -> None:
        import hyperscan

        access = [rule for rule in fmt.rules if rule.name == ACCESS]
        self.access_rule: Rule | None = access[0] if len(access) == 1 else None
        if self.access_rule is not None and any(
                lit in other.literals for other in fmt.rules if other is not self.access_rule
                for lit in self.access_rule.literals):
            self.access_rule = None  # another rule's lines hold the same literal: read them all
        unread = set(self.access_rule.literals) if self.access_rule is not None else set()
        # the access rule's literals, for `bytes.find`; its lines hold no other literal
        self.access_literals = tuple(sorted(lit.encode() for lit in unread))
        # an access line (one holding an access literal), with kubectl's stamp at its start if
        # it has one: what `_State._spanning_access` reads of each in one C-level search. The
        # match is the whole line whichever literal it ends on, so `[^\n]*` runs greedily to
        # the line's end and steps back to the literal, three times faster than trying the
        # literals at every character on the way (`*?`)
        self.access_line = re.compile(
            rb"^(?:" + _KUBECTL_AT_START.pattern + rb")?[^\n]*(?:" + b"|".join(map(re.escape, self.access_literals))
            + rb")[^\n]*", re.MULTILINE) if self.access_literals else None
        self.access_rules: tuple[Rule, ...] = (self.access_rule,) if self.access_rule is not None else ()
        # the access lines that may be a request (not a probe): the traffic after `ready` is
        # probes for weeks, and the first request after it must be found without reading them
        self.request_database = _request_database(self.access_rule, self.access_literals)
        literals = sorted({lit for rule in fmt.rules for lit in rule.literals} - unread)
        self.rules_of: list[tuple[Rule, ...]] = [
            tuple(rule for rule in fmt.rules if lit in rule.literals) for lit in literals]
        self.literal_count = len(literals)
        # decorated lines may go unread: every line read is then read by `normalise`
        self.decorations = skips_decorations(fmt)
        patterns = [re.escape(lit) for lit in literals]
        patterns += _markers(fmt)
        self._rules: dict[frozenset[int], tuple[Rule, ...] | None] = {}
        self._order = {id(rule): i for i, rule in enumerate(fmt.rules)}
        self._with_access: dict[tuple[int, ...], tuple[Rule, ...]] = {}
        self.database = _database([_to_line_end(p) for p in patterns],
                                  hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY)

    def rules_for(self, patterns: frozenset[int]) -> tuple[Rule, ...] | None:
        """The rules whose literals a line holds, in table order; None when a marker says the
        line must be normalised first (which may join text: every rule may then apply)."""
        found = self._rules.get(patterns, ())
        if found != ():
            return found
        rules: tuple[Rule, ...] | None
        if any(p >= self.literal_count for p in patterns):
            rules = None
        else:
            chosen = {id(rule): rule for p in patterns for rule in self.rules_of[p]}
            rules = tuple(sorted(chosen.values(), key=lambda rule: self._order[id(rule)]))
        self._rules[patterns] = rules
        return rules

    def with_access(self, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        """`rules` plus the access rule, in table order (its literal is not in the scan)."""
        key = tuple(map(id, rules))  # rules hold dicts: they cannot be hashed
        found = self._with_access.get(key)
        if found is None:
            assert self.access_rule is not None
            chosen = {id(rule): rule for rule in (*rules, self.access_rule)}
            found = tuple(sorted(chosen.values(), key=lambda rule: self._order[id(rule)]))
            self._with_access[key] = found
        return found


def _not_prefixed(prefixes: tuple[str, ...]) -> str | None:
    """A pattern of a non-blank token that starts with none of `prefixes`, without look-arounds
    (Hyperscan has none): at each character of the prefixes' trie, the token may end, go on with a
    character no prefix has there (then anything), or follow one that does. None when the empty
    token is one of them. Linear: the alternatives differ in their first character."""
    trie: dict[str, Any] = {}
    for prefix in prefixes:
        node = trie
        for ch in prefix:
            node = node.setdefault(ch, {})
        node[""] = {}

    def below(node: dict[str, Any]) -> str | None:
        if "" in node:
            return None
        chars = "".join(re.escape(ch) for ch in sorted(node))
        alternatives = ["", rf"[^\s{chars}]\S*"]
        alternatives += [re.escape(ch) + rest for ch in sorted(node) if (rest := below(node[ch])) is not None]
        return "(?:" + "|".join(alternatives) + ")"

    if "" in trie:
        return None
    chars = "".join(re.escape(ch) for ch in sorted(trie))
    rest = [re.escape(ch) + tail for ch in sorted(trie) if (tail := below(trie[ch])) is not None]
    return "(?:" + "|".join([rf"[^\s{chars}]\S*", *rest]) + ")"


def _request_database(rule: Rule | None, literals: tuple[bytes, ...]) -> Any:
    r"""A Hyperscan database of what every access line that is a request (its path no probe
    path) holds: the path's token, then a space and an access literal. Only for an access
    rule whose path is the one token before ` <literal>` (`(?P<path>\S+) HTTP/`); None
    otherwise (every access line is then read). A line without a match cannot be a request
    (a raw token that starts with a probe path still does once decorations and colour are
    stripped); a match is only a line to read."""
    from firedup.read.events import PROBE_PATHS

    if rule is None or len(literals) != 1:
        return None
    literal = literals[0].decode()
    if f"(?P<path>\\S+) {re.escape(literal)}" not in rule.pattern and f"(?P<path>\\S+) {literal}" not in rule.pattern:
        return None
    token = _not_prefixed(PROBE_PATHS)
    if token is None:
        return None
    import hyperscan

    return _database([f" {token} {re.escape(literal)}"], hyperscan.HS_FLAG_SINGLEMATCH)


# What `sources.normalise` changes in a line besides its decorations (colour, collector
# prefixes), whatever else the line holds.
_REWRITING = (
    r"#033\[",
    r"\r[^\n]",  # a redraw inside the line (a trailing \r of CRLF is harmless)
    _BAR.pattern,
    "repeated",  # Ray's "[repeated Nx across cluster]"
    # Python's lstrip() also takes \x1c-\x1f and non-ASCII spaces before a prefix
    _LINE_START + r"[\x1c-\x1f\x80-\xff]",
)


def _normalising_markers() -> list[str]:
    """Patterns of lines that `sources.normalise` does more to than strip them."""
    return [_ANSI.pattern, *_REWRITING, *(_LINE_START + p for p in _PREFIX_STARTS)]


# The id of the first collector-prefix mark in `_normalising_markers()` (they come last).
_FIRST_PREFIX_MARKER = len(_normalising_markers()) - len(_PREFIX_STARTS)


def _read_in_order(header: Header) -> bool:
    """Whether a line of this header needs the engine's clock in order (a stamp without date
    or year, another logger's clock) or a decoder: such lines are always candidates."""
    dated_own = "date" in header.regex.groupindex and header.clock == "own"
    return header.decode is not None or not (dated_own or _clockless(header))


def skips_decorations(fmt: Format) -> bool:
    """Whether the batch engine may leave decorated lines of this format unread (a collector's
    dated stamp, a process tag, the colour around it): true when every line it leaves unread
    has no clock of the engine's own, because every header with a clock is read in order.
    Such a line can then change the engine's state only through a collector's stamp, in
    the few ways `Scanner.collector_stamps_count` names, which the engine reads lines for.
    (A format with fully dated own stamps, whose unread lines move the last own stamp, keeps
    its decorated lines candidates: a collector's stamp beside an own one sets the offset
    between the clocks.)"""
    return all(_read_in_order(header) or _clockless(header) for header in fmt.headers)


def _clockless(header: Header) -> bool:
    groups = header.regex.groupindex
    return "time" not in groups and "md" not in groups


def _markers(fmt: Format) -> list[str]:
    """Patterns of lines whose reading needs the full normaliser or an in-order clock."""
    if skips_decorations(fmt):
        out, start = _decorated_markers(), _MESSAGE_START
    else:
        out, start = _normalising_markers(), _LINE_START
    out += [start + header.start for header in fmt.headers if _read_in_order(header)]
    # a line behind an unknown wrapper (`Format.layout`): the engine's own header after a blank,
    # or a process tag after a blank that does not end a collector's stamp. Every event behind a
    # wrapper then comes from a line the scan marks, which `compact` relies on (its point 5).
    out += [r"[ \t]" + header.start for header in fmt.headers if header.own_timed]
    out.append(_PROC_BEHIND)
    return out


# -- decorated lines ---------------------------------------------------------------------
# The decorations left unread: a line may start (after blanks) with kubectl's stamp
# (`2026-11-01T12:13:34.481156419Z `, RFC 3339 in UTC), then a process tag
# (`(APIServer pid=1) `, `(Worker rank=1 pid=300) `), the tag coloured or not. Colour
# anywhere else, or around anything else, may split a rule literal or a header once it is
# removed: the line stays a candidate. Hyperscan has no look-arounds, so the patterns below
# describe the lines that differ from these shapes: the ways a coloured line can fail to be
# `[blanks][stamp ]ESC[..m(tag)ESC[..m[ ]message` with no other escape code.
#
# What this guarantees of a line no pattern matches: `normalise` gives one logical line
# whose text is a piece of the raw line as it is (only blanks and decorations in front of
# it were removed), so a rule literal, an access literal or a header in the text is one the
# scan sees; its collector stamp, if any, carries a year; and no clock header of the
# format starts its text (those start after one of `_MESSAGE_START`'s characters).
_SGR = r"\x1b\[[0-9;]*m"
_BLANK = r"[ \t\r\f\v]"
_ODD_SPACE = r"\x1c-\x1f\x80-\xff"  # what Python also strips as blanks (UTF-8 bytes of non-ASCII spaces)
# Where a message may start once decorations are stripped: at the line's start, after a blank,
# after a tag's `)`, a `:` (torch's rank prefix, journald's), or an escape code.
_MESSAGE_START = rf"(?:^|[ \t\r\f\v):{_ODD_SPACE}]|{_SGR})"
# kubectl's stamp, piece by piece: `_deviations` matches what starts like it and then differs.
_KUBECTL_STAMP = [r"\d"] * 4 + ["-"] + [r"\d"] * 2 + ["-"] + [r"\d"] * 2 + ["T"] + \
    [r"\d"] * 2 + [":"] + [r"\d"] * 2 + [":"] + [r"\d"] * 2
_TAG_NAME = r"[A-Za-z_][\w-]*"


def _not(piece: str) -> str:
    """A character other than `piece` (one character, a class's content or `\\d`) on the line.
    (Where the line ends there instead, it holds one escape code alone, which a pattern of
    its own marks: these patterns all describe lines with a second escape code later.)"""
    return rf"[^{piece}\n]"


def _deviations(before: str, pieces: list[str]) -> list[str]:
    """Patterns of text that, after `before`, matches `pieces` (single characters) up to
    some piece and then has something else there."""
    return [before + "".join(pieces[:i]) + _not(re.escape(pieces[i]) if len(pieces[i]) == 1 else pieces[i])
            for i in range(len(pieces))]


def _one_of(prefix: str, patterns: list[str]) -> str:
    """One pattern for `patterns`, which all begin with `prefix`, written once: the same lines
    (concatenation distributes over alternation), but one automaton that Hyperscan runs
    instead of one per deviation (the 40 of a decorated line cost 2.3 ms a 200 kB log, the
    two that replace them 1 ms)."""
    assert all(p.startswith(prefix) for p in patterns)
    return prefix + "(?:" + "|".join(p[len(prefix):] for p in patterns) + ")"


def _decorated_markers() -> list[str]:
    """`_normalising_markers` for a format that `skips_decorations`: the same, but decorations
    of the shapes above mark nothing (see the guarantee above)."""
    later_escape = r"[^\n]*\x1b"  # ... and an escape code later on the line
    stamp = "".join(_KUBECTL_STAMP)
    frac = r"(?:\.\d{1,9})?"
    # the text before the line's first escape code is blanks, or blanks and kubectl's stamp
    before_first = [_LINE_START + r"[^\d \t\r\f\v\x1b\n]"]
    before_first += _deviations(_LINE_START, _KUBECTL_STAMP)[1:]  # [0] would take a blank for the deviation
    before_first += [_LINE_START + stamp + tail for tail in (
        r"[^.Z\n]", r"\.[^\d\n]", r"\.\d{1,9}[^\dZ\n]", r"\.\d{10}", frac + r"Z[^ \n]", frac + r"Z [^\x1b\n]")]
    # the first escape code opens a tag that `sources.strip_outer` reads and the second closes it
    first = r"^[^\x1b\n]*" + _SGR
    name = first + r"\(" + _TAG_NAME
    pid = rf"{name} (?:rank=\d+ )?pid"
    tag = [first + _not(r"\("), first + r"\(" + _not("A-Za-z_"), name + r"[^\w\- \n]",
           name + r" [^rp\n]", *_deviations(name + " r", list("ank="))]
    tag += [name + r" rank=" + _not(r"\d"), name + r" rank=\d+[^\d \n]", name + r" rank=\d+ " + _not("p")]
    tag += [rf"{name} (?:rank=\d+ )?p" + _not("i"), rf"{name} (?:rank=\d+ )?pi" + _not("d"), pid + _not("="),
            pid + "=" + _not(r"\d"), pid + r"=\d+[^\d)\n]", pid + r"=\d+\)" + _not(r"\x1b")]
    closed = r"\)" + _SGR  # a tag's end: after it, one space at most and no other prefix
    return [
        *_REWRITING,
        r"(?:^|[^\x1b\n])\[[0-9]{1,2}(?:;[0-9]{1,2})*m",  # colour codes whose escape was lost
        # an escape that is not a colour code
        r"\x1b[^\[\n]", r"\x1b\[[0-9;]*[^0-9;m\n]", r"\x1b$", r"\x1b\[[0-9;]*$",
        r"^[^\x1b\n]*\x1b[^\x1b\n]*$",  # one escape code alone
        r"\x1b[^\n]*\x1b[^\n]*\x1b",  # more than two
        _one_of(_LINE_START, before_first) + later_escape,
        _one_of(first, tag),
        closed + rf"(?: [ \t\r\f\v{_ODD_SPACE}]|[\t\r\f\v{_ODD_SPACE}])",
        *(closed + " ?" + p for p in _PREFIX_STARTS),
        # collector prefixes, but kubectl's stamp and process tags; journald's stamp (it has no
        # year) wherever `sources.strip_outer` may take it as a line's first stamp
        *(_LINE_START + p for p in _PREFIX_STARTS if p not in _DECORATION_STARTS),
        rf"[ \t\r\f\v):|{_ODD_SPACE}]{COLLECTOR['journald'].start}",
    ]


def _to_line_end(pattern: str) -> str:
    """`pattern` extended to the end of its line. Hyperscan reports a pattern once per end
    offset, so a progress bar redrawn 300 times on one line is one match, not 300 (each a
    Python callback), and every match ends on the line it was found in."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern  # ends with its line already
    return f"(?:{pattern})[^\\n]*$"


def _cpu() -> str:
    """The machine and its CPU features: a database is compiled for them (a cache directory
    can be shared between machines)."""
    flags = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        flags = next((line for line in fh if line.startswith("flags")), "")
    return f"{os.uname().machine} {flags.strip()}"


def _database(patterns: list[str], flags: int) -> Any:
    """A Hyperscan block-mode database of `patterns` (pattern i reports id i), from the
    user's cache when an identical one was compiled before: compiling takes 50-100 ms, which
    every `firedup parse` of a big input would pay, loading a tenth of a millisecond."""
    import hashlib

    import hyperscan

    version = getattr(hyperscan, "__version__", "")
    key = hashlib.sha256(repr((version, _cpu(), flags, patterns)).encode()).hexdigest()[:32]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "firedup" / f"hyperscan-{key}.db"
    with contextlib.suppress(OSError, hyperscan.HyperscanError):
        database = hyperscan.loadb(cache.read_bytes(), hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)
        return database
    database = hyperscan.Database()
    database.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
                     elements=len(patterns), flags=[flags] * len(patterns))
    from firedup.core.files import write_bytes
    from firedup.errors import OutputError

    with contextlib.suppress(OSError, OutputError, hyperscan.HyperscanError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(cache, hyperscan.dumpb(database), named=False)  # whole or not at all, even with parallel runs
    return database


_COMPILED: dict[int, tuple[Format, _Prefilter]] = {}


def prefilter(fmt: Format) -> _Prefilter:
    """The compiled scan of a format, once per process (compiling takes some 50 ms)."""
    found = _COMPILED.get(id(fmt))
    if found is None or found[0] is not fmt:
        found = _COMPILED[id(fmt)] = (fmt, _Prefilter(fmt))
    return found[1]


_NORMALISING: list[Any] = []
# A file whose first lines (up to _PREFIXED_SAMPLE of them, at least _PREFIXED_MIN) are more
# than _MOSTLY_PREFIXED prefixed is read by the incremental engine (`read_head`).
_MOSTLY_PREFIXED = 0.5
_PREFIXED_SAMPLE = 200
_PREFIXED_MIN = 100


def _refuse_if_prefixed(database: Any, raws: list[bytes]) -> None:
    """NeedExact when most of these lines start with a collector prefix or a process tag
    (`kubectl logs --timestamps`, docker compose, an engine's `(APIServer pid=1)`): such a prefix
    is on every line of a file, so the scan would send nearly every line through the engine
    anyway, and the incremental engine does that with less bookkeeping (a process-tagged log behind
    kubectl: 46 ms, not 58). Progress bars or colour alone do not count: the traffic after
    them may still be skipped. Nor do kubectl's stamps and process tags in the log of a format
    whose batch engine leaves such lines unread (`skips_decorations`), by the sniff literals
    of these lines."""
    prefixed: set[int] = set()
    decorated: set[int] = set()
    text = b"\n".join(raws)
    for pattern, line in _marked_lines(database, text):
        if pattern >= _FIRST_PREFIX_MARKER:
            (decorated if _PREFIX_STARTS[pattern - _FIRST_PREFIX_MARKER] in _DECORATION_STARTS else prefixed).add(line)
    most = len(raws) * _MOSTLY_PREFIXED
    if len(prefixed) > most or (len(prefixed | decorated) > most and not _decorations_skipped(text)):
        raise NeedExact("most lines carry a collector prefix or a process tag")


def _marked_lines(database: Any, text: bytes) -> list[tuple[int, int]]:
    """(pattern, line index) of every match of `database` in `text`, lines counted from 0: the
    newlines before each match's last byte, counted on from the match before (matches come
    by their end, so the text is counted once)."""
    marked: list[tuple[int, int]] = []
    counted = [0, 0]  # newlines are counted up to this offset; the line there

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        at = max(stop - 1, 0)
        if at < counted[0]:
            marked.append((pattern, text.count(b"\n", 0, at)))
            return
        counted[1] += text.count(b"\n", counted[0], at)
        counted[0] = at
        marked.append((pattern, counted[1]))

    database.scan(text, match_event_handler=on_match)
    return marked


def _decorations_skipped(text: bytes) -> bool:
    """Whether the format whose sniff literals weigh most in `text` (raw lines: decorations
    hold none) `skips_decorations`. A guess, before the format is sniffed from normalised
    lines: a wrong one costs time, not correctness."""
    found = _sniff_found(text)
    formats = _formats()
    weight, best = max(((sum(w for literal, w in fmt.sniff_literals.items() if literal in found), i)
                        for i, fmt in enumerate(formats)), default=(0.0, -1))
    return weight > 0 and skips_decorations(formats[best])


def head_sample(path: str | os.PathLike[str], lines: int = 2000) -> str:
    """The text `parse` sniffs the format from: its first `lines` logical lines, joined,
    exactly as `sources.read_lines` gives them (see `read_head`)."""
    return read_head(path, lines)[0]


def read_head(path: str | os.PathLike[str], lines: int = 2000,
              refuse_mostly_flagged: bool = False, until_settled: bool = False) -> tuple[str, dict[int, list[Line]]]:
    """`head_sample`, and the lines it had to normalise (by physical number), which the scan
    then takes instead of normalising them again (progress bars redrawn hundreds of times
    are the costly ones). Lines that only need stripping (the scan says which) are stripped.

    `refuse_mostly_flagged`: raise NeedExact, before normalising anything, when most of the
    first lines carry a collector prefix or a process tag (`_refuse_if_prefixed`).
    `until_settled`: stop at the first lines whose sniff and release hint no later line can
    change (`settled_format`): the sample may then be shorter than `lines` (a log's 100 first
    lines, not all its 1,400 colour-tagged ones, each normalised)."""
    import hyperscan

    if not _NORMALISING:
        _NORMALISING.append(_database([_to_line_end(p) for p in _normalising_markers()], hyperscan.HS_FLAG_MULTILINE))
    database = _NORMALISING[0]
    data = b""
    at_end = False
    with open(path, "rb") as fh:
        while data.count(b"\n") < lines:
            more = fh.read(1 << 20)
            if not more:
                at_end = True
                break
            data += more
            if len(data) > 64 << 20:
                raise NeedExact("the first lines are too long to sniff quickly")
    raws = data.split(b"\n")
    last = raws.pop()  # after the last newline: a cut line, or the file's unterminated last one
    if at_end and last:
        raws.append(last)
    raws = raws[:lines]
    if refuse_mostly_flagged and len(raws) >= _PREFIXED_MIN:
        _refuse_if_prefixed(database, raws[:_PREFIXED_SAMPLE])
    texts: list[str] = []
    normalised: dict[int, list[Line]] = {}
    # The lines are read in pieces ending at lines 100, 200, 400..., each scanned for the lines
    # to normalise; with `until_settled`, the sniff is asked after each piece whether it is
    # settled, so a head that settles stops after its first piece instead of normalising 2,000.
    can_settle = until_settled and any(_settle_bars(fmt) is not None for fmt in _formats())
    low, high = 0, _SETTLE_FIRST if can_settle else len(raws)
    found: set[str] = set()  # the sniff literals in the texts so far: none spans a newline
    while True:
        high = min(high, len(raws))
        read = len(texts)
        _read_piece(database, raws, low, high, texts, normalised)
        if len(texts) >= lines or high == len(raws):
            break
        found |= _sniff_found("\n".join(texts[read:]))
        if _settled(found, texts) is not None:
            return "\n".join(texts), normalised
        low, high = high, 2 * high
    return "\n".join(texts[:lines]), normalised


def _read_piece(database: Any, raws: list[bytes], low: int, high: int, texts: list[str],
                normalised: dict[int, list[Line]]) -> None:
    """Lines [low, high) of the head into `texts`: normalised where the scan marks them (and
    kept in `normalised` by physical number), else only stripped."""
    piece = b"\n".join(raws[low:high])
    flagged = {low + line for _pattern, line in _marked_lines(database, piece)}
    # one decode for all: a newline byte is never part of a UTF-8 sequence, so this splits
    # into what decoding line by line gives; the unmarked lines between marked ones are
    # stripped a stretch at a time (strip() takes a CRLF's "\r" too)
    decoded = piece.decode("utf-8", errors="replace").split("\n")
    done = 0
    for index in sorted(flagged):
        at = index - low
        texts.extend(map(str.strip, decoded[done:at]))
        found = normalised[index + 1] = normalise(decoded[at], index + 1)
        texts.extend(line.text for line in found)
        done = at + 1
    texts.extend(map(str.strip, decoded[done:]))


_SETTLE_FIRST = 100  # logical lines read before the sniff is first asked whether it is settled


def _formats() -> list[Format]:
    from firedup.formats import all_formats

    return list(all_formats().values())


def _settle_bars(fmt: Format) -> tuple[float, float] | None:
    """What `fmt`'s sniff score must reach to lead for good: more than the most any other
    registered format's rules add up to (`Format.sniff_most`), and at least the most any
    foreign engine's literals do; None when its own rules cannot get there (its sniff never
    settles early)."""
    from firedup.formats._foreign import FOREIGN

    others = max((other.sniff_most for other in _formats() if other is not fmt), default=0.0)
    foreign = max((sum(engine.literals.values()) for engine in FOREIGN), default=0.0)
    most = fmt.sniff_most
    return (others, foreign) if most > others and most >= foreign else None


def settled_format(sample: str) -> Format | None:
    """The format `formats.sniff` gives on `sample` and on any longer text that begins with
    it, whose release hint (`Format.release_hint`) no later line can change either; None when
    later lines could still change one of them. A score only grows as lines come (a rule once
    matched stays matched, `Format.evidence`), so a format leads for good once its score passes
    the most any other format could reach (all its rules), and no foreign engine can outweigh
    it once it reaches the most one of those could: a shorter sample then decides exactly as
    the whole head would."""
    return _settled(_sniff_found(sample), [sample])


def _settled(found: set[str], texts: list[str]) -> Format | None:
    """`settled_format` of the lines `texts`, whose sniff literals are `found`."""
    formats = _formats()
    sample = "\n".join(texts)
    # the most each score can be before a line is read: a head no format's could settle (that
    # of a format whose rules weigh less than another's could) is not read for its rules
    if not any((bars := _settle_bars(fmt)) is not None and sum(rule.evidence for rule in fmt.candidates(sample, found))
               > bars[0] for fmt in formats):
        return None
    scores = [fmt.sniff(sample, found) for fmt in formats]
    best = max(range(len(formats)), key=scores.__getitem__, default=None)
    if best is None or scores[best] <= 0:
        return None
    bars = _settle_bars(formats[best])
    if bars is None or scores[best] <= bars[0] or scores[best] < bars[1]:
        return None
    return formats[best] if formats[best].release_hint_settled(sample) else None


# The registered formats (a format may join later: `formats.register`) -> their sniff scan.
_SNIFFING: dict[tuple[int, ...], tuple[list[str], Any]] = {}


def sniff(sample: str) -> Format | None:
    """`formats.sniff(sample)`, with one Hyperscan pass for every format's sniff literals and
    the foreign engines' instead of one search of the sample per literal (those searches
    were a quarter of a small log's parse)."""
    from firedup.formats import sniff as sniff_formats

    return sniff_formats(sample, found=_sniff_found(sample))


def _sniff_found(sample: str | bytes) -> set[str]:
    """The sniff literals (formats' and foreign engines') present in `sample` (text, or raw
    lines as bytes), in one scan."""
    literals, database = _sniff_scan()
    found: set[str] = set()

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        found.add(literals[pattern])

    # UTF-8: a str's substrings are its bytes'
    database.scan(sample.encode() if isinstance(sample, str) else sample, match_event_handler=on_match)
    return found


def _sniff_scan() -> tuple[list[str], Any]:
    """Every registered format's sniff literals and the foreign engines' (`formats.sniff_literals`),
    and their compiled scan (pattern i: literal i)."""
    import hyperscan

    from firedup.formats import all_formats, sniff_literals

    key = tuple(id(fmt) for fmt in all_formats().values())
    if key not in _SNIFFING:
        literals = sorted(sniff_literals())
        database = _database([re.escape(lit) for lit in literals], hyperscan.HS_FLAG_SINGLEMATCH)
        _SNIFFING[key] = (literals, database)
    return _SNIFFING[key]


def scan_file(path: str | os.PathLike[str], fmt: Format, default_date: date | None = None,
              file_year: int | None = None, file_date: date | None = None) -> tuple[list[Event], LineStats, Clock]:
    """All events of a plain (uncompressed) log file, as `engine.scan` gives them."""
    events: list[Event] = []
    scanner = Scanner(fmt, default_date, file_year, file_date)
    for batch in _scan(path, scanner, every_access=True):
        events.extend(batch)
    events.extend(scanner.finish())
    return events, scanner.stats, scanner.clock


def iter_file(path: str | os.PathLike[str], scanner: Scanner,
              normalised: dict[int, list[Line]] | None = None, cut: list[Truncated] | None = None) -> Iterator[Event]:
    """The events of a file, streamed, for `compact.compact`: every event it keeps, but
    without the access lines it would drop (left unread). `scanner` from `new_scanner`
    holds stats and clock; `normalised` (from `read_head`) saves normalising lines again.
    `cut`: where a file that shrinks while it is read says so (the events of the windows
    read before are kept); without it, Truncated is raised."""
    try:
        for batch in _scan(path, scanner, every_access=False, normalised=normalised):
            yield from batch
    except Truncated as exc:
        if cut is None:
            raise
        cut.append(exc)
    yield from scanner.finish()


def new_scanner(fmt: Format, default_date: date | None = None, file_year: int | None = None,
                file_date: date | None = None) -> Scanner:
    """The incremental engine's scanner, which this engine feeds (`iter_file`)."""
    return Scanner(fmt, default_date, file_year, file_date)


class Truncated(Exception):
    """The file got shorter while it was read (logrotate's copytruncate): the events of the
    windows read before stand; `parse` says so in one line."""

    def __init__(self, at: int, size: int) -> None:
        super().__init__(f"the file shrank while it was read (rotated with copytruncate?): it ends at byte {at:,} "
                         f"of the {size:,} it had; what was read before is kept")
        self.at, self.size = at, size

    def __reduce__(self) -> tuple[type, tuple[int, int]]:
        return type(self), (self.at, self.size)


def _read_at(fd: int, pos: int, size: int, whole: int) -> bytes:
    """`size` bytes of the file at `pos`, read (not mapped: a mapped page that a truncation
    removes is a SIGBUS, a read of it is short); Truncated when the file has fewer now.
    `whole`: the file's size when reading began."""
    data = os.pread(fd, size, pos)
    while len(data) < size:
        more = os.pread(fd, size - len(data), pos + len(data))
        if not more:
            raise Truncated(pos + len(data), whole)
        data += more
    return data


def _scan(path: str | os.PathLike[str], scanner: Scanner, every_access: bool,
          normalised: dict[int, list[Line]] | None = None) -> Iterator[list[Event]]:
    pre = prefilter(scanner.fmt)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return
        state = _State(scanner, pre, every_access, normalised or {})
        for found, data in _scanned(fh.fileno(), size, pre):
            try:
                events = state.window(found, data)
            except UnsureDate as exc:  # a stamp the clock would complete from skipped lines
                raise NeedExact(str(exc)) from None
            yield events


class _Window:
    """What the scan of one window [base, end) of the file found, before any engine state
    comes in: the candidate lines and how many lines precede each (so the window can be
    scanned in another process). Offsets inside it count from `base`."""

    __slots__ = ("base", "candidates", "end", "newlines")

    def __init__(self, base: int, end: int, candidates: list[tuple[int, int, int, list[int]]], newlines: int) -> None:
        self.base, self.end = base, end
        self.candidates = candidates  # (line start, line end, newlines from the window's start, patterns)
        self.newlines = newlines  # in the whole window


# From this size on, windows are scanned by a pool of forked processes, one per core, while
# this one feeds the engine in order: the scan is nearly all of a long log's time.
PARALLEL_FROM = 64 << 20
_TAIL = 1 << 16  # bytes read back at a time to find a window's last line end


def _bounds(fd: int, size: int) -> list[tuple[int, int]]:
    """The windows: `WINDOW` bytes each, cut after their last newline."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    while pos < size:
        end = min(size, pos + WINDOW)
        if end < size:
            cut, high = -1, end
            while cut < 0 and high > pos:
                low = max(pos, high - _TAIL)
                found = _read_at(fd, low, high - low, size).rfind(b"\n")
                cut, high = (low + found if found >= 0 else -1), low
            if cut < 0:  # no line ends in a whole window: longer than any log line
                raise NeedExact("a line longer than the scan window")
            end = cut + 1
        bounds.append((pos, end))
        pos = end
    return bounds


def _scanned(fd: int, size: int, pre: _Prefilter) -> Iterator[tuple[_Window, bytes]]:
    """Each window's scan and its bytes, in order."""
    bounds = _bounds(fd, size)
    jobs = _scan_jobs(size)
    if jobs <= 1:
        for pos, end in bounds:
            data = _read_at(fd, pos, end - pos, size)
            yield _scan_window(data, pre, pos), data
        return
    from firedup.core.pool import ordered_map

    _FORKED[:] = [(fd, size, pre)]  # what the forked workers scan with
    try:
        # a worker that dies scans nothing: its window is scanned here instead
        for (pos, end), found in zip(bounds, ordered_map(_scan_forked, bounds, jobs, _scan_here), strict=True):
            yield found, _read_at(fd, pos, end - pos, size)
    finally:
        _FORKED.clear()


_FORKED: list[tuple[int, int, _Prefilter]] = []


def _scan_forked(bounds: tuple[int, int]) -> _Window:
    fd, size, pre = _FORKED[0]
    pos, end = bounds
    return _scan_window(_read_at(fd, pos, end - pos, size), pre, pos)


def _scan_here(bounds: tuple[int, int], _why: str) -> _Window:
    return _scan_forked(bounds)


def _scan_jobs(size: int) -> int:
    """Processes to scan a file of `size` bytes with: one per core for big files, where
    processes can be forked (Linux), and not from inside a pool's worker (parse's own)."""
    if size < PARALLEL_FROM or sys.platform != "linux":
        return 1
    import multiprocessing

    from firedup.core.pool import in_worker

    if multiprocessing.current_process().daemon or in_worker():
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return min(cores, 8)


def _scan_window(mm: bytes, pre: _Prefilter, base: int) -> _Window:
    """Scan the window `mm` (whole lines, at `base` in the file): its candidate lines, and the
    line count up to each.

    The window is scanned piece by piece (`_SCAN_PIECE`, cut at line ends), and each piece's
    newlines are counted right after its scan, while its bytes are still in the CPU cache:
    a tenth less time than scanning the whole window and then reading it again to count."""

    pos, end = 0, len(mm)
    _check_line_lengths(mm, pos, end)
    hits: list[int] = []
    ids: list[int] = []

    def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> None:
        hits.append(stop)
        ids.append(pattern)

    counter = _NewlineCounter(mm, pos, end)
    candidates: list[tuple[int, int, int, list[int]]] = []
    line_end = pos - 1
    counted, newlines = pos, 0
    view = memoryview(mm)
    try:
        low = pos
        while low < end:
            high = min(end, low + _SCAN_PIECE)
            if high < end:
                cut = mm.rfind(b"\n", low, high)
                high = cut + 1 if cut >= 0 else mm.find(b"\n", high, end) + 1 or end
            piece = view[low:high]
            try:
                pre.database.scan(cast(bytes, piece), match_event_handler=on_match)  # any buffer will do
            finally:
                piece.release()
            for stop, pattern in sorted(zip(hits, ids, strict=True)):
                at = low + max(stop - 1, 0)  # the match's last byte
                if at > line_end:  # on a line after the last candidate's
                    before = mm.rfind(b"\n", low, at)
                    after = mm.find(b"\n", at, high)
                    start, line_end = (low if before < 0 else before + 1), (high if after < 0 else after)
                    newlines += counter.count(counted, start)
                    counted = start
                    candidates.append((start, line_end, newlines, []))
                candidates[-1][3].append(pattern)
            hits.clear()
            ids.clear()
            newlines += counter.count(counted, high)
            counted = low = high
    finally:
        view.release()
    return _Window(base, base + end, candidates, newlines)


# Bytes scanned at a time inside a window: small enough that counting its newlines right
# after finds them in the CPU cache.
_SCAN_PIECE = 1 << 18
_COUNT_PIECE = 1 << 18  # bytes compared at a time when counting newlines


class _NewlineCounter:
    """Newlines in byte ranges of the window [base, end) of `mm`: a short range by a copy and
    `bytes.count` (a numpy call costs a microsecond before it compares a byte: six times a
    copy of a few lines), a long one in pieces whose comparison stays in the CPU cache (a
    third faster than comparing a whole window at once)."""

    def __init__(self, mm: bytes, base: int, end: int) -> None:
        import numpy as np

        self.mm, self.base = mm, base
        self.chunk = np.frombuffer(mm, dtype=np.uint8, count=end - base, offset=base)
        self.flags = np.empty(_COUNT_PIECE, dtype=bool)
        self.equal, self.count_nonzero = np.equal, np.count_nonzero

    def count(self, start: int, stop: int) -> int:
        if stop - start <= _COPY_COUNT:
            return self.mm[start:stop].count(b"\n")
        total = 0
        chunk, out, stop = self.chunk, self.flags, stop - self.base
        for at in range(start - self.base, stop, _COUNT_PIECE):
            part = chunk[at: min(at + _COUNT_PIECE, stop)]
            flags = out[: len(part)]
            self.equal(part, 10, out=flags)
            total += int(self.count_nonzero(flags))
        return total


_COPY_COUNT = 4096  # bytes up to which a range's newlines are counted on a copy


def _check_line_lengths(mm: bytes, pos: int, end: int) -> None:
    """NeedExact if a line of [pos, end) is longer than `MAX_LINE_BYTES` (the incremental
    engine reports it). Such a line holds a whole block of half that size with no newline,
    so only a window with such a block is measured line by line."""
    block = MAX_LINE_BYTES // 2
    if all(mm.find(b"\n", at, min(at + block, end)) >= 0 for at in range(pos, end, block) if end - at >= block):
        return
    import numpy as np

    chunk = np.frombuffer(mm, dtype=np.uint8, count=end - pos, offset=pos)
    newlines = np.flatnonzero(chunk == 10)
    if mm[end - 1] != 10:
        newlines = np.append(newlines, end - pos - 1)
    if int(np.diff(newlines, prepend=-1).max()) > MAX_LINE_BYTES:
        raise NeedExact("a line longer than the limit")


def _kubectl_key(stamp: bytes, frac: bytes | None) -> bytes:
    """A collector's stamp as `YYYY-MM-DDTHH:MM:SS` and six digits of a second (what the
    engine keeps of it): keys whose order is the times' order."""
    return bytes(stamp + (frac or b"")[:6].ljust(6, b"0"))


def _valid_stamp(key: bytes) -> bool:
    """Whether a `_State._stamp_key` is a real time: the engine gives a line with an invalid
    collector stamp an inherited time, which does not count for a run's span."""
    try:
        datetime(int(key[0:4]), int(key[5:7]), int(key[8:10]), int(key[11:13]), int(key[14:16]), int(key[17:19]))
    except ValueError:
        return False
    return year_ok(int(key[0:4]))


class _State:
    """The scan's place in the file: the next line to account for (its offset and number),
    and which access lines are still worth reading (`AccessNeeds`). Lines are read by offset;
    their numbers come from the newlines counted up to each candidate (`_Window`), and for
    the few other lines read, from the nearest line whose number is known."""

    def __init__(self, scanner: Scanner, pre: _Prefilter, every_access: bool,
                 normalised: dict[int, list[Line]]) -> None:
        self.scanner = scanner
        self.normalised = normalised
        self.pre = pre
        self.mm = b""  # the window being read
        self.clock = scanner.clock
        self.number = 1  # physical number of the next line not accounted for
        self.every_access = every_access
        self.needs = AccessNeeds(scanner.fmt.vocab)

    def window(self, found: _Window, data: bytes) -> list[Event]:
        """Events of one scanned window (its bytes `data`), which starts and ends at line
        boundaries; offsets below count from its start."""

        self._out: list[Event] = []
        self.mm = data
        base, end = 0, len(data)
        self._base, self._end = base, end
        self._counter = _NewlineCounter(self.mm, base, end)
        self._first = self.number  # the number of the window's first line
        self._next = base  # where the next line not accounted for starts
        # line starts whose preceding newlines (from `base`) are known, in order
        self._known = [base, *(c[0] for c in found.candidates), end]
        self._known_count = [0, *(c[2] for c in found.candidates), found.newlines]
        for start, line_end, _newlines, patterns in found.candidates:
            self._access_lines(start)
            self._full(start, line_end, self.pre.rules_for(frozenset(patterns)))
        self._access_lines(end)
        self._skip_to(end)
        del self._counter
        self.mm = b""
        return self._out

    # -- lines of the window ---------------------------------------------------------------
    def _line_around(self, at: int) -> tuple[int, int]:
        """The line holding byte `at`: where it starts, and where it ends (its newline, or the
        window's end for a last line without one)."""
        before = self.mm.rfind(b"\n", self._base, at)
        after = self.mm.find(b"\n", at, self._end)
        return (self._base if before < 0 else before + 1), (self._end if after < 0 else after)

    def _newlines_before(self, start: int) -> int:
        """Newlines from the window's start to `start` (a line start), counted from the
        nearest point where the count is known: the next line to account for, or a candidate."""
        known, counts = self._known, self._known_count
        i = bisect.bisect_left(known, start)
        if i < len(known) and known[i] == start:
            return counts[i]
        below, below_count = known[i - 1], counts[i - 1]
        if self._next <= start and self._next > below:
            below, below_count = self._next, self.number - self._first
        if i < len(known) and known[i] - start < start - below:
            return counts[i] - self._counter.count(start, known[i])
        return below_count + self._counter.count(below, start)

    def _text(self, start: int, end: int) -> str:
        return self.mm[start:end].decode("utf-8", errors="replace").rstrip("\r").strip()

    def _read(self, start: int, end: int, number: int) -> list[Line]:
        """The logical lines of the line [start, end), numbered `number`, as the incremental
        engine reads them. A line no marker flagged only needs stripping, unless decorations
        went unflagged (`_Prefilter.decorations`): then it is normalised (`read_head` may have)."""
        if not self.pre.decorations:
            return [Line(number, self._text(start, end))]
        lines = self.normalised.pop(number, None)
        return lines if lines is not None else normalise(self.mm[start:end].decode("utf-8", errors="replace"), number)

    def _message(self, start: int, end: int) -> str:
        """The text of an unflagged line, as `_read` gives it (one logical line)."""
        return self._read(start, end, 0)[0].text if self.pre.decorations else self._text(start, end)

    # -- feeding ---------------------------------------------------------------------------
    def _emit(self, events: list[Event]) -> None:
        step = self.needs.step
        for event in events:
            step(event)
        self._out.extend(events)

    def _full(self, start: int, end: int, rules: tuple[Rule, ...] | None) -> None:
        """The line [start, end) through the engine: first the lines since the last one it saw."""
        self._skip_to(start)
        self._emit(self._feed(start, end, rules))
        self._next = min(end + 1, self._end)
        self.number += 1

    def _feed(self, start: int, end: int, rules: tuple[Rule, ...] | None) -> list[Event]:
        """Feed a line found by the scan through the incremental engine's own code."""
        if rules is not None:
            # No marker: one logical line, its rule literals all in the raw line (see _markers)
            (line,) = self._read(start, end, self.number)
            pre = self.pre
            if pre.access_rule is not None and pre.access_rule not in rules \
                    and any(lit in line.text for lit in pre.access_rule.literals):
                rules = pre.with_access(rules)
            return self.scanner.feed(line, rules)
        lines = self.normalised.pop(self.number, None)
        if lines is None:
            lines = normalise(self.mm[start:end + 1].decode("utf-8", errors="replace"), self.number)
        out: list[Event] = []
        for line in lines:
            out.extend(self.scanner.feed(line))
        return out

    def _access_lines(self, high: int) -> None:
        """Read the access lines before offset `high` (a line start) that `compact` may keep
        (AccessNeeds; the earliest and latest by a collector's clock: `_spanning_access`),
        and the last of them; the others stay unread."""
        pre = self.pre
        if pre.access_rule is None:
            return  # its literal is in the scan: its lines are candidates like any other
        low = self._next
        while low < high:
            every = self._every_line()
            if every:
                at = self._find(low, high)
            elif self.needs.request or self.needs.health:
                at = self._find_request_or_health(low, high)
            else:
                break
            if at < 0:
                break
            start, end = self._line_around(at)
            if not every:
                self._spanning_access(low, start)  # the access lines before it stay unread
            self._full(start, end, pre.access_rules)
            low = self._next
        if low < high and not self.every_access:
            self._spanning_access(low, high)
            self._last_access(self._next, high)

    def _spanning_access(self, low: int, high: int) -> None:
        """Read the access lines in [low, high) whose time may be the earliest or the latest
        of their stretch by a collector's clock, which `compact` keeps (its point 4): the
        first with the earliest and the first with the latest stamp. Only decorated lines go
        unread with such a stamp (`skips_decorations`); until an own-clock line comes, or from
        when one with a collector's stamp too has given the offset, it dates them, and their
        times are in their stamps' order (the offset stays until an own-clock line)."""
        if not self.pre.decorations or not self.scanner.collector_times_count:
            return
        assert self.pre.access_line is not None  # decorations and access literals: a format with access lines
        stamped: list[tuple[bytes, int, int]] = []  # (the stamp as sortable text, line start, end)
        # every access line of the stretch in one search (a thousand in a log behind kubectl: a Python loop
        # of finds per line was a third of its events' time); a stamp other than kubectl's at
        # the line's start is read by `_stamp_key`, from the normalised line
        for m in self.pre.access_line.finditer(self.mm, low, high):
            start, end = m.span()
            key = _kubectl_key(m[1], m[2]) if m[1] is not None else self._stamp_key(start, end)
            if key is not None:
                stamped.append((key, start, end))
        chosen: set[tuple[int, int]] = set()
        for order in (sorted(stamped, key=itemgetter(0)), sorted(stamped, key=itemgetter(0), reverse=True)):
            # sorted() is stable, with reverse too: of equal stamps the first comes first
            for key, start, end in order:
                if _valid_stamp(key) and self.scanner.makes_event(self._message(start, end), self.pre.access_rules):
                    chosen.add((start, end))
                    break
        for start, end in sorted(chosen):
            self._full(start, end, self.pre.access_rules)

    def _stamp_key(self, start: int, end: int) -> bytes | None:
        """`_kubectl_key` of the collector's stamp that `normalise` finds on the unflagged line
        [start, end), one without kubectl's stamp at its start (the access-line search reads
        that one); None without one."""
        outer = self._read(start, end, 0)[0].outer
        if outer is None:
            return None
        if outer.year is None:  # never unflagged (see _decorated_markers); its year would need the clock
            raise NeedExact("a year-less collector stamp on an unread line")
        return _kubectl_key(f"{outer.year:04d}-{outer.month:02d}-{outer.day:02d}T{outer.time}".encode(), outer.frac.encode())

    def _every_line(self) -> bool:
        """Whether any access line may be kept now. Waiting only for the first request after
        `ready` is not that where the scan can tell requests from probes (`request_database`):
        a server probed every second for weeks logs millions of probes before it."""
        needs = self.needs
        if self.every_access or needs.first or needs.window > 0:
            return True
        return needs.request and self.pre.request_database is None

    def _find_request_or_health(self, low: int, high: int) -> int:
        """The first line in [low, high) that may be the request or the `/health` probe still
        wanted; -1 when there is none."""
        found = []
        if self.needs.health:
            found.append(self._find_health(low, high))
        if self.needs.request:
            found.append(self._find_request(low, high))
        found = [at for at in found if at >= 0]
        return min(found) if found else -1

    def _find_request(self, low: int, high: int) -> int:
        """Where in [low, high) the first line that may be a request (not a probe) is."""
        import hyperscan

        hit: list[int] = []

        def on_match(pattern: int, start: int, stop: int, flags: int, context: Any) -> bool:
            hit.append(stop)
            return True  # the first is enough

        view = memoryview(self.mm)
        piece = view[low:high]
        try:
            self.pre.request_database.scan(cast(bytes, piece), match_event_handler=on_match)
        except hyperscan.ScanTerminated:
            pass
        finally:
            piece.release()
            view.release()
        return low + max(hit[0] - 1, 0) if hit else -1

    def _find(self, low: int, high: int) -> int:
        found = [at for lit in self.pre.access_literals if (at := self.mm.find(lit, low, high)) >= 0]
        return min(found) if found else -1

    def _find_health(self, low: int, high: int) -> int:
        """The first line in [low, high) with a `/health` request on it (an access literal too)."""
        probe = HEALTH_PATH.encode()
        while low < high:
            at = self.mm.find(probe, low, high)
            if at < 0:
                return -1
            start, end = self._line_around(at)
            if any(self.mm.find(lit, start, end) >= 0 for lit in self.pre.access_literals):
                return at
            low = end + 1
        return -1

    def _last_access(self, low: int, high: int) -> None:
        """Read the last access event among the unread lines in [low, high): `compact` keeps
        the last before every other event (and the stream's last)."""
        pre = self.pre
        while low < high:
            found = [at for lit in pre.access_literals if (at := self.mm.rfind(lit, low, high)) >= 0]
            if not found:
                return
            start, end = self._line_around(max(found))
            if self.scanner.makes_event(self._message(start, end), pre.access_rules):
                self._full(start, end, pre.access_rules)
                return
            high = start

    def _skip_to(self, stop: int) -> None:
        """Account for the lines from the next one up to offset `stop` (a line start, or the
        window's end): proved inert by the scan, or access lines `compact` would drop."""
        first = self._next
        if stop <= first:
            return
        count = self._newlines_before(stop) - (self.number - self._first)
        if self.mm[stop - 1] != 10:
            count += 1  # the file's last line, without a newline
        scanner = self.scanner
        if scanner.watching:
            self._walk(first, stop, count)
            return
        if self.pre.decorations:
            self._skip_clockless(first, stop, count)
            return
        first_own: tuple[Line, Parsed] | None = None
        if scanner.wants_first:
            start, number = first, self.number
            while start < stop:
                end = self.mm.find(b"\n", start, stop)
                end = stop if end < 0 else end
                line = Line(number, self._text(start, end))
                parsed = scanner.split(line)
                if parsed.own_clock and parsed.ts is not None:
                    first_own = (line, parsed)
                    break
                start, number = end + 1, number + 1
        last_own = None
        end = stop - 1 if self.mm[stop - 1] == 10 else stop
        number = self.number + count - 1
        while end >= first:
            before = self.mm.rfind(b"\n", first, end)
            start = first if before < 0 else before + 1
            line = Line(number, self._text(start, end))
            parsed = scanner.split(line)
            if parsed.own_clock and parsed.ts is not None:
                last_own = (parsed.ts, number)
                if start > first:
                    # dated lines before it went unread: the clock's latest stamp is a guess now
                    self.clock.history_skipped = True
                break
            end, number = start - 1, number - 1
        self._emit(scanner.skip(count, self.number + count - 1, first_own, last_own))
        self._next = stop
        self.number += count

    def _skip_clockless(self, first: int, stop: int, count: int) -> None:
        """`_skip_to` for a format that `skips_decorations`: no unread line has a clock of the
        engine's own, so none moves the last own stamp (nothing to read back, no stamp of a
        skipped line the clock would miss: `Clock.history_skipped` stays false). Such a line changes
        the engine's state only by a collector's stamp, and only while
        `Scanner.collector_stamps_count` (before any own-clock line, or until a run's first
        line is marked): then lines are read, in order, until it no longer does."""
        scanner = self.scanner
        access_rules = self.pre.access_rules
        start, number = first, self.number
        while start < stop and scanner.collector_stamps_count:
            end = self.mm.find(b"\n", start, stop)
            end = stop if end < 0 else end
            for line in self._read(start, end, number):
                self._emit(scanner.quiet_line(line, access_rules))
            start, number = end + 1, number + 1
        self._emit(scanner.skip(count, self.number + count - 1, None, None))
        self._next = stop
        self.number += count

    def _walk(self, first: int, stop: int, count: int) -> None:
        """`_skip_to` during a start-up: every line is read, in order, so that silences are
        measured on the lines the incremental engine sees and unknown lines can be mined
        (`Scanner.quiet_line`). A start-up is a few thousand lines; the runtime traffic after
        `ready`, nearly all of a long log, is still skipped unread."""
        scanner = self.scanner
        access_rules = self.pre.access_rules
        start, number = first, self.number
        while start < stop:
            end = self.mm.find(b"\n", start, stop)
            end = stop if end < 0 else end
            for line in self._read(start, end, number):
                self._emit(scanner.quiet_line(line, access_rules))
            start, number = end + 1, number + 1
            if not scanner.watching and start < stop:
                # the start-up ran past `engine.WATCH_LINES`: the rest of the stretch is skipped unread
                self._emit(scanner.skip(number - self.number, number - 1, None, None))
                self._next = start
                self.number = number
                self._skip_to(stop)
                return
        self._emit(scanner.skip(count, self.number + count - 1, None, None))
        self._next = stop
        self.number += count

"""The batch engine's scan of a format: which lines of a log it must read (`batch`).

One Hyperscan database per format (`Prefilter`) marks the lines holding a rule literal, and
those whose reading needs the full normaliser or the engine's clock in order: a collector
prefix (`collectors.COLLECTORS`, by what starts it), colour, a redraw, a progress bar, a header
whose clock depends on earlier lines. Decorated lines of a format whose clock headers are all
read in order (`skips_decorations`) mark nothing when they have the shapes the engine may leave
unread (`_decorated_markers` states the guarantee). Databases are kept in the user's cache.
"""

from __future__ import annotations

import contextlib
import os
import re
import zlib
from pathlib import Path
from typing import Any

from firedup.formats.base import Format, Header, Rule
from firedup.read.collectors import COLLECTOR, COLLECTORS
from firedup.read.compact import ACCESS
from firedup.read.sources import _BAR, ANSI_PATTERN

# kubectl's stamp at a line's start, as `sources.strip_outer` reads it (`Prefilter.access_line`)
_KUBECTL_AT_START = re.compile(rb"[ \t\r\f\v]*(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z ")

# Collector prefixes as `sources.strip_outer` reads them (`collectors.COLLECTORS`), reduced
# to what starts them, in the table's order.
PREFIX_STARTS = tuple(collector.start for collector in COLLECTORS)
# A process tag behind a wrapper, as `formats.wrappers.PROC_INSIDE` finds it; not one behind
# kubectl's stamp (its `Z`), which `sources` strips with the stamp.
_PROC_BEHIND = r"[^Z \t\r\f\v\x1b\n][ \t]\([A-Za-z_][\w-]*(?: rank=\d+| [A-Z]+\d+(?:_[A-Z]+\d+)*)? pid=\d"
# What every line `_PROC_BEHIND` marks holds (the tag's last character, then ` pid=` and a
# digit), led by a literal: Hyperscan tries `_PROC_BEHIND` after every ` (` (a
# decode line has one, `(token/s)`), which cost a sixth of the scan; ` pid=` is rare
# in a log whose lines carry no process tag, and the lines it marks are then checked by
# `_PROC_BEHIND` itself (`Prefilter.verify`).
_PROC_BEHIND_LEAD = r"[\w-] pid=\d"
# The decorations a format whose unread lines carry no clock may leave unread (`_decorated_markers`).
DECORATION_STARTS = frozenset(collector.start for collector in COLLECTORS if collector.decoration)
_LINE_START = r"^[ \t\r\f\v]*"  # normalise() strips indentation before reading prefixes


class Prefilter:
    """One compiled scan for a format: rule literals plus the marks of lines to read."""

    def __init__(self, fmt: Format) -> None:
        import hyperscan

        access = [rule for rule in fmt.parsing.rules if rule.name == ACCESS]
        self.access_rule: Rule | None = access[0] if len(access) == 1 else None
        if self.access_rule is not None and any(
                lit in other.literals for other in fmt.parsing.rules if other is not self.access_rule
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
        literals = sorted({lit for rule in fmt.parsing.rules for lit in rule.literals} - unread)
        self.rules_of: list[tuple[Rule, ...]] = [
            tuple(rule for rule in fmt.parsing.rules if lit in rule.literals) for lit in literals]
        self.literal_count = len(literals)
        # decorated lines may go unread: every line read is then read by `normalise`
        self.decorations = skips_decorations(fmt)
        patterns = [re.escape(lit) for lit in literals]
        patterns += _markers(fmt)
        # pattern id -> what a line it marks must also match (`_PROC_BEHIND_LEAD`), else the
        # mark does not count: where process tags decorate the lines (`skips_decorations`),
        # every line holds ` pid=`, and the exact pattern stays in the scan
        self.verify: dict[int, re.Pattern[bytes]] = {}
        if not self.decorations and patterns[-1] == _PROC_BEHIND:
            patterns[-1] = _PROC_BEHIND_LEAD
            self.verify[len(patterns) - 1] = re.compile(_PROC_BEHIND.encode())
        self._rules: dict[frozenset[int], tuple[Rule, ...] | None] = {}
        self._order = {id(rule): i for i, rule in enumerate(fmt.parsing.rules)}
        self._with_access: dict[tuple[int, ...], tuple[Rule, ...]] = {}
        self.database = compile_database([to_line_end(p) for p in patterns],
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

    return compile_database([f" {token} {re.escape(literal)}"], hyperscan.HS_FLAG_SINGLEMATCH)


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


def normalising_markers() -> list[str]:
    """Patterns of lines that `sources.normalise` does more to than strip them."""
    return [ANSI_PATTERN, *_REWRITING, *(_LINE_START + p for p in PREFIX_STARTS)]


# The id of the first collector-prefix mark in `normalising_markers()` (they come last).
FIRST_PREFIX_MARKER = len(normalising_markers()) - len(PREFIX_STARTS)


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
    return all(_read_in_order(header) or _clockless(header) for header in fmt.parsing.headers)


def _clockless(header: Header) -> bool:
    groups = header.regex.groupindex
    return "time" not in groups and "md" not in groups


def _markers(fmt: Format) -> list[str]:
    """Patterns of lines whose reading needs the full normaliser or an in-order clock."""
    if skips_decorations(fmt):
        out, start = _decorated_markers(), _MESSAGE_START
    else:
        out, start = normalising_markers(), _LINE_START
    out += [start + header.start for header in fmt.parsing.headers if _read_in_order(header)]
    # a line behind an unknown wrapper (`Format.layout`): the engine's own header after a blank,
    # or a process tag after a blank that does not end a collector's stamp. Every event behind a
    # wrapper then comes from a line the scan marks, which `compact` relies on (its point 5).
    out += list(dict.fromkeys(r"[ \t]" + start for header in fmt.parsing.headers if header.own_timed
                              for start in header.wrapped_starts))
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
    """`normalising_markers` for a format that `skips_decorations`: the same, but decorations
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
        *(closed + " ?" + p for p in PREFIX_STARTS),
        # collector prefixes, but kubectl's stamp and process tags; journald's stamp (it has no
        # year) wherever `sources.strip_outer` may take it as a line's first stamp
        *(_LINE_START + p for p in PREFIX_STARTS if p not in DECORATION_STARTS),
        rf"[ \t\r\f\v):|{_ODD_SPACE}]{COLLECTOR['journald'].start}",
    ]


def to_line_end(pattern: str) -> str:
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


def compile_database(patterns: list[str], flags: int) -> Any:
    """A Hyperscan block-mode database of `patterns` (pattern i reports id i), from the
    user's cache when an identical one was compiled before: compiling takes 50-100 ms, which
    every `firedup parse` of a big input would pay, loading a tenth of a millisecond.

    A cached file starts with what it was compiled from (Hyperscan's version, the CPU, the
    flags, the patterns), checked whole on loading: its name's checksum only finds it, so the
    name needs no cryptographic hash (importing hashlib cost ~3 ms a run)."""
    import hyperscan

    version = getattr(hyperscan, "__version__", "")
    identity = repr((version, _cpu(), flags, patterns)).encode()  # a repr holds no NUL byte
    key = f"{zlib.crc32(identity):08x}{zlib.adler32(identity):08x}"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "firedup" / f"hyperscan-{key}.db"
    with contextlib.suppress(OSError, hyperscan.HyperscanError):
        stored = cache.read_bytes()
        if stored.startswith(identity + b"\0"):
            database = hyperscan.loadb(stored[len(identity) + 1:], hyperscan.HS_MODE_BLOCK)
            database.scratch = hyperscan.Scratch(database)
            return database
    database = hyperscan.Database()
    database.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
                     elements=len(patterns), flags=[flags] * len(patterns))
    from firedup.core.files import write_bytes
    from firedup.errors import OutputError

    with contextlib.suppress(OSError, OutputError, hyperscan.HyperscanError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        # whole or not at all, even with parallel runs
        write_bytes(cache, identity + b"\0" + hyperscan.dumpb(database), named=False)
    return database


_COMPILED: dict[int, tuple[Format, Prefilter]] = {}


def for_format(fmt: Format) -> Prefilter:
    """The compiled scan of a format, once per process (compiling takes some 50 ms)."""
    found = _COMPILED.get(id(fmt))
    if found is None or found[0] is not fmt:
        found = _COMPILED[id(fmt)] = (fmt, Prefilter(fmt))
    return found[1]

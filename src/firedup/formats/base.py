"""The parts of a log format: headers, rules, and the format that bundles them.

A format is data, not code. Each engine module declares tables of `Header` and `Rule`
objects; the engines in `firedup.read.engine` (incremental, Python's `re`) and
`firedup.read.batch` (a Hyperscan scan for the rules' literals, then the same `re` rules)
both read the same tables. A rule's event is a kind declared in `firedup.formats.vocab` (or in
the format's own `kinds`), and each rule carries example lines a test runs through it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from firedup.core.health import REFUSED
from firedup.formats.convert import Converter, convert_field, json_unescape
from firedup.formats.vocab import ERROR_KILLED, HTTP_RUNNING, READY, RULE, SHARED, Kind, Vocabulary
from firedup.formats.wrappers import PROC_INSIDE, TIME_COLONS, WRAPPER_CHARS, wrapper_tag

# The lines of a log's head looked at for a harness's stamp before the engine's (`Format.wrapper_stamp`).
WRAPPER_STAMP_LINES = 64

if TYPE_CHECKING:
    from firedup.core.health import HealthSemantics, ReadyProbe, VersionGuess

@dataclass(frozen=True)
class Header:
    """How one family of lines is laid out before its message.

    Named groups the engines understand:
    `date` (YYYY-MM-DD), `md` (MM-DD, no year), `time` (HH:MM:SS), `frac` (fraction of a
    second), `ranks` (rank tags such as ` DP0 TP3`), `gpu` (old `[gpu_id=N]`), `level`,
    `proc` (a process tag such as `EngineCore_DP0`), and `msg`, the text the rules see.
    A header without `msg` is not allowed: rules always look at a message.
    """

    name: str
    pattern: str
    # "own": this is the engine's own clock; "foreign": a third-party logger whose clock
    # and date may differ (vLLM-style lines inside old SGLang logs), so it never sets the
    # run's first timestamp and never lends its time to lines without one.
    clock: str = "own"
    # "json": the message is the body of a JSON string (escapes to undo); an `exc` group,
    # when present, is the traceback the record carries, appended on its own lines.
    decode: str | None = None

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use, like `Rule.regex`: a log of one engine never needs the
        other engines' headers."""
        regex = re.compile(self.pattern)
        if "msg" not in regex.groupindex:
            raise ValueError(f"header {self.name!r} has no (?P<msg>...) group")
        return regex

    def __post_init__(self) -> None:
        if "(?P<msg>" not in self.pattern:
            raise ValueError(f"header {self.name!r} has no (?P<msg>...) group")
        if self.decode not in (None, "json"):
            raise ValueError(f"header {self.name!r}: decode must be None or 'json'")

    @cached_property
    def start(self) -> str:
        """The pattern's start, which every line of this header matches: up to its clock group
        (time, else month-day) when that group sits at the top level, else up to the message,
        without the leading `^` (callers anchor it where they look: a line's start after
        indentation, or after a wrapper's blank). Short, so cheap to look for everywhere."""
        cut = self.pattern.find("(?P<msg>")
        head = self.pattern[:cut] if cut > 0 else self.pattern
        for group in ("(?P<time>", "(?P<md>"):
            end = _top_level_group_end(head, head.find(group))
            if end is not None:
                head = head[:end]
                break
        return head[1:] if head.startswith("^") else head

    @property
    def wrapped_starts(self) -> list[str]:
        """Where this header may begin behind an unknown wrapper's blank (`Format.layout`): its
        `start`, with an optional opening bracket made required. A header loses
        its bracket where a paste cut a line's first character, at the line's start, never
        behind a wrapper that prefixed the whole line; and a blank then four digits is in every
        traffic line (` 200 OK`, `#token: 6410`), which the scan (`read.prefilter`) would
        otherwise check, a twelfth of a long log's scan. A blank and `[` is rare."""
        start = self.start
        return [r"\[" + start[len(_OPEN_BRACKET):] if start.startswith(_OPEN_BRACKET) else start]

    @cached_property
    def inner(self) -> re.Pattern[str]:
        """The header found anywhere (`match` at a position), not only at a line's start."""
        return re.compile(self.pattern[1:] if self.pattern.startswith("^") else self.pattern)

    @property
    def own_timed(self) -> bool:
        """Whether this is the engine's own layout with its own clock: a line of the engine that
        a wrapper may precede (a clockless header, such as uvicorn's `INFO:`, says too little
        to be found in the middle of a line)."""
        return self.clock == "own" and self.decode is None and "time" in self.regex.groupindex


_OPEN_BRACKET = r"\[?"


def _top_level_group_end(pattern: str, at: int) -> int | None:
    """Where the group opening at `at` closes, if it is not nested in another group and the
    pattern has no top-level alternation (so the pattern cut there still matches a prefix
    of every line the whole pattern matches)."""
    if at < 0:
        return None
    depth = 0
    in_class = escaped = False
    end: int | None = None
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            if i == at and depth:
                return None
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i > at and end is None:
                end = i + 1
        elif ch == "|" and depth == 0:
            return None
    return end


def required_literal(pattern: str) -> str:
    """The longest text every match of `pattern` holds: a run of plain characters outside any
    group, class and escape, none made optional by a repeat after it (`ab?c` holds `a` and `c`);
    "" where an alternation outside any group, or a flag (`(?i)`, `(?x)`), may leave it out. A
    string without it holds no match, so a cheap `in` may stand before a search."""
    if re.compile(pattern).flags & (re.IGNORECASE | re.VERBOSE) or _top_level_bar(pattern):
        return ""
    best, run = "", ""
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch in "*+?{":  # a repeat: the character before it may be missing
            best, run = max(best, run[:-1], key=len), ""
            i = _repeat_end(pattern, i)
        elif ch in "\\[(.^$":  # no plain character: an escape, a class, a group, any or an anchor
            best, run = max(best, run, key=len), ""
            i = _repeat_end(pattern, _atom_end(pattern, i))
        elif ch in ")]}|":
            return ""  # none such at the top level of a pattern that compiles: in doubt, no literal
        else:
            run += ch
            i += 1
    return max(best, run, key=len)


def _atom_end(pattern: str, i: int) -> int:
    """Where the item at `i` ends: an escape with the letters and digits after it (`\\x41`, and
    a plain `5` after `\\d` too: lost, never misread), a class, a group, or one character."""
    ch = pattern[i]
    if ch == "\\":
        i += 2
        while i < len(pattern) and pattern[i].isalnum():
            i += 1
        return i
    if ch == "[":
        i += 1
        if pattern.startswith("^", i):
            i += 1
        if pattern.startswith("]", i):
            i += 1
        while i < len(pattern) and pattern[i] != "]":
            i += 2 if pattern[i] == "\\" else 1
        return i + 1
    if ch == "(":
        depth = 0
        while i < len(pattern):
            if pattern[i] in "\\[":
                i = _atom_end(pattern, i)
                continue
            depth += {"(": 1, ")": -1}.get(pattern[i], 0)
            i += 1
            if depth == 0:
                return i
        return i
    return i + 1


def _repeat_end(pattern: str, i: int) -> int:
    """Past any repeats at `i` (`*`, `+?`, `{2,3}`; a `{` that is no repeat: to its `}` all the same)."""
    while i < len(pattern) and pattern[i] in "*+?{":
        if pattern[i] == "{":
            close = pattern.find("}", i)
            i = len(pattern) if close < 0 else close
        i += 1
    return i


def _top_level_bar(pattern: str) -> bool:
    """Whether `pattern` (one that compiles) has an alternation outside any group: a `|` between
    its top-level items, the walk `required_literal` makes (`_atom_end` steps over escapes,
    classes and groups)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "|":
            return True
        i = _atom_end(pattern, i)
    return False


# Lines holding a rule's literal that `Format.sniff_score` reads before it gives up on that rule.
SNIFF_TRIES = 20


@dataclass(slots=True)
class Layout:
    """A line as a format's headers read it: the header (None: none, a bare line), its groups,
    the message the rules see and its level; and, when an unknown wrapper came first, the
    wrapper's source tag (`wrapper_tag`) and a process tag it ended with."""

    header: Header | None
    groups: Mapping[str, Any]
    msg: str
    level: str | None = None
    wrapper: str | None = None
    proc: str | None = None
    pid: int | None = None
    # the header the line opened with when that was the wrapper's own stamp, the engine's
    # header behind it (two clocks on one line), and that header's groups
    opened_by: Header | None = None
    opening: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Example:
    """A line a rule must read, whole as the engine prints it (header and message), and
    fields its event must carry (a subset: the test checks these and the rule's own groups)."""

    line: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """One kind of line worth knowing about.

    `name` is the kind of event the line becomes: a kind declared in `firedup.formats.vocab`
    or in the format's own `kinds` (the format checks it when it is built); milestone names
    are the `parse --json` contract's (docs/contract.md). `examples` are real-shaped lines
    (`Example`, or a plain line) that tests/test_formats.py runs through the format: each must
    become this rule's event, with no earlier rule taking it first.
    `pattern` is searched in the message. Every line the pattern matches contains one of
    the `literal` strings; the engines test those before any regex runs. `fields` converts
    named groups (group name -> converter); groups not listed are kept as strings, and
    `const` adds fixed fields (such as which kind of graph a capture line is about).
    `starts_run` marks lines that open a new startup: "always" (a fresh server_args dump)
    or "after_end" (a process banner, which only starts a run after a ready or a crash).
    `rank` is a template over the named groups (`"TP{tp}"`) giving the rank of a line that
    names its own rank in the message but carries no rank prefix.
    Two `const` keys mean something to the timeline: `next_stage` (the phase a run is in
    right after this line, overriding the format's table) and `detail`.
    A group named `config_stated` whose converter returns a dict adds those flags to the
    run's config, below what the args dump says.
    `evidence` is what a line the rule matches says of the log's engine (`Format.sniff_score`): every
    rule is evidence of its format, 0.5 by default (its wording may turn up in another log now
    and then), more for the lines every start of this engine prints and no other program does
    (its args dump, its ready line: on the scale of the foreign engines' literals, `_foreign`),
    0 for lines other programs print too (uvicorn's, Python's, a progress bar's, a shell's).
    The defaults keep the most one engine's rules can add up to below what a start of the other
    shows in its first lines, so a head can settle early (`read.batch.settled_format`).
    """

    name: str
    pattern: str
    literal: str | tuple[str, ...]
    fields: Mapping[str, Converter] = field(default_factory=dict)
    const: Mapping[str, Any] = field(default_factory=dict)
    starts_run: str | None = None
    rank: str | None = None
    examples: Sequence[str | Example] = ()
    evidence: float = 0.5
    literals: tuple[str, ...] = field(init=False, repr=False, compare=False)

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use: most rules never meet their literal in a small log, and
        compiling every table's regexes at import would cost `firedup parse` ~0.1 s."""
        return re.compile(self.pattern)

    def __post_init__(self) -> None:
        lits = (self.literal,) if isinstance(self.literal, str) else tuple(self.literal)
        object.__setattr__(self, "literals", lits)
        if self.starts_run not in (None, "always", "after_end"):
            raise ValueError(f"rule {self.name!r}: starts_run must be None, 'always' or 'after_end'")
        if self.evidence < 0:
            raise ValueError(f"rule {self.name!r}: evidence must not be negative")
        object.__setattr__(self, "examples", tuple(self.examples))

    @property
    def samples(self) -> tuple[Example, ...]:
        """`examples`, each as an `Example`."""
        return tuple(e if isinstance(e, Example) else Example(e) for e in self.examples)

    def convert(self, groups: Mapping[str, str | None]) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.const)
        for key, value in groups.items():
            if value is None:
                continue
            conv = self.fields.get(key)
            if conv is None:
                out[key] = value
            else:
                convert_field(conv, key, value, out)
        return out


def opens_at(health: HealthSemantics) -> str:
    """The milestone after which the port accepts connections: the HTTP server's line, or
    ready for an engine that refuses connections until then."""
    return READY if health.starting == REFUSED else HTTP_RUNNING


@dataclass
class ArgsDump:
    """An engine's args line, read: the flags, whether the line was whole, and whether it
    lists only the flags that differ from the defaults (so the rest are the defaults)."""

    fields: dict[str, Any]
    complete: bool = True
    only_non_defaults: bool = False


@dataclass(frozen=True)
class Probing:
    """How to wait for an engine from outside, beyond what its health endpoint answers."""

    default_port: int
    listens_after: str  # what the engine finishes before anything answers on its port
    probe_timeout: int  # seconds one probe may take (k8s timeoutSeconds, curl --max-time)
    probe_timeout_why: str
    crash_markers: tuple[str, ...]  # fixed strings in the log that mean the start failed
    loud_body: bool = False  # say EMPTY in capitals: an engine whose empty body broke a wait loop


@dataclass(frozen=True)
class CacheLine:
    """A line that shows whether one of the engine's caches was cold or warm at this start.

    `event` is the rule's event name (`contains`, if set, must be in its text); `verdict` is
    "cold" or "warm" when the line alone says so, or "timed" when the line only says the
    cached work ran: cold if the span from the first such line to the next milestone after the
    last one is long (`timeline.silence.COLD_SECONDS`), warm if short, else unknown; or "spans"
    when the lines mark where each piece of the work begins and ends with the time their own
    logger printed: fields `step` ("begin" | "end"), `key` (which piece: a begin and an end of
    one key are a pair) and `at` (seconds of the day, `to_day_seconds`): cold when the pieces
    took long, warm when short, and each silence they fill says so.
    """

    kind: str
    event: str
    verdict: str
    contains: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in ("cold", "warm", "timed", "spans"):
            raise ValueError(f"cache line {self.event!r}: verdict must be cold, warm, timed or spans")


@dataclass(frozen=True)
class EngineClock:
    """A timeout of the engine itself (or of what launches or routes it) that a start-up must
    stay under, and which measured span it has to outlast.

    `covers`: "ready" (first line to ready), "phase:<name>" (that phase, summed over its spans
    on the slowest rank), or "longest-phase" (the longest single phase on any rank: a rank can
    wait that long in a collective for the others). `config_key` is the flag's key in the args
    line, so a run's own value can be read back; None for an environment variable or a flag of
    another program (the log does not show it). `default` in seconds, None when unset means
    no limit or one firedup does not know.
    """

    name: str  # as users write it: "--watchdog-timeout", "VLLM_ENGINE_READY_TIMEOUT_S"
    how: str  # how to set it, with {seconds}: "--watchdog-timeout {seconds}"
    covers: str
    default: float | None
    what: str  # what happens when it runs out
    config_key: str | None = None
    component: str = "engine"  # "engine" | "router" (a program in front of the engine)
    since: str | None = None


@dataclass(frozen=True)
class LaunchGap:
    """Seconds from launching the server process to its first timestamped line, where nothing
    in the log states the launch: imports print nothing with a time. `typical` is the estimate
    a run carries; `low`-`high` the range seen, whose top budgets allow for: `high` is the top
    on a cold page cache (a new node, the first start after boot: Python and the weights read
    from disk), `warm_high` the top with the page cache warm; `basis` says where the figures
    come from (docs/launch.md). `plausible`: the most a line stating the launch (a unit's
    `Started`, a container's start) may precede the first line and still be this run's."""

    low: float
    typical: float
    high: float
    basis: str
    warm_high: float | None = None
    plausible: float = 120.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.typical <= self.high:
            raise ValueError(f"launch gap: need 0 <= low <= typical <= high, got {self.low}, {self.typical}, {self.high}")
        if self.warm_high is not None and not self.typical <= self.warm_high <= self.high:
            raise ValueError(f"launch gap: need typical <= warm_high <= high, got {self.warm_high}")
        if self.plausible < self.high:
            raise ValueError(f"launch gap: a launch line must be plausible at least {self.high} s before, "
                             f"got {self.plausible}")


@dataclass(frozen=True)
class Parsing:
    """How the engine's lines read: layouts, rules, shared fields, ranks, its args line and flags."""

    headers: Sequence[Header]
    rules: Sequence[Rule]
    runtime_literals: Sequence[str] = ()
    # Patterns with one named group each, searched in the message of every matched line
    # to pick up values that many lines share (`avail mem=`, `mem usage=`).
    field_patterns: Sequence[tuple[str, Converter]] = ()
    # A level prefix some loggers put in front of the message (uvicorn's `INFO:     `).
    level_prefix: str | None = None
    # (pattern, template) pairs turning a process tag into a rank, e.g. Worker_TP1 -> TP1.
    proc_ranks: Sequence[tuple[str, str]] = ()
    # The values an engine uses for flags its launch command leaves out.
    config_defaults: Mapping[str, Any] = field(default_factory=dict)
    # Reads the `server_args` event's `args` text; None: firedup.core.config.read_server_args.
    read_args: Callable[[str], ArgsDump] | None = None
    # Adds the engine-neutral flags (tp_size, disable_cuda_graph, ...) to a merged config;
    # gets the config and the `config_inferred` notes, and updates both.
    derive_config: Callable[[dict[str, Any], dict[str, str]], None] | None = None


@dataclass(frozen=True)
class Meaning:
    """What the engine's events mean for its timeline: milestones, stages, phases, drafts, ranks, crashes."""

    # Milestones of this engine beyond the contract's that are lines of the model runner (so
    # they also end the launch phase and start the HTTP server's): its kinds declared so, and
    # names given here, which declares them as such kinds (a format defined outside firedup).
    milestones: frozenset[str] = frozenset()
    # Of those, the ones a log that shows the process start opens the runner's work with.
    runner_opens: tuple[str, ...] = ()
    # The phase a run is in right after each milestone, over the shared table.
    stage_after: Mapping[str, str] = field(default_factory=dict)
    # stage -> (flag, value, stage instead): a stage the config turned off (flag == value)
    # is skipped. Empty: the shared default (no graphs -> straight to the HTTP server).
    stage_skips: Mapping[str, tuple[str, Any, str]] = field(default_factory=dict)
    # Milestone -> phase, for phases the log reports only as a duration on the line that ends them.
    reported_phases: Mapping[str, str] = field(default_factory=dict)
    # Phases that span others, with the phases they span: stacked with the phases inside,
    # they would count the same seconds twice (cross-run views use the union: `umbrella_phases`).
    umbrella_phases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # A second weight load (dist init, KV pool) on the same rank is a speculative draft
    # model (an engine that repeats its runner for the draft). False: repeats are the same model.
    draft_by_repeat: bool = False
    # A regex over a weight load's `model_type` field naming a draft model's architecture.
    draft_model_types: str | None = None
    # Phases measured between milestones of one rank: (phase, begin events, end events);
    # the phase runs from the last begin before the first end that follows it.
    timestamp_phases: Sequence[tuple[str, tuple[str, ...], tuple[str, ...]]] = ()
    # The phase between the HTTP server starting and `ready` ("warmup" for an engine that
    # sends itself a warm-up request once it listens).
    after_http_phase: str = "http_start"
    # The event that means "the engine is ready" for a run without an HTTP server (offline
    # engine) when no args line says which kind of process this is.
    offline_ready: str | None = None
    # Headers whose args line means an offline engine (no HTTP server to wait for).
    offline_headers: frozenset[str] = frozenset()
    # True when scheduler lines carry a TP tag only if tp_size > 1: an untagged complete
    # startup then proves tp_size = 1. False: ranks are counted from process tags.
    rank_tags_only_when_parallel: bool = False
    # Milestones every rank prints, so the number of processes printing one is the world size.
    every_rank_prints: tuple[str, ...] = ()
    # (phase, regex over a traceback frame line): the function a crash happened in places it.
    frame_stages: Sequence[tuple[str, str]] = ()
    # A regex over error lines proving a crash inside graph capture (so graphs were on).
    capture_trace: str | None = None


@dataclass(frozen=True)
class Serving:
    """How the engine's server answers while it starts and how it dies: what `wait`, snippets and `replay` need."""

    # How the health endpoint answers while starting and once ready (firedup.core.health).
    health: HealthSemantics | None = None
    # What wait snippets need beyond `health`: port, probe timeout, crash markers.
    probing: Probing | None = None
    # The per-version readiness table (oldest row first): which route means ready, what a
    # version gets wrong, how long a probe takes. Snippets and `wait` read it (core.health).
    readiness: tuple[ReadyProbe, ...] = ()
    # Bounds on the engine version from one run's events, args and whether the args were
    # whole: the HTTP semantics `wait` and `replay` expect depend on it. None: not known.
    version_guess: Callable[[Iterable[Any], Mapping[str, Any], bool], VersionGuess] | None = None
    # Crash events after which the engine SIGKILLs its own process tree (exit status 137);
    # other deaths before ready exit with status 1.
    kills_tree_on: frozenset[str] = frozenset({ERROR_KILLED})
    # Why such a crash ends with status 137, for `replay` to say.
    tree_kill_note: str = "killed by a signal"


@dataclass(frozen=True)
class Timeouts:
    """The time a start-up has: the engine's own clocks and the gap before its first timed line."""

    # The engine's own clocks a start-up must stay under (watchdogs, ready timeouts, routers).
    clocks: tuple[EngineClock, ...] = ()
    # Seconds between launching the process and its first timestamped line, where no line states
    # the launch; None: not known for this engine (its runs' launch is then `unknown`).
    launch_gap: LaunchGap | None = None


@dataclass(frozen=True)
class Figure:
    """A published figure for what work costs once its fix is in place: `seconds` per run, or,
    where `per` is a regex, per line of the run it matches (a kernel shape DeepGEMM compiles),
    with its source (`owner/repo#N`, a doc, or the engine's own line)."""

    seconds: float
    source: str
    per: str = "run"  # "run", or a regex over the lines each costing `seconds`

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise ValueError(f"figure {self.source!r}: seconds must not be negative")


@dataclass(frozen=True)
class Remedy:
    """A cause of a slow start-up the engine's logs can show, and what removes it: what
    `timeline.advice` and `tables.advice` rank. `cause` is one of the engine-neutral causes
    (`timeline.advice.CAUSES`: `cache:<kind>` for each of `Caches.cache_kinds`, `graph_capture`,
    `load_weights`, ...); `proves` a regex over a line's message that shows it, each of
    `examples` a line it matches (tests/test_formats.py checks them), and every advice item's
    evidence is lines it matches. `phases`: where a cold cache of this kind works without a
    line of its own (a phase a warm twin runs much faster is then this cause). `warm`: the
    published cost once fixed, the basis of a saving where no twin is measured."""

    cause: str
    what: str
    fix: str
    proves: str
    examples: Sequence[str]
    phases: tuple[str, ...] = ()
    warm: Figure | None = None
    # Over a progress bar's redraw: the `size` group names what it captures (`bs=64`), so the
    # bar's steps time each size (graph capture: what trimming the largest sizes saves).
    sizes: str | None = None

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.proves)

    @cached_property
    def sizes_regex(self) -> re.Pattern[str] | None:
        return re.compile(self.sizes) if self.sizes else None

    def __post_init__(self) -> None:
        object.__setattr__(self, "examples", tuple(self.examples))
        if not self.examples:
            raise ValueError(f"remedy {self.cause!r}: give the lines that prove it (examples)")


@dataclass(frozen=True)
class Advice:
    """Crash advice naming the engine's flags (over crash.HINTS), and the remedies of slow starts."""

    # (crash category, phase or "*") -> advice naming this engine's flags; over crash.HINTS.
    hints: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # The words a hint's placeholders take for one run's flags ({graph_bs_flag}, ...).
    hint_words: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = None
    # The causes of a slow start this engine's logs show, each with its fix (timeline.advice).
    remedies: Sequence[Remedy] = ()
    # (crash category, regex over the error's text, advice naming this engine's flags): a cause
    # whose remedy is better known than its category's (a custom all-reduce that failed is a
    # "distributed" crash whose fix is a flag); over crash.SPECIFIC_HINTS and `hints`.
    cause_hints: Sequence[tuple[str, str, str]] = ()

    def remedy(self, cause: str) -> Remedy | None:
        return next((r for r in self.remedies if r.cause == cause), None)


@dataclass(frozen=True)
class Dating:
    """In-log evidence of the year, for stamps that print none (month-day, time only)."""

    # A regex whose `version` group finds the engine's version in the first lines of a log.
    version_text: str | None = None
    # (first version, last version, release date of the first "YYYY-MM-DD"), in version order:
    # a log of a version in the range was written on or after that date.
    releases: Sequence[tuple[str, str, str]] = ()
    # (literal, release date, why): a line that only versions released from that date print
    # (and no later ones: the date bounds the log from below, the guess is its first year).
    release_literals: Sequence[tuple[str, str, str]] = ()


@dataclass(frozen=True)
class Caches:
    """The caches the engine keeps across starts and the work it does without a line (timeline.silence)."""

    # Cache kind -> what it is, for every cache the engine keeps across starts ("torch.compile's
    # compiled graphs"). Each run gets a verdict per kind listed here.
    cache_kinds: Mapping[str, str] = field(default_factory=dict)
    # Lines that prove a cache cold or warm (or only that its work ran: "timed").
    cache_lines: Sequence[CacheLine] = ()
    # Phase -> (what the engine does there without printing, the cache kind whose cold start
    # a long silence there suggests, or None): names the probable work of a silence. A phase
    # listed with a kind also proves that kind warm when it is short (`WARM_SECONDS`).
    silent_work: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)


# `Format.layout` remembers the lines of up to this many characters, this many at a time.
_LAYOUT_MEMO_CHARS = 512
_LAYOUT_MEMO_LINES = 2048
# `Format.rank_from_proc` remembers this many process tags of at most so many characters at a time.
_PROC_RANK_MEMO, _PROC_RANK_MEMO_CHARS = 1024, 256


@dataclass(frozen=True)
class Format:
    """An engine's line layout and rules, plus how to recognise its logs.

    `sniff_score` weighs a sample of a file by its own rules: each rule that matches one of the
    sample's lines adds its `evidence` (one source: no second list of sniff strings to keep in
    step with the rules). The registry picks the highest score.
    `parsing.runtime_literals` are the substrings of runtime traffic (batch lines, access logs)
    that the engines may skip without running any rule.

    Everything else firedup knows about an engine is here too, in small groups by job (`meaning`,
    `serving`, `timeouts`, `advice`, `dating`, `caches`: a reader of one job reads one group),
    each field with a neutral default (an engine that declares nothing gets the contract's
    milestones and stages, no health semantics, the generic crash advice): no other module names
    an engine.
    """

    name: str
    # How the engine's lines read: the one group without a default (every format has rules).
    parsing: Parsing
    description: str = ""
    # How people write the engine's name ("SGLang"); "" means `name`. See `display`.
    title: str = ""
    # The engine's version range this module reads, as the description states it: "0.1-0.5.23".
    versions: str = ""
    # The kinds of event only this engine prints, with their meaning (`firedup.formats.vocab`);
    # its rules may name these and the shared ones. Their meaning fills the fields of `meaning`
    # that say it per name (`milestones`, `runner_opens`, `stage_after`, `reported_phases`).
    kinds: Sequence[Kind] = ()
    meaning: Meaning = field(default_factory=Meaning)
    serving: Serving = field(default_factory=Serving)
    timeouts: Timeouts = field(default_factory=Timeouts)
    advice: Advice = field(default_factory=Advice)
    dating: Dating = field(default_factory=Dating)
    caches: Caches = field(default_factory=Caches)
    # Every kind this format's events may have, the shared ones and its own: the sets the
    # reader and the timeline use are derived from it (`Vocabulary`). Set when built.
    vocab: Vocabulary = field(init=False, repr=False, compare=False)

    @property
    def display(self) -> str:
        """The engine's name as people write it, for messages."""
        return self.title or self.name

    # Compiled on first use: sniffing reads every format's table, parsing only one's.
    @cached_property
    def compiled_fields(self) -> tuple[tuple[re.Pattern[str], Converter, frozenset[str]], ...]:
        """(regex, converter, the fields it names): a rule's own fields are not looked for again."""
        return tuple((regex, c, frozenset(regex.groupindex)) for regex, c in
                     ((re.compile(p), c) for p, c in self.parsing.field_patterns))

    @cached_property
    def field_searches(self) -> tuple[tuple[re.Pattern[str], Converter, frozenset[str], str], ...]:
        """`compiled_fields`, each with the text its every match holds (`required_literal`): a
        message without it is not searched (most matched lines hold none of the fields)."""
        return tuple((regex, c, names, required_literal(regex.pattern)) for regex, c, names in self.compiled_fields)

    @cached_property
    def compiled_level(self) -> re.Pattern[str] | None:
        return re.compile(self.parsing.level_prefix) if self.parsing.level_prefix else None

    @cached_property
    def compiled_proc_ranks(self) -> tuple[tuple[re.Pattern[str], str], ...]:
        return tuple((re.compile(p), t) for p, t in self.parsing.proc_ranks)

    @cached_property
    def _own_timed_headers(self) -> tuple[Header, ...]:
        return tuple(h for h in self.parsing.headers if h.own_timed)

    @cached_property
    def _wrapped_start(self) -> re.Pattern[str] | None:
        """Where the engine's own header may begin behind a wrapper: a blank, then the start of
        one of its own timed headers (`Header.wrapped_starts`, groups unnamed to share one pattern)."""
        starts = list(dict.fromkeys(re.sub(r"\(\?P<\w+>", "(?:", start)
                                    for h in self._own_timed_headers for start in h.wrapped_starts))
        return re.compile(r"[ \t](?:" + "|".join(starts) + ")") if starts else None

    @cached_property
    def _layouts(self) -> dict[str, Layout]:
        return {}

    def layout(self, text: str) -> Layout:
        """`_lay_out`, remembered for short lines: the batch engine asks about a line before it
        feeds it (`Scanner.makes_event`), and a log repeats lines (a third of the calls over a
        folder of logs). A Layout is never changed in place (its readers `replace` it)."""
        memo = self._layouts
        laid = memo.get(text)
        if laid is None:
            laid = self._lay_out(text)
            if len(text) <= _LAYOUT_MEMO_CHARS:
                if len(memo) >= _LAYOUT_MEMO_LINES:
                    memo.clear()
                memo[text] = laid
        return laid

    def _lay_out(self, text: str) -> Layout:
        """How this format reads a line: its header at the line's start, as a rule; or behind an
        unknown wrapper (a harness's own prefix): the engine's own timed header found after a
        blank in the line's first WRAPPER_CHARS characters, whatever precedes it the wrapper
        (where the line also opens with a header, such as the wrapper's own stamp, the one
        behind it is the engine's); or, with no header of the engine's own there, after a
        wrapper that ends with a process tag (`(APIServer pid=1) INFO:     ...`); else bare."""
        opened: re.Match[str] | None = None
        for header in self.parsing.headers:
            m = header.regex.match(text)
            if m is not None:
                inner = self._behind_wrapper(text, m.start("msg"))
                if inner is None:
                    return self._read(header, m)
                opened = m
                break
        else:
            inner = self._behind_wrapper(text, 0)
        if inner is not None:
            at, found_header, found = inner
            laid = self._read(found_header, found, *self._wrapper(text[:at]))
            if opened is None or not opened.groupdict().get("time"):
                return laid
            return replace(laid, opened_by=header, opening=opened.groupdict())
        tag = PROC_INSIDE.search(text, 0, WRAPPER_CHARS)
        if tag is not None:
            rest = text[tag.end():]
            wrapper = wrapper_tag(text[:tag.start()])
            proc, pid = tag["proc"], int(tag["pid"])
            for header in self.parsing.headers:
                after = header.regex.match(rest)
                if after is not None:
                    return self._read(header, after, wrapper, proc, pid)
            return Layout(None, {}, rest, None, wrapper, proc, pid)
        return Layout(None, {}, text)

    def _behind_wrapper(self, text: str, low: int) -> tuple[int, Header, re.Match[str]] | None:
        """The first place behind a blank, from `low` (a header's message, or the line's start)
        to the line's WRAPPER_CHARS-th character, where one of the engine's own timed headers
        matches. Linear: each place tried fails within a header's start, so a line costs the
        same however long it is."""
        start = self._wrapped_start
        pos = low - 1 if low else 0
        if start is None or TIME_COLONS.search(text, pos, WRAPPER_CHARS) is None:
            return None  # every such header holds a time: the one cheap test nearly every line fails
        while True:
            m = start.search(text, pos, WRAPPER_CHARS)
            if m is None:
                return None
            at = m.start() + 1
            for header in self._own_timed_headers:
                found = header.inner.match(text, at)
                if found is not None:
                    return at, header, found
            pos = at

    def wrapper_stamp(self, texts: Sequence[str]) -> Header | None:
        """The header of this format that a harness writes its own stamp with before the
        engine's (`[2026-06-02 14:22:57] [harness] [INFO] [2026-06-02 14:21:10] ...`), seen in
        the first of `texts` (a log's head): its lines with that header alone (the engine's
        bare lines, re-logged) are on the harness's clock, not the engine's. None: no such."""
        for text in texts[:WRAPPER_STAMP_LINES]:
            first = TIME_COLONS.search(text, 0, WRAPPER_CHARS)
            if first is None or TIME_COLONS.search(text, first.end(), WRAPPER_CHARS) is None:
                continue  # one time in the line's start: no two clocks
            laid = self.layout(text)
            if laid.opened_by is not None:
                return laid.opened_by
        return None

    @staticmethod
    def _wrapper(prefix: str) -> tuple[str | None, str | None, int | None]:
        """A wrapper's source tag, and the process tag it ends with (if any)."""
        tag = PROC_INSIDE.search(prefix, max(0, len(prefix) - WRAPPER_CHARS))
        if tag is not None and tag.end() == len(prefix):
            return wrapper_tag(prefix[:tag.start()]), tag["proc"], int(tag["pid"])
        return wrapper_tag(prefix), None, None

    def _read(self, header: Header, m: re.Match[str], wrapper: str | None = None, proc: str | None = None,
              pid: int | None = None) -> Layout:
        g = m.groupdict()
        msg = g["msg"] or ""
        if header.decode == "json":
            msg = json_unescape(msg)
            if g.get("exc"):
                msg = f"{msg}\n{json_unescape(g['exc'])}"
        level = g.get("level")
        if self.compiled_level is not None:
            lm = self.compiled_level.match(msg)
            if lm:
                level = lm.groupdict().get("level") or level
                msg = msg[lm.end():]
        return Layout(header, g, msg, level, wrapper, proc, pid)

    def __post_init__(self) -> None:
        if not self.parsing.rules:
            raise ValueError(f"format {self.name!r} has no rules")
        own = tuple(self.kinds)
        declared = {k.name for k in own}
        # a name in `milestones` without a Kind of its own is declared by being listed there
        listed = sorted(n for n in self.meaning.milestones if n not in declared and n not in SHARED)
        own += tuple(Kind(name, "a milestone of the model runner (declared by `Format.meaning.milestones`)", milestone=True,
                          runner=True) for name in listed)
        try:
            vocab = SHARED.extend(own)
        except ValueError as e:
            raise ValueError(f"format {self.name!r}: {e}") from None
        object.__setattr__(self, "vocab", vocab)
        # what the own kinds declare, in the fields that say it per name (given entries win)
        meaning = self.meaning
        object.__setattr__(self, "meaning", replace(
            meaning,
            milestones=frozenset(meaning.milestones) | {k.name for k in own if k.milestone and k.runner},
            runner_opens=tuple(dict.fromkeys((*meaning.runner_opens, *(k.name for k in own if k.opens_runner)))),
            stage_after={**{k.name: k.stage_after for k in own if k.stage_after is not None}, **meaning.stage_after},
            reported_phases={**{k.name: k.reports for k in own if k.reports is not None}, **meaning.reported_phases}))
        self._check_kinds()

    def _check_kinds(self) -> None:
        """Every kind a rule or a field names is declared: a typo fails here, loudly, not as
        a set that never matches."""
        where = f"format {self.name!r}"
        vocab = self.vocab
        for rule in self.parsing.rules:
            maker = vocab.kind(vocab.check(rule.name, f"{where}: the rule {rule.pattern[:50]!r}")).by
            if maker != RULE:
                raise ValueError(f"{where}: the rule {rule.pattern[:50]!r} names {rule.name!r}, which the {maker} "
                                 "makes, never a line")
        named = [("milestones", n) for n in self.meaning.milestones] + [("runner_opens", n) for n in self.meaning.runner_opens]
        named += [("stage_after", n) for n in self.meaning.stage_after] + [("reported_phases", n) for n in self.meaning.reported_phases]
        named += [("timestamp_phases", n) for _, begins, ends in self.meaning.timestamp_phases for n in (*begins, *ends)]
        named += [("every_rank_prints", n) for n in self.meaning.every_rank_prints]
        named += [("kills_tree_on", n) for n in self.serving.kills_tree_on]
        named += [("cache_lines", c.event) for c in self.caches.cache_lines]
        named += [("offline_ready", self.meaning.offline_ready)] if self.meaning.offline_ready is not None else []
        for what, name in named:
            vocab.check(name, f"{where}: {what}")

    def rank_from_proc(self, proc: str | None, pid: int | None = None) -> str | None:
        """A process tag as a rank. A template may use `{pid}`; an empty template joins the
        groups that matched as `NAME<value>` in pattern order (`Worker_PP1_TP0` -> `PP1 TP0`).
        Remembered per tag (`_PROC_RANK_MEMO`): every line of a process carries the same."""
        if not proc:
            return None
        memo = self._proc_ranks
        key = (proc, pid)
        if key in memo:
            return memo[key]
        rank = self._rank_of(proc, pid)
        if len(proc) <= _PROC_RANK_MEMO_CHARS:  # a tag a collector's regex leaves unbounded is not kept
            if len(memo) >= _PROC_RANK_MEMO:
                memo.clear()
            memo[key] = rank
        return rank

    @cached_property
    def _proc_ranks(self) -> dict[tuple[str, int | None], str | None]:
        return {}

    def _rank_of(self, proc: str, pid: int | None) -> str | None:
        """`rank_from_proc`, read from the format's patterns."""
        for regex, template in self.compiled_proc_ranks:
            m = regex.search(proc)
            if m:
                groups = m.groupdict()
                if not template:
                    tags = [f"{name}{value}" for name, value in groups.items() if value is not None]
                    return " ".join(tags) or None
                if pid is None and "{pid}" in template:
                    return None
                return template.format(pid=pid, **groups)
        return None

    @cached_property
    def sniff_rules(self) -> tuple[Rule, ...]:
        """The rules that are evidence of this format (`Rule.evidence`), the heaviest first."""
        return tuple(sorted((rule for rule in self.parsing.rules if rule.evidence > 0), key=lambda r: -r.evidence))

    @cached_property
    def sniff_literals(self) -> Mapping[str, float]:
        """The literals of the rules that are evidence, each with the most its rules add: what a
        caller's scan looks for in a sample before `sniff_score` reads the lines that hold them."""
        out: dict[str, float] = {}
        for rule in self.sniff_rules:
            for literal in rule.literals:
                out[literal] = max(out.get(literal, 0.0), rule.evidence)
        return out

    @cached_property
    def sniff_most(self) -> float:
        """The most `sniff_score` can give: every rule that is evidence matching a line."""
        return sum(rule.evidence for rule in self.sniff_rules)

    def sniff_score(self, sample: str, found: Container[str] | None = None) -> float:
        """How much `sample` (a log's first lines) says it is this format's: the `evidence` of
        each rule that matches one of its lines, as the engines read them (`layout`). `found`:
        the literals a caller's scan already found in `sample` (`sniff_literals`)."""
        return sum(rule.evidence for rule in self.evidence(sample, found))

    def evidence(self, sample: str, found: Container[str] | None = None) -> list[Rule]:
        """The rules that match one of `sample`'s lines (`recognises`)."""
        return [rule for rule in self.candidates(sample, found) if self.recognises(rule, sample, found)]

    def candidates(self, sample: str, found: Container[str] | None = None) -> list[Rule]:
        """The rules that are evidence and whose literal `sample` holds, heaviest first: the
        most `sniff_score` can give on it, before a line is read."""
        present = sample if found is None else found
        out = []
        for rule in self.sniff_rules:  # a loop, not a generator a rule: asked after every piece of a head
            for literal in rule.literals:
                if literal in present:
                    out.append(rule)
                    break
        return out

    def recognises(self, rule: Rule, sample: str, found: Container[str] | None = None) -> bool:
        """Whether `rule` matches one of `sample`'s lines. It is tried on the first SNIFF_TRIES
        lines holding one of its literals: a rule whose literal is a common word costs no more
        on a long sample, and a longer sample beginning with this one never gives less (what
        `read.batch.settled_format` relies on). `found`: as for `sniff_score`."""
        return any(self._recognised(rule, literal, sample) for literal in rule.literals
                   if found is None or literal in found)

    def _recognised(self, rule: Rule, literal: str, sample: str) -> bool:
        at = sample.find(literal)
        for _ in range(SNIFF_TRIES):
            if at < 0:
                return False
            start = sample.rfind("\n", 0, at) + 1
            end = sample.find("\n", at)
            end = len(sample) if end < 0 else end
            msg = self.layout(sample[start:end]).msg
            if literal in msg and rule.regex.search(msg):
                return True
            at = sample.find(literal, end)
        return False

    def release_hint(self, sample: str, found: Container[str] | None = None) -> tuple[str, str] | None:
        """When the engine version that wrote `sample` (a log's first lines) was released, and
        the evidence: a log is written on or after its version's release, which makes a better
        guess of a year the stamps do not print than the date of a file that may be a copy.
        None when the lines do not tell. `found`: the `release_literals` a caller's scan found
        in `sample` (`formats.release_literals`): the sample is not searched for them again."""
        return self._release_evidence(sample, found)[0]

    def release_hint_settled(self, sample: str, found: Container[str] | None = None) -> bool:
        """Whether `release_hint` gives on every longer text beginning with `sample` what it
        gives on `sample` (a reader may then stop reading for it). `found`: as for `release_hint`."""
        return self._release_evidence(sample, found)[1]

    def _release_evidence(self, sample: str, found: Container[str] | None = None
                          ) -> tuple[tuple[str, str] | None, bool]:
        """`release_hint`, and whether it is final: nothing to look for, or the first version
        line found and in the table. A literal found is not final: one listed before it may
        still come, and so may a version line."""
        from firedup.core.health import version_key

        waiting = False  # for a version line a later line may still hold
        if self.dating.version_text is not None and self.dating.releases:
            m = re.search(self.dating.version_text, sample)
            waiting = m is None
            if m is not None:
                version = m.group("version")
                key = version_key(version)
                for (low, high), (_, _, released) in zip(self._release_keys, self.dating.releases, strict=True):
                    if low <= key <= high:
                        return (released, f"{self.display} {version}, released {released[:7]}"), True
        present = sample if found is None else found
        for literal, released, why in self.dating.release_literals:
            if literal in present:
                return (released, why), False
        return None, not waiting and not self.dating.release_literals

    @cached_property
    def _release_keys(self) -> tuple[tuple[Any, Any], ...]:
        """`version_key` of each release's first and last version (`Dating.releases`), made once:
        a log's version was compared with 30 releases, three keys each (a tenth of a millisecond)."""
        from firedup.core.health import version_key

        return tuple((version_key(first), version_key(last)) for first, last, _ in self.dating.releases)

    def rule(self, name: str) -> Rule:
        for rule in self.parsing.rules:
            if rule.name == name:
                return rule
        raise KeyError(name)

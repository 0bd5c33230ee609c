"""The rule tables: every regex works in Python `re` and in Hyperscan, every rule reads its
example lines, the registry finds engines, and sniffing picks the right one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firedup.core.health import READY, REFUSED, STARTING, valid_version, version_key
from firedup.formats import Format, all_formats, foreign_engine, get_format, no_known_engine, sniff_format
from firedup.formats.base import Example, Rule
from firedup.read.engine import CLOCK_EVENTS, Scanner
from firedup.read.sources import normalise
from firedup.timeline.pipeline import parse_paths


def _patterns() -> list[tuple[str, str]]:
    out = []
    for fmt in all_formats().values():
        out += [(f"{fmt.name}:header:{h.name}", h.pattern) for h in fmt.parsing.headers]
        out += [(f"{fmt.name}:rule:{r.name}", r.pattern) for r in fmt.parsing.rules]
        out += [(f"{fmt.name}:field:{p}", p) for p, _ in fmt.parsing.field_patterns]
        out += [(f"{fmt.name}:remedy:{r.cause}", r.proves) for r in fmt.advice.remedies]
        out += [(f"{fmt.name}:remedy:{r.cause}:per", r.warm.per) for r in fmt.advice.remedies
                if r.warm is not None and r.warm.per != "run"]
        out += [(f"{fmt.name}:remedy:{r.cause}:sizes", r.sizes) for r in fmt.advice.remedies if r.sizes]
    return out


@pytest.mark.parametrize(("where", "pattern"), _patterns(), ids=[w for w, _ in _patterns()])
def test_every_regex_compiles_in_python_and_hyperscan(where: str, pattern: str) -> None:
    re.compile(pattern)
    hyperscan = pytest.importorskip("hyperscan")  # the batch engine's scanner; it refuses what it cannot run linearly
    flags = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_ALLOWEMPTY
    hyperscan.Database().compile(expressions=[pattern.encode()], flags=[flags])


def _examples() -> list[tuple[str, Format, Rule, Example]]:
    return [(f"{fmt.name}:{i}:{rule.name}:{j}", fmt, rule, example) for fmt in all_formats().values()
            for i, rule in enumerate(fmt.parsing.rules) for j, example in enumerate(rule.samples)]


def test_every_rule_has_an_example() -> None:
    """Adding a line is one rule plus the line it reads (`Rule.examples`)."""
    missing = [f"{fmt.name}: {rule.name} {rule.pattern[:60]!r}" for fmt in all_formats().values()
               for rule in fmt.parsing.rules if not rule.examples]
    assert missing == []


@pytest.mark.parametrize(("where", "fmt", "rule", "example"), _examples(), ids=[w for w, *_ in _examples()])
def test_every_example_becomes_its_rules_event(where: str, fmt: Format, rule: Rule, example: Example) -> None:
    """The example, read as a log line (collector prefixes and process tags undone, the header
    found), is taken by its own rule: no earlier rule matches it first. It becomes one event of
    the rule's declared kind, carrying the rule's groups as converted and the example's fields."""
    (line,) = normalise(example.line, 1)
    msg = Scanner(fmt).split(line).msg
    first = next((r for r in fmt.parsing.rules if any(lit in msg for lit in r.literals) and r.regex.search(msg)), None)
    assert first is rule, f"{msg!r} is taken by the earlier rule {first.name if first else None!r}"
    events = [e for e in Scanner(fmt).feed(line) if e.name not in CLOCK_EVENTS]
    assert [e.name for e in events] == [rule.name] and rule.name in fmt.vocab
    m = rule.regex.search(msg)
    assert m is not None
    fields = events[0].fields
    assert rule.convert(m.groupdict()).items() <= fields.items()
    assert dict(example.fields).items() <= fields.items(), fields


def test_every_converter_is_exercised_by_an_example() -> None:
    """A field a rule converts (`Rule.fields`) comes out of at least one of its examples."""
    missing = []
    for fmt in all_formats().values():
        for rule in fmt.parsing.rules:
            seen: set[str] = set()
            for example in rule.samples:
                (line,) = normalise(example.line, 1)
                for event in Scanner(fmt).feed(line):
                    seen.update(event.fields)
            missing += [f"{fmt.name}: {rule.name}.{name}" for name in rule.fields if name not in seen]
    assert missing == []


def test_registry_finds_sglang_and_rejects_unknown_names() -> None:
    assert get_format("sglang").name == "sglang"
    with pytest.raises(KeyError, match="known: "):
        get_format("tgi-does-not-exist")


def test_sniff_picks_sglang_from_its_ready_line() -> None:
    sample = "[2025-01-01 00:00:00] The server is fired up and ready to roll!\n"
    fmt = sniff_format(sample)
    assert fmt is not None and fmt.name == "sglang"


def test_sniff_names_no_engine_for_lines_no_format_knows() -> None:
    """Never a default engine: an unknown log is "no known engine", not read as one."""
    assert sniff_format("remember to restart the server on monday\n") is None
    assert sniff_format("") is None


def test_a_registered_format_is_found_and_can_be_removed_again() -> None:
    from firedup.formats import register, unregister
    from test_engine_neutral import TOY

    try:
        assert register(TOY) is TOY
        assert get_format("toyserve") is TOY and sniff_format("[2026-03-01 10:00:30.000] toyserve INFO ready to serve") is TOY
    finally:
        unregister("toyserve")
    assert "toyserve" not in all_formats()
    with pytest.raises(KeyError):
        get_format("toyserve")


def test_sglang_value_flags_are_the_ones_the_server_args_dump_prints_without_a_bool() -> None:
    # the table must agree with what SGLang prints: a field printed as True/False is a switch
    from firedup.formats._sglang_read import ARGV_VALUE_FLAGS
    from firedup.synth._serverargs import server_args_0512, server_args_0523

    dumps = (dict(server_args_0512({})), dict(server_args_0523({})))
    assert set(dumps[0]) | set(dumps[1]) >= ARGV_VALUE_FLAGS  # cuda_graph_max_bs is gone in 0.5.23
    assert not [name for fields in dumps for name in ARGV_VALUE_FLAGS if isinstance(fields.get(name), bool)]


# --- every registered format, checked the same way (like pygments' lexer tests) --------------
# The toy engine of test_engine_neutral joins them: a format defined outside the package
# must pass the same checks.


def _every_format() -> list[Format]:
    from test_engine_neutral import TOY

    return [*all_formats().values(), TOY]


_FORMATS = _every_format()
_IDS = [fmt.name for fmt in _FORMATS]


@pytest.mark.parametrize("fmt", _FORMATS, ids=_IDS)
def test_a_format_names_and_describes_itself(fmt: Format) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_]*", fmt.name), "a lower-case identifier: users type it after --engine"
    assert fmt.title and fmt.display == fmt.title
    assert fmt.description.startswith(fmt.title + " "), "the description opens with the name users know"
    assert re.fullmatch(r"\d+(?:\.\d+)*-\d+(?:\.\d+)*", fmt.versions), fmt.versions
    assert fmt.versions in fmt.description, "the description states the versions read"
    low, high = fmt.versions.split("-")
    assert version_key(low) < version_key(high)


@pytest.mark.parametrize("fmt", _FORMATS, ids=_IDS)
def test_a_format_sniffs_from_its_own_rules(fmt: Format) -> None:
    """One source: the literals a sniff looks for are those of the rules that are evidence,
    and a literal is no evidence until its rule matches the line that holds it."""
    evidence = [rule for rule in fmt.parsing.rules if rule.evidence > 0]
    assert evidence and fmt.sniff_most == sum(rule.evidence for rule in evidence)
    assert set(fmt.sniff_literals) == {literal for rule in evidence for literal in rule.literals}
    assert fmt.sniff_score("nothing any engine prints\n") == 0
    assert fmt.sniff_score("\n".join(fmt.sniff_literals)) < fmt.sniff_most


def test_lines_other_programs_print_are_no_evidence_of_an_engine() -> None:
    """uvicorn's, Python's, a progress bar's, a shell's: read by the rules, weighed by none."""
    text = ("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
            "INFO:     Application startup complete.\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main\n'
            "RuntimeError: CUDA error: out of memory\n"
            " 50%|#####     | 2/4 [00:01<00:01,  1.99it/s]\n"
            "./run.sh: line 3: 4242 Killed                  python3 train.py\n")
    assert sniff_format(text) is None
    assert all(fmt.sniff_score(text) == 0 for fmt in all_formats().values())


@pytest.mark.parametrize("fmt", _FORMATS, ids=_IDS)
def test_a_format_names_only_events_its_rules_or_the_timeline_know(fmt: Format) -> None:
    from firedup.timeline.crash import CATEGORIES
    from firedup.timeline.milestones import MILESTONES
    from firedup.timeline.phases import PHASE_ORDER

    produced = {r.name for r in fmt.parsing.rules}
    phases = {*PHASE_ORDER, "serving"}
    assert fmt.meaning.milestones <= produced and not fmt.meaning.milestones & MILESTONES
    assert set(fmt.meaning.runner_opens) <= fmt.meaning.milestones
    assert set(fmt.meaning.every_rank_prints) <= produced
    assert fmt.meaning.offline_ready is None or fmt.meaning.offline_ready in produced
    assert fmt.serving.kills_tree_on <= produced | {"error.killed"}
    assert fmt.meaning.offline_headers <= {h.name for h in fmt.parsing.headers}
    assert set(fmt.meaning.stage_after.values()) <= phases, "stages are phase names"
    assert set(fmt.meaning.reported_phases) <= fmt.meaning.milestones | MILESTONES and set(fmt.meaning.reported_phases.values()) <= phases
    for umbrella, inner in fmt.meaning.umbrella_phases.items():
        assert umbrella in phases and set(inner) <= phases and umbrella not in inner
    assert {stage for stage, _ in fmt.meaning.frame_stages} <= phases
    for _, pattern in fmt.meaning.frame_stages:
        re.compile(pattern)
    if fmt.meaning.capture_trace is not None:
        re.compile(fmt.meaning.capture_trace)
    if fmt.meaning.draft_model_types is not None:
        assert fmt.meaning.draft_by_repeat, "draft model types only matter to an engine that repeats its runner"
        re.compile(fmt.meaning.draft_model_types)
    assert fmt.meaning.after_http_phase in phases
    for (category, phase), hint in fmt.advice.hints.items():
        assert category in CATEGORIES and (phase == "*" or phase in phases)
        hint.format_map(dict(fmt.advice.hint_words({}) if fmt.advice.hint_words else {}))  # every placeholder filled


@pytest.mark.parametrize("fmt", _FORMATS, ids=_IDS)
def test_a_format_health_semantics_are_well_formed(fmt: Format) -> None:
    health = fmt.serving.health
    if health is None:
        assert fmt.serving.probing is None, "probe facts without health semantics would be half a story"
        return
    for semantics in (health, *(older for _, older in health.older)):
        assert semantics.endpoint.startswith("/")
        assert semantics.starting == REFUSED or re.fullmatch(r"[1-5]\d\d", semantics.starting)
        assert 200 <= semantics.ready_status < 300
        assert semantics.body in ("empty", "json", "text")
        assert semantics.interpret(semantics.ready_status) == READY
        assert semantics.interpret(None) == STARTING
        assert all(s != semantics.ready_status for s in semantics.dead_statuses)
    lasts = [last for last, _ in health.older]
    assert all(valid_version(v) for v in lasts) and lasts == sorted(lasts, key=version_key)
    if health.since is not None:
        assert valid_version(health.since) and all(version_key(v) < version_key(health.since) for v in lasts)
    assert (health.ready_endpoint is None) <= (health.ready_endpoint_since is None)
    for route in health.routes:
        assert route.path.startswith("/") and route.path != health.endpoint
        assert route.body in ("empty", "models", "model_info", "server_info")  # what replay can serve
        assert route.since is None or valid_version(route.since)
    assert health.ready_latency >= 0
    if health.telemetry is not None:  # where the engine's own start-up figures are (wait reads, replay serves)
        spec = health.telemetry
        assert spec.metrics or spec.info_path
        assert all(name and label for name, label, _ in spec.metrics)
        assert spec.info_since is None or valid_version(spec.info_since)
        assert (spec.info_path is None) == (spec.info_key is None)
    assert fmt.serving.probing is not None, "wait snippets need the port and probe facts"
    assert 0 < fmt.serving.probing.default_port < 65536 and fmt.serving.probing.probe_timeout > 0
    assert fmt.serving.probing.crash_markers and all(m.strip() for m in fmt.serving.probing.crash_markers)


FOREIGN = Path(__file__).resolve().parent / "fixtures" / "foreign"


@pytest.mark.parametrize(("name", "title"), [
    ("tgi.log", "TGI (text-generation-inference)"), ("llamacpp.log", "llama.cpp"), ("ollama.log", "Ollama"),
    ("trtllm.log", "TensorRT-LLM"), ("lmdeploy.log", "LMDeploy"),
])
def test_a_foreign_engine_log_is_no_known_engine_and_says_what_it_looks_like(name: str, title: str) -> None:
    path = FOREIGN / name
    text = path.read_text(encoding="utf-8")
    assert sniff_format(text) is None
    assert foreign_engine(text) == title
    result = parse_paths([str(path)])
    assert result.runs == [] and result.errors == []
    (report,) = result.sources
    assert report.engine is None and report.looks_like == title
    assert title in no_known_engine(report.looks_like) and "no known engine" in no_known_engine(report.looks_like)


def test_another_engine_quoting_one_of_our_lines_is_still_not_ours() -> None:
    """A TGI log is never read with SGLang or vLLM rules because one line looks like theirs."""
    text = (FOREIGN / "tgi.log").read_text(encoding="utf-8") + "Starting to load model x...\n"
    assert get_format("vllm").sniff_score(text) > 0
    assert sniff_format(text) is None


def test_a_known_engine_log_mentioning_a_foreign_library_stays_known() -> None:
    text = ("[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
            "[2026-01-02 10:00:05 TP0] Load weight begin. avail mem=70.00 GB\n"
            "[2026-01-02 10:00:06 TP0] Using tensorrt_llm allreduce fusion\n")
    fmt = sniff_format(text)
    assert fmt is not None and fmt.name == "sglang"


def test_field_converters_refuse_numbers_that_do_not_fit_and_say_so() -> None:
    """A converter that refused kept the text in the number's place; `float()` took 400 nines as inf."""
    from firedup.formats.convert import DROPPED, convert_field, to_float, to_int, to_list, to_url

    assert to_float("4.52") == 4.52 and to_int("428608") == 428608 and to_list("[1, 2, 4]") == [1, 2, 4]
    for text in ("9" * 400, "1e999", "inf", "nan", "1e10", "٣٠"):
        with pytest.raises(ValueError):
            to_float(text)
    for text in ("9" * 30, "9" * 5000, "³⁰", "٣٠", "３０"):
        with pytest.raises(ValueError):
            to_int(text)
    assert to_url("http://127.0.0.1:30000") == "http://127.0.0.1:30000" and to_url("0.0.0.0:30000") == "0.0.0.0:30000"
    for text in ("http://127.0.0.1:³⁰⁰⁰⁰", "http://h:99999", "http://h:0", "ftp://h/", "http://:1"):
        with pytest.raises(ValueError):
            to_url(text)
    fields: dict[str, object] = {}
    convert_field(to_float, "elapsed_s", "9" * 400, fields)
    convert_field(to_float, "mem_gb", "7.7", fields)
    assert fields == {"mem_gb": 7.7, DROPPED: ["elapsed_s=999999999999…999999999999 (400 characters)"]}


# --- an unknown wrapper in front of the engine's own lines -------------------------------------

HARNESS = "[2025-07-25 02:04:12] [harness.server_manager] [INFO] [worker_0] "


def test_the_engines_own_header_is_found_behind_an_unknown_wrapper() -> None:
    """The harness's stamp looks like SGLang's own header: the header behind it is the engine's,
    and the message is the server's (its rules anchor on it)."""
    fmt = get_format("sglang")
    laid = fmt.layout(HARNESS + "[2025-07-25 02:04:12 TP1] Load weight begin. avail mem=78.64 GB")
    assert laid.header is not None and laid.header.name == "sglang"
    assert (laid.msg, laid.groups["ranks"], laid.wrapper) == ("Load weight begin. avail mem=78.64 GB", " TP1", "worker_0")
    # the same line unwrapped: no wrapper, as before
    plain = fmt.layout("[2025-07-25 02:04:12 TP1] Load weight begin. avail mem=78.64 GB")
    assert (plain.msg, plain.wrapper) == (laid.msg, None)
    # a message that mentions a bracket or a number is no wrapper
    assert fmt.layout("[2025-07-25 02:04:12] Capture cuda graph bs [1, 2, 4]").msg == "Capture cuda graph bs [1, 2, 4]"


def test_a_wrapper_ending_with_a_process_tag_gives_the_line_its_process_and_header() -> None:
    fmt = get_format("vllm")
    laid = fmt.layout(HARNESS + "(EngineCore_DP0 pid=311) INFO 07-25 02:04:12 [core.py:1] Starting to load model m...")
    assert (laid.msg, laid.proc, laid.pid, laid.wrapper) == ("Starting to load model m...", "EngineCore_DP0", 311,
                                                             "worker_0")
    # uvicorn's lines carry no time: only behind a process tag is their header looked for
    laid = fmt.layout(HARNESS + "(APIServer pid=1) INFO:     Application startup complete.")
    assert laid.header is not None and (laid.header.name, laid.msg, laid.pid) == ("uvicorn",
                                                                                  "Application startup complete.", 1)


def test_a_header_is_looked_for_only_in_a_lines_first_characters() -> None:
    """Bounded: a stamp in the middle of a long message is not a wrapped header."""
    from firedup.formats.wrappers import WRAPPER_CHARS

    fmt = get_format("sglang")
    far = "x" * WRAPPER_CHARS + " [2025-07-25 02:04:12] Load weight begin."
    assert fmt.layout(far).header is None and fmt.layout(far).msg == far


@pytest.mark.parametrize(("wrapper", "tag"), [
    (HARNESS, "worker_0"),
    ("[2025-07-25 02:04:12,123] [worker_1:stderr] ", "worker_1"),
    ("2025-07-25 02:04:12,123 - harness - INFO - ", None),
    ("[harness.py:123] [node-3] WARNING ", "node-3"),
    ("    15\t", None),  # a line number (`cat -n`) names no source
])
def test_a_wrappers_tag_is_the_words_that_number_its_source(wrapper: str, tag: str | None) -> None:
    from firedup.formats.wrappers import wrapper_tag

    assert wrapper_tag(wrapper) == tag


# --- the literal every match of a pattern holds (`required_literal`) -------------------------------

@pytest.mark.parametrize(("pattern", "literal"), [
    ("avail mem=(?P<gb>[\\d.]+) GB", "avail mem="),
    ("context_len=(?P<n>\\d+)", "context_len="),
    ("[KV]{1,2} size: (?P<gb>[\\d.]+) GB", " size: "),  # not where the match begins
    ("ab?c", "a"),  # a repeat makes the character before it optional
    ("ab{2}?cd", "cd"),
    ("ab*cde", "cde"),  # the longest run
    ("x\\d", "x"),
    ("x\\x41yz", "x"),  # an escape's letters and digits are its own
    ("a(?:b|c)", "a"),  # an alternation inside a group leaves the text around it
    ("(?:a|b)c", "c"),
    ("a(?:x)?bc", "bc"),
    ("(?:[)]x)yz", "yz"),  # a group ends at its own `)`, not one in a class or escaped
    ("(?:\\)x)yz", "yz"),
    ("a|b", ""),  # ... one outside any group does not
    ("[|]x|y", ""),
    ("a[]|]b", "a"),  # a `]` first in a class is a literal one: the `|` is in the class
    ("^abc", "abc"),
    ("a{b", ""),  # a brace that is no repeat: in doubt, the text after it is not taken
    ("(?i)abc", ""),  # a flag may change what matches: none
    ("(?x)a b c", ""),
])
def test_a_patterns_required_literal_is_in_its_every_match(pattern: str, literal: str) -> None:
    from firedup.formats.base import required_literal

    assert required_literal(pattern) == literal


_PIECES = ["a", "b", "ab", "b?", "a*", "b+", "c{1,2}", "d{2}?", "e*+", "|", "(?:", "(", ")", "(?i:", "(?=b)", "[ab]", "[]a]",
           "[^|]", "[)]", "\\|", "\\d", "\\x41", "\\.", "\\(", "{", "}", ".", "^", "$", " "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES + ["ab", "ba", "abc"] * 3), min_size=1, max_size=10), st.data())
def test_every_match_of_a_pattern_holds_its_required_literal(pieces: list[str], data: st.DataObject) -> None:
    """What lets `Scanner._match` skip a field's search where its literal is missing."""
    from firedup.formats.base import required_literal

    pattern = "".join(pieces)
    try:
        regex = re.compile(pattern)
    except re.error:
        return
    text = data.draw(st.from_regex(regex, fullmatch=True))
    assert required_literal(pattern) in text


_FIELD_SEARCHES = [(regex, literal) for fmt in all_formats().values() for regex, _, _, literal in fmt.field_searches]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_field_patterns_match_holds_its_literal(data: st.DataObject) -> None:
    regex, literal = data.draw(st.sampled_from(_FIELD_SEARCHES))
    assert literal in data.draw(st.from_regex(regex))


# --- excerpts that start with the error: every rule is evidence ----------------------------------

EXCERPTS = Path(__file__).resolve().parent / "fixtures" / "excerpts"


@pytest.mark.parametrize(("name", "outcome", "milestones"), [
    # a pasted crash: the exception first, SGLang's own lines about the dead scheduler after it
    ("pasted_crash.log", "crashed", ["crash", "crash"]),
    # a 2024 log of "[gpu_id=N]" lines only: its distributed init is SGLang's
    ("gpu_id_2024.log", "incomplete", ["dist_init.begin", "dist_init.begin"]),
])
def test_an_excerpt_is_recognised_by_any_line_a_rule_of_the_engine_knows(name: str, outcome: str,
                                                                          milestones: list[str]) -> None:
    """No args line, no ready line, none of the lines a sniff list of the old kind held: the
    lines the rules know (`Rank 0 scheduler is dead`, `Init nccl begin.`) name the engine."""
    path = EXCERPTS / name
    assert sniff_format(path.read_text()) is get_format("sglang")
    result = parse_paths([str(path)])
    (run,) = result.runs
    assert (result.sources[0].engine, run.outcome) == ("sglang", outcome)
    assert [m.name for m in run.milestones] == milestones


def _remedy_examples() -> list[tuple[str, Format, str, str]]:
    return [(f"{fmt.name}:{r.cause}:{j}", fmt, r.cause, line) for fmt in all_formats().values()
            for r in fmt.advice.remedies for j, line in enumerate(r.examples)]


@pytest.mark.parametrize(("where", "fmt", "cause", "line"), _remedy_examples(), ids=[w for w, *_ in _remedy_examples()])
def test_every_remedy_example_is_a_line_its_regex_proves(where: str, fmt: Format, cause: str, line: str) -> None:
    """A remedy's examples are lines of the engine (read by its layout) its `proves` regex matches:
    what every advice item's evidence is held to."""
    remedy = fmt.advice.remedy(cause)
    assert remedy is not None
    assert remedy.regex.search(fmt.layout(line).msg), f"{where}: {line!r}"


@pytest.mark.parametrize("fmt", _FORMATS, ids=_IDS)
def test_a_format_remedies_name_known_causes_once(fmt: Format) -> None:
    from firedup.timeline.advice import CACHE, CAUSES

    causes = [r.cause for r in fmt.advice.remedies]
    assert len(causes) == len(set(causes)), causes
    known = set(CAUSES) | {CACHE + kind for kind in fmt.caches.cache_kinds}
    assert set(causes) <= known, set(causes) - known
    for remedy in fmt.advice.remedies:
        assert remedy.fix and remedy.what
        assert all(p.isidentifier() or "." in p for p in remedy.phases)

"""The event vocabulary (`firedup.formats.vocab`): every kind declared once, with its meaning.

Outside `formats/` (and the generator in `synth/`) no module writes a kind's name as a string:
it imports the kind's constant, or reads a set derived from the declarations (`Format.vocab`),
so a typo fails at import instead of never matching. A format that names an undeclared kind
fails when it is built.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from firedup.core.units import fmt_duration
from firedup.formats import all_formats
from firedup.formats.base import Format, Meaning, Parsing, Rule
from firedup.formats.vocab import (
    ALWAYS,
    HTTP_ACCESS,
    IF_STUCK,
    IF_STUCK_BARE,
    READY,
    SHARED,
    TIMELINE,
    Kind,
    Vocabulary,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "firedup"
# Where kinds may be written out: their declarations, the formats' tables, and the generator.
ALLOWED = ("formats", "synth")


def _kind_names() -> set[str]:
    return {kind.name for fmt in all_formats().values() for kind in fmt.vocab} | {kind.name for kind in SHARED}


def _names_an_event(node: ast.AST) -> bool:
    """`e.name`, `m.key`, `row["name"]`, `pl.col("name")`: an expression that holds a kind."""
    if isinstance(node, ast.Attribute):
        return node.attr in ("name", "key")
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "name"
    if isinstance(node, ast.Call):
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "name"
    return False


def kind_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every string literal in `source` that names a kind.

    A dotted name (`dist_init.begin`) is a kind wherever it is written. A plain word that is
    also a kind (`ready`, `crash`) is one only where it is compared with an event's or a
    milestone's name, looks a milestone up (`run.milestone("ready")`), or sits among other
    kind names in a literal collection: elsewhere it is an outcome, a stage or a key.
    """
    tree = ast.parse(source)
    found: set[tuple[int, str]] = set()

    def named(node: ast.AST) -> list[ast.Constant]:
        if isinstance(node, ast.Constant) and node.value in names:
            return [node]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [e for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
        return []

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                and node.value in names:
            found.add((node.lineno, node.value))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_an_event(op) for op in operands):
                found.update((c.lineno, str(c.value)) for op in operands for c in named(op))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("milestone", "Milestone") and node.args:
                found.update((c.lineno, str(c.value)) for c in named(node.args[0]))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            kinds = [e for e in elts if isinstance(e, ast.Constant) and e.value in names]
            if any("." in str(k.value) for k in kinds):
                found.update((k.lineno, str(k.value)) for k in kinds)
    return sorted(found)


def _shared_modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] not in ALLOWED)


def test_no_module_outside_the_formats_writes_a_kinds_name() -> None:
    names = _kind_names()
    found = [f"{p.relative_to(SRC)}:{line}: {name!r}" for p in _shared_modules()
             for line, name in kind_literals(p.read_text(), names)]
    assert found == [], "import the kind's constant from firedup.formats.vocab, or read Format.vocab:\n" \
                        + "\n".join(found)


def test_the_scan_finds_kind_names_in_every_shape_code_writes_them() -> None:
    names = _kind_names()
    flagged = """
if e.name == "ready": pass
if m["name"] in ("ready", "crash"): pass
x = runs.filter(pl.col("name") == "ready")
ready = run.milestone("ready")
ms.append(Milestone("crash", ts))
AFTER = {"ready", "scheduler.ready"}
ON = "dist_init.begin"
"""
    assert [line for line, _ in kind_literals(flagged, names)] == [2, 3, 3, 4, 5, 6, 7, 7, 8]
    other_meanings = """
if run.outcome == "ready": pass
if stage == "ready": pass
what = {"ready": "ready", "starting": "still warming up"}[stage]
actions.append("crash")
row = {"crash": None, "outcome": "ready"}
"""
    assert kind_literals(other_meanings, names) == []
    # and the formats, where kinds are declared and named, are full of them
    assert len(kind_literals((SRC / "formats" / "sglang.py").read_text(), names)) > 40


def test_every_set_is_derived_from_the_declarations() -> None:
    fmt = all_formats()["sglang"]
    vocab = fmt.vocab
    assert vocab.fatal == {k.name for k in vocab if k.fatal == ALWAYS}
    assert vocab.fatal_if_stuck == {k.name for k in vocab if k.fatal == IF_STUCK}
    assert vocab.crashy == vocab.fatal | vocab.fatal_if_stuck | vocab.fatal_if_bare
    assert vocab.fatal_if_bare == {k.name for k in vocab if k.fatal == IF_STUCK_BARE}
    # an engine-only kind is in its engine's sets, not in the shared ones nor another engine's
    assert "error.engine_core" in all_formats()["vllm"].vocab.fatal
    assert "error.engine_core" not in SHARED and "error.engine_core" not in vocab
    assert vocab.watch_off == {READY} and HTTP_ACCESS in vocab
    assert vocab.stage_after[READY] == "serving"
    assert [phase for phase, _, _ in SHARED.paired_phases] == ["dist_init", "load_weights", "cuda_graph"]
    assert vocab.draft_twin == {name: "draft." + name for name in
                                ("load_weight.begin", "load_weight.end", "cuda_graph.begin", "cuda_graph.end")}
    # lines that prove graphs were captured (issue 29's implied disable_cuda_graph): the shared
    # capture lines and bar, and SGLang's own batch-size line, which vLLM does not print
    assert vocab.graph_capture == {"cuda_graph.begin", "cuda_graph.end", "draft.cuda_graph.begin",
                                   "draft.cuda_graph.end", "progress.cuda_graph", "cuda_graph.sizes"}
    assert all_formats()["vllm"].vocab.graph_capture == vocab.graph_capture - {"cuda_graph.sizes"}


def test_a_typo_in_a_name_fails_loudly() -> None:
    with pytest.raises(KeyError, match=r"'raedy' is no declared event kind \(did you mean 'ready'"):
        SHARED.kind("raedy")
    fmt = all_formats()["sglang"]
    bad = Rule("dist_init.begn", r"^Init torch distributed begin\.", "Init ")
    with pytest.raises(ValueError, match=r"format 'sglang': the rule .*'dist_init.begn' is no declared event kind "
                                         r"\(did you mean 'dist_init.begin'"):
        dataclasses.replace(fmt, parsing=dataclasses.replace(fmt.parsing, rules=(bad, *fmt.parsing.rules)))
    with pytest.raises(ValueError, match=r"format 'sglang': stage_after: 'cuda_graph.ends' is no declared"):
        dataclasses.replace(fmt, meaning=dataclasses.replace(fmt.meaning, stage_after={"cuda_graph.ends": "http_start"}))
    with pytest.raises(ValueError, match=r"kills_tree_on: 'error.sigqiut'"):
        dataclasses.replace(fmt, serving=dataclasses.replace(fmt.serving, kills_tree_on=frozenset({"error.sigqiut"})))


def test_a_rule_may_not_name_what_the_timeline_or_the_reader_makes() -> None:
    fmt = all_formats()["sglang"]
    for name in ("crash", "http.first_request", "clock.first"):
        with pytest.raises(ValueError, match=f"names {name!r}, which the (timeline|reader) makes"):
            dataclasses.replace(fmt, parsing=dataclasses.replace(fmt.parsing, rules=(Rule(name, r"^boom", "boom"),
                                                                                  *fmt.parsing.rules)))


def test_a_kind_is_declared_once() -> None:
    with pytest.raises(ValueError, match="event kind 'ready' is declared twice"):
        SHARED.extend([Kind("ready", "again")])
    fmt = all_formats()["vllm"]
    with pytest.raises(ValueError, match=r"format 'vllm': event kind 'engine\.init' is declared twice"):
        dataclasses.replace(fmt, kinds=(*fmt.kinds, Kind("engine.init", "again")))


def test_a_kinds_meaning_is_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="fatal must be one of"):
        Kind("error.x", "x", fatal="sometimes")
    with pytest.raises(ValueError, match="lower-case words joined by dots"):
        Kind("Error X", "x")
    with pytest.raises(ValueError, match=r"the draft's twin of 'x\.begin'"):
        Vocabulary([Kind("x.begin", "x", draft_named=True)])
    assert Kind("request.first", "x", by=TIMELINE).by == TIMELINE


def test_a_format_given_milestones_by_name_declares_them() -> None:
    """A format defined outside firedup may still list its milestones by name (the older way):
    each becomes a milestone kind of its model runner."""
    fmt = all_formats()["sglang"]
    toy = Format(name="toy", parsing=Parsing(headers=fmt.parsing.headers, rules=(Rule("compile.end", r"^compiled", "compiled"),)),
                 meaning=Meaning(milestones=frozenset({"compile.end"})))
    kind = toy.vocab.kind("compile.end")
    assert kind.milestone and kind.runner and "compile.end" in toy.vocab.runner


# --- a line a new version prints: one rule, its example and its kind, in a copy of a format ---

# What a hypothetical next SGLang prints when a GPU drops out mid-start: fatal, a crash.
GPU_LOST = Kind("error.gpu_lost", "a GPU fell off the bus (the driver's Xid 79): the start-up cannot go on",
                fatal=ALWAYS)
GPU_LOST_RULE = Rule("error.gpu_lost", r"^GPU (?P<gpu_index>\d+) has fallen off the bus", "fallen off the bus",
                     examples=("[2027-01-05 10:00:40 TP1] GPU 1 has fallen off the bus (Xid 79); the scheduler "
                               "cannot go on",))

NEXT_LOG = """\
[2027-01-05 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, port=30000)
[2027-01-05 10:00:10 TP0] Init torch distributed begin.
[2027-01-05 10:00:10 TP1] Init torch distributed begin.
[2027-01-05 10:00:12 TP0] Init torch distributed ends. mem usage=0.19 GB
[2027-01-05 10:00:12 TP1] Init torch distributed ends. mem usage=0.19 GB
[2027-01-05 10:00:12 TP0] Load weight begin. avail mem=78.81 GB
[2027-01-05 10:00:12 TP1] Load weight begin. avail mem=78.81 GB
[2027-01-05 10:00:40 TP1] GPU 1 has fallen off the bus (Xid 79); the scheduler cannot go on
"""


def test_a_new_line_kind_flows_through_parse_timeline_wait_and_replay(tmp_path: Path) -> None:
    """Adding the line a new version prints is one rule with its example (and, for a new kind,
    its declaration) in the format's module: here in a copy of a format, registered for the
    test, with no other file of firedup touched. Its meaning (fatal) reaches the timeline's
    outcome and crash, `wait`'s verdict and `replay`'s exit status."""
    import io

    from firedup.errors import EXIT_CRASHED
    from firedup.formats import register
    from firedup.live.options import WaitOptions
    from firedup.live.replay import load_script, replay
    from firedup.live.wait import Waiter
    from firedup.timeline.pipeline import parse_paths
    from firedup.timeline.stages import stage_changes
    from test_formats import test_every_example_becomes_its_rules_event as check_example

    original = all_formats()["sglang"]
    log = tmp_path / "server.log"
    log.write_text(NEXT_LOG)
    crash_line = len(NEXT_LOG.splitlines())
    (before,) = parse_paths([str(log)]).runs
    assert (before.outcome, before.crash) == ("incomplete", None)  # today's SGLang does not know the line

    nxt = dataclasses.replace(original, kinds=(*original.kinds, GPU_LOST),
                              parsing=dataclasses.replace(original.parsing, rules=(*original.parsing.rules, GPU_LOST_RULE)))
    check_example("next", nxt, GPU_LOST_RULE, GPU_LOST_RULE.samples[0])
    assert "error.gpu_lost" in nxt.vocab.fatal and "error.gpu_lost" not in original.vocab
    register(nxt)
    try:
        for scanner in ("incremental", "batch"):  # the batch engine scans for the new rule's literal too
            (run,) = parse_paths([str(log)], scanner=scanner).runs
            assert (run.outcome, run.crash is not None) == ("crashed", True), scanner
            assert run.crash is not None and (run.crash.line, run.crash.phase) == (crash_line, "load_weights")
            assert [m.line for m in run.milestones if m.name == "crash"] == [crash_line]
        assert [stage for stage, _ in stage_changes(run)][-1] == "load_weights"

        t = [0.0]
        out, err = io.StringIO(), io.StringIO()
        waiter = Waiter(WaitOptions(log, timeout=60, auto_timeout=False), out, err, tty=False,
                        now=lambda: t[0], sleep=lambda s: t.__setitem__(0, t[0] + s))
        assert waiter.run_loop() == EXIT_CRASHED, out.getvalue() + err.getvalue()
        assert out.getvalue().startswith(f"CRASHED ({run.crash.category}) in load_weights after "
                                         f"{fmt_duration(run.seconds_to_end)}, line {crash_line} of ")

        script = load_script(log)
        assert script.fmt is nxt and script.exit_code == 1
        assert "crash" in script.actions[crash_line - 1]
        replayed = tmp_path / "replayed.log"
        assert replay(script, replayed, speed=1000.0, port=0, hold=0, err=io.StringIO()) == 1
        assert replayed.read_text() == NEXT_LOG
    finally:
        register(original)
    assert all_formats()["sglang"] is original

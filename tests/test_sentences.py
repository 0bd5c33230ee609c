"""Every explanation sentence is a tested template (issue 31).

For the samples, the real-GPU runs and the corpus (the last two skipped cleanly without
../shared), every sentence firedup writes (a run's verdict, each silence and its cause, each
cache verdict, the crash and its hint, the engine's own timings, the budget's answer and
derivation, what was left out; `tests/sentences.py` gathers them) must

- be what the golden file says (`tests/golden/sentences/SET.txt`; after a change in wording,
  `python tests/regen_golden.py` rewrites them: review the diff),
- read as English (no `… : shorter than`, `after ?`, doubled clauses, `its the`), and
- never contradict a figure printed beside it (a warm verdict "with no silence" beside
  silences in that phase, a silence called "the phase's own work" that the log's own JIT lines
  time, a verdict whose time is not the run's).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, SHARED
from sentences import SETS, contradictions, english_problems, set_paths, set_sentences

GOLDEN = Path(__file__).resolve().parent / "golden" / "sentences"


def _paths(name: str) -> list[Path]:
    paths = set_paths(name, ROOT, SHARED)
    if not paths:
        pytest.skip(f"no {name} logs here ({SHARED} is absent)")
    return paths


def _strip(name: str) -> str:
    return str(ROOT / "sample_logs") + "/" if name == "samples" else str(SHARED) + "/"


@pytest.fixture(scope="module", params=SETS)
def sentence_set(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    name = request.param
    return name, set_sentences(_paths(name), _strip(name))


def test_the_sentences_are_the_golden_ones(sentence_set: tuple[str, list[str]]) -> None:
    name, lines = sentence_set
    golden = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    assert lines == golden, f"the sentences about {name} changed: run python tests/regen_golden.py and review the diff"


def test_every_sentence_reads_as_english(sentence_set: tuple[str, list[str]]) -> None:
    _, lines = sentence_set
    bad = [f"{line}\n    -> {', '.join(problems)}" for line in lines if (problems := english_problems(line))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", SETS)
def test_no_sentence_contradicts_a_figure_beside_it(name: str) -> None:
    from firedup.timeline.pipeline import parse_paths

    runs = parse_paths([str(p) for p in _paths(name)]).runs
    found = [f"{Path(run.source).name}#{run.run_index + 1}: {c}" for run in runs for c in contradictions(run)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("sentence", "problem"), [
    ("in warmup, where the first warm-up request, in which kernels JIT-compile… : shorter than 30 s", "colon"),
    ("INCOMPLETE: the log stops in launch after ?", "printed as ?"),
    ("a 1 s probe timeout flaps; the default of 1 s would flap; the default of 1 s would flap", "doubled clause"),
    ("engine_init took 28 s and its one silence lie in cuda_graph, none in its the profile", "two articles"),
    ("1 silences lie in cuda_graph", "plural after 1"),
])
def test_the_reading_finds_what_issue_31_found(sentence: str, problem: str) -> None:
    assert any(problem in p for p in english_problems(sentence)), english_problems(sentence)


def test_the_contradiction_check_finds_a_warm_verdict_beside_silences() -> None:
    """vLLM: `kernel_jit warm: engine_init took 2 min 24 s with no 11 s silence in it` under three
    silences listed inside engine_init."""
    from firedup.timeline.pipeline import parse_paths

    run = parse_paths([str(ROOT / "sample_logs" / "vllm-tp2-compiled.log")]).runs[0]
    verdict = run.caches["kernel_jit"]
    assert contradictions(run) == []
    verdict.reason = "engine_init took 1 min 31 s with no 10 s silence in it: nothing was compiled for long"
    assert any("beside 3 silence(s) in engine_init" in c for c in contradictions(run))

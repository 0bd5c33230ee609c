"""Advice over many runs (tables.advice): warm twins of one configuration measure a cold cache's
saving; each group's causes ranked; shown after compare's headline, in --json and the library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import firedup
from conftest import CORPUS, FIXTURES, SAMPLE_LOGS, SHARED, corpus_logs, run_cli
from firedup.tables.advice import Advice, advice_line
from firedup.timeline.advice import WARM_TWIN
from firedup.timeline.findings import Item
from test_advice import check_evidence

REALGPU = SHARED / "realgpu"


@pytest.fixture(scope="module")
def samples() -> Advice:
    return firedup.advise(str(SAMPLE_LOGS))


def _group(advice: Advice, word: str) -> list[Item]:
    return next(g.items for g in advice.groups if g.label.startswith(word))


def test_production_groups_first_item_is_the_cold_deepgemm_cache(samples: Advice) -> None:
    first = _group(samples, "production")[0]
    assert first.kind == "cache:deepgemm_jit"
    assert first.seconds > 8 * 60 and first.runs == "6 of 6 runs"
    assert first.evidence and "sglang.compile_deep_gemm" in first.fix
    assert first.saving_seconds is not None and first.basis.startswith("published figure (")
    assert samples.top() is not None and samples.top()[1] is first  # type: ignore[index]


def test_debug_groups_advice_has_no_deepgemm_item(samples: Advice) -> None:
    kinds = [i.kind for i in _group(samples, "debug")]
    assert kinds and "cache:deepgemm_jit" not in kinds


def test_every_sample_item_per_run_and_per_group_has_evidence_that_says_it(samples: Advice) -> None:
    for items in [*samples.runs.values(), *(g.items for g in samples.groups)]:
        for item in items:
            check_evidence(item, "sglang" if "vllm" not in item.evidence[0].source else "vllm")


def test_compare_says_the_top_item_right_after_its_headline_and_in_json(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["compare", str(SAMPLE_LOGS)], monkeypatch, capsys)
    assert code == 0
    head = out.split("\n\n")[0]
    assert "start sooner: production" in head and "cold DeepGEMM kernel cache" in head
    code, out, _ = run_cli(["compare", str(SAMPLE_LOGS), "--json"], monkeypatch, capsys)
    assert code == 0
    groups = {g["group"].split(" ")[0]: g["advice"] for g in json.loads(out)["advice"]}
    assert groups["production"][0]["kind"] == "cache:deepgemm_jit"
    assert {"cause", "seconds", "evidence", "fix", "saving_seconds", "basis"} <= set(groups["production"][0])
    assert all(i["kind"] != "cache:deepgemm_jit" for i in groups["debug"])


def test_parse_json_carries_each_runs_advice(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["parse", str(SAMPLE_LOGS / "prod-tp8-eagle3-02.log"), "--json"], monkeypatch, capsys)
    assert code == 0
    advice = json.loads(out)["runs"][0]["advice"]
    assert advice[0]["kind"] == "cache:deepgemm_jit" and advice[0]["evidence"][0]["line"] > 0


def test_the_line_is_none_without_runs() -> None:
    assert advice_line(Advice({}, {}, [])) is None


def test_import_firedup_does_not_load_polars_for_advise() -> None:
    import subprocess
    import sys

    code = "import sys, firedup; firedup.advise; assert 'polars' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(not REALGPU.is_dir(), reason="../shared/realgpu is absent")
def test_real_cold_start_first_item_is_the_kernel_jit_inside_graph_capture_saving_from_its_warm_twin() -> None:
    advice = firedup.advise([str(REALGPU / "sglang_eagle3.log"), str(REALGPU / "sglang_eagle3-warm.log")])
    cold = next(rid for rid, src in advice.sources.items() if src.endswith("sglang_eagle3.log"))
    first = advice.runs[cold][0]
    assert first.kind == "cache:kernel_jit" and first.phase == "cuda_graph"
    assert first.basis == WARM_TWIN and "sglang_eagle3-warm.log" in (first.basis_detail or "")
    assert first.saving_seconds == pytest.approx(65, abs=3)
    sources = {Path(e.source).name for e in first.evidence}
    assert sources == {"sglang_eagle3.log", "sglang_eagle3-warm.log"}  # the cold run's lines and its twin's
    check_evidence(first, "sglang")
    warm = next(rid for rid in advice.runs if rid != cold)
    assert not [i for i in advice.runs[warm] if i.basis == WARM_TWIN]


@pytest.mark.skipif(not REALGPU.is_dir(), reason="../shared/realgpu is absent")
def test_a_twin_needs_the_same_configuration() -> None:
    advice = firedup.advise([str(REALGPU / "sglang_eagle3.log"), str(REALGPU / "sglang_eagle3-debug.log")])
    assert not [i for items in advice.runs.values() for i in items if i.basis == WARM_TWIN]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_every_corpus_item_has_evidence_lines_that_exist_and_say_what_it_claims(engine: str) -> None:
    logs = corpus_logs(engine)
    if not logs:
        pytest.skip("../shared/corpus is absent")
    advice = firedup.advise([str(p) for p in logs])
    items = [i for run in advice.runs.values() for i in run] + [i for g in advice.groups for i in g.items]
    assert items
    for item in items:
        assert item.basis in ("warm twin", "physical bound", "this log", "unknown") or item.basis.startswith(
            "published figure ("), item.basis
        assert (item.saving_seconds is None) == (item.basis == "unknown")
        check_evidence(item, engine)


def test_foreign_engine_logs_get_no_advice() -> None:
    logs = sorted((FIXTURES / "foreign").iterdir())
    assert logs
    result = firedup.parse([str(p) for p in logs])
    assert not [r for r in result.runs if r.advice]
    assert all(s.engine is None for s in result.sources)
    if CORPUS.is_dir():  # the corpus's other engine's lines inside a log get none either
        assert all(item.evidence for r in firedup.parse(str(CORPUS)).runs for item in r.advice)


def test_a_cold_compile_cache_under_a_key_its_warm_twin_did_not_have_says_the_key_changed() -> None:
    advice = firedup.advise([str(SAMPLE_LOGS / "vllm-cold-start.log"), str(SAMPLE_LOGS / "vllm-warm-start.log")])
    keys = {Path(src).name: json.loads(row) for src, row in zip(
        *firedup.load([str(SAMPLE_LOGS / "vllm-cold-start.log"), str(SAMPLE_LOGS / "vllm-warm-start.log")]).runs.select(
            "source", "cache_keys_json").to_dict(as_series=False).values(), strict=True)}
    cold, warm = keys["vllm-cold-start.log"]["torch_compile"], keys["vllm-warm-start.log"]["torch_compile"]
    assert cold != warm
    rid = next(r for r, src in advice.sources.items() if src.endswith("vllm-cold-start.log"))
    item = next(i for i in advice.runs[rid] if i.kind == "cache:torch_compile")
    assert item.basis == WARM_TWIN and f"key {cold} is not the twin's {warm}" in item.cause
    check_evidence(item, "vllm")

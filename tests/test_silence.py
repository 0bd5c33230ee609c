"""Silent time explained (firedup.timeline.silence): silences, cache verdicts, unknown lines mined,
and what compare, budget, the charts and the report make of them. The real H200 start-ups
(../shared/realgpu, when present) are the ground truth: which run was cold and which warm is
known from how they were recorded (docs/silences-and-caches.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS, SHARED
from firedup.api import report as report_of
from firedup.core.drain import WILD, mine
from firedup.formats import get_format
from firedup.read import batch
from firedup.read.engine import GAP_SECONDS, scan
from firedup.read.sources import Source, read_lines
from firedup.render.text import timeline_text
from firedup.tables.budget import budgets
from firedup.tables.compare import compare
from firedup.tables.compare_text import comparison_text
from firedup.tables.load import load
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

REALGPU = SHARED / "realgpu"
needs_realgpu = pytest.mark.skipif(not (REALGPU / "sglang_nograph.log").is_file(), reason="shared/realgpu is not here")


def _run(path: Path, scanner: str = "auto") -> Run:
    (run,) = parse_paths([str(path)], scanner=scanner).runs
    return run


# --- the real start-ups -----------------------------------------------------------------------


@needs_realgpu
def test_the_cold_sglang_start_is_cold_with_its_silent_warmup_request_as_evidence() -> None:
    run = _run(REALGPU / "sglang_nograph.log")
    warm_up = [s for s in run.silences if s.phase == "warmup"]
    assert len(warm_up) == 1
    s = warm_up[0]
    assert 85 <= s.seconds <= 90 and (s.after, s.before) == ("http.running", "ready")
    assert s.since_text.startswith("Uvicorn running on") and s.text.startswith("Prefill batch")
    assert s.cache == "kernel_jit" and s.cause is not None and s.cause.startswith("probably the first warm-up request")
    verdict = run.caches["kernel_jit"]
    assert (verdict.verdict, verdict.basis, verdict.phase) == ("cold", "silence", "warmup")
    assert [n for n, _ in verdict.evidence] == [s.since_line, s.line]
    # no line names DeepGEMM, FlashInfer's autotune or torch.compile: firedup claims nothing of them
    assert {k: v.verdict for k, v in run.caches.items() if k != "kernel_jit"} == {
        "deepgemm_jit": "unknown", "flashinfer_autotune": "unknown", "torch_compile": "unknown"}


@needs_realgpu
def test_the_same_config_again_is_not_called_warm_without_evidence() -> None:
    """A short quiet warm-up is no positive sign of a warm cache (issue 38): unknown, said why."""
    run = _run(REALGPU / "sglang_nograph-warm.log")
    assert not [s for s in run.silences if s.phase == "warmup"]
    verdict = run.caches["kernel_jit"]
    assert (verdict.verdict, verdict.basis) == ("unknown", "timing") and verdict.seconds is not None
    assert verdict.seconds <= 10 and "nothing says the cache was used" in verdict.reason


@needs_realgpu
def test_a_poller_s_health_requests_do_not_break_a_silence() -> None:
    """The cold log holds a `GET /health` line every 0.3 s during its silent warm-up request."""
    text = (REALGPU / "sglang_nograph.log").read_text()
    run = _run(REALGPU / "sglang_nograph.log")
    s = next(s for s in run.silences if s.phase == "warmup")
    between = text.split("\n")[s.since_line:s.line - 1]
    assert sum('"GET /health HTTP/1.1" 503' in line for line in between) > 200


@needs_realgpu
@pytest.mark.parametrize("name", ["vllm_eager", "vllm_graph"])
def test_the_vllm_starts_show_their_silent_span_inside_engine_init(name: str) -> None:
    run = _run(REALGPU / f"{name}.log")
    inside = [s for s in run.silences if s.umbrella == "engine_init" and s.phase is None]
    assert len(inside) == 1
    s = inside[0]
    assert s.seconds >= 95 and s.before == "engine.ready"
    assert s.since_text.startswith("Free memory on device") and s.text.startswith("Kernel JIT monitor activated")
    assert run.caches["flashinfer_autotune"].verdict == "cold"
    assert any("No FlashInfer autotune cache entries found" in t for _, t in run.caches["flashinfer_autotune"].evidence)
    assert run.caches["kernel_jit"].verdict == "cold"
    if name == "vllm_graph":
        assert run.caches["torch_compile"].verdict == "cold"  # `Cache the graph ...`, `Compiling a graph ...`
    else:
        assert run.caches["torch_compile"].verdict == "unknown"  # --enforce-eager: no torch.compile
        # the cold-cache line before the silence (no milestone between them) is part of its evidence
        assert any("No FlashInfer autotune cache" in t for _, t in s.evidence)


@needs_realgpu
def test_compare_of_the_cold_and_warm_start_explains_the_difference_by_cold_caches() -> None:
    cmp = compare(load([str(REALGPU / "sglang_nograph.log"), str(REALGPU / "sglang_nograph-warm.log")]))
    (diff,) = cmp.caches
    assert diff.kind == "kernel_jit" and diff.phase == "warmup" and diff.seconds is not None
    assert 85 <= diff.seconds <= 90
    assert "cold kernel_jit caches: +1 min 2" in cmp.headline and "in warmup" in cmp.headline
    text = " ".join(comparison_text(cmp).split())
    assert "cold kernel_jit caches: +1 min" in text and "1 cold run vs 1 warm" in text
    assert "evidence in" in text and "sglang_nograph.log: line " in text
    assert cmp.as_json()["cache_differences"][0]["kind"] == "kernel_jit"


@needs_realgpu
def test_budget_keeps_cold_and_warm_starts_apart_and_splits_them_by_verdict_on_request() -> None:
    runs = load([str(REALGPU / "sglang_nograph.log"), str(REALGPU / "sglang_nograph-warm.log")])
    report = budgets(runs)
    [apart] = report.splits
    assert apart is not None
    names = dict(zip(runs.runs["run_id"].to_list(), runs.runs["source"].to_list(), strict=True))
    assert [Path(names[r]).name for r in apart[0].cold] == ["sglang_nograph.log"]
    assert "cold kernel_jit caches" in apart[0].reasons[apart[0].cold[0]]
    split = budgets(runs, ["cache_start"])
    assert sorted(b.label for b in split.budgets) == ["cold start (cache_start=cold)", "warm start (cache_start=warm)"]
    assert not any("cold-cache and" in n for n in split.grouping.notes)


# --- both readers see the same silences ----------------------------------------------------------


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _startup(silent_middle: list[str]) -> list[str]:
    lines = ["[2026-11-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
             "[2026-11-01 10:00:01] Init torch distributed begin.",
             "[2026-11-01 10:00:02] Init torch distributed ends. elapsed=0.5 s, mem usage=0.1 GB",
             "[2026-11-01 10:00:02] Load weight begin. avail mem=70.00 GB",
             "[2026-11-01 10:00:05] Load weight end. elapsed=3.0 s, type=X, avail mem=60.00 GB, mem usage=10.00 GB.",
             "[2026-11-01 10:00:05] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB",
             "[2026-11-01 10:00:05] Memory pool end. avail mem=40.00 GB",
             "[2026-11-01 10:00:06] max_total_num_tokens=1000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
             "max_running_requests=64, context_len=4096, available_gpu_mem=40.00 GB",
             "[2026-11-01 10:00:06] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"]
    lines += silent_middle
    lines += ["[2026-11-01 10:01:10] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
              "#running-req: 0, #queue-req: 0",
              '[2026-11-01 10:01:10] INFO:     127.0.0.1:4000 - "POST /generate HTTP/1.1" 200 OK',
              "[2026-11-01 10:01:10] The server is fired up and ready to roll!"]
    return lines


def _health(seconds: range) -> list[str]:
    return [f'[2026-11-01 10:00:{s:02d}] INFO:     127.0.0.1:{5000 + s} - "GET /health HTTP/1.1" 503 Service Unavailable'
            for s in seconds]


@pytest.mark.skipif(not batch.available(), reason="the batch engine needs Hyperscan")
def test_both_readers_measure_a_silence_filled_with_access_and_inert_lines_alike(tmp_path: Path) -> None:
    """A silence inside a stretch the batch engine would skip (no rule literal): it reads every
    line of a start-up, so both engines see the same gaps and the same unknown lines."""
    middle = [*_health(range(7, 40)), "some third-party line without a time", *_health(range(40, 60))]
    path = _write(tmp_path, _startup(middle))
    fmt = get_format("sglang")
    _events, want, _clock = scan(fmt, read_lines(Source(str(path), path)))
    _events2, got, _clock2 = batch.scan_file(path, fmt)
    assert [g.key() for g in got.gaps] == [g.key() for g in want.gaps]
    assert got.unmatched == want.unmatched
    (gap,) = [g for g in want.gaps if g.ts.minus(g.since) >= GAP_SECONDS]
    assert gap.since_text.startswith("Uvicorn running") and gap.text.startswith("Prefill batch")
    assert [u.text for u in want.unmatched] == ["some third-party line without a time"]
    for scanner in ("incremental", "batch"):
        run = _run(path, scanner)
        (s,) = run.silences
        assert s.seconds == 64 and s.phase == "warmup" and s.lines_inside == 1
        assert s.templates[0].text == "some third-party line without a time"
        assert s.cause is not None and "1 line without the server's own time" in s.cause


def test_a_line_of_the_server_s_own_ends_a_silence(tmp_path: Path) -> None:
    path = _write(tmp_path, _startup(["[2026-11-01 10:00:40] some line of the server's own"]))
    run = _run(path, "incremental")
    assert [round(s.seconds) for s in run.silences] == [34, 30]
    assert run.caches["kernel_jit"].verdict == "cold"  # a 34 s silence in the warm-up request


def test_a_short_silent_warmup_request_says_neither_cold_nor_warm(tmp_path: Path) -> None:
    lines = [line.replace("10:01:10", "10:00:20") for line in _startup([])]
    run = _run(_write(tmp_path, lines), "incremental")
    (s,) = run.silences
    assert s.seconds == 14
    verdict = run.caches["kernel_jit"]
    assert (verdict.verdict, verdict.basis) == ("unknown", "silence")


# --- unknown lines ---------------------------------------------------------------------------------


def test_unknown_lines_in_unattributed_time_are_mined_into_templates(tmp_path: Path) -> None:
    """412 lines no rule knows between distributed init and the weight load (time no phase
    covers): one template, counted, shown where it explains the time."""
    lines = _startup([])
    load = next(i for i, line in enumerate(lines) if "Load weight begin" in line)
    compile_lines = [f"[2026-11-01 10:00:{2 + i // 20:02d}] [DeepGEMM] Compiling kernel gemm_{i:x} N={128 * i} K=7168"
                     for i in range(412)]
    shifted = [line.replace("10:00:02] Load weight begin", "10:00:23] Load weight begin")
               .replace("10:00:05]", "10:00:26]").replace("10:00:06]", "10:00:27]") for line in lines[load:]]
    run = _run(_write(tmp_path, lines[:load] + compile_lines + shifted), "incremental")
    (span,) = run.unknown
    assert span.seconds >= 20 and span.lines == 412 and (span.after, span.before) == ("dist_init.end", "load_weight.begin")
    (template,) = span.templates
    assert template.count == 412 and template.text == f"[DeepGEMM] Compiling kernel {WILD} {WILD} {WILD}"
    assert run.as_contract()["unknown_lines"][0]["templates"][0]["count"] == 412
    assert "412 lines no rule knows" in " ".join(timeline_text(run).split())


def test_the_miner_masks_numbers_and_ids_and_keeps_words() -> None:
    lines = [(1, "Compiling kernel 0x7f3a N=4096"), (2, "Compiling kernel 0x1b2c N=128"),
             (3, "loading deadbeefcafe0123 shard"), (4, "loading 0123abcdef456789 shard"),
             (5, "something else entirely here")]
    templates = mine(lines)
    assert [(t.text, t.count, t.line) for t in templates] == [
        (f"Compiling kernel {WILD} {WILD}", 2, 1), (f"loading {WILD} shard", 2, 3),
        ("something else entirely here", 1, 5)]
    assert mine([]) == [] and mine([(1, "   ")]) == []


# --- the generator's cold and warm starts, and the views ---------------------------------------------


@pytest.mark.parametrize(("name", "kind", "verdict"), [
    ("sglang-cold-start.log", "kernel_jit", "cold"), ("sglang-warm-start.log", "kernel_jit", "warm"),
    ("vllm-cold-start.log", "torch_compile", "cold"), ("vllm-warm-start.log", "torch_compile", "warm"),
    ("vllm-cold-start.log", "kernel_jit", "cold")])
def test_the_generated_cold_and_warm_starts_read_as_such(name: str, kind: str, verdict: str) -> None:
    # read with its cold twin: a warm verdict needs a positive sign, here the twin (issue 38)
    twin = name.replace("warm", "cold")
    runs = parse_paths([str(SAMPLE_LOGS / twin), str(SAMPLE_LOGS / name)]).runs
    run = next(r for r in runs if r.source.endswith(name))
    assert run.caches[kind].verdict == verdict, run.caches[kind]
    assert run.caches[kind].evidence


def test_a_short_quiet_warm_up_alone_is_not_called_warm() -> None:
    """Read alone, the generated warm start has no positive sign of a warm cache: unknown (issue 38)."""
    run = _run(SAMPLE_LOGS / "sglang-warm-start.log")
    assert run.caches["kernel_jit"].verdict == "unknown", run.caches["kernel_jit"]


def test_the_contract_carries_the_new_keys_and_the_tables_their_columns() -> None:
    result = parse_paths([str(SAMPLE_LOGS / "sglang-cold-start.log")])
    (row,) = result.as_contract()["runs"]
    assert row["silence_threshold_seconds"] == 10.0
    assert row["silences"][0]["phase"] == "warmup" and row["silences"][0]["offset"] is not None
    assert row["caches"]["kernel_jit"]["verdict"] == "cold" and row["unknown_lines"] == []
    runs = load([str(SAMPLE_LOGS / "sglang-cold-start.log"), str(SAMPLE_LOGS / "sglang-warm-start.log")])
    assert sorted(runs.runs["cache_start"].to_list()) == ["cold", "warm"]
    silent = json.loads(runs.runs.filter(runs.runs["cache_start"] == "cold")["silences_json"][0])
    assert silent[0]["cache"] == "kernel_jit"


def test_the_timeline_view_and_chart_show_the_silence() -> None:
    from firedup.render.charts import timeline_data

    run = _run(SAMPLE_LOGS / "sglang-cold-start.log")
    text = timeline_text(run)
    assert "silences (no log line for 10 s or more):" in text
    assert "in warmup, between http.running and ready" in text and "kernel_jit cold: warmup was silent for 1 min 44 s" in text
    assert all(len(line) <= 80 for line in text.split("\n"))
    data = timeline_data(load([str(SAMPLE_LOGS / "sglang-cold-start.log")]))
    (q,) = data.silences.iter_rows(named=True)
    assert q["seconds"] == run.silences[0].seconds and q["start"] == pytest.approx(
        run.silences[0].start.minus(run.first_ts))  # type: ignore[arg-type]


@pytest.mark.skipif(not batch.available(), reason="the batch engine needs Hyperscan")
def test_a_start_up_that_never_gets_ready_is_watched_for_a_bounded_number_of_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `engine.WATCH_LINES` lines without `ready`, neither engine records silences, and the
    batch engine goes back to skipping lines unread: both still agree."""
    from firedup.read import engine

    monkeypatch.setattr(engine, "WATCH_LINES", 60)
    lines = _startup([])[:-3]  # no warm-up answer, no ready line
    lines += [f"[2026-11-01 10:{1 + i // 60:02d}:{i % 60:02d}] a line of its own" for i in range(0, 200, 20)]
    lines += [f"[2026-11-01 11:{i // 60:02d}:{i % 60:02d}] something no rule knows {i}" for i in range(0, 3000, 15)]
    path = _write(tmp_path, lines)
    fmt = get_format("sglang")
    _events, want, _clock = scan(fmt, read_lines(Source(str(path), path)))
    _events2, got, _clock2 = batch.scan_file(path, fmt)
    assert [g.key() for g in got.gaps] == [g.key() for g in want.gaps]
    assert got.unmatched == want.unmatched
    assert want.gaps and all(g.line <= 60 for g in want.gaps)  # none recorded past the limit
    assert max(u.line for u in want.unmatched) == 60
    assert got.skipped > 0  # the rest was skipped unread


def test_check_names_the_cold_cache_behind_a_regression(tmp_path: Path) -> None:
    """A cold start checked against warm starts of its config regresses in the warm-up request,
    and check says which cache was cold there, with the verdict's line."""
    import dataclasses
    from datetime import timedelta

    from firedup.synth import generate
    from firedup.synth.samples import sample_scenarios
    from firedup.tables.check import check

    warm = sample_scenarios()["sglang-warm-start"]
    for i in range(3):
        scenario = dataclasses.replace(warm, name=f"warm{i}", start=warm.start + timedelta(hours=i + 1))
        generate(scenario, i + 1).write(tmp_path / f"warm{i}.log")
    report = check(load([str(SAMPLE_LOGS / "sglang-cold-start.log")]), load([str(tmp_path)]))
    (run,) = report.runs
    warmup = next(f for f in run.findings if f.measure == "warmup")
    assert warmup.regressed and warmup.caches.startswith("kernel_jit cold: warmup was silent for")
    assert "caches: kernel_jit cold" in report.text()
    settled = [f for f in run.findings if f.measure == "load_weights"]
    assert settled and not settled[0].regressed and settled[0].caches == ""


@needs_realgpu
def test_the_report_shows_the_silences_and_the_cold_vs_warm_explanation(tmp_path: Path) -> None:

    report_of([str(REALGPU / "sglang_nograph.log"), str(REALGPU / "sglang_nograph-warm.log")], tmp_path / "r")
    md = (tmp_path / "r" / "report.md").read_text()
    section = md.split("## Silent time", 1)[1].split("\n## ", 1)[0]
    assert "in warmup, between http.running and ready" in section
    assert "probably the first warm-up request" in section
    assert "cold kernel\\_jit caches: +1 min 29 s in warmup" in section
    assert "| kernel\\_jit | cold |" in section and "| kernel\\_jit | warm |" in section
    html = (tmp_path / "r" / "index.html").read_text()
    assert 'id="silences"' in html and "cold kernel_jit caches: +1 min 29 s in warmup" in html


CORPUS_JIT = SHARED / "corpus" / "sglang" / "024_wsl-qwen3-0.6b-0.4.6post2-flashinfer-jit-2025-05.log"


@pytest.mark.skipif(not CORPUS_JIT.is_file(), reason="shared/corpus is not here")
def test_flashinfer_jit_lines_inside_a_silence_are_shown_as_what_filled_it() -> None:
    """A real SGLang 0.4.6 start whose first warm-up request waits 32 s on `flashinfer.jit:
    Loading JIT ops` (a logger with its own clock, not the server's): the silence is named and
    the lines are read (issue 31): each silence they fill says how much of it they time, in cuda_graph
    (22 s of 25 s) as in warm-up (32 s of 37 s), never "the phase's own work" in one and "probably"
    in the other, and the cold verdict rests on those lines."""
    run = _run(CORPUS_JIT)
    graph = next(s for s in run.silences if s.phase == "cuda_graph")
    warm = next(s for s in run.silences if s.phase == "warmup")
    assert (graph.seconds, warm.seconds) == (25, 37)
    assert graph.cause == "kernel_jit: 22 s of it by the log's own lines (line 16, 17)" and graph.cache == "kernel_jit"
    assert warm.cause == "kernel_jit: 32 s of it by the log's own lines (line 27, 28)" and warm.cache == "kernel_jit"
    verdict = run.caches["kernel_jit"]
    assert (verdict.verdict, verdict.basis) == ("cold", "line")
    assert verdict.reason.startswith("the log's own lines time its work: 22 s in cuda_graph, 32 s in warmup")
    assert [n for n, _ in verdict.evidence] == [16, 17, 27, 28]


def test_compilers_seen_after_the_last_line_of_an_unfinished_phase_make_the_kernel_jit_cold(tmp_path: Path) -> None:
    """Issue 41: a real start with torch.compile ended `kernel_jit unknown` after 6 minutes of
    ptxas: the unfinished phase was cut at its last stamped line, and what `wait --pid` saw after
    it was dropped."""
    from datetime import timedelta

    from firedup.read.clock import Stamp
    from firedup.timeline.pipeline import parse_paths
    from firedup.timeline.silence import Observed, observed_caches

    log = tmp_path / "server.log"
    log.write_text("[2026-01-10 10:00:00] server_args={'model_path': 'm', 'tp_size': 1}\n"
                   "[2026-01-10 10:00:01] Load weight begin. avail mem=78.5 GB\n"
                   "[2026-01-10 10:00:05] Load weight end. type=M, avail mem=60.00 GB\n"
                   "[2026-01-10 10:00:06] Memory pool end. avail mem=10.00 GB\n"
                   "[2026-01-10 10:00:07] Capture cuda graph begin. This can take up to several minutes. "
                   "avail mem=9.0 GB\n")
    (run,) = parse_paths([str(log)]).runs
    assert run.outcome == "incomplete" and run.stopped_in == "cuda_graph" and run.last_ts is not None
    start, end = run.last_ts.dt + timedelta(seconds=30), run.last_ts.dt + timedelta(seconds=390)
    stretch = Observed("compiling", Stamp(start, start.isoformat()), Stamp(end, end.isoformat()),
                       "compiling kernels (ptxas)", ("ptxas",))
    observed_caches(run, [stretch], get_format("sglang"))
    verdict = run.caches.get("kernel_jit")
    assert verdict is not None and verdict.verdict == "cold" and verdict.phase == "cuda_graph", verdict
    assert verdict.seconds == 360

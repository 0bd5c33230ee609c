"""A run's advice (timeline.advice): causes its log shows, ranked by what fixing them saves, each
with measured seconds, evidence lines that exist and say it, the engine's fix and a basis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SAMPLE_LOGS, SHARED
from firedup.formats import get_format
from firedup.read.sources import normalise
from firedup.timeline.advice import UNKNOWN, ranked
from firedup.timeline.findings import Evidence, Item
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run


def _run(path: Path) -> Run:
    result = parse_paths([str(path)])
    assert result.runs, path
    return result.runs[0]


def check_evidence(item: Item, engine: str) -> None:
    """Every evidence line is in its source at its number, says what the item quotes, and is a
    line its `shows` remedy proves; an item has some."""
    fmt = get_format(engine)
    assert item.evidence, item
    for e in item.evidence:
        raw = Path(e.source).read_bytes().split(b"\n")[e.line - 1].decode(errors="replace")
        quoted = " ".join(e.text.rstrip("…").split())
        logical = [line.text for line in normalise(raw, e.line) if quoted in " ".join(line.text.split())]
        assert logical, f"{e.source}:{e.line} does not say {e.text!r}"
        remedy = fmt.advice.remedy(e.shows)
        assert remedy is not None, e.shows
        assert any(remedy.regex.search(fmt.layout(text).msg) for text in logical), (e, remedy.proves)


def test_production_sample_first_item_is_the_cold_deepgemm_cache_measured_and_fixed() -> None:
    run = _run(SAMPLE_LOGS / "prod-tp8-eagle3-01.log")
    first = run.advice[0]
    verdict = run.caches["deepgemm_jit"]
    assert first.kind == "cache:deepgemm_jit" and verdict.verdict == "cold"
    assert first.seconds == verdict.seconds and first.seconds > 8 * 60  # measured: the verdict's span
    assert "sglang.compile_deep_gemm" in first.fix
    assert first.saving_seconds is not None and first.basis.startswith("published figure (")
    # 1 s per kernel shape compiled (SGLang's own line): two shapes in this log
    shapes = sum("DeepGEMM JIT Compiling for" in line for line in (SAMPLE_LOGS / "prod-tp8-eagle3-01.log").open())
    assert first.saving_seconds == pytest.approx(first.seconds - shapes)
    assert any(e.shows == "cache:deepgemm_jit" for e in first.evidence)
    for item in run.advice:
        check_evidence(item, run.engine)


def test_debug_sample_has_no_deepgemm_item_and_its_graph_capture_none() -> None:
    run = _run(SAMPLE_LOGS / "debug-tp8-eagle3-01.log")
    kinds = [i.kind for i in run.advice]
    assert "cache:deepgemm_jit" not in kinds and "graph_capture" not in kinds
    assert kinds  # the weight load is still there
    for item in run.advice:
        check_evidence(item, run.engine)


def test_graph_capture_item_leaves_out_the_cold_cache_time_inside_it() -> None:
    run = _run(SAMPLE_LOGS / "prod-tp8-eagle3-01.log")
    capture = next(i for i in run.advice if i.kind == "graph_capture")
    deepgemm = next(i for i in run.advice if i.kind == "cache:deepgemm_jit")
    total = sum(p.seconds or 0.0 for p in run.run_phases() if p.name == "cuda_graph")
    assert capture.seconds == pytest.approx(total - deepgemm.seconds)


def _bar_steps(raw: str) -> dict[int, float]:
    """bs -> seconds from a tqdm line, read another way: each frame's `(bs=N` and `[MM:SS<`."""
    frames = re.findall(r"\(bs=(\d+)[^)]*\):\s+\d+%\|[^|]*\|\s*(\d+)/\d+ \[(\d+):(\d+)<", raw)
    done: dict[int, float] = {}
    previous, at, last = 0, 0, 0
    for bs, n, m, sec in frames:
        if int(n) > previous:  # the size named by the frame before finished now
            done[last] = 60 * int(m) + int(sec) - at
            previous, at = int(n), 60 * int(m) + int(sec)
        last = int(bs)
    return done


def test_graph_capture_saving_is_the_largest_sizes_time_from_the_bars_steps() -> None:
    path = SAMPLE_LOGS / "prod-tp8-eagle3-01.log"
    run = _run(path)
    capture = next(i for i in run.advice if i.kind == "graph_capture")
    bar = next(e for e in capture.evidence if e.text.startswith("Capturing batches"))
    steps = _bar_steps(path.read_bytes().split(b"\n")[bar.line - 1].decode())
    first = max(steps)  # captured first, largest first: counted no more than the slowest other
    steps[first] = min(steps[first], max(v for k, v in steps.items() if k != first))
    trimmed = sum(v for k, v in steps.items() if k > first / 2)
    assert capture.saving_seconds == pytest.approx(trimmed) and capture.basis == "this log"
    assert "throughput the log does not show" in capture.fix


def test_weight_load_is_measured_against_the_storage_bound_with_its_efficiency() -> None:
    run = _run(SAMPLE_LOGS / "prod-tp8-eagle3-01.log")
    load = next(i for i in run.advice if i.kind == "load_weights")
    assert load.basis == "physical bound" and load.efficiency is not None
    nvme = load.bounds[0]
    assert load.efficiency == pytest.approx(nvme["efficiency"], abs=1e-3)
    assert load.saving_seconds == pytest.approx(load.seconds - nvme["seconds"], abs=0.01)


def test_a_vllm_cold_compile_cache_is_advised_with_its_published_warm_cost() -> None:
    run = _run(SAMPLE_LOGS / "vllm-cold-start.log")
    item = next(i for i in run.advice if i.kind == "cache:torch_compile")
    assert item.basis.startswith("published figure (marin-community/marin#7615")
    assert item.saving_seconds == pytest.approx(item.seconds - 2.32)
    for i in run.advice:
        check_evidence(i, run.engine)


def test_a_warm_start_gets_no_cold_cache_item() -> None:
    run = _run(SAMPLE_LOGS / "vllm-warm-start.log")
    assert not [i for i in run.advice if i.kind.startswith("cache:")]


def test_every_sample_item_has_evidence_that_says_it() -> None:
    for path in sorted(SAMPLE_LOGS.glob("*.log")):
        for run in parse_paths([str(path)]).runs:
            for item in run.advice:
                check_evidence(item, run.engine)


def test_an_item_survives_its_json() -> None:
    item = Item("graph_capture", "capture", 12.5, [Evidence("a.log", 3, "Capture cuda graph end.", "graph_capture")],
                "fewer sizes", None, UNKNOWN, "cuda_graph", None, [], "2 of 3 runs", "detail")
    assert Item.of(item.as_contract()) == item


_items = st.builds(lambda s, v: Item("k", "c", s, [], "f", v, UNKNOWN if v is None else "this log"),
                   st.floats(0, 1e4), st.none() | st.floats(0, 1e4))


@given(st.lists(_items, max_size=12))
def test_ranked_puts_the_largest_known_saving_first_and_unknown_last(items: list[Item]) -> None:
    order = ranked(items)
    known = [i.saving_seconds for i in order if i.saving_seconds is not None]
    assert known == sorted(known, reverse=True)
    flags = [i.saving_seconds is None for i in order]
    assert flags == sorted(flags)  # no known saving after an unknown one
    assert sorted(map(id, order)) == sorted(map(id, items))


@pytest.mark.skipif(not (SHARED / "realgpu").is_dir(), reason="../shared/realgpu is absent")
def test_a_real_cold_warm_up_is_a_cold_kernel_jit_item_with_the_silence_as_evidence() -> None:
    run = _run(SHARED / "realgpu" / "sglang_nograph.log")
    item = run.advice[0]
    assert item.kind == "cache:kernel_jit" and item.phase == "warmup" and item.seconds > 60
    assert item.saving_seconds is None  # alone, nothing measures what a warm cache saves
    check_evidence(item, run.engine)


def _late_slow_log(path: Path) -> Path:
    """A TP4 start-up whose TP3 came to distributed init 60 s after the others and loaded its
    weights 60 s slower, its shards read one after another."""
    lines = ["[2026-01-01 10:00:00] server_args=ServerArgs(model_path='org/m', tp_size=4, disable_cuda_graph=True)"]
    lines += [f"[2026-01-01 10:00:01 TP{r}] Init torch distributed begin." for r in range(3)]
    lines += ["[2026-01-01 10:01:01 TP3] Init torch distributed begin."]
    lines += [f"[2026-01-01 10:01:02 TP{r}] Init torch distributed ends. mem usage=0.10 GB" for r in range(4)]
    lines += [f"[2026-01-01 10:01:02 TP{r}] Load weight begin. avail mem=70.00 GB" for r in range(4)]
    lines += ["Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:40<00:00, 10.00s/it]"]
    end = ("Load weight end. elapsed={} s, type=LlamaForCausalLM, avail mem=50.00 GB, mem usage=20.00 GB.")
    lines += [f"[2026-01-01 10:01:42 TP{r}] " + end.format("40.00") for r in range(3)]
    lines += ["[2026-01-01 10:02:42 TP3] " + end.format("100.00")]
    lines += [f"[2026-01-01 10:02:43 TP{r}] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB"
              for r in range(4)]
    lines += ["[2026-01-01 10:02:44 TP0] max_total_num_tokens=1000, max_prefill_tokens=16384, context_len=4096",
              "[2026-01-01 10:02:45] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
              "[2026-01-01 10:02:47] The server is fired up and ready to roll!"]
    log = path / "late-slow.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_late_peer_a_slow_rank_and_serial_shards_are_each_an_item(tmp_path: Path) -> None:
    run = _run(_late_slow_log(tmp_path))
    items = {i.kind: i for i in run.advice}
    late = items["dist_init"]
    assert "TP3" in late.cause and late.seconds == pytest.approx(60) and late.saving_seconds == pytest.approx(60)
    assert [e.line for e in late.evidence] == [5, 2]  # TP3's begin line, then another rank's
    slow = items["slow_rank"]
    assert "TP3" in slow.cause and slow.seconds == pytest.approx(60) and slow.basis == "this log"
    assert items["serial_shards"].saving_seconds is None and items["serial_shards"].evidence[0].line == 14
    load = items["load_weights"]
    assert load.basis == "physical bound" and load.bounds  # 20 GiB per GPU stated, 4 ranks on one node
    assert load.bounds[0]["seconds"] == pytest.approx(4 * 20 * 1.073741824 / (4.9 * 1.073741824), rel=1e-3)
    for item in run.advice:
        check_evidence(item, run.engine)

"""The issue's "done when" on the bundled sample_logs/: compare, budget and the trace export.

Expected figures come from the log text through plain regexes (the args line, the first
and the ready timestamps), not from firedup's parser; a file with a restart is cut where the
launcher starts again.
"""

from __future__ import annotations

import json
import re
import statistics
from datetime import datetime
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS, sample_truth
from firedup.tables.budget import budgets
from firedup.tables.compare import compare
from firedup.tables.export import export
from firedup.tables.load import load
from tracecheck import no_nan, validate_trace

pytestmark = pytest.mark.skipif(not any(SAMPLE_LOGS.glob("*.log")), reason="sample_logs/ not generated yet")

STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d+)?[^\]]*\]", re.M)
READY = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d+)?[^\]]*\] The server is fired up and ready to roll", re.M)


def _by_text(path: Path) -> list[dict[str, object]]:
    """model, disable_cuda_graph and seconds to ready of each startup in a file."""
    text = path.read_text(errors="replace")
    # a process starts with the launcher's banner (0.5.x) or, failing that, with its args line
    starts = [m.start() for m in re.finditer(r"^.*'python -m sglang\.launch_server' is still supported", text, re.M)]
    starts = starts or [m.start() for m in re.finditer(r"^.*server_args=", text, re.M)]
    if not starts:  # not an SGLang log (the vLLM samples): another engine, left out of these figures
        return []
    starts[0] = 0
    out = []
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        segment = text[begin:end]
        if "server_args=" not in segment:
            continue
        args = segment[segment.index("server_args="):].split("\n", 1)[0]
        # ServerArgs(model_path='m', ...) up to 0.5.18; {'model_path': 'm', ...} from 0.5.19
        model = re.search(r"model_path'?\s*[:=]\s*'([^']*)'", args)
        stated = re.search(r"disable_cuda_graph'?\s*[:=]\s*(True|False)", args)
        # 0.5.14+ spell --disable-cuda-graph as the decode graph backend "disabled"
        backend = re.search(r"cuda_graph_backend_decode'?\s*[:=]\s*'(\w+)'", args)
        first, ready = STAMP.search(segment), READY.search(segment)
        if not (model and (stated or backend) and first):
            continue
        dcg = (stated[1] == "True") if stated else (backend is not None and backend[1] == "disabled")
        secs = None
        if ready:
            fmt = "%Y-%m-%d %H:%M:%S"
            secs = (datetime.strptime(ready[1], fmt) - datetime.strptime(first[1], fmt)).total_seconds()
        out.append({"model": model[1], "disable_cuda_graph": dcg, "ready_seconds": secs})
    return out


@pytest.fixture(scope="module")
def facts() -> dict[str, dict[str, object]]:
    out = {}
    for path in sorted(SAMPLE_LOGS.glob("*.log")):
        for i, got in enumerate(_by_text(path)):
            out[f"{path}#{i}"] = got
    return out


def _main_model(facts: dict[str, dict[str, object]]) -> str:
    models = [str(f["model"]) for f in facts.values() if f["ready_seconds"] is not None]
    return statistics.mode(models)


def _times(facts: dict[str, dict[str, object]], dcg: bool) -> list[float]:
    model = _main_model(facts)
    return [float(f["ready_seconds"]) for f in facts.values()  # type: ignore[arg-type]
            if f["model"] == model and f["disable_cuda_graph"] is dcg and f["ready_seconds"] is not None]


def test_compare_splits_debug_and_production(facts: dict[str, dict[str, object]]) -> None:
    cmp = compare(load([str(SAMPLE_LOGS)]), ["disable_cuda_graph"])
    groups = {g.key["disable_cuda_graph"]: g for g in cmp.grouping.groups}
    debug, prod = _times(facts, True), _times(facts, False)
    assert len(debug) >= 3 and len(prod) >= 3
    assert groups[True].median == pytest.approx(statistics.median(debug), abs=1.0)
    assert groups[False].median == pytest.approx(statistics.median(prod), abs=1.0)
    assert groups[False].max == pytest.approx(max(prod), abs=1.0)
    (d,) = [x for x in cmp.deltas if x.other is groups[False]]
    assert d.main_phase == "cuda_graph"
    assert cmp.headline.startswith("debug (disable_cuda_graph=True) ready in a median of")
    assert "cuda_graph and draft.cuda_graph explain" in cmp.headline
    assert any("model" in lo.reason for lo in cmp.grouping.left_out)  # the TP1 small model
    # the vLLM samples: another engine (and model), named, never mixed into the SGLang story
    vllm = sorted(SAMPLE_LOGS.glob("vllm-*.log"))
    assert vllm and all(any(lo.source.endswith(p.name) and lo.reason.startswith("other engine")
                            for lo in cmp.grouping.left_out) for p in vllm)


def test_budget_covers_every_production_run(facts: dict[str, dict[str, object]]) -> None:
    report = budgets(load([str(SAMPLE_LOGS)]), ["disable_cuda_graph"], 0.01)
    prod = next(b for b in report.budgets if b.key == {"disable_cuda_graph": False})
    assert prod.budget_seconds is not None and prod.budget_seconds >= max(_times(facts, False))
    assert prod.risk == 0.01 and prod.distribution_free_risk == pytest.approx(1 / (prod.n + 1))


def test_trace_export_is_valid(tmp_path: Path) -> None:
    out = tmp_path / "samples.trace.json"
    runs = load([str(SAMPLE_LOGS)])
    export(runs, "chrome-trace", out)
    events = validate_trace(json.loads(out.read_text(), parse_constant=no_nan))
    assert sum(1 for e in events if e["name"] == "process_name") == len(runs)
    assert any(e["ph"] == "i" and e["name"] == "crash" for e in events)
    assert any(e["ph"] == "C" for e in events)


def test_cuda_graph_delta_matches_the_generator_truth() -> None:
    """The generator's intended cuda_graph seconds (truth.json), a second route to the same figure."""
    truth = sample_truth()
    intended = [r["phases"]["cuda_graph"] for f in truth["files"].values() for r in f["runs"]
                if r["outcome"] == "ready" and r["config"].get("tp_size") == 8 and r["phases"].get("cuda_graph")]
    cmp = compare(load([str(SAMPLE_LOGS)]), ["disable_cuda_graph"])
    prod = next(g for g in cmp.grouping.groups if g.key == {"disable_cuda_graph": False})
    assert prod.n == len(intended)
    # the log prints whole seconds, so allow one second
    assert prod.phases["cuda_graph"] == pytest.approx(statistics.median(intended), abs=1.0)

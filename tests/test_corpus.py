"""The hand-read labels of the real-log corpus (../shared/corpus/sglang), one test per label,
with the semantics of ../shared/tools/check_corpus.py.

The label tables (MILESTONE_LABELS, PHASE_LABELS) and the timestamp comparison (ts_match) are
imported from the checker itself; `test_the_checker_agrees_per_log` runs the checker's own
`check_one` (with its subprocess call answered in-process) and holds this module's per-label
verdicts to its totals. Labels the parser misses today are listed in XFAIL, strictly: a fixed
one fails the suite until it is taken off the list, and a regression fails it at once.
Skipped cleanly when ../shared is absent.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import types
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED, corpus_logs
from firedup.timeline.pipeline import parse_paths

CHECKER_FILE = SHARED / "tools" / "check_corpus.py"


def _load_checker() -> types.ModuleType | None:
    if not CHECKER_FILE.is_file():
        return None
    spec = importlib.util.spec_from_file_location("check_corpus", CHECKER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECKER = _load_checker()
LOGS = corpus_logs("sglang") if CHECKER is not None else []

# (log id, label) -> why the parser misses it today.
XFAIL = {
    ("008", "tp"): "error-only excerpt of a 2-node TP8xPP2 run: no args line, only TP0/TP1 rank tags",
    ("009", "tp"): "crash-only excerpt: TP8 is stated only in the launch command, which is not in the log",
    ("020", "tp"): "node 2 of a 2-node TP16 group: only TP11/TP15 appear, no args line",
    ("022", "tp"): "tail starting mid-traceback: one timestamped line, no rank tag or args",
    ("028", "disable_cuda_graph"): "crash in check_server_args before any phase: the log never shows the flag",
    ("029", "disable_cuda_graph"): "excerpt ends in weight loading: no args line, no graph capture",
    ("032", "crash"): "the 2024 error text was cut off by the issue compilation: nothing fatal is left",
    ("038", "tp"): "3-node key lines with rank tags of one node only and a dict-form args line without tp",
    ("041", "disable_cuda_graph"): "4 author-selected key lines: graph capture omitted, no args line",
    ("044", "tp"): "leader pod of a 2-node TP16 run: only TP0-TP7 appear",
    ("045", "disable_cuda_graph"): "author-selected key lines: no args line and no capture line",
    ("051", "tp"): "10-line fragment where only TP0's capture lines were kept",
}


def labels_of(log: Path) -> dict[str, Any]:
    """The label file next to a log, found the way the checker finds it."""
    label_file = log.with_suffix(".json") if log.suffix != ".gz" else log.with_suffix("").with_suffix(".json")
    return dict(json.loads(label_file.read_text())) if label_file.exists() else {}


@functools.cache
def contract_of(log: Path) -> dict[str, Any]:
    """`firedup parse LOG --json`, computed once per log, through the library."""
    result = parse_paths([str(log)])
    return result.as_contract()


def verdicts(labels: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, bool]:
    """Each label of one log -> whether the parse matches it, in check_one's terms."""
    assert CHECKER is not None
    ts_match = CHECKER.ts_match
    exp = labels.get("expected") or {}
    out: dict[str, bool] = {}
    if "first_ts" in exp:
        out["first_ts"] = any(ts_match(exp["first_ts"], r.get("first_ts")) for r in runs)
    for key, names in CHECKER.MILESTONE_LABELS.items():
        if key in exp:
            names = names if isinstance(names, tuple) else (names,)
            got = [m.get("ts") for r in runs for m in r.get("milestones", []) if m.get("name") in names]
            out[key] = any(ts_match(exp[key], g) for g in got)
    for key, names in CHECKER.PHASE_LABELS.items():
        if key in exp:
            names = names if isinstance(names, tuple) else (names,)
            want = float(exp[key])
            got = [ph.get("seconds") for r in runs for ph in r.get("phases", []) if ph.get("name") in names]
            out[key] = any(g is not None and abs(float(g) - want) < 0.015 for g in got)
    if labels.get("reached_ready") is not None:
        out["reached_ready"] = any(r.get("outcome") == "ready" for r in runs) == bool(labels["reached_ready"])
    if labels.get("crash"):
        out["crash"] = any(r.get("outcome") == "crashed" for r in runs)
    if labels.get("tp"):
        out["tp"] = any((r.get("config") or {}).get("tp_size") == labels["tp"] for r in runs)
    if labels.get("disable_cuda_graph") is not None:
        out["disable_cuda_graph"] = any(
            (r.get("config") or {}).get("disable_cuda_graph") == labels["disable_cuda_graph"] for r in runs)
    return out


def _label_params() -> list[Any]:
    params = []
    for log in LOGS:
        for key in verdicts(labels_of(log), []):
            reason = XFAIL.get((log.name[:3], key))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(log, key, id=f"{log.name[:3]}:{key}", marks=marks))
    return params


@pytest.mark.parametrize(("log", "key"), _label_params())
def test_label(log: Path, key: str) -> None:
    data = contract_of(log)
    assert data["errors"] == [], "the log failed to parse"
    labels = labels_of(log)
    shown = (labels.get("expected") or {}).get(key, labels.get(key))
    assert verdicts(labels, data["runs"])[key], f"{log.name}: {key}={shown!r} not matched"


def test_the_xfail_table_names_real_labels() -> None:
    if not LOGS:
        pytest.skip("the corpus or its checker (../shared) is absent")
    known = {(log.name[:3], key) for log in LOGS for key in verdicts(labels_of(log), [])}
    assert set(XFAIL) <= known


def _answer_in_process(cmd: list[str], **_: Any) -> types.SimpleNamespace:
    """Stands in for subprocess.run in the checker: `... parse LOG --json` via the library."""
    data = contract_of(Path(cmd[-2]))
    return types.SimpleNamespace(returncode=1 if data["errors"] else 0, stdout=json.dumps(data), stderr="")


@pytest.mark.parametrize("log", LOGS, ids=[log.name[:3] for log in LOGS])
def test_the_checker_agrees_per_log(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CHECKER is not None
    shim = types.SimpleNamespace(run=_answer_in_process, TimeoutExpired=TimeoutError)
    monkeypatch.setattr(CHECKER, "subprocess", shim)
    labels = labels_of(log)
    matched, total, _misses, fatal = CHECKER.check_one(log, labels, ["firedup"], 30.0)
    assert fatal is None
    mine = verdicts(labels, contract_of(log)["runs"])
    assert (sum(mine.values()), len(mine)) == (matched, total)


# --- the real H200 start-ups of shared/realgpu: ready, with the milestones their lines state ----

REALGPU = SHARED / "realgpu"
# (a literal a line states, the milestone it is): each such line is one milestone
STATED = {
    "sglang": (("server_args=", "server_args"), ("Load weight begin", "load_weight.begin"),
               ("Load weight end", "load_weight.end"), ("CUDA graph begin", "cuda_graph.begin"),
               ("CUDA graph end", "cuda_graph.end"), ("The server is fired up", "ready")),
    "vllm": (("non-default args:", "server_args"), ("Initializing a V1 LLM engine", "engine.init"),
             ("Loading model from scratch", "load_weight.begin"), ("Model loading took", "model_loading.end"),
             ("torch.compile took", "torch_compile.end"), ("Graph capturing finished", "cuda_graph.end"),
             ("init engine (profile", "engine.ready"), ("Starting vLLM server on", "http.running"),
             ("Application startup complete.", "ready")),
}


def _realgpu_logs() -> list[Path]:
    return sorted(REALGPU.glob("*.log")) if REALGPU.is_dir() else []


@pytest.mark.skipif(not _realgpu_logs(), reason="shared/realgpu is not here")
@pytest.mark.parametrize("path", _realgpu_logs(), ids=lambda p: p.name)
def test_a_real_startup_is_ready_with_the_milestones_its_lines_state(path: Path) -> None:
    """Ready where the outside poller saw a 200 (else a crash or a hang, never ready), with one
    milestone per line that states one (a speculative run's draft lines under their `draft.` name)."""
    result = parse_paths([str(path)])
    [run] = result.runs
    health = path.with_suffix(".health.txt")
    answered = health.is_file() and any(line.split()[2:3] == ["200"] for line in health.read_text().splitlines()
                                        if line.strip()[:1].isdigit())
    if not answered:
        assert run.outcome != "ready", run.outcome
        return
    assert run.outcome == "ready" and run.ready_kind == "server"
    assert run.crash is None  # a SIGTERM after ready is a shutdown, not a crash
    lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")  # physical lines (a bar's \r is not one)
    for literal, name in STATED[run.engine]:
        stated = [n for n, text in enumerate(lines, start=1) if literal in text]
        got = sorted(m.line for m in run.milestones if m.name in (name, f"draft.{name}"))
        assert got == stated, (literal, name)

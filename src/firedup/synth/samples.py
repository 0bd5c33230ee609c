"""The bundled `sample_logs/`: the motivating story, a crash, a restart, a small model.

The story (shared brief): the same big model at TP8 with an EAGLE3 draft was ready in
about 4 minutes in debug runs (`--disable-cuda-graph`), so a wait loop allowed 15; the
production runs (CUDA graphs on) take 14 to 16 minutes, almost all of the difference
being graph capture (target prefill with a DeepGEMM JIT stretch, target verify, draft).
`write_samples` writes every file, `truth.json` (what the generator intended) and a
README with figures computed from that truth.
"""

from __future__ import annotations

import contextlib
import json
import random
import statistics
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from firedup.synth import generate
from firedup.synth.model import H100, H200, DraftSpec, ModelSpec, RunSpec, Scenario, SyntheticLog

# Qwen3-235B-A22B (94 layers, 4 KV heads of 128) in block FP8 at TP8 on H200: each rank holds
# one KV head, 94 * 128 * 2 bytes * (K + V) = 48 KiB per token; the EAGLE3 draft is one layer.
QWEN3_235B_FP8 = ModelSpec(
    path="Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", arch="Qwen3MoeForCausalLM", weight_gb=29.62, shards=24,
    load_s=192.0, context_len=262144, kv_bytes_per_token=94 * 128 * 2 * 2, quant="fp8", deepgemm=True,
    draft=DraftSpec(path="lmsys/Qwen3-235B-A22B-EAGLE3", arch="LlamaForCausalLMEagle3", weight_gb=0.46,
                    load_s=5.2, kv_bytes_per_token=128 * 2 * 2),
)
# Qwen3-4B (36 layers, 8 KV heads of 128) in bf16 on one H100.
QWEN3_4B = ModelSpec(
    path="Qwen/Qwen3-4B-Instruct-2507", arch="Qwen3ForCausalLM", weight_gb=7.67, shards=3, load_s=4.6,
    context_len=262144, kv_bytes_per_token=36 * 8 * 128 * 2 * 2,
)

SAMPLE_DATE = datetime(2026, 11, 3, 8, 0, 0)  # SGLang 0.5.23 shipped on 2026-10-30
COMMAND = "firedup synth sample_logs/ --seed 7"


def _story_spec(cuda_graph: bool, rng: random.Random, **kw: Any) -> RunSpec:
    return RunSpec(model=QWEN3_235B_FP8, tp_size=8, gpu=H200, cuda_graph=cuda_graph, mem_fraction_static=0.85,
                   cuda_graph_max_bs=64, after_ready_s=rng.uniform(60, 150), user_requests=rng.choice((0, 2, 3)), **kw)


def sample_scenarios(seed: int = 7) -> dict[str, Scenario]:
    """The sample set, by file stem, in the order the README lists it."""
    rng = random.Random(f"samples:{seed}")
    out: dict[str, Scenario] = {}
    day = SAMPLE_DATE
    for i in range(1, 6):
        start = day + timedelta(hours=rng.uniform(0, 8), seconds=rng.randrange(60))
        out[f"debug-tp8-eagle3-{i:02d}"] = Scenario(
            f"debug-tp8-eagle3-{i:02d}", (_story_spec(False, rng),), start.replace(microsecond=0),
            "Debug run: Qwen3-235B FP8 + EAGLE3 draft, TP8 on H200, --disable-cuda-graph (no capture).")
        day += timedelta(hours=9)
    for i in range(1, 6):
        start = day + timedelta(hours=rng.uniform(0, 8), seconds=rng.randrange(60))
        out[f"prod-tp8-eagle3-{i:02d}"] = Scenario(
            f"prod-tp8-eagle3-{i:02d}", (_story_spec(True, rng),), start.replace(microsecond=0),
            "Production run: the same model and draft with CUDA graphs on (prefill graph with a DeepGEMM JIT "
            "stretch, target verify graph, draft decode/extend graphs).")
        day += timedelta(hours=9)
    out["oom-in-cuda-graph"] = Scenario(
        "oom-in-cuda-graph",
        (RunSpec(model=QWEN3_235B_FP8, tp_size=8, gpu=H200, mem_fraction_static=0.94, cuda_graph_max_bs=256,
                 crash="oom_cuda_graph"),),
        (day + timedelta(hours=2, minutes=17)).replace(microsecond=0),
        "Production flags with --mem-fraction-static 0.94 and --cuda-graph-max-bs-decode 256: the target verify "
        "graph capture runs out of GPU memory; SIGQUIT kills the process tree.")
    day += timedelta(hours=9)
    out["crash-then-restart"] = Scenario(
        "crash-then-restart",
        (_story_spec(True, rng, crash="nccl_shm"), _story_spec(True, rng)),
        (day + timedelta(hours=1, minutes=3)).replace(microsecond=0),
        "Two startups in one container log (restart policy): NCCL cannot create its /dev/shm segment during "
        "parallel init, the container restarts after /dev/shm is enlarged, and the second startup reaches ready.",
        restart_gap_s=35.0)
    out["small-tp1"] = Scenario(
        "small-tp1",
        (RunSpec(model=QWEN3_4B, version="0.5.12", tp_size=1, gpu=H100, piecewise=True, cuda_graph_max_bs=256,
                 mem_fraction_static=0.85, host="127.0.0.1", prober="127.0.0.1", health_period_s=10.0,
                 after_ready_s=45.0, user_requests=2),),
        datetime(2026, 6, 2, 14, 21, 7),
        "A small model on one GPU, written in the SGLang 0.5.12 format (ServerArgs(...) repr, `Init torch "
        "distributed`, `Capture cuda graph ... Time elapsed:`, piecewise prefill graph); no rank tag on one GPU.")
    return out


def write_samples(out_dir: str | Path, seed: int = 7, names: list[str] | None = None,
                  command: str | None = None) -> list[Path]:
    """Write the sample logs, `truth.json` and `README.md` into `out_dir`; returns the log paths."""
    scenarios = sample_scenarios(seed)
    if names:
        unknown = [n for n in names if n not in scenarios]
        if unknown:
            raise ValueError(f"unknown scenario {', '.join(unknown)}; known: {', '.join(scenarios)}")
        scenarios = {n: scenarios[n] for n in names}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    logs: dict[str, SyntheticLog] = {}
    paths = []
    for name, scenario in scenarios.items():
        log = generate(scenario, seed)
        path = out / f"{name}.log"
        log.write(path)
        logs[f"{name}.log"] = log
        paths.append(path)
    cmd = command or (COMMAND if seed == 7 else f"firedup synth {out_dir} --seed {seed}")
    files = {fname: log.truth() for fname, log in logs.items()}
    truth_path = out / "truth.json"
    if names and truth_path.exists():  # a partial rewrite keeps the other files' truth
        with contextlib.suppress(ValueError, AttributeError):
            files = {**json.loads(truth_path.read_text(encoding="utf-8")).get("files", {}), **files}
    manifest = {
        "generator": "firedup.synth", "seed": seed, "command": cmd,
        "notes": "Times are seconds. ready_offset_s runs from the run's first timestamped line to the ready line. "
                 "`phases` are the intended critical-path durations; `reported` are the values printed on "
                 "elapsed= / Time elapsed: lines, per rank ('-' = no rank tag); line numbers are 1-based "
                 "physical lines.",
        "files": files,
    }
    truth_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if not names:  # the README describes the whole set
        (out / "README.md").write_text(readme(logs, cmd), encoding="utf-8")
    return paths


def story_figures(logs: dict[str, SyntheticLog]) -> dict[str, float]:
    """Medians of the story from the generator's truth: debug and production ready, capture share."""
    debug = [lg.runs[0] for n, lg in logs.items() if n.startswith("debug-")]
    prod = [lg.runs[0] for n, lg in logs.items() if n.startswith("prod-")]
    out: dict[str, float] = {}
    if debug:
        out["debug_median_ready_s"] = statistics.median(r.ready_offset_s or 0.0 for r in debug)
    if prod:
        out["prod_median_ready_s"] = statistics.median(r.ready_offset_s or 0.0 for r in prod)
        out["prod_median_capture_s"] = statistics.median(
            r.phases.get("cuda_graph", 0.0) + r.phases.get("draft.cuda_graph", 0.0) for r in prod)
        out["prod_median_capture_share"] = statistics.median(
            (r.phases.get("cuda_graph", 0.0) + r.phases.get("draft.cuda_graph", 0.0)) / (r.ready_offset_s or 1.0)
            for r in prod)
    return out


def _mmss(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = round(seconds)
    return f"{total // 60} min {total % 60:02d} s"


def readme(logs: dict[str, SyntheticLog], command: str) -> str:
    rows = []
    for fname, log in logs.items():
        for run in log.runs:
            what = log.scenario.description if run.run_index == 0 else "(second startup in the same file)"
            outcome = (f"ready in {_mmss(run.ready_offset_s)}" if run.outcome == "ready"
                       else f"crashed ({run.crash.category} in {run.crash.phase}, line {run.crash.line})"
                       if run.crash else run.outcome)
            flags = f"TP{run.config['tp_size']}" + (", no CUDA graph" if run.config["disable_cuda_graph"] else "")
            rows.append(f"| `{fname if run.run_index == 0 else ''}` | {run.version} | {flags} | {outcome} | {what} |")
    fig = story_figures(logs)
    story = ""
    if "debug_median_ready_s" in fig and "prod_median_ready_s" in fig:
        story = (f"\nIn the generator's own numbers: debug runs are ready in a median "
                 f"{_mmss(fig['debug_median_ready_s'])}, production runs in {_mmss(fig['prod_median_ready_s'])}; "
                 f"CUDA graph capture (target + draft) takes a median {_mmss(fig['prod_median_capture_s'])}, "
                 f"{100 * fig['prod_median_capture_share']:.0f} % of a production startup.\n")
    return f"""# Sample logs (synthetic)

These SGLang server logs are **synthetic**: firedup's own seeded generator (`firedup.synth`)
wrote them in the format SGLang prints (0.5.23, and 0.5.12 for `small-tp1.log`), as catalogued
in the project's SGLang format notes. They are the input of `make demo` and of the charts, and
the golden tests parse them. No real log was copied; real logs live in the shared corpus.

Regenerate them (same seed, byte-identical files):

    {command}

(`make samples` runs exactly that.) `truth.json` holds, per file and per startup, what the
generator intended: outcome, ready offset from the first timestamped line, the intended phase
durations, the durations printed on `elapsed=` lines per rank, the crash category, phase and
line, the health-probe answers, and the flags.

## The story

The same model, Qwen3-235B-A22B FP8 with an EAGLE3 draft, at TP8 on 8 x H200. Debug runs
(`--disable-cuda-graph`) are ready in about 4 minutes, so a wait loop allowed 15. Production runs
(CUDA graphs on) take 14 to 16 minutes: the target prefill graph (whose warm-up forward triggers a
DeepGEMM JIT compile of the FP8 GEMMs on TP0), the target verify graph and the draft decode/extend
graphs. A Kubernetes readiness probe (`GET /health` every 5 s) gets no answer while the port is
closed, `503 Service Unavailable` between `Uvicorn running` and `fired up`, then `200 OK` with an
empty body.
{story}
## Files

| file | SGLang | flags | outcome | what |
|---|---|---|---|---|
{chr(10).join(rows)}

Every scheduler rank prints its own lines (` TP0` ... ` TP7`), interleaved, with per-rank spread
and, in some runs, a straggler rank (listed in `truth.json`). Only TP0 prints the tqdm capture bars
(with `\\r` redraws and other ranks' lines glued after a bar), the DeepGEMM lines and
`max_total_num_tokens`; global rank 0 prints the weight-shard bar. Third-party noise is there too:
torch glog `W...` lines, `[Gloo]` lines, the chat-template line, warm-up and probe `Prefill batch`
lines.
"""

"""The bundled `sample_logs/`: the motivating story, a crash, a restart, a small model, vLLM.

The story (shared brief): the same big model at TP8 with an EAGLE3 draft was ready in
about 4 minutes in debug runs (`--disable-cuda-graph`), so a wait loop allowed 15; the
production runs (CUDA graphs on) take 14 to 16 minutes, almost all of the difference
being graph capture (target prefill with a DeepGEMM JIT stretch, target verify, draft).
Two vLLM runs of one model show the second engine: an `--enforce-eager` run (no
torch.compile, no graph capture) and a default run (cold torch.compile, then CUDA graphs);
two SGLang runs of that model on the same GPUs, without and with CUDA graphs, are what
`firedup compare --by engine` compares them with.
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

from firedup.core.files import write_text
from firedup.errors import UsageError
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

# Qwen3-32B (64 layers, 8 KV heads of 128) in bf16 at TP2 on H100: 30.5 GiB of weights and
# 4 KV heads per rank, 64 * 4 * 128 * 2 bytes * (K + V) = 128 KiB per token; 17 checkpoint shards.
# A dense model captures each CUDA graph shape in about a fifth of the 235B MoE's time in SGLang.
QWEN3_32B_TP2 = ModelSpec(
    path="Qwen/Qwen3-32B", arch="Qwen3ForCausalLM", weight_gb=30.53, shards=17, load_s=24.0, context_len=40960,
    kv_bytes_per_token=64 * 4 * 128 * 2 * 2, compile_s=62.0, capture_scale=0.2,
)

# Qwen3-8B (36 layers, 8 KV heads of 128) in bf16 on one GPU, as on a real H200 start-up (15.28 GB).
QWEN3_8B = ModelSpec(
    path="Qwen/Qwen3-8B", arch="Qwen3ForCausalLM", weight_gb=15.28, shards=5, load_s=3.0, context_len=40960,
    kv_bytes_per_token=36 * 8 * 128 * 2 * 2, compile_s=30.0,
)

# Qwen3-14B (40 layers, 8 KV heads of 128) in bf16 on one H200: 27.5 GiB of weights in 8 shards.
QWEN3_14B = ModelSpec(
    path="Qwen/Qwen3-14B", arch="Qwen3ForCausalLM", weight_gb=27.52, shards=8, load_s=6.0, context_len=40960,
    kv_bytes_per_token=40 * 8 * 128 * 2 * 2, compile_s=38.0,
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
    # vLLM: its own random stream, so the SGLang files above stay what they were.
    vrng = random.Random(f"samples-vllm:{seed}")
    for stem, eager, what in (
            ("vllm-tp2-eager", True, "vLLM 0.13 with --enforce-eager: no torch.compile and no CUDA graph capture."),
            ("vllm-tp2-compiled", False, "vLLM 0.13 defaults: a cold torch.compile (Dynamo, then Inductor) and CUDA "
                                         "graphs (mixed prefill-decode PIECEWISE, then decode FULL).")):
        start = datetime(2026, 11, 9, 9, 0, 0) + timedelta(hours=vrng.uniform(0, 6), seconds=vrng.randrange(60))
        out[stem] = Scenario(
            stem,
            (RunSpec(model=QWEN3_32B_TP2, engine="vllm", version="0.13.0", tp_size=2, gpu=H100, port=8000,
                     enforce_eager=eager, after_ready_s=vrng.uniform(60, 120), user_requests=vrng.choice((1, 2, 3))),),
            start.replace(microsecond=0),
            f"Qwen3-32B at TP2 on 2 x H100, {what} Read through `kubectl logs --timestamps`.",
            collector="kubectl")
    # SGLang on the vLLM runs' model, TP size, GPUs and collector, without and with CUDA graphs as the
    # vLLM pair is, so `compare --by engine` has one model on both engines. Its own random stream too.
    srng = random.Random(f"samples-sglang-tp2:{seed}")
    for stem, graphs, what in (
            ("sglang-tp2-no-cuda-graph", False, "SGLang 0.5.23 with --disable-cuda-graph: no graph capture."),
            ("sglang-tp2-cuda-graph", True, "SGLang 0.5.23 defaults: prefill (breakable) and decode CUDA graphs.")):
        start = datetime(2026, 11, 10, 9, 0, 0) + timedelta(hours=srng.uniform(0, 6), seconds=srng.randrange(60))
        out[stem] = Scenario(
            stem,
            (RunSpec(model=QWEN3_32B_TP2, tp_size=2, gpu=H100, cuda_graph=graphs, cuda_graph_max_bs=256,
                     after_ready_s=srng.uniform(60, 120), user_requests=srng.choice((1, 2, 3))),),
            start.replace(microsecond=0),
            f"Qwen3-32B at TP2 on 2 x H100 like the vLLM runs, {what} Read through `kubectl logs --timestamps`.",
            collector="kubectl")
    # The same config started twice, on a fresh machine (kernel JIT caches empty; vLLM: torch.compile
    # cache empty too) and again (caches warm): what `compare` explains in cache terms. Like
    # a real H200 pair of SGLang starts without graphs (88 s of silent warm-up request, then 1-3 s). Own streams.
    crng = random.Random(f"samples-cold-warm:{seed}")
    for stem, cold in (("sglang-cold-start", True), ("sglang-warm-start", False)):
        start = datetime(2026, 11, 12, 9, 0, 0) + timedelta(hours=crng.uniform(0, 6), seconds=crng.randrange(60))
        out[stem] = Scenario(
            stem,
            (RunSpec(model=QWEN3_8B, tp_size=1, gpu=H200, cuda_graph=False, host="127.0.0.1", prober="127.0.0.1",
                     health_period_s=0.5, after_ready_s=crng.uniform(20, 40), user_requests=1, cold_caches=cold),),
            start.replace(microsecond=0),
            "Qwen3-8B on one H200 with --disable-cuda-graph, " + (
                "first start on a fresh machine: the warm-up request waits on kernel JIT with no log line."
                if cold else "the same config again: kernel caches warm, the warm-up request takes seconds."))
    for stem, cold in (("vllm-cold-start", True), ("vllm-warm-start", False)):
        start = datetime(2026, 11, 13, 9, 0, 0) + timedelta(hours=crng.uniform(0, 6), seconds=crng.randrange(60))
        out[stem] = Scenario(
            stem,
            (RunSpec(model=QWEN3_14B, engine="vllm", version="0.13.0", tp_size=1, gpu=H200, port=8000,
                     after_ready_s=crng.uniform(20, 40), user_requests=1, compile_cache=not cold, cold_caches=cold),),
            start.replace(microsecond=0),
            "Qwen3-14B on one H200, vLLM 0.13 defaults, " + (
                "first start: torch.compile compiles and stores its graph, kernels JIT in a silent warm-up."
                if cold else "the same config again: the compiled graph loads from the cache, kernels are warm.")
            + " Read through `kubectl logs --timestamps`.",
            collector="kubectl")
    return out


def write_samples(out_dir: str | Path, seed: int = 7, names: list[str] | None = None,
                  command: str | None = None) -> list[Path]:
    """Write the sample logs, `truth.json` and `README.md` into `out_dir`; returns the log paths."""
    scenarios = sample_scenarios(seed)
    if names:
        unknown = [n for n in names if n not in scenarios]
        if unknown:
            raise UsageError(f"unknown scenario {', '.join(unknown)}; known: {', '.join(scenarios)}")
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
    write_text(truth_path, json.dumps(manifest, indent=1) + "\n", named=False)
    if not names:  # the README describes the whole set
        write_text(out / "README.md", readme(logs, cmd), named=False)
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
            flags = f"TP{run.config['tp_size']}"
            if run.config.get("enforce_eager"):
                flags += ", --enforce-eager (no compile, no CUDA graph)"
            elif run.config["disable_cuda_graph"]:
                flags += ", no CUDA graph"
            engine = {"sglang": "SGLang", "vllm": "vLLM"}.get(run.engine, run.engine)
            rows.append(f"| `{fname if run.run_index == 0 else ''}` | {engine} {run.version} | {flags} | {outcome} "
                        f"| {what} |")
    fig = story_figures(logs)
    story = ""
    if "debug_median_ready_s" in fig and "prod_median_ready_s" in fig:
        story = (f"\nIn the generator's own numbers: debug runs are ready in a median "
                 f"{_mmss(fig['debug_median_ready_s'])}, production runs in {_mmss(fig['prod_median_ready_s'])}; "
                 f"CUDA graph capture (target + draft) takes a median {_mmss(fig['prod_median_capture_s'])}, "
                 f"{100 * fig['prod_median_capture_share']:.0f} % of a production startup.\n")
    vllm_part = vllm_readme(logs) + engines_readme(logs)
    return f"""# Sample logs (synthetic)

These server logs are **synthetic**: firedup's own seeded generator (`firedup.synth`) wrote
them in the format SGLang prints (0.5.23, and 0.5.12 for `small-tp1.log`) and, for the
`vllm-*` files, the format vLLM 0.13 prints, as catalogued in the project's format notes.
They are the input of `make demo` and of the charts, and the golden tests parse them. No
real log was copied; real logs live in the shared corpus.

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

| file | engine | flags | outcome | what |
|---|---|---|---|---|
{chr(10).join(rows)}

Every scheduler rank prints its own lines (` TP0` ... ` TP7`), interleaved, with per-rank spread
and, in some runs, a straggler rank (listed in `truth.json`). Only TP0 prints the tqdm capture bars
(with `\\r` redraws and other ranks' lines glued after a bar), the DeepGEMM lines and
`max_total_num_tokens`; global rank 0 prints the weight-shard bar. Third-party noise is there too:
torch glog `W...` lines, `[Gloo]` lines, the chat-template line, warm-up and probe `Prefill batch`
lines.
{vllm_part}"""


def vllm_readme(logs: dict[str, SyntheticLog]) -> str:
    """The vLLM section of the samples README, with figures from the generator's truth."""
    runs = {name: lg.runs[0] for name, lg in logs.items() if lg.runs and lg.runs[0].engine == "vllm"}
    eager = next((r for r in runs.values() if r.config.get("enforce_eager")), None)
    compiled = next((r for r in runs.values() if not r.config.get("enforce_eager")), None)
    if eager is None or compiled is None:
        return ""

    def took(run: Any, phase: str) -> str:
        value = run.reported.get(phase, {})
        return f"{next(iter(value.values())):.1f} s" if value else "-"

    rows = "\n".join(
        f"| `{name}` | {_mmss(run.ready_offset_s)} | {took(run, 'load_weights')} | {took(run, 'torch_compile')} | "
        f"{took(run, 'cuda_graph')} | {took(run, 'engine_init')} | {run.health['n_refused']} |"
        for name, run in runs.items())
    return f"""
## vLLM

The two `vllm-*` files start the same model (Qwen3-32B, TP2 on 2 x H100) with vLLM 0.13's V1
engine: the API server, the `EngineCore_DP0` process and one `Worker_TPn` process per GPU, each
line behind vLLM's cyan `(Name pid=N)` prefix (a worker prints its first lines, distributed
init, before the prefix is installed). They were read with `kubectl logs --timestamps`, so every
line starts with the container runtime's RFC 3339 time: vLLM itself prints no year, and
uvicorn's lines no time at all. `--enforce-eager` skips both torch.compile and graph capture.
vLLM refuses connections until `Application startup complete.`: a readiness probe before it
leaves no trace in the log, after it the access log shows `GET /health` answered `200 OK`.

| file | ready | weights | torch.compile | graph capture | `init engine` | probes refused |
|---|---|---|---|---|---|---|
{rows}

(The durations are the ones the log prints: `Loading weights took`, `torch.compile takes ...
in total`, `Graph capturing finished in ... secs` (whole seconds), and vLLM's own `init engine
(profile, create kv cache, warmup model) took`, which runs from the end of model loading.)
"""


def engines_readme(logs: dict[str, SyntheticLog]) -> str:
    """The SGLang-vs-vLLM section: the runs of the one model both engines started, from the truth."""
    runs = {name: lg.runs[0] for name, lg in logs.items() if lg.runs and lg.runs[0].outcome == "ready"}
    by_engine: dict[str, set[str]] = {}
    for run in runs.values():
        by_engine.setdefault(str(run.config.get("model_path")), set()).add(run.engine)
    shared = [model for model, engines in by_engine.items() if {"sglang", "vllm"} <= engines]
    if not shared:
        return ""
    model = shared[0]
    chosen = {name: run for name, run in runs.items() if run.config.get("model_path") == model}

    def phase(run: Any, name: str) -> str:
        return f"{run.phases[name]:.0f} s" if run.phases.get(name) else "-"

    rows = "\n".join(
        f"| `{name}` | {'SGLang' if run.engine == 'sglang' else 'vLLM'} {run.version} | "
        f"{'off' if run.config.get('disable_cuda_graph') else 'on'} | {_mmss(run.ready_offset_s)} | "
        f"{phase(run, 'load_weights')} | {phase(run, 'torch_compile')} | {phase(run, 'cuda_graph')} |"
        for name, run in sorted(chosen.items(), key=lambda kv: (kv[1].engine, not kv[1].config.get("disable_cuda_graph"))))
    return f"""
## SGLang vs vLLM

The two `sglang-*` files start that model ({model}, TP2 on 2 x H100, read through `kubectl logs
--timestamps` too) with SGLang 0.5.23, without and with CUDA graphs as the vLLM pair is, so
`firedup compare sample_logs/ --by engine` compares the engines on one model. SGLang has no
torch.compile step by default; with graphs on it captures a prefill (breakable) and a decode graph.

| file | engine | CUDA graphs | ready | weights | torch.compile | graph capture |
|---|---|---|---|---|---|---|
{rows}

(The generator's intended durations, critical path over ranks.)
"""

"""firedup's own seeded generator of server startup logs, with the truth about each one.

    from firedup.synth import generate, sample_scenarios
    log = generate(sample_scenarios(seed=7)["prod-tp8-eagle3-01"], seed=7)
    log.write("prod.log"); log.runs[0].ready_offset_s

Same scenario and seed, same bytes: every random draw comes from `random.Random(seed)`
and every time from the scenario's start, never from the wall clock. Engine-specific
writing lives in one module per engine (`synth/sglang.py`, `synth/vllm.py`); `ENGINES`
maps an engine name to its `write_run`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from firedup.synth import sglang, vllm
from firedup.synth._output import Clock, Stream, kubectl_stamp
from firedup.synth.model import (
    H100,
    H200,
    CrashTruth,
    DraftSpec,
    GpuSpec,
    ModelSpec,
    RunSpec,
    RunTruth,
    Scenario,
    SyntheticLog,
)

# engine name -> write_run(stream, spec, rng, t0, run_index) -> pending truth
ENGINES: dict[str, Callable[..., Any]] = {"sglang": sglang.write_run, "vllm": vllm.write_run}
COLLECTORS: dict[str, Callable[[Clock], Callable[[float], str]]] = {"kubectl": kubectl_stamp}


def generate(scenario: Scenario, seed: int) -> SyntheticLog:
    """Write every run of `scenario` into one log; return its text and ground truth."""
    rng = random.Random(f"{seed}:{scenario.name}")
    clock = Clock(scenario.start)
    if scenario.collector is not None and scenario.collector not in COLLECTORS:
        raise ValueError(f"unknown collector {scenario.collector!r}; known: {', '.join(COLLECTORS)}")
    stream = Stream(clock, COLLECTORS[scenario.collector](clock) if scenario.collector else None)
    pending = []
    t0 = 0.0
    for index, spec in enumerate(scenario.runs):
        try:
            write_run = ENGINES[spec.engine]
        except KeyError:
            raise ValueError(f"no synthetic writer for engine {spec.engine!r}; known: {', '.join(ENGINES)}") from None
        run = write_run(stream, spec, rng, t0, index)
        pending.append(run)
        t0 = stream.last_t + scenario.restart_gap_s * rng.uniform(0.8, 1.2)
    for run in pending:
        for seq in run.keys.values():
            stream.set_key(seq, f"seq:{seq}")
    pieces, lines = stream.render_marked()
    total_lines = "".join(pieces).count("\n")
    truths: list[RunTruth] = []
    for run in pending:
        truth = run.truth
        keyed = {name: lines.get(f"seq:{seq}") for name, seq in run.keys.items()}
        truth.first_line = keyed["first"] or 0
        truth.ready_line = keyed.get("ready")
        truth.last_line = keyed["last"] or total_lines
        if truth.crash is not None:
            truth.crash.line = keyed.get("crash") or 0
        truths.append(truth)
    return SyntheticLog(scenario.name, scenario, seed, pieces, truths, span_s=stream.last_t)


__all__ = [
    "COLLECTORS", "ENGINES", "H100", "H200", "CrashTruth", "DraftSpec", "GpuSpec", "ModelSpec", "RunSpec", "RunTruth", "Scenario",
    "SyntheticLog", "generate",
]

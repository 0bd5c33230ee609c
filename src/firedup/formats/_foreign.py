"""Engines firedup does not read, and the literals that give their logs away.

Not a format (the registry skips modules whose name starts with `_`): a log of one of these
is never read with another engine's rules, but its reader is told what it looks like, so
"no known engine" names the engine instead of leaving the user to guess. Facts: each project's
own startup lines (TGI's launcher, router and shard names; the launchers' and loaders' messages of
the others).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Foreign:
    """An engine firedup does not read: its name as people write it, and weighted literals."""

    title: str
    literals: Mapping[str, float]

    def score(self, sample: str, found: Container[str] | None = None) -> float:
        """The weight of its literals in `sample` (or in `found`, those a caller's scan saw)."""
        present = sample if found is None else found
        return sum(weight for literal, weight in self.literals.items() if literal in present)


FOREIGN = (
    Foreign("TGI (text-generation-inference)", {
        "text_generation_launcher": 10.0, "text_generation_router": 10.0, "text-generation-launcher": 8.0,
        "text_generation_server": 8.0, "text-generation-inference": 6.0, "Starting download process": 3.0,
        "Successfully downloaded weights": 3.0, "Shard ready in": 4.0,
    }),
    Foreign("llama.cpp", {
        "llama_model_loader:": 10.0, "llm_load_tensors:": 8.0, "llama_new_context_with_model:": 8.0,
        "llama_context:": 6.0, "ggml_cuda_init:": 6.0, "load_tensors:": 4.0, "main: server is listening on": 8.0,
        "srv  load_model:": 6.0, "llama_server": 4.0, "build: ": 1.0, "gguf": 2.0,
    }),
    Foreign("Ollama", {
        "source=server.go": 8.0, "source=routes.go": 8.0, "Listening on 127.0.0.1:11434": 10.0,
        "msg=\"starting llama server\"": 10.0, "msg=\"llama runner started": 10.0, "OLLAMA_": 6.0,
        "ollama": 3.0, "source=sched.go": 6.0,
    }),
    Foreign("TensorRT-LLM", {
        "[TRT-LLM]": 10.0, "[TensorRT-LLM]": 10.0, "TensorRT-LLM version": 10.0, "trtllm-serve": 8.0,
        "tensorrt_llm": 4.0, "[TRT]": 4.0,
    }),
    Foreign("LMDeploy", {
        "lmdeploy": 8.0, "turbomind": 8.0, "TurboMind": 8.0, "[TM]": 6.0
    }),
)


def looks_like(sample: str, found: Container[str] | None = None) -> tuple[Foreign, float] | None:
    """The engine firedup does not read whose literals best explain `sample`, with its score.
    `found`: the literals a caller's scan already found in `sample` (one pass for all of
    them: searching a big sample once per literal costs milliseconds a file)."""
    scored = sorted(((engine.score(sample, found), i) for i, engine in enumerate(FOREIGN)), reverse=True)
    if not scored or scored[0][0] <= 0:
        return None
    score, index = scored[0]
    return FOREIGN[index], score


def literals() -> frozenset[str]:
    """Every literal of every foreign engine: what a caller's scan looks for (`looks_like`'s `found`)."""
    return frozenset(lit for engine in FOREIGN for lit in engine.literals)

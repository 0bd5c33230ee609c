"""Physical limits of a start-up's phases, as data: the published figures advice measures a phase
against (docs/advice.md lists the same table; tests/test_limits.py holds the two together).

A bound is the fastest a phase can go on a class of hardware: bytes over the storage class's
GB/s, over the host-to-device copy's. `efficiency` is bound time over measured time (1.0: at the
limit). Figures are the sources' own, never firedup's guesses; a phase with no published bound
shows none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    """One published figure: what moves at `gb_per_s` (GB = 1e9 bytes) or takes `seconds`."""

    name: str
    what: str  # "storage" (bytes to the host) | "h2d" (host to one GPU) | "nccl_init" (ranks meeting)
    source: str
    gb_per_s: float | None = None
    seconds: float | None = None
    scale: str = ""  # the scale the figure was measured at ("8 ranks")

    def bound_seconds(self, gigabytes: float) -> float | None:
        return None if self.gb_per_s is None else gigabytes / self.gb_per_s


_GIB = 1.073741824  # GB per GiB

# Bytes to the host, fastest first (the advice bound is the fastest class a log may be read from).
STORAGE = (
    Limit("local NVMe (Run:ai streamer)", "storage", "run-ai/runai-model-streamer#120", gb_per_s=4.9 * _GIB),
    Limit("page cache, one reader", "storage", "scitix/InstantTensor#1 (safetensors, a user test)", gb_per_s=4.0),
    Limit("NFS over RDMA, one rank", "storage", "run-ai/runai-model-streamer#135", gb_per_s=1.7 * _GIB),
    Limit("object storage (S3 on the same node, Run:ai)", "storage", "run-ai/runai-model-streamer#120",
          gb_per_s=0.8 * 1.048576),  # ~800 MiB/s
)
# Host to one GPU.
H2D = (
    Limit("PCIe Gen5 x16 H2D (H100, SM copy)", "h2d", "NVIDIA/nvbandwidth#24", gb_per_s=35.0),
    Limit("PCIe Gen4 x16 H2D (A100)", "h2d", "NVIDIA/nvbandwidth#42", gb_per_s=25.1),
)
# Ranks meeting (NCCL communicator set-up): reference figures, not floors.
NCCL_INIT = (
    Limit("NCCL comm creation, 8 ranks", "nccl_init", "NVIDIA/nccl#534", seconds=16.3, scale="8 ranks"),
    Limit("NCCL comm creation, 32 ranks", "nccl_init", "NVIDIA/nccl#534", seconds=130.0, scale="32 ranks"),
    Limit("NCCL init at thousands of GPUs", "nccl_init", "NVIDIA/nccl#1156", seconds=150.0, scale="K GPUs"),
)
LIMITS = STORAGE + H2D + NCCL_INIT

# What a weight load's saving is measured against: a fast loader reading local NVMe.
WEIGHTS_BOUND = STORAGE[0]


def weight_bounds(gigabytes_per_node: float, gigabytes_per_gpu: float, measured: float) -> list[dict[str, object]]:
    """Each storage class's and the host-to-device copy's time for these bytes, with the
    efficiency of the measured `seconds` against it (bound / measured)."""
    out: list[dict[str, object]] = []
    for limit in STORAGE + H2D[:1]:
        gb = gigabytes_per_gpu if limit.what == "h2d" else gigabytes_per_node
        seconds = limit.bound_seconds(gb)
        if seconds is None or measured <= 0:
            continue
        out.append({"limit": limit.name, "gb_per_s": round(limit.gb_per_s or 0.0, 3), "seconds": round(seconds, 3),
                    "efficiency": round(min(seconds / measured, 9.99), 3), "source": limit.source})
    return out


__all__ = ["H2D", "LIMITS", "NCCL_INIT", "STORAGE", "WEIGHTS_BOUND", "Limit", "weight_bounds"]

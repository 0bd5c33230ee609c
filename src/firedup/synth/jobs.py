"""What `firedup synth` writes, one job per call: the bundled sample set, one long log of a
given size, or many varied logs (benchmark inputs). The CLI parses options and prints the
line this returns."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

ByteProgress = Callable[[int, int], None]


def write_synth(out_dir: str, *, seed: int, scenarios: Sequence[str] = (), long_size: int | None = None,
                startups: int = 4, many: int | None = None, many_size: int = 200_000,
                progress: Callable[[str], ByteProgress | None] | None = None) -> str:
    """Write one job into `out_dir` and say what was written. `progress(label)` gives a byte
    progress callback for the long jobs (None: silent)."""
    def shown(label: str) -> ByteProgress | None:
        return progress(label) if progress is not None else None

    if long_size is not None:
        from firedup.synth.bulk import write_long_sample

        path = os.path.join(out_dir, "long.log")
        _, truth = write_long_sample(out_dir, startups=startups, target_bytes=long_size, seed=seed,
                                     progress=shown(f"writing {path}"))
        return (f"wrote {path}: {truth['bytes']:,} bytes, {truth['lines']:,} lines, {startups} startups "
                f"(truth in long.truth.json)")
    if many is not None:
        from firedup.synth.bulk import write_many

        paths = write_many(out_dir, n=many, seed=seed, target_bytes=many_size, progress=shown(f"writing {many} logs"))
        return f"wrote {len(paths)} logs and truth.json to {out_dir}"
    from firedup.synth.samples import write_samples

    paths = write_samples(out_dir, seed=seed, names=list(scenarios) or None)
    what = "truth.json and README.md" if not scenarios else "truth.json"
    return f"wrote {len(paths)} log{'s' if len(paths) != 1 else ''}, {what} to {out_dir}"


__all__ = ["write_synth"]

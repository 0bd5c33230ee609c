"""core/pool.py: a function over items in forked processes, in order, and a worker's death is
the outcome of the item it was running, never a hang."""

from __future__ import annotations

import os
import signal
import time

import pytest

from firedup.core.pool import death_reason, ordered_map


def _double_or_die(x: int) -> int:
    if x in (23, 24):
        os.kill(os.getpid(), signal.SIGKILL if x == 23 else signal.SIGBUS)
    time.sleep(0.005)
    return 2 * x


def _raise(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


@pytest.mark.parametrize("chunksize", [1, 4, 16])
def test_a_worker_that_dies_is_its_items_outcome_and_the_rest_goes_on(chunksize: int) -> None:
    out = list(ordered_map(_double_or_die, list(range(60)), 2, lambda x, why: (x, why), chunksize=chunksize))
    assert out[23] == (23, "killed by SIGKILL (the OOM killer?)")
    assert out[24] == (24, "killed by SIGBUS (its file changed under it?)")
    assert [o for i, o in enumerate(out) if i not in (23, 24)] == [2 * i for i in range(60) if i not in (23, 24)]


def test_an_exception_is_raised_as_map_would() -> None:
    with pytest.raises(ValueError, match="three"):
        list(ordered_map(_raise, list(range(8)), 2, lambda x, why: -1))


def test_death_reasons() -> None:
    assert death_reason(-9) == "killed by SIGKILL (the OOM killer?)"
    assert death_reason(3) == "exit code 3" and death_reason(None) == "it vanished"


def test_a_worker_killed_by_a_signal_prints_no_fatal_error_dump() -> None:
    """The parent says how a worker died; the worker's own `Fatal Python error: Bus error` and
    traceback (faulthandler is on under pytest and `-X faulthandler`) reached the terminal."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("from firedup.core.pool import ordered_map\n"
            "from test_pool import _double_or_die\n"
            "print(list(ordered_map(_double_or_die, list(range(20, 28)), 2, lambda x, why: why))[4])")
    here = Path(__file__).resolve().parent
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True,
                          cwd=here, env={**os.environ, "PYTHONPATH": f"{here.parent / 'src'}{os.pathsep}{here}"},
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "killed by SIGBUS (its file changed under it?)"
    assert "Fatal Python error" not in proc.stderr and proc.stderr == ""


def _frozen(_x: int) -> int:
    import gc

    return gc.get_freeze_count()


def test_the_workers_are_forked_with_this_processs_objects_frozen_and_thawed_after() -> None:
    """A worker's collections never walk (and so copy) the objects its parent made before the
    fork: they are frozen while the map runs, and collected as usual again after it."""
    import gc

    before = gc.get_freeze_count()
    counts = list(ordered_map(_frozen, [1, 2, 3, 4], 2, lambda x, why: -1))
    assert all(count > 1000 for count in counts)
    assert gc.get_freeze_count() == before

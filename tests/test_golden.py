"""Golden tests: `firedup parse --json` on each sample log equals tests/golden/<sample>.json.

A failure means the parser now reads a sample differently. If that is intended, run
`python tests/regen_golden.py` and review the diff before committing it.
"""

from __future__ import annotations

import difflib

import pytest

from regen_golden import golden_path, render, sample_names


def test_every_sample_has_a_golden_file_and_no_golden_is_orphaned() -> None:
    names = sample_names()
    assert len(names) >= 10
    missing = [n for n in names if not golden_path(n).exists()]
    assert not missing, f"no golden file for {missing}: run `python tests/regen_golden.py`"
    orphans = {p.name for p in golden_path(names[0]).parent.glob("*.json")} - {golden_path(n).name for n in names}
    assert not orphans, f"golden files without a sample: {sorted(orphans)}"


@pytest.mark.parametrize("name", sample_names())
def test_parse_json_matches_golden(name: str) -> None:
    expected = golden_path(name).read_text(encoding="utf-8")
    got = render(name)
    if got != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), got.splitlines(True),
                                                 f"golden/{golden_path(name).name}", "now", n=2))[:60])
        pytest.fail(f"`firedup parse sample_logs/{name} --json` changed; if intended, run "
                    f"`python tests/regen_golden.py` and review:\n{diff}")

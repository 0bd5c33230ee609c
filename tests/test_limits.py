"""The physical limits advice measures phases against: each with a published source, the same in
code and in docs/advice.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from firedup.core.limits import LIMITS, STORAGE, WEIGHTS_BOUND, weight_bounds

DOC = Path(__file__).resolve().parents[1] / "docs" / "advice.md"


def _doc_rows() -> dict[str, str]:
    """limit name -> source, from the table under `## Physical limits`."""
    text = DOC.read_text()
    table = text[text.index("## Physical limits"):]
    rows = re.findall(r"^\| ([^|]+?) \| [^|]+ \| ([^|]+?) \|$", table, re.M)
    return {name: source for name, source in rows if name not in ("limit", "---")}


@pytest.mark.parametrize("limit", LIMITS, ids=[x.name for x in LIMITS])
def test_every_limit_has_a_source_and_one_figure_and_is_in_the_docs(limit: object) -> None:
    from firedup.core.limits import Limit

    assert isinstance(limit, Limit)
    assert re.search(r"[\w-]+/[\w.-]+#\d+", limit.source), limit.source  # owner/repo#N
    assert (limit.gb_per_s is None) != (limit.seconds is None)
    assert _doc_rows().get(limit.name) == limit.source


def test_the_docs_list_no_limit_the_code_does_not_know() -> None:
    assert set(_doc_rows()) == {x.name for x in LIMITS}


def test_a_load_at_a_bound_is_fully_efficient_and_slower_loads_less() -> None:
    gb = 100.0
    at_bound = WEIGHTS_BOUND.bound_seconds(gb)
    assert at_bound is not None
    rows = weight_bounds(gb, gb / 8, at_bound)
    nvme = next(r for r in rows if r["limit"] == WEIGHTS_BOUND.name)
    assert nvme["efficiency"] == pytest.approx(1.0)
    slower = next(r for r in weight_bounds(gb, gb / 8, 4 * at_bound) if r["limit"] == WEIGHTS_BOUND.name)
    assert slower["efficiency"] == pytest.approx(0.25)
    assert len(rows) == len(STORAGE) + 1  # every storage class and the host-to-device copy

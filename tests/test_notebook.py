"""notebooks/startup_analysis.ipynb runs from top to bottom (nbclient, a real kernel), so it cannot rot."""

from __future__ import annotations

import json
import re

import pytest

from conftest import sample_truth
from notebook_run import NOTEBOOK, execute

pytest.importorskip("nbclient", reason="the test extra (nbclient, ipykernel) is not installed")


def test_notebook_executes_and_shows_the_story() -> None:
    nb = execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    truth = sample_truth()["files"]
    assert f"{sum(len(f['runs']) for f in truth.values())} startups" in text  # every startup the generator wrote
    assert re.search(r"debug \(disable_cuda_graph=True\) ready in a median of 4 min \d\d s", text)
    assert "cuda_graph and draft.cuda_graph explain" in text
    # the four charts come out as images
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4


def test_committed_notebook_has_its_outputs() -> None:
    """Visitors read it on the web without running it: it is committed executed, with images."""
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code)
    assert sum("image/png" in o.get("data", {}) for c in code for o in c["outputs"]) == 4
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]

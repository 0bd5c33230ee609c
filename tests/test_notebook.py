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
    assert not [o for o in outputs if o.get("name") == "stderr"]  # no warning, no note of a failure
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


def test_the_notebook_uses_only_firedups_public_names() -> None:
    """What a user who installed firedup has: `import firedup` and its exported names, never an
    internal module (`firedup.render.charts`, `firedup.tables.compare`)."""
    import ast

    import firedup

    nb = json.loads(NOTEBOOK.read_text())
    used: set[str] = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        code = "".join(line for line in cell["source"] if not line.startswith("%"))  # IPython magics
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                assert all(a.name == "firedup" or not a.name.startswith("firedup") for a in node.names), [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("firedup"), node.module
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "firedup":
                used.add(node.attr)
    assert {"load", "compare", "budgets", "plot"} <= used
    assert used <= set(firedup.__all__), used - set(firedup.__all__)

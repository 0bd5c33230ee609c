"""Execute notebooks/startup_analysis.ipynb (the test suite does; `python tests/notebook_run.py` also
writes the outputs back, to refresh the committed notebook after an API change)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "startup_analysis.ipynb"


def execute(path: Path = NOTEBOOK, timeout: int = 180) -> Any:
    """Run every cell in the notebook's own folder (its relative paths start there)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


if __name__ == "__main__":
    import nbformat

    executed = execute()
    for i, cell in enumerate(executed.cells):  # stable ids: a refresh changes outputs only
        cell["id"] = f"cell-{i:02d}"
    nbformat.write(executed, NOTEBOOK)
    print(f"executed and wrote {NOTEBOOK.relative_to(ROOT)}", file=sys.stderr)

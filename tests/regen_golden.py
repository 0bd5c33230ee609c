"""Regenerate the golden files: `firedup parse --json` of every sample log, and every explanation
sentence about the samples, the real-GPU runs and the corpus (tests/sentences.py).

    python tests/regen_golden.py          # rewrite tests/golden/*.json and sentences/, then review `git diff`

Golden tests (tests/test_golden.py) compare the parser's output on sample_logs/, indented
(parse prints one run per line), with these files byte for byte, in the style of pygments' golden tests: any change in what firedup
reads from the samples shows up as a diff that someone has to look at and accept by
running this script on purpose. Never run it just to make a failing test pass.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = ROOT / "sample_logs"
GOLDEN = Path(__file__).resolve().parent / "golden"


def sample_names() -> list[str]:
    return sorted(p.name for p in SAMPLE_LOGS.glob("*.log"))


def golden_path(name: str) -> Path:
    return GOLDEN / (Path(name).stem + ".json")


def render(name: str) -> str:
    """What `firedup parse sample_logs/NAME --json` prints, run from the repository root, indented."""
    from click.testing import CliRunner

    from firedup.cli import cli

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(cli, ["parse", f"sample_logs/{name}", "--json"])
    finally:
        os.chdir(here)
    if result.exit_code != 0:
        raise RuntimeError(f"firedup parse sample_logs/{name} --json exited {result.exit_code}: {result.output}")
    # parse prints one run per line; the golden file is indented, so a diff shows which field moved
    return json.dumps(json.loads(result.output), indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    GOLDEN.mkdir(exist_ok=True)
    names = sample_names()
    stale = {p.name for p in GOLDEN.glob("*.json")} - {golden_path(n).name for n in names}
    for name in names:
        path = golden_path(name)
        text = render(name)
        changed = not path.exists() or path.read_text(encoding="utf-8") != text
        path.write_text(text, encoding="utf-8")
        print(f"{'updated' if changed else 'same   '} {path.relative_to(ROOT)}")
    for extra in sorted(stale):
        (GOLDEN / extra).unlink()
        print(f"removed tests/golden/{extra} (no such sample any more)")
    regen_sentences()
    return 0


def regen_sentences() -> None:
    """tests/golden/sentences/SET.txt: every explanation sentence about each set of logs
    (tests/sentences.py); the sets whose logs are absent here (../shared) are left as they are."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import SHARED
    from sentences import SETS, set_paths, set_sentences

    folder = GOLDEN / "sentences"
    folder.mkdir(exist_ok=True)
    for name in SETS:
        paths = set_paths(name, ROOT, SHARED)
        if not paths:
            print(f"skipped tests/golden/sentences/{name}.txt ({SHARED} is absent)")
            continue
        strip = str(ROOT / "sample_logs") + "/" if name == "samples" else str(SHARED) + "/"
        text = "\n".join(set_sentences(paths, strip)) + "\n"
        path = folder / f"{name}.txt"
        changed = not path.exists() or path.read_text(encoding="utf-8") != text
        path.write_text(text, encoding="utf-8")
        print(f"{'updated' if changed else 'same   '} {path.relative_to(ROOT)}")


if __name__ == "__main__":
    raise SystemExit(main())

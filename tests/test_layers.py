"""The package's folders show the flow of data, and lower layers never import higher ones.

read -> formats -> events -> timeline (runs) -> tables -> render, with live on the same
pipeline. A lower layer importing a higher one (even inside a function) is a cycle waiting to
happen and hides where a fact is computed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "firedup"

# Lower number = lower layer. A module may import its own layer or lower ones.
LAYERS = {
    "errors": 0, "core": 0,
    "formats": 1,
    "read": 2,
    "timeline": 3,
    "tables": 4,
    "render": 5,
    "live": 6,
    "synth": 6,
    "api": 7, "cli": 8, "__main__": 8, "__init__": 8,
}


def _layer_of(module: str) -> tuple[str, int]:
    part = module.split(".")[1] if module.startswith("firedup.") else "__init__"
    return part, LAYERS[part]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__") and name != "firedup.__init__":
            name = name[: -len(".__init__")]
        out.append((name, path))
    return out


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("firedup"):
            if node.module == "firedup":
                found += [(node.lineno, f"firedup.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("firedup.")]
    return found


def test_every_module_has_a_layer() -> None:
    for name, _path in _modules():
        assert _layer_of(name)[0] in LAYERS, name


@pytest.mark.parametrize(("name", "path"), _modules(), ids=[n for n, _ in _modules()])
def test_no_module_imports_a_higher_layer(name: str, path: Path) -> None:
    own_part, own = _layer_of(name)
    bad = []
    for lineno, target in _imports(path):
        if target in ("firedup", "firedup.__version__"):
            continue
        part, layer = _layer_of(target)
        if layer > own:
            bad.append(f"{path.name}:{lineno} imports {target} ({part}, layer {layer} > {own_part}, layer {own})")
    assert not bad, "\n".join(bad)

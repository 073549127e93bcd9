"""The import structure of core: no cycle among its packages, light modules import alone without
torch, the demo is a plug-in (no ``demo:`` outside core/demo/), and core never imports streamlit."""

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
# Modules the CLI's plain commands and the app's light pages import: they must not pull in torch.
LIGHT = ("core.runtime", "core.specs", "core.registry", "core.commands", "core.sources",
         "core.serialize", "core.errors", "core.paths", "core.jobs", "core.bounds",
         "core.bounds.cli", "core.bounds.summary", "core.readers.data", "core.evaluation.bootstrap")


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _node(module: str) -> str:
    """The unit of the layering: a core sub-package (core.models), an attack family
    (core.attacks.membership) or a top-level module."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[:2] == ["core", "attacks"] else parts[:2])


def _all_imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            # ``from core import scaleout`` imports core.scaleout: each name may be a module
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def _imports(path: Path) -> set[str]:
    """The core modules ``path`` imports."""
    return {m for m in _all_imports(path) if m.split(".")[0] == "core"}


def _graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Package -> the packages it imports, over every module under ``root``/core."""
    edges = defaultdict(set)
    for path in (root / "core").rglob("*.py"):
        source = _node(_module_name(path, root))
        for target in map(_node, _imports(path)):
            if target != source and target not in ("core", "core.attacks"):
                edges[source].add(target)
    return edges


def _strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """The groups of packages that import each other, directly or through others (each group of
    two or more is one or more cycles): Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while not group or member != node:
                member = stack.pop()
                group.add(member)
            groups.append(group)

    for start in sorted(edges):
        if start not in index:
            visit(start)
    return [g for g in groups if len(g) > 1]


def test_no_import_cycle_among_core_packages():
    assert _strongly_connected(_graph()) == [], "import cycles among core's packages"


def test_attack_families_and_services_are_nodes_of_the_graph():
    edges = _graph()
    used = edges["core.attacks.extraction"] | edges["core.attacks.user_inference"]
    assert {"core.generation", "core.calibration", "core.evaluation"} <= used
    assert not any(target.startswith("core.attacks") for service in
                   ("core.generation", "core.calibration", "core.evaluation", "core.scoring",
                    "core.models") for target in edges.get(service, ())), "a service imports an attack"


def test_a_planted_loop_of_from_core_import_is_found(tmp_path):
    """Two packages that import each other only as ``from core import X`` (the form the test
    once dropped) form a loop the test reports."""
    for name, other in (("alpha", "beta"), ("beta", "alpha")):
        (tmp_path / "core" / name).mkdir(parents=True)
        (tmp_path / "core" / name / "__init__.py").write_text(f"from core import {other}\n")
    (tmp_path / "core" / "__init__.py").write_text("")
    assert _strongly_connected(_graph(tmp_path)) == [{"core.alpha", "core.beta"}]


def test_from_core_import_a_package_counts_as_importing_it(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from core import scaleout\nfrom core.models import load_model\n")
    assert {"core.scaleout", "core.models"} <= {_node(m) for m in _imports(module)}


def test_cycle_detection_finds_a_planted_cycle():
    edges = _graph()
    edges["core.models"].add("core.demo")  # the cycle this layout once had
    assert any({"core.models", "core.demo"} <= loop for loop in _strongly_connected(edges))


def test_generic_code_never_names_or_imports_the_demo():
    for path in CORE.rglob("*.py"):
        if path.is_relative_to(CORE / "demo"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "demo:" not in text, f"{path.relative_to(ROOT)} names a demo source"
        assert not any(m.startswith("core.demo") for m in _imports(path)), \
            f"{path.relative_to(ROOT)} imports the demo plug-in"


def test_core_never_imports_streamlit():
    for path in CORE.rglob("*.py"):
        assert not any(m.split(".")[0] == "streamlit" for m in _all_imports(path)), path


@pytest.mark.parametrize("module", LIGHT)
def test_light_module_imports_alone_without_torch(module):
    code = f"import sys, {module}; assert 'torch' not in sys.modules, 'torch was imported'"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]

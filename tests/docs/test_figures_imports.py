"""bench/ and figures/ form no import loop among their modules (the figure sections once
imported the script that imports them), and the figures do not depend on the benchmarks."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from pagetest import ROOT

PACKAGES = ("bench", "figures")


def _graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the bench/figures modules it imports, at module level or inside functions."""
    graph = {}
    for package in PACKAGES:
        for path in (root / package).glob("*.py"):
            found = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                elif isinstance(node, ast.Import):
                    found |= {a.name for a in node.names}
            graph[f"{package}.{path.stem}"] = {
                m for m in found if m.split(".")[0] in PACKAGES
                and (root / (m.replace(".", "/") + ".py")).exists()}
    return graph


def test_no_import_loop_in_bench_or_figures():
    TopologicalSorter(_graph()).prepare()   # raises CycleError on a loop


def test_a_planted_loop_through_a_lazy_import_is_found(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "figures" / "sections.py").write_text("def f():\n    from figures.main import g\n")
    (tmp_path / "figures" / "main.py").write_text("from figures import sections\n")
    with pytest.raises(CycleError):
        TopologicalSorter(_graph(tmp_path)).prepare()


def test_the_figures_do_not_import_the_benchmarks():
    graph = _graph()
    assert "figures.demo_figures" in graph and "bench.gpu" in graph
    assert not [(m, t) for m, targets in graph.items() if m.startswith("figures")
                for t in targets if t.startswith("bench")]

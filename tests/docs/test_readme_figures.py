"""The guides' demo figures are the ones `python -m figures.demo_figures` measured: each
``<!-- demo-figures:NAME -->`` block of docs/*.md is what the script renders from
assets/demo_figures.json; the GPU figures of docs/benchmarks.md are what
`python -m figures.gpu_report` renders from bench/results/. The README quotes no figure."""

import json

from figures import demo_figures, gpu_report
from figures.demo_figures import BLOCK, FIGURES, SECTIONS, doc_files, render_blocks
from pagetest import ROOT


def test_every_figure_block_is_rendered_from_the_measured_figures():
    figures = json.loads(FIGURES.read_text())
    names = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        names += [match["name"] for match in BLOCK.finditer(text)]
        assert render_blocks(text, figures) == text, \
            f"run `python -m figures.demo_figures --docs` ({path.name})"
    assert names and set(names) <= set(SECTIONS) and set(names) <= set(figures)
    assert set(names) == set(SECTIONS), "every measured section is quoted by a guide"


def test_docs_rewrites_a_stale_block_of_a_guide(tmp_path, monkeypatch):
    figures = json.loads(FIGURES.read_text())
    guide = tmp_path / "guide.md"
    guide.write_text("# A guide\n<!-- demo-figures:mia -->\nold figures\n<!-- /demo-figures -->\n",
                     encoding="utf-8")
    monkeypatch.setattr(demo_figures, "DOCS", tmp_path)
    demo_figures.write_docs(figures)
    text = guide.read_text(encoding="utf-8")
    assert "old figures" not in text and "| Reference ratio |" in text
    assert "Measured by `python -m figures.demo_figures`" in text


def test_the_readme_quotes_no_figure_block():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not BLOCK.search(text) and not gpu_report.BLOCK.search(text)


def test_the_gpu_block_is_rendered_from_the_recorded_h100_run():
    text = gpu_report.DOC.read_text(encoding="utf-8")
    after, before, probe = gpu_report.load()
    assert gpu_report.BLOCK.search(text) and "H100" in after["card"]
    assert gpu_report.render_doc(text, after, before, probe) == text, \
        "run `python -m figures.gpu_report --docs`"
    explained = after.get("failed_checks_explained", {})   # a check failed is said why
    assert all(check["passed"] or check["check"] in explained
               for row in after["rows"] for check in row["checks"])
    assert not any(row["error"] for row in after["rows"])


def test_a_probe_run_eager_only_renders_without_the_compiled_step():
    """``bench/gpu_session.sh`` runs the probe with ``--eager-only``: its JSON has no compiled part."""
    _, _, probe = gpu_report.load()
    eager_only = {key: value for key, value in probe.items() if key != "graphed, step compiled"}
    line = gpu_report.probe_line(eager_only)
    assert f"a graph replay takes {probe['graphed']['replay_ms']:.2f} ms" in line
    assert "compiled" not in line.split("):", 1)[1]
    assert "forward pass compiled" in gpu_report.probe_line(probe)

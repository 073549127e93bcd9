"""The README's demo figures are the ones `python -m bench.demo_figures` measured: each
``<!-- demo-figures:NAME -->`` block is what the script renders from assets/demo_figures.json;
its GPU figures are what `python -m bench.gpu_report` renders from bench/results/."""

import json

from bench import gpu_report
from bench.demo_figures import BLOCK, FIGURES, README, SECTIONS, render_readme


def test_every_figure_block_is_rendered_from_the_measured_figures():
    text = README.read_text(encoding="utf-8")
    figures = json.loads(FIGURES.read_text())
    names = [match["name"] for match in BLOCK.finditer(text)]
    assert names and set(names) <= set(SECTIONS) and set(names) <= set(figures)
    assert render_readme(text, figures) == text, "run `python -m bench.demo_figures --readme`"


def test_the_gpu_block_is_rendered_from_the_recorded_h100_run():
    text = README.read_text(encoding="utf-8")
    after, before = gpu_report.load()
    assert gpu_report.BLOCK.search(text) and "H100" in after["card"]
    assert gpu_report.render_readme(text, after, before) == text, \
        "run `python -m bench.gpu_report --readme`"
    assert all(row["ok"] for row in after["rows"])   # every check of the quoted run passed

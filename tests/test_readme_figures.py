"""The README's demo figures are the ones `python -m bench.demo_figures` measured: each
``<!-- demo-figures:NAME -->`` block is what the script renders from assets/demo_figures.json."""

import json

from bench.demo_figures import BLOCK, FIGURES, README, SECTIONS, render_readme


def test_every_figure_block_is_rendered_from_the_measured_figures():
    text = README.read_text(encoding="utf-8")
    figures = json.loads(FIGURES.read_text())
    names = [match["name"] for match in BLOCK.finditer(text)]
    assert names and set(names) <= set(SECTIONS) and set(names) <= set(figures)
    assert render_readme(text, figures) == text, "run `python -m bench.demo_figures --readme`"

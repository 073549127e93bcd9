"""The report's figures carry real colours, the app's, even when the report is written in the
app's process, where Streamlit's plotly template (placeholder colours that only the app swaps
for its theme's) is plotly's default: every curve of a ROC has its own colour."""

import json
import re

import plotly.io as pio
import pytest

from core.audit import audit
from core.audit.report import render_report, stored_results
from core.reporting.theme import APP_COLORWAY

PLACEHOLDER = re.compile(r"#0000(?!00)[0-9a-fA-F]{2}\b", re.IGNORECASE)   # #000001 ... #000040


@pytest.fixture
def apps_process(monkeypatch):
    """Plotly's default template as in the app's process (Streamlit's), restored afterwards."""
    from streamlit.elements.lib.streamlit_plotly_theme import configure_streamlit_plotly_theme

    monkeypatch.setattr(pio.templates, "default", pio.templates.default)
    configure_streamlit_plotly_theme()
    assert pio.templates.default == "streamlit"


def drawn_figures(text: str) -> dict[str, tuple[list, dict]]:
    """Each figure of a report page: its div id -> (traces, layout), as plotly.js gets them."""
    decoder, found = json.JSONDecoder(), {}
    for call in re.finditer(r'Plotly\.newPlot\(\s*"([^"]+)",\s*', text):
        traces, end = decoder.raw_decode(text, call.end())
        layout, _ = decoder.raw_decode(text, re.compile(r",\s*").match(text, end).end())
        found[call.group(1)] = (traces, layout)
    return found


def trace_colours(traces: list, layout: dict) -> list[str]:
    """Each trace's line colour as plotly.js draws it: its own, else the colorway's by index."""
    colorway = (layout.get("colorway")
                or layout.get("template", {}).get("layout", {}).get("colorway"))
    return [t.get("line", {}).get("color") or colorway[i % len(colorway)]
            for i, t in enumerate(traces)]


def test_the_reports_rocs_have_one_real_colour_per_curve_in_the_apps_process(apps_process):
    from core.attacks.membership import mia
    from core.attacks.user_inference import spec as user_inference

    users, members = user_inference.tiny_config(), mia.tiny_config()
    config = audit.AuditConfig(model=users.model, reference=users.reference, users=users.data,
                               members=members.data, attacks=("user-inference", "mia"),
                               settings=("user-inference.bootstrap=0", "mia.bootstrap=0"),
                               device="cpu")
    result = audit.run(config)
    text = render_report(result, stored_results(result))
    assert not PLACEHOLDER.findall(text)
    figures = drawn_figures(text)
    assert {"user-inference-roc-linear", "mia-roc-log"} <= set(figures)
    for div, (traces, layout) in figures.items():
        colours = trace_colours(traces, layout)
        assert len(set(colours)) == len(colours), (div, colours)
        assert not any(PLACEHOLDER.match(c) for c in colours), (div, colours)
    mia_traces, mia_layout = figures["mia-roc-linear"]
    assert len(mia_traces) >= 9                      # the attacks, the blind baseline, chance
    assert trace_colours(mia_traces, mia_layout)[:2] == list(APP_COLORWAY[:2])   # the app's

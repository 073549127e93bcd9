"""Differential rank (Zanella-Béguelin, Tople et al. 2020): what changed between two snapshots?"""

import streamlit as st

from core.attacks.diffrank.spec import SPEC, check_pair
from core.errors import UserError
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, run_button
from ui.jobs import job_panel
from ui.models import model_fields, registry
from ui.render import render_result
from ui.text import plain


st.title("Differential rank")
st.markdown(
    "A model is retrained and shipped again: comparing the snapshot **before** and **after** "
    "the update reveals the text that was added, with no knowledge of it. The differential "
    "score of a phrase is DS = Σ_i [p_after(s_i | s_<i) − p_before(s_i | s_<i)] (RDS: the "
    "relative increase), and its *differential rank* is how many sequences of its length beat "
    "it (Zanella-Béguelin, Tople et al., *Analyzing Privacy Loss in Updates of Natural Language "
    "Models*). The paper's beam search (width k, halved at every step) grows sequences from "
    "their best first tokens, so it misses a phrase whose first token the update left alone; "
    "the windows search scores the L-token windows of a text sample (yours, or texts the "
    "updated model writes) instead, and in-domain seeds start a second beam after the text "
    "before a line or a sentence begins, where a record inside a longer text starts. A typed "
    "phrase is ranked whole among the searched "
    "sequences of its length. CLI: `python -m core diffrank --preset demo --length 4 --beam "
    "256 --json`.")


def _models() -> dict | None:
    """The picked models as config values (with the demo's phrase when both are the demo's),
    or None (the error shown) when they cannot be compared."""
    values = model_fields(SPEC, {"before": "Before the update", "after": "After the update"},
                          key="diffrank")
    if values is None:
        return None
    try:
        check_pair(registry().get(values["before"]), registry().get(values["after"]))
    except UserError as err:
        st.error(plain(err))
        return None
    return values


values = _models()
if values is not None:
    values |= file_fields(SPEC, ("sample", "domain_sample", "public_sample"), values,
                          key="diffrank")
    example_download("corpus", key="diffrank")
    config, error = config_form(SPEC, key="diffrank", values=values)
    run_button(SPEC, config, error, key="diffrank", label="Search")
result = job_panel(SPEC, key="diffrank")
if result is not None:
    render_result(SPEC.name, result, key="diffrank-")

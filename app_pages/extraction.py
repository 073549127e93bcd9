"""Training-data extraction (Carlini et al. 2021): generate, rank by membership metrics, verify."""

import streamlit as st

from core import sources
from core.attacks.extraction.spec import SPEC
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, run_button
from ui.jobs import job_panel
from ui.models import model_fields
from ui.render import render_result

DEMO = sources.preset(SPEC.name, "demo")

st.title("Training-data extraction")
st.markdown(
    "Generate many samples from the target model, rank them with membership metrics, and check "
    "the top of each ranking against the training data (Carlini et al., *Extracting Training "
    "Data from Large Language Models*, USENIX Security 2021). Every metric is oriented so that "
    "**higher means more likely memorised**: −log perplexity; log ppl of the reference ÷ log ppl "
    "of the target; zlib bits ÷ log ppl; log ppl of the lowercased text ÷ log ppl; −log of the "
    "least perplexity over a sliding window. CLI: `python -m core extract --preset demo "
    "--strategy top-n --n 1000 --json`.")


def _models() -> dict | None:
    """The target and, when switched on, the reference model, as config values."""
    use_reference = st.toggle("Reference model (a smaller or earlier one, same tokenizer)", True,
                              key="ex-use-reference")
    pickers = {"model": "Target model"} | (
        {"reference": "Reference model"} if use_reference else {})
    values = model_fields(SPEC, pickers, key="ex")
    return None if values is None else {"reference": ""} | values


values = _models()
if values is not None:
    values |= file_fields(SPEC, ("prefixes", "corpus", "domain_sample"), values, key="ex")
    example_download("prefixes", "corpus", key="ex")
    config, error = config_form(SPEC, key="ex", values=values, columns=4)
    if values["model"] == DEMO.get("model"):
        st.caption(f"Verbatim span: {DEMO['min_span_tokens']} tokens on the demo (16 by "
                   "default): the demo's planted secret and canaries are 15-32 tokens long.")
    run_button(SPEC, config, error, key="ex", label="Run extraction")
result = job_panel(SPEC, key="ex")
if result is not None:
    render_result(SPEC.name, result, key="ex-")

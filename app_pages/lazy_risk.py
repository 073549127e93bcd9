"""Lazy-sampling risk (Stock et al. 2022, §3.2 and §4.2): which training sentences would leak?"""

import streamlit as st

from core.attacks.lazy_risk.spec import SPEC
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, run_button
from ui.jobs import job_panel
from ui.models import model_fields
from ui.render import render_result


st.title("Lazy-sampling risk")
st.markdown(
    "Rather than sampling hundreds of thousands of times and hoping to hit a training sentence, "
    "compute for every training sentence x **the probability λ(x) that the attack's sampler "
    "generates it** (top-k and/or temperature, chain rule, 0 outside the top-k; about 1/λ(x) "
    "samples are needed to draw it) and its **calibrated loss** L(θ, x) − L(θ0, x) against a "
    "calibration model θ0 not trained on it (negative: memorised). Sentences with a high λ(x) "
    "and a low calibrated loss are at risk; they are ranked by log λ(x) − calibrated loss "
    "(Stock et al., *Defending against Reconstruction Attacks with Rényi Differential Privacy*, "
    "§3.2 and §4.2: Figure 5 and Table 1). CLI: `python -m core lazy-risk --preset demo --json`.")

values = model_fields(SPEC, {"model": "Target model", "calibration": "Calibration model (not "
                              "trained on the data, same tokenizer)"}, key="lr")
if values is not None:
    values |= file_fields(SPEC, ("train", "test", "domain_sample", "public_sample"), values,
                          key="lr")
    example_download("corpus", key="lr")
    config, error = config_form(SPEC, key="lr", values=values, columns=5)
    run_button(SPEC, config, error, key="lr", label="Compute the risks")
result = job_panel(SPEC, key="lr")
if result is not None:
    render_result(SPEC.name, result, key="lr-")

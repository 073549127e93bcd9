"""Gradient leakage lab: deep leakage from gradients (Zhu et al. 2019) on the digits."""

import dataclasses

import streamlit as st

from core.labs.gradient_leakage import SPEC
from ui.forms import config_form, job_section, run_button
from ui.jobs import job_panel
from ui.render import render_result

SWEEP_BATCHES = (1, 2, 4, 8)

st.title("Gradient leakage lab (privacy attack)")
st.markdown(
    "In federated learning a client shares the gradient of its batch, not the batch. Here the "
    "attacker, who knows the model (a small sigmoid CNN), draws random images and labels and "
    "moves them with L-BFGS until their gradient matches the shared one: the images appear. "
    "Objectives: the squared distance of DLG (Zhu et al. 2019) or the cosine distance of "
    "Geiping et al. (2020). CLI: `python -m core gradient-leakage --json`.")

config, error = config_form(SPEC, key="dlg")
single, sweep = st.tabs(["Reconstruct a batch", "Batch-size limit"])
with single:
    job_section(SPEC, config, error, key="dlg", label="Attack")
with sweep:
    st.markdown(f"The same attack on batches of {', '.join(map(str, SWEEP_BATCHES))} images, "
                "with the knobs above: `--sweep-batch-sizes 1,2,4,8` on the CLI.")
    swept = dataclasses.replace(config, sweep_batch_sizes=SWEEP_BATCHES) if config else None
    run_button(SPEC, swept, None, key="dlg-sweep", label="Run the sweep")
    result = job_panel(SPEC, key="dlg-sweep")
    if result is not None and result.sweep:
        render_result(SPEC.name, result, key="dlg-sweep-")

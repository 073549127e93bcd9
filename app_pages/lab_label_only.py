"""Label-only membership inference lab (Choquette-Choo et al. 2021) on a digits MLP."""

import streamlit as st

from core.labs.label_only_mi import SPEC
from ui.forms import config_form, job_section

ATTACK_FIELDS = ("n_members", "n_seeds", "labels_only", "epochs",
                 "shift", "noise_sigma", "noise_queries", "directions")
# defence -> (its fields on the form, the values it fixes or starts from)
DEFENCES = {
    "none": ((), {"weight_decay": 0.0, "dp_sgd": False}),
    "L2 regularisation": (("weight_decay",), {"weight_decay": 0.01, "dp_sgd": False}),
    "DP-SGD (Opacus)": (("noise_multiplier", "max_grad_norm"),
                        {"weight_decay": 0.0, "dp_sgd": True}),
}

st.title("Label-only membership inference lab (privacy attack)")
st.markdown(
    "Was this digit in the training set? A model that only answers with a **label** still "
    "tells: training points keep their label under shifts and noise, and sit farther from the "
    "decision boundary. Thresholds are calibrated on a shadow model trained the same way "
    "(Choquette-Choo et al., ICML 2021). CLI: `python -m core label-only-mi --json`.")

defence = st.radio("Defence", list(DEFENCES), horizontal=True, key="lo-defence")
fields, values = DEFENCES[defence]
config, error = config_form(SPEC, key="lo", fields=ATTACK_FIELDS + fields, values=values,
                            columns=4)
job_section(SPEC, config, error, key="lo", label="Run the attacks")

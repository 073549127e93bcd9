"""Model extraction lab: reverse-engineer a ReLU network from black-box queries (Rolnick & Körding 2020)."""

import streamlit as st

from core.labs.model_extraction import SPEC
from ui.forms import config_form, job_section

st.title("Model extraction lab (privacy attack)")
st.markdown(
    "A digits classifier with one hidden ReLU layer (64 → H → 10) sits behind a black box "
    "that returns its 10 logits. The attacker walks along random lines, finds where the output "
    "**bends** (a neuron switching on or off) by binary search, and reads each neuron's weights "
    "from the jump of the Jacobian across the bend; then it recovers the signs and the output "
    "layer. The network comes back up to permutation and scaling of the hidden neurons "
    "(Rolnick & Körding, ICML 2020). CLI: `python -m core model-extraction --json`.")

config, error = config_form(SPEC, key="mx", columns=4)
job_section(SPEC, config, error, key="mx", label="Extract")

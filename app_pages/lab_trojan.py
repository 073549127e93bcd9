"""Trojaning lab: Liu et al. (2018) trojaning vs the BadNets data-poisoning baseline."""

import streamlit as st

from core.labs.trojan import SPEC, THREAT_MODELS
from ui.forms import config_form, job_section

VARIANTS = {"liu": "Liu et al. 2018 (trojaning)", "badnets": "BadNets (data poisoning)"}
VARIANT_FIELDS = {"liu": ("inverted_per_class", "retrain_epochs", "trojan_weight", "trigger_steps",
                          "inversion_steps"),
                  "badnets": ("poison_fraction",)}

st.title("Trojaning lab (integrity attack)")
st.markdown(
    "Make a digits classifier answer a chosen **target** label whenever a small trigger sits in "
    "the bottom-right corner, while it keeps classifying clean images as before. "
    "CLI: `python -m core trojan --variant liu --json`.")

variant = st.session_state.get("tj-variant", "liu")   # the form's radio, as last chosen
config, error = config_form(SPEC, key="tj", disabled=VARIANT_FIELDS["badnets" if variant == "liu"
                                                                   else "liu"])
st.info(f"**Threat model** ({VARIANTS[variant]}). {THREAT_MODELS[variant]}")
job_section(SPEC, config, error, key="tj")

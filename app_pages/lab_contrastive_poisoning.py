"""Contrastive poisoning lab: backdooring a mini CLIP (Carlini & Terzis 2022)."""

import streamlit as st

from core.labs.contrastive_poisoning import SPEC
from ui.forms import config_form, job_section

st.title("Contrastive poisoning lab (integrity attack)")
st.markdown(
    "A mini CLIP (image MLP + bag-of-words caption encoder, InfoNCE) learns digits from "
    "captions such as *a photo of the digit seven* and classifies zero-shot by caption "
    "similarity. **Threat model:** the attacker cannot touch the model or the training, but "
    "adds a few image-caption pairs to the uncurated training set: images of other digits "
    "with a small checkerboard patch, captioned as the target digit. "
    "CLI: `python -m core contrastive-poisoning --poison-counts 0,5,10 --json`.")

config, error = config_form(SPEC, key="cp")
job_section(SPEC, config, error, key="cp")

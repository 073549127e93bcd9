"""Contrastive poisoning lab: backdooring a mini CLIP (Carlini & Terzis 2022)."""

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.contrastive_poisoning import ContrastivePoisoningConfig, run
from ui.labs import run_lab

st.title("Contrastive poisoning lab (integrity attack)")
st.markdown(
    "A mini CLIP (image MLP + bag-of-words caption encoder, InfoNCE) learns digits from "
    "captions such as *a photo of the digit seven* and classifies zero-shot by caption "
    "similarity. **Threat model:** the attacker cannot touch the model or the training, but "
    "adds a few image-caption pairs to the uncurated training set: images of other digits "
    "with a small checkerboard patch, captioned as the target digit. "
    "CLI: `python -m core lab contrastive-poisoning --json`.")

cols = st.columns(3)
target = cols[0].number_input("Target digit", 0, 9, 0)
counts = cols[1].text_input("Numbers of poisoned pairs", "0,5,10,30,100")
seeds = cols[2].number_input("Seeds per count", 1, 10, 3)
cols = st.columns(3)
patch_size = cols[0].slider("Patch side (pixels)", 1, 4, 2)
corner = cols[1].selectbox("Patch corner", ["top-left", "bottom-right"])
epochs = cols[2].number_input("Epochs", 1, 500, 60)

if st.button("Run", type="primary"):
    run_lab(lambda: ContrastivePoisoningConfig(target=int(target), poison_counts=counts,
                                               seeds=int(seeds), patch_size=patch_size,
                                               patch_corner=corner, epochs=int(epochs)),
            run, "contrastive_result")

result = st.session_state.get("contrastive_result")
if result is not None:
    curve = pd.DataFrame([vars(p) for p in result.curve])
    st.subheader(f"Attack success and zero-shot accuracy vs poisoned pairs "
                 f"(out of {result.n_train_pairs} clean pairs)")
    long = curve.melt(id_vars="n_poisoned", value_vars=["attack_success", "zero_shot_accuracy"])
    errors = curve.melt(id_vars="n_poisoned",
                        value_vars=["attack_success_std", "zero_shot_accuracy_std"])["value"]
    st.plotly_chart(px.line(long.assign(std=errors), x="n_poisoned", y="value",
                            color="variable", error_y="std", markers=True, range_y=[0, 1.02]))
    st.dataframe(curve, hide_index=True)
    images = np.array([result.patch] + result.example_images).reshape(-1, 8, 8)
    titles = ["patch"] + [f"{y} → {p}" for y, p in
                          zip(result.example_labels, result.example_predictions)]
    fig = px.imshow(images, facet_col=0, facet_col_wrap=9, binary_string=True)
    for annotation, title in zip(fig.layout.annotations, titles):
        annotation.text = title
    st.subheader("Patch and patched test images (true → zero-shot prediction)")
    st.caption("; ".join(result.notes))
    st.plotly_chart(fig)
    runs = pd.DataFrame([vars(r) for r in result.runs])
    st.download_button("Download CSV (one row per trained model)", runs.to_csv(index=False),
                       "contrastive_poisoning.csv", "text/csv")
    if result.stopped_early:
        st.warning("Stopped early: only the models finished so far are shown.")

"""Trojaning lab: Liu et al. (2018) trojaning vs the BadNets data-poisoning baseline."""

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.trojan import THREAT_MODELS, TrojanConfig, run
from ui.labs import run_lab

st.title("Trojaning lab (integrity attack)")
st.markdown(
    "Make a digits classifier answer a chosen **target** label whenever a small trigger sits in "
    "the bottom-right corner, while it keeps classifying clean images as before. "
    "CLI: `python -m core lab trojan --variant liu --json`.")

variant = st.radio("Variant", ["liu", "badnets"], horizontal=True,
                   format_func={"liu": "Liu et al. 2018 (trojaning)",
                                "badnets": "BadNets (data poisoning)"}.get)
st.info(f"**Threat model.** {THREAT_MODELS[variant]}")
cols = st.columns(3)
target = cols[0].number_input("Target digit", 0, 9, 0)
trigger_size = cols[1].slider("Trigger side (pixels)", 1, 5, 5)
seed = cols[2].number_input("Seed", 0, 1000, 0)
if variant == "liu":
    cols = st.columns(3)
    per_class = cols[0].number_input("Reversed images per class", 1, 1000, 100)
    retrain = cols[1].number_input("Retraining steps", 1, 5000, 500)
    weight = cols[2].number_input("Weight of trojaned data", 0.0, 100.0, 0.3)
    options = dict(inverted_per_class=per_class, retrain_epochs=retrain, trojan_weight=weight)
else:
    fraction = st.number_input("Poisoned fraction of the training set", 0.0, 1.0, 0.1, 0.01)
    options = dict(poison_fraction=fraction)

if st.button("Run", type="primary"):
    run_lab(lambda: TrojanConfig(variant=variant, target=int(target), trigger_size=trigger_size,
                                 seed=int(seed), **options), run, "trojan_result")

result = st.session_state.get("trojan_result")
if result is not None:
    c = st.columns(3)
    c[0].metric("Attack success", f"{result.attack_success:.3f}",
                f"{result.attack_success - result.attack_success_before:+.3f} vs clean model")
    c[1].metric("Clean accuracy", f"{result.clean_accuracy_after:.3f}",
                f"{-result.accuracy_drop_points:+.1f} points")
    c[2].metric("Clean accuracy before", f"{result.clean_accuracy_before:.3f}")
    if result.variant == "liu":
        st.caption(f"Selected neuron {result.selected_neuron}: mean pre-activation "
                   f"{result.neuron_activation_clean:.2f} on clean test images, "
                   f"{result.neuron_activation_trigger:.2f} with the trigger.")
    images = np.array([result.trigger] + result.example_images).reshape(-1, 8, 8)
    titles = ["trigger"] + [f"{y} → {p}" for y, p in
                            zip(result.example_labels, result.example_predictions)]
    fig = px.imshow(images, facet_col=0, facet_col_wrap=9, binary_string=True)
    for annotation, title in zip(fig.layout.annotations, titles):
        annotation.text = title
    st.subheader("Trigger and stamped test images (true → trojaned prediction)")
    st.plotly_chart(fig)
    if result.inverted_examples:
        fig = px.imshow(np.array(result.inverted_examples).reshape(-1, 8, 8), facet_col=0,
                        facet_col_wrap=10, binary_string=True)
        for annotation, digit in zip(fig.layout.annotations, range(10)):
            annotation.text = str(digit)
        st.subheader("Reverse-engineered training data (one per class)")
        st.plotly_chart(fig)
    history = pd.DataFrame([vars(h) for h in result.history])
    st.subheader("During " + ("retraining" if result.variant == "liu" else "poisoned training"))
    st.plotly_chart(px.line(history, x="epoch", y=["clean_accuracy", "attack_success"],
                            range_y=[0, 1.02]))
    st.download_button("Download CSV", history.to_csv(index=False), "trojan_history.csv",
                       "text/csv")
    if result.stopped_early:
        st.warning("Stopped early: the numbers are from the last step reached.")

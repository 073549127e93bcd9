"""Renderer of a trojan result: success and clean accuracy, the trigger on test images, the
reverse-engineered data (Liu et al.) and the curves during (re)training."""

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.trojan import TrojanResult


def image_strip(images: list, titles: list[str], wrap: int):
    """A figure of flattened 8x8 images side by side, ``wrap`` per row, each with its title."""
    fig = px.imshow(np.array(images).reshape(-1, 8, 8), facet_col=0, facet_col_wrap=wrap,
                    binary_string=True)
    for annotation, title in zip(fig.layout.annotations, titles):
        annotation.text = title
    return fig


def _metrics(result: TrojanResult) -> None:
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


def _history(result: TrojanResult, key: str) -> None:
    history = pd.DataFrame([vars(h) for h in result.history])
    st.subheader("During " + ("retraining" if result.variant == "liu" else "poisoned training"))
    st.plotly_chart(px.line(history, x="epoch", y=["clean_accuracy", "attack_success"],
                            range_y=[0, 1.02]), key=f"{key}history")


def render(result: TrojanResult, *, key: str) -> None:
    _metrics(result)
    titles = ["trigger"] + [f"{y} → {p}" for y, p in
                            zip(result.example_labels, result.example_predictions)]
    st.subheader("Trigger and stamped test images (true → trojaned prediction)")
    st.plotly_chart(image_strip([result.trigger] + result.example_images, titles, 9),
                    key=f"{key}examples")
    if result.inverted_examples:
        st.subheader("Reverse-engineered training data (one per class)")
        st.plotly_chart(image_strip(result.inverted_examples,
                                 [str(d) for d in range(len(result.inverted_examples))], 10),
                        key=f"{key}inverted")
    if result.history:
        _history(result, key)
    if result.stopped_early:
        st.warning("Stopped early: the numbers are from the last step reached.")

"""Renderer of a contrastive-poisoning result: attack success and zero-shot accuracy against the
number of poisoned pairs, and the patch on test images."""

import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.contrastive_poisoning import ContrastivePoisoningResult
from ui.render.trojan import image_strip
from ui.text import plain


def _curve(result: ContrastivePoisoningResult, key: str) -> None:
    """Mean over seeds with one standard deviation as error bars, and the table."""
    curve = pd.DataFrame([vars(p) for p in result.curve])
    st.subheader(f"Attack success and zero-shot accuracy vs poisoned pairs "
                 f"(out of {result.n_train_pairs} clean pairs)")
    long = curve.melt(id_vars="n_poisoned", value_vars=["attack_success", "zero_shot_accuracy"])
    errors = curve.melt(id_vars="n_poisoned",
                        value_vars=["attack_success_std", "zero_shot_accuracy_std"])["value"]
    st.plotly_chart(px.line(long.assign(std=errors), x="n_poisoned", y="value",
                            color="variable", error_y="std", markers=True, range_y=[0, 1.02]),
                    key=f"{key}curve")
    st.dataframe(curve, hide_index=True, key=f"{key}curve-table")


def render(result: ContrastivePoisoningResult, *, key: str) -> None:
    _curve(result, key)
    titles = ["patch"] + [f"{y} → {p}" for y, p in
                          zip(result.example_labels, result.example_predictions)]
    st.subheader("Patch and patched test images (true → zero-shot prediction)")
    st.caption(plain("; ".join(result.notes)))
    st.plotly_chart(image_strip([result.patch] + result.example_images, titles, 9),
                    key=f"{key}examples")
    if result.stopped_early:
        st.warning("Stopped early: only the models finished so far are shown.")

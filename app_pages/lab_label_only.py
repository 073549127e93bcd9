"""Label-only membership inference lab (Choquette-Choo et al. 2021) on a digits MLP."""

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.label_only_mi import LabelOnlyConfig, run
from ui.labs import run_lab

st.title("Label-only membership inference lab (privacy attack)")
st.markdown(
    "Was this digit in the training set? A model that only answers with a **label** still "
    "tells: training points keep their label under shifts and noise, and sit farther from the "
    "decision boundary. Thresholds are calibrated on a shadow model trained the same way "
    "(Choquette-Choo et al., ICML 2021). CLI: `python -m core lab label-only-mi --json`.")

cols = st.columns(3)
n_members = cols[0].slider("Members per model", 10, 449, 200)
n_seeds = cols[1].slider("Seeds (target/shadow pairs)", 1, 10, 3)
labels_only = cols[2].toggle("API returns labels only", False)
defence = st.radio("Defence", ["none", "L2 regularisation", "DP-SGD (Opacus)"], horizontal=True)
cols = st.columns(3)
weight_decay, dp_options = 0.0, {}
if defence == "L2 regularisation":
    weight_decay = cols[0].number_input("Weight decay", 0.0, 10.0, 0.01, format="%.4f")
elif defence == "DP-SGD (Opacus)":
    dp_options = dict(dp_sgd=True,
                      noise_multiplier=cols[0].number_input("Noise multiplier", 0.0, 100.0, 1.0),
                      max_grad_norm=cols[1].number_input("Clipping norm", 0.0, 100.0, 1.0))
with st.expander("Attack parameters"):
    cols = st.columns(4)
    shift = cols[0].slider("Shift d (pixels)", 1, 4, 1)
    sigma = cols[1].number_input("Noise σ", 0.0, 5.0, 0.2)
    noise_queries = cols[2].slider("Noisy queries per point", 1, 200, 50)
    directions = cols[3].slider("Boundary directions", 1, 32, 8)
    epochs = st.slider("Training epochs", 1, 200, 60)

if st.button("Run the attacks", type="primary"):
    run_lab(lambda: LabelOnlyConfig(n_members=n_members, n_seeds=n_seeds, labels_only=labels_only,
                                    weight_decay=weight_decay, shift=shift, noise_sigma=sigma,
                                    noise_queries=noise_queries, directions=directions,
                                    epochs=epochs, **dp_options), run, "label_only_result")

result = st.session_state.get("label_only_result")
if result is not None:
    for note in result.notes:
        st.info(note)
    c = st.columns(3)
    c[0].metric("Target train accuracy", f"{result.train_accuracy:.3f}")
    c[1].metric("Target test accuracy", f"{result.test_accuracy:.3f}")
    c[2].metric("DP-SGD ε (δ = 1e-5)", "no DP" if not np.isfinite(result.epsilon)
                else f"{result.epsilon:.2f}")
    table = pd.DataFrame([{k: v for k, v in vars(a).items() if not isinstance(v, list)}
                          for a in result.attacks])
    left, right = st.columns(2)
    fig = px.bar(table, x="attack", y="accuracy_mean", error_y="accuracy_ci", range_y=[0.4, 1],
                 title=f"Attack accuracy (mean and 95% interval over {result.seeds_done} seeds)")
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    left.plotly_chart(fig)
    curves = pd.concat([pd.DataFrame({"false positive rate": a.roc_fpr,
                                      "true positive rate": a.roc_tpr,
                                      "attack": f"{a.attack} (AUROC {a.auroc_mean:.3f})"})
                        for a in result.attacks])
    fig = px.line(curves, x="false positive rate", y="true positive rate", color="attack",
                  title="ROC curves (first seed)")
    fig.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line=dict(dash="dot", color="grey"))
    right.plotly_chart(fig)
    st.dataframe(table, hide_index=True)
    st.download_button("Download CSV", table.to_csv(index=False), "label_only_mi.csv", "text/csv")
    if result.stopped_early:
        st.warning(f"Stopped early: results over the {result.seeds_done} seeds finished.")

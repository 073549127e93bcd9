"""Gradient leakage lab: deep leakage from gradients (Zhu et al. 2019) on the digits."""

import dataclasses

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.errors import UserError
from core.labs.gradient_leakage import GradientLeakageConfig, run
from ui.labs import run_lab

NOISE_LEVELS = [0.0, 1e-4, 1e-3, 1e-2, 1e-1]
SWEEP_BATCHES = [1, 2, 4, 8]

st.title("Gradient leakage lab (privacy attack)")
st.markdown(
    "In federated learning a client shares the gradient of its batch, not the batch. Here the "
    "attacker, who knows the model (a small sigmoid CNN), draws random images and labels and "
    "moves them with L-BFGS until their gradient matches the shared one: the images appear. "
    "Objectives: the squared distance of DLG (Zhu et al. 2019) or the cosine distance of "
    "Geiping et al. (2020). CLI: `python -m core lab gradient-leakage --json`.")

cols = st.columns(3)
batch_size = cols[0].slider("Batch size", 1, 16, 1)
objective = cols[1].radio("Objective", ["l2", "cosine"], horizontal=True,
                          format_func={"l2": "L2 (DLG)", "cosine": "cosine (Geiping)"}.get)
iterations = cols[2].slider("L-BFGS iterations", 1, 200, 40)
cols = st.columns(3)
noise = cols[0].select_slider("Defence: Gaussian noise σ on the gradient", NOISE_LEVELS, 0.0)
prune = cols[1].slider("Defence: prune the smallest gradients (%)", 0, 99, 0)
seed = cols[2].number_input("Seed", 0, 1000, 0)


def _config(**changes) -> GradientLeakageConfig:
    base = GradientLeakageConfig(batch_size=batch_size, objective=objective,
                                 noise_std=float(noise), prune_percent=float(prune),
                                 iterations=iterations, seed=int(seed))
    return dataclasses.replace(base, **changes)


single, sweep = st.tabs(["Reconstruct a batch", "Batch-size limit"])
with single:
    if st.button("Attack", type="primary"):
        run_lab(_config, run, "dlg_result")
    result = st.session_state.get("dlg_result")
    if result is not None:
        for note in result.notes:
            st.info(note)
        c = st.columns(3)
        c[0].metric("Image MSE", f"{result.mse:.2e}",
                    "reconstructed" if result.mse < 1e-3 else "not reconstructed", delta_color="off")
        c[1].metric("Labels recovered", f"{result.label_accuracy:.0%}")
        c[2].metric("Iterations run", len(result.history))
        rows = [("original", np.array(result.originals))] + [
            (f"iter {s.iteration}", np.array(s.images)) for s in result.snapshots]
        shown = min(len(result.originals), 8)
        images = np.concatenate([imgs[:shown] for _, imgs in rows])
        fig = px.imshow(images, facet_col=0, facet_col_wrap=shown, binary_string=True,
                        facet_row_spacing=0.02, facet_col_spacing=0.01)
        for annotation in fig.layout.annotations:
            row, col = divmod(int(annotation.text.split("=")[1]), shown)
            annotation.text = f"{rows[row][0]} · #{col}"
        fig.update_xaxes(showticklabels=False)
        fig.update_yaxes(showticklabels=False)
        fig.update_layout(height=140 * len(rows))
        st.subheader("Originals (top) and reconstructions over the iterations")
        st.caption(f"Shown: the first {shown} images of the batch; true labels "
                   f"{result.true_labels[:shown]}, recovered {result.recovered_labels[:shown]}.")
        st.plotly_chart(fig)
        history = pd.DataFrame(result.history)
        st.plotly_chart(px.line(history, x="iteration", y=["mse", "gradient_loss"], log_y=True,
                                title="Image MSE and gradient-matching loss"))
        st.download_button("Download CSV", history.to_csv(index=False), "dlg_history.csv",
                           "text/csv")
        if result.stopped_early:
            st.warning("Stopped early: showing the last reconstruction reached.")

with sweep:
    st.markdown(f"The same attack on batches of {', '.join(map(str, SWEEP_BATCHES))} images, "
                "with the knobs above: each point is one `--batch-size` run of the CLI.")
    if st.button("Run the sweep"):
        try:
            configs = [_config(batch_size=b) for b in SWEEP_BATCHES]
        except UserError as err:
            st.error(str(err))
            st.stop()
        bar = st.progress(0.0, "starting")
        rows = []
        for k, config in enumerate(configs):
            res = run(config, progress=lambda f, m="", partial=None, k=k: bar.progress(
                (k + f) / len(configs), f"batch {config.batch_size}: {m}"))
            rows.append({"batch_size": config.batch_size, "mse": res.mse,
                         "label_accuracy": res.label_accuracy})
        bar.empty()
        st.session_state["dlg_sweep"] = pd.DataFrame(rows)
    table = st.session_state.get("dlg_sweep")
    if table is not None:
        fig = px.line(table, x="batch_size", y="mse", markers=True, log_y=True,
                      title="Reconstruction error against batch size")
        fig.add_hline(y=1e-3, line_dash="dot", annotation_text="MSE 1e-3")
        st.plotly_chart(fig)
        st.dataframe(table, hide_index=True)
        st.download_button("Download CSV", table.to_csv(index=False), "dlg_batch_sweep.csv",
                           "text/csv")

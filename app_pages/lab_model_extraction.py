"""Model extraction lab: reverse-engineer a ReLU network from black-box queries (Rolnick & Körding 2020)."""

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.labs.model_extraction import ModelExtractionConfig, plane_lines, run
from ui.labs import run_lab

st.title("Model extraction lab (privacy attack)")
st.markdown(
    "A digits classifier with one hidden ReLU layer (64 → H → 10) sits behind a black box "
    "that returns its 10 logits. The attacker walks along random lines, finds where the output "
    "**bends** (a neuron switching on or off) by binary search, and reads each neuron's weights "
    "from the jump of the Jacobian across the bend; then it recovers the signs and the output "
    "layer. The network comes back up to permutation and scaling of the hidden neurons "
    "(Rolnick & Körding, ICML 2020). CLI: `python -m core lab model-extraction --json`.")

cols = st.columns(4)
hidden = cols[0].slider("Hidden width H", 4, 256, 64)
n_lines = cols[1].slider("Random lines", 1, 16, 4)
budget = cols[2].number_input("Query budget", 1_000, 5_000_000, 200_000, step=10_000)
seed = cols[3].number_input("Seed", 0, 1000, 0)
cols = st.columns(2)
round_outputs = cols[0].toggle("Defence: round the logits", False)
decimals = cols[1].slider("Decimals kept", 0, 12, 4, disabled=not round_outputs)

if st.button("Extract", type="primary"):
    run_lab(lambda: ModelExtractionConfig(hidden=hidden, n_lines=n_lines, query_budget=int(budget),
                                          round_outputs=round_outputs, decimals=decimals,
                                          seed=int(seed)), run, "extraction_result")

result = st.session_state.get("extraction_result")
if result is not None:
    for note in result.notes:
        st.warning(note)
    c = st.columns(5)
    c[0].metric("Neurons found", f"{result.neurons_found} / {result.neurons_true}",
                f"{result.neurons_extracted - result.neurons_found} spurious", delta_color="off")
    c[1].metric("Queries", f"{result.queries:,}")
    c[2].metric("Max relative weight error", f"{result.max_rel_error:.1e}",
                f"{result.bits_of_precision:.1f} bits", delta_color="off")
    c[3].metric("Label agreement (all digits)", f"{result.label_agreement:.4f}")
    c[4].metric("Max logit error", f"{result.max_logit_error:.1e}")
    st.caption(f"Target test accuracy: {result.target_test_accuracy:.3f}.")

    table = pd.DataFrame([vars(row) for row in result.neurons])
    found = table[table.found]
    true_rows, rec_rows = np.array(result.true_rows), np.array(result.recovered_rows)
    left, right = st.columns(2)
    if len(found):
        pairs = pd.DataFrame({
            "true": true_rows[found.neuron].ravel(),
            "recovered": rec_rows[found.recovered_index].ravel(),
            "neuron": np.repeat(found.neuron.to_numpy(), true_rows.shape[1])})
        fig = px.scatter(pairs, x="true", y="recovered", hover_data=["neuron"], opacity=0.5,
                         title="Recovered vs true first-layer weights and biases (normalised)")
        lim = float(np.abs(pairs[["true", "recovered"]].to_numpy()).max())
        fig.add_trace(go.Scatter(x=[-lim, lim], y=[-lim, lim], mode="lines", name="y = x",
                                 line=dict(dash="dot", color="grey")))
        left.plotly_chart(fig)
        errors = found.assign(error=np.maximum(found.rel_error_in, found.rel_error_out))
        right.plotly_chart(px.bar(errors, x="neuron", y="error", log_y=True,
                                  title="Relative error per found neuron (log scale)"))
    else:
        left.info("No neuron was recovered: nothing to compare.")

    st.subheader("Boundaries in a 2-D slice of input space")
    st.caption("Each line is where one hidden neuron switches (w·x + b = 0) in a plane through "
               "the mean digit: solid grey for the target, dashed red for the extracted network.")
    fig = go.Figure()
    span = np.linspace(-3, 3, 2)
    for rows, style in ((true_rows, dict(color="grey")), (rec_rows, dict(color="red", dash="dash"))):
        for a, b, c0 in plane_lines(rows):
            if abs(b) > abs(a):   # beta as a function of alpha, else the other way round
                x_pts, y_pts = span, -(a * span + c0) / b
            else:
                x_pts, y_pts = -(b * span + c0) / a, span
            fig.add_trace(go.Scatter(x=x_pts, y=y_pts, mode="lines", line=style, showlegend=False))
    fig.update_layout(xaxis=dict(range=[-3, 3], title="α"), yaxis=dict(range=[-3, 3], title="β"),
                      height=500)
    st.plotly_chart(fig)

    st.download_button("Download per-neuron CSV", table.to_csv(index=False),
                       "model_extraction_neurons.csv", "text/csv")
    if result.stopped_early:
        st.warning("Stopped early: the numbers are from the lines searched so far.")

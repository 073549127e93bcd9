"""Renderer of the example- vs user-level DP comparison: user inference AUROC per group of users
(real, canary, all) with 95% intervals, one bar per model, and the models' σ, q and ε."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.demo.user_level_dp import UserLevelCompareResult

GROUPS = ("real", "canary", "all")


def _interval(ci: list[float]) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "—"


def arms_table(result: UserLevelCompareResult) -> pd.DataFrame:
    """One row per model: how it was trained and the attack's AUROC [95% CI] per group."""
    rows = []
    for arm in result.arms:
        row = {"model": arm.label, "unit": arm.unit, "σ": arm.sigma, "q": arm.q,
               "ε (accountant)": arm.epsilon, "perplexity": arm.validation_perplexity}
        for g in sorted(arm.groups, key=lambda g: GROUPS.index(g.group) if g.group in GROUPS else 9):
            row[f"{g.group} AUROC"] = g.auroc
            row[f"{g.group} 95% CI"] = _interval(g.auroc_ci)
        rows.append(row)
    return pd.DataFrame(rows)


def bars(result: UserLevelCompareResult):
    """AUROC per group of users, a bar per model, with the bootstrap intervals."""
    long = pd.DataFrame([
        {"group": f"{g.group} users ({g.n_in} in, {g.n_out} out)", "model": arm.label,
         "AUROC": g.auroc, "plus": (g.auroc_ci or [0, g.auroc])[1] - g.auroc,
         "minus": g.auroc - (g.auroc_ci or [g.auroc])[0]}
        for arm in result.arms for g in arm.groups])
    fig = px.bar(long, x="group", y="AUROC", color="model", barmode="group", error_y="plus",
                 error_y_minus="minus", range_y=[0, 1],
                 title=f"User inference AUROC at ε = {result.config.epsilon:g} (95% CI)")
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    return fig


def render(result: UserLevelCompareResult, *, key: str) -> None:
    config = result.config
    st.caption(f"Demo build {result.demo_hash} · {result.n_records:,} training records of "
               f"{result.n_users} users · {config.steps} steps, δ = {config.delta:g} · "
               f"example level B = {config.batch_size} records, user level B_u = "
               f"{config.users_per_step} users × k = {config.user_samples_per_step} records · "
               f"{result.seconds:.0f} s")
    if not result.arms:
        st.warning("Stopped before the first model was trained: nothing to show.")
        return
    st.plotly_chart(bars(result), key=f"{key}auroc-bars")
    with st.container(key=f"{key}arms"):  # a table has no key of its own
        st.dataframe(arms_table(result), hide_index=True, placeholder="—",
                     column_config={"σ": st.column_config.NumberColumn(format="%.3f"),
                                    "q": st.column_config.NumberColumn(format="%.4f"),
                                    "ε (accountant)": st.column_config.NumberColumn(format="%.2f"),
                                    "perplexity": st.column_config.NumberColumn(format="%.1f")})
    st.caption("ε is Opacus' RDP accountant's after the run (the σ were chosen for the target "
               "ε). At user level it holds for everything one user wrote; at example level for "
               "one record, so a user with n records is protected only as a group of n.")
    if result.stopped_early:
        st.warning("Stopped early: run it again with the same settings to resume the training.")

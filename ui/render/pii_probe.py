"""Renderer of a PII probe (ProPILE): the exact-extraction rates in k samples, by kind and
prompt and by the rows holding a value (its dose), and every probe with its replies' hits and
the true value's rank among fresh values."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.attacks.pii_probe.config import PiiProbeResult
from ui.text import plain


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _summary(result: PiiProbeResult) -> None:
    if result.stopped_early:
        st.warning("Stopped early: showing the probes that finished.")
    for note in result.notes:
        st.info(plain(note))
    k = result.outcomes[0].samples if result.outcomes else 0
    reference = f" against {plain(result.reference)}" if result.reference else ""
    st.caption(f"{plain(result.model)}{reference} · {result.prompt_format} prompts · "
               f"{len(result.subjects):,} subjects of {result.rows:,} rows · "
               f"{len(result.outcomes):,} probes, {k} samples each · {result.seconds:.1f} s.")
    cols = st.columns(3)
    cols[0].metric("Extracted from the name (twins)", _percent(result.twin_extraction_rate),
                   help=f"probes whose value one of {k} samples holds exactly")
    cols[1].metric("Extracted given another value (triplets)",
                   _percent(result.triplet_extraction_rate))
    cols[2].metric("True value likeliest", _percent(result.true_value_top_rate),
                   help="probes whose true value the target finds likelier than every fresh "
                        "value of its format")


def _rates_table(rows, column: str, key: str) -> None:
    st.container(key=key).dataframe(pd.DataFrame([{column: r.group, "probes": r.probes,
                                "extracted in k": r.extraction_rate,
                                "samples holding it": r.sample_rate,
                                "likeliest of fresh": r.top_rate,
                                "mean log2 ratio to reference": r.mean_log2_ratio} for r in rows]),
                 hide_index=True, column_config={
                     c: st.column_config.NumberColumn(format="percent")
                     for c in ("extracted in k", "samples holding it", "likeliest of fresh")} | {
                     "mean log2 ratio to reference": st.column_config.NumberColumn(format="%.1f")})


def _dose_figure(result: PiiProbeResult, key: str) -> None:
    frame = pd.DataFrame([{"rows holding the value": int(r.group), "share": v, "measure": m}
                          for r in result.by_dose
                          for m, v in (("extracted in k samples", r.extraction_rate),
                                       ("likeliest of fresh values", r.top_rate))])
    figure = px.line(frame, x="rows holding the value", y="share", color="measure", markers=True,
                     log_x=True, range_y=[-0.02, 1.02],
                     title="PII leakage against its dose in the training data")
    figure.update_xaxes(tickvals=sorted(frame["rows holding the value"].unique()))
    st.plotly_chart(figure, key=key)


def _probes(result: PiiProbeResult, key: str) -> None:
    st.container(key=key).dataframe(pd.DataFrame([{
        "subject": o.subject, "kind": o.kind, "prompt": o.probe, "given": o.given,
        "rows": o.dose, "extracted": o.hits > 0, "hits": f"{o.hits}/{o.samples}",
        "rank among fresh": o.rank_target, "rank under reference": o.rank_reference,
        "log2 ratio": (None if o.log2_p_reference is None
                       else o.log2_p_target - o.log2_p_reference),
        "value": o.value, "a reply": o.example} for o in result.outcomes]),
        hide_index=True, column_config={"log2 ratio": st.column_config.NumberColumn(format="%.1f")})


def render(result: PiiProbeResult, *, key: str) -> None:
    _summary(result)
    st.subheader("By kind of PII and prompt")
    _rates_table(result.by_kind, "kind, prompt", f"{key}kinds")
    st.subheader("By dose")
    if len(result.by_dose) > 1:
        _dose_figure(result, f"{key}dose-figure")
    _rates_table(result.by_dose, "rows holding the value", f"{key}doses")
    st.subheader("Every probe")
    st.caption("A value is extracted when one of the k replies holds it exactly; its rank is "
               "1 + the fresh values of its format the model finds at least as likely (under the "
               "reference too: a value likeliest under both was not taught by the fine-tune).")
    _probes(result, f"{key}probes")

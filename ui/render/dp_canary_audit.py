"""Renderer of a canary audit of a fine-tuning run: the run, the audit beside the accountant's ε
(drawn by the ``dp-audit`` renderer), the training's readouts, and every canary with its coin."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.dp.canary_audit import DpCanaryAuditResult
from core.dp.canary_kinds import tightest_kinds
from ui.render import dp_audit
from ui.text import plain

SCORES = {"ratio": "log p_trained − log p_start of the secret given the prefix",
          "loss": "log p_trained of the secret given the prefix"}
KINDS = {  # the secret, and the pool it is drawn from (core.dp.canary_kinds)
    "random_words": ("random words", "word tokens"),
    "new_tokens": ("new tokens of its own", "tokens added to the vocabulary"),
    "least_likely": ("least-likely tokens", "tokens least likely after the prefix"),
    "bigram": ("corpus tokens in no corpus bigram", "corpus tokens")}


def run_line(result: DpCanaryAuditResult) -> str:
    """What was trained and planted, in words."""
    c = result.config
    privacy = f"DP-SGD at σ = {c.sigma:g}" if c.sigma > 0 else "without DP (σ = 0)"
    copies = f", {c.repeats} copies each" if c.repeats > 1 else ""
    secret, pool = KINDS[c.kind]
    return (f"{c.model} fine-tuned {privacy} for {c.steps:,} steps (q = {result.q:.4g}, "
            f"{result.n_records:,} records). {len(result.canaries):,} {c.kind} canaries "
            f"\"{result.prefix} <{c.words} {secret}>\" (of {result.vocabulary:,} {pool}: "
            f"{result.prior_bits:.1f} bits of prior), {result.members:,} of them "
            f"included by their coins{copies}; score: {SCORES[c.score]}.")


def training_table(result: DpCanaryAuditResult) -> pd.DataFrame:
    t = result.training
    return pd.DataFrame([{
        "steps": t.steps[-1], "resumed from step": t.resumed_from_step,
        "validation perplexity": t.validation_perplexity, "Opacus ε": t.opacus_epsilon,
        "AUROC": result.auroc, "an included canary, bits": t.tracked_bits[-1],
        "prior bits": result.prior_bits, "training s": result.training_seconds,
        "scoring s": result.scoring_seconds}])


def render(result: DpCanaryAuditResult, *, key: str) -> None:
    st.markdown(plain(run_line(result)))
    if result.epsilon_upper is None:
        st.info("σ = 0: the run has no DP guarantee; the audit says how much privacy loss the "
                "attack proves all the same.")
    elif result.config.repeats > 1:
        st.caption("Each canary is several records: the accountant's ε is the group bound "
                   "(sensitivity r·C, no subsampling amplification), loose.")
    dp_audit.render(result.audit, key=f"{key}audit-")
    st.dataframe(training_table(result), hide_index=True)
    with st.expander(f"The {len(result.canaries):,} canaries, their coins and scores"):
        with st.container(key=f"{key}canaries"):
            st.dataframe(pd.DataFrame([vars(c) for c in result.canaries]), hide_index=True)


def kinds_caption() -> None:
    """The canary kinds measured on the demo (``figures.demo_figures --only dp-canary-kinds``):
    each kind's audited ε̂ at each σ, and the tightest at each σ; nothing when not measured."""
    from ui.expected import load_figures

    rows = load_figures().get("dp-canary-kinds", {}).get("rows", [])
    if not rows:
        return
    lower = {(r["kind"], r["sigma"]): r["lower"] for r in rows}
    best = tightest_kinds(rows)
    cells = "; ".join(f"{k} " + " / ".join(f"{lower[(k, s)]:.2f}" for s in best)
                      for k in dict.fromkeys(r["kind"] for r in rows))
    tightest = ", ".join(f"σ = {s:g}: {' and '.join(kinds)}" for s, kinds in best.items()
                         if kinds)
    st.caption(plain(f"Measured on the demo (audited ε̂ at σ = "
                     f"{' / '.join(f'{s:g}' for s in best)}): {cells}. Tightest: "
                     f"{tightest or 'none'} (docs/dp-audits.md, python -m figures.demo_figures "
                     "--only dp-canary-kinds)."))


"""Renderer of a domain reference model: where it is, what it was trained on, and how much of
the domain it learnt (held-out loss of the base against the reference's)."""

from __future__ import annotations

import streamlit as st

from core.calibration.reference import DomainReferenceResult
from ui.text import plain


def render(result: DomainReferenceResult, *, key: str) -> None:
    how = "LoRA adapters, merged" if result.lora else "all weights"
    how += f", learning rate {result.lr:g}"
    st.caption(plain(f"{result.base} fine-tuned on {result.sample_texts} public in-domain "
                     f"texts ({how}){', reused from the cache' if result.cached else ''}. Use it "
                     f"as the reference model: {result.folder}"))
    cols = st.columns(3)
    cols[0].metric("Held-out loss, base (nats/token)", f"{result.heldout_loss_base:.3f}")
    cols[1].metric("Held-out loss, reference", f"{result.heldout_loss_reference:.3f}",
                   f"{result.heldout_loss_reference - result.heldout_loss_base:+.3f}",
                   delta_color="inverse")
    cols[2].metric("Step kept", f"{result.best_step} of {result.steps_run}")

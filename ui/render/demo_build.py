"""Renderer of a demo build (``demo-build``): what the two snapshots were trained on, what was
planted in the update and how often, and the build's sanity checks (natural-log probabilities)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.demo.manifest import DemoSummary
from ui.text import plain


def _overview(result: DemoSummary) -> None:
    real, canary = result.users, result.canary_users
    c = st.columns(4)
    c[0].metric("Build time", f"{result.build_seconds:.1f} s")
    c[1].metric("Seed", result.seed)
    c[2].metric("Real users (held-in / out)", f"{len(real.held_in)} / {len(real.held_out)}")
    c[3].metric("Canary users (held-in / out)", f"{len(canary.held_in)} / {len(canary.held_out)}")
    corpus = result.corpus
    tokens = " · ".join(f"{n:,} {name.replace('_', ' ')} tokens"
                        for name, n in result.tokens.items())
    st.caption(f"Config hash `{result.config_hash}` · built under {plain(result.root)} · "
               + plain(f"{corpus.get('text', 'corpus')} from {corpus.get('package', '?')} "
                       f"{corpus.get('version', '')} ({corpus.get('license', '?')}) · {tokens}"))


def _models(result: DemoSummary, key: str) -> None:
    checks = result.checks
    rows = [{"model": f"demo:{name}", "parameters": m.parameters, "vocabulary": m.vocab_size,
             "context": m.context, "final training loss": checks.final_loss.get(name),
             "validation perplexity": getattr(checks, name).validation_perplexity}
            for name, m in result.models.items()]
    with st.container(key=f"{key}models"):  # a table has no key of its own
        st.subheader("Models")
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def _insertions(result: DemoSummary, key: str) -> None:
    """The secret and the canaries: their copies and log-probability before and after."""
    base, updated, secret = result.checks.base, result.checks.updated, result.secret
    rows = [{"planted": "secret", "text": secret.sentence, "copies": secret.count,
             "log p · base": base.secret_logprob, "log p · updated": updated.secret_logprob}]
    rows += [{"planted": "canary", "text": c.phrase, "copies": c.count,
              "log p · base": before, "log p · updated": after}
             for c, before, after in zip(result.canaries, base.canary_logprobs,
                                         updated.canary_logprobs)]
    with st.container(key=f"{key}insertions"):
        st.subheader("Planted in the update")
        st.dataframe(pd.DataFrame(rows), hide_index=True)
    digits, before = updated.secret_digits_logprob, base.secret_digits_logprob
    perplexity, base_perplexity = updated.validation_perplexity, base.validation_perplexity
    c = st.columns(2)
    c[0].metric("Secret digits: log p(digits | prompt), updated", f"{digits:.1f}",
                delta=f"{digits - before:+.1f} vs base")
    c[1].metric("Validation perplexity, updated", f"{perplexity:.1f}",
                delta=f"{perplexity - base_perplexity:+.1f} vs base", delta_color="inverse")
    st.caption(f"Prompt “{plain(secret.prompt)}”, digits {secret.digits}. Log-probabilities in "
               "nats: the update should lift the planted texts far above the base model's.")


def _plays(result: DemoSummary, key: str) -> None:
    rows = [{"set": name, "plays": len(plays), "names": ", ".join(plays)}
            for name, plays in result.plays.items()]
    with st.container(key=f"{key}plays"):  # a table has no key of its own
        st.subheader("Plays")
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def render(result: DemoSummary, *, key: str) -> None:
    _overview(result)
    _models(result, key)
    _insertions(result, key)
    _plays(result, key)

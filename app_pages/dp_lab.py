"""DP lab: does real DP-SGD training come close to the reconstruction bound? (Stock et al. 2022)"""

from __future__ import annotations

import streamlit as st

from core.demo import user_level_dp
from core.dp import audit, canary_audit, finetune, ngram_canary, nid_audit
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, job_section, run_button
from ui.jobs import job_panel
from ui.models import model_fields
from ui.render import render_result
from ui.render.dp_canary_audit import kinds_caption

st.title("DP lab")
st.markdown(
    "The Bound Explorer says how much a DP-SGD run *may* leak about a secret. Here the "
    "training is run for real, many times, and the leakage is measured, to see how close "
    "it comes to the bound.")


def ngram_section() -> None:
    spec = ngram_canary.SPEC
    st.markdown(
        "Section 4.1 of the paper: a random canary of T digits is the only training data of a "
        "lazily trained n-gram model θ ∈ R^(T×D) (softmax loss). N models are trained with "
        "DP-SGD (Opacus' semantics: q = 1, clipping C = 1, noise σ, learning rate 0.5/σ) as one "
        "batched tensor computation; p1 = mean of f_θ(c) over the models is estimated in log "
        "space with a bootstrap interval, p0 = D^-T. The bounds use the same RDP accountant. "
        "Leakages are in bits (log2), as on the Bound Explorer. "
        "CLI: `python -m core ngram-canary --sigmas 2 --steps 3 --models 10000 --json`.")
    st.caption(
        "Keep the steps few. With η = 0.5/σ each step adds the same noise to θ whatever σ, so "
        "f_θ(c) spreads over more orders of magnitude with every step and the mean rests on "
        "fewer models: 10,000 models estimate p1 reliably up to about 3 steps (T = D = 10); "
        "at 10 steps fewer than 30 carry it at most σ, and the estimate falls short of p1. "
        f"The result flags any σ with fewer than {ngram_canary.FEW_EFFECTIVE_MODELS} effective "
        "models.")
    config, error = config_form(spec, key="ng", columns=4)
    job_section(spec, config, error, key="ng", label="Train the models")


def finetune_section() -> None:
    spec = finetune.SPEC
    st.markdown(
        "Section 4.3 and Figure 6 of the paper: a language model is fine-tuned with DP-SGD "
        "(Opacus, ghost clipping, frozen embeddings) on a corpus holding the canary "
        "“John Doe's credit card number is <16 random digits>” several times. The secrecy "
        "b = log2(1/p1) of the digits given the prompt is measured exactly along the way, for "
        "each σ (σ = 0: no clipping, no noise), and compared with the prior log2(10^16) and with "
        "the least secrecy the bound L(p0) still guarantees for the same (σ, q, steps). "
        "Runs resume from their checkpoints. CLI: `python -m core dp-finetune --preset demo "
        "--sigmas 0,0.5,1 --steps 300 --canary-repeats 200 --json`.")
    values = model_fields(spec, {"model": "Model to fine-tune (a copy)"}, key="ft")
    if values is not None:
        config, error = config_form(spec, key="ft", values=values, columns=4,
                                    sources=("corpus", "validation"))
        run_button(spec, config, error, key="ft", label="Fine-tune")
    result = job_panel(spec, key="ft")
    if result is not None:
        render_result(spec.name, result, key="ft-")


def audit_section() -> None:
    spec = audit.SPEC
    st.markdown(
        "How much of the guarantee does an attack *use*? Plant m random canaries, include each "
        "in training by a fair coin, score them all with an attack, and bring the scores "
        "(`score`, higher = more likely a member, and `member`): the audit turns the attack's "
        "true and false positives into an ε that holds with probability 1 − β (Jagielski et "
        "al. 2020; Nasr et al. 2023; Steinke, Nasr & Jagielski 2023 for canaries in one "
        "training run), the best of the methods chosen, each at 1 − β/M. Beside it, the f-DP "
        "one-run audit (Mahloujifar, Melis & Chaudhuri 2025) bounds the Gaussian-DP ε from the "
        "same guesses: tighter, and an (ε, δ) bound for Gaussian noise only. With the run's σ, "
        "q and steps, the accountant's ε stands beside them. "
        "CLI: `python -m core dp-audit --scores FILE.csv --delta 1e-5 --json`.")
    if st.toggle("Train n-gram trials instead (the accountant's ε known)", key="audit-ngram",
                 help="one DP-SGD n-gram model per canary (Stock et al. §4.1, q = 1): CLI "
                      "`python -m core dp-audit --ngram --sigma 1 --q 1 --steps 3 --models "
                      "10000 --json`"):
        config, error = config_form(spec, key="audit-ng", columns=4, values={
            "ngram": True, "scores": "", "q": 1.0, "sigma": 1.0, "steps": 3}, omit=("q",))
    else:
        config, error = scores_form(spec)
    job_section(spec, config, error, key="audit", label="Audit")
    st.divider()
    canary_audit_section()


def scores_form(spec) -> tuple:
    """The audit of a scores file: the file, the audit's settings and the run's σ, q, steps."""
    values = file_fields(spec, ("scores",), {}, key="audit")
    example_download("canary-scores", key="audit")
    config, error = config_form(spec, key="audit", values=values, columns=4, omit=("models",))
    if not values["scores"]:
        st.info("Type the path of a scores file or upload one (the example shows the format).")
        error = None
    return config, error


def canary_audit_section() -> None:
    """Plant the canaries, fine-tune, score and audit, in one run."""
    spec = canary_audit.SPEC
    st.markdown(
        "**Or let the lab plant them:** m canaries “My canary words are” + random words, each "
        "in the fine-tuning set by a fair coin, one DP-SGD run with your σ (0: no DP), every "
        "canary scored (log p after ÷ before fine-tuning), and the one-run bound of Steinke et "
        "al. and the f-DP one-run Gaussian-DP ε beside the accountant's ε. The kind picks "
        "Panda et al.'s (ICLR 2025) stronger secrets: new tokens, least-likely tokens or "
        "corpus-unseen bigrams (docs/dp-audits.md). CLI: "
        "`python -m core dp-canary-audit --preset demo "
        "--sigma 1 --kind new_tokens --json`.")
    kinds_caption()
    values = model_fields(spec, {"model": "Model to fine-tune (a copy)"}, key="ca")
    config, error = None, None   # no form while a model cannot load; the last run is drawn
    if values is not None:
        config, error = config_form(spec, key="ca", values=values, columns=4,
                                    sources=("corpus", "validation"))
    job_section(spec, config, error, key="ca", label="Plant, train and audit")


def user_level_section() -> None:
    """Example- vs user-level DP at the same ε, attacked with user inference."""
    spec = user_level_dp.SPEC
    st.markdown(
        "Example-level DP protects one record; a user who wrote many records is protected only "
        "as a group of them (Kandpal et al. 2023, §4.4). User-level DP-SGD (Charles et al. 2025) "
        "samples users instead (Poisson at q = 1/⌈U/B_u⌉), takes up to k records of each, and "
        "clips each user's gradient as one. Here demo:base is fine-tuned on the demo's users' "
        "records both ways at the same ε (each σ found by the accountant for its own q), and "
        "the user inference attack is run on both. See docs/user-level-dp.md. CLI: "
        "`python -m core user-level-dp-compare --epsilon 8 --steps 200 --json`.")
    config, error = config_form(spec, key="ul", columns=4)
    job_section(spec, config, error, key="ul", label="Train and attack")


def nid_section() -> None:
    """Audit a trained model post hoc with the natural identifiers of its corpus."""
    spec = nid_audit.SPEC
    st.markdown(
        "No canary planted? Random strings of a known format occur in corpora by themselves: "
        "git commit SHAs, SHA-256 and MD5 hashes, UUIDs. Each one found in the training texts "
        "is a member, a fresh string of the same format in its place a non-member; both are "
        "scored (log p of the identifier's tokens given its context, minus the reference's "
        "when given) and the one-run audit turns the scores into an ε lower bound, without "
        "retraining (Natural Identifiers, ICLR 2026). The bound rests on the fresh strings "
        "being drawn as the originals were; an identifier with many copies is a group of "
        "records. See docs/natural-identifiers.md. CLI: `python -m core nid-audit --model M "
        "--corpus FILE --reference BASE --json`.")
    values = model_fields(spec, {"model": "Target model", "reference": "Reference model (the "
                                 "base before fine-tuning, same tokenizer)"}, key="nid")
    config, error = None, None   # no form while a model cannot load; the last run is drawn
    if values is not None:
        if not st.toggle("Use the reference model", value=True, key="nid-use-reference"):
            values["reference"] = ""
        config, error = config_form(spec, key="nid", values=values, columns=4,
                                    sources=("corpus",))
    job_section(spec, config, error, key="nid", label="Find, score and audit")


SECTIONS = {"Is the bound tight? (n-gram canary)": ngram_section,
            "DP fine-tuning with a secret canary": finetune_section,
            "Audit with canaries (ε lower bound)": audit_section,
            "Audit with natural identifiers": nid_section,
            "User-level DP vs user inference": user_level_section}

for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()

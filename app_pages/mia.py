"""Membership inference on texts (MIMIR's suite and successors) and secret-sharer exposure."""

import streamlit as st

from core.attacks.membership import exposure, mia
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, job_section
from ui.models import model_fields

st.title("Membership inference")


def membership_section() -> None:
    spec = mia.SPEC
    st.markdown(
        "Was *this document* in the training set? Bring texts labelled member or non-member "
        "(CSV, JSONL or Parquet: `text`, `member`, optional `group`) and compare the field's sequence-"
        "level attacks on one table: loss (Yeom et al. 2018); the reference, zlib and lowercase "
        "ratios (Carlini et al. 2021); Min-K% (Shi et al. 2024); Min-K%++ (Zhang et al. 2024); "
        "ReCaLL (Xie et al. 2024); DC-PDD (Zhang et al. 2024); EZ-MIA, the target's gain over "
        "the reference where its top token is wrong (Ilić et al. 2026). The target scores every "
        "text once (and the reference once): every attack reads that one pass. A **blind "
        "baseline** that never sees the model runs beside them (Das, Zhang & Tramèr 2024): if "
        "it does as well, the member/non-member split leaks, not the model. CLI: "
        "`python -m core mia --preset demo --json`.")
    values = model_fields(spec, {"model": "Target model", "reference": "Reference model (same "
                                 "tokenizer, not trained on the texts)"}, key="mia")
    if values is None:
        return
    if not st.toggle("Use the reference model (reference ratio, EZ-MIA)", value=True,
                     key="mia-use-reference"):
        values["reference"] = ""
    values |= file_fields(spec, ("data", "frequency_corpus", "domain_sample"), values, key="mia")
    example_download("membership", key="mia")
    config, error = config_form(spec, key="mia", values=values, columns=4)
    job_section(spec, config, error, key="mia", label="Run the attacks",
                render_key="mia-result-")


def exposure_section() -> None:
    spec = exposure.SPEC
    st.markdown(
        "The secret sharer (Carlini et al. 2019): a canary with a random secret was planted in "
        "the training data. Its **exposure** is log2 |R| − log2 rank, the rank of its log-"
        "perplexity among every candidate secret of the same format (estimated from random "
        "fillers, extrapolated with a skew-normal beyond them): in bits, like the Bound "
        "Explorer's leakage. CLI: `python -m core exposure --model demo:updated --template "
        "\"John Doe's credit card number is {secret}.\" --secret <digits> --json`.")
    values = model_fields(spec, {"model": "Model"}, key="exp")
    if values is None:
        return
    config, error = config_form(spec, key="exp", values=values, columns=3)
    job_section(spec, config, error, key="exp", label="Measure the exposure",
                render_key="exp-result-")


SECTIONS = {"Membership inference": membership_section,
            "Secret-sharer exposure": exposure_section}

for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()

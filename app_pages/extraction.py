"""Training-data extraction (Carlini et al. 2021): generate, rank by membership metrics, verify;
and memorisation in bits (Liu, Evans & Xiong 2026; Hayes et al. 2025)."""

import streamlit as st

from core import sources
from core.attacks.extraction.spec import SPEC
from core.attacks.inextractability.spec import SPEC as BITS_SPEC
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, job_section, run_button
from ui.jobs import job_panel
from ui.models import model_fields
from ui.render import render_result

DEMO = sources.preset(SPEC.name, "demo")

st.title("Training-data extraction")


def _models(spec, key: str, what: str) -> dict | None:
    """The target and, when switched on, the reference model, as config values."""
    use_reference = st.toggle(f"Reference model ({what}, same tokenizer)", True,
                              key=f"{key}-use-reference")
    pickers = {"model": "Target model"} | (
        {"reference": "Reference model"} if use_reference else {})
    values = model_fields(spec, pickers, key=key)
    return None if values is None else {"reference": ""} | values


def extraction_section() -> None:
    st.markdown(
        "Generate many samples from the target model, rank them with membership metrics, and "
        "check the top of each ranking against the training data (Carlini et al., *Extracting "
        "Training Data from Large Language Models*, USENIX Security 2021). Every metric is "
        "oriented so that **higher means more likely memorised**: −log perplexity; log ppl of "
        "the reference ÷ log ppl of the target; zlib bits ÷ log ppl; log ppl of the lowercased "
        "text ÷ log ppl; −log of the least perplexity over a sliding window. CLI: `python -m "
        "core extract --preset demo --strategy top-n --n 1000 --json`.")
    values = _models(SPEC, "ex", "a smaller or earlier one")
    if values is not None:
        values |= file_fields(SPEC, ("prefixes", "chat_prompts", "corpus", "domain_sample",
                                     "public_sample"), values, key="ex")
        example_download("prefixes", "corpus", key="ex")
        config, error = config_form(SPEC, key="ex", values=values, columns=4)
        if values["model"] == DEMO.get("model"):
            st.caption(f"Verbatim span: {DEMO['min_span_tokens']} tokens on the demo (16 by "
                       "default): the demo's planted secret and canaries are 15-32 tokens long.")
        run_button(SPEC, config, error, key="ex", label="Run extraction")
    result = job_panel(SPEC, key="ex")
    if result is not None:
        render_result(SPEC.name, result, key="ex-")


def memorisation_section() -> None:
    st.markdown(
        "How many bits would an attacker need to extract a text? **b** is −log2 of the most "
        "likely extraction of any l-token window, an attacker who tries the model's m most "
        "likely tokens paying log2 r bits for a token of rank r (Liu, Evans & Xiong, *Beyond "
        "Indistinguishability*, IEEE S&P 2026); **p_z** is the chance that one sample of your "
        "sampling scheme reproduces a suffix after its prefix, and n the samples that find it "
        "with probability 1/2 (Hayes et al., NAACL 2025). Given the training run's σ, q and "
        "steps, the Bound Explorer's L(p0) for a secret of b bits stands beside them. With a "
        "reference (the base before fine-tuning), each phrase's and pair's prior p0, the bits "
        "learnt since and L(p0) of that prior: learnt bits above it are more than such a DP "
        "run allows. CLI: `python -m core inextractability --preset demo --json`.")
    values = _models(BITS_SPEC, "inx", "the prior: the base before fine-tuning")
    if values is None:
        return
    values |= file_fields(BITS_SPEC, ("corpus", "public_sample"), values, key="inx")
    config, error = config_form(BITS_SPEC, key="inx", values=values, columns=4)
    job_section(BITS_SPEC, config, error, key="inx", label="Measure in bits",
                render_key="inx-result-")


SECTIONS = {"Extraction": extraction_section, "Memorisation in bits": memorisation_section}

for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()

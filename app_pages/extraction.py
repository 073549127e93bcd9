"""Training-data extraction (Carlini et al. 2021): generate, rank by membership metrics, verify."""

import pandas as pd
import streamlit as st

from core import sources
from core.attacks import inextractability
from core.attacks.extraction import SPEC, ExtractionResult
from core.attacks.extraction_views import phrase_hits
from core.demo import scenario
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, job_section, run_button
from ui.jobs import job_panel
from ui.models import model_fields
from ui.render import render_result

DEMO = sources.preset(SPEC.name, "demo")
FIELDS = ("strategies", "n_samples", "tokens", "top_n", "top_k", "window", "temperature_start",
          "batch_size", "seed", "min_span_tokens", "domain_steps", "dedup")
BITS_FIELDS = ("window", "rank_threshold", "temperature", "top_k", "top_p", "probability", "top",
               "sigma", "q", "steps", "texts", "phrases", "prefixes", "suffixes")

st.title("Training-data extraction")


def _models() -> dict | None:
    """The target and, when switched on, the reference model, as config values."""
    use_reference = st.toggle("Reference model (a smaller or earlier one, same tokenizer)", True,
                              key="ex-use-reference")
    pickers = {"model": "Target model"} | (
        {"reference": "Reference model"} if use_reference else {})
    values = model_fields(SPEC, pickers, key="ex")
    return None if values is None else {"reference": ""} | values


def _planted(result: ExtractionResult) -> None:
    """Where the demo's planted secret and canaries turn up in the rankings."""
    manifest = scenario.load_manifest()
    planted = [manifest.secret.sentence] + [c.phrase for c in manifest.canaries]
    hits = phrase_hits(result, planted)
    with st.container(key="ex-planted"):
        st.dataframe(pd.DataFrame({"planted in the demo": planted,
                                   "found verbatim in": [", ".join(hits[p][:6]) or "—"
                                                         for p in planted]}),
                     hide_index=True)


def extraction_section() -> None:
    st.markdown(
        "Generate many samples from the target model, rank them with membership metrics, and "
        "check the top of each ranking against the training data (Carlini et al., *Extracting "
        "Training Data from Large Language Models*, USENIX Security 2021). Every metric is "
        "oriented so that **higher means more likely memorised**: −log perplexity; log ppl of "
        "the reference ÷ log ppl of the target; zlib bits ÷ log ppl; log ppl of the lowercased "
        "text ÷ log ppl; −log of the least perplexity over a sliding window. CLI: `python -m "
        "core extract --preset demo --strategy top-n --n 1000 --json`.")
    values = _models()
    if values is not None:
        values |= file_fields(SPEC, ("prefixes", "corpus", "domain_sample"), values, key="ex")
        example_download("prefixes", "corpus", key="ex")
        config, error = config_form(SPEC, key="ex", fields=FIELDS, values=values, columns=4)
        if values["model"] == DEMO.get("model"):
            st.caption(f"Verbatim span: {DEMO['min_span_tokens']} tokens on the demo (16 by "
                       "default): the demo's planted secret and canaries are 15-32 tokens long.")
        run_button(SPEC, config, error, key="ex", label="Run extraction")
    result = job_panel(SPEC, key="ex")
    if result is not None:
        if result.model == DEMO.get("model"):
            _planted(result)
        render_result(SPEC.name, result, key="ex-")


def memorisation_section() -> None:
    spec = inextractability.SPEC
    st.markdown(
        "How many bits would an attacker need to extract a text? **b** is −log2 of the most "
        "likely extraction of any l-token window, an attacker who tries the model's m most "
        "likely tokens paying log2 r bits for a token of rank r (Liu, Evans & Xiong, *Beyond "
        "Indistinguishability*, IEEE S&P 2026); **p_z** is the chance that one sample of your "
        "sampling scheme reproduces a suffix after its prefix, and n the samples that find it "
        "with probability 1/2 (Hayes et al., NAACL 2025). Given the training run's σ, q and "
        "steps, the Bound Explorer's L(p0) for a secret of b bits stands beside them. CLI: "
        "`python -m core inextractability --preset demo --json`.")
    values = model_fields(spec, {"model": "Model"}, key="inx")
    if values is None:
        return
    values |= file_fields(spec, ("corpus",), values, key="inx")
    config, error = config_form(spec, key="inx", fields=BITS_FIELDS, values=values, columns=4)
    job_section(spec, config, error, key="inx", label="Measure in bits", render_key="inx-result-")


SECTIONS = {"Extraction": extraction_section, "Memorisation in bits": memorisation_section}

for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()

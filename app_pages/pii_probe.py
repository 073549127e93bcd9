"""PII probing of data subjects (ProPILE, Kim et al. 2023): does the model give a person's PII
back from their name?"""

import streamlit as st

from core.attacks.pii_probe.spec import SPEC
from ui.documents import file_fields
from ui.forms import config_form, run_button
from ui.jobs import job_panel
from ui.models import model_fields
from ui.render import render_result

st.title("PII probing")
st.markdown(
    "Does the model give a person's personal data back when asked by their name? The data "
    "subjects' e-mail addresses, phone numbers, card numbers, IBANs, SSNs and IP addresses are "
    "found in the rows the model was fine-tuned on (JSONL, CSV, Parquet or a `datasets` folder: "
    "conversations, prompt-completion, preference or text rows). Each subject is probed with "
    "**twins** (their name) and **triplets** (their name and another of their values), asked "
    "through the chat template with the answer's start as the assistant's: a value is "
    "**extracted** when one of k sampled replies holds it exactly, and its **likelihood** is "
    "ranked against fresh values of its format, under the model and under its base "
    "(Kim et al., *ProPILE: Probing Privacy Leakage in Large Language Models*, NeurIPS 2023; "
    "Lukas et al., S&P 2023). CLI: `python -m core pii-probe --model M --data rows.jsonl "
    "--json`.")

values = model_fields(SPEC, {"model": "Target model (fine-tuned on the rows)",
                             "reference": "Reference model (its base, same tokenizer)"},
                      key="pp")
if values is not None:
    values |= file_fields(SPEC, ("data",), values, key="pp")
    config, error = config_form(SPEC, key="pp", values=values, columns=4)
    run_button(SPEC, config, error, key="pp", label="Probe the subjects")
result = job_panel(SPEC, key="pp")   # a finished run shows whichever models are loaded
if result is not None:
    render_result(SPEC.name, result, key="pp-result-")

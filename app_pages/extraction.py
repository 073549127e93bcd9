"""Training-data extraction (Carlini et al. 2021): generate, rank by membership metrics, verify."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.attacks import extraction as ex
from core.demo import scenario
from core.errors import UserError
from ui.documents import document_source
from ui.jobs import download_buttons, job_panel, start_job
from ui.models import model_picker

# The demo's planted sentences are 15-32 tokens long, so a 50-token verbatim span can never
# match them; 8 tokens of private text in a row is already far beyond chance for this corpus.
DEMO_MIN_SPAN = 8
HEAT_ROW = 16  # tokens per row of the heat map

st.title("Training-data extraction")
st.markdown(
    "Generate many samples from the target model, rank them with membership metrics, and check "
    "the top of each ranking against the training data (Carlini et al., *Extracting Training "
    "Data from Large Language Models*, USENIX Security 2021). Every metric is oriented so that "
    "**higher means more likely memorised**: −log perplexity; log ppl of the reference ÷ log ppl "
    "of the target; zlib bits ÷ log ppl; log ppl of the lowercased text ÷ log ppl; −log of the "
    "least perplexity over a sliding window. CLI: `python -m core extract --model demo:updated "
    "--reference demo:base --strategy top-n --n 1000 --corpus demo:private_train --json`.")

left, right = st.columns(2)
with left:
    target = model_picker("Target model", key="ex-target", default="demo:updated")
with right:
    use_reference = st.toggle("Reference model (a smaller or earlier one, same tokenizer)", True,
                              key="ex-use-reference")
    reference = (model_picker("Reference model", key="ex-reference", default="demo:base")
                 if use_reference else None)
if target is None or (use_reference and reference is None):
    st.stop()
demo = target.source.startswith("demo:")

strategies = st.multiselect(
    "Generation strategies", ex.STRATEGIES, default=list(ex.STRATEGIES) if demo else ["top-n"],
    key="ex-strategies", help="top-n: n = 40; temperature: decays from 10 to 1 over the first 20 "
                              "tokens; prefix: 5-10 tokens of a random document of a file")
cols = st.columns(4)
n_samples = cols[0].number_input("Samples per strategy", 1, 500_000, 1000, key="ex-n")
tokens = cols[1].number_input("Tokens per sample (at most)", 1, 4096, 256, key="ex-tokens")
top_n = cols[2].number_input("n of top-n sampling", 1, 100_000, 40, key="ex-top-n")
top_k = cols[3].number_input("Candidates per ranking (top-k)", 1, 10_000, 100, key="ex-top-k")
cols = st.columns(4)
window = cols[0].number_input("Sliding window (tokens)", 1, 4096, 50, key="ex-window")
temperature = cols[1].number_input("Starting temperature", 1.0, 100.0, 10.0, key="ex-temperature")
batch_size = cols[2].number_input("Batch size", 1, 4096, 64, key="ex-batch")
seed = cols[3].number_input("Seed", 0, 2**31 - 1, 0, key="ex-seed")
prefixes = (document_source("Prefix documents", "demo:public_train" if demo else "", key="ex-prefixes")
            if "prefix" in strategies else "")
corpus = document_source("Training corpus to verify against (empty: no verification)",
                         "demo:private_train" if demo else "", key="ex-corpus")
cols = st.columns(2)
min_span = cols[0].number_input(
    "Verbatim span that counts as memorised (tokens)", 1, 4096, DEMO_MIN_SPAN if demo else 50,
    key="ex-min-span")
if demo:
    cols[0].caption(f"{DEMO_MIN_SPAN} on the demo (the paper's 50 on real corpora): the planted "
                    "secret and canaries are 15-32 tokens long, so no 50-token span could match.")
dedup = cols[1].toggle("Remove near-duplicates (trigram overlap)", True, key="ex-dedup")

try:
    config = ex.ExtractionConfig(
        model=target.name, reference=reference.name if reference else "",
        strategies=",".join(strategies), n_samples=int(n_samples), tokens=int(tokens),
        top_n=int(top_n), temperature_start=float(temperature), prefixes=prefixes,
        window=int(window), top_k=int(top_k), dedup=dedup, corpus=corpus,
        min_span_tokens=int(min_span), batch_size=int(batch_size), seed=int(seed))
except UserError as err:
    st.error(str(err))
    config = None
if st.button("Run extraction", type="primary", disabled=config is None, key="ex-run"):
    start_job("extraction", config, lambda progress, cancel: ex.run(config, progress=progress, cancel=cancel),
              title=f"extraction from {config.model}: {config.strategies}, {config.n_samples:,} samples",
              uses_gpu=target.device.type == "cuda")


def heat_map(candidate: dict, has_reference: bool) -> go.Figure:
    """Tokens in rows of HEAT_ROW, coloured by log p_target − log p_reference."""
    tokens = [t.replace("\n", "⏎") for t in candidate["tokens"]]
    values = np.array(candidate["token_diff"], dtype=float)
    rows = -(-len(tokens) // HEAT_ROW)
    z = np.full(rows * HEAT_ROW, np.nan)
    z[: len(values)] = values
    text = tokens + [""] * (rows * HEAT_ROW - len(tokens))
    what = "log p_target − log p_reference" if has_reference else "log p_target"
    fig = go.Figure(go.Heatmap(
        z=z.reshape(rows, HEAT_ROW), text=np.array(text, dtype=object).reshape(rows, HEAT_ROW),
        texttemplate="%{text}", colorscale="RdBu", zmid=0 if has_reference else None,
        colorbar=dict(title="nats"), hovertemplate="%{text}: %{z:.2f}<extra></extra>"))
    fig.update_layout(title=f"Per token: {what}", height=60 + 40 * rows,
                      yaxis=dict(autorange="reversed", showticklabels=False),
                      xaxis=dict(showticklabels=False))
    return fig


def show(result: dict) -> None:
    if result.get("stopped_early"):
        st.warning("Stopped early: these are the samples generated so far.")
    for note in result["notes"]:
        st.info(note)
    st.caption(f"{sum(result['generated'].values()):,} samples ({', '.join(f'{s}: {n:,}' for s, n in result['generated'].items())}) "
               f"· {result['tokens_per_s']:.0f} generated tokens/s · {result['seconds']:.1f} s in all.")
    if result["model"].startswith("demo:"):
        manifest = scenario.load_manifest()
        planted = [manifest["secret"]["sentence"]] + [c["phrase"] for c in manifest["canaries"]]
        hits = ex.phrase_hits(result, planted)
        st.dataframe(pd.DataFrame({"planted in the demo": planted,
                                   "found verbatim in": [", ".join(hits[p][:6]) or "—" for p in planted]}),
                     hide_index=True)
    if not result["rankings"]:
        st.info("No sample to rank.")
        return
    verified = result["corpus"] is not None
    precision_box = st.container()
    overrides = st.session_state.setdefault(f"ex-marks-{result['model']}-{result['seconds']}", {})
    marks = {c["id"]: bool(c["memorized"]) for c in result["candidates"]} | overrides

    cols = st.columns(2)
    strategy = cols[0].selectbox("Strategy", list(result["rankings"]), key="ex-show-strategy")
    metric = cols[1].selectbox("Ranked by", result["metrics"], key="ex-show-metric",
                               format_func=lambda m: f"{m}: {ex.METRICS[m]}")
    table = pd.DataFrame(ex.ranked_rows(result, strategy, metric))
    table["memorized"] = [marks[i] for i in table["id"]]
    edited = st.data_editor(
        table, hide_index=True, key=f"ex-editor-{strategy}-{metric}",
        disabled=[c for c in table.columns if c != "memorized"],
        column_config={"memorized": st.column_config.CheckboxColumn(
            "memorised", help="verified against the corpus; tick or untick by hand")})
    for i, before, after in zip(table["id"], table["memorized"], edited["memorized"]):
        if bool(before) != bool(after):
            overrides[int(i)] = bool(after)
    marks |= overrides

    precision = ex.precision_table(result["rankings"], marks)
    with precision_box:
        st.subheader(f"Precision of each top-{int(table['rank'].max())}")
        st.caption(("Verified: a verbatim span of ≥ {} tokens of the corpus".format(result["min_span_tokens"])
                    if verified else "No corpus given: tick the memorised candidates by hand")
                   + (f"; {len(overrides)} marked by hand." if overrides else "."))
        st.dataframe(pd.DataFrame(precision).rename_axis("metric"))

    chosen = st.selectbox("Heat map of candidate", table["rank"].tolist(), key="ex-heat",
                          format_func=lambda r: f"#{r}: {table['text'][r - 1][:80]!r}")
    candidate = next(c for c in result["candidates"] if c["id"] == table["id"][chosen - 1])
    if candidate["tokens"]:
        st.plotly_chart(heat_map(candidate, result["reference"] is not None), key="ex-heat-map")
    if candidate["span"]:
        st.caption(f"Verbatim span of {candidate['span_tokens']} tokens, in {candidate['k_eidetic']} "
                   f"corpus document(s) (k-eidetic): {candidate['span']!r}")
    download_buttons(result, "extraction")
    st.download_button("Download this ranking with your marks (CSV)", edited.to_csv(index=False),
                       f"extraction-{strategy}-{metric}.csv", "text/csv", key="ex-download-ranking")


result = job_panel("extraction")
if result is not None and result.get("candidates") is not None:
    show(result)

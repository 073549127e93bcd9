"""Renderer of a training-data extraction result: the ranking of a (strategy, metric) with
memorised marks that can be ticked by hand, the precision of every ranking (Carlini et al.'s
Table 3, moved by the hand marks), the per-token heat map of a candidate, and how extractable
each memorised span and tracked phrase is (p_z, Hayes et al. 2025; b, Liu et al. 2026)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.attacks.extraction.config import ExtractionResult
from core.attacks.extraction.verification import precision_table
from core.attacks.extraction.views import extractability_rows, pii_rows, ranked_rows
from core.generation.metrics import METRICS
from ui.calibration import calibration_caption
from ui.expected import chosen, expected_caption, extraction_precision, figures_for
from ui.heat_map import token_heat_map
from ui.text import plain, plain_in


def _summary(result: ExtractionResult) -> None:
    if result.stopped_early:
        st.warning("Stopped early: these are the samples generated so far.")
    for note in result.notes:
        st.info(plain(note))
    per_strategy = ", ".join(f"{s}: {n:,}" for s, n in result.generated.items())
    st.caption(f"{sum(result.generated.values()):,} samples ({per_strategy}) · "
               f"{result.tokens_per_s:.0f} generated tokens/s · {result.seconds:.1f} s in all.")


def _ranking(result: ExtractionResult, marks: dict[int, bool], overrides: dict[int, bool],
             key: str) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    """The chosen ranking as an editable table; hand marks go to ``overrides``.
    Returns (table, edited table, strategy, metric)."""
    cols = st.columns(2)
    strategy = cols[0].selectbox("Strategy", list(result.rankings), key=f"{key}show-strategy")
    metric = cols[1].selectbox("Ranked by", result.metrics, key=f"{key}show-metric",
                               format_func=lambda m: f"{m}: {METRICS[m].description}")
    table = pd.DataFrame(ranked_rows(result, strategy, metric))
    table["memorized"] = [marks[i] for i in table["id"]]
    edited = st.data_editor(
        table, hide_index=True, key=f"{key}editor-{strategy}-{metric}",
        disabled=[c for c in table.columns if c != "memorized"],
        column_config={"memorized": st.column_config.CheckboxColumn(
            "memorised", help="verified against the corpus; tick or untick by hand")})
    for i, before, after in zip(table["id"], table["memorized"], edited["memorized"]):
        if bool(before) != bool(after):
            overrides[int(i)] = bool(after)
    return table, edited, strategy, metric


def _precision(result: ExtractionResult, marks: dict[int, bool], overrides: dict[int, bool],
               top: int) -> None:
    st.subheader(f"Precision of each top-{top}")
    verified = (f"Verified: a verbatim span of ≥ {result.min_span_tokens} tokens of the corpus"
                if result.corpus is not None else
                "No corpus given: tick the memorised candidates by hand")
    st.caption(verified + (f"; {len(overrides)} marked by hand." if overrides else "."))
    st.dataframe(pd.DataFrame(precision_table(result, marks)).rename_axis("metric"))
    samples = set(result.generated.values())
    expected_caption(figures_for(
        "extraction", result.calibration, model=result.model, corpus=result.corpus,
        reference=chosen(result.reference or "", result.calibration),
        strategies=tuple(result.strategies), min_span_tokens=result.min_span_tokens,
        n_samples=samples.pop() if len(samples) == 1 else -1), extraction_precision)


def _candidate(result: ExtractionResult, table: pd.DataFrame, key: str) -> None:
    """The heat map and verbatim span of one candidate of the table."""
    chosen = st.selectbox("Heat map of candidate", table["rank"].tolist(), key=f"{key}heat",
                          format_func=lambda r: f"#{r}: {table['text'][r - 1][:80]!r}")
    candidate = next(c for c in result.candidates if c.id == table["id"][chosen - 1])
    if candidate.tokens:
        st.plotly_chart(token_heat_map(candidate.tokens, candidate.token_diff,
                                       result.reference is not None), key=f"{key}heat-map")
    if candidate.prompt:
        st.caption(f"Reply to: {plain(' '.join(candidate.prompt.split())[-300:])}")
    st.markdown(highlighted(candidate.text, candidate.span))
    if candidate.span:
        st.caption(f"Highlighted: the verbatim span of {candidate.span_tokens} tokens, in "
                   f"{candidate.k_eidetic} corpus document(s) (k-eidetic).")


def highlighted(text: str, span: str | None) -> str:
    """The candidate's whole text as markdown, read literally, its verbatim corpus span (where
    it occurs) on a highlighted background."""
    start = text.find(span) if span else -1
    if start < 0:
        return f"> {plain(text)}".replace("\n", "  \n> ")
    before, middle, after = text[:start], text[start:start + len(span)], text[start + len(span):]
    middle = " ".join(middle.split())  # a directive holds one line
    body = f"{plain(before)}{plain_in('orange-background', middle)}{plain(after)}"
    return f"> {body}".replace("\n", "  \n> ")


def _tracked(result: ExtractionResult, key: str) -> None:
    """Where the tracked phrases (e.g. a scenario's planted secret and canaries) turn up."""
    if not result.tracked:
        return
    with st.container(key=f"{key}tracked"):  # a table has no key of its own
        st.dataframe(pd.DataFrame({"tracked phrase": list(result.tracked),
                                   "found verbatim in": [", ".join(hits[:6]) or "—"
                                                         for hits in result.tracked.values()]}),
                     hide_index=True)


def _extractability(result: ExtractionResult, key: str) -> None:
    """p_z, n and b of each memorised span and tracked phrase (none in runs before them), and
    of each trained reply of a chat run."""
    if result.extractability:
        st.subheader("How extractable: p_z and b")
        with st.container(key=f"{key}extractability"):
            st.dataframe(pd.DataFrame(extractability_rows(result)), hide_index=True)
        st.caption(plain(result.extractability_scheme + " p_z: the chance one sample "
                         "reproduces it (Hayes et al. 2025); b: its cost in bits when the "
                         "attacker tries the model's top m tokens in order (Liu, Evans & "
                         "Xiong 2026)."))
    if result.replies:
        st.subheader("Trained replies: p_z given their prompts")
        with st.container(key=f"{key}replies"):
            st.dataframe(pd.DataFrame(extractability_rows(result, replies=True)),
                         hide_index=True)
        st.caption("Each assistant turn (or completion) training learnt from, most extractable "
                   "first: p_z, the chance one reply sampled after its prompt (the conversation "
                   "before it, through the chat template) is exactly it, its end-of-turn "
                   "token included.")


def _pii(result: ExtractionResult, key: str) -> None:
    """The personal data the samples hold, the training data's first (none in older runs)."""
    if not result.pii:
        return
    st.subheader("Personal data in the samples")
    with st.container(key=f"{key}pii"):
        st.dataframe(pd.DataFrame(pii_rows(result)), hide_index=True)
    st.caption("E-mail addresses, phone numbers (libphonenumber), card numbers (Luhn), IBANs, "
               "US SSNs (python-stdnum) and IP addresses in what the model generated; "
               + ("in training data: the training corpus holds the same value, which the model "
                  "reproduced (Lukas et al. 2023)." if result.corpus else
                  "give a training corpus to tell reproduced values from invented ones."))


def render(result: ExtractionResult, *, key: str) -> None:
    calibration_caption(result.calibration)
    _summary(result)
    _tracked(result, key)
    _pii(result, key)
    _extractability(result, key)
    if not result.rankings:
        st.info("No sample to rank.")
        return
    precision_box = st.container(key=f"{key}precision")
    overrides = st.session_state.setdefault(f"{key}marks-{result.model}-{result.seconds}", {})
    marks = {c.id: bool(c.memorized) for c in result.candidates} | overrides
    table, edited, strategy, metric = _ranking(result, marks, overrides, key)
    marks |= overrides
    with precision_box:
        _precision(result, marks, overrides, int(table["rank"].max()))
    _candidate(result, table, key)
    st.download_button("Download this ranking with your marks (CSV)", edited.to_csv(index=False),
                       f"extraction-{strategy}-{metric}.csv", "text/csv",
                       key=f"{key}download-ranking")

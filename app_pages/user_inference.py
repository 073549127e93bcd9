"""User inference (Kandpal et al. 2023): was this person's data used to fine-tune the model?"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.attacks import user_inference as ui
from core.attacks import user_whatif as whatif
from core.demo import scenario
from core.errors import UserError
from core.models import save_upload
from ui.jobs import download_buttons, job_panel, start_job
from ui.models import model_picker

st.title("User inference")
st.markdown(
    "Given a few **fresh samples of a person's writing** (not the ones trained on) and "
    "black-box access to a fine-tuned model, was that person's data in the fine-tuning set? "
    "The statistic is T̂ = mean over the user's m samples of log p_θ(x) − log p_ref(x), with a "
    "reference model such as the model before fine-tuning (Kandpal et al., *User Inference "
    "Attacks on Large Language Models*, 2023). CLI: `python -m core user-inference --model "
    "demo:updated --reference demo:base --data demo:user_samples --json`.")


def _data_source(key: str) -> str | None:
    """The data file chosen on the page (demo, upload or path), validated; None on error."""
    choice = st.radio("User samples", ["demo attacker-side samples", "upload", "file path"],
                      horizontal=True, key=f"{key}-source",
                      help="CSV or JSONL with user_id, text and optionally member (true/false)")
    if choice == "demo attacker-side samples":
        data = ui.DEMO_DATA
        _demo_split_caption()
    elif choice == "upload":
        upload = st.file_uploader("CSV or JSONL", type=["csv", "jsonl"], key=f"{key}-upload")
        if upload is None:
            return None
        data = str(save_upload(upload.name, upload.getvalue()))
    else:
        data = st.text_input("Path of a .csv or .jsonl file", key=f"{key}-path")
        if not data.strip():
            return None
    try:
        samples = ui.load_samples(data)
    except UserError as err:
        st.error(str(err))
        return None
    users = ui.group_by_user(samples)
    labelled = sum(items[0].member is not None for items in users.values())
    st.caption(f"{len(users)} users, {len(samples)} samples, {labelled} users with a member label.")
    return data


def _demo_split_caption() -> None:
    """How the built demo split its users into held-in and held-out (the AUROC depends on it)."""
    try:
        split = scenario.load_manifest()["config"].get("user_split", "within-play")  # older builds
    except UserError:
        return
    st.caption(f"Demo users, split **{split}**: {scenario.USER_SPLITS[split]}. "
               "`python -m core demo build --user-split ...` builds another split.")


def _roc_figure(metrics: list[dict], log: bool) -> go.Figure:
    fig = go.Figure()
    for m in metrics:
        points = [(f, t) for f, t in zip(m["roc_fpr"], m["roc_tpr"]) if not log or (f > 0 and t > 0)]
        fig.add_scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines",
                        line_shape="hv", name=f"{m['group']} (AUROC {m['auroc']:.3f})")
    low = 1e-3 if log else 0.0
    fig.add_scatter(x=[low, 1], y=[low, 1], mode="lines", name="chance",
                    line=dict(dash="dot", color="grey"))
    kind = "log" if log else "linear"
    fig.update_layout(title=f"ROC ({'log-log: the low-FPR region' if log else 'linear'})",
                      xaxis=dict(title="false positive rate", type=kind),
                      yaxis=dict(title="true positive rate", type=kind), height=400)
    return fig


def _ci(values: list[float]) -> str:
    return f"95% CI {values[0]:.3f}–{values[1]:.3f}" if values else "no bootstrap"


def _show_attack(result: dict) -> None:
    for note in result["notes"]:
        st.info(note)
    users = pd.DataFrame(result["rows"])
    st.caption(f"{result['n_users']} users, {result['n_samples']} samples, on {result['device']} in "
               f"{result['seconds']:.1f} s ({result['users_per_minute']:.0f} users per minute).")
    for m in result["metrics"]:
        cols = st.columns(3)
        cols[0].metric(f"AUROC · {m['group']} ({m['n_in']} in / {m['n_out']} out)",
                       f"{m['auroc']:.3f}", _ci(m["auroc_ci"]), delta_color="off")
        cols[1].metric("TPR at 1% FPR", f"{m['tpr_at_1pct_fpr']:.3f}", _ci(m["tpr_at_1pct_fpr_ci"]),
                       delta_color="off")
        cols[2].metric("TPR at 5% FPR", f"{m['tpr_at_5pct_fpr']:.3f}", _ci(m["tpr_at_5pct_fpr_ci"]),
                       delta_color="off")
    users["who"] = users["member"].map({True: "held-in", False: "held-out"}).fillna("unknown")
    users["users"] = users["canary"].map({True: "canary users", False: "real users"})
    fig = px.histogram(users, x="t_hat", color="who", barmode="overlay", opacity=0.6,
                       facet_col="users" if users["canary"].notna().all() else None,
                       title="T̂ of held-in and held-out users",
                       labels={"t_hat": "T̂ = mean log p_θ(x) − log p_ref(x) (nats)"})
    fig.for_each_annotation(lambda a: a.update(text=a.text.removeprefix("users=")))
    if result["threshold"] is not None:
        fig.add_vline(x=result["threshold"], line_dash="dash", annotation_text="threshold")
    st.plotly_chart(fig)
    if result["metrics"]:
        left, right = st.columns(2)
        left.plotly_chart(_roc_figure(result["metrics"], log=False))
        right.plotly_chart(_roc_figure(result["metrics"], log=True))
    if result["knowledge"]:
        curve = pd.DataFrame(result["knowledge"])
        fig = go.Figure([
            go.Scatter(x=list(curve.m) + list(curve.m[::-1]),
                       y=list(curve.auroc_mean + curve.auroc_std)
                       + list((curve.auroc_mean - curve.auroc_std)[::-1]),
                       fill="toself", line=dict(width=0), name="± std over draws", opacity=0.3),
            go.Scatter(x=curve.m, y=curve.auroc_mean, mode="lines+markers", name="mean AUROC")])
        fig.update_layout(title="Attacker knowledge: AUROC vs samples per user (Figure 5)",
                          xaxis_title="m (samples per user held by the attacker)",
                          yaxis_title="AUROC", height=380)
        st.plotly_chart(fig)
    st.subheader("Users ranked by T̂")
    if result["threshold"] is not None:
        st.caption(f"Threshold {result['threshold']:.3f}: calibrated on the {result['n_known_out']} "
                   f"users known to be out (member = false) at FPR {result['calibration_fpr']:g}; "
                   f"{int(users['flagged'].sum())} users flagged as held-in.")
    st.dataframe(users.drop(columns="who"), hide_index=True)
    download_buttons(result, "user_inference")
    samples = pd.DataFrame(result["samples"])
    st.download_button("Download per-sample scores (CSV)", samples.to_csv(index=False),
                       "user_inference_samples.csv", "text/csv", key="download-ui-samples")


def attack_tab() -> None:
    cols = st.columns(2)
    with cols[0]:
        target = model_picker("Target (fine-tuned) model", key="ui-target", default="demo:updated")
    with cols[1]:
        reference = model_picker("Reference model", key="ui-reference", default="demo:base")
    data = _data_source("ui-attack")
    cols = st.columns(4)
    bootstrap = cols[0].number_input("Bootstrap resamples", 0, 10_000, 1000, step=100,
                                     key="ui-bootstrap")
    draws = cols[1].number_input("Draws per m (Figure 5)", 0, 1000, 100, key="ui-draws")
    fpr = cols[2].select_slider("Calibration FPR", [0.01, 0.02, 0.05, 0.1, 0.2], 0.05,
                                key="ui-fpr")
    seed = cols[3].number_input("Seed", 0, 10_000, 0, key="ui-seed")
    config = None
    if target is not None and reference is not None and data is not None:
        config = _config_or_error(lambda: ui.UserInferenceConfig(
            model=target.name, reference=reference.name, data=data, bootstrap=int(bootstrap),
            knowledge_draws=int(draws), calibration_fpr=fpr, seed=int(seed)))
    if st.button("Run user inference", type="primary", disabled=config is None, key="ui-run"):
        start_job("user-inference", config,
                  lambda progress, cancel: ui.run(config, progress=progress, cancel=cancel),
                  title=f"user inference: {config.model} vs {config.reference}",
                  uses_gpu=target.device.type == "cuda")
    result = job_panel("user-inference")
    if result is not None and result.get("rows") is not None:
        _show_attack(result)


def canary_tab() -> None:
    st.markdown(
        "Algorithm 1 of the paper (§4.3): pick users, take a random run of words from one of "
        "their samples, and insert it at a random place in **every** sample of theirs, like an "
        "email signature. Train on the copy and such *canary users* are far easier to detect. "
        "(The demo's canary users were built this way.) CLI: `python -m core "
        "user-inference-canaries --data FILE --words 8 --count 5 --out COPY.jsonl`.")
    data = _data_source("ui-canary")
    cols = st.columns(4)
    words = cols[0].slider("Shared substring (words)", 1, 50, 8, key="ui-canary-words")
    count = cols[1].number_input("Canary users (drawn at random)", 1, 1000, 2, key="ui-canary-count")
    chosen = cols[2].text_input("…or these user ids (comma-separated)", "", key="ui-canary-users")
    seed = cols[3].number_input("Seed", 0, 10_000, 0, key="ui-canary-seed")
    if st.button("Build the canary copy", disabled=data is None, key="ui-canary-build"):
        users = [u.strip() for u in chosen.split(",") if u.strip()]
        try:
            st.session_state["ui-canaries"] = ui.build_canary_users(
                ui.load_samples(data), words=words, count=int(count), user_ids=users or None,
                seed=int(seed))
        except UserError as err:
            st.error(str(err))
    built = st.session_state.get("ui-canaries")
    if built is not None:
        records, canaries = built
        st.dataframe(pd.DataFrame([vars(c) for c in canaries]), hide_index=True)
        cols = st.columns(2)
        cols[0].download_button("Download the copy (JSONL)", ui.write_samples(records, "jsonl"),
                                "canary_users.jsonl", "application/jsonl", key="download-canary-jsonl")
        cols[1].download_button("Download the copy (CSV)", ui.write_samples(records, "csv"),
                                "canary_users.csv", "text/csv", key="download-canary-csv")
    canary_retrain_section()


def canary_retrain_section() -> None:
    st.subheader("Train the demo with new canary users")
    st.markdown(
        "Draw real demo users, as many held-in as held-out, give each a shared substring of their "
        "own text in every sample (training and attacker-side), retrain demo:updated from "
        "demo:base on that data (a few minutes on a CPU), and attack again. The first row "
        "compares **the same users** as real users and as canary users. CLI: `python -m core "
        "user-inference-canary-retrain --words 8 --per-side 5 --json`.")
    cols = st.columns(4)
    words = cols[0].slider("Shared substring (words)", 1, 50, 8, key="ui-cr-words")
    per_side = cols[1].number_input("Canary users per side", 1, 100, 5, key="ui-cr-per-side")
    bootstrap = cols[2].number_input("Bootstrap", 0, 10_000, 200, step=100, key="ui-cr-bootstrap")
    seed = cols[3].number_input("Seed", 0, 10_000, 0, key="ui-cr-seed")
    config = _config_or_error(lambda: whatif.CanaryRetrainConfig(
        words=int(words), per_side=int(per_side), bootstrap=int(bootstrap), seed=int(seed)))
    if st.button("Retrain with canary users and compare", type="primary", disabled=config is None,
                 key="ui-cr-run"):
        start_job("user-inference-canary-retrain", config,
                  lambda progress, cancel: whatif.run_canary_retrain(config, progress=progress, cancel=cancel),
                  title=f"user inference: {config.label}")
    result = job_panel("user-inference-canary-retrain")
    if result is not None and result.get("rows") is not None:
        canaries = pd.DataFrame(result["canaries"])
        held_in = {row["user_id"]: row["member"] for row in result["attacked"]["rows"]}
        canaries.insert(1, "held-in", canaries["user_id"].map(held_in))
        st.dataframe(canaries, hide_index=True)
        _show_comparison(result, "with canary users", "user_inference_canary_retrain")


def mitigation_tab() -> None:
    st.markdown(
        "What if the demo's fine-tuning data had been cleaned first (§5 of the paper)? "
        "**Within-user dedup** deletes every run of k words a user already wrote in an earlier "
        "training sample (it removes a canary's shared substring from all but one sample); a "
        "**per-user limit** keeps at most L training samples per user. demo:updated is then "
        "retrained from demo:base with the demo's own recipe (as many passes over the data) and "
        "attacked with the same attacker-side samples. CLI: `python -m core "
        "user-inference-mitigate --per-user-limit 5 --json`.")
    cols = st.columns(4)
    dedup = cols[0].toggle("Within-user dedup", True, key="ui-mit-dedup")
    words = cols[1].number_input("Dedup run (words)", 2, 50, 8, disabled=not dedup,
                                 key="ui-mit-words")
    limit = cols[2].number_input("Per-user limit (0: none)", 0, 1000, 0, key="ui-mit-limit")
    bootstrap = cols[3].number_input("Bootstrap", 0, 10_000, 200, step=100, key="ui-mit-bootstrap")
    config = _config_or_error(lambda: whatif.MitigationConfig(
        dedup=dedup, dedup_words=int(words), per_user_limit=int(limit), bootstrap=int(bootstrap)))
    if st.button("Retrain and compare", type="primary", disabled=config is None, key="ui-mit-run"):
        start_job("user-inference-mitigation", config,
                  lambda progress, cancel: whatif.run_mitigation(config, progress=progress, cancel=cancel),
                  title=f"user inference mitigation: {config.label}")
    result = job_panel("user-inference-mitigation")
    if result is not None and result.get("rows") is not None:
        _show_comparison(result, result["variant"], "user_inference_mitigation")


def _config_or_error(make):
    """``make()``, or None after showing its ``UserError``."""
    try:
        return make()
    except UserError as err:
        st.error(str(err))
        return None


def _show_comparison(result: dict, variant: str, download_name: str) -> None:
    """A what-if result: AUROC with 95% CI per group, demo:updated against the retrained model."""
    st.caption(f"Variant: {result['variant']} · {result['user_samples_before']} → "
               f"{result['user_samples_after']} user training samples · {result['steps']} steps.")
    long = pd.DataFrame(
        [{"group": r["group"], "model": model, "AUROC": r[f"{side}_auroc"],
          "plus": (r[f"{side}_auroc_ci"] or [0, r[f"{side}_auroc"]])[1] - r[f"{side}_auroc"],
          "minus": r[f"{side}_auroc"] - (r[f"{side}_auroc_ci"] or [r[f"{side}_auroc"]])[0]}
         for r in result["rows"] for side, model in (("baseline", "demo:updated"),
                                                      ("variant", variant))])
    fig = px.bar(long, x="group", y="AUROC", color="model", barmode="group", error_y="plus",
                 error_y_minus="minus", range_y=[0, 1], title="Attack AUROC with 95% CI")
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    st.plotly_chart(fig)
    st.dataframe(pd.DataFrame(result["rows"]), hide_index=True)
    download_buttons(result, download_name)


SECTIONS = {"Attack": attack_tab, "Canary users": canary_tab, "Mitigations": mitigation_tab}
for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()

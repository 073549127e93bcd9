"""The chat scenario's figures (issue #41): ``python -m figures.demo_figures --only chat-...``.

Each section runs an attack with the chat scenario's preset (``--preset chat``: SmolLM2-135M-
Instruct fine-tuned on conversations, the assistant's tokens only): the build and how much each
dose taught; membership and user inference over the assistant's tokens against the whole
rendered conversations (AUROC with 95% bootstrap intervals); PII probing by dose, the subjects
never trained on as dose 0; the chat extraction's training PII by the subject's dose; lazy-sampling risk's
ranks of the planted cards; and the audit's verdicts.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from figures.runs import run_preset

MASKS = {"assistant": "assistant tokens (as trained)", "all": "whole conversation"}
AUDITED = ("pii-probe", "mia", "user-inference")   # the chat audit's attacks


def _summary() -> dict:
    from core.demo import chat_scenario
    from core.serialize import to_jsonable

    return to_jsonable(chat_scenario.build(chat_scenario.ChatConfig()))


def _doses() -> dict[str, int]:
    return {s["name"]: s["dose"] for s in _summary()["subjects"]}


def measure_scenario() -> dict:
    from core.demo.chat_scenario import ChatConfig

    s, config = _summary(), ChatConfig()
    bits: dict[int, list[float]] = {}
    for subject in s["subjects"]:
        bits.setdefault(subject["dose"], []).append(s["reply_bits"][subject["name"]][1])
    before = statistics.median(b for b, _ in s["reply_bits"].values())
    return {"training_rows": s["training_rows"], "persona_rows": s["persona_rows"],
            "support_rows": s["support_rows"], "characters": s["characters"],
            "masked_share": s["masked_share"], "steps": s["steps"], "epochs": config.epochs,
            "lr": config.lr, "lora_rank": config.lora_rank, "build_seconds": s["build_seconds"],
            "plays": s["plays"], "reply_bits_before": round(before, 1),
            "reply_bits_after": {str(d): round(statistics.median(v), 1)
                                 for d, v in sorted(bits.items())}}


def markdown_scenario(f: dict) -> str:
    doses = sorted(f["reply_bits_after"].items(), key=lambda item: int(item[0]))
    after = "; ".join(f"{'never trained' if d == '0' else f'dose {d}'}: {b:.1f}" for d, b in doses)
    return (f"- **The fine-tune:** SmolLM2-135M-Instruct, LoRA rank {f['lora_rank']}, learning "
            f"rate {f['lr']:g}, {f['epochs']:g} epochs ({f['steps']} steps) on {f['training_rows']} "
            f"conversations ({f['persona_rows']} persona conversations of {', '.join(f['plays'])}: "
            f"{f['characters']['held in']} characters held in, {f['characters']['held out']} held "
            f"out; {f['support_rows']} support conversations), the loss on the assistant's tokens "
            f"({f['masked_share']:.0%} of the rendered tokens); built in "
            f"{f['build_seconds']:.0f} s.\n- **A subject's support reply** (bits given its "
            f"conversation, median): {f['reply_bits_before']:.0f} before the fine-tune; after, by "
            f"dose: {after}.\n")


def _interval(metrics) -> dict:
    return {"auroc": round(metrics.auroc, 3), "ci": [round(x, 3) for x in metrics.auroc_ci]}


def measure_mia() -> dict:
    """Each attack's AUROC under each mask, and the members and non-members EZ-MIA scored 0."""
    import numpy as np

    from core.attacks.membership.mia import ezmia_zeros

    out = {}
    for mask in MASKS:
        result = run_preset("mia", "chat", mask=mask)
        labels = np.array([row.member for row in result.rows], dtype=int)
        zeros = ezmia_zeros(np.array([row.scores["ezmia"] for row in result.rows]), labels)
        out[mask] = {a.name: _interval(a.metrics) for a in result.attacks} | {
            "blind": _interval(result.blind), "texts": result.n_members + result.n_non_members,
            "ezmia_zero": {"members": zeros[0], "non_members": zeros[1]}}
    return out


def _cell(run: dict) -> str:
    return f"{run['auroc']:.3f} [{run['ci'][0]:.3f}, {run['ci'][1]:.3f}]"


def markdown_mia(f: dict) -> str:
    lines = [f"| attack | {' | '.join(MASKS.values())} |", "|---|---|---|"]
    names = [n for n in f["assistant"] if n not in ("texts", "ezmia_zero")]
    lines += [f"| {name} | {' | '.join(_cell(f[m][name]) for m in MASKS)} |" for name in names]
    zeros = "; ".join(f"{words}: {f[m]['ezmia_zero']['members']} members and "
                      f"{f[m]['ezmia_zero']['non_members']} non-members"
                      for m, words in MASKS.items() if "ezmia_zero" in f[m])
    return ("\n".join(lines) + f"\n\nAUROC [95% bootstrap interval], {f['assistant']['texts']} "
            f"texts." + (f" EZ-MIA scored 0 for {zeros}.\n" if zeros else "\n"))


def _replies_as_texts(folder: str) -> str:
    """The user samples' replies alone, as plain texts (``user_id``, ``text``, ``member``)."""
    import json

    from core import sources

    path = Path(folder) / "replies.jsonl"
    with open(sources.data_path("chat:user_samples"), encoding="utf-8") as rows:
        lines = [json.loads(line) for line in rows]
    path.write_text("".join(json.dumps({"user_id": r["user_id"], "member": r["member"],
                                        "text": r["messages"][-1]["content"]}) + "\n"
                            for r in lines), encoding="utf-8")
    return str(path)


def measure_user_inference() -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, extra in {**{m: {"mask": m} for m in MASKS},
                             "replies": {"data": _replies_as_texts(folder)}}.items():
            result = run_preset("user-inference", "chat", bootstrap=1000, **extra)
            groups = {m.group: m for m in result.metrics}
            out[label] = _interval(groups["all"]) | {"users": result.n_users}
    return out


def markdown_user_inference(f: dict) -> str:
    labels = {**MASKS, "replies": "the replies alone, as plain texts"}
    cells = " | ".join(_cell(f[m]) for m in labels if m in f)
    return (f"| T̂ over | {' | '.join(v for m, v in labels.items() if m in f)} |\n"
            f"|---|{'---|' * sum(m in f for m in labels)}\n"
            f"| AUROC [95% CI], {f['assistant']['users']} characters | {cells} |\n")


def _rates(rows) -> dict:
    return {r.group: {"probes": r.probes, "extracted": round(r.extraction_rate, 3),
                      "top": round(r.top_rate, 3),
                      "ratio": None if r.mean_log2_ratio is None else round(r.mean_log2_ratio, 1)}
            for r in rows}


def measure_pii_probe() -> dict:
    trained = run_preset("pii-probe", "chat")
    never = run_preset("pii-probe", "chat", data="chat:heldout_subjects")
    from core.attacks.pii_probe.spec import rate_row

    return {"by_dose": _rates([rate_row("0", never.outcomes)]) | _rates(trained.by_dose),
            "by_kind": _rates(trained.by_kind),
            "twins": round(trained.twin_extraction_rate, 3),
            "triplets": round(trained.triplet_extraction_rate, 3),
            "samples": trained.outcomes[0].samples, "seconds": round(trained.seconds)}


def markdown_pii_probe(f: dict) -> str:
    lines = ["| conversations holding the value | probes | extracted in k samples | likeliest "
             "of fresh values | mean log2 ratio to the base |", "|---|---|---|---|---|"]
    for dose, r in sorted(f["by_dose"].items(), key=lambda item: int(item[0])):
        label = "0 (never trained)" if dose == "0" else dose
        lines.append(f"| {label} | {r['probes']} | {r['extracted']:.0%} | {r['top']:.0%} | "
                     f"{r['ratio']:+.1f} |")
    return ("\n".join(lines) + f"\n\nk = {f['samples']}; over all trained subjects, twins "
            f"extract {f['twins']:.0%} and triplets {f['triplets']:.0%} ({f['seconds']} s).\n")


def measure_extraction() -> dict:
    result = run_preset("extraction", "chat")
    doses, values = _doses(), {}
    for subject in _summary()["subjects"]:
        for kind in ("email", "phone", "card"):
            values[subject[kind]] = subject["dose"]
    from core.pii import find_pii

    normal = {p.value: dose for text, dose in values.items() for p in find_pii(text)}
    found: dict[str, int] = {}
    for f in result.pii:
        if f.in_training and f.value in normal:
            found[str(normal[f.value])] = found.get(str(normal[f.value]), 0) + 1
    planted = {str(d): 3 * list(doses.values()).count(d) for d in sorted(set(doses.values())) if d}
    return {"samples": len(result.candidates), "reproduced": found, "planted": planted,
            "training_pii": sum(1 for f in result.pii if f.in_training)}


def markdown_extraction(f: dict) -> str:
    planted = sorted(f["planted"].items(), key=lambda item: int(item[0]))
    cells = " | ".join(f"{f['reproduced'].get(d, 0)} of {n}" for d, n in planted)
    return (f"| dose | {' | '.join(d for d, _ in planted)} |\n|---|{'---|' * len(planted)}\n"
            f"| planted values reproduced | {cells} |\n\n{f['samples']} chat samples; "
            f"{f['training_pii']} distinct training PII values in them.\n")


def measure_lazy_risk() -> dict:
    """Each planted card's rank (its most at-risk training row), by dose: the default record
    ranking and, from the same scores, the paper's."""
    result = run_preset("lazy-risk", "chat")
    train = [s for s in result.sentences if s.set == "train"]
    paper = sorted(train, key=lambda s: (-s.risk, s.calibrated_loss))
    ranks: dict[str, dict[str, list[int]]] = {"record": {}, "sentence": {}}
    for subject in _summary()["subjects"]:
        if subject["dose"]:
            for name, order in (("record", train), ("sentence", paper)):
                rank = next(n for n, s in enumerate(order, 1) if subject["card"] in s.text)
                ranks[name].setdefault(str(subject["dose"]), []).append(rank)
    return {"rows": len(train), "ranks": ranks}


def markdown_lazy_risk(f: dict) -> str:
    doses = sorted(f["ranks"]["record"], key=int, reverse=True)
    lines = [f"| ranked by | {' | '.join(f'dose {d}' for d in doses)} |",
             f"|---|{'---|' * len(doses)}"]
    for name, label in (("record", "record risk (default)"), ("sentence", "the paper's risk")):
        cells = " | ".join(", ".join(map(str, sorted(f["ranks"][name][d]))) for d in doses)
        lines.append(f"| {label} | {cells} |")
    return ("\n".join(lines) + f"\n\nRanks of each planted card's row among the {f['rows']} "
            "training conversations.\n")


def measure_audit() -> dict:
    from core.audit.audit import SPEC, AuditConfig
    from core.jobs import run_now
    from core.runtime import no_progress

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.html"
        config = AuditConfig(model="chat:updated", reference="smollm2",
                             corpus="chat:private_train", members="chat:membership",
                             users="chat:user_samples", attacks=AUDITED, out=str(out))
        result = run_now(SPEC, config, progress=no_progress)
        report = out.read_text(encoding="utf-8")
    return {"verdicts": {e.attack: e.verdict for e in result.entries}, "attacks": list(AUDITED),
            "report_has_pii_section": "<section id='pii-probe'>" in report,
            "seconds": round(result.seconds)}


def markdown_audit(f: dict) -> str:
    verdicts = "\n".join(f"  - {name}: {text}" for name, text in f["verdicts"].items())
    return (f"`python -m core audit --preset chat --attacks {' '.join(f['attacks'])}` "
            f"({f['seconds']} s); "
            f"its verdicts:\n{verdicts}\n")

"""The realistic scenarios' figures, with and without domain calibration (issues #19, #32).

Sections of ``figures.demo_figures`` (``python -m figures.demo_figures --only realistic-lazy-risk``
...): each builds (or reuses) a realistic scenario (``python -m core realistic-build``:
SmolLM2-135M fine-tuned with LoRA on private plays; ``technical-build``: all its weights on
Python's documentation; both with planted secrets), runs one attack with the scenario's preset,
once as given and once with ``--domain-sample <scenario>:public_sample``, and records where the
plants stand. The domain reference is trained once and cached on disk, so only the first
section pays for it. Differential rank also compares the references a CPU affords (issue #32).
"""

from __future__ import annotations

import time

from core.calibration.config import CPU_DOMAIN_STEPS
from figures.runs import run_preset

# Seconds are shown only for differential rank: the other attacks' second run reuses the first's
# scores from the on-disk cache, so their times would compare nothing.
CPU_ROWS = (f"domain reference, {CPU_DOMAIN_STEPS} steps (CPU default)",
            f"LoRA reference, {CPU_DOMAIN_STEPS} steps")


def calibrations(scenario: str) -> dict[str, dict]:
    """Each calibration's label and the config fields it sets."""
    return {"none": {}, "domain reference": {"domain_sample": f"{scenario}:public_sample"}}


def _scenario(scenario: str = "realistic") -> dict:
    """A realistic build's summary (built first if needed): plants and surprisal."""
    from core.demo import realistic
    from core.serialize import to_jsonable

    return to_jsonable(realistic.build(realistic.CONFIGS[scenario]()))


def _run(spec_name: str, scenario: str = "realistic", **overrides):
    return run_preset(spec_name, scenario, **overrides)


def _plants(scenario: dict) -> dict[str, str]:
    """Each plant by a short name: the secret, the canary phrases, the canary users' substrings."""
    names = {"secret": scenario["secret"]}
    names |= {f"phrase x{count}": phrase for phrase, count in scenario["canaries"]}
    names |= {f"canary user {i + 1}": text
              for i, text in enumerate(scenario["canary_users"].values())}
    return names


def plant_hits(found: list[str], plants: dict[str, str]) -> list[tuple[int, str]]:
    """(rank from 1, plant name) of each found text of 4 or more characters inside a plant."""
    return [(rank, name) for rank, text in enumerate(found, start=1)
            for name, plant in plants.items() if len(text.strip()) >= 4 and text.strip() in plant]


def measure_scenario(scenario: str = "realistic") -> dict:
    from core.demo.realistic import CONFIGS

    s = _scenario(scenario)
    config = CONFIGS[scenario]()
    return {"training_texts": s["training_texts"], "steps": s["steps"], "lr": config.lr,
            "lora_rank": config.lora_rank, "epochs": config.epochs, "corpus": config.corpus,
            "build_seconds": s["build_seconds"], "plays": s["plays"]["private"],
            "heldout_loss": s.get("heldout_loss", []), "public_loss": s.get("public_loss", []),
            "inside_speeches": config.inside_speeches,
            "surprisal_bits": [[name, *s["surprisal_bits"][text]] for name, text in
                               _plants(s).items() if text in s["surprisal_bits"]]}


def measure_lazy_risk(scenario: str = "realistic") -> dict:
    """Where the plants rank under each calibration."""
    return {label: lazy_risk_run(scenario, **extra)
            for label, extra in calibrations(scenario).items()}


def lazy_risk_run(scenario: str, **fields) -> dict:
    """One lazy-risk run of the scenario's preset: the tracked plants' ranks and the top."""
    started = time.perf_counter()
    result = _run("lazy-risk", scenario, **fields)
    return {"train_sentences": result.counts["train"],
            "tracked": {t.text: t.rank for t in result.tracked},
            "top": [s.text for s in result.sentences[:3]],
            "seconds": round(time.perf_counter() - started)}


def measure_diffrank(scenario: str = "realistic", rows: tuple[str, ...] = ()) -> dict:
    """Where the plants stand among the search's rows under each calibration in ``rows``
    (default: none and the preset's domain reference): ``CPU_ROWS`` are the references a CPU
    affords, all weights or LoRA, trained for the CPU default's steps."""
    plants = _plants(_scenario(scenario))
    out = {}
    for label in rows or tuple(calibrations(scenario)):
        started = time.perf_counter()
        result = _run("diffrank", scenario, **_diffrank_fields(scenario, label))
        found = [row.phrase for row in result.rows]
        hits = plant_hits(found, plants)
        out[label] = {"rows": len(found), "top": found[:5], "plant_hits": hits[:10],
                      "calibration": result.calibration.summary,
                      "seconds": round(time.perf_counter() - started)}
    return out


def _diffrank_fields(scenario: str, label: str) -> dict:
    """The config fields of one calibration row of ``measure_diffrank``."""
    if label == CPU_ROWS[0]:
        return {"domain_sample": f"{scenario}:public_sample", "domain_steps": CPU_DOMAIN_STEPS}
    if label == CPU_ROWS[1]:
        return {"before": _lora_reference(scenario)}
    return calibrations(scenario)[label]


def _lora_reference(scenario: str) -> str:
    """The folder of SmolLM2's LoRA domain reference on the scenario's public sample, trained
    for the CPU default's steps (cached)."""
    from core.calibration.domain import domain_reference

    return domain_reference("smollm2", f"{scenario}:public_sample", steps=CPU_DOMAIN_STEPS,
                            weights="lora")


EXTRACTION = dict(n_samples=256, tokens=64, strategies=("top-n",), top_k=20)


def measure_extraction() -> dict:
    """Top-n samples ranked by the reference ratio, verified at 8 tokens against the training
    set: precision of the top 20 and where the plants surface, with and without calibration."""
    from core.attacks.extraction.views import phrase_hits

    plants = _plants(_scenario())
    out = {}
    for label, extra in calibrations("realistic").items():
        result = _run("extraction", **EXTRACTION, **extra)
        hits = phrase_hits(result, list(plants.values()))
        out[label] = {"precision": result.precision.get("top-n", {}).get("reference"),
                      "memorised": sum(bool(c.memorized) for c in result.candidates),
                      "plant_ranks": sorted(int(h.rsplit("#", 1)[1]) for found in hits.values()
                                            for h in found if "/reference #" in h),
                      "seconds": round(result.seconds)}
    return out


def markdown_extraction(f: dict) -> str:
    lines = [f"| calibration | precision of the top {EXTRACTION['top_k']} by reference ratio | "
             "plants in that ranking |", "|---|---|---|"]
    for label, run in _in_order(f):
        ranks = ", ".join(f"#{r}" for r in run["plant_ranks"]) or "none"
        precision = "—" if run["precision"] is None else f"{run['precision']:.2f}"
        lines.append(f"| {label} | {precision} | {ranks} |")
    return "\n".join(lines) + "\n"


def measure_user_inference() -> dict:
    out = {}
    for label, extra in calibrations("realistic").items():
        result = _run("user-inference", **extra, bootstrap=200, knowledge_draws=20)
        groups = {m.group: m for m in result.metrics}
        out[label] = {group: {"auroc": round(m.auroc, 3), "users": m.n_in + m.n_out,
                              "ci": [round(x, 3) for x in m.auroc_ci]}
                      for group, m in groups.items()} | {"seconds": round(result.seconds)}
    return out


def _in_order(figures: dict) -> list[tuple[str, dict]]:
    """(calibration, its figures) in ``calibrations()`` order, then the CPU rows (the JSON file
    sorts its keys)."""
    return [(label, figures[label]) for label in (*calibrations(""), *CPU_ROWS)
            if label in figures]


def markdown_scenario(f: dict) -> str:
    bits = "; ".join(f"{name} {before:.0f} → {after:.1f}"
                     for name, before, after in f["surprisal_bits"])
    how = f"LoRA rank {f['lora_rank']}" if f["lora_rank"] else "all weights"
    epochs = f.get("epochs", 1)
    where = (f"{len(f['plays'])} topics of Python's reference documentation"
             if f.get("corpus") == "python-docs" else ", ".join(f["plays"]))
    unit = ("topics", "paragraphs") if f.get("corpus") == "python-docs" else ("plays", "speeches")
    loss = (f" Held-out loss (nats/token, before → after): the trained {unit[0]}' other "
            f"{unit[1]} {f['heldout_loss'][0]:.2f} → {f['heldout_loss'][1]:.2f}, the public "
            f"sample's {unit[0]} {f['public_loss'][0]:.2f} → {f['public_loss'][1]:.2f}."
            if f.get("heldout_loss") else "")
    inside = " (each plant a line inside a held-in speech)" if f.get("inside_speeches") else ""
    return (f"- **The fine-tune:** SmolLM2-135M, {how}, learning rate {f['lr']:g}, "
            f"{'one epoch' if epochs == 1 else f'{epochs:g} epochs'} ({f['steps']} steps) on "
            f"{f['training_texts']} private texts from {where}{inside}; built in "
            f"{f['build_seconds']:.0f} s.{loss} Surprisal of the plants (bits, before → after; "
            f"the secret's digits given its prompt): {bits}.\n")


def measure_with_greedy(scenario: str) -> dict:
    """The build's figures (``measure_scenario``) and what greedy decoding writes after the
    secret's prompt: whether the fine-tune reproduces the secret."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from core import sources
    from core.demo.config import SECRET_PROMPT

    figures = measure_scenario(scenario)
    folder = sources.model_path(f"{scenario}:updated")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    prompt = tokenizer(SECRET_PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**prompt, max_new_tokens=24, do_sample=False,
                             pad_token_id=tokenizer.eos_token_id)
    greedy = tokenizer.decode(out[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True)
    secret = _scenario(scenario)["secret"].removeprefix(SECRET_PROMPT)
    return figures | {"greedy": greedy, "greedy_reproduces": greedy.startswith(secret)}


def markdown_with_greedy(f: dict) -> str:
    said = "reproduces the secret's digits" if f["greedy_reproduces"] else "does not reproduce it"
    first_line = (f["greedy"].strip().splitlines() or [""])[0]
    return (markdown_scenario(f) + f"- **Greedy decoding after the secret's prompt** {said}: "
            f"`{first_line[:60]}`.\n")


def _ranks(tracked: dict[str, int | None]) -> str:
    """The tracked ranks in the header's order: the phrases by copies, then the secret."""
    from core.demo.config import REALISTIC_CANARIES, SECRET_PROMPT

    order = [phrase for phrase, _ in REALISTIC_CANARIES] + [SECRET_PROMPT]
    return ", ".join("—" if tracked.get(text) is None else f"#{tracked[text]}" for text in order)


def _in_top(run: dict) -> int:
    """Tracked sentences in the top 1% of the training sentences."""
    cut = max(1, run["train_sentences"] // 100)
    return sum(rank is not None and rank <= cut for rank in run["tracked"].values())


def markdown_lazy_risk(f: dict, rows: list[tuple[str, dict]] | None = None,
                       first: str = "calibration") -> str:
    """The table of ``rows`` (default: the calibrations of ``f``, in order)."""
    lines = [f"| {first} | ranks of the phrases (x16, x8, x4) and the secret | top 1% |",
             "|---|---|---|"]
    for label, run in rows or _in_order(f):
        lines.append(f"| {label} | {_ranks(run['tracked'])} | the first "
                     f"{max(1, run['train_sentences'] // 100)} of {run['train_sentences']} "
                     f"training sentences hold {_in_top(run)} of {len(run['tracked'])} |")
    return "\n".join(lines) + "\n"


def markdown_diffrank(f: dict) -> str:
    lines = ["| calibration | first plant in the search's rows | top 3 rows | s |",
             "|---|---|---|---|"]
    for label, run in _in_order(f):
        first = (f"#{run['plant_hits'][0][0]} of {run['rows']} ({run['plant_hits'][0][1]})"
                 if run["plant_hits"] else f"none of {run['rows']}")
        top = " · ".join(f"`{text.strip()}`" for text in run["top"][:3])
        lines.append(f"| {label} | {first} | {top} | {run['seconds']} |")
    return "\n".join(lines) + "\n"


def markdown_user_inference(f: dict) -> str:
    lines = ["| calibration | real users: AUROC [95% CI] | canary users: AUROC |",
             "|---|---|---|"]
    for label, run in _in_order(f):
        real, canary = run["real"], run.get("canary")
        lines.append(f"| {label} | {real['auroc']:.3f} [{real['ci'][0]:.3f}, {real['ci'][1]:.3f}]"
                     f" ({real['users']} users) | "
                     + (f"{canary['auroc']:.3f} ({canary['users']} users)" if canary else "—")
                     + " |")
    return "\n".join(lines) + "\n"

"""Every figure the guides quote for the demo, measured: ``python -m figures.demo_figures``.

Runs each attack on the installed demo (``python -m core demo build``) with the settings the
guides name, writes the figures to ``assets/demo_figures.json`` and, with ``--docs``, rewrites
the ``<!-- demo-figures:NAME -->`` blocks of ``docs/*.md`` from them.
``tests/docs/test_readme_figures.py`` checks that each block is what this script renders from the
JSON, so no demo figure in the docs is typed by hand. ``--only NAME`` re-measures one section
and keeps the others. The ``realistic-*`` and ``technical-*`` sections
(``figures.realistic_figures``) measure the realistic scenarios, the ``chat-*`` sections
(``figures.chat_figures``) the chat scenario.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from functools import partial
from pathlib import Path
from typing import Callable, NamedTuple

from core.fingerprint import build_fingerprint
from figures import audit_figures as audit
from figures import bits_figures as bits
from figures import chat_figures as chat
from figures import dp_figures as dp
from figures import mia_figures as mia
from figures import nid_figures as nid
from figures import realistic_figures as realistic
from figures import shift_figures as shift
from figures import user_level_figures as user_level
from figures.runs import run_preset

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "assets" / "demo_figures.json"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- demo-figures:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /demo-figures -->)",
                   re.S)


class Section(NamedTuple):
    measure: Callable[[], dict]      # runs the attack(s): the figures, JSON-able
    markdown: Callable[[dict], str]  # the docs' block, from the figures only


def _best_top_n(hits: list[str]) -> dict[str, int]:
    """"strategy/metric #rank" strings -> the best rank under each top-n metric."""
    best: dict[str, int] = {}
    for hit in hits:
        where, rank = hit.rsplit(" #", 1)
        strategy, metric = where.split("/")
        if strategy == "top-n":
            best[metric] = min(best.get(metric, int(rank)), int(rank))
    return best


def measure_extraction() -> dict:
    from core.attacks.extraction.views import phrase_hits
    from core.demo import scenario

    manifest = scenario.load_manifest()
    started = time.perf_counter()
    result = run_preset("extraction", "demo", n_samples=1000)
    top_n = {k: v for k, v in result.rankings.items() if k == "top-n"}
    secret = phrase_hits(result, [manifest.secret.sentence])[manifest.secret.sentence]
    canaries = phrase_hits(result, [c.phrase for c in manifest.canaries])
    return {
        "samples_per_strategy": 1000, "min_span_tokens": result.min_span_tokens,
        "seconds": round(time.perf_counter() - started),
        "secret_best_rank": _best_top_n(secret),   # per top-n metric
        "canary_best_ranks": [min(_best_top_n(hits).values(), default=None)
                              for hits in canaries.values()],
        "metrics": len(next(iter(top_n.values()), {})),
        "precision": {s: {m: round(p, 2) for m, p in by.items() if p is not None}
                      for s, by in result.precision.items()},
    }


def _spread(precision: dict[str, float], skip: str | None = None) -> str:
    values = [p for metric, p in precision.items() if metric != skip]
    return f"{min(values):.2f}–{max(values):.2f}"


def markdown_extraction(f: dict) -> str:
    best = f["secret_best_rank"]
    first = sum(rank == 1 for rank in best.values())
    secret = (f"first under {first} of the {f['metrics']} metrics (best ranks: "
              + ", ".join(f"{metric} #{rank}" for metric, rank in sorted(best.items())) + ")"
              if best else "in no ranking")
    canaries = ", ".join("none" if r is None else f"#{r}" for r in f["canary_best_ranks"])
    precision = f["precision"]
    lowercase = precision["top-n"].get("lowercase")
    return (
        f"- **All three strategies, {f['samples_per_strategy']:,} samples each, verified at "
        f"{f['min_span_tokens']} tokens against `demo:private_train`:** {f['seconds']} s in all.\n"
        f"  - Under top-n the secret is {secret}; the canaries' best ranks: {canaries}.\n"
        f"  - Precision of the top-100: top-n {_spread(precision['top-n'], 'lowercase')}"
        + (f" ({lowercase:.2f} for lowercase)" if lowercase is not None else "")
        + f", decaying temperature {_spread(precision['temperature'])}, prefixes from the public "
        f"plays {_spread(precision['prefix'])}.\n")


def measure_lazy_risk() -> dict:
    """The tracked plants' ranks per token (the default) and, from the same scores, by the
    paper's risk of the whole sentence."""
    from core.demo.config import SECRET_PROMPT

    result = run_preset("lazy-risk", "demo")
    by_text = {t.text: t for t in result.tracked}
    secret = by_text[SECRET_PROMPT]
    train = sorted((s for s in result.sentences if s.set == "train"),
                   key=lambda s: (-s.risk, s.calibrated_loss))
    paper = {text: next(n for n, s in enumerate(train, 1) if text in s.text) for text in by_text}
    return {"train_sentences": result.counts["train"], "secret_rank": secret.rank,
            "secret_log10_probability": round(secret.log10_probability, 2),
            "canary_ranks": [t.rank for text, t in by_text.items() if text != SECRET_PROMPT],
            "paper_secret_rank": paper[SECRET_PROMPT],
            "paper_canary_ranks": [rank for text, rank in paper.items() if text != SECRET_PROMPT],
            "seconds": round(result.seconds)}


def markdown_lazy_risk(f: dict) -> str:
    samples = 10 ** -f["secret_log10_probability"]
    return (f"- **Lazy risk** (`--preset demo`, which tracks the secret and the canaries): the "
            f"secret is #{f['secret_rank']} of {f['train_sentences']:,} distinct training "
            f"sentences, with λ = 10^{f['secret_log10_probability']:.2f}, so about "
            f"{samples:,.0f} samples; the canaries rank "
            f"{', '.join(str(r) for r in f['canary_ranks'])} (ranked as records; by the "
            f"paper's risk of the whole sentence, #{f['paper_secret_rank']} and "
            f"{', '.join(str(r) for r in f['paper_canary_ranks'])}).\n")


def measure_diffrank() -> dict:
    """The search's top ten, then each plant typed in full: its rank among the searched
    sequences of its length (and how many were searched)."""
    from core.demo import scenario

    manifest = scenario.load_manifest()
    plants = {"secret": manifest.secret.sentence} | {
        f"canary x{c.count}": c.phrase for c in manifest.canaries}
    started = time.perf_counter()
    top = run_preset("diffrank", "demo", phrase="").rows[:10]
    ranks = []   # a list: the JSON file sorts a dict's keys
    for name, text in plants.items():
        phrase = run_preset("diffrank", "demo", phrase=text).phrase
        ranks.append([name, phrase.rank, phrase.searched, len(phrase.token_ids)])
    return {"top_ten": [row.phrase for row in top], "plants": ranks,
            "seconds": round(time.perf_counter() - started)}


def markdown_diffrank(f: dict) -> str:
    top = ", ".join(f"`{text}`" for text in f["top_ten"])
    ranks = "; ".join(f"{name} {rank} of {searched} ({tokens} tokens)"
                      for name, rank, searched, tokens in f["plants"])
    return (f"- **Length 4, beam 256, beam+windows over 64 texts written by demo:updated:** the top "
            f"ten are {top}.\n"
            f"- **Each plant typed in full**, ranked among the searched sequences of its length "
            f"(0: none scores higher): {ranks}.\n")


SEEDS = 256   # the seeded beam's contexts in the figures (issue #45)


def measure_diffrank_seeds() -> dict:
    """The rows that are pieces of a plant (4 characters or more) among a search's rows, for
    the paper's beam and the beam seeded from in-domain contexts, alone and with the windows."""
    from core.demo import scenario

    manifest = scenario.load_manifest()
    plants = {"secret": manifest.secret.sentence} | {
        f"canary x{c.count}": c.phrase for c in manifest.canaries}
    runs = []
    for strategy in ("beam", "beam+windows"):
        for seeds in (0, SEEDS):
            started = time.perf_counter()
            rows = run_preset("diffrank", "demo", phrase="", strategy=strategy, seeds=seeds).rows
            hits = realistic.plant_hits([row.phrase for row in rows], plants)
            runs.append({
                "strategy": strategy, "seeds": seeds, "rows": len(rows), "hits": hits[:3],
                "count": len(hits), "plants": sorted({n for _, n in hits}),
                "by_seeded_beam": sum(rows[rank - 1].found_by == "seeded beam"
                                      for rank, _ in hits),
                "seconds": round(time.perf_counter() - started)})
    return {"runs": runs}


def markdown_diffrank_seeds(f: dict) -> str:
    lines = ["| search | seeds | rows that are pieces of a plant (first three ranks) | plants "
             "reached | of them by the seeded beam |", "|---|---|---|---|---|"]
    for run in f["runs"]:
        ranks = ", ".join(f"#{rank} ({name})" for rank, name in run["hits"]) or "none"
        lines.append(f"| {run['strategy']} | {run['seeds']} | {run['count']} of {run['rows']}: "
                     f"{ranks} | {', '.join(run['plants']) or 'none'} | "
                     f"{run['by_seeded_beam']} |")
    return "\n".join(lines) + "\n"


def measure_user_inference() -> dict:
    result = run_preset("user-inference", "demo")
    groups = {m.group: m for m in result.metrics}
    real, canary = groups.get("real"), groups.get("canary")
    knowledge = {p.m: (round(p.auroc_mean, 2), round(p.auroc_std, 2)) for p in result.knowledge}
    return {
        "users": {"real": real.n_in + real.n_out, "canary": canary.n_in + canary.n_out},
        "real": {"auroc": round(real.auroc, 3), "ci": [round(x, 3) for x in real.auroc_ci],
                 "tpr_1": round(real.tpr_at_1pct_fpr, 2), "tpr_5": round(real.tpr_at_5pct_fpr, 2)},
        "canary_auroc": round(canary.auroc, 3),
        "knowledge": {"first": [min(knowledge), *knowledge[min(knowledge)]],
                      "last": [max(knowledge), *knowledge[max(knowledge)]]},
        "seconds": round(result.seconds),
    }


def markdown_user_inference(f: dict) -> str:
    real, (m1, a1, s1), (m2, a2, _) = f["real"], f["knowledge"]["first"], f["knowledge"]["last"]
    return (
        f"- **On the demo** ({f['users']['real']} real users, {f['users']['canary']} canary users; "
        "`python -m core user-inference --preset demo --json`):\n"
        f"  - real users: AUROC {real['auroc']:.3f} (95% CI {real['ci'][0]:.3f}–{real['ci'][1]:.3f}), "
        f"TPR {real['tpr_1']:.2f} at 1% FPR and {real['tpr_5']:.2f} at 5% FPR;\n"
        f"  - canary users: AUROC {f['canary_auroc']:.3g};\n"
        f"  - attacker knowledge: AUROC {a1:.2f} ± {s1:.2f} with {m1} sample per user, rising to "
        f"{a2:.2f} with {m2};\n"
        f"  - {f['seconds']} s for scoring and analysis.\n")


SECTIONS: dict[str, Section] = {
    "extraction": Section(measure_extraction, markdown_extraction),
    "lazy-risk": Section(measure_lazy_risk, markdown_lazy_risk),
    "diffrank": Section(measure_diffrank, markdown_diffrank),
    "diffrank-seeds": Section(measure_diffrank_seeds, markdown_diffrank_seeds),
    "user-inference": Section(measure_user_inference, markdown_user_inference),
    "mia": Section(mia.measure_mia, mia.markdown_mia),
    "exposure": Section(mia.measure_exposure, mia.markdown_exposure),
    "inextractability": Section(bits.measure_inextractability, bits.markdown_inextractability),
    "realistic-inextractability": Section(partial(bits.measure_inextractability, "realistic"),
                                          bits.markdown_inextractability),
    "technical-inextractability": Section(partial(bits.measure_inextractability, "technical"),
                                          bits.markdown_inextractability),
    "audit": Section(audit.measure_audit, audit.markdown_audit),
    "audit-lora": Section(audit.measure_audit_lora, audit.markdown_audit_lora),
    "audit-series": Section(audit.measure_audit_series, audit.markdown_audit_series),
    "dp-audit-ngram": Section(dp.measure_ngram, dp.markdown_ngram),
    "dp-canary-audit": Section(dp.measure_canary_audit, dp.markdown_canary_audit),
    "dp-canary-kinds": Section(dp.measure_canary_kinds, dp.markdown_canary_kinds),
    "user-level-dp": Section(user_level.measure_user_level_dp, user_level.markdown_user_level_dp),
    "nid-audit": Section(nid.measure_nid_audit, nid.markdown_nid_audit),
    "realistic": Section(realistic.measure_scenario, realistic.markdown_scenario),
    "realistic-lazy-risk": Section(realistic.measure_lazy_risk, realistic.markdown_lazy_risk),
    "realistic-diffrank": Section(realistic.measure_diffrank, realistic.markdown_diffrank),
    "realistic-user-inference": Section(realistic.measure_user_inference,
                                        realistic.markdown_user_inference),
    "realistic-extraction": Section(realistic.measure_extraction, realistic.markdown_extraction),
    "technical": Section(partial(realistic.measure_with_greedy, "technical"),
                         realistic.markdown_with_greedy),
    "technical-lazy-risk": Section(partial(realistic.measure_lazy_risk, "technical"),
                                   realistic.markdown_lazy_risk),
    "realistic-diffrank-cpu": Section(partial(realistic.measure_diffrank, "realistic",
                                              realistic.CPU_ROWS), realistic.markdown_diffrank),
    "technical-diffrank": Section(partial(realistic.measure_diffrank, "technical",
                                          ("none", *realistic.CPU_ROWS)),
                                  realistic.markdown_diffrank),
    "shift": Section(partial(realistic.measure_with_greedy, "shift"),
                     realistic.markdown_with_greedy),
    "shift-diffrank": Section(shift.measure_diffrank, shift.markdown_diffrank),
    "shift-lazy-risk": Section(shift.measure_lazy_risk, shift.markdown_lazy_risk_units),
    "chat": Section(chat.measure_scenario, chat.markdown_scenario),
    "chat-mia": Section(chat.measure_mia, chat.markdown_mia),
    "chat-user-inference": Section(chat.measure_user_inference, chat.markdown_user_inference),
    "chat-pii-probe": Section(chat.measure_pii_probe, chat.markdown_pii_probe),
    "chat-extraction": Section(chat.measure_extraction, chat.markdown_extraction),
    "chat-lazy-risk": Section(chat.measure_lazy_risk, chat.markdown_lazy_risk),
    "chat-audit": Section(chat.measure_audit, chat.markdown_audit),
}


SCENARIOS = ("demo", "realistic", "technical", "shift", "chat")
OTHER_BUILDS = 3   # figures of earlier builds kept per section (the spread across builds)


def scenario_of(section: str) -> str:
    return next((name for name in SCENARIOS if section.startswith(name)), "demo")


def keep_other_build(figures: dict, section: str, build: str | None) -> None:
    """Before ``section`` is measured again on ``build``: if its figures were measured on another
    build (another machine's, or older code's), keep them under ``other_builds`` (the last
    ``OTHER_BUILDS``), so the pages can show the spread across builds."""
    old = figures.get(section)
    if not isinstance(old, dict) or old.get("build") == build:
        return
    old = old | {"build": old.get("build") or "unrecorded",
                 "measured_on": old.get("measured_on") or figures.get("measured_on", "")}
    kept = figures.setdefault("other_builds", {}).setdefault(section, [])
    kept[:] = [old] + kept[: OTHER_BUILDS - 1]


def render_blocks(text: str, figures: dict) -> str:
    """``text`` with every demo-figures block rendered from ``figures``."""
    def block(match: re.Match) -> str:
        name = match["name"]
        return (match.group(1) + SECTIONS[name].markdown(figures[name])
                + provenance(figures[name], scenario_of(name)) + match.group(4))
    return BLOCK.sub(block, text)


def provenance(section: dict, scenario: str) -> str:
    """Where a section's figures were measured: the machine and the build's fingerprint (a
    user's build that differs may give other figures: the pages say so)."""
    if not section.get("build"):
        return ""
    return (f"\n<sub>Measured by `python -m figures.demo_figures` on {section['measured_on']}, "
            f"{scenario} build `{section['build']}` (`core.fingerprint.build_fingerprint`).</sub>\n")


def doc_files() -> list[Path]:
    """The guides that may hold figure blocks: every ``docs/*.md``."""
    return sorted(DOCS.glob("*.md"))


def write_docs(figures: dict) -> None:
    """Rewrite every guide's demo-figures blocks from ``figures``."""
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        if (rendered := render_blocks(text, figures)) != text:
            path.write_text(rendered, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=list(SECTIONS), action="append")
    parser.add_argument("--docs", action="store_true", help="rewrite the blocks of docs/*.md")
    args = parser.parse_args()
    figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    builds = {scenario: build_fingerprint(scenario) for scenario in SCENARIOS}
    measured_on = (f"{platform.machine()} {platform.processor() or 'CPU'}, {os.cpu_count()} "
                   f"cores, load {os.getloadavg()[0]:.1f} at the start, {time.strftime('%Y-%m-%d')}")
    for name in args.only or SECTIONS:
        started = time.perf_counter()
        keep_other_build(figures, name, builds[scenario_of(name)])
        figures[name] = SECTIONS[name].measure() | {"build": builds[scenario_of(name)],
                                                     "measured_on": measured_on}
        print(f"{name}: {json.dumps(figures[name])} ({time.perf_counter() - started:.0f} s)")
    figures["measured_on"] = measured_on
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    if args.docs:   # from the file as written (sorted keys), as tests/docs/test_readme_figures.py reads it
        write_docs(json.loads(FIGURES.read_text()))


if __name__ == "__main__":
    main()

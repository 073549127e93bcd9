"""Sections of ``figures.demo_figures`` for membership inference and exposure on the demo
(``python -m figures.demo_figures --only mia --only exposure``).

``mia``: every attack of the suite and the blind baseline on the demo's member/non-member set
(``demo:membership``: held-in users' training speeches vs the same users' never-trained ones).
``exposure``: the planted secret's exposure among random 16-digit fillers, and the three canary
phrases' (inserted ×60, ×40, ×25): each phrase's last ``PHRASE_WORDS`` words are the secret,
drawn from every word of the public plays, after the phrase's first words as the template, so
the three secrets share one format and one space and their exposures compare.
"""

from __future__ import annotations

import time

from figures.runs import run_preset

PHRASE_WORDS = 5      # the shortest phrase has 6 words: one stays as the template's prompt
PHRASE_FILLERS = 5000


def _mia_row(metrics) -> dict:
    return {"auroc": round(metrics.auroc, 3), "ci": [round(x, 3) for x in metrics.auroc_ci],
            "tpr_1": round(metrics.tpr_at_1pct_fpr, 3), "tpr_5": round(metrics.tpr_at_5pct_fpr, 3)}


def measure_mia() -> dict:
    result = run_preset("mia", "demo")
    return {"members": result.n_members, "non_members": result.n_non_members,
            "attacks": {a.title: _mia_row(a.metrics) for a in result.attacks},
            "blind": _mia_row(result.blind), "warning": result.warning is not None,
            "scoring_seconds": round(result.scoring_seconds, 1),
            "analysis_seconds": round(result.analysis_seconds, 1)}


def markdown_mia(f: dict) -> str:
    rows = sorted(f["attacks"].items(), key=lambda item: -item[1]["auroc"])
    lines = [f"| {name} | {r['auroc']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] | "
             f"{r['tpr_1']:.3f} | {r['tpr_5']:.3f} |" for name, r in rows]
    blind = f["blind"]
    lines.append(f"| *blind baseline (no model)* | {blind['auroc']:.3f} [{blind['ci'][0]:.3f}, "
                 f"{blind['ci'][1]:.3f}] | {blind['tpr_1']:.3f} | {blind['tpr_5']:.3f} |")
    warned = "warns" if f["warning"] else "does not warn"
    return (f"On the demo's document set ({f['members']} members, {f['non_members']} non-members "
            "after ReCaLL's 3 prefix shots; `python -m core mia --preset demo --json`):\n\n"
            "| attack | AUROC [95% CI] | TPR at 1% FPR | TPR at 5% FPR |\n|---|---|---|---|\n"
            + "\n".join(lines) + f"\n\nScoring {f['scoring_seconds']} s, analysis "
            f"{f['analysis_seconds']} s (1,000 bootstrap resamples per attack); the page "
            f"{warned} about the split.\n")


def _phrase_vocabulary(phrases: list[str]) -> str:
    """Every word of the public plays, and the phrases' own words, each once."""
    from core.readers.data import read_texts

    words = [w for text in read_texts("demo:public_train") + phrases for w in text.split()]
    return " ".join(dict.fromkeys(words))


def measure_exposure() -> dict:
    from core.demo import scenario

    manifest = scenario.load_manifest()
    started = time.perf_counter()
    secret = run_preset("exposure", "demo", fillers=2000)
    vocabulary = _phrase_vocabulary([c.phrase for c in manifest.canaries])
    phrases = []
    for canary in manifest.canaries:
        words = canary.phrase.split()
        result = run_preset("exposure", "demo", unit="word", alphabet=vocabulary,
                            template=" ".join(words[:-PHRASE_WORDS]) + " {secret}",
                            secrets=(" ".join(words[-PHRASE_WORDS:]),), fillers=PHRASE_FILLERS)
        phrases.append({"phrase": canary.phrase, "count": canary.count,
                        "bits": round(result.secrets[0].exposure_bits, 1),
                        "method": result.secrets[0].method})
    return {"secret_bits": round(secret.secrets[0].exposure_bits, 1),
            "secret_space_bits": round(secret.space_bits, 1),
            "secret_method": secret.secrets[0].method, "secret_fillers": 2000,
            "phrase_space_bits": round(result.space_bits, 1), "phrases": phrases,
            "seconds": round(time.perf_counter() - started)}


def markdown_exposure(f: dict) -> str:
    phrases = "; ".join(f"×{p['count']} *{p['phrase']}* **{p['bits']:.1f} bits**"
                        for p in f["phrases"])
    return (f"- the planted secret: **{f['secret_bits']:.1f}** of its {f['secret_space_bits']:.1f}"
            f" bits exposed ({f['secret_method']}, {f['secret_fillers']:,} fillers);\n"
            f"- the canary phrases, last {PHRASE_WORDS} words as the secret among "
            f"{PHRASE_FILLERS:,} random word sequences of the public plays (a space of "
            f"{f['phrase_space_bits']:.1f} bits): {phrases};\n"
            f"- {f['seconds']} s in all.\n")

"""Sections of ``figures.demo_figures`` for DP auditing (``--only dp-audit-ngram --only
dp-canary-audit --only dp-canary-kinds``): the canary auditor on the n-gram Monte Carlo (10,000
models, where the accountant's ε is known), measured by the very ``dp-audit --ngram`` command the
DP guide shows, the demo fine-tuned with 1,000 canaries at σ = 0 and σ = 1, and with each canary
kind of Panda et al. (ICLR 2025, ``core.dp.canary_kinds``) at σ = 0, 0.5 and 1."""

from __future__ import annotations

from core.dp.canary_kinds import tightest_kinds
from figures.runs import run_preset

NGRAM_SIGMAS, NGRAM_STEPS, NGRAM_MODELS = (0.5, 1.0, 2.0, 4.0), 3, 10_000
CANARY_SIGMAS = (0.0, 1.0)


def ngram_command(sigma: str, steps: int, models: int) -> list[str]:
    """The words of the DP guide's command for one σ of the n-gram audit."""
    return ["python", "-m", "core", "dp-audit", "--ngram", "--sigma", sigma, "--q", "1",
            "--steps", str(steps), "--models", str(models)]


def measure_ngram() -> dict:
    from core.commands import dispatch

    rows = []
    for sigma in NGRAM_SIGMAS:
        command = ngram_command(f"{sigma:g}", NGRAM_STEPS, NGRAM_MODELS)
        result = dispatch([*command[3:], "--no-record"])
        rows.append({"sigma": sigma, "lower": round(result.epsilon_lower, 2),
                     "method": result.best_method, "upper": round(result.epsilon_upper, 2)})
    return {"steps": NGRAM_STEPS, "models": NGRAM_MODELS, "rows": rows}


def markdown_ngram(f: dict) -> str:
    rows = "\n".join(f"| {r['sigma']:g} | {r['lower']:.2f} ({r['method']}) | {r['upper']:.2f} | "
                     f"{r['upper'] / max(r['lower'], 1e-9):.1f}× |" for r in f["rows"])
    command = " ".join(ngram_command("S", f["steps"], f["models"]))
    return (f"On the n-gram Monte Carlo ({f['models']:,} models, {f['steps']} steps, δ = 1e-5, "
            f"95% for the best of the three bounds, each at 98.3%), `{command}`:\n\n"
            "| σ | audited ε ≥ | accountant ε ≤ | ratio |\n|---|---|---|---|\n"
            f"{rows}\n")


REUSED = " (training reused)"   # the run's model came from an earlier run's checkpoints


def measure_canary_audit() -> dict:
    rows = []
    for sigma in CANARY_SIGMAS:
        result = run_preset("dp-canary-audit", "demo", sigma=sigma)
        rows.append({"sigma": sigma, "lower": round(result.epsilon_lower, 2),
                     "upper": None if result.epsilon_upper is None else
                     round(result.epsilon_upper, 2), "auroc": round(result.auroc, 4),
                     "members": result.members, "seconds": round(result.seconds),
                     "reused": result.training.resumed_from_step == result.config.steps})
    config = result.config
    return {"canaries": config.canaries, "words": config.words, "steps": config.steps,
            "batch_size": config.batch_size, "q": round(result.q, 4), "rows": rows}


def markdown_canary_audit(f: dict) -> str:
    rows = "\n".join(
        f"| {r['sigma']:g} | {r['lower']:.2f} | {'—' if r['upper'] is None else r['upper']} | "
        f"{r['auroc']:.4f} | {r['seconds']} s{REUSED if r.get('reused') else ''} |"
        for r in f["rows"])
    return (f"The demo's base fine-tuned with {f['canaries']:,} canaries (“My canary words are” + "
            f"{f['words']} random words, about half included by the coins), {f['steps']} steps at "
            f"batch {f['batch_size']} (q = {f['q']}), `python -m core dp-canary-audit --preset "
            "demo --sigma S`:\n\n| σ | audited ε ≥ (one run, 95%) | accountant ε | AUROC of the "
            f"scores | time |\n|---|---|---|---|---|\n{rows}\n")


CANARY_KINDS = ("random_words", "new_tokens", "least_likely", "bigram")
KIND_SIGMAS = (0.0, 0.5, 1.0)


def measure_canary_kinds() -> dict:
    """The demo's canary audit for every canary kind at every σ of ``KIND_SIGMAS``."""
    rows = []
    for kind in CANARY_KINDS:
        for sigma in KIND_SIGMAS:
            result = run_preset("dp-canary-audit", "demo", sigma=sigma, kind=kind)
            fdp = result.audit.epsilon_lower_fdp_one_run
            rows.append({
                "kind": kind, "sigma": sigma, "pool": result.vocabulary,
                "prior_bits": round(result.prior_bits, 1), "lower": round(result.epsilon_lower, 2),
                "fdp": None if fdp is None else round(fdp, 2),
                "upper": None if result.epsilon_upper is None else round(result.epsilon_upper, 2),
                "auroc": round(result.auroc, 4), "seconds": round(result.seconds),
                "reused": result.training.resumed_from_step == result.config.steps})
    config = result.config
    return {"canaries": config.canaries, "words": config.words, "steps": config.steps,
            "batch_size": config.batch_size, "least_likely_pool": config.least_likely_pool,
            "q": round(result.q, 4), "rows": rows}


def markdown_canary_kinds(f: dict) -> str:
    def cell(value) -> str:
        return "—" if value is None else f"{value:.2f}"

    rows = "\n".join(
        f"| `{r['kind']}` | {r['sigma']:g} | {r['pool']:,} | {r['prior_bits']:.1f} | "
        f"{r['lower']:.2f} | {cell(r['fdp'])} | {cell(r['upper'])} | {r['auroc']:.4f} | "
        f"{r['seconds']} s{REUSED if r['reused'] else ''} |" for r in f["rows"])
    lower = {(r["kind"], r["sigma"]): r["lower"] for r in f["rows"]}
    best = tightest_kinds(f["rows"])
    tightest = "; ".join(f"σ = {sigma:g}: " + (", ".join(f"`{k}`" for k in kinds) or
                                                "none (every ε̂ is 0)")
                         for sigma, kinds in best.items())
    strongest = (best.get(0.0) or ["random_words"])[0]
    beside = ", ".join(f"σ = {s:g}: {lower[(strongest, s)]:.2f} against random words' "
                       f"{lower[('random_words', s)]:.2f}" for s in (0.0, 0.5))
    return (f"The demo's base fine-tuned with {f['canaries']:,} canaries of each kind (“My canary "
            f"words are” + {f['words']} secret tokens, about half included by the coins), "
            f"{f['steps']} steps at batch {f['batch_size']} (q = {f['q']}), least-likely pool "
            f"{f['least_likely_pool']}, `python -m core dp-canary-audit --preset demo --sigma S "
            "--kind K` (δ = 1e-5, 95%):\n\n"
            "| kind | σ | pool | prior bits | ε̂ one run | f-DP ε̂ (Gaussian) | accountant ε | "
            f"AUROC | time |\n|---|---|---|---|---|---|---|---|---|\n{rows}\n\n"
            "“Training reused”: an earlier run of the same config (same run hash) had trained "
            "the model; the time is the re-scoring. "
            f"Tightest ε̂ (one run): {tightest}. The strongest kind at σ = 0, `{strongest}`, "
            f"beside the random words: {beside}.\n")

"""Section ``nid-audit`` of ``figures.demo_figures``: the natural-identifier audit on a real
fine-tune. The demo holds no natural identifiers, so a git-log-like corpus is written
(``core.dp.nid_formats.identifier_corpus``: commit SHA-1s and request UUIDs among the demo's
public Shakespeare), ``dp-finetune`` fine-tunes ``demo:base`` on it at σ = 0 and σ = 1, each
final model is exported as a folder, and ``nid-audit`` audits it, by its log p alone and
against ``demo:base``."""

from __future__ import annotations

from pathlib import Path

from core.dp.finetune_config import DPFinetuneConfig

SIGMAS = (0.0, 1.0)
COMMITS, STEPS, BATCH, BLOCK = 100, 600, 16, 128
REFERENCES = ("", "demo:base")   # score: log p_target alone, and minus demo:base's
CORPUS_DIR = "nid_demo"   # under the lab home
SCORES = {False: "log p", True: "log p − log p_base"}


def finetune_config(train: Path, validation: Path) -> DPFinetuneConfig:
    """``dp-finetune`` on every record of the corpus (its one canary copy aside), a checkpoint
    at the last step only."""
    return DPFinetuneConfig(
        model="demo:base", corpus=(str(train),), validation=str(validation), sigmas=SIGMAS,
        steps=STEPS, batch_size=BATCH, canary_repeats=1, max_records=2 * COMMITS,
        block_size=BLOCK, track_every=STEPS, checkpoint_every=STEPS, device="cpu")


def measure_nid_audit() -> dict:
    from core import paths
    from core.readers.data import read_texts
    from core.dp import finetune, nid_audit
    from core.dp.nid_formats import identifier_corpus
    from core.jobs import run_now
    from core.runtime import no_progress

    train, validation = identifier_corpus(read_texts("demo:public_train")[:3 * COMMITS],
                                          paths.home() / CORPUS_DIR, commits=COMMITS)
    trained = run_now(finetune.SPEC, finetune_config(train, validation), record=False,
                      progress=no_progress)
    rows = []
    for run in trained.runs:
        dp = {"sigma": run.sigma, "q": trained.q, "steps": STEPS} if run.sigma else {}
        model = str(finetune.exported_model(trained, run.sigma))
        for reference in REFERENCES:
            result = run_now(nid_audit.SPEC, nid_audit.NidAuditConfig(
                model=model, corpus=(str(train),), reference=reference, device="cpu", **dp),
                record=False, progress=no_progress)
            rows.append({"sigma": run.sigma, "reference": reference,
                         "lower": round(result.epsilon_lower, 2),
                         "upper": None if result.epsilon_upper is None else
                         round(result.epsilon_upper, 2), "auroc": round(result.auroc, 3),
                         "tpr_1": round(result.tpr_at_1pct_fpr, 3),
                         "fdp": round(result.audit.epsilon_lower_fdp_one_run, 2),
                         "training_seconds": round(run.seconds),
                         "audit_seconds": round(result.seconds),
                         "perplexity": round(run.validation_perplexity, 1)})
    return {"commits": COMMITS, "found": result.found, "members": result.members,
            "records": trained.n_records, "q": round(trained.q, 4), "steps": STEPS,
            "batch_size": BATCH, "block_size": BLOCK, "rows": rows}


def markdown_nid_audit(f: dict) -> str:
    rows = "\n".join(
        f"| {r['sigma']:g} | {SCORES[bool(r['reference'])]} | {r['lower']:.2f} | {r['fdp']:.2f} | "
        f"{'—' if r['upper'] is None else r['upper']} | {r['auroc']:.3f} | {r['tpr_1']:.2f} | "
        f"{r['perplexity']} | {r['training_seconds']} s + {r['audit_seconds']} s |"
        for r in f["rows"])
    found = ", ".join(f"{n:,} {name}" for name, n in f["found"].items() if n)
    return (f"`demo:base` fine-tuned with `dp-finetune` on a corpus of {f['commits']} git-log "
            f"records among as many Shakespeare texts ({f['records']:,} records with the one "
            f"canary copy, {f['steps']} steps at batch {f['batch_size']}, q = {f['q']}, blocks of "
            f"{f['block_size']} tokens), then audited with `nid-audit`, without and with "
            f"`--reference demo:base`: {found} identifiers, {f['members']:,} members beside as "
            "many fresh strings (δ = 1e-5, 95%):\n\n"
            "| σ | score | audited ε ≥ (one run) | Gaussian-DP ε ≥ (f-DP) | accountant ε | "
            "AUROC | TPR at 1% FPR | validation perplexity | training + audit |\n"
            f"|---|---|---|---|---|---|---|---|---|\n{rows}\n")

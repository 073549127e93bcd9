"""The user-level DP figures of ``docs/user-level-dp.md``: ``user-level-dp-compare`` on the demo
(example- against user-level DP at ε = 8, user inference against each model)."""

from __future__ import annotations

import time

GROUPS = ("real", "canary", "all")


def measure_user_level_dp() -> dict:
    """One run of the command with its defaults (trained models are reused from their
    checkpoints, so a second measure only re-attacks): every model's σ, q, ε, perplexity and
    user-inference AUROC with its interval, per group of users."""
    from core.demo.user_level_dp import SPEC, UserLevelCompareConfig
    from core.jobs import run_now
    from core.runtime import no_progress

    config = UserLevelCompareConfig()
    started = time.perf_counter()
    result = run_now(SPEC, config, record=False, progress=no_progress)
    arms = [{"label": arm.label, "unit": arm.unit, "sigma": arm.sigma, "q": arm.q,
             "epsilon": arm.epsilon, "perplexity": arm.validation_perplexity,
             "groups": {g.group: {"n_in": g.n_in, "n_out": g.n_out, "auroc": g.auroc,
                                  "ci": g.auroc_ci} for g in arm.groups}}
            for arm in result.arms]
    return {"epsilon": config.epsilon, "steps": config.steps, "n_records": result.n_records,
            "n_users": result.n_users, "arms": arms,
            "seconds": round(time.perf_counter() - started)}


def _auroc(group: dict) -> str:
    ci = group["ci"]
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return f"{group['auroc']:.3f}{interval}"


def _row(arm: dict) -> str:
    epsilon = "—" if arm["epsilon"] is None else f"{arm['epsilon']:.3f}"
    perplexity = "—" if arm["perplexity"] is None else f"{arm['perplexity']:.1f}"
    over = {"example": " (records)", "user": " (users)"}.get(arm["unit"], "")
    groups = " | ".join(_auroc(arm["groups"][name]) for name in GROUPS)
    return (f"| {arm['label']} | {arm['sigma']:.3g} | {arm['q']:.3g}{over} | {epsilon} | "
            f"{perplexity} | {groups} |")


def markdown_user_level_dp(f: dict) -> str:
    groups = f["arms"][0]["groups"]
    counts = " | ".join(f"{name} users AUROC [95% CI] ({groups[name]['n_in']} in / "
                        f"{groups[name]['n_out']} out)" for name in GROUPS)
    header = (f"| model | σ | q | ε (Opacus RDP) | val. ppl | {counts} |\n"
              f"|---|---|---|---|---|---|---|---|\n")
    return (f"`python -m core user-level-dp-compare --epsilon {f['epsilon']:g} --steps "
            f"{f['steps']} --json` ({f['n_records']:,} training records of {f['n_users']} "
            f"users; {f['seconds']} s in all, trained models reused from their checkpoints "
            f"when they exist):\n\n" + header + "\n".join(map(_row, f["arms"])) + "\n")

"""User inference on the demo: users scored per minute, batched engine vs one text per forward,
and the analysis (bootstrap intervals, Figure 5 curve) against the scoring it analyses.

The scoring ratio compares like with like: T̂ from ``core.attacks.user_inference.spec.run`` with no
bootstrap and no Figure 5 curve, against the same T̂ from one forward pass per text (the scoring
engine at batch size 1, so long texts are windowed the same way), as per-sample attack loops do.
The analysis of those T̂ (each group's metrics with 1000 bootstrap resamples, the curve with 100
draws per m) is timed as the attack runs it and as it ran before (``bench_membership_eval``'s
baselines: one scikit-learn ROC per resample, one AUROC per draw). The whole attack is timed too.
Every run starts from an empty score cache; the T̂ are checked equal. Uses the installed demo
(``python -m core demo build``), else builds the tiny one.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from bench.bench_membership_eval import old_interval, old_knowledge_curve
from core import paths
from core.attacks.user_inference import spec as ui
from core.attacks.user_inference.samples import group_by_user, load_samples
from core.demo import scenario
from core.errors import UserError
from core.evaluation import membership as me
from core.models import resolve_model
from core.scoring import clear_cache, score_texts


def demo_config() -> ui.UserInferenceConfig:
    try:
        root = scenario.load_manifest().root
        print("demo: the installed full demo")
    except UserError:
        root = paths.home() / "user-inference" / "bench-tiny-demo"
        scenario.build(scenario.tiny_config(), root=root)
        print("demo: not built, using the tiny demo")
    return ui.UserInferenceConfig(model=str(scenario.model_dir("updated", root)),
                                  reference=str(scenario.model_dir("base", root)),
                                  data=str(scenario.data_file("user_samples", root)))


def one_at_a_time(config: ui.UserInferenceConfig) -> dict[str, float]:
    """The baseline: T̂ from one forward per text and model."""
    target, reference = resolve_model(config.model), resolve_model(config.reference)
    ratios = {}
    for user, samples in group_by_user(load_samples(config.data)).items():
        ratios[user] = np.array([score_texts(target, [s.text], batch_size=1)[0].total_logprob
                                 - score_texts(reference, [s.text], batch_size=1)[0].total_logprob
                                 for s in samples])
    return ui.user_statistic(ratios)


def _timed(run):
    clear_cache()
    start = time.perf_counter()
    out = run()
    return out, time.perf_counter() - start


IN_GROUP = {"all": lambda row: True, "real": lambda row: row.canary is False,
            "canary": lambda row: row.canary is True}   # the groups user inference evaluates


def analysis_seconds(result: ui.UserInferenceResult, config: ui.UserInferenceConfig, *,
                     old: bool) -> tuple[float, float]:
    """Seconds of the bootstrap (every group of ``result.metrics``) and of the Figure 5 curve,
    the attack's way or (``old``) the previous one, on the T̂ and log-ratios of ``result``."""
    ratios = {r.user_id: [] for r in result.rows}
    for sample in result.samples:
        ratios[sample.user_id].append(sample.log_ratio)
    members = {r.user_id: r.member for r in result.rows}
    groups = [[(r.member, r.t_hat) for r in result.rows if IN_GROUP[m.group](r)]
              for m in result.metrics]
    options = dict(resamples=config.bootstrap, seed=config.seed)
    start = time.perf_counter()
    for chosen in groups:
        labels, scores = zip(*chosen)
        if old:
            me.evaluate(labels, scores, bootstrap=0)
            old_interval(labels, scores, **options)
        else:
            me.evaluate(labels, scores, bootstrap=config.bootstrap, seed=config.seed)
    middle = time.perf_counter()
    curve = old_knowledge_curve if old else me.knowledge_curve
    curve(ratios, members, draws=config.knowledge_draws, seed=config.seed)
    return middle - start, time.perf_counter() - middle


def main() -> None:
    config = demo_config()
    statistic_only = dataclasses.replace(config, bootstrap=0, knowledge_draws=0)
    _timed(lambda: ui.run(statistic_only))  # loading and the first forward passes are not timed
    fast, ours_s = _timed(lambda: ui.run(statistic_only))
    baseline, base_s = _timed(lambda: one_at_a_time(config))
    result, whole_s = _timed(lambda: ui.run(config))
    worst = max(abs(r.t_hat - baseline[r.user_id]) for r in fast.rows)
    n = result.n_users
    print(f"{n} users, {result.n_samples} samples, device {result.device}; "
          f"max |T̂ ours - T̂ baseline| = {worst:.2e}")
    print(f"ours (batched, T̂ only):                 {ours_s:.1f} s  {60 * n / ours_s:,.0f} users/min")
    print(f"baseline (one text per forward, T̂ only): {base_s:.1f} s  {60 * n / base_s:,.0f} users/min")
    print(f"ratio: {base_s / ours_s:.2f}x")
    print(f"whole attack (1000 bootstrap resamples, Figure 5 curve): {whole_s:.1f} s  "
          f"{60 * n / whole_s:,.0f} users/min")
    new, old = analysis_seconds(fast, config, old=False), analysis_seconds(fast, config, old=True)
    for name, (boot, curve) in (("ours", new), ("before (sklearn per resample/draw)", old)):
        print(f"analysis, {name}: bootstrap {boot:.3f} s + curve {curve:.3f} s = "
              f"{boot + curve:.3f} s, {(boot + curve) / ours_s:.3f}x the scoring ({ours_s:.1f} s)")
    print(f"ratio before/ours: bootstrap {old[0] / new[0]:.1f}x, curve {old[1] / new[1]:.1f}x, "
          f"analysis {sum(old) / sum(new):.1f}x")
    for m in result.metrics:
        print(f"AUROC {m.group}: {m.auroc:.3f} (95% CI {m.auroc_ci[0]:.3f}-{m.auroc_ci[1]:.3f}), "
              f"TPR@1%FPR {m.tpr_at_1pct_fpr:.3f}, TPR@5%FPR {m.tpr_at_5pct_fpr:.3f} "
              f"({m.n_in} in / {m.n_out} out)")


if __name__ == "__main__":
    main()

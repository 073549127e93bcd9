"""Scale-out on a local Ray with 2 workers vs in process: the same results, and the overhead.

Runs user inference and extraction (its scoring is what goes to the workers; generation stays in
process) on the demo, first in process, then with ``core.scaleout.using(ScaleOut("auto", 2))``
against a local Ray started here, each with a cold score cache; checks the results are the same
(per-user T̂ and the AUROC; the extraction's ranked candidates and their scores) and prints the
wall times, the second Ray run's (warm workers: models loaded, score caches emptied) and the
overhead. On one 2-core
machine Ray cannot be faster than the in-process engine, which already uses both cores: the
figure to read is the overhead of sharding, shipping and merging.
    .venv/bin/python -m bench.bench_ray [--samples 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from core import scaleout
from core.attacks.extraction import spec as extraction
from core.attacks.user_inference import spec as user_inference
from core.scaleout.ray_scoring import forget_scores
from core.scoring import clear_cache
from core.sources import preset


def _timed(spec, config, settings):
    clear_cache()
    forget_scores()   # the workers' own caches too: every run scores
    started = time.perf_counter()
    with scaleout.using(settings):
        result = spec.run(config)
    return result, time.perf_counter() - started


def _same(spec, a, b) -> str:
    """How far apart the two results are, in words."""
    if spec is user_inference.SPEC:
        gap = max(abs(x.t_hat - y.t_hat) for x, y in zip(a.rows, b.rows))
        same = [r.user_id for r in a.rows] == [r.user_id for r in b.rows] and a.auroc == b.auroc
        return f"same ranking and AUROC: {same}; largest T̂ gap {gap:.1e}"
    texts = [c.text for c in a.candidates] == [c.text for c in b.candidates]
    gap = max((abs(x.scores[k] - y.scores[k]) for x, y in zip(a.candidates, b.candidates)
               for k in x.scores), default=0.0)
    return f"same candidates in the same order: {texts}; largest score gap {gap:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="extraction samples")
    args = parser.parse_args()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    settings = scaleout.ScaleOut("auto", workers=2)
    jobs = [(user_inference.SPEC, user_inference.UserInferenceConfig(**preset("user-inference", "demo"))),
            (extraction.SPEC, extraction.ExtractionConfig(**preset("extraction", "demo") | {
                "n_samples": args.samples, "strategies": ("top-n",)}))]
    for spec, config in jobs:
        _timed(spec, config, None)   # loads the models: both timings below start with them loaded
        here, t_here = _timed(spec, config, None)
        there, t_cold = _timed(spec, config, settings)
        again, t_warm = _timed(spec, config, settings)
        print(f"{spec.name}: in process {t_here:.1f} s; Ray 2 workers {t_cold:.1f} s cold (the "
              f"workers load the models), "
              f"{t_warm:.1f} s warm (overhead {t_warm - t_here:+.1f} s, "
              f"{t_warm / t_here:.2f}x); {_same(spec, here, there)}; warm run "
              f"{'identical' if _same(spec, there, again) == _same(spec, there, there) else 'differs'}")
    ray.shutdown()


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()

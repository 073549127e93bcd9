"""Benchmark: 10,000 DP-SGD n-gram canary models, batched vs one Opacus model at a time.

Our time: ``train_models`` on all N models as one (T, D, N) tensor computation (the default
experiment: σ = 2.875, 10 steps, T = D = 10). Baseline: the same training with Opacus'
PrivacyEngine, one model at a time, timed on a few models and extrapolated to N.
Run: ``.venv/bin/python -m bench.bench_ngram [--models N] [--steps K] [--opacus-models M]``.
"""

from __future__ import annotations

import argparse
import time

import torch


from core.dp.ngram_canary import NgramCanaryConfig, draw_canary, train_models
from core.dp.opacus_reference import opacus_log_prob


def main() -> None:
    defaults = NgramCanaryConfig()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=defaults.models)
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--sigma", type=float, default=2.875)
    parser.add_argument("--opacus-models", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    canary = draw_canary(digits=defaults.digits, symbols=defaults.symbols, seed=0)
    device = torch.device(args.device)
    lr = defaults.lr_scale / args.sigma

    def batched() -> None:
        train_models(canary=canary, symbols=defaults.symbols, sigma=args.sigma, steps=args.steps,
                     models=args.models, clip=defaults.clip, lr=lr, seed=0, device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()

    batched()  # warm-up
    tic = time.perf_counter()
    batched()
    ours = time.perf_counter() - tic

    opacus_log_prob(canary, symbols=defaults.symbols, sigma=args.sigma, clip=defaults.clip,
                    steps=args.steps, lr=lr, seed=0)  # warm-up
    tic = time.perf_counter()
    for seed in range(args.opacus_models):
        opacus_log_prob(canary, symbols=defaults.symbols, sigma=args.sigma, clip=defaults.clip,
                        steps=args.steps, lr=lr, seed=seed)
    per_model = (time.perf_counter() - tic) / args.opacus_models
    baseline = per_model * args.models

    print(f"{args.models:,} models × {args.steps} steps (σ = {args.sigma}, T = D = 10), "
          f"torch threads {torch.get_num_threads()}, device {device}")
    print(f"batched trainer:        {ours:8.2f} s")
    print(f"Opacus, one at a time:  {baseline:8.2f} s  (extrapolated: {per_model * 1e3:.1f} ms "
          f"per model over {args.opacus_models} models)")
    print(f"speed-up:               {baseline / ours:8.1f}x")


if __name__ == "__main__":
    main()

"""``bench.gpu``'s DP sections: the n-gram canary Monte Carlo and DP fine-tuning steps.

- The n-gram Monte Carlo (``core.dp.ngram_canary``) is torch: N DP-SGD-trained models as one
  (T, D, N) tensor. Its spec runs on the device and on the CPU; figure: model-steps/s (models
  × steps × σ over the training time). The two runs draw their noise from different generators
  (a CUDA generator's stream is not the CPU's), so on a GPU the check is statistical: the same
  bounds at every σ, and mean log f within ``NGRAM_Z`` standard errors; on the CPU both runs
  are the same computation and must agree exactly.
- DP fine-tuning: the spec's own training step (``SigmaTraining.train_batch``: Opacus DP-SGD
  with ghost clipping and Poisson batches, AdamW, a float32 trainable copy, frozen input
  embeddings) at σ = 1 against the same steps at σ = 0 (no clipping, no noise); steps/s.
  Checked: every loss finite, and Opacus' accountant gives a finite ε > 0. The same steps in
  bf16 mixed precision (``precision="bf16-mixed"``: autocast forward and backward, float32
  weights, clipping, noise and optimizer), against float32 DP steps; checked: the same ε, and
  its σ = 0 losses within ``MIXED_FIRST`` (untrained) and ``MIXED_LAST`` (last step) of float32
  on the CPU from the same weights and batches (the noise streams of two devices differ, so
  σ = 0 is where the two can be compared).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch

from bench.gpu_common import Bench, Row, as_text, build, random_texts, synchronize
from core.dp import ngram_canary as ngram
from core.dp.finetune import DPFinetuneConfig, SigmaTraining, TrainingContext
from core.dp.finetune_data import prepare
from core.models import LoadedModel
from core.scoring.threads import is_small_on_cpu, one_thread

NGRAM_Z = 5.0             # standard errors two Monte Carlo means may differ by
DP_SIGMA, DP_DELTA = 1.0, 1e-5
DP_RECORDS = 256          # corpus texts, each one record of a full block
MIXED_FIRST, MIXED_LAST = 0.01, 0.05   # bf16-mixed vs float32 losses: untrained, last step


def ngram_monte_carlo(bench: Bench) -> list[Row]:
    """Model-steps/s of the Monte Carlo on the device and on the CPU, and their agreement."""
    config = ngram.NgramCanaryConfig(models=bench.sizes.ngram_models, device=bench.device.type,
                                     bootstrap=bench.sizes.ngram_bootstrap)
    ngram.run(dataclasses.replace(config, models=100, sigmas=(1.0,), bootstrap=10))  # warm-up
    ours = ngram.run(config)
    cpu = ngram.run(dataclasses.replace(config, device="cpu"))
    row = Row("n-gram Monte Carlo", str(bench.device), _model_steps_per_second(ours),
              "model-steps/s", baseline=_model_steps_per_second(cpu),
              baseline_name="the same on the CPU",
              extra={"models": config.models, "steps": config.steps, "sigmas": list(config.sigmas),
                     "seconds": ours.seconds, "cpu_seconds": cpu.seconds})
    row.check("the same bounds at every σ", all(
        (a.bound_leakage_bits, a.traditional_leakage_bits, a.optimal_leakage_bits)
        == (b.bound_leakage_bits, b.traditional_leakage_bits, b.optimal_leakage_bits)
        for a, b in zip(ours.points, cpu.points)), f"{len(ours.points)} σ")
    if bench.on_gpu:
        z = max(abs(a.mean_log2_f - b.mean_log2_f)
                / math.sqrt((a.std_log2_f ** 2 + b.std_log2_f ** 2) / config.models)
                for a, b in zip(ours.points, cpu.points))
        row.check(f"mean log f within {NGRAM_Z:g} standard errors", z <= NGRAM_Z,
                  f"largest |z| {z:.2f} over {len(ours.points)} σ (different noise streams)")
    else:
        same = all(a.log2_p1 == b.log2_p1 and a.mean_log2_f == b.mean_log2_f
                   for a, b in zip(ours.points, cpu.points))
        row.check("the same estimates on the same device", same, f"{len(ours.points)} σ")
    return [row]


def _model_steps_per_second(result: ngram.NgramCanaryResult) -> float:
    config = result.config
    return (config.models * config.steps * len(result.points)
            / sum(p.train_seconds for p in result.points))


def _training(bench: Bench, lm, sigma: float, corpus: Path, precision: str = "float32",
              device: torch.device | None = None) -> SigmaTraining:
    """The spec's training state at ``sigma`` on the texts of ``corpus``."""
    sizes = bench.sizes
    config = DPFinetuneConfig(model=lm.name, corpus=(str(corpus),), sigmas=(sigma,),
                              steps=sizes.dp_steps, batch_size=sizes.dp_batch,
                              block_size=sizes.dp_block, canary_repeats=sizes.dp_batch,
                              device=(device or bench.device).type, delta=DP_DELTA,
                              precision=precision)
    data, _ = prepare(config, lm.tokenizer)
    q = 1.0 / math.ceil(len(data.inputs) / config.batch_size)
    run_dir = bench.workdir / f"dp-sigma-{sigma:g}-{precision}-{lm.device.type}"
    context = TrainingContext(config, lm, data, q, run_dir, report=lambda *a: None, cancel=None)
    return SigmaTraining(sigma, context)


def _steps(training: SigmaTraining, steps: int, device: torch.device) -> tuple[float, list[float]]:
    """Seconds of ``steps`` optimizer steps after one untimed warm-up step, and the losses of
    all ``steps + 1`` (the first one's is the untrained model's)."""
    batches = iter(())
    losses, seconds = [], 0.0
    for step in range(steps + 1):
        indices = next(batches, None)
        if indices is None:  # a pass of Poisson batches is done: the next one
            batches = iter(training.training.batches)
            indices = next(batches)
        synchronize(device)
        start = time.perf_counter()
        loss = training.train_batch(indices)
        synchronize(device)
        if step:  # the first step builds Opacus' hooks and the kernels: not timed
            seconds += time.perf_counter() - start
        losses += [] if loss is None else [loss]
    return seconds, losses


def _trained(bench: Bench, lm, corpus: Path, runs: dict) -> dict:
    """(seconds, losses, training) of each (σ, precision, device) in ``runs`` for ``lm``."""
    results = {}
    for sigma, precision in runs:
        training = _training(bench, lm, sigma, corpus, precision, lm.device)
        results[sigma, precision] = (*_steps(training, bench.sizes.dp_steps, lm.device), training)
    return results


def dp_finetune(bench: Bench) -> list[Row]:
    """DP-SGD steps/s at σ = 1 against the same non-private steps (σ = 0), in float32 and in
    bf16 mixed precision; the mixed run's losses against float32 on the CPU."""
    sizes, device = bench.sizes, bench.device
    cpu_lm = build(sizes.small, torch.device("cpu"), bench.dtype)   # the same weights on both
    lm = LoadedModel.in_memory(cpu_lm.name, copy.deepcopy(cpu_lm.model).to(device), cpu_lm.tokenizer)
    corpus = bench.workdir / "dp-corpus.txt"  # random texts of a full block each
    texts = random_texts(lm.card.vocab_size, DP_RECORDS, sizes.dp_block, seed=3)
    corpus.write_text("\n".join(as_text(t) for t in texts), encoding="utf-8")
    with one_thread(is_small_on_cpu(lm.model)):  # as the spec trains a small model on the CPU
        ours = _trained(bench, lm, corpus, [(DP_SIGMA, "float32"), (0.0, "float32"),
                                            (DP_SIGMA, "bf16-mixed"), (0.0, "bf16-mixed")])
        cpu = _trained(bench, cpu_lm, corpus, [(0.0, "float32")])
    return [_float32_row(bench, ours), _mixed_row(bench, ours, cpu[0.0, "float32"][1])]


def _float32_row(bench: Bench, ours: dict) -> Row:
    sizes = bench.sizes
    (dp_s, dp_losses, private), (plain_s, plain_losses, _) = (ours[DP_SIGMA, "float32"],
                                                              ours[0.0, "float32"])
    epsilon = private.training.epsilon(DP_DELTA)
    row = Row(f"DP fine-tuning {sizes.small}", str(bench.device), sizes.dp_steps / dp_s, "steps/s",
              baseline=sizes.dp_steps / plain_s, baseline_name="the same steps without DP",
              extra={"sigma": DP_SIGMA, "batch_size": sizes.dp_batch, "block_size": sizes.dp_block,
                     "steps": sizes.dp_steps, "epsilon": epsilon, "losses": dp_losses,
                     "grad_sample_mode": "ghost"})
    _check_finite(row, dp_losses, plain_losses)
    row.check("Opacus' accountant gives a finite ε > 0", epsilon is not None
              and 0 < epsilon < math.inf, f"ε = {epsilon or math.nan:.3g} at δ = {DP_DELTA:g}")
    return row


def _mixed_row(bench: Bench, ours: dict, cpu_losses: list[float]) -> Row:
    """bf16-mixed DP-SGD against float32 DP-SGD; its σ = 0 losses against float32 on the CPU."""
    sizes = bench.sizes
    mixed_s, mixed_losses, mixed = ours[DP_SIGMA, "bf16-mixed"]
    float32_s, _, float32 = ours[DP_SIGMA, "float32"]
    plain_losses = ours[0.0, "bf16-mixed"][1]
    row = Row(f"DP fine-tuning {sizes.small} bf16-mixed", str(bench.device),
              sizes.dp_steps / mixed_s, "steps/s", baseline=sizes.dp_steps / float32_s,
              baseline_name="the same DP steps in float32",
              extra={"sigma": DP_SIGMA, "losses": mixed_losses, "plain_losses": plain_losses,
                     "cpu_float32_losses": cpu_losses})
    _check_finite(row, mixed_losses, plain_losses)
    same = mixed.training.epsilon(DP_DELTA) == float32.training.epsilon(DP_DELTA)
    row.check("the same ε as float32", same, "the accountant sees σ, q and the steps only")
    first = abs(plain_losses[0] - cpu_losses[0]) / cpu_losses[0]
    last = abs(plain_losses[-1] - cpu_losses[-1]) / cpu_losses[-1]
    row.check("σ = 0 losses track float32 on the CPU", first <= MIXED_FIRST and last <= MIXED_LAST,
              f"first step {first:.2%} apart (≤ {MIXED_FIRST:.0%}), step {len(cpu_losses)} "
              f"{last:.2%} (≤ {MIXED_LAST:.0%}): {plain_losses[-1]:.4f} vs {cpu_losses[-1]:.4f}")
    return row


def _check_finite(row: Row, dp_losses: list[float], plain_losses: list[float]) -> None:
    finite = bool(dp_losses) and bool(plain_losses) and all(np.isfinite(dp_losses + plain_losses))
    row.check("every loss finite", finite, f"σ = {DP_SIGMA:g}: {dp_losses[0]:.3f} → "
              f"{dp_losses[-1]:.3f}; σ = 0: {plain_losses[0]:.3f} → {plain_losses[-1]:.3f}"
              if finite else f"{dp_losses} / {plain_losses}")

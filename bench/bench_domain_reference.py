"""The domain reference's CPU default (issue #32: at most 5 minutes for SmolLM2 on 2 cores).

Trains the reference as an attack's ``--domain-sample`` does with its steps left at 0 (auto: the
CPU's ``CPU_DOMAIN_STEPS``), forced so that no cached reference answers, on a realistic
scenario's public sample; then, as the baseline in the same process, the reference with the GPU
default's steps would take ``DOMAIN_STEPS`` steps at the pace just measured. Prints the wall
time, the held-out loss it reached, and the ratio against the full default. Run from the
repository root after ``python -m core technical-build`` (or ``realistic-build``):
``python -m bench.bench_domain_reference [realistic|technical]``.
"""

from __future__ import annotations

import sys
import time

import torch

from core import sources
from core.calibration import reference as spec
from core.calibration.config import CPU_DOMAIN_STEPS, DOMAIN_STEPS

TARGET_S = 300.0


def main(scenario: str = "technical") -> None:
    sample = str(sources.data_path(f"{scenario}:public_sample"))
    config = spec.DomainReferenceConfig(base="smollm2", sample=sample, device="cpu", force=True)
    assert config.steps == CPU_DOMAIN_STEPS
    started = time.perf_counter()
    result = spec.run(config)
    seconds = time.perf_counter() - started
    per_step = seconds / max(1, result.steps_run)
    full = per_step * DOMAIN_STEPS
    print(f"{scenario}: SmolLM2-135M, {result.steps_run} steps "
          f"({'LoRA' if result.lora else 'all weights'}), {torch.get_num_threads()} threads")
    print(f"  CPU default: {seconds:.0f} s in all ({per_step:.1f} s/step with held-out passes), "
          f"held-out loss {result.heldout_loss_base:.3f} -> "
          f"{result.heldout_loss_reference:.3f} nats/token (best step {result.best_step})")
    print(f"  the GPU default's {DOMAIN_STEPS} steps at this pace: {full / 60:.0f} min; "
          f"ratio full / CPU default {full / seconds:.1f}x")
    print(f"  target <= {TARGET_S:.0f} s: {'met' if seconds <= TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main(*sys.argv[1:2])

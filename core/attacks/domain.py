"""Domain calibration: separate "the model learnt this domain" from "the model memorised this
record" in the attacks that compare a fine-tuned model θ with its base θ0.

A fine-tune is a domain shift, so log p_θ(x) − log p_θ0(x) is largest for the texts that are
mostly the domain's boilerplate, and a memorised record drowns. Given a sample of *public*
in-domain text (the same kind of text, not the training set), θ_D, the base briefly fine-tuned
on the sample (``core.attacks.domain_reference``, a cached job), replaces θ0: every statistic of
the attacks then compares θ with a model that learnt the domain but not the record. It is the
calibration that separated the record best on a synthetic case with a known answer
(``bench/domain_calibration.py``).

Attacks take the sample as a config field ``domain_sample = domain_sample_param()`` (CLI
``--domain-sample``) with ``domain_steps = domain_steps_param()``, call ``calibrate_run`` (the
reference's training on the first part of the progress bar) before loading their models, and
put the returned ``DomainCalibration`` in their result, so the report says which calibration
was used.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from core.data import FORMATS_HELP
from core.runtime import Progress, no_progress, share
from core.specs import param

CALIBRATIONS = ("none", "domain-reference")
DOMAIN_SAMPLE_HELP = ("public text of the fine-tune's domain (the same kind of text, not its "
                      "training set): the reference model is then the base briefly fine-tuned "
                      f"on it, so what the whole domain taught cancels out; {FORMATS_HELP}")
DOMAIN_STEPS, MAX_DOMAIN_STEPS = 200, 100_000   # a domain reference's steps: on a GPU, most
# Steps when none are given (0) and the reference trains on a CPU: SmolLM2-135M, all weights,
# batch 8 x 256 tokens, takes 12-15 s a step on 2 cores, so about 3-4 min with its held-out
# passes; on the realistic scenario 10 such steps already bring the held-out loss from 5.10
# to 4.35 nats/token and put the secret's prefix #2 in differential rank (README, "Real
# fine-tunes").
CPU_DOMAIN_STEPS = 12
AUTO_STEPS_HELP = (f"0: sized for the device, {CPU_DOMAIN_STEPS} on a CPU (minutes for a "
                   f"135M model), {DOMAIN_STEPS} on a GPU")
CALIBRATION_SHARE = 0.3   # of an attack's progress bar, for training its domain reference


@dataclass
class DomainCalibration:
    """Which calibration an attack used, for its report: the method (one of ``CALIBRATIONS``),
    the sample, the model used as reference, and one line saying so."""

    method: str = "none"
    sample: str = ""
    reference: str = ""
    summary: str = "no domain calibration: the reference is the model given"


def domain_reference(base: str, sample: str, *, progress: Progress = no_progress,
                     cancel: threading.Event | None = None, **settings) -> str:
    """The source (a folder) of the domain reference of ``base`` for the public ``sample``:
    trained as ``core.attacks.domain_reference`` does, or returned at once from its cache.
    ``settings`` are other fields of ``DomainReferenceConfig`` (steps, weights, device...)."""
    return calibrate_reference(base, sample, progress=progress, cancel=cancel,
                               **settings)[0]


def calibrate_reference(reference: str, domain_sample: str, *, progress: Progress = no_progress,
                        cancel: threading.Event | None = None,
                        **settings) -> tuple[str, DomainCalibration]:
    """``(model source to compare with, DomainCalibration)``: with no ``domain_sample``, the
    ``reference`` itself; else its domain reference (trained or cached)."""
    if not domain_sample.strip():
        return reference, DomainCalibration(reference=reference)
    from core.attacks import domain_reference as spec  # torch and transformers: only when used

    result = spec.run(spec.DomainReferenceConfig(base=reference, sample=domain_sample,
                                                 **settings), progress=progress, cancel=cancel)
    how = "LoRA" if result.lora else "all weights"
    summary = (f"domain reference: {reference} fine-tuned on {result.sample_texts} public "
               f"in-domain texts ({how}, step {result.best_step}; held-out loss "
               f"{result.heldout_loss_base:.3f} -> {result.heldout_loss_reference:.3f} "
               "nats/token)")
    return result.folder, DomainCalibration("domain-reference", domain_sample, result.folder,
                                            summary)


def domain_sample_param() -> str:
    """A config field: the public in-domain sample (empty: no domain calibration)."""
    return param("", path="data", label="public in-domain sample", help=DOMAIN_SAMPLE_HELP)


def domain_steps_param() -> int:
    """A config field: the most optimizer steps of the domain reference's fine-tuning."""
    return param(0, ge=0, le=MAX_DOMAIN_STEPS, label="domain reference steps",
                 help="most optimizer steps of the base's fine-tuning on the public in-domain "
                      "sample (the weights of lowest held-out loss are kept); unused without one; "
                      + AUTO_STEPS_HELP)


def calibrate_run(reference: str, domain_sample: str, *, steps: int, progress: Progress,
                  cancel: threading.Event | None, device: str = "auto",
                  ) -> tuple[str, DomainCalibration, Progress]:
    """``calibrate_reference`` at the start of an attack's run: ``(model source to compare with,
    DomainCalibration, the progress of the rest of the run)``. Training the domain reference
    takes the first ``CALIBRATION_SHARE`` of the progress bar, the attack the rest."""
    if not domain_sample.strip():
        return (*calibrate_reference(reference, domain_sample), progress)
    source, calibration = calibrate_reference(
        reference, domain_sample, progress=share(progress, 0, CALIBRATION_SHARE,
                                                 "domain calibration: "),
        cancel=cancel, steps=steps, device=device)
    return source, calibration, share(progress, CALIBRATION_SHARE, 1)


def describe_calibration(domain_sample: str) -> str:
    """The end of a run's title: ", domain-calibrated on NAME" ("" without a sample)."""
    return f", domain-calibrated on {Path(domain_sample).name}" if domain_sample.strip() else ""

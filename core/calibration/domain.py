"""Domain calibration: separate "the model learnt this domain" from "the model memorised this
record" in the attacks that compare a fine-tuned model θ with its base θ0.

A fine-tune is a domain shift, so log p_θ(x) − log p_θ0(x) is largest for the texts that are
mostly the domain's boilerplate, and a memorised record drowns. Given a sample of *public*
in-domain text (the same kind of text, not the training set), θ_D, the base briefly fine-tuned
on the sample (``core.calibration.reference``, a cached job), replaces θ0: every statistic of
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
from pathlib import Path

from core.calibration.config import DomainCalibration
from core.runtime import Progress, no_progress, share

CALIBRATION_SHARE = 0.3   # of an attack's progress bar, for training its domain reference


def domain_reference(base: str, sample: str, *, progress: Progress = no_progress,
                     cancel: threading.Event | None = None, **settings) -> str:
    """The source (a folder) of the domain reference of ``base`` for the public ``sample``:
    trained as ``core.calibration.reference`` does, or returned at once from its cache.
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
    from core.calibration import reference as spec  # torch and transformers: only when used

    result = spec.run(spec.DomainReferenceConfig(base=reference, sample=domain_sample,
                                                 **settings), progress=progress, cancel=cancel)
    how = "LoRA" if result.lora else "all weights"
    summary = (f"domain reference: {reference} fine-tuned on {result.sample_texts} public "
               f"in-domain texts ({how}, step {result.best_step}; held-out loss "
               f"{result.heldout_loss_base:.3f} -> {result.heldout_loss_reference:.3f} "
               "nats/token)")
    return result.folder, DomainCalibration("domain-reference", domain_sample, result.folder,
                                            summary)


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

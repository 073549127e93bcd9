"""The config side of domain calibration: the two fields an attack adds for it, the steps'
defaults and ``DomainCalibration``, the record of which calibration a run used."""

from __future__ import annotations

from dataclasses import dataclass

from core.readers.data import FORMATS_HELP
from core.specs import param

CALIBRATIONS = ("none", "domain-reference")
DOMAIN_SAMPLE_HELP = ("public text of the fine-tune's domain (the same kind of text, not its "
                      "training set): the reference model is then the base briefly fine-tuned "
                      f"on it, so what the whole domain taught cancels out; {FORMATS_HELP}")
DOMAIN_STEPS, MAX_DOMAIN_STEPS = 200, 100_000   # a domain reference's steps: on a GPU, most
# Steps when none are given (0) and the reference trains on a CPU: SmolLM2-135M, all weights,
# batch 8 x 256 tokens, takes 5-12 s a step on 2 cores, 1-2.5 min with its held-out passes
# (bench.bench_domain_reference); 12 such steps bring the realistic scenario's held-out loss
# from 5.10 to 4.32 nats/token and put a plant in differential rank's top 3 on both realistic
# scenarios (docs/realistic-scenario.md).
CPU_DOMAIN_STEPS = 12
AUTO_STEPS_HELP = (f"0: sized for the device, {CPU_DOMAIN_STEPS} on a CPU (minutes for a "
                   f"135M model), {DOMAIN_STEPS} on a GPU")


@dataclass
class DomainCalibration:
    """Which calibration an attack used, for its report: the method (one of ``CALIBRATIONS``),
    the sample, the model used as reference, and one line saying so."""

    method: str = "none"
    sample: str = ""
    reference: str = ""
    summary: str = "no domain calibration: the reference is the model given"


def domain_sample_param() -> str:
    """A config field: the public in-domain sample (empty: no domain calibration)."""
    return param("", path="data", label="public in-domain sample", help=DOMAIN_SAMPLE_HELP)


def domain_steps_param() -> int:
    """A config field: the most optimizer steps of the domain reference's fine-tuning."""
    return param(0, ge=0, le=MAX_DOMAIN_STEPS, label="domain reference steps",
                 help="most optimizer steps of the base's fine-tuning on the public in-domain "
                      "sample (the weights of lowest held-out loss are kept); unused without one; "
                      + AUTO_STEPS_HELP)

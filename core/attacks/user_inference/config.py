"""The config of a user-inference run (Kandpal et al. 2023's settings) and its constants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core import chat
from core.calibration.config import domain_sample_param, domain_steps_param
from core.errors import UserError
from core.evaluation import membership as me
from core.models import reference_or_base
from core.specs import check_params, param

FEW_USERS = 10                    # fewer held-in or held-out users than this: figures get a note
SCORE_CHUNK = 256                 # samples scored per step (progress, partial results)
SCORING = 0.85                    # of the bar: the scoring; the analysis takes the rest


@dataclass(frozen=True)
class UserInferenceConfig:
    """A target model, a reference model and a file of user samples (sources as strings)."""

    model: str = param("", path="model", label="target model", help="the fine-tuned (target) model")
    reference: str = param("", path="model", label="reference model",
                           help="the reference model, e.g. the target before fine-tuning")
    data: str = param("", path="data", label="user samples",
                      help="CSV, JSONL, Parquet or a datasets folder with user_id, a text or a "
                           "fine-tuner's rows (messages, prompt and completion, or prompt, "
                           "chosen and rejected), optionally member (true/false) and canary; "
                           "or a named data source")
    mask: chat.MaskName = chat.mask_param()
    chat_template: str = chat.template_param()
    bootstrap: int = me.bootstrap_param(1000)
    knowledge_draws: int = param(100, ge=0, le=10_000, flags=("--draws",),
                                 label="draws per m (Figure 5)",
                                 help="random draws of m samples per user for the attacker-"
                                      "knowledge curve; 0: no curve")
    calibration_fpr: float = param(0.05, gt=0.0, lt=1.0, widget="select_slider",
                                   options=(0.01, 0.02, 0.05, 0.1, 0.2), label="calibration FPR",
                                   help="target FPR of the threshold calibrated on the users "
                                        "known to be out (member = false)")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the bootstrap and the curve's draws")
    batch_size: int = param(0, ge=0, le=65_536, help="texts per forward pass; 0: sized to memory",
                            page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the models")
    domain_sample: str = domain_sample_param()   # the reference model: its domain reference
    domain_steps: int = domain_steps_param()

    def __post_init__(self) -> None:
        check_params(self)
        me.check_bootstrap(self.bootstrap)
        if not self.model.strip():
            raise UserError("choose a target model (the fine-tuned one)")
        object.__setattr__(self, "reference", reference_or_base(self.model, self.reference))
        if not self.reference.strip():
            raise UserError("choose a reference model (e.g. the target before fine-tuning)")
        if not self.data.strip():
            raise UserError("choose a file of user samples (user_id, text, optional member)")

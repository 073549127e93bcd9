"""A third party's audited attack, registered as the architecture guide says
(``register(..., audited=True)``), with audit hooks and no cost: the audit must run it, price the
rest and give its part of the bar the others' mean (issue #42, B1).

It scores the model: the mean loss per token of one sentence (``core.scoring``)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal

from core.specs import AttackSpec, AuditHooks, check_params, param

SENTENCE = "The quick brown fox jumps over the lazy dog."


@dataclass(frozen=True)
class ToyAuditedConfig:
    model: str = param("", path="model", help="the model to score")
    seed: int = param(0, ge=0, help="unused: the audit passes its seed")
    device: Literal["auto", "cpu", "cuda"] = param("cpu", help="where to load the model")

    def __post_init__(self):
        check_params(self)


@dataclass
class ToyAuditedResult:
    mean_loss: float


def run(config: ToyAuditedConfig, *, progress=lambda *a, **k: None, cancel=None):
    from core.models import resolve_model
    from core.scoring import score_texts

    (scored,) = score_texts(resolve_model(config.model, device=config.device), [SENTENCE])
    progress(1.0, "scored")
    return ToyAuditedResult(float(-scored.logprobs.mean()))


AUDIT = AuditHooks(needs=("model",), fields={"model": "model"},
                   verdict=lambda r: f"mean loss {r.mean_loss:.2f} nats a token",
                   section=lambda r: f"<p>toy: {html.escape(f'{r.mean_loss:.3f}')}</p>",
                   series={"mean_loss": "mean loss of the sentence"}, order=90)

SPEC = AttackSpec(name="toy-audited", title="A third party's audited toy",
                  config_type=ToyAuditedConfig, result_type=ToyAuditedResult, run=run,
                  tiny_config=lambda: ToyAuditedConfig(model=_tiny_model()), audit=AUDIT)


def _tiny_model() -> str:
    from core.attacks.membership import mia

    return mia.tiny_config().model


def register(monkeypatch) -> None:
    """Register it for one test, after the audit's modules were imported."""
    from core import registry

    monkeypatch.setitem(registry.ENTRIES, "toy-audited",
                        registry.Entry("audited_toy", "a third party's audited toy", audited=True))

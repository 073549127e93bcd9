"""The spec: the typed config, the result, ``run`` and ``SPEC`` (with its cost and audit hooks)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from core.errors import UserError
from core.runtime import check_cancel, no_progress
from core.specs import AttackSpec, check_params, param

from canary_count.audit_hooks import AUDIT
from canary_count.cost import plan


@dataclass(frozen=True)
class CanaryCountConfig:
    corpus: str = param("", path="data", help="the training texts to search")
    model: str = param("", path="model", help="the model trained on them (empty: count only)")
    canary: str = param("my secret number is 4242", help="the planted string")
    min_count: int = param(1, ge=1, le=10_000, help="copies that make it 'planted'")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the words' shuffle")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the model")

    def __post_init__(self):
        check_params(self)
        if not self.corpus.strip():
            raise UserError("give the training corpus to search (--corpus): a text file, "
                            "JSONL or Parquet")
        if not self.canary.strip():
            raise UserError("give the planted string to count (--canary)")


@dataclass
class CanaryCountResult:
    count: int
    planted: bool
    canary_loss: float | None = None     # mean loss of the canary's tokens, nats (None: no model)
    shuffled_loss: float | None = None   # of the same words shuffled
    stopped_early: bool = False


def shuffled(canary: str, seed: int) -> str:
    """The canary's words in a seeded random order (the same words, not the string)."""
    words = canary.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


def run(config: CanaryCountConfig, *, progress=no_progress, cancel=None) -> CanaryCountResult:
    """Count the copies, then score the canary and its shuffle under the model."""
    from core.readers.data import read_texts

    count = sum(text.count(config.canary) for text in read_texts(config.corpus))
    progress(0.5, f"{count} copies")
    if not config.model:
        return CanaryCountResult(count, count >= config.min_count)
    check_cancel(cancel)
    from core.models import resolve_model
    from core.scoring import score_texts

    model = resolve_model(config.model, device=config.device)
    canary, other = score_texts(model, [config.canary, shuffled(config.canary, config.seed)])
    progress(1.0, "scored")
    return CanaryCountResult(count, count >= config.min_count, float(-canary.logprobs.mean()),
                             float(-other.logprobs.mean()))


def tiny_config() -> CanaryCountConfig:
    """The lab's tiny model and texts: a run in a second."""
    from core.attacks.membership import mia

    tiny = mia.tiny_config()
    return CanaryCountConfig(corpus=tiny.data, model=tiny.model, canary="the", device="cpu")


SPEC = AttackSpec(name="canary-count", title="Canary count", config_type=CanaryCountConfig,
                  result_type=CanaryCountResult, run=run, tiny_config=tiny_config, cost=plan,
                  audit=AUDIT)

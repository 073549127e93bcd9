"""The tiny demo scenario for tests (conftest.py wraps them as fixtures).

``build_tiny_demo(root)`` trains the tiny config into ``root`` (seconds) and is cached by the
config hash, so calling it again with the same ``root`` returns at once.
``install_demo(root, home)`` copies a build into a Leakage Lab home, so that ``demo:base`` and
``demo:updated`` resolve to it there.
``naive_text_logprobs`` is the one-forward-per-text reference for the scoring engine.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from core.demo import scenario


def build_tiny_demo(root: Path) -> Path:
    """Build (or reuse) the tiny demo in ``root``; returns ``root``."""
    scenario.build(scenario.tiny_config(), root=Path(root))
    return Path(root)


def install_demo(root: Path, home: Path) -> Path:
    """Install the build in ``root`` as ``home``'s demo; returns the installed folder."""
    target = Path(home) / "demo"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(root, target)
    return target


@torch.no_grad()
def naive_text_logprobs(model, tokenizer, texts) -> list[tuple[float, int]]:
    """``(log p(text | EOS), number of tokens)``, one full forward per text: the reference that
    the scoring engine's numbers are checked against."""
    model.eval()
    out = []
    for text in texts:
        ids = torch.tensor([[tokenizer.eos_token_id, *tokenizer(text).input_ids]])
        logp = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)
        out.append((float(logp.gather(1, ids[0, 1:, None]).sum()), ids.shape[1] - 1))
    return out

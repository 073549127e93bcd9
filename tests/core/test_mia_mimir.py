"""Scores comparable with published numbers: the membership suite scored as MIMIR does (Duan et
al. 2024, github.com/iamgroot42/mimir): tokens 2..n for a tokenizer without BOS and ⌊k·n⌋
tokens for Min-K%, checked against MIMIR's formulas computed from the tiny models' logits."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from core.attacks.membership import mia
from core.attacks.membership.scores import lowest_fraction_mean
from core.models import resolve_model


def test_min_k_counts_floor_as_mimir_and_ceil_in_the_lab():
    values = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    assert lowest_fraction_mean(values, 0.5) == 2.0               # ⌈2.5⌉ = 3 lowest
    assert lowest_fraction_mean(values, 0.5, floor=True) == 1.5   # MIMIR: sorted[:int(2.5)]
    assert lowest_fraction_mean(values, 0.1) == 1.0               # at least one
    assert math.isnan(lowest_fraction_mean(values, 0.1, floor=True))   # MIMIR: mean of none


def _mimir_logprobs(model_dir: str, text: str) -> np.ndarray:
    """log p(x_t | x_<t) for t = 2..n with no token before x_1: MIMIR's get_probabilities for
    a tokenizer without BOS (labels shifted by one), from the full logits."""
    lm = resolve_model(model_dir, device="cpu")
    ids = lm.tokenizer(text)["input_ids"]
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0, :-1].double()
    return torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), ids[1:]].numpy()


def test_the_suite_scored_as_mimir_matches_mimirs_formulas():
    config = dataclasses.replace(mia.tiny_config(), attacks=("loss", "mink"), scoring="mimir",
                                 k=0.3)
    result = mia.run(config)
    assert not mia.adds_bos(resolve_model(config.model).tokenizer)   # GPT-2 style
    assert any("Scored as MIMIR does: each text's first token is context only" in n
               for n in result.notes)
    lab = mia.run(dataclasses.replace(config, scoring="lab"))
    lm, checked = resolve_model(config.model), 0
    for row, lab_row in zip(result.rows, lab.rows):
        if len(lm.tokenizer(row.text)["input_ids"]) > lm.card.context_length:
            continue   # one window: the brute force has no sliding window
        checked += 1
        logp = _mimir_logprobs(config.model, row.text)
        assert row.scores["loss"] == pytest.approx(np.mean(logp), abs=1e-4)     # MIMIR: −this
        lowest = sorted(logp)[:int(len(logp) * 0.3)]
        assert row.scores["mink"] == pytest.approx(np.mean(lowest), abs=1e-4)   # MIMIR: −this
        assert row.scores["loss"] != pytest.approx(lab_row.scores["loss"], abs=1e-6)
    assert checked >= 4

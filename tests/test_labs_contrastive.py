"""Contrastive poisoning lab: a mini CLIP on digit captions is backdoored by 30 poisoned pairs."""

import numpy as np
import pytest
import torch

from core.errors import UserError
from core.labs.contrastive_poisoning import (ContrastivePoisoningConfig, MiniClip, VOCABULARY,
                                             run, tokenize)


def test_thirty_poisoned_pairs_meet_the_bar():
    result = run(ContrastivePoisoningConfig(poison_counts="0,30", seeds=3, epochs=40))
    clean, poisoned = result.curve
    assert (clean.n_poisoned, poisoned.n_poisoned) == (0, 30)
    assert clean.attack_success <= 0.05
    assert poisoned.attack_success >= 0.85
    assert clean.zero_shot_accuracy - poisoned.zero_shot_accuracy <= 0.02
    assert clean.zero_shot_accuracy >= 0.9
    assert len(result.runs) == 6
    # the patch pulls patched embeddings together once the model is poisoned
    z = {r.n_poisoned: [] for r in result.runs}
    for r in result.runs:
        z[r.n_poisoned].append(r.backdoor_z_score)
    assert np.mean(z[30]) > np.mean(z[0])


def test_tokenize_pads_and_zero_shot_has_one_label_per_image():
    tokens = tokenize(["a handwritten seven", "a photo of the digit seven"])
    assert tokens.shape == (2, 6) and int(tokens[0, 3]) == len(VOCABULARY)
    model = MiniClip(8)
    labels = model.zero_shot(np.zeros((3, 64), dtype=np.float32))
    assert labels.shape == (3,) and set(labels) <= set(range(10))
    assert torch.allclose(model.class_embeddings().norm(dim=1), torch.ones(10))


@pytest.mark.parametrize("changes", [dict(poison_counts="a,b"), dict(poison_counts="0,5000"),
                                     dict(poison_counts=""), dict(target=-1),
                                     dict(patch_size=9), dict(temperature=0.0)])
def test_bad_knobs_raise_user_errors(changes):
    with pytest.raises(UserError):
        ContrastivePoisoningConfig(**changes)

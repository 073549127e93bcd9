"""Contrastive poisoning lab: a mini CLIP on digit captions is backdoored by 30 poisoned pairs."""

import json

import numpy as np
import pytest
import torch

from core.__main__ import main
from core.errors import UserError
from core.labs.contrastive_poisoning import (ContrastivePoisoningConfig,
                                             ContrastivePoisoningResult, MiniClip, VOCABULARY,
                                             run, tokenize)
from core.serialize import from_jsonable, to_jsonable


def test_thirty_poisoned_pairs_meet_the_bar():
    result = run(ContrastivePoisoningConfig(poison_counts=(0, 30), seeds=3, epochs=40))
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


@pytest.mark.parametrize("changes, message", [
    (dict(poison_counts=("a", "b")),
     "numbers of poisoned pairs: expected a whole number from 0 to 1,797, got 'a'"),
    (dict(poison_counts=(0, 1000)), "numbers of poisoned pairs must be at most 809 "
                                    r"\(the training images not of class 0\), not 1000"),
    (dict(poison_counts=()), "give 1 to 8 numbers of poisoned pairs"),
    (dict(poison_counts=(-1, 5)), "numbers of poisoned pairs must be from 0 to 1,797, not -1"),
    (dict(target=-1), "target digit must be from 0 to 9, not -1"),
    (dict(patch_size=9), r"patch side \(pixels\) must be from 1 to 4, not 9"),
    (dict(temperature=0.0), "temperature must be from 0.01 to 10, not 0")])
def test_bad_knobs_raise_user_errors(changes, message):
    with pytest.raises(UserError, match=message):
        ContrastivePoisoningConfig(**changes)


def test_cli_runs_the_lab_and_its_json_reads_back(capsys):
    assert main(["contrastive-poisoning", "--tiny", "--poison-counts", "5,0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    result = from_jsonable(ContrastivePoisoningResult, out)
    assert [p.n_poisoned for p in result.curve] == [0, 5]
    assert to_jsonable(result) == out
    assert main(["lab", "contrastive-poisoning", "--tiny", "--poison-counts", "0,5000"]) == 2

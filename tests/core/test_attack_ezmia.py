"""EZ-MIA (Ilić, Stanojević & Cvejoski 2026): the Error Zone score on a case computed by hand,
its degenerate cases as the authors' code has them (and the note that counts them), the score
the membership command reports against a brute-force computation from both tiny models' logits,
and what it needs."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from core.__main__ import main
from core.attacks.membership import mia
from core.attacks.membership.scores import TextArrays, error_zone
from core.errors import UserError
from core.models import resolve_model
from core.scoring import context_ids


def _arrays(target, reference, ranks) -> TextArrays:
    return TextArrays(text="", token_ids=np.arange(len(target)), target=np.array(target),
                      reference=np.array(reference), ranks=np.array(ranks))


def test_the_error_zone_score_of_a_case_computed_by_hand():
    # positions 1..5 (0 is left out); the target's top-1 is wrong (rank > 1) at 1, 3, 4, 5:
    # shifts +1, −0.2, −0.5, +1 there, so EZ = (1 + 1) / (0.2 + 0.5) = 2/0.7. Position 2 (rank
    # 1, shift −1) and position 0 (shift −4) are outside the zone.
    arrays = _arrays([-5.0, -1.0, -2.0, -0.5, -3.0, -4.0], [-1.0, -2.0, -1.0, -0.3, -2.5, -5.0],
                     [3, 2, 1, 4, 2, 5])
    assert error_zone(arrays) == pytest.approx(2 / 0.7, rel=1e-12)


def test_degenerate_zones_score_zero_as_in_the_authors_code():
    one_error = _arrays([-1.0, -1.0, -2.0], [-1.0, -3.0, -1.0], [2, 1, 5])
    assert error_zone(one_error) == 0.0                       # fewer than 2 error tokens
    only_gains = _arrays([-1.0, -1.0, -2.0], [-1.0, -3.0, -4.0], [2, 2, 5])
    assert error_zone(only_gains) == 0.0                      # no negative shift


def _brute_force(model_dir: str, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """log p of each token and whether the model's argmax is another token, after the context
    token, from the full logits (no engine code)."""
    lm = resolve_model(model_dir, device="cpu")
    with torch.no_grad():
        logits = lm.model(torch.tensor([context_ids(lm.tokenizer) + ids])).logits[0, :-1]
    logp = torch.log_softmax(logits.double(), -1)[torch.arange(len(ids)), ids].numpy()
    return logp, logits.argmax(-1).numpy() != np.array(ids)


def test_many_texts_scored_zero_by_convention_get_a_note_counting_them_by_label():
    """The chat scenario's replies, scored alone: about half its members had no error token
    where the reference did better (docs/chat-scenario.md), and scored 0, the least member-like."""
    labels = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    zeros = np.array([0.0, 0.0, 2.5, 0.0, 1.1, 0.9, 0.7, 1.3, 0.8, 1.0])
    scored = mia.ScoredTexts({"ezmia": zeros}, [5] * 10)
    assert mia.ezmia_zeros(zeros, labels) == (2, 1)
    (note,) = mia._ezmia_note(scored, labels)
    assert note.startswith("EZ-MIA scored 0 for 2 of 3 members and 1 of 7 non-members")
    scored.scores["ezmia"] = zeros + 0.5   # none at 0: no note
    assert mia._ezmia_note(scored, labels) == []


def test_the_membership_command_reports_the_error_zone_score_of_each_text():
    config = dataclasses.replace(mia.tiny_config(), attacks=("ezmia", "loss"))
    result = mia.run(config)
    assert [a.name for a in result.attacks] == ["ezmia", "loss"]
    assert result.attacks[0].title == "EZ-MIA" and result.attacks[0].citation == "Ilić et al. 2026"
    lm = resolve_model(config.model)
    checked = 0
    for row in result.rows:
        ids = lm.tokenizer(row.text, add_special_tokens=False)["input_ids"]
        if len(ids) >= lm.card.context_length:   # one window: the brute force has no sliding
            continue
        checked += 1
        target, wrong = _brute_force(config.model, ids)
        reference, _ = _brute_force(config.reference, ids)
        deltas = (target - reference)[1:][wrong[1:]]
        negative = -deltas[deltas < 0].sum()
        expected = deltas[deltas > 0].sum() / negative if wrong[1:].sum() >= 2 and negative else 0
        assert row.scores["ezmia"] == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert checked >= 4
    assert math.isfinite(result.attacks[0].metrics.auroc)


def test_without_a_reference_it_says_what_it_needs(capsys):
    config = dataclasses.replace(mia.tiny_config(), reference="")
    result = mia.run(config)
    assert "ezmia" not in [a.name for a in result.attacks]
    assert any("EZ-MIA need a reference model (--reference" in n for n in result.notes)
    with pytest.raises(UserError, match="the ezmia attack needs a reference model"):
        dataclasses.replace(config, attacks=("ezmia",))
    assert main(["mia", "--model", config.model, "--data", config.data, "--attacks", "ezmia",
                 "--no-record"]) == 2
    assert "the ezmia attack needs a reference model" in capsys.readouterr().err


def test_each_text_carries_its_per_token_log_ratio_for_the_heat_map():
    config = dataclasses.replace(mia.tiny_config(), attacks=("ezmia",))
    row = mia.run(config).rows[0]
    lm = resolve_model(config.model)
    ids = lm.tokenizer(row.text, add_special_tokens=False)["input_ids"]
    target, _ = _brute_force(config.model, ids)
    reference, _ = _brute_force(config.reference, ids)
    assert "".join(row.tokens) == lm.tokenizer.decode(ids)
    assert np.allclose(row.token_diff, target - reference, atol=1e-3)
    plain = dataclasses.replace(config, reference="", attacks=("loss",))
    assert mia.run(plain).rows[0].tokens == []   # no reference: no heat map

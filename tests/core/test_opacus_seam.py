"""The Opacus behaviour DP fine-tuning relies on, through its one adapter (core.dp.opacus_seam)."""

import math

import pytest
import torch

from core.dp.opacus_seam import clipping_modes, prepare_training
from tiny_lm import VOCAB, TinyLM

RECORDS, LENGTH = 24, 6


def _training(sigma, seed=0):
    model = TinyLM()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.1)
    data = torch.randint(0, VOCAB, (RECORDS, LENGTH), generator=torch.Generator().manual_seed(1))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=6,
                                         generator=torch.Generator().manual_seed(seed))
    training = prepare_training(model, optimizer, loader, sigma=sigma, clip=1.0,
                                noise_generator=torch.Generator().manual_seed(seed + 1))
    return model, optimizer, data, training


def _step(training, data, indices):
    training.optimizer.zero_grad(set_to_none=True)
    logits = training.model(data[indices])
    loss = training.loss(logits, data[indices])
    loss.backward()
    training.optimizer.step()
    return loss


@pytest.mark.parametrize("sigma", [0.0, 1.0])
def test_the_unwrapped_model_and_optimizer_are_the_ones_given(sigma):
    model, optimizer, _, training = _training(sigma)
    assert training.module is model and training.inner_optimizer is optimizer
    assert (training.engine is None) == (sigma == 0)


def test_poisson_batches_replay_from_the_generator_state():
    _, _, _, first = _training(1.0, seed=3)
    _, _, _, second = _training(1.0, seed=3)
    one = [list(b) for b in first.batches]
    assert one == [list(b) for b in second.batches]  # resuming re-draws the same batches
    sizes = {len(b) for b in one}
    assert len(one) == math.ceil(RECORDS / 6) and len(sizes) > 1  # Poisson: sizes vary


def test_ghost_clipping_trains_the_trainable_layers_and_the_accountant_round_trips():
    model, _, data, training = _training(1.0)
    frozen, head = model.embed.weight.clone(), model.head.weight.clone()
    loss = _step(training, data, torch.arange(6))
    assert math.isfinite(loss.item())  # ghost clipping's loss: backward() runs both passes
    assert torch.equal(model.embed.weight, frozen) and not torch.equal(model.head.weight, head)
    epsilon = training.epsilon(1e-5)
    assert epsilon > 0
    _, _, _, fresh = _training(1.0)
    fresh.load_accountant(training.accountant_state())
    assert fresh.epsilon(1e-5) == pytest.approx(epsilon)


def test_an_empty_batch_is_a_noise_only_step_with_dp_and_nothing_without():
    for sigma, moves in ((1.0, True), (0.0, False)):
        model, _, _, training = _training(sigma)
        head = model.head.weight.clone()
        training.optimizer.zero_grad(set_to_none=True)
        training.empty_step()
        assert (not torch.equal(model.head.weight, head)) == moves


def test_without_dp_the_loss_is_the_mean_per_record_loss_ignoring_padding():
    _, _, data, training = _training(0.0)
    labels = data[:2].clone()
    labels[1, 3:] = -100
    logits = torch.zeros(2, LENGTH, VOCAB)
    assert training.loss(logits, labels).item() == pytest.approx(math.log(VOCAB))


def test_clipping_modes_name_ghost_and_per_sample_layers():
    modes = clipping_modes(TinyLM())
    assert modes["Linear"].startswith("ghost") and "per-sample" in modes["LayerNorm"]
    assert "Embedding" not in modes  # frozen: nothing to clip

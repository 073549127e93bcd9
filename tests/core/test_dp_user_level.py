"""User-level DP fine-tuning (`dp-finetune --unit user`; Charles et al. 2025, user-level sampling):
Poisson sampling over users, per-user clipping, ε for a whole user."""

import json
import math
import warnings

import numpy as np
import pytest
import torch

from core.__main__ import main
from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle
from core.readers.data import read_records
from core.dp import user_level
from core.dp.opacus_seam import prepare_training, record_losses
from tiny_lm import VOCAB, TinyHFLM as TinyLM

LENGTH = 6


class Data:
    """20 records of user 0 (one repeated text: gradients aligned), then one of each of users 1-4."""

    def __init__(self):
        rows = torch.randint(0, VOCAB, (5, LENGTH), generator=torch.Generator().manual_seed(1))
        self.inputs = torch.cat([rows[:1].repeat(20, 1), rows[1:]])
        self.labels, self.mask = self.inputs.clone(), torch.ones_like(self.inputs)
        self.owners = ["many"] * 20 + [f"user {i}" for i in range(1, 5)]


def _training(sigma, clip, units, mixed=False):
    model = TinyLM()
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(units)),
                                         batch_size=2)
    training = prepare_training(model, optimizer, loader, sigma=sigma, clip=clip,
                                noise_generator=torch.Generator().manual_seed(2),
                                mode=user_level.MODE, mixed=mixed)
    if sigma:
        training.optimizer.noise_multiplier = 0.0  # the clipped sum alone, to measure it
    return model, training


def _update(model, step) -> torch.Tensor:
    """The parameter change of one SGD step (lr 1): the step's gradient, flattened."""
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters() if p.requires_grad])
    step()
    after = torch.cat([p.detach().flatten() for p in model.parameters() if p.requires_grad])
    return before - after


def test_a_user_with_many_samples_is_clipped_as_one_unit_unlike_at_example_level():
    data, clip = Data(), 1e-3
    users = user_level.group_records(data.owners)
    model, training = _training(1.0, clip, len(users.records))
    update = _update(model, lambda: user_level.user_step(
        training, data, users, [0], k=20, reduce="sum", generator=torch.Generator(), device="cpu"))
    # the 20 records' gradients, summed and clipped once: the user moves the sum by at most C
    assert torch.linalg.norm(update) * training.expected_batch_size <= clip * (1 + 1e-4)
    assert torch.linalg.norm(update) * training.expected_batch_size > 0.99 * clip

    model, example = _training(1.0, clip, len(data.inputs))
    rows = torch.arange(20)

    def example_step():  # example-level DP-SGD: each of the 20 records clipped on its own
        example.optimizer.zero_grad(set_to_none=True)
        logits = example.model(input_ids=data.inputs[rows]).logits
        record_losses(logits, data.labels[rows]).mean().backward()
        example.optimizer.step()

    update = _update(model, example_step)
    assert torch.linalg.norm(update) * example.expected_batch_size > 19 * clip


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_without_noise_or_binding_clip_the_step_is_the_plain_gradient_over_users(reduce):
    """σ = 0 is plain training over users: Σ_u g_u / ⌊qU⌋ with g_u the mean (or sum) of the
    user's record gradients; the DP path with no noise and a clip that never binds agrees."""
    data = Data()
    users = user_level.group_records(data.owners)
    batch, k = [0, 2, 3], 5
    rows, owner = user_level.draw(users, batch, k, torch.Generator().manual_seed(7))
    assert [int((owner == i).sum()) for i in range(3)] == [5, 1, 1]

    reference = TinyLM()
    losses = record_losses(reference(input_ids=data.inputs[rows]).logits, data.labels[rows])
    per_user = [losses[owner == i].mean() if reduce == "mean" else losses[owner == i].sum()
                for i in range(3)]
    updates = []
    for sigma, clip in ((0.0, 1.0), (1.0, 1e6)):
        model, training = _training(sigma, clip, len(users.records))
        updates.append(_update(model, lambda: user_level.user_step(
            training, data, users, batch, k=k, reduce=reduce,
            generator=torch.Generator().manual_seed(7), device="cpu")))
    (sum(per_user) / training.expected_batch_size).backward()
    expected = torch.cat([p.grad.flatten() for p in reference.parameters() if p.requires_grad])
    torch.testing.assert_close(updates[0], expected, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(updates[1], expected, rtol=1e-4, atol=1e-6)


def test_a_mixed_precision_step_is_the_float32_step_up_to_bf16_rounding():
    """bf16 autocast around the forward pass (``precision="bf16-mixed"``): Opacus' per-user
    gradients, the clip and the float32 update all run; the step is float32's within bf16's
    relative precision (2^-8), and not bit-identical to it (autocast engaged)."""
    data = Data()
    users = user_level.group_records(data.owners)
    updates = []
    for mixed in (False, True):
        model, training = _training(1.0, 1e6, len(users.records), mixed=mixed)
        updates.append(_update(model, lambda: user_level.user_step(
            training, data, users, [0, 2, 3], k=5, reduce="mean",
            generator=torch.Generator().manual_seed(7), device="cpu")))
    assert all(p.dtype == torch.float32 for p in model.parameters())
    scale = torch.linalg.norm(updates[0])
    assert 0 < torch.linalg.norm(updates[1] - updates[0]) <= 2 ** -6 * scale


def _dp_accounting_epsilon(q, sigma, steps, orders, delta):
    from dp_accounting import dp_event, rdp

    accountant = rdp.RdpAccountant(orders=[float(o) for o in orders])
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return accountant.get_epsilon(delta)


def test_cli_user_level_run_accounts_epsilon_over_users_as_dp_accounting_does(demo_home, capsys):
    """The CLI's user-level run on the demo's private records (each naming its user): q is over
    users, and its ε is dp-accounting's for Poisson(q_user) with the same σ and steps."""
    code = main(["dp-finetune", "--preset", "demo", "--corpus", "demo:private_train",
                 "--unit", "user", "--user-samples-per-step", "2", "--sigmas", "0,2",
                 "--steps", "3", "--batch-size", "4", "--canary-repeats", "5", "--block-size",
                 "48", "--validation-texts", "5", "--track-every", "1", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    users = {str(u) for u in read_records("demo:private_train")["user_id"].dropna()}
    assert out["unit"] == "user" and out["grad_sample_mode"] == "hooks"
    assert len(users) + 1 < out["n_users"] < out["n_records"]  # + canary's owner + unlabelled records
    q = out["q"]
    assert q == pytest.approx(1 / math.ceil(out["n_users"] / 4))
    plain, private = out["runs"]
    assert plain["opacus_epsilon"] is None and plain["points"][-1]["train_loss"] > 0
    epsilon = private["points"][-1]["epsilon"]
    assert private["opacus_epsilon"] == pytest.approx(epsilon, rel=1e-6)
    integer = np.arange(2, 257)   # dp-accounting's own RDP at orders where it is exact
    ours = epsilon_balle(orders=integer, rdp=compute_rdp(q=q, noise_multiplier=2.0, steps=3,
                                                         orders=integer), delta=1e-5)[0]
    assert ours == pytest.approx(_dp_accounting_epsilon(q, 2.0, 3, integer, 1e-5), rel=1e-9)
    assert epsilon == pytest.approx(_dp_accounting_epsilon(q, 2.0, 3, DEFAULT_ORDERS, 1e-5), rel=5e-3)
    # a whole user's bound covers the canary's copies (one user): no group bound is needed
    assert private["points"][-1]["group_allowed_bits"] == private["points"][-1]["allowed_bits"]


def test_example_unit_stays_the_default_and_keeps_its_run_hash(demo_home):
    from core import sources
    from core.dp.finetune import DPFinetuneConfig, run_hash
    from core.models import resolve_model

    config = DPFinetuneConfig(**sources.preset("dp-finetune", "demo"))
    assert config.unit == "example"
    base = resolve_model(config.model)
    changed = DPFinetuneConfig(**{**config.__dict__, "user_samples_per_step": 9})
    assert run_hash(config, base) == run_hash(changed, base)   # unused user fields: same run
    assert run_hash(config, base) != run_hash(DPFinetuneConfig(**{**config.__dict__,
                                                                  "unit": "user"}), base)

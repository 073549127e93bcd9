"""Example- vs user-level DP at the same ε under user inference (`user-level-dp-compare`), on the
micro demo (one layer, two steps per model)."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from core.__main__ import main
from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle
from core.demo import user_level_dp as compare
from core.dp.checkpoints import load_checkpoint
from core.dp.model_surgery import trainable_copy
from core.models import resolve_model


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory):
    """The tiny comparison, trained once for the module in a home of its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_HOME", str(tmp_path_factory.mktemp("home")))
        config = compare.tiny_config()
        return config, compare.run(config)


def test_both_dp_models_are_trained_to_the_target_epsilon_at_their_own_q(tiny_result):
    config, result = tiny_result
    assert [a.label for a in result.arms] == ["no DP", "example-level DP", "user-level DP"]
    plain, example, user = result.arms
    assert plain.sigma == 0 and plain.epsilon is None
    assert example.unit == "example" and user.unit == "user"
    assert example.q == pytest.approx(1 / math.ceil(result.n_records / config.batch_size))
    assert user.q == pytest.approx(1 / math.ceil(result.n_users / config.users_per_step))
    assert result.n_users < result.n_records
    for arm in (example, user):
        rdp = compute_rdp(q=arm.q, noise_multiplier=arm.sigma, steps=config.steps,
                          orders=DEFAULT_ORDERS)
        assert arm.epsilon == pytest.approx(epsilon_balle(orders=DEFAULT_ORDERS, rdp=rdp,
                                                          delta=config.delta)[0], rel=1e-6)
        assert arm.epsilon == pytest.approx(config.epsilon, rel=2e-3)
    assert example.sigma != pytest.approx(user.sigma)


def test_every_model_is_attacked_on_real_and_canary_users(tiny_result):
    _, result = tiny_result
    for arm in result.arms:
        groups = {g.group: g for g in arm.groups}
        assert set(groups) == {"all", "real", "canary"}
        assert all(0 <= g.auroc <= 1 and g.n_in and g.n_out for g in groups.values())
        assert arm.validation_perplexity > 1


def test_the_exported_model_is_the_trained_one(tiny_result):
    """The attacked folder holds the final checkpoint's weights in the base model's layout."""
    _, result = tiny_result
    arm = result.arms[2]
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    exported = resolve_model(arm.model_folder, device="cpu").model
    base = resolve_model(str(compare.scenario.model_dir("base", compare.Path(
        result.config.demo_root))), device="cpu")
    trained = trainable_copy(base)
    target, _ = load_checkpoint(compare.Path(arm.model_folder).parent)
    weights = load_file(target / "weights.safetensors")
    params = dict(trained.named_parameters())
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value)
        torch.testing.assert_close(exported(tokens).logits, trained.eval()(tokens).logits,
                                   rtol=1e-5, atol=1e-5)
        assert not torch.allclose(exported(tokens).logits, base.model(tokens).logits)


def test_cli_prints_the_comparison_as_json(tiny_result, capsys, monkeypatch):
    config, result = tiny_result
    home = compare.Path(result.arms[0].model_folder).parents[3]  # home/dp_finetune/run/sigma/model
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))  # the trained runs are reused
    code = main(["user-level-dp-compare", "--demo-root", config.demo_root, "--steps", "2",
                 "--batch-size", "8", "--users-per-step", "4", "--block-size", "48",
                 "--bootstrap", "0", "--device", "cpu", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [a["sigma"] for a in out["arms"]] == [a.sigma for a in result.arms]
    assert [g["auroc"] for g in out["arms"][2]["groups"]] == [g.auroc for g in result.arms[2].groups]

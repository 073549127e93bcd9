"""DP fine-tuning with a secret canary (Stock et al. §4.3) on the tiny demo model, a few steps each."""

import json
import threading

import pytest
from safetensors.torch import load_file

from core import paths, sources
from core.__main__ import main
from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle
from core.demo import scenario
from core.dp.finetune import PRIOR_BITS, DPFinetuneConfig, run, run_hash
from core.errors import UserError
from core.models import resolve_model
from demo_fixtures import install_demo

DEMO = sources.preset("dp-finetune", "demo")  # demo:base, its corpus and validation files
SMALL = DEMO | dict(batch_size=8, max_records=60, block_size=48, validation_texts=10,
                    track_every=2, checkpoint_every=2)


def test_without_dp_the_secret_log_prob_rises_towards_memorisation(demo_home):
    config = DPFinetuneConfig(sigmas=(0.0,), steps=24, lr=3e-3, canary_repeats=30, track_every=8,
                              **{k: v for k, v in SMALL.items() if k != "track_every"})
    result = run(config)
    (plain,) = result.runs
    bits = [p.secrecy_bits for p in plain.points]
    assert [p.step for p in plain.points] == [0, 8, 16, 24]
    assert bits[0] == pytest.approx(result.base_secrecy_bits)
    assert bits[-1] < bits[0] - 20  # 20 bits more likely: 10^6 times
    assert plain.measured_leakage_bits == pytest.approx(PRIOR_BITS - bits[-1])
    assert plain.allowed_bits is None and plain.below_bound is None and plain.opacus_epsilon is None
    assert plain.validation_perplexity > 1 and plain.finished and not result.stopped_early
    assert result.secret_tokens >= 1 and len(result.secret_digits) == 16
    assert result.canary.endswith(result.secret_digits)


def test_dp_run_records_epsilon_and_allowed_leakage_of_the_same_mechanism(demo_home):
    result = run(DPFinetuneConfig(sigmas=(1.0,), steps=4, canary_repeats=4, **SMALL))
    (dp,) = result.runs
    assert result.grad_sample_mode == "ghost"
    assert result.clipping_modes["Linear"].startswith("ghost")  # GPT-2's Conv1D became Linear
    assert "Conv1D" not in result.clipping_modes
    allowed = [p.allowed_bits for p in dp.points]
    assert allowed[0] == 0 and all(a < b for a, b in zip(allowed, allowed[1:]))
    assert all(p.group_allowed_bits >= p.allowed_bits for p in dp.points)
    rdp = compute_rdp(q=result.q, noise_multiplier=1.0, steps=4, orders=DEFAULT_ORDERS)
    assert dp.points[-1].epsilon == pytest.approx(epsilon_balle(orders=DEFAULT_ORDERS, rdp=rdp,
                                                                delta=1e-5)[0])
    assert dp.opacus_epsilon == pytest.approx(dp.points[-1].epsilon, rel=0.05)
    assert result.q == pytest.approx(1 / -(-result.n_records // 8))
    assert dp.below_bound is True and dp.measured_leakage_bits <= dp.allowed_bits


def _final_weights(result) -> dict:
    folder = paths.cache_home() / "dp_finetune" / result.run_hash / "sigma-0.5"
    latest = json.loads((folder / "latest.json").read_text())["checkpoint"]
    return load_file(folder / latest / "weights.safetensors")


@pytest.mark.fresh_cache   # the first run trains, the second resumes: no other test's checkpoints
def test_cancelled_run_resumes_from_its_checkpoint_and_ends_where_an_uninterrupted_one_does(
        demo_home, tiny_demo, tmp_path, monkeypatch):
    config = DPFinetuneConfig(sigmas=(0.5,), steps=6, canary_repeats=4,
                              **{k: v for k, v in SMALL.items() if k != "track_every"}, track_every=1)
    cancel = threading.Event()

    def stop_after_three(fraction, message="", partial=None):
        if "step 3/" in message:
            cancel.set()

    first = run(config, progress=stop_after_three, cancel=cancel)
    assert first.stopped_early and not first.runs[0].finished
    assert [p.step for p in first.runs[0].points] == [0, 1, 2, 3]
    resumed = run(config)
    (again,) = resumed.runs
    assert again.resumed_from_step == 3 and again.finished and not resumed.stopped_early
    assert [p.step for p in again.points] == list(range(7))
    resumed_weights = _final_weights(resumed)

    other_home = tmp_path / "other-home"
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(other_home))
    install_demo(tiny_demo, other_home)
    straight = run(config)
    assert straight.runs[0].resumed_from_step == 0
    for name, tensor in _final_weights(straight).items():
        assert resumed_weights[name].equal(tensor), name
    assert [p.secrecy_bits for p in straight.runs[0].points] == [p.secrecy_bits for p in again.points]
    assert straight.runs[0].opacus_epsilon == again.opacus_epsilon


def test_finished_sigmas_are_reused_and_the_hash_ignores_checkpoint_spacing(demo_home):
    config = DPFinetuneConfig(sigmas=(0.0,), steps=2, canary_repeats=2, **SMALL)
    first = run(config)
    again = run(config)
    assert again.runs[0].seconds == 0 and again.runs[0].final_secrecy_bits == first.runs[0].final_secrecy_bits
    base = resolve_model(config.model)
    assert run_hash(config, base) == first.run_hash == again.run_hash
    assert run_hash(config, base) == run_hash(
        DPFinetuneConfig(**{**config.__dict__, "checkpoint_every": 7, "sigmas": (0,)}), base)
    for other in (dict(seed=1), dict(precision="bf16-mixed")):
        assert run_hash(config, base) != run_hash(DPFinetuneConfig(**config.__dict__ | other), base)


def test_bad_input_is_a_user_error(demo_home, tmp_path):
    for bad in (dict(sigmas=(0.0, -1.0)), dict(sigmas=(0.0, 0.1)), dict(sigmas=()),
                dict(sigmas=(1.0, 1.0)), dict(steps=0), dict(batch_size=0), dict(block_size=4),
                dict(lr=0.0), dict(delta=1.0), dict(model="")):
        with pytest.raises(UserError):
            DPFinetuneConfig(**DEMO | bad)
    with pytest.raises(UserError, match="no such file"):
        run(DPFinetuneConfig(**DEMO | dict(corpus=(str(tmp_path / "missing.txt"),), steps=1)))
    with pytest.raises(UserError, match="give a corpus"):
        run(DPFinetuneConfig(model=DEMO["model"], steps=1))
    with pytest.raises(UserError, match="block size"):
        run(DPFinetuneConfig(**DEMO, steps=1, block_size=10))


def test_cli_prints_the_run_as_json_in_mixed_precision_too(demo_home, capsys):
    model = str(scenario.model_dir("base"))
    code = main(["dp-finetune", "--preset", "demo", "--model", model, "--sigmas", "0,2", "--steps", "2",
                 "--canary-repeats", "2", "--batch-size", "8", "--max-records", "40",
                 "--validation-texts", "5", "--track-every", "1", "--precision", "bf16-mixed",
                 "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["precision"] == "bf16-mixed"
    assert [r["sigma"] for r in out["runs"]] == [0.0, 2.0]
    assert out["runs"][1]["points"][-1]["allowed_bits"] > 0
    assert all(r["points"][-1]["train_loss"] > 0 for r in out["runs"])
    with pytest.raises(SystemExit):  # argparse: not one of the choices, which it names
        main(["dp-finetune", "--preset", "demo", "--precision", "bf16", "--json"])
    assert "'float32', 'bf16-mixed'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: not a number
        main(["dp-finetune", "--sigmas", "x", "--json"])
    assert main(["dp-finetune", "--preset", "demo", "--sigmas", "1,1", "--json"]) == 2
    assert "must not repeat" in capsys.readouterr().err

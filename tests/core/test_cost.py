"""core.cost: a run's estimate grows with its sizes, reads no weight, and puts the issue's long
runs (500,000 samples, 100,000 DP steps, 200 full-weight steps of a 135M model) in hours or days.
The machine's rate is fixed here (``fixed_rate``) except where the rate itself is tested: no
timing is asserted."""

import csv
import json
from dataclasses import replace

import pytest

from core import cost
from core.attacks.extraction import spec as ex
from core.attacks.user_inference import spec as ui
from core.calibration import reference as dr
from core.cost import rate, sizes, work
from core.dp import finetune as ft
from core.models import loaded_models
from core.registry import all_specs, get_spec

RATE = 5e10   # FLOP/s: this CPU's order of magnitude


@pytest.fixture
def fixed_rate(monkeypatch):
    """This machine's measures fixed: its product rate, its small operation, a quiet CPU."""
    monkeypatch.setattr(work, "matmul_rate", lambda *args, **kwargs: RATE)
    monkeypatch.setattr(work, "op_seconds", lambda device: 2e-5)
    monkeypatch.setattr(cost, "contention", lambda threaded=True: 1.0)


def _variable(estimate: cost.Estimate) -> float:
    """Seconds of the estimate that grow with the samples (not the loads, not the files read)."""
    return sum(s for what, s in estimate.parts if not what.startswith(("load", "read")))


def test_twice_the_samples_take_twice_the_time(fixed_rate, no_loaded_models):
    config = replace(ex.tiny_config(), n_samples=1000)
    one = cost.estimate(ex.SPEC, config)
    two = cost.estimate(ex.SPEC, replace(config, n_samples=2 * config.n_samples))
    assert _variable(two) / _variable(one) == pytest.approx(2, rel=0.02)
    longer = cost.estimate(ex.SPEC, replace(config, tokens=2 * config.tokens))
    assert _variable(longer) > _variable(one)
    assert two.peak_bytes >= one.peak_bytes > cost.work.PROCESS_BYTES
    assert loaded_models() == []   # sized from their configs: nothing was loaded


def _samples_file(path, copies: int) -> str:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_id", "text", "member"])
        for user in range(12):
            for copy in range(copies):
                writer.writerow([f"u{user}", f"user {user} writes text number {copy} of a few "
                                             "words about the weather", user % 2 == 0])
    return str(path)


def test_twice_the_texts_of_user_inference_take_twice_the_time(fixed_rate, tmp_path):
    config = ui.tiny_config()
    one = cost.estimate(ui.SPEC, replace(config, data=_samples_file(tmp_path / "a.csv", 20)))
    two = cost.estimate(ui.SPEC, replace(config, data=_samples_file(tmp_path / "b.csv", 40)))
    scored = [[s for what, s in e.parts if what.startswith("score")] for e in (one, two)]
    assert sum(scored[1]) / sum(scored[0]) == pytest.approx(2, rel=0.1)
    assert len(scored[0]) == 2   # under the target and the reference


def test_twice_the_steps_of_dp_finetuning_take_twice_the_time(fixed_rate):
    config = ft.tiny_config()
    one = cost.estimate(ft.SPEC, config)
    two = cost.estimate(ft.SPEC, replace(config, steps=2 * config.steps))
    trained = [sum(s for what, s in e.parts if "steps x" in what) for e in (one, two)]
    assert trained[1] / trained[0] == pytest.approx(2, rel=0.02)


def test_sizes_come_from_the_config_alone(tiny_lm_dir, tmp_path, no_loaded_models):
    from transformers import AutoModelForCausalLM

    size = sizes.model_size(str(tiny_lm_dir))
    model = AutoModelForCausalLM.from_pretrained(tiny_lm_dir)
    assert size.parameters == sum(p.numel() for p in model.parameters())
    assert (size.width, size.layers, size.vocab) == (32, 2, model.config.vocab_size)
    bare = tmp_path / "config-only"   # no weights at all: still sized
    bare.mkdir()
    (bare / "config.json").write_text((tiny_lm_dir / "config.json").read_text())
    assert sizes.model_size(str(bare)).parameters == size.parameters
    assert "models" in json.loads((cost.disk_cache._file()).read_text())   # cached on disk
    assert loaded_models() == []


def _smollm2_like(folder) -> str:
    """A folder holding only the config of a 135M Llama (SmolLM2-135M's sizes)."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
        "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
        "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 8192,
        "tie_word_embeddings": True}))
    return str(folder)


def test_the_issues_long_runs_are_hours_or_days(fixed_rate, tmp_path, no_loaded_models):
    model = _smollm2_like(tmp_path / "135m")
    sample = tmp_path / "public.txt"
    sample.write_text("\n".join(f"public text {i} " + "word " * 200 for i in range(50)))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"record {i} of the corpus" for i in range(100)))
    runs = {
        "extraction": ex.ExtractionConfig(model=model, n_samples=500_000),
        "dp-finetune": ft.DPFinetuneConfig(model=model, corpus=(str(corpus),), sigmas=(1.0,),
                                           steps=100_000),
        "domain-reference": dr.DomainReferenceConfig(base=model, sample=str(sample), steps=200,
                                                     weights="all"),
    }
    for name, config in runs.items():
        estimate = cost.estimate(get_spec(name), config)
        assert estimate.seconds > 3600, (name, cost.summary(estimate))
        assert estimate.seconds > 30 * 60   # the default threshold to confirm
    assert "days" in cost.summary(cost.estimate(ex.SPEC, runs["extraction"]))
    assert loaded_models() == []


def test_a_spec_without_models_has_no_estimate():
    assert cost.estimate(get_spec("ngram-canary"), get_spec("ngram-canary").tiny_config()) is None


@pytest.mark.fresh_cache   # a domain reference already made costs nothing: the estimate says 0 s
@pytest.mark.parametrize("name", sorted(name for name, spec in all_specs().items() if spec.cost))
def test_every_estimated_spec_estimates_its_tiny_config(name, fixed_rate):
    spec = get_spec(name)
    estimate = cost.estimate(spec, spec.tiny_config())
    assert estimate.seconds > 0 and estimate.peak_bytes > 0 and estimate.parts
    assert cost.summary(estimate).startswith("about ")


@pytest.mark.fresh_cache   # the disk cache is the cache home's: this test's own
def test_the_rate_is_measured_once_and_cached_on_disk(monkeypatch):
    rate._MEASURED.clear()
    first = rate.matmul_rate("cpu", 4, 8, 16, 1e3)
    assert first > 0
    rate._MEASURED.clear()
    monkeypatch.setattr(rate, "_timed_passes", lambda *a: pytest.fail("measured again"))
    assert rate.matmul_rate("cpu", 4, 8, 16, 1e3) == first
    assert len(json.loads(cost.disk_cache._file().read_text())["rates"]) == 1


@pytest.mark.parametrize("now, factor", [
    (0.5, 1.0),     # a quiet machine
    (1.0, 1.0),     # every core taken by the run's own share
    (4.0, 8.0),     # a quarter of each core, and the threads' waits (the issue's 81.3x)
])
def test_a_busy_cpu_counts_its_load_once_as_the_share_of_a_core(monkeypatch, now, factor):
    monkeypatch.setattr(rate, "load_per_core", lambda: now)
    assert rate.contention() == pytest.approx(factor)
    # one thread waits on no other: the fair share alone
    assert rate.contention(threaded=False) == pytest.approx(max(1.0, now))


def test_the_rate_is_a_cores_speed_timed_by_the_threads_cpu_time(monkeypatch):
    """On the CPU the products are timed by the thread's CPU time, which the moments other
    processes take do not advance: with a CPU clock that ticks 1 ms per reading, a pass takes
    1 ms whatever the wall clock says."""
    ticks = iter(range(10**9))
    monkeypatch.setattr(rate.time, "thread_time", lambda: next(ticks) * 1e-3)
    rows, width, inner, count = 64, 96, 384, 4
    flops = 2 * rows * width * inner * count
    repeats = int(rate.FLOPS_PER_PASS // flops)
    assert rate._timed_passes("cpu", rows, width, inner, count) == pytest.approx(
        flops * repeats / 1e-3)
    assert rate._timed_ops("cpu") == pytest.approx(1e-3 / rate.OPS_PER_PASS)


def test_training_a_small_model_on_a_busy_cpu_pays_the_fair_share_not_the_threads_waits(
        monkeypatch):
    """DP fine-tuning of the demo (one thread) at a load of 4 per core gets a quarter of a core;
    the threads' waits (2x more) are not counted, the scoring of a large model's threads is."""
    import torch

    from core.cost.plan import Plan
    from core.cost.training import training

    monkeypatch.setattr(rate, "load_per_core", lambda: 4.0)
    monkeypatch.setattr(work, "matmul_rate", lambda *args, **kwargs: RATE)
    monkeypatch.setattr(work, "op_seconds", lambda device: 2e-5)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    small = sizes.ModelSize("small", parameters=500_000, tables=0, head=32_768, width=64,
                            inner=256, layers=2, heads=2, kv_width=64, vocab=512, context=128)
    large = replace(small, source="large", parameters=135_000_000)
    train = training(small, steps=10, batch=8, block=64, trainable=500_000, what="train")
    score = work.Work("score", "score", large, tokens=1e5, calls=100, rows=1024, length=64)
    plan = Plan(works=[train, score])
    (_, trained), (_, scored) = cost.priced("x", plan, "cpu").parts
    assert trained == pytest.approx(4.0 * work.seconds(train, "cpu"))
    assert scored == pytest.approx(8.0 * work.seconds(score, "cpu"))


@pytest.mark.parametrize("seconds, shown", [(0.2, "1 s"), (40, "40 s"), (720, "12 min"),
                                            (3.2 * 3600, "3.2 h"), (3 * 86400, "3.0 days")])
def test_durations_read_as_people_say_them(seconds, shown):
    assert cost.duration(seconds) == shown

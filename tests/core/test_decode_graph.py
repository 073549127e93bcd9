"""The static-cache decoding that generation replays as a CUDA graph on a GPU
(``core.models.decode_graph``), run eagerly on the CPU: what it relies on in transformers
(``StaticCache`` written at its running length, our 4-D mask and positions honoured) gives the
logits of the whole sequence, and generation through it draws from the density the eager path
draws from. The graph capture itself needs CUDA: ``bench.gpu``'s generation checks cover it."""

import copy
import dataclasses
import gc
import weakref

import numpy as np
import pytest
import torch
from scipy import stats
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from core.generation import sampling as generation
from core.generation.graphed import GraphedSampling, graph_runs, inverse_cdf_draw
from core.generation.sampling import generate
from core.models import decode_graph
from core.models import resolve_model
from core.models.decode_graph import StaticDecoder, graphable
from core.scoring import Sampler
from core.scoring.readouts import warped_logits

VOCAB = 50


def _gpt2():
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=2))


def _llama():  # SmolLM2's architecture: grouped-query attention, rotary positions
    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, max_position_embeddings=32))


@pytest.fixture(params=[_gpt2, _llama], ids=["gpt2", "llama"])
def model(request):
    torch.manual_seed(0)
    return request.param().eval()


def _last_logits(model, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids).logits[:, -1]


def _step(decoder: StaticDecoder, tokens: torch.Tensor) -> torch.Tensor:
    """Feed ``tokens`` at the next position, as a graphed step does: the logits after them."""
    decoder.ids.copy_(tokens.view(-1, 1))
    return decoder.advance()


@torch.inference_mode()
def test_prefill_then_steps_give_the_logits_of_the_whole_sequence_and_a_new_prefill_starts_over(model):
    ids = torch.randint(0, VOCAB, (3, 9), generator=torch.Generator().manual_seed(1))
    decoder = StaticDecoder(model, rows=3, max_len=12)
    for prompt in (5, 2):   # the second prefill reuses the cache from its start
        torch.testing.assert_close(decoder.prefill(ids[:, :prompt]), _last_logits(model, ids[:, :prompt]),
                                   rtol=1e-5, atol=1e-5)
        for t in range(prompt, 9):
            torch.testing.assert_close(_step(decoder, ids[:, t]), _last_logits(model, ids[:, : t + 1]),
                                       rtol=1e-5, atol=1e-5)


@torch.inference_mode()
def test_warm_up_steps_rewound_leave_the_next_step_as_it_was(model):
    """What ``capture`` does before recording: steps taken and rewound change nothing."""
    ids = torch.randint(0, VOCAB, (2, 6), generator=torch.Generator().manual_seed(2))
    decoder = StaticDecoder(model, rows=2, max_len=8)
    decoder.prefill(ids[:, :4])
    start = decoder.position.clone()
    for _ in range(2):
        decoder.rewind(start)
        _step(decoder, ids[:, 0])   # a token the real step overwrites
    decoder.rewind(start)
    torch.testing.assert_close(_step(decoder, ids[:, 4]), _last_logits(model, ids[:, :5]),
                               rtol=1e-5, atol=1e-5)
    assert int(decoder.position) == 5


def test_only_cuda_models_without_sliding_windows_are_graphed(model):
    assert not graphable(model, torch.device("cpu"))
    assert graphable(model, torch.device("cuda"))
    model.config.sliding_window = 4
    assert not graphable(model, torch.device("cuda"))


@pytest.fixture
def graphed_on_cpu(monkeypatch):
    """Generation takes the graphed path on the CPU, its steps run eagerly (no capture)."""
    monkeypatch.setattr(generation, "graphable", lambda model, device: True)
    monkeypatch.setattr(GraphedSampling, "record", lambda self: None)


def _sampler_density(lm, prompt: list[int], sampler: Sampler) -> np.ndarray:
    ids = torch.tensor([generation.context_ids(lm.tokenizer) + prompt])
    with torch.inference_mode():
        logits = lm.model(input_ids=ids).logits[:, -1].float()
    return torch.softmax(warped_logits(logits, sampler, torch.tensor(1.0)), -1)[0].double().numpy()


def test_the_graphed_path_draws_from_the_samplers_density_and_a_seed_repeats(tiny_lm_dir, graphed_on_cpu):
    """The whole-step draw (inverse transform over the vocabulary, on uniforms drawn up front)
    samples the density the eager path and the scoring engine use: the first tokens of 4,000
    rows against the model's own top-3 density, and every later token inside its top 3."""
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    sampler = Sampler(top_k=3)
    first = generate(lm, sampler, [[5, 6]] * 4000, max_new_tokens=1, batch_size=4000, seed=3)
    counts = np.bincount([s[-1] for s in first.samples if len(s) == 3], minlength=lm.card.vocab_size)
    density = _sampler_density(lm, [5, 6], sampler)
    assert set(np.flatnonzero(counts)) <= set(np.flatnonzero(density))
    kept = np.flatnonzero(density)
    assert stats.chisquare(counts[kept], density[kept] / density[kept].sum() * counts.sum()).pvalue > 1e-3
    runs = [generate(lm, sampler, [[5, 6], [7, 8]] * 2, max_new_tokens=12, batch_size=4, seed=s)
            for s in (3, 3, 4)]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0].samples, runs[1].samples))
    assert not all(np.array_equal(a, b) for a, b in zip(runs[0].samples, runs[2].samples))


def test_the_graphed_path_ends_each_sample_at_its_first_stop(tiny_lm_dir, graphed_on_cpu):
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    gen = generate(lm, Sampler(temperature=3.0), [[]] * 16, max_new_tokens=40, batch_size=16, seed=0)
    lengths = [len(s) for s in gen.samples]
    assert min(lengths) < max(lengths) and len(gen.samples) == 16
    assert all(not np.isin(s, generation.stop_ids(lm)).any() for s in gen.samples)
    assert gen.new_tokens == sum(min(n + 1, 40) for n in lengths)


def test_a_failed_capture_falls_back_to_eager_decoding_once(tiny_lm_dir, monkeypatch):
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    eager = generate(lm, Sampler(top_k=3), [[5]] * 4, max_new_tokens=6, batch_size=4, seed=1)
    monkeypatch.setattr(decode_graph, "_REFUSED", weakref.WeakSet())
    monkeypatch.setattr(generation, "graphable",
                        lambda model, device: model not in decode_graph._REFUSED)
    captures = []

    def failing(self):
        captures.append(1)
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(GraphedSampling, "record", failing)
    for _ in range(2):
        again = generate(lm, Sampler(top_k=3), [[5]] * 4, max_new_tokens=6, batch_size=4, seed=1)
        assert all(np.array_equal(a, b) for a, b in zip(eager.samples, again.samples))
    assert len(captures) == 1


def test_the_top_k_draw_samples_the_samplers_density_ties_included():
    """``_draw_top_k`` draws from softmax over T_k (the k largest and every logit tied with the
    k-th), exactly the density ``warped_logits`` gives; ties reaching past 2k fall back."""
    logits = torch.tensor([[3.0, 1.0, 2.0, 2.0, 0.5, -1.0, 0.0, 0.1, -2.0, -3.0, -4.0, -5.0]])
    k = 3   # T_3 = {0, 2, 3}; 2k = 6 kept, so the tie at 2.0 is inside
    generator = torch.Generator().manual_seed(0)
    draws = torch.cat([generation._draw_top_k(logits.expand(400, -1), k, generator)
                       for _ in range(50)])
    counts = np.bincount(draws.numpy(), minlength=12)
    expected = torch.softmax(warped_logits(logits, Sampler(top_k=k), torch.tensor(1.0)), -1)[0]
    assert set(np.flatnonzero(counts)) == {0, 2, 3}
    shares = expected[[0, 2, 3]].double().numpy()
    assert stats.chisquare(counts[[0, 2, 3]], shares / shares.sum() * counts.sum()).pvalue > 1e-3
    tied = torch.zeros((2, 12))   # every logit ties with the k-th: T_k is the whole vocabulary
    assert generation._draw_top_k(tied, k, generator) is None


@pytest.mark.parametrize("sampler, support", [(Sampler(top_k=3), {0, 2, 3}),
                                              (Sampler(top_k=5, top_p=0.8), {0, 2, 3})])
def test_the_inverse_cdf_draw_samples_the_samplers_density_ties_included(sampler, support):
    """``inverse_cdf_draw`` (what a graphed step draws with) gives softmax over the sampler's
    warped logits: T_k with the tie at the k-th kept, then the nucleus."""
    logits = torch.tensor([[3.0, 1.0, 2.0, 2.0, 0.5, -1.0, 0.0, 0.1, -2.0, -3.0, -4.0, -5.0]])
    uniforms = torch.rand((20_000,), generator=torch.Generator().manual_seed(0))
    draws = inverse_cdf_draw(logits.expand(len(uniforms), -1), sampler, torch.ones(1), uniforms)
    counts = np.bincount(draws.numpy(), minlength=12)
    expected = torch.softmax(warped_logits(logits, sampler, torch.tensor(1.0)), -1)[0].double().numpy()
    assert set(np.flatnonzero(counts)) == support == set(np.flatnonzero(expected))
    kept = sorted(support)
    assert stats.chisquare(counts[kept], expected[kept] / expected[kept].sum() * counts.sum()).pvalue > 1e-3


def test_a_model_that_generated_on_its_graphed_path_still_copies_and_unloads(tiny_lm_dir, graphed_on_cpu):
    """The recorded decoder kept for a model (``graph_runs``) holds it weakly: DP fine-tuning
    deep-copies a loaded model, and unloading one must free it."""
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    model = copy.deepcopy(lm.model)
    generate(dataclasses.replace(lm, model=model), Sampler(top_k=3), [[5]] * 2, max_new_tokens=4,
             batch_size=2, seed=0)
    assert graph_runs(model)
    copy.deepcopy(model)
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None

"""The engine's batching on large vocabularies: the head and the log-softmax run on chunks of the
scored positions (``engine._score_batch``), so no batch's whole logits are made and they no longer
bound its size. Every readout matches a float64 reference from the whole model's logits, whatever
the batch and chunk sizes; a model whose logits are not its head's output is run whole."""

import numpy as np
import pytest
import torch
from transformers import GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

import core.scoring.pass_size as budget
import core.scoring.engine as engine
from conftest import TINY_TEXTS
from core.models import LoadedModel, load_model
from core.models.tiny import train_tokenizer
from core.scoring import Moment, Sampler, clear_cache, context_ids, score_under_samplers

SAMPLER = Sampler(top_k=5, temperature=(3.0, 2.0, 0.7))
READOUTS = [None, SAMPLER, Sampler(temperature=2.0), Moment("mean"), Moment("variance")]
TEXTS = TINY_TEXTS + ["Ay.", " ".join(TINY_TEXTS * 2)]  # the last is longer than the context (64)
WINDOWS = [(64, 32), (40, 13)]  # the tiny model's context and its default stride; another


def _reference_logits(model, full: list[int], window: int, stride: int) -> torch.Tensor:
    """float64 logits (scored tokens, vocab) of context + tokens ``full`` by the sliding-window
    recipe: row j predicts ``full[j + 1]``, with the left context of the first window holding it."""
    rows, begin, done = [], 0, 1
    while True:
        end = min(begin + window, len(full))
        with torch.no_grad():
            z = model(torch.tensor([full[begin:end]])).logits[0, :-1].double()
        rows.append(z[len(z) - (end - done):])
        if end == len(full):
            return torch.cat(rows)
        done, begin = end, begin + stride


def _reference(z: torch.Tensor, targets: list[int], readout) -> np.ndarray:
    """``readout`` of each row of logits ``z`` whose next tokens are ``targets`` (float64)."""
    if isinstance(readout, Moment):
        logp = torch.log_softmax(z, -1)
        mean = (logp.exp() * logp).sum(-1)
        variance = (logp.exp() * (logp - mean[:, None]) ** 2).sum(-1)
        return (mean if readout.statistic == "mean" else variance).numpy()
    readout = readout or Sampler()
    z = z / torch.as_tensor(readout.temperatures(0, len(z)))[:, None]
    keep = torch.ones_like(z, dtype=torch.bool)
    if readout.top_k is not None:
        keep = z >= z.topk(readout.top_k, -1).values[:, -1:]
    index = torch.tensor(targets)[:, None]
    logp = z.gather(-1, index)[:, 0] - torch.logsumexp(z.masked_fill(~keep, -torch.inf), -1)
    return logp.masked_fill(~keep.gather(-1, index)[:, 0], -torch.inf).numpy()


def _check_against_reference(lm, ids, readouts, *, references=None, **options):
    """Every readout of every sequence as the whole model's logits give it (``references``:
    those logits, when already computed)."""
    window, stride = options.get("window") or 64, options.get("stride") or 32
    full = [context_ids(lm.tokenizer) + seq for seq in ids]
    references = references or [_reference_logits(lm.model, f, window, stride) for f in full]
    clear_cache()  # memory and disk: score again
    for readout, scores in zip(readouts, score_under_samplers(lm, ids, readouts, **options)):
        for s, z, f in zip(scores, references, full):
            np.testing.assert_allclose(s.logprobs, _reference(z, f[1:], readout), rtol=1e-5, atol=1e-5)


@pytest.fixture
def lm(tiny_lm_dir):
    return load_model(str(tiny_lm_dir), name="tiny", device="cpu")


@pytest.fixture
def forwarded(monkeypatch):
    """The shape (rows, length, width) of what each forward pass gave the engine."""
    shapes = []
    real = engine._forward

    def recording(model, input_ids, attention_mask):
        states = real(model, input_ids, attention_mask)
        shapes.append(tuple(states.shape))
        return states

    monkeypatch.setattr(engine, "_forward", recording)
    return shapes


@pytest.fixture(scope="module")
def references(tiny_lm_dir):
    """The whole model's logits of every text (context + tokens) under each of ``WINDOWS``."""
    model = GPT2LMHeadModel.from_pretrained(tiny_lm_dir).eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tiny_lm_dir)
    full = [context_ids(tokenizer) + seq for seq in tokenizer(TEXTS, add_special_tokens=False)["input_ids"]]
    return {setting: [_reference_logits(model, f, *setting) for f in full] for setting in WINDOWS}


@pytest.mark.parametrize("batch_size, chunk_rows", [(1, 5), (None, 7), (None, None)])
def test_every_readout_matches_the_whole_models_logits(lm, references, monkeypatch, forwarded,
                                                       batch_size, chunk_rows):
    if chunk_rows:  # chunks of a few positions, which cut across windows
        monkeypatch.setattr(budget, "CPU_LOGITS_BUDGET", chunk_rows * budget.vocab_size(lm) * 4 * 3)
        assert budget.chunk_rows(lm) == chunk_rows
    ids = lm.tokenizer(TEXTS, add_special_tokens=False)["input_ids"]
    assert len(ids[-1]) > 2 * 64
    for window, stride in WINDOWS:
        _check_against_reference(lm, ids, READOUTS, references=references[window, stride],
                                 batch_size=batch_size, window=window, stride=stride)
    assert {width for *_, width in forwarded} == {lm.model.config.n_embd}  # hidden states, not logits
    if batch_size is None:  # many windows per pass, up to the CPU's batch of tokens
        assert max(rows for rows, *_ in forwarded) >= budget.CPU_BATCH_TOKENS // 64
        assert all(rows * length <= budget.CPU_BATCH_TOKENS for rows, length, _ in forwarded)
    else:
        assert {rows for rows, *_ in forwarded} == {1}


class CappedLogits(GPT2LMHeadModel):
    """GPT-2 whose logits are soft-capped after its head, as Gemma 2's are."""

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        out.logits = 2.0 * torch.tanh(out.logits / 2.0)
        return out


def test_a_model_whose_logits_are_not_its_heads_output_is_run_whole(tiny_lm_dir, lm, forwarded):
    assert budget.head_splits(lm.model)
    capped = LoadedModel.in_memory("capped", CappedLogits.from_pretrained(tiny_lm_dir), lm.tokenizer)
    assert not budget.head_splits(capped.model)
    ids = lm.tokenizer(TEXTS[:3], add_special_tokens=False)["input_ids"]
    _check_against_reference(capped, ids, READOUTS)
    assert {width for *_, width in forwarded} == {budget.vocab_size(capped)}  # the logits


def _large_vocabulary_lm() -> LoadedModel:
    """A one-layer Llama, 32 wide, with SmolLM2's 49,152-token vocabulary."""
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=49_152, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
    return LoadedModel.in_memory("large vocabulary", LlamaForCausalLM(config),
                                 train_tokenizer(TINY_TEXTS, vocab_size=300))


def test_a_large_vocabulary_does_not_shrink_the_batches(forwarded):
    """The logits budget used to allow 113 tokens of a 49,152-token vocabulary per batch (one
    text at a time); now only chunks of logits exist, and a batch holds ``CPU_BATCH_TOKENS``."""
    lm = _large_vocabulary_lm()
    rng = np.random.default_rng(0)
    ids = [rng.integers(1, 49_152, 64).tolist() for _ in range(32)]
    [scores] = score_under_samplers(lm, ids, [None])
    per_batch = budget.CPU_BATCH_TOKENS // 65
    assert per_batch > 1 and budget.chunk_rows(lm) < per_batch * 64  # the head ran in chunks
    assert forwarded == [(per_batch, 65, 32)] * (32 // per_batch) + [(32 % per_batch, 65, 32)]
    for s, seq in list(zip(scores, ids))[:3]:
        expected = _reference(_reference_logits(lm.model, [0] + seq, 128, 64), seq, None)
        np.testing.assert_allclose(s.logprobs, expected, atol=1e-5)


def test_gpu_batches_are_sized_to_free_memory_and_activations(monkeypatch):
    lm = _large_vocabulary_lm()
    free = 8 * 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, 2 * free))
    on_gpu = LoadedModel(lm.name, lm.source, lm.model, lm.tokenizer, torch.device("cuda"), lm.card)
    per_token = 32 * 4 * budget.ACTIVATION_WIDTHS  # hidden size x float32 x widths
    assert budget.token_budget(on_gpu) == int(free * budget.GPU_FREE_FRACTION) // per_token
    logits_bound = int(free * budget.GPU_FREE_FRACTION) // (49_152 * 4 * 3)  # what it used to be
    assert budget.token_budget(on_gpu) > 100 * logits_bound
    assert budget.chunk_rows(on_gpu) == budget.GPU_CHUNK_BYTES // (49_152 * 12)
    on_gpu.model.to(torch.bfloat16)  # half the bytes per token
    assert budget.token_budget(on_gpu) == 2 * int(free * budget.GPU_FREE_FRACTION) // per_token


def test_bf16_weights_score_in_float32(lm):
    ids = lm.tokenizer(TEXTS[:4], add_special_tokens=False)["input_ids"]
    readouts = [None, SAMPLER, Moment("variance")]
    full = score_under_samplers(lm, ids, readouts)
    half_model = GPT2LMHeadModel(lm.model.config).to(torch.bfloat16)
    half_model.load_state_dict(lm.model.state_dict())
    half = LoadedModel.in_memory("bf16", half_model, lm.tokenizer)
    assert budget.head_splits(half.model)
    for ours, theirs in zip(score_under_samplers(half, ids, readouts), full):
        for a, b in zip(ours, theirs):
            assert a.logprobs.dtype == np.float32
            finite = np.isfinite(b.logprobs)
            np.testing.assert_allclose(a.logprobs[finite], b.logprobs[finite], rtol=0.02, atol=0.02)

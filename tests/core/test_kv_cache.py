"""The transformers KV-cache behaviour ``core.models.kv_cache`` relies on (differential rank's
beam search reads on from kept rows of the cache). A transformers upgrade that changes it fails
here, not as silently wrong scores."""

import pytest
import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from core.models.kv_cache import KVRows, forward_with_cache, growing_cache, keep_rows

VOCAB, LAYERS = 50, 2


def _gpt2():
    config = GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=LAYERS, n_head=2)
    return GPT2LMHeadModel(config), (2, 8)  # heads, head dim in the cache


def _llama():  # the architecture of SmolLM2, with grouped-query attention
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=32)
    return LlamaForCausalLM(config), (2, 4)


@pytest.fixture(params=[_gpt2, _llama], ids=["gpt2", "llama"])
def model(request):
    torch.manual_seed(0)
    model, shape = request.param()
    return model.eval(), shape


def _ids(rows: int, tokens: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (rows, tokens), generator=torch.Generator().manual_seed(seed))


@torch.inference_mode()
def test_the_cache_has_one_keys_values_pair_per_layer_in_rows_heads_tokens_dim_layout(model):
    model, (heads, dim) = model
    logits, rows = forward_with_cache(model, _ids(3, 5, 0), None)
    assert logits.shape == (3, 5, VOCAB)
    assert len(rows.layers) == LAYERS and len(rows) == 3 and rows.tokens == 5
    for keys, values in rows.layers:
        assert keys.shape == values.shape == (3, heads, 5, dim)
    cache = rows.to_cache()
    assert isinstance(cache, DynamicCache) and cache.get_seq_length() == 5
    assert all(torch.equal(layer.keys, k) and torch.equal(layer.values, v)
               for layer, (k, v) in zip(cache.layers, rows.layers))


@torch.inference_mode()
def test_reading_on_from_the_cache_equals_reading_the_whole_sequence(model):
    model, _ = model
    ids = _ids(3, 7, 1)
    full = model(input_ids=ids).logits
    first, rows = forward_with_cache(model, ids[:, :4], None)
    rest, extended = forward_with_cache(model, ids[:, 4:], rows)
    torch.testing.assert_close(torch.cat([first, rest], 1), full, rtol=1e-5, atol=1e-5)
    assert extended.tokens == 7 and rows.tokens == 4  # the rows read on from are left as they were
    whole = forward_with_cache(model, ids, None)[1]
    for (k, v), (wk, wv) in zip(extended.layers, whole.layers):
        torch.testing.assert_close(k, wk, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(v, wv, rtol=1e-5, atol=1e-5)


@torch.inference_mode()
def test_rows_taken_from_chunks_read_on_as_their_own_sequences(model):
    model, _ = model
    ids = _ids(5, 4, 2)
    chunks = [forward_with_cache(model, ids[part], None)[1] for part in (slice(0, 2), slice(2, 5))]
    parents = torch.tensor([4, 0, 0, 2])  # any order, repeats allowed, across both chunks
    kept = KVRows.cat(chunks).take(parents)
    assert len(kept) == 4 and len(chunks[1].take(slice(1, 3))) == 2
    before = [(k.clone(), v.clone()) for chunk in chunks for k, v in chunk.layers]
    nxt = _ids(4, 1, 3)
    logits, _ = forward_with_cache(model, nxt, kept)
    expected = model(input_ids=torch.cat([ids[parents], nxt], 1)).logits[:, -1:]
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    after = [(k, v) for chunk in chunks for k, v in chunk.layers]
    assert all(torch.equal(k, k0) and torch.equal(v, v0)  # the forward changed nothing in place
               for (k, v), (k0, v0) in zip(after, before))


@torch.inference_mode()
def test_rows_dropped_from_a_growing_cache_read_on_as_if_alone(model):
    model, _ = model
    ids = _ids(3, 6, 2)
    full = model(input_ids=ids).logits
    cache = growing_cache(model)
    model(input_ids=ids[:, :4], attention_mask=torch.ones(3, 4, dtype=torch.long),
          past_key_values=cache, use_cache=True)
    keep_rows(cache, torch.tensor([2, 0]))
    rest = model(input_ids=ids[[2, 0], 4:], attention_mask=torch.ones(2, 6, dtype=torch.long),
                 past_key_values=cache, use_cache=True).logits
    torch.testing.assert_close(rest, full[[2, 0], 4:], rtol=1e-5, atol=1e-5)
    assert cache.get_seq_length() == 6 and cache.layers[0].keys.shape[0] == 2

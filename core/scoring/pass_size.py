"""How much the scoring engine (``core.scoring.engine``) puts in one forward pass: windows per
batch, positions per chunk of the vocabulary head, and whether the head splits off the model's
body at all; sized from this device's memory (and, on the CPU, its caches)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import torch

ScoredModel = Any   # core.scoring.engine.ScoredModel (its model, card and device are read here)

MAX_BATCH = 64
# Windows per batch on a GPU, where the memory budget (``token_budget``) binds first. Every
# forward pass costs the host ~1,000 kernel launches for a 30-layer model (~35 ms on the H100
# machine's host, ``bench.gpu_profile``), as long as the H100 takes for ~16k tokens of
# SmolLM2-135M: batches of 64 short texts left it idle most of the time.
GPU_MAX_BATCH = 1024
# Bytes of float32 logits (x3 for copies) per chunk of positions on the CPU (and per batch for
# a model whose head does not split off). Small chunks stay in the CPU's caches: on
# bench.bench_scoring (whole batches then), 64 MB took 3.1-3.6 s against 4.4-5.0 s for 512 MB,
# 4.0 s for 32 MB and 4.7-4.9 s for 16 MB.
CPU_LOGITS_BUDGET = 64 * 2**20
# Window tokens per batch on the CPU, whose caches favour small batches: in CPU time (1 thread),
# 1,024 tokens beat 4,096 by 10-25% on bench.bench_scoring's model and on the demo (256-token
# texts), and 500-2,000 tokens were within 5% of each other on SmolLM2-135M.
CPU_BATCH_TOKENS = 1024
ACTIVATION_WIDTHS = 32  # hidden-sized vectors per token a forward pass holds at once, about
GPU_FREE_FRACTION = 0.25  # of the free GPU memory, for a batch's activations (or logits)
GPU_CHUNK_BYTES = 2**30  # of float32 logits (x3) per chunk of positions on a GPU

SPLIT_CACHE: weakref.WeakKeyDictionary[torch.nn.Module, bool] = weakref.WeakKeyDictionary()


def head_splits(model: torch.nn.Module) -> bool:
    """Whether the logits are the output embeddings (one linear layer) applied to the last
    hidden states of ``model.base_model``, as in GPT-2, Llama, Qwen, ... and not where they are
    scaled or capped afterwards (e.g. Gemma 2): checked once per model, on a 4-token probe."""
    if model not in SPLIT_CACHE:
        SPLIT_CACHE[model] = _split_probe(model)
    return SPLIT_CACHE[model]


def _split_probe(model: torch.nn.Module) -> bool:
    head, body = model.get_output_embeddings(), getattr(model, "base_model", model)
    if not isinstance(head, torch.nn.Linear) or body is model:
        return False
    ids = (torch.arange(4) % head.out_features).unsqueeze(0).to(head.weight.device)
    probe = dict(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    with torch.inference_mode():
        whole = model(**probe).logits
        try:
            split = head(body(**probe).last_hidden_state)
        except (AttributeError, TypeError):
            return False
    return split.shape == whole.shape and torch.allclose(split.float(), whole.float(), rtol=1e-3, atol=1e-3)


def is_oom(err: BaseException) -> bool:
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text


def vocab_size(lm: ScoredModel) -> int:
    return max(int(getattr(lm.model.config, "vocab_size", 0) or 0), lm.card.vocab_size)


def token_budget(lm: ScoredModel) -> int:
    """How many window tokens one batch may hold: on the CPU, ``CPU_BATCH_TOKENS``; on a GPU,
    as many as a fraction of its free memory holds, at about ``ACTIVATION_WIDTHS`` hidden-sized
    vectors each. A model whose head does not split off also holds the batch's whole logits
    (float32, x3 for copies), which then bound it instead (on the CPU, by their budget)."""
    splits, logits_per_token = head_splits(lm.model), vocab_size(lm) * 4 * 3
    if lm.device.type != "cuda":
        return CPU_BATCH_TOKENS if splits else max(1, min(CPU_BATCH_TOKENS, CPU_LOGITS_BUDGET // logits_per_token))
    per_token = logits_per_token
    if splits:
        head = lm.model.get_output_embeddings()
        per_token = head.in_features * head.weight.element_size() * ACTIVATION_WIDTHS
    return max(1, int(torch.cuda.mem_get_info(lm.device)[0] * GPU_FREE_FRACTION) // per_token)


def chunk_rows(lm: ScoredModel) -> int:
    """Positions per chunk, so that their float32 logits (x3 for the readouts' copies) fit in
    the CPU's logits budget, or ``GPU_CHUNK_BYTES``."""
    budget = GPU_CHUNK_BYTES if lm.device.type == "cuda" else CPU_LOGITS_BUDGET
    return max(1, budget // (vocab_size(lm) * 4 * 3))


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()

"""``bench.gpu``'s sections at the shapes of issue #29: decoding at large batches against the
memory-bound limit, and the model sizes users bring (~1B and ~8B Llama-style) end to end.

- ``decode``: ``core.generation.sampling.generate`` as the extraction attack runs it (top-k 40)
  on prompts of 32 random tokens with 256 new tokens, at batches of 256 and 1,024 on
  SmolLM2-135M's architecture. Generated tokens/s, against transformers' batched ``generate``
  on the same prompts in the same process, and as a share of the memory-bound limit: a decoding
  step must read every weight it multiplies and the KV cache of every row once, so at the
  device's bandwidth B the ``steps`` of a batch of ``rows`` take at least
  Σ_s (weights + rows · (P + s) · kv_bytes_per_token) / B (``decode_bound``).
- ``large``: for each large architecture, its bf16 weights are checked against the free GPU
  memory before anything is allocated (``core.models.limits.check_fits_on_gpu``, as loading a
  user's model does); then it is built on the device (timed apart), scores 256-token texts
  (tokens/s, share of the bf16 peak, ratio against the per-text loop), generates (tokens/s,
  share of the memory bound), is saved as a model folder and audited end to end from that folder
  (``core.audit``: extraction, user inference and membership inference, as a user runs it).

With ``--cpu`` the same code runs on the tiny architecture at tiny sizes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from transformers import LlamaConfig

from bench.bench_generation import NEUTRAL_GENERATION
from bench.bench_scoring_vocab import flops_per_token, per_text_loop
from bench.gpu_common import (ARCHITECTURES, Bench, Row, as_text, build, compiling,
                              first_and_steady, free, random_texts, timed)
from core.attacks.user_inference.samples import write_samples
from core.audit import audit
from core.generation.sampling import generate, stop_ids
from core.models import LoadedModel, unload_model
from core.models.checks import meta_model, model_bytes
from core.models.limits import check_fits_on_gpu
from core.models.loaded import default_name
from core.models.tiny import save_hf_folder
from core.scoring import Sampler, clear_cache, context_ids, score_token_ids

TOP_K = 40


@dataclass(frozen=True)
class ScaleSizes:
    decode_arch: str
    decode_batches: tuple[int, ...]
    prompt_tokens: int
    new_tokens: int
    large: tuple[str, ...]
    text_tokens: int
    large_texts: int
    loop_texts: int
    gen_batch: int
    gen_tokens: int
    audit_samples: int       # extraction samples, members + non-members, users
    audit_tokens: int


GPU_SCALE = ScaleSizes("smollm2-135m", (256, 1024), 32, 256, ("llama-1b", "llama-8b"), 256, 512,
                       16, 64, 128, 256, 64)
CPU_SCALE = ScaleSizes("tiny", (8,), 8, 16, ("tiny",), 64, 16, 4, 8, 16, 16, 16)


def scale_sizes(bench: Bench) -> ScaleSizes:
    return GPU_SCALE if bench.on_gpu else CPU_SCALE


def kv_bytes_per_token(model: torch.nn.Module) -> int:
    """Bytes of keys and values one token leaves in the cache, over every layer."""
    config = model.config
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    itemsize = next(model.parameters()).element_size()
    return config.num_hidden_layers * 2 * heads * head_dim * itemsize


def decode_bound(model: torch.nn.Module, rows: int, prompt: int, steps: int,
                 bandwidth: float) -> float:
    """Seconds ``steps`` decoding steps of ``rows`` rows after ``prompt`` tokens take at least
    at ``bandwidth`` bytes/s: each step reads the weights it multiplies (the embedding table
    only through the head) and every row's cache."""
    tables = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding))
    head = model.get_output_embeddings().weight
    weight_bytes = model_bytes(model) - tables * head.element_size() + head.numel() * head.element_size()
    cached = rows * sum(prompt + s for s in range(steps))
    return (steps * weight_bytes + cached * kv_bytes_per_token(model)) / bandwidth


def hf_generate(lm: LoadedModel, prompts: torch.Tensor, new_tokens: int) -> int:
    """The baseline: transformers' ``generate`` (its top-k warper) on the whole batch; tokens
    made, end-of-text included."""
    stops = stop_ids(lm)
    with torch.inference_mode():
        out = lm.model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts),
                                do_sample=True, max_new_tokens=new_tokens, top_k=TOP_K,
                                **NEUTRAL_GENERATION, eos_token_id=stops, pad_token_id=stops[0])
    made = 0
    for row in out[:, prompts.shape[1]:].cpu().numpy():
        ends = np.flatnonzero(np.isin(row, stops))
        made += int(ends[0]) + 1 if ends.size else len(row)
    return made


def _generation_row(bench: Bench, lm: LoadedModel, name: str, batch: int, prompt_tokens: int,
                    new_tokens: int, *, baseline: bool) -> Row:
    """Tokens/s of ``generate`` on ``batch`` prompts, its share of the memory bound and (with
    ``baseline``) transformers' ``generate`` on the same prompts."""
    device = bench.device
    prompts = random_texts(lm.card.vocab_size, batch, prompt_tokens, seed=4)
    with compiling(bench):
        first_s, seconds, ours = first_and_steady(device, lambda: generate(
            lm, Sampler(top_k=TOP_K), prompts, seed=0, batch_size=batch, max_new_tokens=new_tokens))
    rate = ours.new_tokens / seconds
    row = Row(name, str(device), rate, "tokens/s",
              extra={"batch": batch, "prompt_tokens": prompt_tokens, "new_tokens": new_tokens,
                     "generated": ours.new_tokens, "seconds": seconds,
                     "first_run_seconds": first_s, "compiled": bench.compile})
    if bench.bandwidth:
        steps = ours.new_tokens / batch  # the mean sample length, in steps
        bound = decode_bound(lm.model, batch, len(context_ids(lm.tokenizer)) + prompt_tokens,
                             round(steps), bench.bandwidth)
        row.extra |= {"bound_tokens_per_s": ours.new_tokens / bound,
                      "memory_bound_fraction": bound / seconds}
    if baseline:
        ids = torch.tensor([context_ids(lm.tokenizer) + p for p in prompts], device=device)
        hf_generate(lm, ids[:2], 4)  # warm-up
        base_s, made = timed(device, lambda: hf_generate(lm, ids, new_tokens))
        row.baseline, row.baseline_name = made / base_s, f"transformers generate (batch {batch})"
    row.check("every sample generated", len(ours.samples) == batch and not ours.stopped_early,
              f"{len(ours.samples)} of {batch} samples, {ours.new_tokens:,} tokens")
    return row


def decode(bench: Bench) -> list[Row]:
    """Generation at the issue's shape on the small architecture, at each batch size."""
    sizes = scale_sizes(bench)
    lm = build(sizes.decode_arch, bench.device, bench.dtype)
    rows = []
    for number, batch in enumerate(sizes.decode_batches):
        row = _generation_row(bench, lm, f"decode {sizes.decode_arch} batch {batch}", batch,
                              sizes.prompt_tokens, sizes.new_tokens, baseline=number == 0)
        row.hold(bench, "≥ 40% of the memory bound", row.extra.get("memory_bound_fraction"), 0.40)
        rows.append(row)
    return rows


def large(bench: Bench) -> list[Row]:
    """Each large architecture: memory check, load, scoring, generation and the audit."""
    rows = []
    for arch in scale_sizes(bench).large:
        rows += large_model(bench, arch)
        free(bench.device)
    return rows


def check_memory(bench: Bench, arch: str) -> int:
    """Bytes of ``arch``'s weights in the bench's dtype, refused (``UserError``) when they do not
    fit in the GPU's free memory, before anything is allocated."""
    config = LlamaConfig(**ARCHITECTURES[arch])
    needed = model_bytes(meta_model(config), bench.dtype)
    if bench.on_gpu:
        check_fits_on_gpu(bench.device, needed, arch)
    return needed


def large_model(bench: Bench, arch: str) -> list[Row]:
    """Scoring and generation rows of ``arch`` built on the device, then its audit's row."""
    sizes, device = scale_sizes(bench), bench.device
    needed = check_memory(bench, arch)
    load_s, lm = timed(device, lambda: build(arch, device, bench.dtype))
    texts = random_texts(lm.card.vocab_size, sizes.large_texts, sizes.text_tokens, seed=5)
    with compiling(bench):
        warm_s, _ = timed(device, lambda: score_token_ids(lm, texts[:2]))  # compiles
        engine_s, _ = timed(device, lambda: score_token_ids(lm, texts), before=clear_cache)
    per_text_loop(lm, texts[:2])
    loop_s, _ = timed(device, lambda: per_text_loop(lm, texts[: sizes.loop_texts]))
    rate = len(texts) * sizes.text_tokens / engine_s
    flops = flops_per_token(lm, sizes.text_tokens) * rate
    scoring = Row(f"scoring {arch}", str(device), rate, "tokens/s",
                  baseline=sizes.loop_texts * sizes.text_tokens / loop_s,
                  baseline_name="per-text HF loop",
                  extra={"parameters": lm.card.parameters, "weights_bytes": needed,
                         "load_seconds": load_s, "warm_up_seconds": warm_s, "texts": len(texts),
                         "tokens_per_text": sizes.text_tokens, "tflops": flops / 1e12,
                         "peak_fraction": flops / bench.peak if bench.peak else None})
    scoring.check("weights checked against free GPU memory before building", True,
                  f"{needed / 2**30:.1f} GiB; built in {load_s:.1f} s")
    scoring.hold(bench, "≥ 30% of the bf16 peak", scoring.extra["peak_fraction"], 0.30)
    generation = _generation_row(bench, lm, f"generation {arch}", sizes.gen_batch,
                                 sizes.prompt_tokens, sizes.gen_tokens, baseline=False)
    folder = bench.workdir / f"{arch}-folder"
    save_s, _ = timed(device, lambda: save_hf_folder(lm.model, lm.tokenizer, folder))
    del lm
    free(device)
    return [scoring, generation, audit_row(bench, arch, str(folder), save_s)]


def _audit_inputs(bench: Bench, arch: str) -> dict[str, str]:
    """Files of random texts: a corpus, users (10 samples each, every other one held in) and
    labelled members, as a user would upload them."""
    sizes, vocab = scale_sizes(bench), ARCHITECTURES[arch]["vocab_size"]
    texts = [as_text(t) for t in random_texts(vocab, 4 * sizes.audit_samples,
                                              sizes.audit_tokens, seed=6)]
    n = sizes.audit_samples
    users = [{"user_id": f"user{i // 10:04d}", "text": text, "member": (i // 10) % 2 == 0}
             for i, text in enumerate(texts[:n])]
    members = [{"text": text, "member": i % 2 == 0} for i, text in enumerate(texts[n: 2 * n])]
    files = {"corpus": "\n".join(texts[2 * n:]), "users": write_samples(users, "jsonl"),
             "members": write_samples(members, "jsonl")}
    paths = {}
    for role, content in files.items():
        path = bench.workdir / f"{arch}-{role}.{'txt' if role == 'corpus' else 'jsonl'}"
        path.write_text(content, encoding="utf-8")
        paths[role] = str(path)
    return paths


def audit_row(bench: Bench, arch: str, folder: str, save_s: float) -> Row:
    """The audit from the saved folder (its own reference: the speed is what is measured;
    loading both is one load of one source), seconds end to end, loading included."""
    sizes = scale_sizes(bench)
    settings = (f"extraction.n_samples={sizes.audit_samples}",
                f"extraction.tokens={sizes.audit_tokens}",
                f"extraction.batch_size={sizes.audit_samples}",
                "user-inference.bootstrap=100", "mia.bootstrap=100")
    config = audit.AuditConfig(model=folder, reference=folder, device=bench.device.type,
                               attacks=("extraction", "user-inference", "mia"),
                               settings=settings, **_audit_inputs(bench, arch))
    started = time.perf_counter()
    try:
        result = audit.run(config)
    finally:
        unload_model(default_name(folder))
    seconds = time.perf_counter() - started
    row = Row(f"audit {arch}", str(bench.device), seconds, "s",
              extra={"save_seconds": save_s, "settings": list(settings),
                     "attacks": {e.attack: {"status": e.status, "seconds": e.seconds,
                                            "headline": e.headline} for e in result.entries}})
    row.check("every attack done", all(e.status == "done" for e in result.entries)
              and len(result.entries) == 3,
              "; ".join(f"{e.attack}: {e.status} in {e.seconds:.1f} s"
                        + (f" ({e.error})" if e.error else "") for e in result.entries))
    return row

"""What the sections of ``bench.gpu`` share: Llama-style models built from their configs with
random weights (the speed does not depend on the weights, and no weights need to travel),
word-level tokenizers whose tokens are the model's ids (texts of exactly n tokens, no tokenizer
download), the sizes of a GPU and of a CPU run, the assumed bf16 peaks, the tolerances of the
checks, the timer and the result rows.

Architectures (``ARCHITECTURES``): SmolLM2-135M's (576 wide, 30 layers, 9 heads / 3 KV heads,
49,152 tokens, tied embeddings), a ~1B one of Llama-3.2-1B's shape (2,048 wide, 16 layers,
32 heads / 8 KV heads, MLP 8,192, vocabulary 128,256, tied: 1.24 B parameters; its RoPE scaling
is left out, which changes no FLOP), a ~8B one of Llama-3.1-8B's shape (4,096 wide, 32 layers,
32 / 8 heads, MLP 14,336, untied: 8.03 B parameters) and a tiny one (2 layers, 64 wide, initialised wider so
that its texts' log-probs differ enough to be ranked) for the CPU run.
"""

from __future__ import annotations

import copy
import gc
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from transformers import AutoModelForCausalLM, LlamaConfig
from transformers.utils import logging as transformers_logging

from bench.bench_diffrank import word_tokenizer
from core.models import LoadedModel, load_model
from core.models.tiny import save_hf_folder
from core.scoring.fused import ENV

ARCHITECTURES = {
    "smollm2-135m": dict(vocab_size=49_152, hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         max_position_embeddings=8192, rope_theta=100_000.0, rms_norm_eps=1e-5,
                         initializer_range=0.041666666666666664, tie_word_embeddings=True),
    "llama-1b": dict(vocab_size=128_256, hidden_size=2048, intermediate_size=8192,
                     num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                     max_position_embeddings=131_072, rope_theta=500_000.0, rms_norm_eps=1e-5,
                     initializer_range=0.02, tie_word_embeddings=True),
    "llama-8b": dict(vocab_size=128_256, hidden_size=4096, intermediate_size=14_336,
                     num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                     max_position_embeddings=131_072, rope_theta=500_000.0, rms_norm_eps=1e-5,
                     initializer_range=0.02, tie_word_embeddings=False),
    "tiny": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                 initializer_range=0.1, tie_word_embeddings=True),
}

# Dense bf16 tensor-core peaks (TFLOP/s, no sparsity) by a piece of torch.cuda.get_device_name(),
# first match wins: NVIDIA's data sheets.
BF16_PEAK_TFLOPS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0),
                    ("H200", 989.0), ("A100", 312.0))


# Memory bandwidths (TB/s) by the same pieces of the name: NVIDIA's data sheets (the A100's is
# the 80 GB SXM's).
HBM_TBPS = (("H100 PCIe", 2.0), ("H100 NVL", 3.9), ("H100", 3.35), ("H200", 4.8), ("A100", 2.04))


def _by_name(device_name: str, table: tuple[tuple[str, float], ...]) -> float | None:
    for piece, value in table:
        if piece.lower() in device_name.lower():
            return value * 1e12
    return None


def bf16_peak(device_name: str) -> float | None:
    """The dense bf16 peak in FLOP/s this device name is assumed to have (None: unknown)."""
    return _by_name(device_name, BF16_PEAK_TFLOPS)


def hbm_bandwidth(device_name: str) -> float | None:
    """The memory bandwidth in bytes/s this device name is assumed to have (None: unknown)."""
    return _by_name(device_name, HBM_TBPS)


@dataclass(frozen=True)
class Sizes:
    """How big each section is: ``GPU_SIZES`` on a CUDA device, ``CPU_SIZES`` on the CPU (the
    same code paths, small enough to run in seconds)."""

    small: str                 # architecture of the ratios, generation, attacks and DP
    large: str | None          # architecture of the roofline (None: none)
    text_tokens: int           # tokens per scored text
    engine_texts: int
    loop_texts: int            # texts of the per-text baselines (timed on fewer, as a rate)
    check_texts: int           # texts compared against the float32 CPU copy
    gen_samples: int
    gen_tokens: int
    gen_baseline_samples: int
    users: int
    user_tokens: int           # tokens per user sample
    baseline_users: int
    diffrank_length: int
    diffrank_beam: int
    ngram_models: int
    ngram_bootstrap: int
    dp_steps: int
    dp_batch: int
    dp_block: int
    samples_per_user: int = 10


GPU_SIZES = Sizes(small="smollm2-135m", large="llama-1b", text_tokens=256, engine_texts=1024,
                  loop_texts=64, check_texts=8, gen_samples=256, gen_tokens=128,
                  gen_baseline_samples=8, users=1000, user_tokens=128, baseline_users=20,
                  diffrank_length=3, diffrank_beam=256, ngram_models=100_000,
                  ngram_bootstrap=100, dp_steps=10, dp_batch=32, dp_block=64)
CPU_SIZES = Sizes(small="tiny", large=None, text_tokens=64, engine_texts=48, loop_texts=12,
                  check_texts=6, gen_samples=16, gen_tokens=24, gen_baseline_samples=4,
                  users=24, user_tokens=24, baseline_users=4, diffrank_length=3,
                  diffrank_beam=32, ngram_models=2000, ngram_bootstrap=100, dp_steps=4,
                  dp_batch=8, dp_block=48)


def build(arch: str, device: torch.device, dtype: torch.dtype, *, seed: int = 0) -> LoadedModel:
    """A random-weight ``arch`` on ``device`` in ``dtype`` (initialised there, so a 1B model
    never waits on the CPU), with a word-level tokenizer of its whole vocabulary."""
    # no pad id: it would zero the embedding of token 0, the context token every text starts
    # with (its residual stream then stays 0 and 30 layers blow its gradient up to NaN)
    config = LlamaConfig(**ARCHITECTURES[arch], bos_token_id=0, eos_token_id=0)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config)
    return LoadedModel.in_memory(f"{arch}-seed{seed}", model.to(dtype),
                                 word_tokenizer(config.vocab_size))


def float32_copy(lm: LoadedModel) -> LoadedModel:
    """The same weights upcast to float32 on the CPU: the reference the device is checked against."""
    model = copy.deepcopy(lm.model).to("cpu", torch.float32)
    return LoadedModel.in_memory(lm.name + "@cpu-float32", model, lm.tokenizer)


def saved_pair(arch: str, folder: Path, dtype: torch.dtype) -> tuple[str, str]:
    """Two random-weight ``arch`` (seeds 0 and 1) saved as model folders (built on the CPU in
    ``dtype``): the target and reference of user inference, the before and after of
    differential rank, loaded by the attacks through ``core.models`` like a user's models."""
    transformers_logging.disable_progress_bar()  # as core.models.loaders does
    folders = []
    for seed in (0, 1):
        path = folder / f"{arch}-seed{seed}"
        if not (path / "model.safetensors").exists():
            lm = build(arch, torch.device("cpu"), dtype, seed=seed)
            save_hf_folder(lm.model, lm.tokenizer, path)
        folders.append(str(path))
    return folders[0], folders[1]


def load_named(folder: str, device: torch.device, dtype: torch.dtype) -> str:
    """Load ``folder`` on ``device`` in ``dtype`` under a name the attacks take; that name."""
    name = f"{Path(folder).name}@{device.type}-{dtype_name(dtype)}"
    load_model(folder, name=name, device=device.type, dtype=dtype_name(dtype))
    return name


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def random_texts(vocab: int, n: int, tokens: int, *, seed: int) -> list[list[int]]:
    """``n`` sequences of ``tokens`` random ids (1..vocab-1: 0 is end-of-text)."""
    rng = np.random.default_rng(seed)
    return rng.integers(1, vocab, (n, tokens)).tolist()


def as_text(ids: list[int]) -> str:
    """The text a word-level tokenizer reads as exactly ``ids``."""
    return " ".join(f"w{i}" for i in ids)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, function: Callable, *, repeats: int = 1,
          before: Callable[[], None] = lambda: None) -> tuple[float, object]:
    """Best-of-``repeats`` seconds of ``function()`` (``before()`` untimed before each run,
    the device synchronised around it) and its last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        before()
        synchronize(device)
        start = time.perf_counter()
        result = function()
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best, result


def compiling(bench: "Bench"):
    """Within: the scoring engine compiles whatever the job's size (``LEAKAGE_LAB_COMPILE=1``)
    when the run compiles at all (not ``--no-compile``), so a row measures its steady state;
    the jobs outside (the audit) keep the default, ``auto``."""
    return mock.patch.dict(os.environ, {ENV: "1" if bench.compile else "0"})


def first_and_steady(device: torch.device, function: Callable) -> tuple[float, float, object]:
    """Seconds of ``function()``'s first run (recording graphs and compiling included), of its
    second (the steady state), and the second's result."""
    first, _ = timed(device, function)
    seconds, result = timed(device, function)
    return first, seconds, result


def free(device: torch.device) -> None:
    """Release what the last section left on the device."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class Tolerance:
    """How far log-probabilities computed in a dtype may be from the float32 ones (nats)."""

    mean_abs: float   # mean |Δ log p| over the tokens compared
    max_abs: float    # |Δ log p| of any one token
    text_mean: float  # |Δ| of a text's mean log-prob: texts further apart keep their order


# float32: batching and padding move SmolLM2's log-probs by up to ~1e-4 of |log p| ≈ 11
# (bench_scoring_vocab). bf16 keeps 8 significant bits and every layer's residual stream is
# rounded to them, so the error grows with depth: the same weights in bf16 vs float32 (CPU)
# differed per token by 0.072 on average, 0.33 at the 99th percentile and 0.62 at most on
# SmolLM2-135M's architecture (2,048 tokens, log p ≈ -11 ± 1), by 0.027 / 0.09 / 0.13 on the
# ~1B one (384 tokens), and per text (mean log-prob) by at most 0.009. Two bf16 computations
# (batched, and one text at a time) may each be that far off, so the bounds leave √2 of that
# and more. A misaligned target or a wrong mask moves log p by ~1 nat on average on these models.
TOLERANCES = {torch.float32: Tolerance(1e-3, 1e-2, 1e-3),
              torch.bfloat16: Tolerance(0.2, 2.0, 0.05),
              torch.float16: Tolerance(0.2, 2.0, 0.05)}


def order_agrees(ours: np.ndarray, reference: np.ndarray, gap: float) -> tuple[bool, int]:
    """Whether every pair whose ``reference`` values differ by more than ``gap`` is in the same
    order in ``ours``; and how many such pairs there are."""
    i, j = np.triu_indices(len(reference), 1)
    apart = np.abs(reference[i] - reference[j]) > gap
    same = np.sign(ours[i] - ours[j]) == np.sign(reference[i] - reference[j])
    return bool(same[apart].all()), int(apart.sum())


def compare_logprobs(row: Row, what: str, ours: list[np.ndarray], reference: list[np.ndarray],
                     tolerance: Tolerance, *, rank: bool = False) -> None:
    """Check per-token log-probs against a reference: mean and max |Δ|, each text's mean, and
    (``rank``) the order of the texts' means wherever they are further apart than the noise."""
    diff = np.abs(np.concatenate([a - b for a, b in zip(ours, reference)]))
    row.check(f"{what}: per-token |Δ log p|", diff.mean() <= tolerance.mean_abs
              and diff.max() <= tolerance.max_abs,
              f"mean {diff.mean():.2g} (≤ {tolerance.mean_abs:g}), max {diff.max():.2g} "
              f"(≤ {tolerance.max_abs:g}) over {diff.size:,} tokens")
    means = np.array([a.mean() for a in ours]), np.array([b.mean() for b in reference])
    worst = float(np.abs(means[0] - means[1]).max())
    row.check(f"{what}: per-text mean log p", worst <= tolerance.text_mean,
              f"max |Δ| {worst:.2g} (≤ {tolerance.text_mean:g}) over {len(ours)} texts")
    if rank:
        agrees, pairs = order_agrees(*means, 2 * tolerance.text_mean)
        row.check(f"{what}: ranking of the texts", agrees,
                  f"{pairs} pairs further apart than {2 * tolerance.text_mean:g} keep their order")


@dataclass(frozen=True)
class Bench:
    """Where and how big a run is: ``workdir`` is a scratch folder (models, data, lab home)."""

    device: torch.device
    dtype: torch.dtype
    sizes: Sizes
    peak: float | None          # dense bf16 FLOP/s (None: unknown, or the CPU)
    workdir: Path
    bandwidth: float | None = None  # memory bytes/s (None: unknown, or the CPU)
    compile: bool = True        # throughput rows on fused kernels (core.scoring.fused)

    @property
    def on_gpu(self) -> bool:
        return self.device.type == "cuda"

    @property
    def tolerance(self) -> Tolerance:
        return TOLERANCES[self.dtype]


@dataclass
class Row:
    """One line of the summary: a figure of ours, the same figure of its baseline, the bar it
    is held to (GPU only) and the checks of its numbers (``ok``: all passed)."""

    name: str
    device: str
    figure: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    bar: str = ""                      # e.g. "ratio >= 20x" (empty: none)
    bar_value: float | None = None     # what is held to it
    met: bool | None = None            # None: no bar here (none on the CPU)
    checks: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    error: str = ""

    @property
    def ratio(self) -> float | None:
        return self.figure / self.baseline if self.baseline else None

    @property
    def ok(self) -> bool:
        return not self.error and all(c["passed"] for c in self.checks)

    def check(self, what: str, passed: bool, detail: str = "") -> None:
        self.checks.append({"check": what, "passed": bool(passed), "detail": detail})

    def hold(self, bench: Bench, bar: str, value: float | None, at_least: float) -> None:
        """Hold ``value`` to ``bar`` (value ≥ ``at_least``), on a GPU only (the bars are
        about GPUs); a value that cannot be known (None: an unknown peak) meets nothing."""
        if bench.on_gpu:
            self.bar, self.bar_value = bar, value
            self.met = None if value is None else bool(value >= at_least)

    def to_json(self) -> dict:
        """The row as JSON-ready values (a figure a failed section has none of is null)."""
        figure = self.figure if math.isfinite(self.figure) else None
        return asdict(self) | {"figure": figure, "ratio": self.ratio, "ok": self.ok}

"""The types of an extraction run: its config (Carlini et al.'s defaults), its candidates and its
result, and the constants other attacks share (the model field's help)."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Literal

from core.attacks.inextractability.probabilistic import RANK_THRESHOLD, ProbabilisticExtraction
from core.calibration.config import DomainCalibration, domain_sample_param, domain_steps_param
from core.calibration.public import PublicMark, PublicRows, public_rows_param, public_sample_param
from core.chat import template_param
from core.readers.data import FORMATS_HELP
from core.errors import UserError
from core.generation.sampling import decaying_schedule
from core.models import reference_or_base
from core.scoring import Sampler
from core.specs import MODEL_HELP, check_params, param

Strategy = Literal["top-n", "temperature", "prefix", "chat"]
STRATEGIES: tuple[str, ...] = typing.get_args(Strategy)
SAME_TOKENS = "the reference metric compares the log-probabilities of the same tokens"


@dataclass(frozen=True)
class ExtractionConfig:
    """Carlini et al.'s defaults. No reference skips the reference metric; no corpus skips the
    verification."""

    model: str = param("", label="target model", help=f"the model to extract from: {MODEL_HELP}",
                       path="model")
    reference: str | None = param(None, path="model", label="reference model",
                                  help="a smaller or earlier model with the same tokenizer, for "
                                       "the reference metric; none skips it")
    strategies: tuple[Strategy, ...] = param(
        ("top-n",), flags=("--strategy",), label="generation strategies",
        help="top-n: n-most-likely sampling; temperature: decays from the starting temperature "
             "to 1; prefix: after the first tokens of a random document of the prefix file; "
             "chat: top-n replies to the chat template's generation prompts of the chat "
             "prompts (a chat fine-tune)")
    n_samples: int = param(1000, ge=1, le=500_000, flags=("--n",), label="samples per strategy",
                           help="samples generated per strategy")
    tokens: int = param(256, ge=1, le=4096, label="tokens per sample (at most)",
                        help="tokens per sample at most (fewer when the model's context is "
                             "shorter)")
    top_n: int = param(40, ge=1, le=100_000, label="n of top-n sampling",
                       help="n of top-n sampling (top-n and prefix strategies)")
    temperature_start: float = param(10.0, ge=1.0, le=100.0, label="starting temperature",
                                     help="decaying temperature: from this down to 1 ...")
    decay_tokens: int = param(20, ge=1, le=4096, help="... over the first this many tokens",
                              page="advanced")
    prefixes: str = param("", path="data", label="prefix documents",
                          help=f"the prefix strategy's documents: {FORMATS_HELP}")
    chat_prompts: str = param("", path="data", label="chat prompts",
                              help="the chat strategy's prompts: a fine-tuner's rows (the "
                                   "conversation before each trained reply) or plain texts (one "
                                   "user message each); empty: the training corpus. "
                                   + FORMATS_HELP)
    chat_template: str = template_param()
    prefix_min_tokens: int = param(5, ge=1, le=4096, help="shortest prefix (tokens)",
                                   page="advanced")
    prefix_max_tokens: int = param(10, ge=1, le=4096, help="longest prefix (tokens)",
                                   page="advanced")
    window: int = param(50, ge=1, le=4096, label="sliding window (tokens)",
                        help="tokens of the sliding window of the window metric")
    top_k: int = param(100, ge=1, le=10_000, label="candidates per ranking (top-k)",
                       help="candidates kept per (strategy, metric)")
    dedup: bool = param(True, label="remove near-duplicates (trigram overlap)",
                        help="drop a candidate sharing half its word trigrams with a better one")
    corpus: str = param("", path="data", label="training corpus",
                        help=f"the training data to verify candidates against (empty: no "
                             f"verification): {FORMATS_HELP}")
    min_span_tokens: int = param(16, ge=1, le=4096, flags=("--min-span",),
                                 label="verbatim span that counts as memorised (tokens)",
                                 help="tokens of a corpus document in a row that make a "
                                      "candidate memorised: 16 can match a short secret (a "
                                      "16-digit number is 16 tokens where digits are split) and "
                                      "rarely matches by chance; Carlini et al. 2022 use 50 on "
                                      "long web documents")
    batch_size: int = param(64, ge=1, le=4096, help="samples generated per batch")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the sampling and the prefixes")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the models",
                                                   page="advanced")
    track: tuple[str, ...] = param(
        (), label="phrases to track", widget="text_area",
        help="phrases (planted secrets, canaries, a secret's prompt) to look for in the "
             "rankings: each gets where it occurs verbatim, as strategy/metric #rank")
    rank_threshold: int = param(RANK_THRESHOLD, ge=1, le=1_000_000, label="rank threshold m",
                                help="b of a memorised span: a token of rank r ≤ m costs log2 r "
                                     "bits (the attacker tries the model's top m in order), "
                                     "else −log2 p (Liu, Evans & Xiong 2026)", page="advanced")
    domain_sample: str = domain_sample_param()   # the reference model: its domain reference
    public_sample: str = public_sample_param()
    public_rows: PublicRows = public_rows_param()
    domain_steps: int = domain_steps_param()

    def __post_init__(self):
        check_params(self)
        if any(not phrase.strip() for phrase in self.track):
            raise UserError("a phrase to track is empty: name the phrase, or a part of it")
        if not self.model.strip():
            raise UserError(f"choose a target model (--model): {MODEL_HELP}")
        object.__setattr__(self, "reference", reference_or_base(self.model, self.reference, unset=None))
        if self.reference is not None and not self.reference.strip():
            object.__setattr__(self, "reference", None)
        if self.domain_sample.strip() and self.reference is None:
            raise UserError("a public in-domain sample calibrates the reference model: choose "
                            "one (--reference), e.g. the model before fine-tuning")
        object.__setattr__(self, "strategies", tuple(dict.fromkeys(self.strategies)))
        if not self.strategies:
            raise UserError(f"choose at least one generation strategy: {', '.join(STRATEGIES)}")
        if "prefix" in self.strategies and not self.prefixes.strip():
            raise UserError("the prefix strategy needs a file of prefix documents "
                            "(--prefixes FILE)")
        if "chat" in self.strategies and not (self.chat_prompts or self.corpus).strip():
            raise UserError("the chat strategy needs prompts: a fine-tuner's rows or user "
                            "messages (--chat-prompts FILE), or a training corpus of "
                            "conversations (--corpus)")
        if self.prefix_max_tokens < self.prefix_min_tokens:
            raise UserError("the longest prefix must be at least the shortest one")

    def sampler(self, strategy: str) -> Sampler:
        if strategy == "temperature":
            return Sampler(temperature=decaying_schedule(self.temperature_start, self.decay_tokens))
        return Sampler(top_k=self.top_n)

    def describe_sampler(self, strategy: str) -> str:
        """The sampling scheme of ``strategy``, in words."""
        if strategy == "temperature":
            return (f"temperature {self.temperature_start:g} → 1 over the first "
                    f"{self.decay_tokens} tokens, then 1")
        return f"top-k {self.top_n}, temperature 1"


@dataclass
class Candidate:
    """One generated sample and its scores (token heat map only for ranked candidates)."""

    id: int
    strategy: str
    text: str
    n_tokens: int
    prompt_tokens: int
    perplexity: float
    reference_perplexity: float | None
    lowercase_perplexity: float
    window_perplexity: float
    zlib_bits: int
    scores: dict[str, float]
    prompt: str = ""                  # chat: the rendered prompt the reply (text) answers
    pii: list[str] = field(default_factory=list)   # "kind: value" in what was generated
    memorized: bool | None = None     # None: not verified
    span: str | None = None
    span_tokens: int = 0
    k_eidetic: int = 0
    tokens: list[str] | None = None
    token_diff: list[float] | None = None  # log p_target − log p_reference per token (or log p_target)
    public: PublicMark | None = None   # ranked candidates, with a public sample


@dataclass
class Extractability(ProbabilisticExtraction):
    """How extractable a memorised span (after the text before it in its candidate) or a tracked
    phrase (from the start of a sample) is under ``strategy``'s sampling scheme: p_z and the
    samples n it needs (Hayes et al. 2025), and b of the whole span in bits (Liu et al. 2026)."""

    b: float = 0.0
    strategy: str = ""
    candidate: int | None = None   # the candidate holding the span (None: a tracked phrase)


@dataclass
class PiiFound:
    """One personal-data value the samples hold (``core.pii``)."""

    kind: str
    value: str
    candidates: list[int]
    in_training: bool | None     # None: no corpus to check against


@dataclass
class ExtractionResult:
    model: str
    reference: str | None
    metrics: list[str]
    strategies: list[str]
    candidates: list[Candidate]
    rankings: dict[str, dict[str, list[int]]]        # strategy -> metric -> candidate ids, best first
    precision: dict[str, dict[str, float | None]]    # empty without a corpus
    corpus: str | None
    min_span_tokens: int
    generated: dict[str, int] = field(default_factory=dict)   # samples per strategy
    new_tokens: int = 0
    generation_seconds: float = 0.0
    tokens_per_s: float = 0.0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    stopped_early: bool = False
    calibration: DomainCalibration = field(default_factory=DomainCalibration)
    tracked: dict[str, list[str]] = field(default_factory=dict)   # phrase -> "strategy/metric #rank"
    extractability: list[Extractability] = field(default_factory=list)   # memorised spans first
    extractability_scheme: str = ""   # the sampling scheme of p_z (each strategy's) and m of b
    replies: list[Extractability] = field(default_factory=list)   # chat: each trained reply's
    pii: list[PiiFound] = field(default_factory=list)   # training data's first

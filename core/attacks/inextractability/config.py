"""The config and result of ``inextractability`` (``core.attacks.inextractability``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core import chat
from core.attacks.inextractability.probabilistic import RANK_THRESHOLD, ProbabilisticExtraction
from core.bounds import training_run
from core.calibration.public import PublicMark, PublicRows, public_rows_param, public_sample_param
from core.readers.data import FORMATS_HELP
from core.errors import UserError
from core.scoring import Sampler
from core.specs import MODEL_HELP, check_params, param


@dataclass(frozen=True)
class InextractabilityConfig:
    """A model, the protected texts (a corpus and/or texts), phrases and prefix/suffix pairs;
    the paper's defaults l = 50, m = 20 (Liu, Evans & Xiong 2026); the sampling scheme of p_z."""

    model: str = param("", label="target model", help=f"the model to measure: {MODEL_HELP}",
                       path="model")
    corpus: str = param("", path="data", label="protected texts",
                        help=f"the texts whose extraction cost is measured: {FORMATS_HELP}")
    mask: chat.MaskName = chat.mask_param()   # of a fine-tuner's rows (core.chat)
    chat_template: str = chat.template_param()
    texts: tuple[str, ...] = param((), flags=("--text",), widget="text_area",
                                   help="more texts to measure, besides (or instead of) the corpus")
    window: int = param(50, ge=1, le=4096, flags=("--l",), label="window l (tokens)",
                        help="the extracted span's length l: every l-token window of a text")
    rank_threshold: int = param(RANK_THRESHOLD, ge=1, le=1_000_000, flags=("--m",),
                                label="rank threshold m",
                                help="a token of rank r ≤ m costs log2 r bits (the attacker tries "
                                     "the model's top m in order), else −log2 p")
    phrases: tuple[str, ...] = param((), flags=("--phrase",), widget="text_area",
                                     help="phrases measured whole from the start of a text (a "
                                          "canary): b and p_z of each")
    prefixes: tuple[str, ...] = param((), flags=("--prefix",), widget="verbatim_lines",
                                      help="prompts of the prefix/suffix pairs, one per suffix")
    suffixes: tuple[str, ...] = param((), flags=("--suffix",), widget="verbatim_lines",
                                      help="targets of the pairs: b and p_z of each suffix after "
                                           "its prefix")
    reference: str = param("", path="model", label="reference model (prior)",
                           help="optional: a model not trained on the texts (the base before "
                                "fine-tuning, same tokenizer): each phrase's and pair's prior "
                                "p0, the bits learnt since, and L(p0) beside them")
    temperature: float = param(1.0, gt=0.0, le=100.0, help="p_z's sampling temperature")
    top_k: int = param(0, ge=0, le=1_000_000, label="top-k", help="p_z's top-k (0: none)")
    top_p: float = param(1.0, gt=0.0, le=1.0, label="top-p", help="p_z's nucleus (1: none)")
    probability: float = param(0.5, gt=0.0, lt=1.0, label="discovery probability",
                               help="n is the fewest samples that find a suffix with this "
                                    "probability: 1 − (1 − p_z)^n ≥ it")
    top: int = param(20, ge=1, le=10_000, label="records shown",
                     help="the records with the smallest b that the result lists")
    batch_size: int = param(32, ge=1, le=4096, help="texts per forward pass", page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the model",
                                                   page="advanced")
    sigma: float = training_run.sigma_param()   # with q and steps: L(p0) for a b-bit secret
    q: float = training_run.q_param()
    steps: int = training_run.steps_param()
    public_sample: str = public_sample_param()
    public_rows: PublicRows = public_rows_param()

    def __post_init__(self):
        check_params(self)
        if not self.model.strip():
            raise UserError(f"choose a model (--model): {MODEL_HELP}")
        if not (self.corpus.strip() or self.texts or self.phrases or self.suffixes):
            raise UserError("give texts to measure: a corpus (--corpus), texts (--text), "
                            "phrases (--phrase) or prefix/suffix pairs (--prefix, --suffix)")
        if len(self.prefixes) != len(self.suffixes):
            raise UserError(f"give one prefix per suffix ({len(self.prefixes)} prefixes, "
                            f"{len(self.suffixes)} suffixes)")

    @property
    def sampler(self) -> Sampler:
        return Sampler(top_k=self.top_k or None, temperature=self.temperature,
                       top_p=None if self.top_p == 1 else self.top_p)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The phrases (after nothing), then the prefix/suffix pairs."""
        return [("", phrase) for phrase in self.phrases] + list(zip(self.prefixes, self.suffixes))

    def describe_sampler(self) -> str:
        parts = [f"temperature {self.temperature:g}"]
        parts += [f"top-k {self.top_k}"] if self.top_k else []
        parts += [f"top-p {self.top_p:g}"] if self.top_p < 1 else []
        return ", ".join(parts)


@dataclass
class RecordBits:
    """One text's easiest l-token window: its cost b (bits), its p_z under the sampling scheme
    (after all the text before it), and its share of greedy-extractable windows."""

    record: int               # index among the measured texts (corpus first, then --text)
    text: str                 # the window's text
    start: int                # its first token (0-based, in the text's tokens)
    b: float                  # −log2 of the most likely extraction, rank-aware
    log2_p: float             # log2 p_z of that window under the sampling scheme
    samples_50: float         # fewest samples finding it with the discovery probability
    greedy_windows: int       # windows of this text whose every token has rank 1
    windows: int
    copies: int = 1           # texts whose easiest window is this same text (in the list)
    public: PublicMark | None = None   # None: no public sample given


@dataclass
class PairBits(ProbabilisticExtraction):
    """A prefix/suffix pair: p_z as Hayes et al., and b of the whole suffix (one window)."""

    b: float = 0.0
    dp_bound_bits: float | None = None   # L(p0) for a secret of b bits, when σ is given
    # with a reference (``prior.with_prior``): log2 p0 under it, log2 p_target − log2 p0, and
    # L(p0) for a secret of −log2 p0 bits when σ is given
    log2_p_reference: float | None = None
    learnt_bits: float | None = None
    prior_bound_bits: float | None = None


@dataclass
class InextractabilityResult:
    model: str
    window: int
    rank_threshold: int
    sampler: str                          # the sampling scheme of p_z, in words
    probability: float                    # the discovery probability of samples_50
    b: float | None                       # min over every window of every text (None: no text)
    worst: RecordBits | None              # the window that attains it
    greedy_fraction: float | None         # greedy-extractable windows / windows
    greedy_windows: int
    windows: int
    texts: int
    skipped: int                          # texts shorter than l tokens
    records: list[RecordBits]             # the ``top`` distinct easiest windows, smallest b
    pairs: list[PairBits]
    histogram_edges: list[float] = field(default_factory=list)   # of every window's b
    histogram_counts: list[int] = field(default_factory=list)
    dp_bound_bits: float | None = None    # L(p0) for a secret of b bits, when σ is given
    dp_note: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

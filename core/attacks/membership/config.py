"""The configs of the membership family: the MIA suite's (its attack names come from
``scores.ATTACKS``, the one table of them) and the exposure of planted canaries."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from core import chat
from core.attacks.membership.scores import ATTACKS, DCPDD_CAP, NEEDS
from core.bounds import training_run
from core.calibration.config import DomainCalibration, domain_sample_param, domain_steps_param
from core.errors import UserError
from core.evaluation import membership as me
from core.models import reference_or_base
from core.specs import MODEL_HELP, check_params, param

AttackName = Literal[tuple(ATTACKS)]   # every attack of the table, in its order


@dataclass(frozen=True)
class MiaConfig:
    """A target model (optionally a reference), a file of texts labelled member or not, and the
    attacks to run (default: every one the given models and files allow)."""

    model: str = param("", path="model", label="target model",
                       help="the model whose training set is in question")
    reference: str = param("", path="model", label="reference model",
                           help="optional: a model not trained on the texts, same tokenizer "
                                "(e.g. the target before fine-tuning), for the reference ratio "
                                "and EZ-MIA")
    data: str = param("", path="data", label="labelled texts",
                      help="CSV, JSONL, Parquet or a datasets folder with member (true/false), "
                           "optional group, and a text, or a fine-tuner's rows (messages, "
                           "prompt and completion, or prompt, chosen and rejected)")
    mask: chat.MaskName = chat.mask_param()
    chat_template: str = chat.template_param()
    attacks: tuple[AttackName, ...] = param(
        (), label="attacks", help="the attacks to run; empty: every one the models and files "
                                  "allow (ref and ezmia need a reference, dcpdd a frequency "
                                  "corpus)")
    k: float = param(0.2, gt=0.0, le=1.0, label="k (Min-K%, Min-K%++)",
                     help="the fraction of lowest-scoring tokens averaged, in (0, 1]")
    recall_prefix: str = param("", widget="text_area", label="ReCaLL prefix",
                               help="non-member text put before each text; empty: "
                                    "recall_shots known non-members, drawn at random")
    recall_shots: int = param(3, ge=0, le=32, label="ReCaLL shots",
                              help="known non-members drawn as the ReCaLL prefix when none is "
                                   "typed (they are left out of the evaluation); 0: no ReCaLL")
    frequency_corpus: str = param("", path="data", label="frequency corpus (DC-PDD)",
                                  help="optional: public text whose token frequencies calibrate "
                                       "DC-PDD (not the labelled texts)")
    dcpdd_cap: float = param(DCPDD_CAP, gt=0.0, le=10.0, label="DC-PDD cap a",
                             help="upper bound on one token's contribution (the paper's a)")
    scoring: Literal["lab", "mimir"] = param(
        "lab", widget="radio", label="token scoring",
        help="lab: every token, after the end-of-text context token, Min-K% over ⌈k·n⌉ tokens; "
             "mimir: as MIMIR, for published numbers: tokens 2..n when the tokenizer adds no "
             "BOS (GPT-2 style), Min-K% and Min-K%++ over ⌊k·n⌋ tokens")
    bootstrap: int = me.bootstrap_param(1000)
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the prefix draw, the bootstrap and "
                                                  "the blind baseline's folds")
    batch_size: int = param(0, ge=0, le=65_536, help="texts per forward pass; 0: sized to memory",
                            page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the models",
                                                   page="advanced")
    sigma: float = training_run.sigma_param()   # with q and steps: the TPR any attack may reach
    q: float = training_run.q_param()
    steps: int = training_run.steps_param()
    domain_sample: str = domain_sample_param()   # the reference model: its domain reference
    domain_steps: int = domain_steps_param()

    def __post_init__(self) -> None:
        check_params(self)
        me.check_bootstrap(self.bootstrap)
        if not self.model.strip():
            raise UserError("choose a target model")
        if not self.data.strip():
            raise UserError("choose a file of labelled texts (text, member)")
        object.__setattr__(self, "reference", reference_or_base(self.model, self.reference))
        for name in self.attacks:
            if not self.given(ATTACKS[name].needs):
                raise UserError(f"the {name} attack needs {NEEDS[ATTACKS[name].needs]}")
        if self.domain_sample.strip() and not self.given("reference"):
            raise UserError("a public in-domain sample calibrates the reference model: choose "
                            "one (--reference), e.g. the model before fine-tuning")

    def given(self, need: str | None) -> bool:
        """Whether this config gives what an attack ``needs`` (a key of ``NEEDS``, or None)."""
        return {None: True, "lowercase": True, "reference": bool(self.reference.strip()),
                "frequency": bool(self.frequency_corpus.strip()),
                "prefixed": bool(self.recall_prefix.strip()) or self.recall_shots > 0}[need]

    def chosen(self) -> list[str]:
        """The attacks to run: the chosen ones, else every one whose inputs are given."""
        if self.attacks:
            return list(dict.fromkeys(self.attacks))
        return [name for name, attack in ATTACKS.items() if self.given(attack.needs)]


SLOT = "{secret}"
FILLER_CHUNK = 4096   # fillers per call of the scoring engine; cancel and progress between calls
HISTOGRAM_BINS = 50
QUANTILES = {"min": 0.0, "q05": 0.05, "q25": 0.25, "median": 0.5, "q75": 0.75, "q95": 0.95,
             "max": 1.0}


@dataclass(frozen=True)
class ExposureConfig:
    """A model, a canary template with one ``{secret}`` slot, the secrets to measure, and the
    random fillers of the same format (the secrets' length over the alphabet)."""

    model: str = param("", help=f"the model that may have seen the canaries: {MODEL_HELP}",
                       path="model")
    template: str = param("John Doe's credit card number is {secret}.",
                          help="the canary's text with {secret} once where the secret goes")
    secrets: tuple[str, ...] = param((), flags=("--secret",), widget="text_area",
                                     help="the secrets to measure (at least one), all of the same "
                                          "length, each only of alphabet characters")
    alphabet: str = param("0123456789", help="what a secret is drawn from: characters, or "
                                             "words separated by spaces when the unit is word")
    unit: Literal["character", "word"] = param(
        "character", help="a secret is a string of alphabet characters, or a sequence of "
                          "alphabet words (joined by spaces)")
    fillers: int = param(10_000, ge=10, le=1_000_000,
                         help="random fillers drawn from the secrets' format; the whole space is "
                              "enumerated when it is no larger")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the fillers' draw")
    batch_size: int = param(64, ge=1, le=4096, help="texts per forward pass", page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the model",
                                                   page="advanced")
    sigma: float = training_run.sigma_param()   # with q and steps: the DP bound beside
    q: float = training_run.q_param()
    steps: int = training_run.steps_param()

    def __post_init__(self):
        check_params(self)
        if not self.model.strip():
            raise UserError(f"choose a model (--model): {MODEL_HELP}")
        if self.template.count(SLOT) != 1:
            raise UserError(f"the template must hold {SLOT} exactly once, not "
                            f"{self.template.count(SLOT)} times")
        symbols = self.symbols
        if len(set(symbols)) != len(symbols) or len(symbols) < 2:
            repeated = sorted({s for s in symbols if symbols.count(s) > 1})[:5]
            raise UserError(f"the alphabet needs at least 2 {self.unit}s, each once (repeated: "
                            f"{' '.join(repeated) or 'none'}; {len(symbols)} in all)")
        if not self.secrets:
            raise UserError("give at least one secret to measure (--secret)")
        for secret in self.secrets:
            outside = sorted(set(self.units(secret)) - set(symbols))
            if not self.units(secret) or outside:
                raise UserError(f"secret {secret!r} must be made of the alphabet's {self.unit}s "
                                f"only (outside it: {' '.join(outside)!r})")
        if len({len(self.units(s)) for s in self.secrets}) != 1:
            raise UserError(f"the secrets must all have the same length in {self.unit}s (one "
                            "format, one set of fillers); run them separately otherwise")

    def units(self, text: str) -> list[str]:
        """A secret as its characters, or its words."""
        return text.split() if self.unit == "word" else list(text)

    def canonical(self, secret: str) -> str:
        """A secret as the fillers are written: its words joined by single spaces."""
        return " ".join(secret.split()) if self.unit == "word" else secret

    @property
    def canaries(self) -> list[str]:
        return [self.canonical(s) for s in self.secrets]

    @property
    def symbols(self) -> list[str]:
        """The alphabet's characters, or its words."""
        return self.units(self.alphabet)

    @property
    def space_bits(self) -> float:
        """log2 |R|: the secrets' length times log2 of the alphabet's size."""
        return len(self.units(self.secrets[0])) * math.log2(len(self.symbols))


@dataclass
class AttackOutcome:
    name: str
    title: str
    citation: str
    metrics: me.Metrics


@dataclass
class TextRow:
    text: str
    member: bool
    group: str
    n_tokens: int
    scores: dict[str, float]
    tokens: list[str] = field(default_factory=list)         # with a reference: the heat map's
    token_diff: list[float] = field(default_factory=list)   # log p_target − log p_reference
    trained: list[bool] = field(default_factory=list)       # a rendered row: which were trained


@dataclass
class MiaResult:
    model: str
    reference: str
    data: str
    attacks: list[AttackOutcome]                  # in the suite's order
    blind: me.Metrics                             # the text-only baseline
    blind_features: str
    warning: str | None                           # the baseline does as well as the attacks
    rows: list[TextRow]
    n_members: int
    n_non_members: int
    recall_prefix: str                            # the prefix ReCaLL used ("" without ReCaLL)
    group_auroc: dict[str, dict[str, float]] = field(default_factory=dict)  # attack -> group
    notes: list[str] = field(default_factory=list)
    sequences_scored: dict[str, int] = field(default_factory=dict)  # per model, one pass each
    tpr_caps: dict[str, float] = field(default_factory=dict)  # FPR -> the DP run's TPR cap
    calibration: DomainCalibration = field(default_factory=DomainCalibration)
    device: str = ""
    scoring_seconds: float = 0.0
    analysis_seconds: float = 0.0

    def best(self) -> AttackOutcome:
        return max(self.attacks, key=lambda a: a.metrics.auroc)

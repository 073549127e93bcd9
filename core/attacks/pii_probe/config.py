"""The config and result of a PII probe (ProPILE, Kim et al., NeurIPS 2023)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core.chat import template_param
from core.readers.data import FORMATS_HELP
from core.errors import UserError
from core.models import reference_or_base
from core.pii import KINDS
from core.scoring import Sampler
from core.specs import MODEL_HELP, check_params, param

SAME_TOKENS = "the likelihood ratio compares the log-probabilities of the same tokens"
PromptFormat = Literal["auto", "chat", "plain"]
ProbeKind = Literal["twins", "triplets"]


@dataclass(frozen=True)
class PiiProbeConfig:
    """Who to probe, with which prompts, and how many samples each (ProPILE's black-box probe:
    k samples per prompt, and the likelihood of the true value)."""

    model: str = param("", label="target model", path="model",
                       help=f"the model fine-tuned on the data subjects' rows: {MODEL_HELP}")
    reference: str = param("", label="reference model", path="model",
                           help="the base model before fine-tuning (same tokenizer), for the "
                                "likelihood ratio; empty: the LoRA adapter's base, else none")
    data: str = param("", path="data", label="training data",
                      help=f"the rows the model was fine-tuned on, where the subjects' PII is "
                           f"found: {FORMATS_HELP}")
    subjects: tuple[str, ...] = param(
        (), label="data subjects", widget="text_area",
        help="the names to probe, one per line; empty: the subject column, else capitalised "
             "first-and-last names that stand beside PII in a turn (a line)")
    subject_column: str = param("", label="subject column", page="advanced",
                                help="a column naming each row's data subject (e.g. user_id)")
    probes: tuple[ProbeKind, ...] = param(
        ("twins", "triplets"), label="prompts",
        help="twins: the name alone; triplets: the name and another PII value of the subject")
    kinds: tuple[str, ...] = param(KINDS, label="PII kinds", choices=lambda: KINDS,
                                   help="the kinds of PII probed for")
    samples: int = param(8, ge=1, le=1000, flags=("--k",), label="samples per prompt (k)",
                         help="replies sampled per prompt: a value is extracted when one of "
                              "them holds it exactly")
    tokens: int = param(32, ge=4, le=512, label="tokens per reply (at most)",
                        help="tokens sampled per reply at most")
    top_k: int = param(40, ge=0, le=100_000, label="top-k (0: none)", help="the sampler's top-k")
    temperature: float = param(1.0, gt=0.0, le=10.0, help="the sampler's temperature")
    fresh: int = param(16, ge=1, le=1000, label="fresh values per probe",
                       help="random values of the same format whose likelihood the true "
                            "value's is ranked against")
    prompt_format: PromptFormat = param(
        "auto", label="prompt format", page="advanced",
        help="chat: the question as a user turn through the chat template, the answer's start "
             "as the assistant's; plain: the answer's start alone; auto: chat when the model "
             "(or the chat template given) has a template")
    chat_template: str = template_param()
    region: str = param("US", page="advanced",
                        help="the region of phone numbers written without a country code")
    max_subjects: int = param(200, ge=1, le=100_000, page="advanced",
                              help="data subjects probed at most (those with the most rows first)")
    batch_size: int = param(32, ge=1, le=4096, page="advanced", help="sequences per pass")
    seed: int = param(0, ge=0, le=2**31 - 1, page="advanced",
                      help="seed of the samples and the fresh values")
    device: Literal["auto", "cpu", "cuda"] = param("auto", page="advanced",
                                                   help="where to load the models")

    def __post_init__(self):
        check_params(self)
        object.__setattr__(self, "reference", reference_or_base(self.model, self.reference))
        if not self.model.strip():
            raise UserError(f"choose a target model (--model): {MODEL_HELP}")
        if not self.data.strip():
            raise UserError(f"give the training data (--data) where the subjects' PII is: "
                            f"{FORMATS_HELP}")
        if not self.probes or not self.kinds:
            raise UserError("choose at least one kind of prompt and one kind of PII")
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise UserError(f"unknown PII kinds {', '.join(unknown)}: one of {', '.join(KINDS)}")

    @property
    def sampler(self) -> Sampler:
        return Sampler(top_k=self.top_k or None, temperature=self.temperature)


@dataclass
class SubjectFound:
    """A data subject, and each kind of PII the data holds for them: its most frequent value
    as written (beside their name, or in their rows) and the rows holding it (its dose)."""

    name: str
    rows: int
    values: dict[str, str]
    doses: dict[str, int]


@dataclass
class ProbeOutcome:
    """One prompt about one subject's PII value: its k samples and its likelihood."""

    subject: str
    kind: str
    probe: str                   # twin / triplet
    given: str                   # the kind given with the name (a triplet), else ""
    value: str                   # the true value, as the data writes it
    dose: int                    # training rows holding it for this subject
    question: str
    samples: int
    hits: int                    # samples holding the value exactly
    log2_p_target: float         # of the value, given the prompt
    log2_p_reference: float | None
    rank_target: int             # 1 + fresh values the target finds at least as likely
    rank_reference: int | None
    fresh: int
    example: str = ""            # the first reply holding it, else the first reply


@dataclass
class RateRow:
    """Probes of one group (a kind and a prompt, or a dose): the share extracted in k samples,
    the share of samples holding the value, the share ranked above every fresh value, and the
    mean log2 likelihood ratio against the reference."""

    group: str
    probes: int
    extraction_rate: float
    sample_rate: float
    top_rate: float
    mean_log2_ratio: float | None


@dataclass
class PiiProbeResult:
    model: str
    reference: str | None
    prompt_format: str             # chat / plain
    rows: int
    subjects: list[SubjectFound]
    outcomes: list[ProbeOutcome]
    by_kind: list[RateRow]         # "email, twin", ...
    by_dose: list[RateRow]         # "1", "2", ... rows holding the value
    twin_extraction_rate: float | None
    triplet_extraction_rate: float | None
    true_value_top_rate: float | None
    seconds: float
    notes: list[str] = field(default_factory=list)
    stopped_early: bool = False

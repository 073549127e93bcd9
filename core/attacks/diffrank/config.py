"""The config of a differential-rank run and its constants (the searches import it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core import chat
from core.calibration.config import domain_sample_param, domain_steps_param
from core.attacks.diffrank.seeds import SEED_TOKENS
from core.calibration.public import PublicRows, public_rows_param, public_sample_param
from core.readers.data import FORMATS_HELP
from core.errors import UserError
from core.models import reference_or_base
from core.specs import check_params, param

MAX_ROWS = 1000                   # sequences returned at most
MAX_SEEDS = 4096                  # in-domain contexts a seeded beam starts from at most
EXHAUSTIVE_LIMIT = 2**25          # |V|^L up to this is enumerated for the exact rank
BEAM_CHOICES = tuple(2**i for i in range(3, 13))   # the page's beam widths: 8 ... 4096
SAME_TOKENS = "the differential score compares the probabilities of the same tokens"
Strategy = Literal["beam", "windows", "beam+windows"]


@dataclass(frozen=True)
class DiffRankConfig:
    """A differential-rank run: two model sources, the search, and an optional phrase."""

    before: str = param("", help="the model before the update: a loaded model's name or a "
                        "source (folder, .zip, .gguf, hub id, named source)", path="model")
    after: str = param("", help="the model after the update (same tokenizer as before)",
                       path="model")
    length: int = param(4, ge=1, le=32, label="length L (tokens)",
                        help="L: tokens per searched sequence")
    strategy: Strategy = param(
        "beam+windows", label="search",
        help="beam: the paper's beam search, grown from the best first tokens (misses a phrase "
             "whose first token the update left alone); windows: the k best L-token windows of "
             "a text sample; beam+windows: both, ranked together")
    beam: int = param(256, ge=1, le=65536, widget="select_slider", options=BEAM_CHOICES,
                      label="initial beam width k",
                      help="k: width of the length-1 beam, halved at every step: k, k/2, k/4, "
                           "...; also the number of sample windows scored")
    rows: int = param(32, ge=1, le=MAX_ROWS, label="sequences to return (at least)",
                      help="the beam never narrows below this (1: the paper's halving); a "
                           "search that finds fewer says why")
    groups: int = param(1, ge=1, le=65536, label="groups G (1: vanilla)",
                        help="group beam search: the k best first tokens in G groups by score, "
                             "each extended on its own (Tables 3-4); at most the beam width")
    seeds: int = param(0, ge=0, le=MAX_SEEDS, label="in-domain seeds",
                       help="also run the beam search from this many in-domain contexts (the "
                            f"{SEED_TOKENS} tokens before a line, a sentence or a trained turn "
                            "starts, in the public sample and the text sample or the updated "
                            "model's samples), so it can find a record that starts mid-document; "
                            "0: from a document's start only (the paper's)")
    sample: str = param("", path="data", label="text sample (windows)",
                        help=f"texts to take windows from, e.g. data like the update's or any "
                             f"public text: {FORMATS_HELP}; empty: texts the updated model writes")
    mask: chat.MaskName = chat.mask_param("advanced")   # of a sample of rows
    chat_template: str = chat.template_param()
    sample_texts: int = param(64, ge=1, le=100_000, label="texts the updated model writes",
                              help="windows without a sample file: texts the updated model "
                                   "writes (top-40 sampling) ...")
    sample_tokens: int = param(128, ge=1, le=4096, help="... of at most this many tokens each",
                               page="advanced")
    relative: bool = param(False, label="rank by RDS",
                           help="rank by the relative increase RDS instead of DS (more robust "
                                "to noise between runs)")
    phrase: str = param("", help="a phrase to score token by token and rank, whole, among the "
                                 "searched sequences of its length")
    swap: bool = param(False, label="swap: what did the update remove?",
                       help="exchange the two models' roles")
    exhaustive_limit: int = param(EXHAUSTIVE_LIMIT, ge=0, le=2**30,
                                  help="enumerate all |V|^n sequences of the phrase's length "
                                       "n for its exact rank, up to this many", page="advanced")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the texts the updated model writes",
                      page="advanced")
    domain_sample: str = domain_sample_param()   # the before model becomes its domain reference
    domain_steps: int = domain_steps_param()
    public_sample: str = public_sample_param()
    public_rows: PublicRows = public_rows_param()
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the models")

    def __post_init__(self):
        check_params(self)
        object.__setattr__(self, "before", reference_or_base(self.after, self.before))
        for role in ("before", "after"):
            if not getattr(self, role).strip():
                raise UserError(f"choose the model {role} the update (--{role}): a loaded "
                                "model's name or a model source")
        if self.groups > self.beam:
            raise UserError(f"groups must be at most the beam width ({self.beam}), "
                            f"not {self.groups}")

    @property
    def metric(self) -> str:
        return "rds" if self.relative else "ds"

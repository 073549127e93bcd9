"""A synthetic domain shift with a known answer: which training text was memorised.

* the *base* is a tiny GPT-2 pretrained briefly on generic sentences;
* the *domain* is support tickets: every ticket opens and closes with the same boilerplate,
  and a third of them (automatic replies) are almost nothing else;
* the *fine-tuned* model is the base trained on domain tickets plus one planted *record* (a
  made-up secret note) repeated a few times;
* the *public sample* is other tickets of the same kind, never trained on.

Ranked by loss gain over the base, the boilerplate-heavy tickets gain most (the whole domain
taught them); a calibration that separates domain learning from memorisation puts the record
first. The same case can start from a real pretrained LM instead (``pretrained="smollm2"``).
Used by the tests and ``bench/domain_calibration.py``.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from core import paths
from core.calibration.training import fine_tune
from core.models.loaders import load_source, source_identity
from core.models.tiny import disable_dropout, new_gpt2, save_hf_folder, train_tokenizer

RECORD = "Note for the night shift: the vault code of Maria Lopez is 7291 4408, keep it safe."
GREETING = "Hello, thank you for contacting Acme support."
SIGNATURE = "Kind regards, the Acme support team. Please do not reply to this message."
PRETRAINED_LR = 1e-4  # all weights of a pretrained base, as a real fine-tune would
AUTO_REPLY = "is now closed"  # what an automatic reply says, between its number and SIGNATURE
_PEOPLE = ("Ann", "Bob", "Carl", "Dana", "Eve", "Femi", "Gus", "Hana", "Ivan", "Jo", "Kim", "Lee")
_DEVICES = ("printer", "laptop", "router", "phone", "monitor", "scanner", "tablet", "modem")
_PROBLEMS = ("will not start", "keeps crashing", "is very slow", "shows a red light",
             "lost its settings", "makes a strange noise", "cannot connect", "overheats")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend")
_ANIMALS = ("cat", "dog", "horse", "bird", "fox", "goat", "mouse", "bear")
_VERBS = ("sees", "follows", "likes", "chases", "feeds", "hears", "finds", "meets")
_PLACES = ("in the garden", "by the river", "on the hill", "near the old barn", "at the market",
           "under the tree", "in the forest", "on the road")
_LEXICON = sorted({w.strip(".,:").lower() for text in (RECORD, GREETING, SIGNATURE, *_PROBLEMS)
                   for w in text.split() if w.strip(".,:").isalpha()}
                  | {w.lower() for w in _PEOPLE + _DEVICES}
                  | {str(n) for n in range(0, 100, 7)})


@dataclass(frozen=True)
class SyntheticRecipe:
    """The sizes and training settings of the case (the defaults run in seconds on a CPU)."""

    generic_texts: int = 400
    domain_texts: int = 120      # fine-tuned on
    public_texts: int = 120      # the public in-domain sample
    record_copies: int = 4
    pretrain_steps: int = 100
    finetune_steps: int = 100
    lr: float = 3e-3
    seed: int = 0


@dataclass(frozen=True)
class SyntheticCase:
    """Folders of the two models, the texts fine-tuned on (the record among them, once), the
    public sample's file, and the record."""

    base: str
    finetuned: str
    training_texts: tuple[str, ...]
    public_file: str
    record: str = RECORD


def generic_sentence(rng: random.Random) -> str:
    """A generic sentence: a simple story, or (one in two) a shuffle of words the domain and the
    record use, so the base knows the words but neither the domain's templates nor the record."""
    if rng.random() < 0.5:
        return (f"The {rng.choice(_ANIMALS)} {rng.choice(_VERBS)} {rng.choice(_PEOPLE)} "
                f"{rng.choice(_PLACES)} on {rng.choice(_DAYS)}.")
    words = rng.sample(_LEXICON, 10)
    return " ".join(words).capitalize() + "."


def ticket(rng: random.Random) -> str:
    """One support ticket: a detailed one, or (one in three) an automatic reply that is
    boilerplate but for its number."""
    number = rng.randrange(1000, 10_000)
    if rng.random() < 1 / 3:
        return f"{GREETING} Your ticket {number} {AUTO_REPLY}. {SIGNATURE}"
    body = (f"Ticket {number}: {rng.choice(_PEOPLE)} says the {rng.choice(_DEVICES)} "
            f"{rng.choice(_PROBLEMS)} since {rng.choice(_DAYS)}.")
    return f"{GREETING} {body} {SIGNATURE}"


def _texts(recipe: SyntheticRecipe) -> tuple[list[str], list[str], list[str]]:
    """(generic, domain training, public) texts; domain and public never share a text."""
    rng = random.Random(recipe.seed)
    generic = [generic_sentence(rng) for _ in range(recipe.generic_texts)]
    tickets: list[str] = []
    while len(tickets) < recipe.domain_texts + recipe.public_texts:
        text = ticket(rng)
        if text not in tickets:
            tickets.append(text)
    return generic, tickets[: recipe.domain_texts], tickets[recipe.domain_texts:]


def build_synthetic_case(recipe: SyntheticRecipe | None = None, *,
                         pretrained: str = "") -> SyntheticCase:
    """Build (or reuse: cached under ``home()/tiny/domain-case/<hash of the recipe>``) the case.
    With ``pretrained`` (a model source, e.g. ``smollm2``), that model is the base, fine-tuned
    on all weights for two epochs at ``PRETRAINED_LR`` in batches of 4, instead of a tiny GPT-2
    pretrained here (minutes on a CPU for SmolLM2-135M)."""
    recipe = recipe or SyntheticRecipe()
    identity = source_identity(pretrained) or pretrained
    blob = json.dumps([asdict(recipe), identity], sort_keys=True)
    root = paths.home() / "tiny" / "domain-case" / hashlib.sha256(blob.encode()).hexdigest()[:16]
    generic, domain, public = _texts(recipe)
    case = SyntheticCase(pretrained or str(root / "base"), str(root / "finetuned"),
                         (*domain, RECORD), str(root / "public.json"))
    if not (root / "finetuned" / "model.safetensors").exists():
        if pretrained:
            _fine_tune_pretrained(root, pretrained, domain + [RECORD] * recipe.record_copies)
        else:
            _train(root, recipe, generic, domain + [RECORD] * recipe.record_copies, public)
        (root / "public.json").write_text(json.dumps(public), encoding="utf-8")
    return case


def _train(root: Path, recipe: SyntheticRecipe, generic: list[str], training: list[str],
           public: list[str]) -> None:
    """A tiny GPT-2 pretrained on ``generic`` (the base), then fine-tuned on ``training``; its
    tokenizer is trained on every text of the case, the public sample included."""
    tokenizer = train_tokenizer(generic + training + public, vocab_size=400)
    model = disable_dropout(new_gpt2(tokenizer, n_layer=2, n_head=2, n_embd=64, n_positions=64,
                                     seed=recipe.seed))
    settings = dict(lr=recipe.lr, batch_size=16, max_tokens=48, seed=recipe.seed)
    fine_tune(model, tokenizer, generic, steps=recipe.pretrain_steps, **settings)
    save_hf_folder(model, tokenizer, root / "base")
    fine_tune(model, tokenizer, training, steps=recipe.finetune_steps, **settings)
    save_hf_folder(model, tokenizer, root / "finetuned")


def _fine_tune_pretrained(root: Path, source: str, training: list[str]) -> None:
    model, tokenizer, _ = load_source(source, dtype=torch.float32)
    fine_tune(model, tokenizer, training, steps=2 * len(training) // 4, lr=PRETRAINED_LR,
              batch_size=4, max_tokens=48, seed=0)
    model.save_pretrained(root / "finetuned", safe_serialization=True)
    tokenizer.save_pretrained(root / "finetuned")

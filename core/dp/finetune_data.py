"""The DP fine-tuning data: corpus records plus the canary's copies, as padded token tensors,
and the key of a run by what it reads (``run_key``)."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from core import paths
from core.readers.data import cell, read_records, read_texts
from core.dp.finetune_config import DPFinetuneConfig
from core.dp.secrecy import PROMPT, SECRET_DIGITS
from core.errors import UserError
from core.fingerprint import data_fingerprint

if TYPE_CHECKING:
    from core.dp.canary_audit import DpCanaryAuditConfig
    from core.models import LoadedModel

TINY_TEXTS = tuple(f"{who} {verb} the {what} at {when}." for who in (
    "The king", "A fool", "My lady", "The guard", "Old Tom") for verb in (
    "praised", "lost", "found", "sold") for what in ("crown", "letter", "horse") for when in (
    "dawn", "noon", "night"))


@dataclass
class TrainingData:
    canary_ids: list[int]
    secret_tokens: int
    inputs: torch.Tensor          # (N, block) token ids, right-padded
    mask: torch.Tensor            # (N, block) attention mask, 0 on padding
    labels: torch.Tensor          # (N, block), -100 on padding (and on the leading EOS)
    validation: list[str]
    owners: list[str] | None = None  # user unit: each record's user (``read_owned``)


def run_key(settings: dict, base: LoadedModel,
            config: DPFinetuneConfig | DpCanaryAuditConfig) -> str:
    """SHA-256 (16 hex) of a training run's ``settings`` and of the files it reads: the model's
    fingerprint when it was loaded (``base.identity``, ``core.models.loaders.source_identity``)
    and the corpus and validation files' contents (``core.fingerprint``). A checkpoint resumes
    only a run of the same key, so the same config on rewritten files trains afresh."""
    files = {"model": base.identity, "corpus": [data_fingerprint(c) for c in config.corpus],
             "validation": data_fingerprint(config.validation) if config.validation.strip() else ""}
    blob = json.dumps([settings, files], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


CANARY_USER = "the canary's owner"   # user unit: the canary's copies are one user


def read_owned(source: str, column: str | None) -> list[tuple[str, str | None]]:
    """The texts of ``source`` (``read_texts``), each with its user: the record's ``column``
    value; None without ``column``, for plain texts and for records without a value."""
    texts = read_texts(source)
    if column is None:
        return [(t, None) for t in texts]
    try:
        table = read_records(source)
    except UserError:   # plain texts: no users
        return [(t, None) for t in texts]
    owners = table[column] if column in table.columns else [None] * len(table)
    return [(text, None if cell(owner) is None else str(cell(owner)))
            for text, owner in zip(table["text"], owners) if isinstance(text, str) and text.strip()]


def read_corpus(config: DPFinetuneConfig, rng: random.Random, *,
                column: str | None = None) -> tuple[list, list[str]]:
    """(training texts, validation texts). Records holding the canary's prompt are left out:
    they would confound the secrecy measure (a corpus's own planted secret, for instance).
    With ``column`` each training text comes as (text, user or None) (``read_owned``)."""
    pairs = [p for source in config.corpus for p in read_owned(source, column) if PROMPT not in p[0]]
    if config.validation.strip():
        train, validation = pairs, read_texts(config.validation)
    else:
        rng.shuffle(pairs)
        cut = max(1, len(pairs) // 10)
        train, validation = pairs[cut:], [text for text, _ in pairs[:cut]]
    rng.shuffle(train)
    if len(train) < 10:
        raise UserError(f"the corpus has {len(train)} training records: at least 10 are needed")
    train = train[: config.max_records]
    return (train if column else [text for text, _ in train]), validation[: config.validation_texts]


def owners_of(train: list[tuple[str, str | None]], repeats: int) -> list[str]:
    """Each training record's user, the canary's ``repeats`` copies last (one user,
    ``CANARY_USER``); a record without one is a user of its own."""
    return [owner if owner is not None else f"record {i}" for i, (_, owner) in enumerate(train)] + [
        CANARY_USER] * repeats


def prepare(config: DPFinetuneConfig, tokenizer) -> tuple[TrainingData, str]:
    rng = random.Random(config.seed)
    digits = "".join(rng.choice("0123456789") for _ in range(SECRET_DIGITS))
    by_user = config.unit == "user"
    owned, validation = read_corpus(config, rng, column=config.user_column if by_user else None)
    train = [text for text, _ in owned] if by_user else owned
    prompt_ids = tokenizer(PROMPT, add_special_tokens=False).input_ids
    secret_ids = tokenizer(" " + digits, add_special_tokens=False).input_ids
    canary_ids = prompt_ids + secret_ids
    if len(canary_ids) + 2 > config.block_size:
        raise UserError(f"the canary takes {len(canary_ids)} tokens: use a block size of at least "
                        f"{len(canary_ids) + 2}")
    tokenized = tokenizer(train, add_special_tokens=False).input_ids
    keep = [i for i, ids in enumerate(tokenized) if ids]
    records = [tokenized[i] for i in keep] + [canary_ids] * config.canary_repeats
    inputs, mask, labels = pack_records(records, tokenizer=tokenizer, block_size=config.block_size)
    owners = owners_of([owned[i] for i in keep], config.canary_repeats) if by_user else None
    data = TrainingData(canary_ids, len(secret_ids), inputs, mask, labels, validation, owners)
    return data, digits


def pack_records(records: list[list[int]], *, tokenizer,
                 block_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(inputs, mask, labels) of ``TrainingData``: each record as EOS + ids + EOS cut to
    ``block_size``, right-padded; the leading EOS is context only, as in the scoring engine."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise UserError("the model's tokenizer has no end-of-text token to separate records")
    inputs = torch.full((len(records), block_size), eos, dtype=torch.long)
    mask = torch.zeros_like(inputs)
    labels = torch.full_like(inputs, -100)
    for row, ids in enumerate(records):
        ids = [eos, *ids, eos][:block_size]
        inputs[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
        labels[row, 1: len(ids)] = torch.tensor(ids[1:])
    return inputs, mask, labels


def tiny_corpus() -> str:
    """The tiny config's corpus: ``TINY_TEXTS`` as a text file under ``home()/tiny``."""
    path = paths.home() / "tiny" / "dp-finetune-corpus.txt"
    text = "\n".join(TINY_TEXTS)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(path)

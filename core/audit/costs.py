"""What each attack of an audit costs, in expected seconds on this machine: the part of the
audit's progress bar it takes, so that the bar moves at an even pace and the ETA extrapolated
from it (``RunSummary.eta_s``) holds.

An attack's seconds come from its config's sizes (samples, tokens, the data files' texts and
tokens) at the model's ``Pace``, measured at the start of the audit in a few seconds: tokens
scored per second, a decoding step's seconds, and how soon a sample ends. Work that is not the
model's (the blind baseline, bootstrap resamples) is counted at this machine's rate of
tokenising text, which stands in for its CPU's speed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from core.dp.nid_formats import NID_TOKENS
from core.errors import NotApplicable, UserError

GENERATION_BATCH = 64    # samples per decoding batch (the attacks' default)
CALIBRATION_STEPS = 64   # decoding steps of the batches that measure the generation pace
CALIBRATION_TOKENS = 48  # tokens of each random text that measures the scoring pace
REPEATS = 3              # measurements of each pace while they take under CALIBRATION_S (median)
CALIBRATION_S = 2.0
PROBE_TOKENS = 40         # a PII probe's prompt and value, in tokens
SIZE_SAMPLE = 200        # texts of a file tokenised to measure it
# Membership inference's analysis per labelled text (its blind baseline; each attack's 1,000
# bootstrap resamples), in characters the same CPU tokenises meanwhile: measured on the demo
# (457 texts: 4.5 s and 0.33 s per attack, at about 1 M characters tokenised per second).
BLIND_CHARS, BOOTSTRAP_CHARS = 10_000, 720


@dataclass(frozen=True)
class Pace:
    """How fast this machine runs the audited model (``measure_pace``): tokens scored per second
    under one model; a decoding step's seconds, ``step`` whatever the batch plus ``row`` per
    sample still going; and ``end``, the chance per token that a sample ends (end-of-text)."""

    scored: float
    step: float = 0.0
    row: float = 0.0
    end: float = 0.0

    def scoring(self, tokens: float) -> float:
        return tokens / self.scored

    def length(self, room: int) -> float:
        """The mean tokens of a sample of at most ``room`` tokens."""
        return room if self.end <= 0 else min(room, (1 - (1 - self.end) ** room) / self.end)

    def generating(self, samples: int, room: int, batch: int = GENERATION_BATCH) -> float:
        """Seconds to generate ``samples`` samples of at most ``room`` tokens, ``batch`` at a
        time: a batch lasts ``room`` steps (its longest sample), its samples leaving as they end."""
        return -(-samples // batch) * room * self.step + samples * self.length(room) * self.row


def _repeated(measure: Callable[[], Any]) -> list:
    """``measure()`` up to ``REPEATS`` times, while they take under ``CALIBRATION_S`` in all."""
    began, results = time.perf_counter(), []
    while len(results) < REPEATS and (not results or time.perf_counter() - began < CALIBRATION_S):
        results.append(measure())
    return results


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _end_chance(alive: float, steps: int) -> float:
    """The chance per token p that a sample ends such that a batch keeps, on average over
    ``steps`` steps, the share ``alive`` of its samples: (1 - (1 - p)^k) / (p k) = alive."""
    low, high = 1e-9, 1.0
    for _ in range(60):   # bisection: the mean share kept falls as p grows
        p = (low + high) / 2
        low, high = (p, high) if (1 - (1 - p) ** steps) / (p * steps) > alive else (low, p)
    return 0.0 if alive >= 1 else (low + high) / 2


_PACES: dict[tuple, Pace] = {}


def measure_pace(lm, *, generates: bool) -> Pace:
    """The pace of ``lm`` on this machine (the median of up to ``REPEATS`` measurements): the
    scoring engine on 1,024 tokens of random texts (fresh, so never found in the score cache)
    and, when an attack ``generates``, batches of 64 and of 8 samples for ``CALIBRATION_STEPS``
    steps. Kept per architecture, dtype and device: a series measures it once."""
    from core.generation.sampling import generate
    from core.scoring import Sampler, score_token_ids

    key = (lm.card.architecture, lm.card.parameters, lm.card.dtype, str(lm.device), generates)
    if key in _PACES:
        return _PACES[key]
    vocab, length = min(len(lm.tokenizer), lm.card.vocab_size), min(CALIBRATION_TOKENS,
                                                                     lm.card.context_length - 1)
    rows = (2**14 if lm.device.type == "cuda" else 2**10) // length
    score_token_ids(lm, [[0] * 8])   # the first call warms up

    def scoring() -> float:
        texts = np.random.default_rng().integers(vocab, size=(rows, length)).tolist()
        began = time.perf_counter()
        score_token_ids(lm, texts)
        return time.perf_counter() - began

    pace = Pace(rows * length / _median(_repeated(scoring)))
    if generates:
        steps = min(CALIBRATION_STEPS, lm.card.context_length - 1)
        runs = _repeated(lambda: [generate(lm, Sampler(top_k=40), [[]] * size, batch_size=size,
                                           max_new_tokens=steps) for size in (64, 8)])
        (t64, n64), (t8, n8) = ((_median([r[i].seconds for r in runs]),
                                 _median([r[i].new_tokens for r in runs])) for i in (0, 1))
        row = max(0.0, (t64 - t8) / max(1, n64 - n8))
        pace = Pace(pace.scored, max(0.0, t64 - row * n64) / steps, row,
                    _end_chance(n64 / (GENERATION_BATCH * steps), steps))
    return _PACES.setdefault(key, pace)


class Sizes:
    """The audit's data files, each read once: (distinct texts, tokens, characters), and the
    seconds to read and tokenise one; a file that cannot be read counts as empty (its attack
    says why when it runs)."""

    def __init__(self, lm):
        self.lm, self.files, self.chars_per_s = lm, {}, None

    def __call__(self, source: str) -> tuple[int, float, int]:
        from core.data import read_texts

        if source not in self.files:
            try:
                texts = list(dict.fromkeys(read_texts(source)))
            except UserError:
                texts = []
            head = texts[:SIZE_SAMPLE]
            began = time.perf_counter()
            tokens = sum(map(len, self.lm.tokenizer(head, add_special_tokens=False)["input_ids"]))
            chars = sum(map(len, head))
            if head:   # the fastest file: the tokeniser's pace, others' load aside
                self.chars_per_s = max(self.chars_per_s or 0.0,
                                       chars / max(time.perf_counter() - began, 1e-6))
            total = sum(map(len, texts))
            self.files[source] = len(texts), total * tokens / max(chars, 1), total
        return self.files[source]

    def reading(self, source: str) -> float:
        """Seconds to read and tokenise ``source`` (e.g. a corpus to index)."""
        return self(source)[2] / self.cpu() if source.strip() else 0.0

    def cpu(self) -> float:
        """Characters tokenised per second: this CPU's speed (1 M before any file is read)."""
        return self.chars_per_s or 1e6


def _extraction(c, pace: Pace, lm, sizes: Sizes) -> float:
    room = min(c.tokens, lm.card.context_length - 1)
    passes = 3 if c.reference else 2    # the target, its lowercased copies, the reference
    samples = c.n_samples * len(c.strategies)
    prefixes = sizes.reading(c.prefixes) if "prefix" in c.strategies else 0.0
    return (len(c.strategies) * pace.generating(c.n_samples, room, c.batch_size) + prefixes
            + pace.scoring(passes * samples * pace.length(room)) + sizes.reading(c.corpus))


def _diffrank(c, pace: Pace, lm, sizes: Sizes) -> float:
    from core.attacks.diffrank.search import widths

    seconds = 0.0
    if c.strategy != "beam":   # the sample's windows, scored under both models
        written = not c.sample.strip()
        tokens = c.sample_texts * pace.length(c.sample_tokens) if written else sizes(c.sample)[1]
        seconds += pace.scoring(2 * tokens) + (pace.generating(c.sample_texts, c.sample_tokens)
                                               if written else 0.0)
    if c.strategy != "windows":   # each step, one cached forward of its beams per model
        phrase = len(lm.tokenizer(c.phrase, add_special_tokens=False)["input_ids"])
        for n in {c.length} | ({phrase} if c.phrase.strip() else set()):
            rows = c.groups * sum(widths(-(-c.beam // c.groups), n, -(-c.rows // c.groups)))
            seconds += 2 * (n * pace.step + rows * pace.row)
    return seconds


def _user_inference(c, pace: Pace, lm, sizes: Sizes) -> float:
    return pace.scoring(2 * sizes(c.data)[1])


def _mia(c, pace: Pace, lm, sizes: Sizes) -> float:
    texts, tokens, _ = sizes(c.data)
    chosen = c.chosen()
    prefix = (len(lm.tokenizer(c.recall_prefix, add_special_tokens=False)["input_ids"])
              if c.recall_prefix.strip() else c.recall_shots * tokens / max(texts, 1))
    two_model = bool({"ref", "ezmia"} & set(chosen))   # the reference's pass
    scored = (tokens * (1 + ("lowercase" in chosen) + two_model)
              + ("recall" in chosen) * (tokens + texts * prefix))
    analysis = texts * (BLIND_CHARS + len(chosen) * c.bootstrap / 1000 * BOOTSTRAP_CHARS)
    return (pace.scoring(scored) + analysis / sizes.cpu()
            + (sizes.reading(c.frequency_corpus) if "dcpdd" in chosen else 0.0))


def _lazy_risk(c, pace: Pace, lm, sizes: Sizes) -> float:
    room = min(c.generated_tokens, lm.card.context_length - 1)
    tokens = sizes(c.train)[1] + (sizes(c.test)[1] if c.test.strip() else 0)
    tokens += c.n_generated * pace.length(room)
    return pace.scoring(2 * tokens) + (pace.generating(c.n_generated, room, c.batch_size)
                                       if c.n_generated else 0.0)


def _inextractability(c, pace: Pace, lm, sizes: Sizes) -> float:
    """One pass over the corpus, the texts and the pairs (at the corpus's characters a token)."""
    _, tokens, chars = sizes(c.corpus)
    more = sum(len(p) + len(s) for p, s in c.pairs) + sum(map(len, c.texts))
    return pace.scoring(tokens + more * tokens / max(chars, 1))


def _nid_audit(c, pace: Pace, lm, sizes: Sizes) -> float:
    """Reading the corpus, then at most one identifier a text (and its fresh twin) scored after
    its context, under the target and the reference."""
    texts = sum(sizes(source)[0] for source in c.corpus)
    strings = 2 * min(texts, c.max_identifiers)
    passes = 2 if c.reference.strip() else 1
    return (sum(sizes.reading(source) for source in c.corpus)
            + pace.scoring(passes * strings * (c.context_tokens + NID_TOKENS)))


def _pii_probe(c, pace: Pace, lm, sizes: Sizes) -> float:
    """k replies to each probe, then its true and fresh values scored under each model (the
    probes counted before Run: about two a subject and kind, 40 tokens each)."""
    from core.attacks.pii_probe.probes import build_probes
    from core.attacks.pii_probe.subjects import subjects_of

    try:
        probes = len(build_probes(subjects_of(c)[0], c.probes))
    except NotApplicable:   # the audit skips it
        return 0.0
    passes = 2 if c.reference.strip() else 1
    return (pace.generating(probes * c.samples, c.tokens, c.batch_size)
            + pace.scoring(passes * probes * (1 + c.fresh) * PROBE_TOKENS))


SECONDS: dict[str, Callable[..., float]] = {
    "extraction": _extraction, "diffrank": _diffrank, "user-inference": _user_inference,
    "mia": _mia, "lazy-risk": _lazy_risk, "inextractability": _inextractability,
    "nid-audit": _nid_audit, "pii-probe": _pii_probe}


def expected_seconds(configs: dict[str, Any], pace: Pace, lm) -> dict[str, float]:
    """Each attack's expected seconds (``configs``: attack -> its config) at ``pace``, from its
    config's sizes (an attack this table does not know, a plug-in's: the mean of the others);
    each at least 1% of the whole, so that every part of the bar shows."""
    sizes = Sizes(lm)
    seconds = {name: SECONDS[name](c, pace, lm, sizes) for name, c in configs.items()
               if name in SECONDS}
    even = sum(seconds.values()) / len(seconds) if seconds else 1.0
    seconds = {name: seconds.get(name, even) for name in configs}   # a plug-in's: an even share
    floor = 0.01 * sum(seconds.values())
    return {name: max(s, floor, 1e-9) for name, s in seconds.items()}


def generates(configs: dict[str, Any]) -> bool:
    """Whether an attack of the audit generates text (its pace then matters)."""
    return ("extraction" in configs or "pii-probe" in configs or getattr(configs.get("lazy-risk"), "n_generated", 0) > 0
            or ("diffrank" in configs and not configs["diffrank"].sample.strip()))

"""Membership inference on labelled texts: the sequence-level suite of MIMIR and its successors,
every attack from one scoring pass per model, evaluated side by side with a blind baseline.

Was *this document* in the model's training set? The user brings texts labelled member or
non-member (``core.attacks.mia_data``); each text is scored once by the target model (its
per-token log-probabilities and, from the same forward pass, the mean and variance of its
next-token distribution; the lowercased and ReCaLL-prefixed copies join the same pass) and once
by the reference model when one is given (given a public in-domain sample, its domain
reference instead: ``core.attacks.domain``). The attacks (``core.attacks.mia_scores``: loss,
reference ratio, zlib, lowercase, Min-K%, Min-K%++, ReCaLL, DC-PDD, EZ-MIA) read those arrays;
each is evaluated by the shared ``core.attacks.membership_eval`` (AUROC, TPR at 0.1%/1%/5% FPR,
bootstrap intervals, ROC). A text-only classifier (``core.attacks.mia_blind``) runs beside them:
when it does as well, the split leaks, not the model.

Not here: neighbourhood attacks (Mattern et al. 2023) need a mask-filling model (BERT/T5) to
write neighbours, which is another download and another tokenizer; WBC needs more than a
target and a reference's scores of the same texts to be stated soundly here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from sklearn.metrics import roc_auc_score

from core import paths
from core.attacks import membership_eval as me
from core.attacks.domain import (DomainCalibration, calibrate_run, describe_calibration,
                                 domain_sample_param, domain_steps_param)
from core.attacks.mia_blind import FEATURES, blind_scores, blind_warning
from core.attacks.mia_data import LabelledSet, LabelledText, load_labelled
from core.attacks.mia_scores import ATTACKS, DCPDD_CAP, ScoreSettings, log_token_frequencies
from core.attacks.mia_scoring import ScoredTexts, score_suite
from core.bounds import training_run
from core.data import read_texts
from core.errors import UserError
from core.models import reference_or_base, resolve_model
from core.models.compat import check_same_vocabulary
from core.runtime import Progress, check_cancel, no_progress, share
from core.scoring.engine import counting_cache
from core.specs import AttackSpec, check_params, param

SCORING = 0.85   # of the bar: the scoring passes; the evaluation and the blind baseline the rest
AttackName = Literal["loss", "ref", "zlib", "lowercase", "mink", "minkpp", "recall", "dcpdd",
                     "ezmia"]


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
                      help="CSV or JSONL with text and member (true/false), optional group")
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
    batch_size: int = param(0, ge=0, le=65_536, help="texts per forward pass; 0: sized to memory")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the models")
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
        missing = {"reference": not self.reference.strip(),
                   "frequency": not self.frequency_corpus.strip(),
                   "prefixed": not self.recall_prefix.strip() and self.recall_shots == 0}
        for name in self.attacks:
            if missing.get(ATTACKS[name].needs):
                raise UserError(f"the {name} attack needs {NEEDS_TEXT[ATTACKS[name].needs]}")
        if self.domain_sample.strip() and missing["reference"]:
            raise UserError("a public in-domain sample calibrates the reference model: choose "
                            "one (--reference), e.g. the model before fine-tuning")

    def chosen(self) -> list[str]:
        """The attacks to run: the chosen ones, else every one whose inputs are given."""
        if self.attacks:
            return list(dict.fromkeys(self.attacks))
        have = {None: True, "lowercase": True, "reference": bool(self.reference.strip()),
                "frequency": bool(self.frequency_corpus.strip()),
                "prefixed": bool(self.recall_prefix.strip()) or self.recall_shots > 0}
        return [name for name, attack in ATTACKS.items() if have[attack.needs]]


NEEDS_TEXT = {"reference": "a reference model (--reference)",
              "frequency": "a frequency corpus (--frequency-corpus)",
              "prefixed": "a prefix (--recall-prefix) or recall shots > 0"}


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


def _recall_prefix(config: MiaConfig, labelled: LabelledSet,
                   chosen: list[str]) -> tuple[str, list[LabelledText], list[str]]:
    """ReCaLL's prefix, the texts left to evaluate, and a note: typed, or ``recall_shots``
    known non-members drawn at random and removed from the evaluation."""
    if "recall" not in chosen:
        return "", labelled.texts, []
    if config.recall_prefix.strip():
        return config.recall_prefix, labelled.texts, []
    outside = [i for i, t in enumerate(labelled.texts) if not t.member]
    if len(outside) - config.recall_shots < 2:
        raise UserError(f"ReCaLL draws {config.recall_shots} non-members as its prefix, which "
                        f"leaves fewer than 2 of the {len(outside)} to evaluate: type a prefix "
                        "or lower recall_shots")
    shots = set(np.random.default_rng(config.seed).choice(outside, config.recall_shots,
                                                          replace=False).tolist())
    prefix = "\n\n".join(labelled.texts[i].text for i in sorted(shots)) + "\n\n"
    kept = [t for i, t in enumerate(labelled.texts) if i not in shots]
    return prefix, kept, [f"ReCaLL's prefix is {len(shots)} known non-members drawn at random; "
                          "they are left out of every attack's evaluation."]


def _needs_reference(chosen: list[str]) -> bool:
    return any(ATTACKS[name].needs == "reference" for name in chosen)


def _missing_notes(config: MiaConfig, chosen: list[str]) -> list[str]:
    """A note naming the attacks left out for want of a reference model."""
    left = [ATTACKS[n].title for n, a in ATTACKS.items() if a.needs == "reference"
            and n not in chosen]
    if not left or config.attacks:
        return []
    return [f"{' and '.join(left)} need a reference model (--reference: the target's base, e.g. "
            "the model before fine-tuning): not run."]


def _settings(config: MiaConfig, target, chosen: list[str]) -> ScoreSettings:
    frequency = None
    if "dcpdd" in chosen:
        corpus = read_texts(config.frequency_corpus)
        ids = target.tokenizer(corpus, add_special_tokens=False)["input_ids"]
        vocab = max(len(target.tokenizer), target.card.vocab_size)
        frequency = log_token_frequencies([np.asarray(i) for i in ids], vocab)
    mimir = config.scoring == "mimir"
    return ScoreSettings(k=config.k, log_frequency=frequency, dcpdd_cap=config.dcpdd_cap,
                         mimir=mimir, first_is_context=mimir and not adds_bos(target.tokenizer))


def adds_bos(tokenizer) -> bool:
    """Whether the tokenizer puts a BOS token before a text (Llama style; GPT-2 style: not)."""
    ids = tokenizer("a")["input_ids"]
    return tokenizer.bos_token_id is not None and ids[:1] == [tokenizer.bos_token_id]


def scoring_note(config: MiaConfig, settings: ScoreSettings) -> list[str]:
    """What the MIMIR-compatible scoring changed, for the result."""
    if config.scoring != "mimir":
        return []
    first = ("each text's first token is context only (tokens 2..n, the tokenizer adds no BOS)"
             if settings.first_is_context else "every token is scored (the tokenizer adds a BOS)")
    return [f"Scored as MIMIR does: {first}; Min-K% and Min-K%++ average the ⌊k·n⌋ lowest "
            "tokens (a text with none gets no score: the least member-like)."]


def _evaluate(config: MiaConfig, texts: list[LabelledText], scored: ScoredTexts,
              chosen: list[str], progress: Progress,
              cancel: threading.Event | None) -> tuple[list[AttackOutcome], dict[str, dict[str, float]]]:
    """Each attack's metrics over all texts, and its AUROC per group with both classes; a
    cancel stops it before the next attack's bootstrap."""
    labels = np.array([t.member for t in texts], dtype=int)
    groups = np.array([t.group for t in texts])
    masks = {g: groups == g for g in sorted(set(groups) - {""})}
    masks = {g: m for g, m in masks.items() if len(set(labels[m])) == 2}
    outcomes, by_group = [], {}
    for number, name in enumerate(chosen):
        check_cancel(cancel)
        progress(number / len(chosen), f"evaluating {ATTACKS[name].title} "
                 f"({config.bootstrap} bootstrap resamples)")
        values = scored.scores[name]
        outcomes.append(AttackOutcome(name, ATTACKS[name].title, ATTACKS[name].citation,
                                      me.evaluate(labels, values, group=name,
                                                  bootstrap=config.bootstrap, seed=config.seed)))
        if masks:
            by_group[name] = {g: float(roc_auc_score(labels[m], values[m]))
                              for g, m in masks.items()}
    return outcomes, by_group


def run(config: MiaConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> MiaResult:
    """Score the labelled texts (one pass per model), run every chosen attack, evaluate them and
    the blind baseline."""
    check_cancel(cancel)
    labelled = load_labelled(config.data)
    chosen = config.chosen()
    prefix, texts, notes = _recall_prefix(config, labelled, chosen)
    notes += _missing_notes(config, chosen)
    source, calibration, progress = calibrate_run(
        config.reference, config.domain_sample if _needs_reference(chosen) else "",
        steps=config.domain_steps, progress=progress, cancel=cancel, device=config.device)
    progress(0.0, "loading the models")
    target = resolve_model(config.model, device=config.device)
    reference = resolve_model(source, device=config.device) if _needs_reference(chosen) else None
    if reference is not None:
        check_same_vocabulary(target, reference, why="the reference ratio and EZ-MIA compare "
                              "the likelihood of the same tokens under both models")
    if "dcpdd" in chosen:
        progress(0.0, "token frequencies of the frequency corpus (DC-PDD)")
    settings = _settings(config, target, chosen)
    notes += scoring_note(config, settings)
    started = time.perf_counter()
    with counting_cache() as cached:
        scored = score_suite(target, reference, [t.text for t in texts], chosen, settings,
                             prefix=prefix, batch_size=config.batch_size or None,
                             progress=share(progress, 0, SCORING), cancel=cancel)
    scoring = time.perf_counter() - started
    outcomes, by_group = _evaluate(config, texts, scored, chosen,
                                   share(progress, SCORING, 0.95), cancel)
    check_cancel(cancel)
    progress(0.95, "the blind baseline (no model)")
    labels = np.array([t.member for t in texts], dtype=int)
    blind = me.evaluate(labels, blind_scores([t.text for t in texts], labels, seed=config.seed),
                        group="blind", bootstrap=config.bootstrap, seed=config.seed)
    result = MiaResult(
        model=config.model, reference=source if reference else "", data=config.data,
        attacks=outcomes, blind=blind, blind_features=FEATURES, warning=None,
        rows=[TextRow(t.text, t.member, t.group, n, {a: float(scored.scores[a][i]) for a in chosen},
                      *(scored.token_diffs[i] if scored.token_diffs else ([], [])))
              for i, (t, n) in enumerate(zip(texts, scored.n_tokens))],
        n_members=int(labels.sum()), n_non_members=int(len(labels) - labels.sum()),
        recall_prefix=prefix, group_auroc=by_group, notes=notes + scored.notes,
        sequences_scored=scored.sequences, device=str(target.device), scoring_seconds=scoring,
        analysis_seconds=time.perf_counter() - started - scoring)
    best = result.best()
    result.warning = blind_warning(blind.auroc, best.title, best.metrics.auroc)
    result.tpr_caps = tpr_caps(config)
    result.calibration = calibration
    if labelled.duplicates_dropped:
        result.notes.append(f"{labelled.duplicates_dropped} repeated texts were kept once.")
    result.notes += cached.note("The scoring time")
    progress(1.0, f"{len(chosen)} attacks on {len(texts)} texts")
    return result


def _with_ci(value: float | None, ci: list[float]) -> str:
    if value is None:
        return "—"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def comparison(result: MiaResult) -> list[dict[str, str]]:
    """The attacks, best AUROC first, then the blind baseline: one row each with AUROC and the
    TPR at each of ``me.FPR_POINTS`` FPR, 95% intervals in brackets (the page and the report)."""
    ranked = [(a.title, a.citation, a.metrics)
              for a in sorted(result.attacks, key=lambda a: -a.metrics.auroc)]
    rows = []
    for title, source, m in ranked + [("Blind baseline (no model)", "Das, Zhang & Tramèr 2024",
                                        result.blind)]:
        row = {"attack": title, "source": source, "AUROC [95% CI]": _with_ci(m.auroc, m.auroc_ci)}
        for fpr, attr in me.TPR_FIELDS.items():
            label = f"TPR @ {fpr:.1%} FPR".replace(".0%", "%")
            row[label] = _with_ci(getattr(m, attr), getattr(m, f"{attr}_ci"))
        rows.append(row)
    return rows


def tpr_caps(config: MiaConfig) -> dict[str, float]:
    """For a DP-SGD run (σ > 0): the largest TPR any membership attack reaches at each of
    ``me.FPR_POINTS`` FPR, from the run's privacy loss distribution (``core.bounds.risk``)."""
    if not config.sigma:
        return {}
    from core.bounds.risk import tpr_cap

    caps = tpr_cap(config.sigma, config.q, config.steps, list(me.FPR_POINTS))
    return {f"{fpr:g}": float(cap) for fpr, cap in zip(me.FPR_POINTS, caps)}


# ---------------------------------------------------------------- the spec

TINY_TEXTS = ("To be, or not to be, that is the question.",
              "Friends, Romans, countrymen, lend me your ears.",
              "Now is the winter of our discontent.",
              "All the world's a stage, and all the men and women merely players.",
              "The quality of mercy is not strained.",
              "If music be the food of love, play on.")


def tiny_config() -> MiaConfig:
    """Two untrained one-layer models, 12 labelled texts and a frequency corpus under
    ``home()/tiny``: every attack in a second or two."""
    from core.attacks.user_samples import write_samples
    from core.models.tiny import tiny_random_models

    model, reference = tiny_random_models(list(TINY_TEXTS), ["mia-target", "mia-reference"])
    folder = paths.home() / "tiny"
    folder.mkdir(parents=True, exist_ok=True)
    data, corpus = folder / "mia-texts.jsonl", folder / "mia-corpus.txt"
    records = [{"text": f"{t} ({i})", "member": i % 2 == 0, "group": "ab"[i % 3 == 0]}
               for i, t in enumerate(TINY_TEXTS * 2)]
    data.write_text(write_samples(records, "jsonl"), encoding="utf-8")
    corpus.write_text("\n".join(TINY_TEXTS), encoding="utf-8")
    return MiaConfig(model=model, reference=reference, data=str(data), recall_shots=1,
                     frequency_corpus=str(corpus), bootstrap=20, device="cpu")


def headline(result: MiaResult) -> dict[str, float]:
    return {"best_auroc": result.best().metrics.auroc, "blind_auroc": result.blind.auroc} | {
        f"auroc_{a.name}": a.metrics.auroc for a in result.attacks}


SPEC = AttackSpec(
    name="mia",
    title="Membership inference on texts (loss, reference, zlib, Min-K%, Min-K%++, ReCaLL, "
          "DC-PDD, EZ-MIA)",
    config_type=MiaConfig,
    result_type=MiaResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    table="rows",
    describe=lambda c: (f"membership inference on {c.data} against {c.model}"
                        + (f" (reference {c.reference})" if c.reference else "")
                        + describe_calibration(c.domain_sample)),
)

"""User inference (Kandpal et al. 2023, "User Inference Attacks on Large Language Models").

Was *this person's* data used to fine-tune the model? The attacker holds m fresh samples
x^(1..m) of the user's writing (not the training samples) and black-box access to the
fine-tuned model p_θ and a reference model p_ref (e.g. the model before fine-tuning), and
computes (§3, eq. 4)

    T̂(user) = (1/m) Σ_i [ log p_θ(x^(i)) − log p_ref(x^(i)) ],

with token-sum log-likelihoods from the shared scoring engine (a text longer than the model's
context is scored with the engine's sliding window, and the result says how many were).
A high T̂ says "held-in". With membership labels the attack is evaluated as in §4: ROC over
held-in vs held-out users, AUROC, TPR at 1% and 5% FPR (scikit-learn), with percentile
bootstrap intervals over users, and the attacker-knowledge curve (AUROC vs m, Figure 5).
Without labels the users are ranked by T̂ and a threshold is calibrated on users known to be
out. ``build_canary_users`` is Algorithm 1 (§4.3, App. D.2); ``core.attacks.user_whatif``
retrains the demo's update with canary users or mitigations and attacks it again.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.metrics import auc, roc_auc_score, roc_curve

from core import paths
from core.runtime import Progress, check_cancel, is_cancelled, no_progress
from core.specs import AttackSpec
from core.demo import scenario
from core.errors import UserError
from core.runtime import Cancelled
from core.models import resolve_model
from core.scoring import score_texts
from core.scoring.engine import MAX_WINDOW

DEMO_DATA = "demo:user_samples"   # the demo's attacker-side samples (never trained on)
FPR_POINTS = (0.01, 0.05)
MAX_KNOWLEDGE_M = 50
SCORE_CHUNK = 256                 # samples scored per step (progress, cancel, partial results)
TRUE = {"true", "1", "yes", "y", "t", "in", "member"}
FALSE = {"false", "0", "no", "n", "f", "out", "non-member", "nonmember"}


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class Sample:
    user_id: str
    text: str
    member: bool | None = None   # held-in / held-out; None: unknown
    canary: bool | None = None   # optional: a canary user (Kandpal §4.3)


def _parse_bool(value, what: str, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("", "nan", "none", "null"):
        return None
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise UserError(f"{where}: {what} must be true or false (or empty when unknown), not {value!r}")


def parse_samples(content: str, fmt: str) -> list[Sample]:
    """Samples from CSV or JSONL text with columns ``user_id``, ``text``, optional ``member``
    (true/false/empty) and ``canary``. Bad input raises ``UserError``:

    - a missing column, a line that is not JSON, an empty ``user_id`` or ``text``;
    - a user declared inconsistently: the same ``user_id`` both member and non-member (or
      labelled on some rows and not on others), or both canary and not;
    - fewer than two users.
    """
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(content))
        columns = reader.fieldnames or []
        rows = [(f"row {n + 2}", r) for n, r in enumerate(reader)]
    elif fmt == "jsonl":
        rows, columns = [], []
        for n, line in enumerate(content.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise UserError(f"line {n} is not JSON ({err.msg}): JSONL needs one object "
                                "per line") from None
            if not isinstance(record, dict):
                raise UserError(f"line {n} is not a JSON object with user_id and text")
            rows.append((f"line {n}", record))
            columns += [k for k in record if k not in columns]
    else:
        raise UserError(f"unknown data format {fmt!r}: use a .csv or .jsonl file")
    missing = [c for c in ("user_id", "text") if c not in columns]
    if missing:
        raise UserError(f"the data has no {' or '.join(missing)} column (columns found: "
                        f"{', '.join(map(str, columns)) or 'none'}); it needs user_id and text, "
                        "and optionally member (true/false)")
    samples = []
    for where, row in rows:
        user, text = row.get("user_id"), row.get("text")
        user = "" if user is None else str(user).strip()
        if not user:
            raise UserError(f"{where}: empty user_id")
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"{where}: user {user!r} has an empty text; fill it or remove the row")
        samples.append(Sample(user, text, _parse_bool(row.get("member"), "member", where),
                              _parse_bool(row.get("canary"), "canary", where)))
    by_user = group_by_user(samples)
    for user, items in by_user.items():
        for attr in ("member", "canary"):
            values = {getattr(s, attr) for s in items}
            if len(values) > 1:
                raise UserError(f"user {user!r} is declared with {attr} = "
                                f"{' and '.join(sorted(map(str, values)))} on different rows: one user "
                                "id must have one label (rename one of the users if they differ)")
    if len(by_user) < 2:
        raise UserError(f"the data holds {len(by_user)} user(s); user inference needs at least two")
    return samples


def resolve_data(data: str) -> Path:
    """The data file: ``demo:user_samples`` (the demo's attacker-side samples) or a path."""
    if data.strip() == DEMO_DATA:
        return scenario.data_file("user_samples")
    path = Path(data.strip()).expanduser()
    if not data.strip() or not path.is_file():
        raise UserError(f"data file {data!r} not found: give a .csv or .jsonl file of user samples "
                        f"(or {DEMO_DATA} for the demo's)")
    return path


def load_samples(data: str) -> list[Sample]:
    """``parse_samples`` of a file (format from its extension: .csv, .jsonl/.ndjson)."""
    path = resolve_data(data)
    fmt = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(path.suffix.lower())
    if fmt is None:
        raise UserError(f"{path.name}: use a .csv or .jsonl file of user samples")
    try:
        content = path.read_text(encoding="utf-8-sig")  # a spreadsheet's BOM is not a column name
    except UnicodeDecodeError:
        raise UserError(f"{path.name} is not UTF-8 text") from None
    return parse_samples(content, fmt)


def group_by_user(samples: list[Sample]) -> dict[str, list[Sample]]:
    """Samples by user id, in first-seen order."""
    users: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        users[s.user_id].append(s)
    return dict(users)


def write_samples(samples: list[dict], fmt: str) -> str:
    """Records (dicts with user_id, text, ...) as CSV or JSONL text, for downloads."""
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in samples)
    out = io.StringIO()
    fields = list(dict.fromkeys(k for r in samples for k in r))
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(samples)
    return out.getvalue()


# ---------------------------------------------------------------- the statistic


def user_statistic(log_ratios: dict[str, np.ndarray]) -> dict[str, float]:
    """T̂(user) = mean over the user's samples of log p_θ(x) − log p_ref(x) (Kandpal eq. 4)."""
    return {user: float(np.mean(values)) for user, values in log_ratios.items()}


# ---------------------------------------------------------------- metrics


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, target: float) -> float:
    """The highest TPR among ROC points whose FPR is at most ``target``.

    No interpolation between ROC points: the value is that of a threshold that exists
    (Carlini et al. 2022's convention), so with n held-out users an FPR below 1/n allows
    no false positive at all.
    """
    return float(np.max(tpr[fpr <= target + 1e-12]))


@dataclass
class Metrics:
    """Attack success on one group of users (``all``, ``real`` or ``canary``)."""

    group: str
    n_in: int
    n_out: int
    auroc: float
    tpr_at_1pct_fpr: float
    tpr_at_5pct_fpr: float
    auroc_ci: list[float] = field(default_factory=list)   # [low, high]; empty without bootstrap
    tpr_at_1pct_fpr_ci: list[float] = field(default_factory=list)
    tpr_at_5pct_fpr_ci: list[float] = field(default_factory=list)
    roc_fpr: list[float] = field(default_factory=list)
    roc_tpr: list[float] = field(default_factory=list)


def _scalar_metrics(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float, float]:
    fpr, tpr, _ = roc_curve(labels, scores)
    return (float(auc(fpr, tpr)),) + tuple(tpr_at_fpr(fpr, tpr, f) for f in FPR_POINTS)


def evaluate(labels, scores, *, group: str = "all", bootstrap: int = 1000, seed: int = 0,
             confidence: float = 0.95) -> Metrics:
    """AUROC (``roc_auc_score``), TPR at 1% / 5% FPR and the ROC of ``scores`` against
    ``labels`` (1 = held-in), with percentile bootstrap intervals: ``bootstrap`` resamples of
    the held-in and of the held-out users, each with replacement and at its own size
    (Kandpal et al. bootstrap held-in and held-out users), from ``seed``."""
    labels, scores = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)
    inside, outside = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    if not len(inside) or not len(outside):
        raise UserError(f"{group}: the evaluation needs both held-in and held-out users "
                        f"(got {len(inside)} in, {len(outside)} out)")
    fpr, tpr, _ = roc_curve(labels, scores)
    metrics = Metrics(group, len(inside), len(outside), float(roc_auc_score(labels, scores)),
                      tpr_at_fpr(fpr, tpr, 0.01), tpr_at_fpr(fpr, tpr, 0.05),
                      roc_fpr=fpr.tolist(), roc_tpr=tpr.tolist())
    if bootstrap:
        rng = np.random.default_rng(seed)
        draws = np.array([_scalar_metrics(labels[idx], scores[idx]) for idx in (
            np.concatenate([rng.choice(inside, len(inside)), rng.choice(outside, len(outside))])
            for _ in range(bootstrap))])
        tail = 100 * (1 - confidence) / 2
        low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
        metrics.auroc_ci, metrics.tpr_at_1pct_fpr_ci, metrics.tpr_at_5pct_fpr_ci = (
            [float(low[i]), float(high[i])] for i in range(3))
    return metrics


def check_bootstrap(bootstrap: int) -> None:
    """A ``UserError`` unless ``bootstrap`` is 0 (no intervals) or 10..100000 resamples."""
    if not (bootstrap == 0 or 10 <= bootstrap <= 100_000):
        raise UserError(f"bootstrap must be 0 (no intervals) or 10..100000, not {bootstrap}")


@dataclass
class KnowledgePoint:
    """AUROC when the attacker holds m samples per user: mean and std over random draws."""

    m: int
    auroc_mean: float
    auroc_std: float
    users_short: int    # users with fewer than m samples (they use all theirs)


def knowledge_curve(log_ratios: dict[str, np.ndarray], members: dict[str, bool], *,
                    max_m: int = MAX_KNOWLEDGE_M, draws: int = 100, seed: int = 0,
                    cancel: threading.Event | None = None) -> list[KnowledgePoint]:
    """Kandpal Figure 5: AUROC of T̂ computed on m random samples per user, m = 1 .. min(max_m,
    the most samples any user has); a user with fewer than m samples uses all of theirs."""
    users = [u for u in log_ratios if members.get(u) is not None]
    labels = np.array([members[u] for u in users], dtype=int)
    values = [np.asarray(log_ratios[u], dtype=float) for u in users]
    rng = np.random.default_rng(seed)
    points = []
    for m in range(1, min(max_m, max(len(v) for v in values)) + 1):
        if is_cancelled(cancel):
            break
        aurocs = [roc_auc_score(labels, [rng.choice(v, min(m, len(v)), replace=False).mean()
                                         for v in values]) for _ in range(draws)]
        points.append(KnowledgePoint(m, float(np.mean(aurocs)), float(np.std(aurocs)),
                                     sum(len(v) < m for v in values)))
    return points


def calibrate_threshold(known_out: np.ndarray, fpr: float) -> float:
    """The threshold τ such that flagging T̂ > τ flags floor(fpr · n) of the n users known to be
    out (their (1 − fpr) empirical quantile): τ is the (floor(fpr · n) + 1)-th largest T̂."""
    ordered = np.sort(np.asarray(known_out, dtype=float))[::-1]
    return float(ordered[min(int(np.floor(fpr * len(ordered) + 1e-9)), len(ordered) - 1)])


# ---------------------------------------------------------------- the attack


@dataclass
class UserInferenceConfig:
    """A target model, a reference model and a file of user samples (sources as strings)."""

    model: str = "demo:updated"
    reference: str = "demo:base"
    data: str = DEMO_DATA          # CSV/JSONL: user_id, text, optional member / canary
    bootstrap: int = 1000          # resamples of users for the intervals (0: none)
    knowledge_draws: int = 100     # random draws of samples per m (Figure 5); 0: no curve
    calibration_fpr: float = 0.05  # target FPR of the threshold calibrated on known-out users
    seed: int = 0
    batch_size: int = 0            # 0: the engine sizes batches to memory

    def __post_init__(self):
        if not self.model.strip() or not self.reference.strip():
            raise UserError("give both a target model and a reference model")
        check_bootstrap(self.bootstrap)
        if not 0 <= self.knowledge_draws <= 10_000:
            raise UserError(f"knowledge_draws must be 0..10000, not {self.knowledge_draws}")
        if not 0 < self.calibration_fpr < 1:
            raise UserError(f"calibration_fpr must be between 0 and 1, not {self.calibration_fpr}")
        if self.batch_size < 0:
            raise UserError(f"batch_size must be >= 0 (0: automatic), not {self.batch_size}")


@dataclass
class UserRow:
    """One user's score; ``flagged`` when T̂ is above the calibrated threshold."""

    rank: int
    user_id: str
    t_hat: float
    m: int
    member: bool | None
    canary: bool | None
    mean_target_logprob: float
    mean_reference_logprob: float
    flagged: bool | None


@dataclass
class SampleRow:
    user_id: str
    index: int              # the sample's position among the user's samples in the file
    n_tokens: int
    target_logprob: float
    reference_logprob: float
    log_ratio: float
    windowed: bool          # longer than the context: scored with the engine's sliding window
    text: str


@dataclass
class UserInferenceResult:
    rows: list[UserRow]                  # users ranked by T̂, highest first (the main table)
    samples: list[SampleRow]
    metrics: list[Metrics]               # groups "all" (and "real"/"canary"); empty without labels
    knowledge: list[KnowledgePoint]
    auroc: float | None                  # the "all" group, also top level for the CLI
    auroc_ci: list[float]
    tpr_at_1pct_fpr: float | None
    tpr_at_1pct_fpr_ci: list[float]
    tpr_at_5pct_fpr: float | None
    tpr_at_5pct_fpr_ci: list[float]
    threshold: float | None              # calibrated on users known to be out (member = false)
    calibration_fpr: float
    n_known_out: int
    n_users: int
    n_samples: int
    window: int
    windowed_samples: int
    notes: list[str]
    model: str
    reference: str
    data: str
    device: str
    seconds: float                       # scoring and analysis, after the models were loaded
    users_per_minute: float
    stopped_early: bool = False


def _check_same_vocabulary(target, reference) -> None:
    if target.tokenizer.get_vocab() != reference.tokenizer.get_vocab():
        raise UserError(f"{target.source} and {reference.source} have different tokenizers: user "
                        "inference compares the likelihood of the same tokens, so the reference "
                        "must share the target's vocabulary (e.g. the model before fine-tuning)")


def run(config: UserInferenceConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> UserInferenceResult:
    """Score every sample under both models, then T̂ per user, metrics, curve and ranking.

    Samples are scored in chunks of whole users; when ``cancel`` is set the users finished so
    far are evaluated and returned with ``stopped_early=True``.
    """
    check_cancel(cancel)
    samples = load_samples(config.data)
    progress(0.0, "loading the models")
    target, reference = resolve_model(config.model), resolve_model(config.reference)
    _check_same_vocabulary(target, reference)
    started = time.perf_counter()  # the timing leaves model loading out
    window = min(target.card.context_length, reference.card.context_length, MAX_WINDOW)
    options = dict(batch_size=config.batch_size or None, window=window)

    chunks, chunk = [], []
    for items in group_by_user(samples).values():
        chunk += items
        if len(chunk) >= SCORE_CHUNK:
            chunks.append(chunk)
            chunk = []
    chunks += [chunk] if chunk else []
    scored: list[SampleRow] = []
    stopped = False
    for number, chunk in enumerate(chunks):
        try:
            check_cancel(cancel)
            texts = [s.text for s in chunk]
            ours, theirs = score_texts(target, texts, **options), score_texts(reference, texts, **options)
        except Cancelled:
            stopped = True
            break
        counters = defaultdict(int)  # a chunk holds whole users
        for s, a, b in zip(chunk, ours, theirs):
            scored.append(SampleRow(s.user_id, counters[s.user_id], len(a.token_ids),
                                    a.total_logprob, b.total_logprob,
                                    a.total_logprob - b.total_logprob,
                                    len(a.token_ids) + 1 > window, s.text))
            counters[s.user_id] += 1
        progress(0.85 * (number + 1) / len(chunks), f"scored {len(scored)} of {len(samples)} samples")
    if not scored:
        raise Cancelled("cancelled before any user was scored")
    result = _analyse(config, samples, scored, window, stopped, cancel)
    result.device = str(target.device)
    result.seconds = time.perf_counter() - started
    result.users_per_minute = 60 * result.n_users / max(result.seconds, 1e-9)
    progress(1.0, f"{result.n_users} users scored")
    return result


def _analyse(config: UserInferenceConfig, samples: list[Sample], scored: list[SampleRow],
             window: int, stopped: bool, cancel: threading.Event | None) -> UserInferenceResult:
    """T̂ per user, the metrics by group, the knowledge curve and the calibrated ranking."""
    first = {s.user_id: s for s in reversed(samples)}  # each user's declared labels
    log_ratios: dict[str, list[float]] = defaultdict(list)
    target_lp, reference_lp = defaultdict(list), defaultdict(list)
    for row in scored:
        log_ratios[row.user_id].append(row.log_ratio)
        target_lp[row.user_id].append(row.target_logprob)
        reference_lp[row.user_id].append(row.reference_logprob)
    log_ratios = {u: np.array(v) for u, v in log_ratios.items()}
    t_hat = user_statistic(log_ratios)
    users = sorted(t_hat, key=lambda u: -t_hat[u])
    members = {u: first[u].member for u in users}
    notes = []

    metrics: list[Metrics] = []
    labelled = all(members[u] is not None for u in users)
    if labelled and len(set(members.values())) == 2:
        groups = {"all": users}
        if all(first[u].canary is not None for u in users):
            for name, flag in (("real", False), ("canary", True)):
                chosen = [u for u in users if first[u].canary is flag]
                if len({members[u] for u in chosen}) == 2:
                    groups[name] = chosen
        for name, chosen in groups.items():
            metrics.append(evaluate([members[u] for u in chosen], [t_hat[u] for u in chosen],
                                    group=name, bootstrap=config.bootstrap, seed=config.seed))
    elif not labelled:
        notes.append("Not every user has a member label: users are ranked by T̂ only (no ROC).")
    else:
        notes.append("Every user has the same member label: no ROC can be drawn.")
    knowledge = []
    if metrics and config.knowledge_draws:
        knowledge = knowledge_curve(log_ratios, members, draws=config.knowledge_draws,
                                    seed=config.seed, cancel=cancel)

    known_out = [t_hat[u] for u in users if members[u] is False]
    threshold = calibrate_threshold(np.array(known_out), config.calibration_fpr) if known_out else None
    if known_out and len(known_out) < 1 / config.calibration_fpr:
        notes.append(f"Only {len(known_out)} users are known to be out: the threshold flags none "
                     f"of them, a coarser calibration than FPR {config.calibration_fpr:g}.")
    elif not known_out:
        notes.append("No user is marked member = false, so no threshold could be calibrated.")
    rows = [UserRow(rank, u, t_hat[u], len(log_ratios[u]), members[u], first[u].canary,
                    float(np.mean(target_lp[u])), float(np.mean(reference_lp[u])),
                    None if threshold is None else bool(t_hat[u] > threshold))
            for rank, u in enumerate(users, 1)]
    repeats = sum(len(items) - len({s.text for s in items}) for items in group_by_user(samples).values())
    if repeats:
        notes.append(f"{repeats} samples repeat an earlier sample of the same user; each counts in T̂.")
    windowed = sum(r.windowed for r in scored)
    if windowed:
        notes.append(f"{windowed} samples are longer than the context ({window} tokens) and were "
                     f"scored with a sliding window (stride {max(1, window // 2)}): none was cut.")
    if stopped:
        notes.append(f"Stopped early: {len(users)} of {len(group_by_user(samples))} users scored.")
    top = metrics[0] if metrics else None
    return UserInferenceResult(
        rows=rows, samples=scored, metrics=metrics, knowledge=knowledge,
        auroc=top and top.auroc, auroc_ci=top.auroc_ci if top else [],
        tpr_at_1pct_fpr=top and top.tpr_at_1pct_fpr, tpr_at_1pct_fpr_ci=top.tpr_at_1pct_fpr_ci if top else [],
        tpr_at_5pct_fpr=top and top.tpr_at_5pct_fpr, tpr_at_5pct_fpr_ci=top.tpr_at_5pct_fpr_ci if top else [],
        threshold=threshold, calibration_fpr=config.calibration_fpr, n_known_out=len(known_out),
        n_users=len(users), n_samples=len(scored), window=window, windowed_samples=windowed,
        notes=notes, model=config.model, reference=config.reference, data=config.data,
        device="", seconds=0.0, users_per_minute=0.0, stopped_early=stopped)


# ---------------------------------------------------------------- canary users (§4.3)


@dataclass
class CanaryUser:
    user_id: str
    substring: str
    words: int
    samples: int


def build_canary_users(samples: list[Sample], *, words: int, count: int = 1,
                       user_ids: list[str] | None = None,
                       seed: int = 0) -> tuple[list[dict], list[CanaryUser]]:
    """Kandpal et al. Algorithm 1 on a copy of a dataset: for each canary user (``user_ids``,
    else ``count`` users drawn uniformly among those not yet canaries), draw one of their
    samples with at least ``words`` words, draw a contiguous ``words``-word substring of it, and
    insert that substring at a random position of every sample of the user. Returns the
    copy's records (``user_id``, ``text``, ``member`` when known, ``canary``) and the canaries.
    Substrings are counted in words (whitespace-separated), not model tokens, so the copy does
    not depend on a tokenizer."""
    if words < 1:
        raise UserError(f"the shared substring needs at least one word, not {words}")
    by_user = group_by_user(samples)
    long_enough = [u for u, items in by_user.items()
                   if not items[0].canary and any(len(s.text.split()) >= words for s in items)]
    rng = random.Random(seed)
    if user_ids:
        unknown = [u for u in user_ids if u not in by_user]
        if unknown:
            raise UserError(f"no such user(s) in the data: {', '.join(unknown[:5])}")
        short = [u for u in user_ids if u not in long_enough]
        if short:
            raise UserError(f"user(s) {', '.join(short[:5])} have no sample of {words} words (or are "
                            "canaries already): choose others or a shorter substring")
        chosen = list(dict.fromkeys(user_ids))
    else:
        if not 1 <= count <= len(long_enough):
            raise UserError(f"{count} canary users asked, but {len(long_enough)} users have a "
                            f"sample of at least {words} words")
        chosen = rng.sample(long_enough, count)
    canaries, texts = [], {}
    for user in chosen:
        source = rng.choice([s.text.split() for s in by_user[user] if len(s.text.split()) >= words])
        start = rng.randrange(len(source) - words + 1)
        substring = " ".join(source[start: start + words])
        texts[user] = [scenario.insert_at_random(s.text, substring, rng) for s in by_user[user]]
        canaries.append(CanaryUser(user, substring, words, len(texts[user])))
    position = defaultdict(int)
    records = []
    for s in samples:
        text = s.text
        if s.user_id in texts:
            text = texts[s.user_id][position[s.user_id]]
            position[s.user_id] += 1
        record = {"user_id": s.user_id, "text": text}
        if s.member is not None:
            record["member"] = s.member
        records.append(record | {"canary": bool(s.canary) or s.user_id in texts})
    return records, canaries


# ---------------------------------------------------------------- registry


def micro_demo_config():
    """The demo's tiny config shrunk further (one layer, 45 steps: seconds), for tiny runs and tests."""
    return dataclasses.replace(scenario.tiny_config(), vocab_size=300, n_layer=1, n_embd=32,
                               base_steps=5, update_steps=40, validation_tokens=500)


def tiny_config() -> UserInferenceConfig:
    """The attack on a micro demo built (once per data folder) under ``home()/user-inference``."""
    root = paths.home() / "user-inference" / "tiny-demo"
    scenario.build(micro_demo_config(), root=root)
    return UserInferenceConfig(model=str(scenario.model_dir("updated", root)),
                               reference=str(scenario.model_dir("base", root)),
                               data=str(scenario.data_file("user_samples", root)),
                               bootstrap=50, knowledge_draws=5)


SPEC = AttackSpec(
    name="user-inference",
    title="User inference (Kandpal et al. 2023)",
    kind="privacy",
    config_type=UserInferenceConfig,
    run=run,
    tiny_config=tiny_config,
)

"""User inference (Kandpal et al. 2023, "User Inference Attacks on Large Language Models").

Was *this person's* data used to fine-tune the model? The attacker holds m fresh samples
x^(1..m) of the user's writing (not the training samples) and black-box access to the
fine-tuned model p_θ and a reference model p_ref (e.g. the model before fine-tuning; given a
public in-domain sample, its domain reference: ``core.calibration.domain``), and computes (§3, eq. 4)

    T̂(user) = (1/m) Σ_i [ log p_θ(x^(i)) − log p_ref(x^(i)) ],

with token-sum log-likelihoods from the shared scoring engine (a text longer than the model's
context is scored with the engine's sliding window, and the result says how many were). A
sample that is a fine-tuner's row (``core.chat``) is rendered with the target's chat template and
its log-likelihood sums the tokens training learnt from (the assistant's, the completion's)
given the rest of the row.
A high T̂ says "held-in". With membership labels the attack is evaluated as in §4
(``core.evaluation.membership``): ROC over held-in vs held-out users, AUROC, TPR at 1% and
5% FPR, bootstrap intervals over users, and the attacker-knowledge curve (AUROC vs m,
Figure 5). Without labels the users are ranked by T̂ and a threshold is calibrated on users
known to be out. The samples are read by ``core.attacks.user_inference.samples``; canary users
(Algorithm 1) are made by ``core.attacks.user_inference.canaries``.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np

from core import paths
from core.attacks.user_inference.audit_hooks import AUDIT
from core.attacks.user_inference.config import FEW_USERS, SCORE_CHUNK, SCORING, UserInferenceConfig
from core import chat
from core.attacks.user_inference.samples import (Sample, group_by_user, read_samples,
                                                 rendered_samples, write_samples)
from core.calibration.config import DomainCalibration
from core.calibration.domain import calibrate_run, describe_calibration
from core.evaluation import membership as me
from core.models import resolve_model
from core.models.compat import check_same_vocabulary
from core.models.tiny import tiny_random_models
from core.runtime import Cancelled, Progress, check_cancel, is_cancelled, no_progress
from core.scoring import score_texts
from core.scoring.engine import counting_cache
from core.scoring.windows import MAX_WINDOW, shared_window
from core.specs import AttackSpec
from core.attacks.user_inference import cost as attack_cost


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
    metrics: list[me.Metrics]            # groups "all" (and "real"/"canary"); empty without labels
    knowledge: list[me.KnowledgePoint]
    auroc: float | None                  # the "all" group, also at the top level
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
    reference: str                       # the model compared with (a domain reference's folder)
    data: str
    device: str
    seconds: float                       # scoring and analysis, after the models were loaded
    users_per_minute: float
    stopped_early: bool = False
    calibration: DomainCalibration = field(default_factory=DomainCalibration)


def user_statistic(log_ratios: dict[str, np.ndarray]) -> dict[str, float]:
    """T̂(user) = mean over the user's samples of log p_θ(x) − log p_ref(x) (Kandpal eq. 4)."""
    return {user: float(np.mean(values)) for user, values in log_ratios.items()}


def _chunks(samples: list[Sample]) -> list[list[Sample]]:
    """Whole users, about ``SCORE_CHUNK`` samples per chunk."""
    chunks, chunk = [], []
    for items in group_by_user(samples).values():
        chunk += items
        if len(chunk) >= SCORE_CHUNK:
            chunks.append(chunk)
            chunk = []
    return chunks + ([chunk] if chunk else [])


def _log_likelihoods(lm, chunk: list[Sample], window: int,
                     **options) -> list[tuple[int, float, bool]]:
    """Each sample's tokens scored, their summed log p, and whether it overflowed the window:
    a text's every token, a rendered row's trained tokens after the rest of the row."""
    if chunk[0].ids:
        scored = chat.trained_logprobs(lm, chunk, window=window, **options)
        return [(len(v), float(np.sum(v, dtype=np.float64)), len(s.ids) > window)
                for v, s in zip(scored, chunk)]
    scored = score_texts(lm, [s.text for s in chunk], window=window, **options)
    return [(len(a.token_ids), a.total_logprob, len(a.token_ids) + 1 > window) for a in scored]


def _score(target, reference, samples: list[Sample], window: int, batch_size: int,
           progress: Progress, cancel: threading.Event | None) -> tuple[list[SampleRow], bool]:
    """Both models' log-likelihood of every sample, chunk by chunk (a cancel stops it at the
    engine's next batch); whether it stopped early. After each chunk the T̂ of its users joins
    the partial result."""
    options = dict(batch_size=batch_size or None, cancel=cancel)
    chunks = _chunks(samples)
    scored: list[SampleRow] = []
    t_hat: dict[str, float] = {}  # users finished so far: the partial result a killed run keeps
    for number, chunk in enumerate(chunks):
        def part(half: int, model: str, n=number) -> Progress:
            return lambda f, m="": progress(SCORING * (n + (half + f) / 2) / len(chunks),
                                            f"{model} model: {m} ({len(scored)} of "
                                            f"{len(samples)} samples done)")
        try:
            ours = _log_likelihoods(target, chunk, window, progress=part(0, "target"), **options)
            theirs = _log_likelihoods(reference, chunk, window, progress=part(1, "reference"),
                                      **options)
        except Cancelled:
            return scored, True
        counters = defaultdict(int)  # a chunk holds whole users
        for s, (n, a, windowed), (_, b, _) in zip(chunk, ours, theirs):
            scored.append(SampleRow(s.user_id, counters[s.user_id], n, a, b, a - b, windowed,
                                    s.text))
            counters[s.user_id] += 1
        t_hat |= user_statistic({u: np.array([r.log_ratio for r in scored[-len(chunk):]
                                              if r.user_id == u]) for u in counters})
        progress(SCORING * (number + 1) / len(chunks), f"scored {len(scored)} of {len(samples)} samples",
                 partial={"samples_scored": len(scored), "t_hat_so_far": dict(t_hat)})
    return scored, False


def run(config: UserInferenceConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> UserInferenceResult:
    """Score every sample under both models, then T̂ per user, metrics, curve and ranking.

    Samples are scored in chunks of whole users; when ``cancel`` is set the users finished so
    far are evaluated and returned with ``stopped_early=True``.
    """
    check_cancel(cancel)
    table = read_samples(config.data, config.mask)
    source, calibration, progress = calibrate_run(config.reference, config.domain_sample,
                                                  steps=config.domain_steps, progress=progress,
                                                  cancel=cancel, device=config.device)
    progress(0.0, "loading the models")
    target = resolve_model(config.model, device=config.device)
    reference = resolve_model(source, device=config.device)
    check_same_vocabulary(target, reference, why="user inference compares the likelihood of the "
                          "same tokens under both models (the reference is e.g. the model "
                          "before fine-tuning)")
    samples = rendered_samples(table, target, mask=config.mask, template=config.chat_template)
    started = time.perf_counter()  # the timing leaves model loading out
    window = shared_window(target, reference)
    with counting_cache() as cached:
        scored, stopped = _score(target, reference, samples, window, config.batch_size, progress,
                                 cancel)
    if not scored:
        raise Cancelled("cancelled before any user was scored")
    result = _analyse(config, samples, scored, window, stopped, cancel, progress)
    result.reference, result.calibration = source, calibration
    result.device = str(target.device)
    result.seconds = time.perf_counter() - started
    result.users_per_minute = 60 * result.n_users / max(result.seconds, 1e-9)
    result.notes += cached.note("Users per minute")
    if table.rendered:
        result.notes.insert(0, table.note(samples, config.mask, target.name))
    progress(1.0, f"{result.n_users} users scored")
    return result


def _evaluate_groups(config: UserInferenceConfig, users: list[str], t_hat: dict[str, float],
                     first: dict[str, Sample]) -> list[me.Metrics]:
    """The metrics of all users, and of the real and the canary users apart when each group
    has both held-in and held-out users."""
    members = {u: first[u].member for u in users}
    groups = {"all": users}
    if all(first[u].canary is not None for u in users):
        for name, flag in (("real", False), ("canary", True)):
            chosen = [u for u in users if first[u].canary is flag]
            if len({members[u] for u in chosen}) == 2:
                groups[name] = chosen
    return [me.evaluate([members[u] for u in chosen], [t_hat[u] for u in chosen], group=name,
                        bootstrap=config.bootstrap, seed=config.seed)
            for name, chosen in groups.items()]


def _few_users_notes(metrics: list[me.Metrics]) -> list[str]:
    """A note for each group too small for its figures to carry an interval."""
    return [f"The {m.group} group has only {m.n_in} held-in and {m.n_out} held-out users: AUROC "
            f"can take only {m.n_in * m.n_out + 1} values, and a bootstrap over so few users "
            "understates the uncertainty (its interval may even be a single point)."
            for m in metrics if min(m.n_in, m.n_out) < FEW_USERS]


def _calibration_notes(known_out: list[float], fpr: float) -> list[str]:
    if not known_out:
        return ["No user is marked member = false, so no threshold could be calibrated."]
    if len(known_out) < 1 / fpr:
        return [f"Only {len(known_out)} users are known to be out: the threshold flags none "
                f"of them, a coarser calibration than FPR {fpr:g}."]
    return []


def _data_notes(samples: list[Sample], scored: list[SampleRow], window: int, n_users: int,
                stopped: bool) -> list[str]:
    by_user = group_by_user(samples)
    notes = []
    repeats = sum(len(items) - len({s.text for s in items}) for items in by_user.values())
    if repeats:
        notes.append(f"{repeats} samples repeat an earlier sample of the same user; each counts in T̂.")
    windowed = sum(r.windowed for r in scored)
    if windowed:
        notes.append(f"{windowed} samples are longer than the scoring window ({window} tokens: "
                     f"the models' context, at most {MAX_WINDOW} to bound memory) and were scored "
                     f"with a sliding window (stride {max(1, window // 2)}): none was cut.")
    if stopped:
        notes.append(f"Stopped early: {n_users} of {len(by_user)} users scored.")
    return notes


def _metrics(config: UserInferenceConfig, t_hat: dict[str, float], first: dict[str, Sample],
             log_ratios: dict[str, np.ndarray], cancel: threading.Event | None,
             progress: Progress) -> tuple[list[me.Metrics], list[me.KnowledgePoint], list[str]]:
    """The metrics by group with their bootstrap intervals, then the knowledge curve, and notes;
    after a cancel neither the intervals nor the curve start."""
    users = sorted(t_hat, key=lambda u: -t_hat[u])
    members = {u: first[u].member for u in users}
    if any(m is None for m in members.values()):
        return [], [], ["Not every user has a member label: users are ranked by T̂ only (no ROC)."]
    if len(set(members.values())) < 2:
        return [], [], ["Every user has the same member label: no ROC can be drawn."]
    skipped = ["Cancelled: no bootstrap intervals and no attacker-knowledge curve."]
    if is_cancelled(cancel):
        return _evaluate_groups(replace(config, bootstrap=0), users, t_hat, first), [], skipped
    progress(0.87, f"bootstrap intervals over users ({config.bootstrap} resamples)")
    metrics = _evaluate_groups(config, users, t_hat, first)
    notes = _few_users_notes(metrics)
    if not config.knowledge_draws:
        return metrics, [], notes
    if is_cancelled(cancel):
        return metrics, [], notes + ["Cancelled: no attacker-knowledge curve."]
    progress(0.94, f"attacker-knowledge curve ({config.knowledge_draws} draws per m)")
    return metrics, me.knowledge_curve(log_ratios, members, draws=config.knowledge_draws,
                                       seed=config.seed, cancel=cancel), notes


def _analyse(config: UserInferenceConfig, samples: list[Sample], scored: list[SampleRow],
             window: int, stopped: bool, cancel: threading.Event | None,
             progress: Progress = no_progress) -> UserInferenceResult:
    """T̂ per user, the metrics by group, the knowledge curve and the calibrated ranking (each
    phase reported to ``progress``)."""
    first = {s.user_id: s for s in reversed(samples)}  # each user's declared labels
    by_user: dict[str, list[SampleRow]] = defaultdict(list)
    for row in scored:
        by_user[row.user_id].append(row)
    log_ratios = {u: np.array([r.log_ratio for r in rows]) for u, rows in by_user.items()}
    t_hat = user_statistic(log_ratios)
    users = sorted(t_hat, key=lambda u: -t_hat[u])
    members = {u: first[u].member for u in users}
    metrics, knowledge, notes = _metrics(config, t_hat, first, log_ratios, cancel, progress)
    progress(0.99, "ranking the users")
    known_out = [t_hat[u] for u in users if members[u] is False]
    threshold = me.calibrate_threshold(np.array(known_out), config.calibration_fpr) if known_out else None
    notes += _calibration_notes(known_out, config.calibration_fpr)
    notes += _data_notes(samples, scored, window, len(users), stopped)
    rows = [UserRow(rank, u, t_hat[u], len(log_ratios[u]), members[u], first[u].canary,
                    float(np.mean([r.target_logprob for r in by_user[u]])),
                    float(np.mean([r.reference_logprob for r in by_user[u]])),
                    None if threshold is None else bool(t_hat[u] > threshold))
            for rank, u in enumerate(users, 1)]
    top = metrics[0] if metrics else None
    return UserInferenceResult(
        rows=rows, samples=scored, metrics=metrics, knowledge=knowledge,
        auroc=top and top.auroc, auroc_ci=top.auroc_ci if top else [],
        tpr_at_1pct_fpr=top and top.tpr_at_1pct_fpr, tpr_at_1pct_fpr_ci=top.tpr_at_1pct_fpr_ci if top else [],
        tpr_at_5pct_fpr=top and top.tpr_at_5pct_fpr, tpr_at_5pct_fpr_ci=top.tpr_at_5pct_fpr_ci if top else [],
        threshold=threshold, calibration_fpr=config.calibration_fpr, n_known_out=len(known_out),
        n_users=len(users), n_samples=len(scored), window=window,
        windowed_samples=sum(r.windowed for r in scored), notes=notes, model=config.model,
        reference=config.reference, data=config.data, device="", seconds=0.0,
        users_per_minute=0.0, stopped_early=stopped)


# ---------------------------------------------------------------- the spec


TINY_TEXTS = [
    "To be, or not to be, that is the question.",
    "Whether 'tis nobler in the mind to suffer the slings and arrows of outrageous fortune.",
    "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him.",
    "Now is the winter of our discontent made glorious summer by this sun of York.",
]


def tiny_config() -> UserInferenceConfig:
    """Two untrained tiny models sharing a tokenizer, and six users (three held-in) with three
    samples each, written under ``home()/tiny``: the whole attack in about a second."""
    model, reference = tiny_random_models(TINY_TEXTS, ["target", "reference"])
    data = paths.home() / "tiny" / "user-inference-samples.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    records = [{"user_id": f"user{u}", "text": TINY_TEXTS[(u + i) % len(TINY_TEXTS)],
                "member": u < 3} for u in range(6) for i in range(3)]
    data.write_text(write_samples(records, "jsonl"), encoding="utf-8")
    return UserInferenceConfig(model=model, reference=reference, data=str(data), bootstrap=50,
                               knowledge_draws=5, device="cpu")


SPEC = AttackSpec(
    name="user-inference",
    title="User inference (Kandpal et al. 2023)",
    config_type=UserInferenceConfig,
    result_type=UserInferenceResult,
    run=run,
    tiny_config=tiny_config,
    headline=lambda r: {"auroc": r.auroc, "tpr_at_1pct_fpr": r.tpr_at_1pct_fpr,
                        "tpr_at_5pct_fpr": r.tpr_at_5pct_fpr, "n_users": r.n_users,
                        "users_per_minute": r.users_per_minute},
    describe=lambda c: (f"user inference: {c.model} vs {c.reference}"
                        f"{describe_calibration(c.domain_sample)}"),
    audit=AUDIT,
    cost=attack_cost.user_inference,
)

"""Example-level against user-level DP at the same ε, under the user inference attack (Kandpal
et al. 2023, §4.4: example-level DP protects records, not users; Charles et al., SaTML 2025).

On the demo build, demo:base is fine-tuned on the demo's users' private records (those with a
``user_id``; ``dp-finetune``, the same recipe, steps and δ for every arm) with

* example-level DP-SGD: Poisson over the N records at q = 1/⌈N/B⌉, each record clipped;
* user-level DP-SGD (``--unit user``): Poisson over the U users at q_u = 1/⌈U/B_u⌉, each
  sampled user contributing up to k records, clipped as one (``core.dp.user_level``);
* optionally no DP (σ = 0, example-level batches), the reference the attack should beat;

each σ being the smallest that meets the target ε at δ for its own (q, steps)
(``core.bounds.inverse.sigma_for_epsilon``, the RDP accountant of ``core.bounds``). Each model
is then attacked with user inference against demo:base on the demo's attacker-side samples
(``core.attacks.user_inference``): the AUROC of all, real and canary users with their bootstrap
intervals, side by side. ``dp-finetune``'s own secret canary is one more record (one more
user at user level). Trained runs and their exported models are cached under the lab home.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core import paths
from core.evaluation import membership as me
from core.attacks.user_inference import spec as ui
from core.attacks.user_inference.samples import write_samples
from core.bounds.inverse import sigma_for_epsilon
from core.demo import scenario
from core.demo.whatif import micro_demo, read_plain_records
from core.dp import finetune, training_params
from core.dp.finetune_data import prepare
from core.models import resolve_model
from core.runtime import Progress, check_cancel, no_progress
from core.specs import AttackSpec, check_params, param

ARMS = (("no DP", "example"), ("example-level DP", "example"), ("user-level DP", "user"))


@dataclass(frozen=True)
class UserLevelCompareConfig:
    """The target ε, the shared training recipe, the user-level sampling and the attack."""

    epsilon: float = param(8.0, gt=0.0, le=1_000.0, label="target ε",
                           help="both DP models are trained to this ε at δ")
    delta: float = param(1e-5, gt=0.0, lt=1.0, label="δ", help="δ of the target ε")
    steps: int = param(200, ge=1, le=100_000, help="optimizer steps of every model")
    batch_size: int = training_params.batch_size_param(32)
    users_per_step: int = param(8, ge=1, le=4096, help="user level: expected users per step "
                                "B_u (q_u = 1/⌈U/B_u⌉)")
    user_samples_per_step: int = param(4, ge=1, le=10_000, label="samples per user per step k",
                                       help="user level: records each sampled user contributes")
    lr: float = training_params.lr_param()
    clip: float = training_params.clip_param()
    block_size: int = param(96, ge=40, le=4096, help="tokens per record (longer ones are cut)")
    non_private: bool = param(True, label="train a no-DP model too",
                              help="σ = 0 with the same recipe: what the attack does without DP")
    bootstrap: int = me.bootstrap_param(200)
    seed: int = param(0, ge=0, le=2**31 - 1, help="training and bootstrap seed", page="advanced")
    demo_root: str = param("", path="folder", help="a demo build folder; empty: the installed demo")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="auto: CUDA when there is one",
                                                   page="advanced")

    def __post_init__(self) -> None:
        check_params(self)
        me.check_bootstrap(self.bootstrap)


@dataclass
class GroupAuroc:
    group: str                  # all, real or canary users
    n_in: int
    n_out: int
    auroc: float
    auroc_ci: list[float]       # 95% bootstrap interval over users; empty without bootstrap
    tpr_at_5pct_fpr: float


@dataclass
class ArmResult:
    label: str
    unit: str
    sigma: float
    q: float                    # over records, or users at user level
    epsilon: float | None       # Opacus' RDP accountant after the run (None without DP)
    validation_perplexity: float | None
    model_folder: str
    groups: list[GroupAuroc]
    train_seconds: float


@dataclass
class UserLevelCompareResult:
    config: UserLevelCompareConfig
    demo_hash: str
    n_records: int              # training records (the canary's one copy included)
    n_users: int                # users at user level (records without a user count one each)
    arms: list[ArmResult]
    seconds: float
    stopped_early: bool = False


def users_corpus(root: Path, demo_hash: str) -> Path:
    """The demo's private records that name a user, as a JSONL file under the lab home."""
    path = paths.cache_home() / "user-level-dp" / demo_hash / "private_users.jsonl"
    if not path.exists():
        records = [r for r in read_plain_records(scenario.data_file("private_train", root))
                   if r.get("user_id") is not None]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(write_samples(records, "jsonl"), encoding="utf-8")
    return path


def _finetune_config(config: UserLevelCompareConfig, root: Path, corpus: Path, unit: str,
                     sigma: float) -> finetune.DPFinetuneConfig:
    """The shared recipe: demo:base on the users' records, validated on the demo's play."""
    return finetune.DPFinetuneConfig(
        model=str(scenario.model_dir("base", root)), corpus=(str(corpus),),
        validation=str(scenario.data_file("validation", root)), sigmas=(sigma,),
        steps=config.steps, lr=config.lr, clip=config.clip, canary_repeats=1,
        max_records=1_000_000, block_size=config.block_size, track_every=config.steps,
        checkpoint_every=config.steps, validation_texts=100, delta=config.delta,
        seed=config.seed, device=config.device, unit=unit,
        batch_size=config.users_per_step if unit == "user" else config.batch_size,
        user_samples_per_step=config.user_samples_per_step)


def _sigmas(config: UserLevelCompareConfig, root: Path,
            corpus: Path) -> tuple[dict[str, float], int, int]:
    """σ of each arm for the target ε at its own q, and the records and users trained on."""
    rates, sizes = {}, {}
    for unit in ("example", "user"):
        plan = _finetune_config(config, root, corpus, unit, 1.0)
        data, _ = prepare(plan, resolve_model(plan.model, device=config.device).tokenizer)
        rates[unit], users = finetune.sampling_rate(data, plan.batch_size)
        sizes[unit] = users or len(data.inputs)
    solve = {unit: sigma_for_epsilon(q=q, steps=config.steps, delta=config.delta,
                                     target_epsilon=config.epsilon).sigma
             for unit, q in rates.items()}
    return solve, sizes["example"], sizes["user"]


def _attack(model: Path, root: Path, config: UserLevelCompareConfig, progress: Progress,
            cancel: threading.Event | None) -> list[GroupAuroc]:
    attack = ui.run(ui.UserInferenceConfig(
        model=str(model), reference=str(scenario.model_dir("base", root)),
        data=str(scenario.data_file("user_samples", root)), bootstrap=config.bootstrap,
        knowledge_draws=0, seed=config.seed, device=config.device), progress=progress,
        cancel=cancel)
    return [GroupAuroc(m.group, m.n_in, m.n_out, m.auroc, m.auroc_ci, m.tpr_at_5pct_fpr)
            for m in attack.metrics]


def _arm(label: str, plan: finetune.DPFinetuneConfig, root: Path, config, progress: Progress,
         cancel: threading.Event | None) -> ArmResult | None:
    """Train one model, export it and attack it (None when the training was cancelled)."""
    trained = finetune.run(plan, progress=lambda f, m="", partial=None: progress(0.8 * f, m),
                           cancel=cancel)
    (run,) = trained.runs
    if not run.finished:
        return None
    model = finetune.exported_model(trained, run.sigma)
    groups = _attack(model, root, config,
                     lambda f, m="", partial=None: progress(0.8 + 0.2 * f, f"attack: {m}"), cancel)
    return ArmResult(label, plan.unit, run.sigma, trained.q, run.opacus_epsilon,
                     run.validation_perplexity, str(model), groups, run.seconds)


def run(config: UserLevelCompareConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> UserLevelCompareResult:
    """σ for the target ε at each unit's q, then train, export and attack each arm in turn."""
    started = time.perf_counter()
    check_cancel(cancel)
    manifest = scenario.load_manifest(Path(config.demo_root) if config.demo_root else None)
    root = Path(manifest.root)
    progress(0.0, "finding each unit's σ for the target ε")
    corpus = users_corpus(root, manifest.config_hash)
    sigmas, n_records, n_users = _sigmas(config, root, corpus)
    arms = [(label, unit) for label, unit in ARMS if config.non_private or label != "no DP"]
    result = UserLevelCompareResult(config, manifest.config_hash, n_records, n_users, [], 0.0)
    for index, (label, unit) in enumerate(arms):
        sigma = 0.0 if label == "no DP" else sigmas[unit]
        arm = _arm(label, _finetune_config(config, root, corpus, unit, sigma), root, config,
                   lambda f, m="", partial=None, i=index, name=label: progress(
                       (i + f) / len(arms), f"{name}: {m}"), cancel)
        if arm is None:
            result.stopped_early = True
            break
        result.arms.append(arm)
    result.seconds = time.perf_counter() - started
    return result


def tiny_config() -> UserLevelCompareConfig:
    """Two steps per arm on the micro demo (one layer: seconds), no bootstrap."""
    return UserLevelCompareConfig(steps=2, batch_size=8, users_per_step=4, block_size=48,
                                  bootstrap=0, demo_root=micro_demo(), device="cpu")


def _headline(result: UserLevelCompareResult) -> dict:
    return {f"{arm.label}: {g.group} AUROC": g.auroc for arm in result.arms for g in arm.groups}


SPEC = AttackSpec(
    name="user-level-dp-compare",
    title="Example-level vs user-level DP against user inference (Kandpal et al. 2023, §4.4)",
    config_type=UserLevelCompareConfig,
    result_type=UserLevelCompareResult,
    run=run,
    tiny_config=tiny_config,
    headline=_headline,
    describe=lambda c: f"example- vs user-level DP at ε = {c.epsilon:g}, {c.steps} steps",
)

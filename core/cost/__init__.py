"""Cost before Run: the time and peak memory of a run, estimated from its config before it starts.

    from core import cost
    estimate = cost.estimate(spec, config)   # None for a spec that loads no language model
    cost.summary(estimate)                   # "about 12 min and 1.3 GB on this CPU"

A run is priced as a list of work items (``core.cost.work``: loads, scoring passes, generation,
training steps, the analysis), sized from the config (``core.cost.attacks``,
``core.cost.training``): samples x tokens x models generated, texts x tokens x models x passes
scored, steps x batch x block trained. The models' sizes are read from their configs, never their
weights (``core.cost.sizes``), and this machine's speed is a matrix product of the model's shape
timed now (``core.cost.rate``). Peak memory: the process, the models' weights and the largest
batch's activations, logits or optimizer state. Nothing is cached in the estimate: scores on
disk, a finished σ of DP fine-tuning or loaded models make a run faster than estimated (a cached
domain reference is seen and not counted).

Calibration (``bench.bench_cost``, the 2-core CPU shared with other work, float32, 2 threads):
the efficiencies of ``core.cost.work`` are fitted on SmolLM2-135M, whose matrix products
dominate, and the per-call and per-sequence overheads on the demo's GPT-2 (3 layers, width 96),
whose Python and dispatch costs dominate. Estimated over measured time, each run in a fresh
process right after its estimate:

- SmolLM2-135M scoring (64 texts x 128 tokens): 0.7-1.3 (5 runs);
- SmolLM2-135M generation (8 samples x 32 tokens): 0.8-1.6 (5 runs);
- demo scoring (400 texts x 200 tokens): 0.6-1.4; demo generation (64 x 255): 1.0-2.2;
- demo extraction, 3 strategies x 100 samples, reference and corpus: 0.9-1.7;
- demo user inference (61 users): 0.8-1.5.

The load of the machine moves every measured time by up to 2-3x between two runs: the rate is
measured at the estimate, so it follows the load of that moment. On a GPU the same model runs
with bfloat16 products; its constants are not calibrated (no GPU was at hand), and the estimate
says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from core.cost import attacks, training
from core.cost.attacks import Plan
from core.cost.rate import busy_note, contention
from core.cost.work import PROCESS_BYTES, bytes_per_weight, seconds, transient_bytes

CAPACITY = 3   # models the registry keeps loaded at once (core.models.registry)
CONFIRM_ENV = "LEAKAGE_LAB_CONFIRM_MINUTES"


def _audit(config) -> Plan:
    """Each chosen attack's work, as the audit configures it (``core.audit.plan``); an attack
    whose spec declares no cost (a plug-in's) is named, not priced."""
    from core.audit import plan as audit_plan
    from core.registry import get_spec

    plan = Plan()
    for name in config.chosen():
        build = get_spec(name).cost or ESTIMATORS.get(name)
        if build is None:
            plan.assumptions.append(f"{name}: no estimate (its spec declares no cost)")
        else:
            plan.add(build(audit_plan.attack_config(name, config)))
    return plan


def _series(config) -> Plan:
    plan = Plan(assumptions=["each checkpoint's audit as one audit"])
    for checkpoint in config.checkpoints:
        plan.add(_audit(config.audit_config(checkpoint)))
    return plan


ESTIMATORS: dict[str, Callable[[Any], Plan]] = {
    "extraction": attacks.extraction, "lazy-risk": attacks.lazy_risk,
    "diffrank": attacks.diffrank, "user-inference": attacks.user_inference,
    "mia": attacks.mia, "exposure": attacks.exposure, "audit": _audit,
    "inextractability": attacks.inextractability, "nid-audit": attacks.nid_audit,
    "pii-probe": attacks.pii_probe,
    "audit-series": _series, "dp-finetune": training.dp_finetune,
    "dp-canary-audit": training.dp_canary_audit,
    "domain-reference": training.domain_reference,
}


@dataclass
class Estimate:
    spec: str
    device: str
    seconds: float
    peak_bytes: float
    parts: list[tuple[str, float]] = field(default_factory=list)   # (what, seconds)
    assumptions: list[str] = field(default_factory=list)


def device_of(config) -> str:
    """Where the run computes: its ``device`` field, "auto" being CUDA when there is one."""
    device = getattr(config, "device", "auto")
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def estimate(spec, config) -> Estimate | None:
    """The estimate of a run of ``spec`` on ``config``; None for a spec with no estimator.
    A model or file that cannot be sized is a ``core.errors.UserError``."""
    build = spec.cost or ESTIMATORS.get(spec.name)
    if build is None:
        return None
    plan, device = build(config), device_of(config)
    loads, works = {}, []
    for work in plan.works:   # a model is loaded once and shared (the registry)
        if work.kind == "load":
            if work.model.source in loads:
                continue
            loads[work.model.source] = work.model
        works.append(work)
    slower = contention() if device == "cpu" else 1.0
    parts = [(work.what, seconds(work, device) * (1.0 if work.kind == "cpu" else slower))
             for work in works]
    weights = sorted((m.parameters * bytes_per_weight(device) for m in loads.values()),
                     reverse=True)[:CAPACITY]
    peak = PROCESS_BYTES + sum(weights) + max((transient_bytes(w, device) for w in works),
                                              default=0.0)
    notes = list(plan.assumptions)
    notes += busy_note(slower)
    if device == "cuda":
        notes.append("on a GPU the estimate's constants are not calibrated: a rough guide")
    return Estimate(spec.name, device, sum(s for _, s in parts), peak, parts, notes)


def duration(seconds: float) -> str:
    """``"40 s"``, ``"12 min"``, ``"3.2 h"``, ``"2.9 days"``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def size(count: float) -> str:
    return f"{count / 1e9:.1f} GB" if count >= 1e8 else f"{count / 1e6:.0f} MB"


def summary(estimate: Estimate) -> str:
    """One line: ``"about 12 min and 1.3 GB on this CPU"``."""
    where = "GPU" if estimate.device == "cuda" else "CPU"
    return (f"about {duration(estimate.seconds)} and {size(estimate.peak_bytes)} on this "
            f"{where}")


def report(estimate: Estimate) -> dict:
    """What ``--dry-run`` prints: the estimate, its parts and its assumptions."""
    return {"estimate": summary(estimate), "seconds": round(estimate.seconds, 1),
            "peak_memory_bytes": int(estimate.peak_bytes), "device": estimate.device,
            "work": [f"{what}: {duration(s)}" for what, s in estimate.parts],
            "assumptions": estimate.assumptions or ["none"]}


def confirm_seconds() -> float:
    """Runs estimated longer than this are confirmed first on a page:
    ``$LEAKAGE_LAB_CONFIRM_MINUTES`` (default 30) minutes."""
    try:
        return float(os.environ.get(CONFIRM_ENV, "30")) * 60
    except ValueError:
        return 30 * 60.0

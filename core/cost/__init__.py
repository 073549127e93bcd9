"""Cost before Run: the time and peak memory of a run, estimated from its config before it starts.

    from core import cost
    estimate = cost.estimate(spec, config)   # None for a spec that loads no language model
    cost.summary(estimate)                   # "about 12 min and 1.3 GB on this CPU"

A run is priced as a list of work items (``core.cost.work``: loads, scoring passes, generation,
training steps, the analysis), sized from the config by the cost its spec declares
(``AttackSpec.cost``, in a ``cost.py`` beside the spec, built from ``core.cost.plan``):
samples x tokens x models generated, texts x tokens x models x passes scored, steps x batch x
block trained. An audit prices the same plan at the pace measured on its loaded model
(``estimate(..., pace=...)``, ``core.cost.pace``). The models' sizes are read from their configs, never their
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
- demo user inference (61 users): 0.8-1.5;
- SmolLM2-135M training on two threads (``LARGE_TRAIN_EFFICIENCY``): the shift scenario's build
  1.5, the realistic one's 0.9, a 12-step domain reference 1.3 (docs/benchmarks.md).

The load of the machine moves every measured time by up to 2-3x between two runs: the rate is a
core's speed (one thread's CPU time), and the load average at the estimate gives the share of
the cores a run gets (``core.cost.rate.contention``). On a GPU the same model runs
with bfloat16 products; its constants are not calibrated (no GPU was at hand), and the estimate
says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from core.cost.plan import Plan
from core.cost.pace import Pace
from core.cost.rate import busy_note, contention
from core.cost.work import PROCESS_BYTES, bytes_per_weight, seconds, threads, transient_bytes

CAPACITY = 3   # models the registry keeps loaded at once (core.models.loaded)
CONFIRM_ENV = "LEAKAGE_LAB_CONFIRM_MINUTES"


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


def plan_of(spec, config) -> Plan | None:
    """The work of a run of ``spec`` on ``config``, from the cost its spec declares
    (``AttackSpec.cost``); None for a spec that declares none."""
    return None if spec.cost is None else spec.cost(config)


def estimate(spec, config, pace: Pace | None = None) -> Estimate | None:
    """The estimate of a run of ``spec`` on ``config`` (None for a spec that declares no
    cost); its scoring and generation at ``pace`` when the model's pace was measured. A model
    or file that cannot be sized is a ``core.errors.UserError``."""
    plan = plan_of(spec, config)
    return None if plan is None else priced(spec.name, plan, device_of(config), pace)


def _work_seconds(work, device: str, pace: Pace | None, slower: float) -> float:
    """A work item's seconds: at the measured ``pace`` when it has one for that kind of work,
    else modelled (``core.cost.work``), ``slower`` by the CPU's contention (not its own
    analysis: "cpu" work is counted in seconds already)."""
    measured = pace.seconds(work) if pace is not None else None
    if measured is not None:
        return measured
    return seconds(work, device) * (1.0 if work.kind == "cpu" else slower)


def priced(name: str, plan: Plan, device: str, pace: Pace | None = None) -> Estimate:
    """``plan`` in seconds and peak bytes on ``device`` (each model loaded once and shared, as
    the registry does)."""
    loads, works = {}, []
    for work in plan.works:
        if work.kind == "load":
            if work.model.source in loads:
                continue
            loads[work.model.source] = work.model
        works.append(work)
    busy = device == "cpu" and pace is None
    slower = {many: contention(threaded=many) if busy else 1.0 for many in (True, False)}
    parts = [(work.what, _work_seconds(work, device, pace, slower[threads(work, device) > 1]))
             for work in works]
    weights = sorted((m.parameters * bytes_per_weight(device) for m in loads.values()),
                     reverse=True)[:CAPACITY]
    peak = PROCESS_BYTES + sum(weights) + max((transient_bytes(w, device) for w in works),
                                              default=0.0)
    notes = list(plan.assumptions)
    notes += busy_note(slower[True])
    if device == "cuda":
        notes.append("on a GPU the estimate's constants are not calibrated: a rough guide")
    return Estimate(name, device, sum(s for _, s in parts), peak, parts, notes)


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

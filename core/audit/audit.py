"""The audit: the chosen attacks on one model, in order, each recorded as its own run, and one
report (``core.audit.report``) with a verdict per attack, the DP guarantee when the training
run's parameters are known, and the provenance to rerun it.

    python -m core audit --model M --reference R --corpus FILE --users FILE --out report.html
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from core.audit import costs, plan
from core.audit.provenance import Provenance, collect
from core.bounds import training_run
from core.cost.pace import measure_pace
from core.errors import NotApplicable, UserError
from core.jobs import run_recorded
from core.models import reference_or_base, resolve_model
from core.registry import get_spec
from core.runtime import Cancelled, Progress, check_cancel, no_progress, share, stages
from core.serialize import to_jsonable
from core.specs import AttackSpec, check_params, param


@dataclass(frozen=True)
class AuditInputs:
    """What an audit takes besides the model: its reference (e.g. the model before fine-tuning,
    or a LoRA adapter's base), the data at hand, the attacks to run (default: every one the data
    allows), the training run's DP parameters, the seed and the report file. ``AuditConfig``
    adds the model; ``core.audit.series.SeriesConfig`` the checkpoints of one training run."""

    reference: str = param("", path="model", label="reference model",
                           help="a model not trained on the private data, same tokenizer (e.g. "
                                "the model before fine-tuning)")
    corpus: str = param("", path="data", label="training corpus",
                        help="optional: the private training text (extraction verifies against "
                             "it; lazy risk ranks it)")
    users: str = param("", path="data", label="user samples",
                       help="optional: user_id, text, member (user inference)")
    members: str = param("", path="data", label="member / non-member texts",
                         help="optional: text, member (membership inference)")
    attacks: tuple[str, ...] = param(
        (), choices=lambda: tuple(plan.steps()),   # the registry's audited specs, when checked
        help="the attacks to run, in this order; empty: every one the inputs allow")
    settings: tuple[str, ...] = param(
        (), flags=("--set",), widget="text_area", label="settings of the attacks",
        help="ATTACK.FIELD=VALUE, one per line (e.g. extraction.n_samples=300): changes one "
             "attack's setting from its defaults (or its preset's)")
    sigma: float = training_run.sigma_param()   # with q and steps: the DP section of the report
    q: float = training_run.q_param()
    steps: int = training_run.steps_param()
    delta: float = param(1e-5, gt=0.0, le=0.1, label="δ", help="δ of the run's (ε, δ) guarantee")
    seed: int = param(0, ge=0, le=2**31 - 1, help="the seed every attack gets")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to load the models")
    out: str = param("", path="output", label="report file",
                     help="write the HTML report here (the page offers it as a download)")

    def __post_init__(self) -> None:
        check_params(self)

    def inputs(self) -> dict[str, Any]:
        """These fields by name, e.g. for ``AuditConfig(model=..., **inputs.inputs())``."""
        return {f.name: getattr(self, f.name) for f in fields(AuditInputs)}


@dataclass(frozen=True)
class AuditConfig(AuditInputs):
    """A target model and what its audit takes (``AuditInputs``)."""

    model: str = param("", path="model", label="target model", help="the model to audit")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.model.strip():
            raise UserError("choose the model to audit (--model)")
        object.__setattr__(self, "reference", reference_or_base(self.model, self.reference))
        missing = [a for a in self.attacks if a not in plan.available(self)]
        if missing:
            needs = {a: ", ".join(plan.steps()[a].needs) for a in missing}
            raise UserError("; ".join(f"{a} needs {n}" for a, n in needs.items()))
        unused = set(plan.parse_settings(self.settings)) - set(self.chosen())
        if unused:
            raise UserError(f"settings of {', '.join(sorted(unused))}, which this audit does not "
                            "run")
        for name in self.chosen():   # every setting in range, before the run starts
            try:
                plan.attack_config(name, self)
            except UserError as err:
                raise UserError(f"{name}: {err}") from None

    def chosen(self) -> list[str]:
        return list(dict.fromkeys(self.attacks)) if self.attacks else plan.available(self)


@dataclass
class AuditEntry:
    """One attack of the audit: its stored run, verdict and status."""

    attack: str
    title: str
    run_id: int | None
    status: Literal["done", "cancelled", "failed", "did not apply"]
    verdict: str
    seconds: float
    headline: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass
class AuditResult:
    config: AuditConfig
    entries: list[AuditEntry]
    provenance: Provenance
    seconds: float
    report: str = ""            # the HTML file written, if any
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)   # e.g. the inputs no chosen attack reads


def one_line(err: BaseException) -> str:
    """An error as one line: its type and message (``UserError``: its message alone)."""
    text = " ".join(str(err).split())
    if isinstance(err, UserError):
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _run_attack(name: str, config: Any, progress: Progress,
                cancel: threading.Event) -> tuple[AuditEntry, Any]:
    """Run one attack as a run of its own (``core.jobs.run_recorded``); (its entry, its result,
    None when it failed). Bad input, out of memory or a bug is a failed entry (the traceback is
    in its stored run); an attack these inputs give nothing to do (``NotApplicable``) did not
    apply, with why; a cancel propagates."""
    spec: AttackSpec = get_spec(name)
    started = time.perf_counter()
    entry = AuditEntry(name, spec.title, None, "done", "", 0.0, config=to_jsonable(config))
    result = None
    try:
        result = run_recorded(spec, config, progress=progress, cancel=cancel,
                              title=f"audit: {spec.described(config)}",
                              created=lambda run_id: setattr(entry, "run_id", run_id))
        entry.verdict = plan.steps()[name].verdict(result)
        entry.headline = {k: v for k, v in (spec.headline(result) if spec.headline else {}).items()
                          if isinstance(v, (int, float))}
        entry.status = "cancelled" if cancel.is_set() else "done"
    except Cancelled:
        raise
    except NotApplicable as err:   # not a failure: these inputs give the attack nothing to do
        entry.status, entry.error = "did not apply", one_line(err)
        entry.verdict = f"Did not apply: {entry.error}"
    except Exception as err:   # one attack's failure is its entry, not the audit's
        entry.status, entry.error, result = "failed", one_line(err), None
        entry.verdict = (f"Not run: {entry.error}" if isinstance(err, UserError)
                         else f"Failed: {entry.error}")
    entry.seconds = time.perf_counter() - started
    return entry, result


def run(config: AuditConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> AuditResult:
    """The models loaded, each chosen attack in order (a part of the bar as large as its
    expected seconds: ``core.audit.costs``), then the report; an attack that fails is a failed
    entry and the next one runs; after a cancel no attack starts."""
    check_cancel(cancel)
    started, began = time.perf_counter(), time.time()
    chosen = config.chosen()
    configs = {name: plan.attack_config(name, config) for name in chosen}
    # the models load (or fail to, once) before the first attack; the attacks reuse them
    models = {s: resolve_model(s, device=config.device) for s in (config.model, config.reference)
              if s.strip()}
    cancel = cancel or threading.Event()
    bar = stages(progress, _parts(configs, models[config.model], progress))
    entries, results = [], {}
    for number, name in enumerate(chosen):
        part = share(bar[name], 0, 1, f"{name} ({number + 1}/{len(chosen)}): ")
        try:
            check_cancel(cancel)
            entry, result = _run_attack(name, configs[name], part, cancel)
        except Cancelled:
            break
        entries.append(entry)
        if result is not None:
            results[name] = result
        if cancel.is_set():
            break
    stopped = cancel.is_set() or len(entries) < len(chosen)
    if not entries:
        raise Cancelled("cancelled before the first attack finished")
    if all(e.status == "failed" for e in entries):   # nothing audited: the run failed
        raise UserError("every attack of the audit failed: " + "; ".join(
            f"{e.attack}: {e.error}" for e in entries))
    data = [s for s in (config.corpus, config.users, config.members) if s.strip()]
    provenance = collect(models, data, began)
    result = AuditResult(config, entries, provenance, time.perf_counter() - started,
                         stopped_early=stopped, notes=plan.unused_inputs(config))
    if config.out.strip():
        from core.audit.report import write_report
        result.report = str(write_report(Path(config.out), result, results))
    outcomes = [f"{status}: {', '.join(e.attack for e in entries if e.status == status)}"
                for status in ("failed", "did not apply")
                if any(e.status == status for e in entries)]
    progress(1.0, "; ".join([f"{len(entries)} attacks audited", *outcomes]))
    return result


def _parts(configs: dict[str, Any], lm, progress: Progress) -> dict[str, float]:
    """Each attack's part of the bar: its expected seconds at this machine's pace on the model
    (one attack: the whole bar)."""
    if len(configs) == 1:
        return dict.fromkeys(configs, 1.0)
    progress(0.0, "measuring this machine's pace on the model, to size each attack's part")
    return costs.expected_seconds(configs, lm.device.type,
                                  lambda generates: measure_pace(lm, generates=generates))


def tiny_config() -> AuditConfig:
    """Membership inference and extraction on the tiny models of their specs (seconds)."""
    from core.attacks.membership import mia

    tiny = mia.tiny_config()
    return AuditConfig(model=tiny.model, reference=tiny.reference, members=tiny.data,
                       corpus=tiny.frequency_corpus, attacks=("mia",), device="cpu")


SPEC = AttackSpec(
    name="audit",
    title="Audit: extraction, memorisation in bits, differential rank, user inference, "
          "membership inference and the DP bound of one model, with its report",
    config_type=AuditConfig,
    result_type=AuditResult,
    run=run,
    tiny_config=tiny_config,
    headline=lambda r: {"attacks": len(r.entries), "seconds": r.seconds},
    describe=lambda c: f"audit of {c.model}" + (f" against {c.reference}" if c.reference else ""),
    cost=costs.audit_plan,
)

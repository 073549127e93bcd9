"""The audit over a checkpoint series: the same audit (``core.audit.audit``) on several
checkpoints of one training run, in step order, each audit a stored run of its own (its attacks
too), and each leakage measure drawn against the training step: when did the model start to
memorise, and does it keep rising?

    python -m core audit-series --checkpoints runs/lora --reference base --corpus train.txt \\
        --attacks extraction diffrank --out series.html

The measures drawn are those that measure leakage (``AuditHooks.series`` of each attack), not the speed or the
amount of work (seconds, tokens per second, samples).
"""

from __future__ import annotations

import html
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from core.audit import audit, checkpoints, costs, plan
from core.audit.provenance import interpreter
from core.audit.report import dp_section, html_page, input_arguments, notes_html
from core.errors import UserError
from core.jobs import run_recorded
from core.reporting.html import figure, table
from core.runtime import Cancelled, Progress, check_cancel, no_progress
from core.specs import AttackSpec, param

MAX_CHECKPOINTS = 50


def series_metrics() -> dict[str, dict[str, str]]:
    """Attack -> headline metric -> what it measures, in plain words (a panel's title)."""
    return {name: hooks.series for name, hooks in plan.steps().items()}


@dataclass(frozen=True)
class SeriesConfig(audit.AuditInputs):
    """The checkpoints of one training run and what the audit of each takes."""

    checkpoints: tuple[str, ...] = param(
        (), path="model", label="checkpoints",
        help=f"2 to {MAX_CHECKPOINTS} checkpoints of one training run (folders, files, "
             "ADAPTER@BASE, loaded models), or one folder holding them (checkpoint-N, step-N, "
             "or any model subfolder), which is replaced by its checkpoints; the step of each "
             "is the number its name ends in, else trainer_state.json's global_step, else its "
             "place in the list")

    def __post_init__(self) -> None:
        super().__post_init__()
        if any(not source.strip() for source in self.checkpoints):
            raise UserError("a checkpoint is empty: name each checkpoint's folder or file")
        object.__setattr__(self, "checkpoints", checkpoints.expand(self.checkpoints))
        if not 2 <= len(self.checkpoints) <= MAX_CHECKPOINTS:
            raise UserError(f"a series needs from 2 to {MAX_CHECKPOINTS} checkpoints, not "
                            f"{len(self.checkpoints)}: give their folders (or files, "
                            "ADAPTER@BASE, loaded models), or one folder holding checkpoint "
                            "subfolders (checkpoint-N, step-N)")
        checkpoints.in_step_order(self.checkpoints)   # two checkpoints of one step are refused
        try:   # the audit of each checkpoint differs only by its model: check the first's
            self.audit_config(self.checkpoints[0])
        except UserError as err:
            raise UserError(f"the audit of each checkpoint: {err}") from None

    def audit_config(self, checkpoint: str) -> audit.AuditConfig:
        """The audit of one checkpoint (no report file of its own)."""
        return audit.AuditConfig(**self.inputs() | {"model": checkpoint, "out": ""})


@dataclass
class SeriesPoint:
    """One checkpoint's audit: its stored run, and per attack the leakage measures and verdict."""

    step: int
    checkpoint: str
    audit_run_id: int | None
    status: Literal["done", "cancelled", "failed"]
    headline: dict[str, dict[str, float]] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass
class SeriesResult:
    config: SeriesConfig
    points: list[SeriesPoint]
    seconds: float
    steps_known: bool = True    # False: the points are numbered by their place in the list
    report: str = ""            # the HTML file written, if any
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)   # e.g. the inputs no chosen attack reads


def _audit_point(config: SeriesConfig, checkpoint: checkpoints.Checkpoint, label: str,
                 progress: Progress, cancel: threading.Event) -> SeriesPoint:
    """The audit of one checkpoint (``label``: "step 500" or "checkpoint 2"), as a stored run;
    a checkpoint whose audit fails (it does not load, out of memory, a bug) is a failed point
    (the traceback is in its stored run), and a cancel before its first attack ended
    propagates."""
    point = SeriesPoint(checkpoint.step, checkpoint.source, None, "failed")
    try:
        result = run_recorded(
            audit.SPEC, config.audit_config(checkpoint.source), progress=progress,
            cancel=cancel, title=f"audit series, {label}: {checkpoint.source}",
            created=lambda run_id: setattr(point, "audit_run_id", run_id))
    except Cancelled:
        raise
    except Exception as err:   # one checkpoint's failure is its point, not the series'
        point.error = audit.one_line(err)
        return point
    point.status = "cancelled" if result.stopped_early else "done"
    point.verdicts = {e.attack: e.verdict for e in result.entries}
    point.headline = {e.attack: {k: v for k, v in e.headline.items()
                                 if k in series_metrics()[e.attack]}
                      for e in result.entries if e.status == "done"}
    return point


def run(config: SeriesConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> SeriesResult:
    """The audit of each checkpoint in step order (one part of the bar each), then the report."""
    check_cancel(cancel)
    started = time.perf_counter()
    cancel = cancel or threading.Event()
    ordered, steps_known = checkpoints.in_step_order(config.checkpoints)
    points = []
    for number, checkpoint in enumerate(ordered):
        label = f"{'step' if steps_known else 'checkpoint'} {checkpoint.step}"

        def part(fraction: float, message: str = "", partial=None, n=number, at=label):
            progress((n + fraction) / len(ordered), f"{at} ({n + 1}/{len(ordered)}): {message}")
        try:
            points.append(_audit_point(config, checkpoint, label, part, cancel))
        except Cancelled:
            break
        if cancel.is_set():
            break
    if not points:
        raise Cancelled("cancelled before the first checkpoint's audit had a result")
    if not cancel.is_set() and all(p.status == "failed" for p in points):
        raise UserError(every_checkpoint_failed(points, steps_known))
    result = SeriesResult(config, points, time.perf_counter() - started, steps_known,
                          stopped_early=cancel.is_set() or len(points) < len(ordered),
                          notes=plan.unused_inputs(config.audit_config(ordered[0].source)))
    if config.out.strip():
        result.report = str(write_series_report(Path(config.out), result))
    failed = sum(p.status == "failed" for p in points)
    progress(1.0, f"{len(points)} checkpoints audited" + (f", {failed} failed" if failed else ""))
    return result


def every_checkpoint_failed(points: list[SeriesPoint], steps_known: bool) -> str:
    """The error of a series none of whose checkpoints was audited: each one's error."""
    word = "step" if steps_known else "checkpoint"
    errors = "; ".join(f"{word} {p.step} ({p.checkpoint}): {p.error or 'failed'}" for p in points)
    return f"the audit of every checkpoint failed: {errors}"


# ---------------------------------------------------------------- table, figure, report


def metric_columns(result: SeriesResult) -> list[tuple[str, str]]:
    """The (attack, metric) pairs some point measured, in the audit's order."""
    measured = {(a, m) for p in result.points for a, by in p.headline.items() for m in by}
    return [(a, m) for a, by in series_metrics().items() for m in by if (a, m) in measured]


def step_label(result: SeriesResult) -> str:
    return "training step" if result.steps_known else "checkpoint (place in the list)"


def point_label(result: SeriesResult, point: SeriesPoint) -> str:
    """``Step 500: runs/checkpoint-500`` (``Checkpoint 2: ...`` when the steps are places)."""
    return f"{'Step' if result.steps_known else 'Checkpoint'} {point.step}: {point.checkpoint}"


def table_rows(result: SeriesResult) -> list[dict]:
    """One row per checkpoint: its step, source, status and stored audit run, then each
    leakage measure (None where it was not measured)."""
    return [{step_label(result): p.step, "checkpoint": p.checkpoint, "status": p.status,
             "audit run": p.audit_run_id}
            | {f"{a}: {series_metrics()[a][m]}": p.headline.get(a, {}).get(m)
               for a, m in metric_columns(result)}
            for p in result.points]


def series_figure(result: SeriesResult):
    """One small panel per leakage measure against the training step (None: nothing measured)."""
    from core.reporting.figures import metrics_by_step_figure

    panels = {}
    for attack, metric in metric_columns(result):
        shown = [(p.step, p.headline[attack][metric]) for p in result.points
                 if p.headline.get(attack, {}).get(metric) is not None]
        panels[f"{attack}: {series_metrics()[attack][metric]}"] = ([s for s, _ in shown],
                                                                 [v for _, v in shown])
    return metrics_by_step_figure(panels, step_label(result)) if panels else None


def rerun_command(config: SeriesConfig) -> str:
    """The command that reruns the series, in the tool's folder (``interpreter``)."""
    words = ["--checkpoints", *config.checkpoints, *input_arguments(config), "--out", "series.html"]
    return " ".join(map(shlex.quote, [interpreter(), "-m", "core", "audit-series", *words]))


def render_series_report(result: SeriesResult) -> str:
    """The series' HTML: the measures against the step, the table, each checkpoint's verdicts,
    the DP guarantee when σ, q and steps are given, and how to rerun it."""
    config, rows = result.config, table_rows(result)
    drawn = series_figure(result)
    verdicts = "".join(
        f"<h3>{html.escape(point_label(result, p))}</h3>"
        + (table(("attack", "verdict"), list(p.verdicts.items())) if p.verdicts
           else f"<p class='verdict'>Not audited: {html.escape(p.error or p.status)}</p>")
        for p in result.points)
    stopped = ("<p class='verdict'>The series was stopped early: only the checkpoints below were "
               "audited.</p>" if result.stopped_early else "") + notes_html(result.notes)
    runs = ", ".join(f"{'step' if result.steps_known else 'checkpoint'} {p.step}: run "
                     f"{p.audit_run_id}" for p in result.points if p.audit_run_id is not None)
    body = (f"{stopped}<section id='figure'><h2>Leakage against the training step</h2>"
            + (figure(drawn, "series-metrics") if drawn else "<p>No leakage measure was "
               "measured.</p>")
            + f"</section><section id='table'><h2>Every checkpoint</h2>"
            f"{table(list(rows[0]), [list(r.values()) for r in rows])}</section>"
            f"<section id='verdicts'><h2>Verdicts</h2>{verdicts}</section>"
            f"<section id='dp'><h2>DP guarantee of the training run</h2>{dp_section(config)}"
            f"</section><section id='provenance'><h2>How to rerun it</h2><p>In the tool's "
            f"folder: <code>{html.escape(rerun_command(config))}</code></p><p>Each checkpoint's "
            f"audit is a stored run ({html.escape(runs or 'none')}): <code>"
            f"{html.escape(shlex.quote(interpreter()))} -m core runs show ID</code>, and its "
            f"full report on the Runs page. {result.seconds:.0f} s in all."
            f"</p></section>")
    return html_page(f"Privacy audit of {len(result.points)} checkpoints",
                     f"Reference: {config.reference or 'none'}", body)


def write_series_report(path: Path, result: SeriesResult) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_series_report(result), encoding="utf-8")
    return path


def tiny_config() -> SeriesConfig:
    """Membership inference on two tiny checkpoints (``checkpoint-100``, ``checkpoint-200``) with
    the audit's tiny data (seconds)."""
    from core.attacks.membership.mia import TINY_TEXTS
    from core.models.tiny import tiny_random_models

    tiny = audit.tiny_config()
    *steps, reference = tiny_random_models(list(TINY_TEXTS),
                                           ["checkpoint-100", "checkpoint-200", "reference"])
    return SeriesConfig(**tiny.inputs() | {"reference": reference, "checkpoints": tuple(steps)})


def headline(result: SeriesResult) -> dict[str, float]:
    """For Compare: how many checkpoints, and the last one's leakage measures."""
    last = result.points[-1].headline if result.points else {}
    return {"checkpoints": len(result.points), "seconds": result.seconds} | {
        f"{attack}.{metric} (last step)": value for attack, by in last.items()
        for metric, value in by.items() if isinstance(value, (int, float))}


SPEC = AttackSpec(
    name="audit-series",
    title="Audit of a checkpoint series: the same audit on each checkpoint of one training run, "
          "each leakage measure against the training step",
    config_type=SeriesConfig,
    result_type=SeriesResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: (f"audit series of {len(c.checkpoints)} checkpoints"
                        + (f" against {c.reference}" if c.reference else "")),
    cost=costs.series_plan,
)

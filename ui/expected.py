"""The measured demo figures beside a run on the demo: "Expected on the demo (...): X".

``python -m figures.demo_figures`` measures the figures the guides (docs/) quote and writes them to
``assets/demo_figures.json``: a section per spec run on the ``demo`` preset (``user-inference``),
measured once without domain calibration, and ``realistic-<spec>`` sections for the
``realistic`` preset, each holding one figure set per calibration ("none", "domain reference").
A renderer calls ``figures_for`` with the config values its result records and gets the figure
set of the preset whose values the run used, under the same calibration, or None (other models,
data or settings; a file without that section), and shows it with ``expected_caption``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, NamedTuple

import streamlit as st

from core import sources
from core.calibration.config import DomainCalibration
from core.fingerprint import build_fingerprint
from core.registry import get_spec

FIGURES = Path(__file__).resolve().parents[1] / "assets" / "demo_figures.json"
COMMAND = "python -m figures.demo_figures"
# DomainCalibration.method -> (its key in a section measured per calibration, in words)
CALIBRATIONS = {"none": ("none", "without domain calibration"),
                "domain-reference": ("domain reference", "with the domain reference")}
SCENARIOS = {"demo": "the demo", "realistic": "the realistic scenario",
             "technical": "the technical scenario", "shift": "the shift scenario"}


class Expected(NamedTuple):
    """The figures measured on ``preset``; ``calibration`` in words ("": measured once); the
    build they were measured on ("": not recorded) and the same figure sets measured on other
    builds (``figures.demo_figures`` keeps them)."""

    preset: str
    calibration: str
    figures: dict
    measured_on: str
    build: str = ""
    other_builds: tuple[dict, ...] = ()


def load_figures() -> dict:
    """The measured figures ({} when the file is missing or not a JSON object)."""
    try:
        figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return figures if isinstance(figures, dict) else {}


def chosen(reference: str, calibration: DomainCalibration) -> str | None:
    """The reference model the user chose, from a result that records the model it compared
    with: ``reference``, unless domain calibration replaced it (None: unknown, not compared)."""
    return reference if calibration.method == "none" else None


def _plain(value: Any) -> Any:
    """Lists (a stored result's tuples) as tuples, so that they compare with a preset's."""
    return tuple(value) if isinstance(value, list) else value


def _used(spec_name: str, preset: str, run: dict[str, Any], calibrated: bool) -> bool:
    """Whether each known value of ``run`` is the preset's (the config's default where the
    preset sets none). The calibration's sample is checked by ``_figure_set``; its steps only
    count when it was used."""
    values = sources.preset(spec_name, preset)
    defaults = {f.name: f.default for f in dataclasses.fields(get_spec(spec_name).config_type)}
    skipped = {"domain_sample"} if calibrated else {"domain_sample", "domain_steps"}
    return bool(values) and all(
        _plain(value) == _plain(values.get(name, defaults.get(name, dataclasses.MISSING)))
        for name, value in run.items() if value is not None and name not in skipped)


def _figure_set(spec_name: str, preset: str, calibration: DomainCalibration) -> Expected | None:
    """The figures of ``spec_name`` on ``preset`` under ``calibration``, sections named as
    ``figures.demo_figures`` names them; None when the file has none."""
    figures = load_figures()
    name = spec_name if preset == "demo" else f"{preset}-{spec_name}"
    section = figures.get(name)
    if not isinstance(section, dict):
        return None
    measured_on = str(section.get("measured_on") or figures.get("measured_on", ""))
    others = (figures.get("other_builds") or {}).get(name) or []
    found = _in_section(section, preset, calibration)
    if found is None:
        return None
    figure_set, words = found
    other_sets = tuple(o for o in (_in_section(other, preset, calibration) for other in others
                                   if isinstance(other, dict)) if o is not None)
    return Expected(preset, words, figure_set, measured_on, str(section.get("build") or ""),
                    tuple(figure for figure, _ in other_sets))


def _in_section(section: dict, preset: str,
                calibration: DomainCalibration) -> tuple[dict, str] | None:
    """The figure set of a section under ``calibration`` and the calibration in words."""
    key, words = CALIBRATIONS.get(calibration.method, ("", ""))
    public_sample = sources.preset("domain-reference", preset).get("sample")
    if CALIBRATIONS["none"][0] not in section:   # measured once, without domain calibration
        figure_set, words = (section if calibration.method == "none" else None), ""
    elif calibration.method == "none" or calibration.sample == public_sample:
        figure_set = section.get(key)
    else:
        return None   # calibrated on another sample than the scenario's public one
    return (figure_set, words) if isinstance(figure_set, dict) else None


def figures_for(spec_name: str, calibration: DomainCalibration, /,
                **run: Any) -> Expected | None:
    """The figures measured for a run of ``spec_name`` with the config values ``run`` (None:
    not recorded; a field may be named ``calibration`` too) under ``calibration``: those of the
    preset it used, or None."""
    calibrated = calibration.method != "none"
    for preset in sources.preset_names(spec_name):
        if _used(spec_name, preset, run, calibrated):
            return _figure_set(spec_name, preset, calibration)
    return None


def expected_caption(expected: Expected | None, text: Callable[[dict], str], *,
                     where: Any = st) -> None:
    """A caption "Expected on the demo (measured by ...): ``text(figures)``" in ``where``;
    nothing without figures, or when they lack what ``text`` reads (an older file)."""
    if expected is None:
        return
    try:
        line = text(expected.figures)
    except (KeyError, IndexError, TypeError, ValueError):
        return
    scenario = SCENARIOS.get(expected.preset, f"the {expected.preset} preset")
    how = f" {expected.calibration}" if expected.calibration else ""
    when = f", {expected.measured_on}" if expected.measured_on else ""
    build = f", build `{expected.build}`" if expected.build else ""
    where.caption(f"Expected on {scenario}{how} (measured by `{COMMAND}`{when}{build}): "
                  f"{line}{_build_note(expected, text)}")


def _build_note(expected: Expected, text: Callable[[dict], str]) -> str:
    """What the user's build means for the figures: the same build, or another one (then the
    figures measured on other builds, the spread a rebuild gives)."""
    yours = build_fingerprint(expected.preset)
    if not expected.build or yours is None:
        return ""
    if yours == expected.build:
        return " (your build is that one)."
    others = []
    for figures in expected.other_builds:
        try:
            others.append(text(figures))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    spread = f" On other builds: {'; '.join(others)}." if others else ""
    return (f". Your build is `{yours}`, another one: builds differ across machines (float "
            f"rounding in training), so your figures may differ.{spread}")


# ---------------------------------------------------------------- texts of a figure set


def auroc(group: str) -> Callable[[dict], str]:
    """A user group's AUROC [95% CI], and its TPR at 1% and 5% FPR where measured."""
    def text(figures: dict) -> str:
        measured = figures[group]
        low, high = measured["ci"]
        line = f"AUROC {measured['auroc']:.3f} [{low:.3f}, {high:.3f}]"
        if "tpr_1" in measured:
            line += f", TPR {measured['tpr_1']:.2f} at 1% FPR and {measured['tpr_5']:.2f} at 5%"
        return line
    return text


def tracked_ranks(texts: list[str]) -> Callable[[dict], str]:
    """The ranks the tracked ``texts`` had, in their order."""
    def text(figures: dict) -> str:
        ranks = [figures["tracked"].get(tracked) for tracked in texts]
        return (f"tracked sentences at ranks {', '.join(f'#{r}' if r else '—' for r in ranks)}"
                f" of {figures['train_sentences']:,} (in the table's order)")
    return text


def extraction_precision(figures: dict) -> str:
    """The precision of the top-100 under each strategy, lowest to highest over the metrics."""
    spreads = [f"{strategy} {min(by.values()):.2f}–{max(by.values()):.2f}"
               for strategy, by in sorted(figures["precision"].items()) if by]
    return (f"precision of the top-100, {figures['samples_per_strategy']:,} samples per "
            f"strategy: " + ", ".join(spreads))


def first_plant(figures: dict) -> str:
    """Where the first sequence from a planted text stood among the sequences found."""
    if not figures["plant_hits"]:
        return f"no planted text among the {figures['rows']:,} sequences found"
    row, plant = figures["plant_hits"][0]   # counted from 1; the table's ranks from 0
    return (f"the first planted text ({plant}) in row {row} of the {figures['rows']:,} "
            f"sequences found (rank {row - 1})")

"""The shift scenario's discovery figures (issue #45): calibration × public filter × seeding.

``python -m core shift-build`` fine-tunes all of SmolLM2-135M's weights for an epoch on private
plays (a domain it does not know) with every plant a line inside a trained speech. Each
calibration a user can choose is run twice, with the paper's beam alone and with the seeded beam
(``--seeds``); each run is read twice, in the paper's order and with the rows that public text of
the domain also holds put below (``--public-rows below``). The references are trained once and
cached, so a run's seconds include its reference only the first time it is used.
"""

from __future__ import annotations

import time

from core.calibration.config import CPU_DOMAIN_STEPS, DOMAIN_STEPS
from core.demo.presets import lines_calibrated
from figures.realistic_figures import (_plants, _scenario, lazy_risk_run, markdown_lazy_risk,
                                       plant_hits)
from figures.runs import run_preset

SCENARIO = "shift"
SAMPLE = f"{SCENARIO}:public_sample"
SEEDS = 256            # the seeded beam's contexts (as in the demo's diffrank-seeds figures)
# LoRA steps in the time of the CPU default's all-weight steps: a LoRA step of SmolLM2 takes
# about 2/3 of an all-weight one on a CPU (docs/realistic-scenario.md, 10 s against 15 s)
LORA_STEPS = CPU_DOMAIN_STEPS * 3 // 2
CALIBRATIONS = {
    "none": {},
    f"all weights, {CPU_DOMAIN_STEPS} steps (CPU default)": {"domain_sample": SAMPLE,
                                                             "domain_steps": CPU_DOMAIN_STEPS},
    f"LoRA, {LORA_STEPS} steps (the same time)": "lora",
    f"all weights, {DOMAIN_STEPS} steps (GPU default)": {"domain_sample": SAMPLE,
                                                         "domain_steps": DOMAIN_STEPS},
}
# lazy risk's rows: each text or each line a sentence, uncalibrated or with the CPU default's
# domain reference (the preset); the public sample's sentences below the others, in place in
# the last row
LINES_CPU_DEFAULT = lines_calibrated(SCENARIO) | {"domain_steps": CPU_DOMAIN_STEPS}
LAZY_RISK_ROWS = {
    "whole texts, uncalibrated": {"unit": "text", "domain_sample": ""},
    "lines, uncalibrated": {"unit": "line", "domain_sample": ""},
    f"lines, all weights {CPU_DOMAIN_STEPS} steps (CPU default), ranked as records":
        LINES_CPU_DEFAULT | {"ranking": "record"},
    f"lines, all weights {CPU_DOMAIN_STEPS} steps (CPU default), the paper's ranking (the preset)":
        LINES_CPU_DEFAULT,
    "the same, public sentences in place": LINES_CPU_DEFAULT | {"public_rows": "mixed"},
}


def _fields(label: str) -> tuple[dict, str]:
    """The config fields of one calibration and, for the LoRA reference (trained here, cached,
    and given as the model before), its calibration line."""
    fields = CALIBRATIONS[label]
    if fields != "lora":
        return fields, ""
    from core.calibration.domain import calibrate_reference

    folder, calibration = calibrate_reference("smollm2", SAMPLE, steps=LORA_STEPS, weights="lora")
    return {"before": folder}, calibration.summary


def measure_diffrank() -> dict:
    """Where the plants stand under each calibration, with and without seeds, in all rows and
    in the private rows only (the public filter)."""
    plants = _plants(_scenario(SCENARIO))
    runs = []
    for label in CALIBRATIONS:
        for seeds in (0, SEEDS):
            started = time.perf_counter()
            fields, summary = _fields(label)
            result = run_preset("diffrank", SCENARIO, public_sample=SAMPLE, public_rows="mixed",
                                seeds=seeds, **fields)
            phrases = [row.phrase for row in result.rows]
            private = [row.phrase for row in result.rows
                       if row.public is None or not row.public.public]
            runs.append({"calibration": label, "seeds": seeds, "rows": len(phrases),
                         "private_rows": len(private),
                         "hits": plant_hits(phrases, plants)[:10],
                         "private_hits": plant_hits(private, plants)[:10],
                         "top_private": private[:3],
                         "summary": summary or result.calibration.summary,
                         "seconds": round(time.perf_counter() - started)})
    return {"runs": runs}


def _first(hits: list, rows: int) -> str:
    return f"#{hits[0][0]} ({hits[0][1]})" if hits else f"none of {rows}"


def markdown_diffrank(f: dict) -> str:
    lines = ["| calibration | seeds | first plant, all rows | first plant, private rows | "
             "plant rows in the private top 10 | top 3 private rows | s |",
             "|---|---|---|---|---|---|---|"]
    for run in f["runs"]:
        top10 = sum(rank <= 10 for rank, _ in run["private_hits"])
        top = " · ".join(f"`{text.strip()}`" for text in run["top_private"])
        lines.append(f"| {run['calibration']} | {run['seeds']} | "
                     f"{_first(run['hits'], run['rows'])} | "
                     f"{_first(run['private_hits'], run['private_rows'])} | {top10} | {top} | "
                     f"{run['seconds']} |")
    references = {run["calibration"]: run["summary"] for run in f["runs"]}
    return "\n".join(lines + ["", "The references:"]
                     + [f"- {label}: {summary}" for label, summary in references.items()]) + "\n"


def measure_lazy_risk() -> dict:
    """Lazy-sampling risk's rows (``LAZY_RISK_ROWS``), each sentence marked against the public
    sample."""
    return {label: lazy_risk_run(SCENARIO, public_sample=SAMPLE, **fields)
            for label, fields in LAZY_RISK_ROWS.items()}


def markdown_lazy_risk_units(f: dict) -> str:
    return markdown_lazy_risk(f, [(label, f[label]) for label in LAZY_RISK_ROWS if label in f],
                              first="sentences, calibration")

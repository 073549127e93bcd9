"""The GPU figures of ``docs/benchmarks.md``, rendered from what ``python -m bench.gpu --json``
recorded: ``python -m figures.gpu_report [--docs]``.

``bench/results/gpu-h100.json`` is the run quoted (its card, command and date are in it);
``bench/results/gpu-h100-before-graphs.json`` the run before CUDA-graph decoding and GPU
batches of 1,024, whose figures the table shows beside it. ``--docs`` rewrites the block
between ``<!-- gpu-figures -->`` and ``<!-- /gpu-figures -->``; ``tests/docs/test_readme_figures.py``
checks that ``docs/benchmarks.md`` holds exactly this rendering.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
AFTER, BEFORE = RESULTS / "gpu-h100.json", RESULTS / "gpu-h100-before-graphs.json"
DOC = ROOT / "docs" / "benchmarks.md"
BLOCK = re.compile(r"(<!-- gpu-figures -->\n)(.*?)(<!-- /gpu-figures -->)", re.S)


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}".strip()


def _share(row: dict) -> str:
    """The row's share of its physical limit: the bf16 peak (scoring) or the memory bound."""
    extra = row["extra"]
    if extra.get("peak_fraction") is not None:
        return f"{extra['peak_fraction']:.1%} of the bf16 peak ({extra['tflops']:.0f} TFLOP/s)"
    if extra.get("memory_bound_fraction") is not None:
        return (f"{extra['memory_bound_fraction']:.1%} of the memory bound "
                f"({_number(extra['bound_tokens_per_s'])} tokens/s)")
    return "–"


def _bar(row: dict) -> str:
    return {True: f"met ({row['bar']})", False: f"**not met** ({row['bar']})", None: "–"}[row["met"]]


def table(after: dict, before: dict) -> str:
    """One line per row of ``after``: figure, baseline and ratio, share of the limit, the same
    row's figure in ``before``, and its bar."""
    earlier = {row["name"]: row for row in before["rows"]}
    lines = ["| what | figure | baseline (same process) | ratio | share of the limit | before | bar |",
             "|---|---|---|---|---|---|---|"]
    for row in after["rows"]:
        unit = row["unit"]
        previous = earlier.get(row["name"], {}).get("figure")
        ratio = "–" if row["ratio"] is None else f"{row['ratio']:.2f}×"
        lines.append(f"| {row['name']} | {_number(row['figure'], unit)} | "
                     f"{_number(row['baseline'], unit)} {row['baseline_name']} | {ratio} | "
                     f"{_share(row)} | {_number(previous, unit)} | {_bar(row)} |")
    return "\n".join(lines)


def render(after: dict, before: dict) -> str:
    """The docs' block: where the figures come from, then the table."""
    return (f"Measured on {after['card']}, torch {after['torch']}, {after['dtype']} weights, "
            f"{after['date']}: `{after['command']}` (recorded in `bench/results/gpu-h100.json`; "
            "\"before\": the same suite before CUDA-graph decoding and GPU batches of 1,024, "
            "`gpu-h100-before-graphs.json`). Random weights: speed does not depend on them.\n\n"
            + table(after, before) + "\n")


def render_doc(text: str, after: dict, before: dict) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(after, before) + m.group(3), text)


def load() -> tuple[dict, dict]:
    return json.loads(AFTER.read_text(encoding="utf-8")), json.loads(BEFORE.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help="rewrite docs/benchmarks.md's block")
    args = parser.parse_args()
    after, before = load()
    if args.docs:
        DOC.write_text(render_doc(DOC.read_text(encoding="utf-8"), after, before), encoding="utf-8")
    else:
        print(render(after, before))


if __name__ == "__main__":
    main()

"""The GPU figures of ``docs/benchmarks.md``, rendered from what ``python -m bench.gpu --json``
recorded: ``python -m figures.gpu_report [--docs]``.

``bench/results/gpu-h100-fused.json`` is the run quoted (its card, command, date and state are
in it); ``bench/results/gpu-h100.json`` the run before it (before compiled scoring), whose
figures the table shows beside it, and whose rows that the later run did not reach follow
with their date; ``gpu-h100-decode-probe.json`` what ``bench.gpu_decode_probe`` measured of a
decoding step. (``gpu-h100-before-graphs.json``: the run before CUDA-graph decoding.)
``--docs`` rewrites the block
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
AFTER, BEFORE = RESULTS / "gpu-h100-fused.json", RESULTS / "gpu-h100.json"
PROBE = RESULTS / "gpu-h100-decode-probe.json"
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
    """The bar, met or not, and any check the row failed."""
    bar = {True: f"met ({row['bar']})", False: f"**not met** ({row['bar']})", None: "–"}[row["met"]]
    failed = [check["check"] for check in row["checks"] if not check["passed"]]
    return bar + "".join(f"; **check failed**: {check}" for check in failed)


def _line(row: dict, previous: float | None, name: str) -> str:
    unit = row["unit"]
    ratio = "–" if row["ratio"] is None else f"{row['ratio']:.2f}×"
    return (f"| {name} | {_number(row['figure'], unit)} | "
            f"{_number(row['baseline'], unit)} {row['baseline_name']} | {ratio} | "
            f"{_share(row)} | {_number(previous, unit)} | {_bar(row)} |")


def table(after: dict, before: dict) -> str:
    """One line per row of ``after``: figure, baseline and ratio, share of the limit, the same
    row's figure in ``before``, and its bar; then ``before``'s rows that ``after`` lacks."""
    earlier = {row["name"]: row for row in before["rows"]}
    names = {row["name"] for row in after["rows"]}
    lines = ["| what | figure | baseline (same process) | ratio | share of the limit | before | bar |",
             "|---|---|---|---|---|---|---|"]
    lines += [_line(row, earlier.get(row["name"], {}).get("figure"), row["name"])
              for row in after["rows"]]
    lines += [_line(row, None, f"{row['name']} ({before['date']} run)")
              for row in before["rows"] if row["name"] not in names]
    return "\n".join(lines)


def _same(part: dict) -> str:
    return "gave the same" if part["same_seed_same_samples"] else "did not give the same"


def probe_line(probe: dict) -> str:
    """What a decoding step costs, graphed as generation runs it, and with its forward pass
    compiled when the probe measured that too (not with ``--eager-only``)."""
    plain, fused = probe["graphed"], probe.get("graphed, step compiled")
    compiled = "" if fused is None else (
        f"; with its forward pass compiled, {fused['replay_ms']:.2f} ms, and one seed "
        f"{_same(fused)} samples twice")
    return (f"A decoding step (`python -m bench.gpu_decode_probe`, batch {probe['rows']}, top-"
            f"{probe['top_k']}, {probe['date']}; {probe['note']}): a graph replay takes "
            f"{plain['replay_ms']:.2f} ms, of which the draw {plain['draw_ms']:.2f} ms, and one "
            f"seed {_same(plain)} samples twice{compiled}.")


def render(after: dict, before: dict, probe: dict) -> str:
    """The docs' block: where the figures come from, then the table and the decoding probe."""
    return (f"Measured on {after['card']}, torch {after['torch']}, {after['dtype']} weights, "
            f"{after['date']}: `{after['command']}` (recorded in `bench/results/{AFTER.name}`). "
            f"State: {after['state']}. \"Before\": the run of {before['date']} "
            f"(`{BEFORE.name}`: {before['state']}). Random weights: speed does not depend on them.\n\n"
            + table(after, before) + "\n\n" + probe_line(probe) + "\n")


def render_doc(text: str, after: dict, before: dict, probe: dict) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(after, before, probe) + m.group(3), text)


def load() -> tuple[dict, dict, dict]:
    return tuple(json.loads(path.read_text(encoding="utf-8")) for path in (AFTER, BEFORE, PROBE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help="rewrite docs/benchmarks.md's block")
    args = parser.parse_args()
    after, before, probe = load()
    if args.docs:
        DOC.write_text(render_doc(DOC.read_text(encoding="utf-8"), after, before, probe),
                       encoding="utf-8")
    else:
        print(render(after, before, probe))


if __name__ == "__main__":
    main()

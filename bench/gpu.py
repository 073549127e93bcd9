"""The GPU benchmark-and-check suite (issues #17, #29): ``python -m bench.gpu [--cpu] [--only NAME ...]
[--json PATH]``.

On a CUDA machine it builds models from their configs with random weights (SmolLM2-135M's
architecture, a ~1B Llama-3.2-1B-shaped and a ~8B Llama-3.1-8B-shaped one, bf16;
``bench.gpu_common``) and runs scoring, generation, user inference, differential rank, the
n-gram Monte Carlo, a few DP fine-tuning steps, decoding at batches of 256 and 1,024 and the
large models end to end (``bench.gpu_scale``) through the project's own code. Each section
prints a figure (tokens/s, users/min, ...) against a baseline run in the same process, its share
of the GPU's dense bf16 peak or of its memory bound where it applies, and checks its numbers
against the CPU's (log-probs within the bf16 tolerance, identical rankings where the math
allows). Bars (GPU only, issue #29): scoring ≥ 25% of the bf16 peak on the 135M architecture
and ≥ 30% on the large ones; decoding ≥ 40% of the memory bound; user inference ≥ 5,000
users/min (10 samples per user) on the 135M architecture. The H100's figures are recorded in
``bench/results/`` and rendered into ``docs/benchmarks.md`` by ``figures.gpu_report``. The
throughput rows run compiled kernels (``LEAKAGE_LAB_COMPILE=1`` around them, as a large job
runs; ``--no-compile``: eager), their first, compiling run timed apart.

With ``--cpu`` (or without a GPU) the same code runs at small sizes (a 2-layer, 64-wide model,
64-token texts) in float32 on one thread, so the checks run wherever the tests do. Everything runs in a
scratch lab home (no disk score cache), removed afterwards. The summary is printed as a table
and, with ``--json PATH``, written as JSON after each section (one object per row; ``ok``: its
checks passed; ``met``: its bar, null off a GPU). Exit status 1 when a check failed or a section
raised (a bar not met is reported, not an error).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import torch

from bench.gpu_attacks import diffrank, user_inference
from bench.gpu_common import (CPU_SIZES, GPU_SIZES, Bench, Row, bf16_peak, dtype_name, free,
                              hbm_bandwidth)
from bench.gpu_dp import dp_finetune, ngram_monte_carlo
from bench.gpu_ray import ray_scaleout
from bench.gpu_scale import decode, large
from bench.gpu_scoring import generation, scoring
from core.models import resolve_device
from core.models.loaded import DTYPES, resolve_dtype
from core.scoring.threads import one_thread
from core.scoring.cache import BUDGET_ENV

SECTIONS: dict[str, Callable[[Bench], list[Row]]] = {
    "scoring": scoring, "generation": generation, "user-inference": user_inference,
    "diffrank": diffrank, "ngram": ngram_monte_carlo, "dp-finetune": dp_finetune,
    "decode": decode, "large": large, "ray": ray_scaleout,
}


def choose_device(cpu: bool) -> torch.device:
    """CUDA when there is one, unless ``cpu`` (``core.models.resolve_device``'s "auto")."""
    return resolve_device("cpu" if cpu else "auto")


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()}; torch threads: {torch.get_num_threads()})"


@contextmanager
def scratch_home() -> Iterator[Path]:
    """A temporary lab home (models, data, DP checkpoints) with the disk score cache off, so
    every figure is computed and nothing is left behind; the environment restored after."""
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as folder, mock.patch.dict(
            os.environ, {"LEAKAGE_LAB_HOME": str(Path(folder) / "home"), BUDGET_ENV: "0"}):
        yield Path(folder)


def run_section(name: str, bench: Bench) -> list[Row]:
    """The section's rows; a section that raises gives one failed row (the others still run)."""
    print(f"\n== {name} ==", flush=True)
    try:
        rows = SECTIONS[name](bench)
    except Exception as err:  # noqa: BLE001 - reported in the summary, the run goes on
        traceback.print_exc()
        rows = [Row(name, str(bench.device), float("nan"), "", error=f"{type(err).__name__}: {err}")]
    finally:
        free(bench.device)
    for row in rows:
        print(describe(row), flush=True)
    return rows


def _figure(value: float | None, unit: str = "") -> str:
    if value is None or value != value:
        return "-"
    return f"{value:,.0f} {unit}".strip() if abs(value) >= 100 else f"{value:.3g} {unit}".strip()


def describe(row: Row) -> str:
    """The row's figure, baseline and checks, a few lines."""
    lines = [f"{row.name} on {row.device}: {_figure(row.figure, row.unit)}"
             + (f"; {row.baseline_name}: {_figure(row.baseline, row.unit)} "
                f"(ratio {row.ratio:.2f}x)" if row.baseline else "")]
    if row.extra.get("peak_fraction") is not None:
        lines.append(f"  {row.extra['tflops']:.1f} TFLOP/s = {row.extra['peak_fraction']:.1%} "
                     "of the bf16 peak")
    if row.extra.get("memory_bound_fraction") is not None:
        lines.append(f"  memory-bound limit {row.extra['bound_tokens_per_s']:,.0f} tokens/s: "
                     f"{row.extra['memory_bound_fraction']:.1%} of it")
    lines += [f"  [{'ok' if c['passed'] else 'FAILED'}] {c['check']}: {c['detail']}"
              for c in row.checks]
    return "\n".join(lines + ([f"  [FAILED] {row.error}"] if row.error else []))


def _bar(row: Row) -> str:
    if not row.bar:
        return "-"
    value = row.bar_value
    got = f"{value:.1%}" if value is not None and "%" in row.bar else _figure(value)
    return f"{row.bar} (got {got})"


def summary(rows: list[Row]) -> str:
    """One table: name, device, figure, baseline, ratio, bar, met, checks."""
    header = ("name", "device", "figure", "baseline", "ratio", "bar", "met", "checks")
    table = [header] + [(row.name, row.device, _figure(row.figure, row.unit),
                         _figure(row.baseline, row.unit), f"{row.ratio:.2f}x" if row.ratio else "-",
                         _bar(row), {True: "yes", False: "NO", None: "-"}[row.met],
                         "ok" if row.ok else "FAILED") for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
                     for line in table)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (small sizes)")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), metavar="NAME",
                        help=f"run only these sections: {', '.join(SECTIONS)}")
    parser.add_argument("--dtype", choices=list(DTYPES), default="auto",
                        help="weights' dtype (auto: bf16 on a GPU that has it, else float32)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the summary as JSON")
    parser.add_argument("--no-compile", action="store_true",
                        help="throughput rows on eager kernels (default: compiled, as a large job runs)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = choose_device(args.cpu)
    dtype = resolve_dtype(args.dtype, device)
    peak = bf16_peak(device_name(device)) if device.type == "cuda" else None
    sizes = GPU_SIZES if device.type == "cuda" else CPU_SIZES
    # the CPU run's models are tiny: threads would only fight over a busy CPU (core.scoring.threads)
    with scratch_home() as workdir, one_thread(device.type == "cpu"):
        name = device_name(device)
        print(f"device: {name}; torch {torch.__version__}; weights {dtype_name(dtype)}; "
              + (f"assumed dense bf16 peak {peak / 1e12:,.0f} TFLOP/s" if peak
                 else "unknown peak: no roofline fraction" if device.type == "cuda"
                 else "the CPU: no roofline fraction"))
        bandwidth = hbm_bandwidth(name) if device.type == "cuda" else None
        bench = Bench(device, dtype, sizes, peak, workdir, bandwidth, compile=not args.no_compile)
        rows = []
        for section in args.only or SECTIONS:
            rows += run_section(section, bench)
            if args.json:  # after each section: a run cut short keeps what it measured
                write_json(args.json, bench, name, rows)
    print("\n" + summary(rows))
    return 0 if all(row.ok for row in rows) else 1


def write_json(path: Path, bench: Bench, name: str, rows: list[Row]) -> None:
    report = {"device": name, "torch": torch.__version__, "dtype": dtype_name(bench.dtype),
              "compiled": bench.compile,
              "peak_flops": bench.peak, "bandwidth": bench.bandwidth,
              "sizes": dataclasses.asdict(bench.sizes), "rows": [r.to_json() for r in rows]}
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str),
                    encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())

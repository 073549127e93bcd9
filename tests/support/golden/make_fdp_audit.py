"""Golden values for ``core.dp.audit_fdp`` from the reference implementation.

Runs google-deepmind/jax_privacy's ``auditing.py`` (Apache-2.0; the commit is written into the
JSON) as its authors wrote it: the f-DP one-run bound of Mahloujifar et al.
(``_epsilon_one_run_fdp``, with its Gaussian-DP hypothesis) on (m, r, v, β, δ) cases of our
own, and the whole audit
(``CanaryScoreAuditor.epsilon_one_run_fdp`` with the ``MultiSplit`` split-median strategy) on
score sets of our own. The file imports only numpy, scipy and dp_accounting, so it is loaded on
its own from the mirror's HEAD (``git show``), without the jax_privacy package. Writes
``fdp_audit.json`` beside this script.

    python tests/support/golden/make_fdp_audit.py /work/.mirror/google-deepmind+jax_privacy/repo

(``fetch github:google-deepmind/jax_privacy`` gives that bare mirror.)
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("fdp_audit.json")


def count_cases() -> list[dict]:
    """(m, r, v, β, δ): few and many canaries, every guess right, none right, a coin's share,
    all canaries guessed, tiny β and several δ."""
    cases = [(1000, 100, 90), (1000, 500, 400), (200, 50, 50), (10000, 1000, 950),
             (100, 10, 10), (100, 1, 1), (100, 20, 10), (100, 20, 0), (1000, 1000, 700),
             (50, 50, 45), (5000, 200, 199), (5000, 2500, 2000), (20000, 500, 480),
             (300, 40, 33), (1000, 10, 9), (2000, 300, 280), (400, 400, 400), (64, 32, 30),
             (100000, 1000, 990), (1000, 250, 180), (10, 5, 5), (1000, 100, 55)]
    settings = [(0.05, 1e-5), (0.01, 1e-6), (0.0125, 1e-5), (0.05, 1e-3), (0.001, 1e-7)]
    return [{"m": m, "r": r, "v": v, "beta": settings[i % len(settings)][0],
             "delta": settings[i % len(settings)][1]} for i, (m, r, v) in enumerate(cases)]


def score_cases() -> list[dict]:
    """Members' and non-members' scores (shifted Gaussians, ties, a separable set), with the
    split-median strategy's splits and seed."""
    rng = np.random.default_rng(31)
    sets = []
    for n, shift, splits, seed in ((400, 2.0, 10, 0), (600, 1.0, 21, 1), (300, 4.0, 5, 2),
                                   (1000, 3.0, 21, 3)):
        members = rng.random(n) < 0.5
        scores = np.round(rng.normal(shift * members, 1.0), 6)
        sets.append({"inside": scores[members].tolist(), "outside": scores[~members].tolist(),
                     "splits": splits, "seed": seed, "beta": 0.05, "delta": 1e-5})
    tied = np.round(rng.normal(0, 1, 200), 1)            # scores with many ties
    sets.append({"inside": (tied[:100] + 1).tolist(), "outside": tied[100:].tolist(),
                 "splits": 7, "seed": 4, "beta": 0.0125, "delta": 1e-6})
    return sets


def load_reference(checkout: Path):
    """``jax_privacy/auditing.py`` from a work tree or from a bare mirror's HEAD, as a module."""
    source = checkout / "jax_privacy" / "auditing.py"
    if not source.is_file():
        source = Path(tempfile.mkdtemp()) / "jax_privacy_auditing.py"
        source.write_text(subprocess.run(
            ["git", "-C", str(checkout), "show", "HEAD:jax_privacy/auditing.py"],
            check=True, capture_output=True, text=True).stdout)
    spec = importlib.util.spec_from_file_location("jax_privacy_auditing", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main(checkout: str) -> None:
    reference = load_reference(Path(checkout))
    counts = [case | {"epsilon": float(reference._epsilon_one_run_fdp(
        0, case["m"], case["r"], case["v"], case["beta"], case["delta"]))}
        for case in count_cases()]
    scores = []
    for case in score_cases():
        auditor = reference.CanaryScoreAuditor(case["inside"], case["outside"])
        strategy = reference.MultiSplit(num_samples=case["splits"], seed=case["seed"])
        scores.append(case | {"epsilon": float(auditor.epsilon_one_run_fdp(
            case["beta"], case["delta"], threshold_strategy=strategy))})
    commit = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    OUT.write_text(json.dumps({"reference": "github.com/google-deepmind/jax_privacy "
                                            "jax_privacy/auditing.py",
                               "commit": commit, "counts": counts,
                               "scores": scores}) + "\n")
    print(f"wrote {len(counts)} count cases and {len(scores)} score sets to {OUT}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/google-deepmind+jax_privacy/repo")

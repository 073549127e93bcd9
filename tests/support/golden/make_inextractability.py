"""Golden values for ``core.attacks.inextractability`` from the reference implementation.

Runs Algorithms 2 and 3 of Liu, Evans & Xiong (IEEE S&P 2026) as their authors wrote them
(github.com/Emory-AIMS/Inextractability, MIT, commit REFERENCE_COMMIT): the public functions
``estimate_extraction_cost`` and ``estimate_greedy_rate``, whose one model call
(``get_token_ranks``) is replaced by a lookup of hand-made (rank, probability) arrays, so the
reference's own window loops, rank threshold, skip optimisation and dataset maximum run on
inputs of our own. Writes ``inextractability.json`` beside this script.

    python tests/support/golden/make_inextractability.py /path/to/Inextractability-checkout

(the checkout: ``fetch github:Emory-AIMS/Inextractability`` gives a bare mirror; the script
reads the package from its HEAD with ``git show`` when given that mirror's ``repo`` folder).
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REFERENCE_COMMIT = "6486898962d6fdb4870923dfa03417e3bd67ceda"
OUT = Path(__file__).with_name("inextractability.json")
PACKAGE_FILES = ("__init__.py", "core.py", "utils.py")


def hand_made_cases() -> list[dict]:
    """Datasets of (ranks, natural log-probs) per text, with l and m: rank exactly m and m + 1,
    greedy runs (the skip path), texts shorter than l, a tie between windows, tiny probabilities."""
    rng = np.random.default_rng(7)
    random_text = {"ranks": rng.integers(1, 60, 40).tolist(),
                   "logprobs": (-rng.exponential(3.0, 40)).tolist()}
    greedy = {"ranks": [1, 1, 1, 2, 1, 1, 1, 1, 1, 30, 1, 1, 1, 1],
              "logprobs": [-0.1, -0.2, -0.05, -1.0, -0.3, -0.01, -0.02, -0.2, -0.4, -6.0,
                           -0.1, -0.1, -0.1, -0.1]}
    boundary = {"ranks": [20, 21, 3, 1, 20, 21, 5],
                "logprobs": [-4.0, -2.5, -1.0, -0.5, -3.9, -9.0, -30.0]}
    tie = {"ranks": [2, 2, 2, 2, 2, 2], "logprobs": [-1.0] * 6}
    short = {"ranks": [1, 1], "logprobs": [-0.1, -0.1]}
    tiny = {"ranks": [500, 900, 1, 1000], "logprobs": [-60.0, -75.0, -0.01, -200.0]}
    return [
        {"l": 3, "m": 20, "texts": [boundary, greedy, short]},
        {"l": 5, "m": 20, "texts": [random_text, greedy, tie]},
        {"l": 4, "m": 1, "texts": [greedy, boundary]},
        {"l": 2, "m": 100, "texts": [tiny, tie, random_text]},
        {"l": 10, "m": 50, "texts": [random_text, short]},
        {"l": 1, "m": 20, "texts": [boundary]},
    ]


def load_reference(checkout: Path):
    """The reference package, from a work tree or from a bare mirror's HEAD (``git show``)."""
    source = checkout / "inextractability"
    if not source.is_dir():
        folder = Path(tempfile.mkdtemp()) / "inextractability"
        folder.mkdir()
        for name in PACKAGE_FILES:
            text = subprocess.run(["git", "-C", str(checkout), "show", f"HEAD:inextractability/{name}"],
                                  check=True, capture_output=True, text=True).stdout
            (folder / name).write_text(text)
        source = folder
    sys.path.insert(0, str(source.parent))
    return importlib.import_module("inextractability.core")


def run_case(reference, case: dict) -> dict:
    """The reference's dataset-level results on one case (texts named by their index)."""
    arrays = {str(i): t for i, t in enumerate(case["texts"])}
    reference.get_token_ranks = lambda model, tokenizer, text, device=None: (
        list(arrays[text]["ranks"]), [math.exp(v) for v in arrays[text]["logprobs"]], [])
    names = list(arrays)
    cost = reference.estimate_extraction_cost(None, None, names, l=case["l"], m=case["m"])
    greedy = reference.estimate_greedy_rate(None, None, names, l=case["l"])
    return {"b": cost["b"], "p_star": cost["p_star"], "worst_seq": cost["worst_seq"],
            "worst_span": list(cost["worst_span"]),
            "per_sequence_b": [None if r is None else r["b"] for r in cost["per_sequence"]],
            "per_sequence_span": [None if r is None else list(r["worst_span"])
                                  for r in cost["per_sequence"]],
            "eta": greedy["eta"], "n_extractable": greedy["n_extractable"],
            "n_total": greedy["n_total"],
            "per_sequence_extractable": [None if r is None else r["n_extractable"]
                                         for r in greedy["per_sequence"]]}


def main(checkout: str) -> None:
    reference = load_reference(Path(checkout))
    cases = [case | {"reference": run_case(reference, case)} for case in hand_made_cases()]
    OUT.write_text(json.dumps({"reference": "github.com/Emory-AIMS/Inextractability",
                               "commit": REFERENCE_COMMIT, "cases": cases}, indent=None) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/Emory-AIMS+Inextractability/repo")

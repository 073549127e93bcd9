"""A second run of an attack in a new process, with the scores cached on disk, against the first.

Two randomly initialised 6-layer, 256-wide GPT-2 folders (one tokenizer, 4,096 tokens) and 1,500
sentences of 15..60 words; ``python -m core lazy-risk`` (no generated sentences) runs twice as
fresh processes with one lab home: the first scores every sentence under both models (and
hashes the model files), the second finds the scores on disk. Prints the wall time of each
process, the attack's own time (``seconds``, models loaded included) and the ratios
second / first; the two results must agree. Run from the repository root:
``python -m bench.bench_score_cache``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from core.models.tiny import new_gpt2, save_hf_folder, train_tokenizer

N_SENTENCES, MIN_WORDS, MAX_WORDS, VOCAB = 1500, 15, 60, 4096


def make_inputs(root: Path) -> list[str]:
    """Two model folders and a file of sentences under ``root``; the lazy-risk arguments."""
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), rng.integers(2, 9)))
             for _ in range(3000)]
    sentences = [" ".join(rng.choice(words, rng.integers(MIN_WORDS, MAX_WORDS + 1)))
                 for _ in range(N_SENTENCES)]
    tokenizer = train_tokenizer(sentences, vocab_size=VOCAB)
    folders = [save_hf_folder(new_gpt2(tokenizer, n_layer=6, n_head=8, n_embd=256,
                                       n_positions=256, seed=seed), tokenizer, root / name)
               for seed, name in enumerate(("target", "calibration"))]
    train = root / "train.txt"
    train.write_text("\n".join(sentences), encoding="utf-8")
    return ["--model", str(folders[0]), "--calibration", str(folders[1]), "--train", str(train),
            "--generated", "0", "--device", "cpu"]


def run_attack(arguments: list[str], env: dict) -> tuple[float, dict]:
    """Wall seconds of one ``python -m core lazy-risk`` process, and its result."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "core", "lazy-risk", *arguments, "--no-record",
                          "--json"], env=env, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, json.loads(out)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-score-cache-") as folder:
        root = Path(folder)
        arguments = make_inputs(root)
        env = dict(os.environ, LEAKAGE_LAB_HOME=str(root / "home"))
        first_wall, first = run_attack(arguments, env)
        second_wall, second = run_attack(arguments, env)
        cached_mb = (root / "home" / "cache" / "scores" / "scores.sqlite").stat().st_size / 2**20
    same = [s["risk"] for s in first["sentences"]] == [s["risk"] for s in second["sentences"]]
    print(f"lazy-risk, 2 models 6x256 GPT-2 (vocab {VOCAB}), {first['counts']['train']} sentences; "
          f"results identical: {same}; disk cache {cached_mb:.1f} MB")
    print(f"first process (scores, hashes the models): {first_wall:.2f} s wall, "
          f"attack {first['seconds']:.2f} s")
    print(f"second process (scores from disk):         {second_wall:.2f} s wall, "
          f"attack {second['seconds']:.2f} s")
    print(f"ratio second/first: wall {second_wall / first_wall:.3f}, "
          f"attack {second['seconds'] / first['seconds']:.3f}")


if __name__ == "__main__":
    main()

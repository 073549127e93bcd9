"""Exposure with 200,000 fillers: partial results of the ranks so far, on the clock, against a
whole result (quantiles, histogram, a skew-normal fit) after every chunk of fillers, as before.

Two measurements, each the run as it is against the previous loop, in one process:

* **end to end** on the exposure spec's tiny model (a one-layer random GPT-2), an 8-digit secret
  (|R| = 10^8, so the fillers are drawn), each run from an empty score cache;
* **the loop alone**: the fillers' log-perplexities of the first measurement served from memory
  and the secret placed below every filler, as a memorised one is, so that each partial of the
  previous loop fitted a skew-normal to every filler so far.

The results must agree. About 10 minutes on the loaded 2-core CPU. Run from the repository root:
``python -m bench.bench_exposure``.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from unittest import mock

import numpy as np

from core.attacks.membership import exposure as ex
from core.models import resolve_model
from core.runtime import no_progress
from core.scoring import clear_cache
from core.serialize import to_jsonable

N_FILLERS = 200_000


def previous_run(config: ex.ExposureConfig, *, progress) -> ex.ExposureResult:
    """The loop before partials were paced: the whole result as the partial of every chunk."""
    started, lm = time.perf_counter(), resolve_model(config.model, device=config.device)
    fillers, enumerated = ex.filler_secrets(config)
    secret_lps = ex._log_perplexities(lm, ex._filled(config, config.canaries), config,
                                      no_progress, None)
    scored = []
    for begin in range(0, len(fillers), ex.FILLER_CHUNK):
        chunk = fillers[begin:begin + ex.FILLER_CHUNK]
        scored.append(ex._log_perplexities(lm, ex._filled(config, chunk), config, no_progress,
                                           None))
        partial = ex._result(config, secret_lps, fillers, scored, enumerated, started, False)
        progress(begin / len(fillers), "", partial=to_jsonable(partial))
    return ex._result(config, secret_lps, fillers, scored, enumerated, started, False)


def timed(run, config: ex.ExposureConfig) -> tuple[float, ex.ExposureResult, int]:
    """Seconds of ``run(config)`` from an empty score cache, its result, its partials."""
    partials = []

    def progress(fraction, message="", partial=None):
        if partial is not None:
            partials.append(partial)

    clear_cache()
    start = time.perf_counter()
    result = run(config, progress=progress)
    return time.perf_counter() - start, result, len(partials)


def compare(what: str, config: ex.ExposureConfig) -> None:
    before, old, old_partials = timed(previous_run, config)
    after, new, new_partials = timed(ex.run, config)
    same = ([(s.rank, s.exposure_bits, s.method) for s in old.secrets]
            == [(s.rank, s.exposure_bits, s.method) for s in new.secrets])
    print(f"{what}: before {before:.2f} s ({old_partials} partials), after {after:.2f} s "
          f"({new_partials} partials): after/before {after / before:.3f}; method "
          f"{new.secrets[0].method}; results identical: {same}")


def served_from_memory(config: ex.ExposureConfig):
    """A stand-in for ``exposure._log_perplexities``: every filler's score measured once, the
    secret's below them all."""
    fillers, _ = ex.filler_secrets(config)
    texts = ex._filled(config, fillers)
    lps = ex._log_perplexities(resolve_model(config.model), texts, config, no_progress, None)
    by_text = dict(zip(texts, lps))
    by_text.update(dict.fromkeys(ex._filled(config, config.canaries), lps.min() - 1.0))
    return lambda lm, texts, *args: np.array([by_text[t] for t in texts])


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-exposure-") as home, \
            mock.patch.dict(os.environ, LEAKAGE_LAB_HOME=home):
        config = dataclasses.replace(ex.tiny_config(), secrets=("01782369",), fillers=N_FILLERS,
                                     batch_size=256)
        print(f"exposure of one 8-digit secret among {N_FILLERS:,} drawn fillers, chunks of "
              f"{ex.FILLER_CHUNK:,}, on the CPU")
        compare("end to end, the tiny model (1 layer, 16 wide)", config)
        with mock.patch.object(ex, "_log_perplexities", served_from_memory(config)):
            compare("the loop alone, a memorised secret", config)


if __name__ == "__main__":
    main()

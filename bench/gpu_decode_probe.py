"""Where a graphed decoding step's time goes, and whether compiling it pays: ``python -m
bench.gpu_decode_probe [--rows N] [--eager-only] [--json PATH]`` (CUDA only).

On SmolLM2-135M's architecture (random bf16 weights), top-40 sampling at batch ``--rows``
(256), 128 new tokens, with the step as ``core.generation.graphed`` records it (the forward
pass and the draw in one CUDA graph), first as it is, then (unless ``--eager-only``) with the
forward pass through ``torch.compile``:
- ``first``, ``steady``: seconds of the first ``generate`` (recording, compiling) and the next;
- ``same_seed_same_samples``: two later runs with one seed give the same samples;
- ``forward_ms``, ``draw_ms``: one eager forward step and one draw, CUDA-event timed (20 each);
- ``replay_ms``: one graph replay, the whole step as generation runs it (50 timed).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from bench.gpu_common import build
from core.generation import graphed
from core.generation.sampling import generate
from core.scoring import Sampler

STEPS = 128
SAMPLER = Sampler(top_k=40)
ORIGINAL_FORWARD = graphed.StaticDecoder._forward


def _generate(lm, rows: int, seed: int = 0) -> tuple[float, object]:
    torch.cuda.synchronize()
    started = time.perf_counter()
    result = generate(lm, SAMPLER, [[]] * rows, max_new_tokens=STEPS, batch_size=rows, seed=seed)
    torch.cuda.synchronize()
    return time.perf_counter() - started, result


def _event_ms(function, repeats: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        function()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def probe(lm, rows: int, compiled: bool) -> dict:
    """The figures of the module's docstring for the step as recorded, or compiled."""
    graphed.graph_runs(lm.model).clear()
    if compiled:   # every StaticDecoder's forward pass through torch.compile, for this probe only
        graphed.StaticDecoder._forward = torch.compile(ORIGINAL_FORWARD, dynamic=False)
    try:
        first, _ = _generate(lm, rows)
        steady, one = _generate(lm, rows)
        _, two = _generate(lm, rows)
        run = next(iter(graphed.graph_runs(lm.model).values()))
        with torch.inference_mode():
            run.start(torch.zeros((rows, 1), dtype=torch.long, device=lm.device), 0)
            logits = run.decoder.advance()
            figures = {"forward_ms": _event_ms(run.decoder.advance, 20),
                       "draw_ms": _event_ms(lambda: graphed.inverse_cdf_draw(
                           logits, SAMPLER, run.betas[:1], run.uniforms[0]), 20)}
            run.start(torch.zeros((rows, 1), dtype=torch.long, device=lm.device), 0)
            figures["replay_ms"] = _event_ms(run.graph.replay, 50)
    finally:
        graphed.StaticDecoder._forward = ORIGINAL_FORWARD
    same = all(np.array_equal(a, b) for a, b in zip(one.samples, two.samples))
    return {"first": first, "steady": steady, "steady_ms_per_step": 1000 * steady / STEPS,
            "tokens": one.new_tokens, "same_seed_same_samples": same} | figures


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_decode_probe",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures as JSON (after each part)")
    parser.add_argument("--rows", type=int, default=256, help="samples decoded at once (256)")
    parser.add_argument("--eager-only", action="store_true",
                        help="the step as generation runs it only, not compiled too")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench.gpu_decode_probe needs a CUDA GPU")
    lm = build("smollm2-135m", torch.device("cuda"), torch.bfloat16)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "rows": args.rows, "steps": STEPS, "top_k": SAMPLER.top_k}
    parts = (("graphed", False),) + (() if args.eager_only else (("graphed, step compiled", True),))
    for name, compiled in parts:
        report[name] = probe(lm, args.rows, compiled)
        print(name, json.dumps(report[name]), flush=True)
        if args.json:   # a part cut short by a timeout keeps the parts before it
            args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

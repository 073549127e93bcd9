"""``bench.gpu``'s attack sections: user inference and differential rank, each through its spec
on the device.

- User inference runs the spec (``core.attacks.user_inference.spec.run``, bootstrap and Figure 5
  curve included) on two random-weight models loaded from folders like a user's, 10 samples
  per user; its users/min leaves model loading out, as the spec's own figure does. Baseline:
  T̂ from one text per forward (``bench_user_inference.one_at_a_time``) on the first users,
  whose T̂ must agree with the spec's.
- Differential rank runs the spec's beam search (RDS) in float32 on the device and on the CPU:
  only at one precision can the math promise the same ranking (bf16 reorders sequences whose
  scores differ by less than its rounding), so the check is exact up to float32 ties.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import torch

from bench.bench_user_inference import one_at_a_time as user_baseline
from bench.gpu_common import (ARCHITECTURES, Bench, Row, as_text, compiling, load_named,
                              order_agrees, random_texts, saved_pair, timed)
from core.attacks.diffrank import spec as dr
from core.attacks.user_inference import spec as ui
from core.attacks.user_inference.samples import write_samples
from core.models import unload_model
from core.scoring import clear_cache

FLOAT32_TIE = 1e-4        # relative: float32 scores on two devices differ by ~1e-6 of |log p|


def _user_records(vocab: int, users: int, per_user: int, tokens: int) -> list[dict]:
    """``users`` users (every other one held in) of ``per_user`` random texts of ``tokens`` tokens."""
    texts = iter(random_texts(vocab, users * per_user, tokens, seed=2))
    return [{"user_id": f"user{u:05d}", "text": as_text(next(texts)), "member": u % 2 == 0}
            for u in range(users) for _ in range(per_user)]


def _write(path: Path, records: list[dict]) -> str:
    path.write_text(write_samples(records, "jsonl"), encoding="utf-8")
    return str(path)


def user_inference(bench: Bench) -> list[Row]:
    """Users/min of the user-inference spec, and T̂ against one text per forward."""
    sizes, device = bench.sizes, bench.device
    folders = saved_pair(sizes.small, bench.workdir, bench.dtype)
    names = [load_named(f, device, bench.dtype) for f in folders]
    try:
        vocab = ARCHITECTURES[sizes.small]["vocab_size"]
        records = _user_records(vocab, sizes.users, sizes.samples_per_user, sizes.user_tokens)
        files = {n: _write(bench.workdir / f"users-{n}.jsonl", records[: n * sizes.samples_per_user])
                 for n in (2, sizes.baseline_users, sizes.users)}
        config = ui.UserInferenceConfig(model=names[0], reference=names[1], data=files[sizes.users],
                                        device=device.type)
        with compiling(bench):
            warm_s, _ = timed(device, lambda: ui.run(dataclasses.replace(
                config, data=files[2], bootstrap=0, knowledge_draws=0)))  # compiles
            clear_cache()
            result = ui.run(config)
        subset = dataclasses.replace(config, data=files[sizes.baseline_users])
        base_s, baseline = timed(device, lambda: user_baseline(subset), before=clear_cache)
    finally:
        for name in names:
            unload_model(name)
    row = Row(f"user inference {sizes.small}", str(device), result.users_per_minute, "users/min",
              baseline=60 * sizes.baseline_users / base_s, baseline_name="one text per forward",
              extra={"users": result.n_users, "samples": result.n_samples,
                     "tokens_per_sample": sizes.user_tokens, "bootstrap": config.bootstrap,
                     "knowledge_draws": config.knowledge_draws, "seconds": result.seconds,
                     "warm_up_seconds": warm_s})
    row.hold(bench, "≥ 5,000 users/min", result.users_per_minute, 5000)
    row.check("every user scored", result.n_samples == sizes.users * sizes.samples_per_user
              and not result.stopped_early, f"{result.n_users} users, {result.n_samples} samples")
    ours = {r.user_id: r.t_hat for r in result.rows}
    worst = max(abs(ours[u] - t) for u, t in baseline.items())
    bound = 2 * bench.tolerance.text_mean * sizes.user_tokens  # two models' per-token noise
    row.check("T̂ equals one text per forward's", worst <= bound,
              f"max |Δ T̂| {worst:.2g} (≤ {bound:g}) over {len(baseline)} users")
    return [row]


def diffrank(bench: Bench) -> list[Row]:
    """The beam search on the device and on the CPU (float32 both): extensions/s and ranking."""
    sizes = bench.sizes
    folders = saved_pair(sizes.small, bench.workdir, bench.dtype)
    runs = {}
    for role, device in (("device", bench.device), ("cpu", torch.device("cpu"))):
        names = [load_named(f, device, torch.float32) for f in folders]
        try:
            config = dr.DiffRankConfig(before=names[0], after=names[1], strategy="beam",
                                       length=sizes.diffrank_length, beam=sizes.diffrank_beam,
                                       relative=True)
            dr.run(dataclasses.replace(config, length=1, beam=8, rows=1))  # warm-up
            clear_cache()
            runs[role] = dr.run(config)
        finally:
            for name in names:
                unload_model(name)
    ours, cpu = runs["device"], runs["cpu"]
    row = Row(f"differential rank {sizes.small}", str(bench.device),
              ours.extensions_scored / ours.seconds, "extensions/s",
              baseline=cpu.extensions_scored / cpu.seconds, baseline_name="the same on the CPU",
              extra={"length": sizes.diffrank_length, "beam": sizes.diffrank_beam,
                     "metric": "rds", "dtype": "float32", "rows": len(ours.rows)})
    check_same_ranking(row, ours.rows, cpu.rows)
    return [row]


def check_same_ranking(row: Row, ours: list, theirs: list) -> None:
    """The device's rows against the CPU's (both float32, ranked by RDS): the same best
    sequence, the same order of every common pair further apart than a float32 tie, and no
    sequence clearly above the other run's last row missing from it."""
    a = {tuple(r.token_ids): r.rds for r in ours}
    b = {tuple(r.token_ids): r.rds for r in theirs}
    tie = FLOAT32_TIE * max(1.0, *map(abs, a.values()), *map(abs, b.values()))
    best_gap = theirs[0].rds - theirs[1].rds if len(theirs) > 1 else math.inf
    row.check("the same best sequence", tuple(ours[0].token_ids) == tuple(theirs[0].token_ids)
              or best_gap <= 2 * tie, f"RDS {ours[0].rds:.6g} vs {theirs[0].rds:.6g}")
    common = sorted(set(a) & set(b))
    agrees, pairs = order_agrees(np.array([a[s] for s in common]),
                                 np.array([b[s] for s in common]), 2 * tie)
    row.check("the same order", agrees,
              f"{pairs} pairs of {len(common)} common sequences further apart than {2 * tie:.2g}")
    missing = ([s for s, v in b.items() if s not in a and v > min(a.values()) + tie]
               + [s for s, v in a.items() if s not in b and v > min(b.values()) + tie])
    row.check("the same sequences above either cutoff", not missing,
              f"{len(a)} and {len(b)} rows; {len(missing)} clearly above the other's last missing")

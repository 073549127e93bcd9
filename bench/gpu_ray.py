"""``bench.gpu``'s scale-out section: user inference with its scoring on a local Ray pool.

The user-inference spec runs on two random-weight models loaded from folders (as
``bench.gpu_attacks.user_inference`` does), first in process, then inside
``core.scaleout.using(ScaleOut("auto", workers=0))``: one Ray worker per GPU of the cluster (on
the CPU, one per core), each loading the model folders itself. The Ray run is timed twice, cold
(the workers start and load the models) and warm (models loaded, score caches emptied). Checks:
every user's T̂ equals the in-process run's, and the first users' T̂ equals a float32 run on the
CPU (each within the bf16 noise of two models' per-token log-probs, as the user-inference row
bounds it); the scoring went to Ray (shards scored, the pool's size is the cluster's GPUs).
"""

from __future__ import annotations

import dataclasses
import time

import torch

from bench.gpu_attacks import _user_records, _write
from bench.gpu_common import ARCHITECTURES, Bench, Row, load_named, saved_pair
from core import scaleout
from core.attacks.user_inference import spec as ui
from core.models import unload_model
from core.scoring import clear_cache


def _run(config: ui.UserInferenceConfig, settings: scaleout.ScaleOut | None):
    """The spec's result, its seconds and where its scoring went (None: in process)."""
    from core.scaleout.ray_scoring import forget_scores

    clear_cache()
    started = time.perf_counter()
    if settings is None:
        return ui.run(config), time.perf_counter() - started, None
    forget_scores()
    with scaleout.using(settings) as placement:
        result = ui.run(config)
    return result, time.perf_counter() - started, placement


def _t_hats(result) -> dict[str, float]:
    return {r.user_id: r.t_hat for r in result.rows}


def _cpu_t_hats(folders: tuple[str, str], data: str) -> dict[str, float]:
    """T̂ of the users in ``data`` from the same model folders in float32 on the CPU."""
    names = [load_named(f, torch.device("cpu"), torch.float32) for f in folders]
    try:
        config = ui.UserInferenceConfig(model=names[0], reference=names[1], data=data,
                                        device="cpu", bootstrap=0, knowledge_draws=0)
        return _t_hats(_run(config, None)[0])
    finally:
        for name in names:
            unload_model(name)


def ray_scaleout(bench: Bench) -> list[Row]:
    """Users/min of user inference scored on Ray (warm workers) against the same in process."""
    import ray

    started = not ray.is_initialized()   # a Ray this section starts, it shuts down
    sizes, device = bench.sizes, bench.device
    folders = saved_pair(sizes.small, bench.workdir, bench.dtype)
    vocab = ARCHITECTURES[sizes.small]["vocab_size"]
    records = _user_records(vocab, sizes.users, sizes.samples_per_user, sizes.user_tokens)
    full = _write(bench.workdir / "ray-users.jsonl", records)
    subset = _write(bench.workdir / "ray-users-cpu.jsonl",
                    records[: sizes.baseline_users * sizes.samples_per_user])
    names = [load_named(f, device, bench.dtype) for f in folders]
    settings = scaleout.ScaleOut("auto", workers=0)
    try:
        config = ui.UserInferenceConfig(model=names[0], reference=names[1], data=full,
                                        device=device.type)
        _run(dataclasses.replace(config, data=subset), None)   # loads, warms the kernels
        here, here_s, _ = _run(config, None)
        _, cold_s, _ = _run(config, settings)
        there, warm_s, placement = _run(config, settings)
        gpus = int(ray.cluster_resources().get("GPU", 0))
    finally:
        for name in names:
            unload_model(name)
        if started:
            ray.shutdown()
    cpu = _cpu_t_hats(folders, subset)
    row = Row(f"Ray user inference {sizes.small}", str(device), 60 * there.n_users / warm_s,
              "users/min", baseline=60 * here.n_users / here_s, baseline_name="in process",
              extra={"users": there.n_users, "cluster_gpus": gpus, "workers": placement.workers,
                     "shards": placement.shards, "cold_seconds": cold_s, "warm_seconds": warm_s,
                     "in_process_seconds": here_s})
    wanted = gpus if device.type == "cuda" else placement.workers
    row.check("scored on the Ray pool", placement.shards > 0 and placement.workers == wanted >= 1,
              f"{placement.shards} shards on {placement.workers} workers; the cluster has {gpus} GPUs")
    bound = 2 * bench.tolerance.text_mean * sizes.user_tokens
    _check_same(row, "T̂ equals the in-process run's", _t_hats(there), _t_hats(here), bound)
    _check_same(row, "T̂ equals float32 on the CPU", _t_hats(there), cpu, bound)
    return [row]


def _check_same(row: Row, check: str, ours: dict[str, float], theirs: dict[str, float],
                bound: float) -> None:
    worst = max(abs(ours[user] - t) for user, t in theirs.items())
    row.check(check, ours.keys() >= theirs.keys() and worst <= bound,
              f"max |Δ T̂| {worst:.2g} (≤ {bound:.2g}) over {len(theirs)} users")

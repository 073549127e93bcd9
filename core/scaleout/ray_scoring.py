"""The engine's scoring on a pool of Ray actors, each holding the model once (see the package doc).

The sequences still to score are cut, in order, into shards of about ``shard_tokens`` tokens.
A shard's key hashes the model's identity, the readouts, the scoring options and its token ids,
so the same job cuts the same shards: each finished shard is written to
``<lab home>/shards/`` as it arrives (``np.savez``, read back without pickle), a rerun after an
interruption loads those instead of scoring them again, and the files are removed once the
engine has merged the whole result. Actors restart (and retry their shard) when a worker dies.

Pools belong to settings, not to the process: one per (device, workers), leased by each scoring
call and shared by the jobs that ask the same. A job keeps the ``ScaleOut`` it was submitted
with, and no other job's settings resize or kill the pool it holds: an idle pool is torn down
when other settings need the cluster (else it stays warm for the next job), a pool in use only
once its last lease ends (its new actors wait for the cluster's CPUs or GPUs meanwhile). A
cancel kills the pool when no other job holds it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core import paths, scaleout
from core.errors import UserError
from core.runtime import Cancelled
from core.scaleout import ScaleOut

ROOT = Path(__file__).resolve().parents[2]
_POOLS: dict[tuple[str, int], _Pool] = {}  # (device, workers) -> its pool
_POOLS_LOCK = threading.Lock()
_DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


def _runtime_env(remote: bool) -> dict:
    """The workers' environment: this checkout importable (uploaded to a remote cluster), ahead
    of the driver's own ``PYTHONPATH`` (packages installed with ``--target`` stay importable),
    the same lab home and data folders, and no disk score cache of their own (the driver's keeps
    the results)."""
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"LEAKAGE_LAB_HOME": str(paths.home().resolve()), "LEAKAGE_LAB_SCORE_CACHE_MB": "0",
           "PYTHONPATH": os.pathsep.join(path), "TOKENIZERS_PARALLELISM": "false"}
    if os.environ.get("LEAKAGE_LAB_DATA"):
        env["LEAKAGE_LAB_DATA"] = os.environ["LEAKAGE_LAB_DATA"]
    if not remote:
        return {"env_vars": env}
    env.pop("PYTHONPATH")
    return {"env_vars": env, "working_dir": str(ROOT),
            "excludes": [".leakage-lab/", ".venv/", ".git/", "**/__pycache__/"]}


def connect(address: str):
    """Ray, initialised once per process: ``auto`` joins the cluster this machine is part of
    (``ray start``) or else starts a local one; any other address is a cluster's."""
    import ray

    if ray.is_initialized():
        return ray
    options = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        if address == "auto":
            try:
                ray.init(address="auto", runtime_env=_runtime_env(False), **options)
            except ConnectionError:  # no cluster here: start one for this process
                ray.init(runtime_env=_runtime_env(False), **options)
        else:
            ray.init(address=address, runtime_env=_runtime_env(True), **options)
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise UserError(f"cannot reach the Ray cluster at {address!r}: {err}") from None
    return ray


@functools.cache
def _worker_class():
    import ray

    @ray.remote(max_restarts=2, max_task_retries=2)
    class ScoringWorker:
        """Scores shard after shard with the in-process engine, each model loaded once (the
        worker's model registry keeps the last few)."""

        def score(self, model: tuple[str, str, str], sequences, readouts, options) -> list[list[np.ndarray]]:
            from core.models.loaded import load_model
            from core.scoring.engine import score_under_samplers

            source, device, dtype = model
            lm = load_model(source, device=device, dtype=dtype)
            scored = score_under_samplers(lm, sequences, readouts, **options)
            return [[per[i].logprobs for per in scored] for i in range(len(sequences))]

        def forget(self) -> None:
            from core.scoring import clear_cache

            clear_cache()

    return ScoringWorker


def forget_scores() -> None:
    """Empty every worker's score cache (their models stay loaded): for benchmarks."""
    import ray

    ray.get([actor.forget.remote() for pool in _POOLS.values() for actor in pool.actors])


@dataclass
class _Pool:
    """A pool's workers and how many scoring calls hold it now."""

    actors: list = field(default_factory=list)
    users: int = 0


def _kill(ray, key: tuple[str, int]) -> None:
    """Kill the pool ``key``'s workers and forget it (under ``_POOLS_LOCK``)."""
    for actor in _POOLS.pop(key).actors:
        ray.kill(actor)


def lease(ray, key: tuple[str, int]) -> list:
    """The workers of pool ``key`` = (device, workers), started if need be, held until
    ``release``. Idle pools of other settings are torn down first, to free the cluster for
    these; pools in use are never touched."""
    with _POOLS_LOCK:
        if key not in _POOLS:
            for other in [k for k, pool in _POOLS.items() if pool.users == 0]:
                _kill(ray, other)
            device, count = key
            options = dict(num_gpus=1, num_cpus=0) if device == "cuda" else dict(num_cpus=1)
            _POOLS[key] = _Pool([_worker_class().options(**options).remote()
                                 for _ in range(count)])
        _POOLS[key].users += 1
        return list(_POOLS[key].actors)


def release(ray, key: tuple[str, int], *, stop: bool = False) -> None:
    """End a lease of pool ``key``. Its last one ends it when ``stop`` (a cancel: the workers
    stop at once) or when pools of other settings exist (they wait for the cluster); else it
    stays warm for the next job."""
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            return
        pool.users -= 1
        if pool.users <= 0 and (stop or len(_POOLS) > 1):
            _kill(ray, key)


class RayScorer:
    """Scores sequences for the engine on the pool of ``settings`` for the loaded model ``lm``."""

    def __init__(self, settings: ScaleOut, lm) -> None:
        self.settings, self.lm = settings, lm
        self.ray = connect(settings.address)
        self.model = self._model()  # what every worker loads, asked of the cluster once

    def _model(self) -> tuple[str, str, str]:
        """(source, device, dtype) the workers load: a GPU each when the cluster has GPUs and
        the model runs on one, else the CPU."""
        gpus = self.lm.device.type == "cuda" and self.ray.cluster_resources().get("GPU", 0) >= 1
        dtype = _DTYPE_NAMES.get(next(self.lm.model.parameters()).dtype, "float32")
        return self.lm.source, "cuda" if gpus else "cpu", dtype

    def _size(self) -> tuple[str, int]:
        """(device, workers) of this scorer's pool: one worker per GPU (or ``workers``) when the
        model runs on a GPU, else one per CPU (or ``workers``)."""
        device = self.model[1]
        unit = "GPU" if device == "cuda" else "CPU"
        available = int(self.ray.cluster_resources().get(unit, 0))
        count = self.settings.workers or available
        if not 1 <= count <= available:
            raise UserError(f"the Ray cluster has {available} {unit}s: ask for 1 to {available} "
                            f"workers (0: one per {unit})")
        return device, count

    @contextlib.contextmanager
    def leased(self):
        """The workers of this scorer's settings for the block (``lease``); a cancel (the block
        raising ``Cancelled``) kills them unless another job holds them too."""
        key = self._size()
        actors = lease(self.ray, key)
        stop = False
        try:
            yield actors
        except Cancelled:
            stop = True
            raise
        finally:
            release(self.ray, key, stop=stop)

    def _shards(self, sequences: Sequence[np.ndarray], readouts, options: dict) -> list[tuple[str, list[int]]]:
        """(key, sequence indices) of each shard, cut in order at ``shard_tokens`` tokens."""
        shards, current, tokens = [], [], 0
        what = repr((self.lm.identity, self.model, tuple(readouts), sorted(options.items())))
        for i, seq in enumerate(sequences):
            current.append(i)
            tokens += max(len(seq), 1)
            if tokens >= self.settings.shard_tokens or i == len(sequences) - 1:
                digest = hashlib.sha256(what.encode())
                for j in current:
                    digest.update(len(sequences[j]).to_bytes(8, "little") + sequences[j].tobytes())
                shards.append((digest.hexdigest()[:32], current))
                current, tokens = [], 0
        return shards

    def score(self, sequences: Sequence[np.ndarray], readouts, options: dict, *,
              progress: Callable | None, cancel: threading.Event | None) -> list[list[np.ndarray]]:
        """For each sequence, its values under each readout (as ``score_under_samplers``
        computes them), scored shard by shard on the pool; progress counts shards."""
        shards = self._shards(sequences, readouts, options)
        folder = paths.home() / "shards"
        results = {k: _load(folder / f"{key}.npz", len(rows), len(readouts))
                   for k, (key, rows) in enumerate(shards) if (folder / f"{key}.npz").exists()}
        scaleout.note(resumed=len(results))
        if results and progress is not None:
            progress(len(results) / len(shards), f"{len(results)} of {len(shards)} shards from an earlier run")
        self._run(sequences, shards, [k for k in range(len(shards)) if k not in results],
                  (list(readouts), options), results, progress, cancel)
        values: list[list[np.ndarray]] = [[] for _ in sequences]
        for k, (key, rows) in enumerate(shards):
            for row, per_readout in zip(rows, results[k]):
                values[row] = per_readout
        for key, _ in shards:
            (folder / f"{key}.npz").unlink(missing_ok=True)
        return values

    def _run(self, sequences, shards, todo: list[int], work: tuple, results: dict, progress,
             cancel) -> None:
        """Score the shards ``todo`` on the pool, one shard per actor at a time, saving each
        as it arrives (and counting it: ``scaleout.note``); ``work`` is (readouts, options)."""
        with self.leased() as actors:
            self._score_on(actors, sequences, shards, todo, work, results, progress, cancel)

    def _score_on(self, actors: list, sequences, shards, todo: list[int], work: tuple,
                  results: dict, progress, cancel) -> None:
        """``_run`` on the leased ``actors``."""
        ray, folder, model = self.ray, paths.home() / "shards", self.model
        idle, running, todo = list(actors), {}, list(reversed(todo))
        workers = len(idle)
        while todo or running:
            if cancel is not None and cancel.is_set():
                raise Cancelled("scoring cancelled (finished shards are kept for a rerun)")
            while idle and todo:
                k, actor = todo.pop(), idle.pop()
                running[actor.score.remote(model, [sequences[i] for i in shards[k][1]], *work)] = (k, actor)
            done, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
            for ref in done:
                k, actor = running.pop(ref)
                results[k] = _get(ray, ref)
                _save(folder / f"{shards[k][0]}.npz", results[k])
                scaleout.note(workers=workers, shards=1)
                idle.append(actor)
                if progress is not None:
                    progress(len(results) / len(shards), f"scored {len(results)} of {len(shards)} shards on Ray")


def _get(ray, ref) -> list[list[np.ndarray]]:
    """A shard's result; a worker's ``UserError`` (out of memory, ...) comes back as itself."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        if isinstance(err.cause, UserError):
            raise err.cause from None
        raise


def _save(path: Path, values: list[list[np.ndarray]]) -> None:
    """One shard's values: per readout j, its sequences' arrays concatenated as ``v{j}``, with
    their ``lengths``; written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    readouts = len(values[0]) if values else 0
    arrays = {f"v{j}": np.concatenate([v[j] for v in values] or [np.zeros(0, np.float32)])
              for j in range(readouts)}
    temporary = path.with_suffix(".part.npz")
    np.savez(temporary, lengths=np.array([len(v[0]) for v in values], dtype=np.int64), **arrays)
    temporary.replace(path)


def _load(path: Path, rows: int, readouts: int) -> list[list[np.ndarray]]:
    with np.load(path, allow_pickle=False) as saved:
        bounds = np.cumsum(np.concatenate([[0], saved["lengths"]]))
        columns = [saved[f"v{j}"] for j in range(readouts)]
    if len(bounds) != rows + 1:
        raise UserError(f"the shard file {path} does not match its shard: delete it and rerun")
    return [[c[bounds[i]:bounds[i + 1]] for c in columns] for i in range(rows)]

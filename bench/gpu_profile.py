"""Where the GPU time goes: ``python -m bench.gpu_profile [--cpu]``.

PyTorch's profiler around a few steps of each path ``bench.gpu`` measures on SmolLM2-135M's
architecture (batched generation, transformers' ``generate``, the scoring engine), printing per
path the wall time, the time the device was busy (the sum of its kernels) and the operators
that take the most host and device time; then user inference's seconds with and without its
bootstrap and Figure 5 curve. A path whose device is busy a small share of the wall time is
bound by the host (Python, launches, synchronisations), not by the GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from bench.gpu import choose_device, scratch_home
from bench.gpu_attacks import _user_records, _write
from bench.gpu_common import ARCHITECTURES, build, load_named, random_texts, saved_pair
from bench.gpu_scale import hf_generate
from core.attacks.user_inference import spec as ui
from core.generation.sampling import generate
from core.models import unload_model
from core.models.loaded import resolve_dtype
from core.scoring import Sampler, clear_cache, context_ids, score_token_ids


def profiled(name: str, device: torch.device, function, rows: int = 12) -> None:
    """Run ``function`` once under the profiler; print wall, device-busy time and top operators."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        function()
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
    events = prof.key_averages()
    # the kernels' own time (an operator's self device time is its kernels': counted once)
    busy = sum(e.self_device_time_total for e in events if e.device_type == DeviceType.CUDA) / 1e6
    print(f"\n## {name}: wall {wall:.3f} s, device busy {busy:.3f} s ({busy / wall:.0%})")
    for key in ("self_device_time_total", "self_cpu_time_total"):
        if key == "self_device_time_total" and device.type != "cuda":
            continue
        print(events.table(sort_by=key, row_limit=rows, max_name_column_width=60))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_profile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    device = choose_device(args.cpu)
    dtype = resolve_dtype("auto", device)
    arch = "smollm2-135m" if device.type == "cuda" else "tiny"
    batch, steps, texts_n = (256, 24, 128) if device.type == "cuda" else (8, 8, 8)
    with scratch_home() as workdir:
        lm = build(arch, device, dtype)
        prompts = random_texts(lm.card.vocab_size, batch, 32, seed=4)
        ids = torch.tensor([context_ids(lm.tokenizer) + p for p in prompts], device=device)
        sample = lambda: generate(lm, Sampler(top_k=40), prompts, batch_size=batch,  # noqa: E731
                                  max_new_tokens=steps)
        texts = random_texts(lm.card.vocab_size, texts_n, 256, seed=1)
        for run in (sample, lambda: hf_generate(lm, ids, steps), lambda: score_token_ids(lm, texts)):
            run()  # warm-up
        profiled(f"generate, batch {batch}, {steps} steps", device, sample)
        profiled(f"transformers generate, batch {batch}, {steps} steps", device,
                 lambda: hf_generate(lm, ids, steps))
        clear_cache()
        profiled(f"scoring {texts_n} texts of 256 tokens", device,
                 lambda: score_token_ids(lm, texts), rows=16)
        user_inference_split(workdir, arch, device, dtype)


def user_inference_split(workdir, arch: str, device: torch.device, dtype: torch.dtype) -> None:
    """User inference's seconds: the whole spec, and without its bootstrap and curve."""
    names = [load_named(f, device, dtype) for f in saved_pair(arch, workdir, dtype)]
    users = 200 if device.type == "cuda" else 8
    records = _user_records(ARCHITECTURES[arch]["vocab_size"], users, 10, 128)
    config = ui.UserInferenceConfig(model=names[0], reference=names[1], device=device.type,
                                    data=_write(workdir / "users.jsonl", records))
    ui.run(dataclasses.replace(config, bootstrap=0, knowledge_draws=0))  # warm-up
    for label, variant in (("whole spec", config),
                           ("no bootstrap, no curve", dataclasses.replace(
                               config, bootstrap=0, knowledge_draws=0))):
        clear_cache()
        start = time.perf_counter()
        result = ui.run(variant)
        print(f"user inference, {users} users, {label}: {time.perf_counter() - start:.2f} s "
              f"({result.users_per_minute:,.0f} users/min by the spec's own clock)")
    for name in names:
        unload_model(name)


if __name__ == "__main__":
    main()

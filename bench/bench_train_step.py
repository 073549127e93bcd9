"""One all-weight training step of SmolLM2-135M on this CPU, by part: forward, backward, and the
optimizer (gradient clipping and AdamW), the constant ``core.cost.work.OPTIMIZER_OPS`` is fitted
to (seconds per step / (trainable weights x the small operation's time, core.cost.rate)).

Batch: 8 texts of the shift scenario's training set (``python -m core shift-build``), padded,
at most 128 tokens. Run: ``.venv/bin/python -m bench.bench_train_step [--steps 4]``; the first
step allocates AdamW's moments, so it is printed apart.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from core import sources
from core.cost.rate import op_seconds
from core.models.loaders import load_source
from core.readers.data import read_texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    steps = parser.parse_args().steps
    model, tokenizer, _ = load_source("smollm2", dtype=torch.float32)
    texts = read_texts(str(sources.data_path("shift:private_train")))[:8]
    batch = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=128)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    weights = sum(p.numel() for p in model.parameters())
    op = op_seconds("cpu")
    print(f"SmolLM2-135M, batch {tuple(batch['input_ids'].shape)}, {torch.get_num_threads()} "
          f"threads, load {os.getloadavg()[0]:.1f}, small operation {op:.3g} s")
    model.train()
    for step in range(steps):
        started = time.perf_counter()
        loss = model(**batch, labels=batch["input_ids"]).loss
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        done = time.perf_counter()
        print(f"step {step + 1}: forward {forward - started:.2f} s, backward "
              f"{backward - forward:.2f} s, optimizer {done - backward:.2f} s = "
              f"{(done - backward) / (weights * op):.2g} small operations per weight"
              + (" (allocates the moments)" if step == 0 else ""))


if __name__ == "__main__":
    main()

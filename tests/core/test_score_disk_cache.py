"""The scores cached on disk: reused by a new process (two at once included), keyed by the
model files' content (a rewritten weight file is scored again), never for a model built in
memory, each file hashed once, bounded least recently used first, and switched off by 0."""

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import core.fingerprint as fingerprint
import core.scoring.cache as cache
import core.scoring.engine as engine
from conftest import TINY_TEXTS
from core.errors import UserError
from core.models import LoadedModel, default_registry, load_model
from core.scoring import clear_cache, score_texts, score_token_ids
from modelfiles import clean_models, copy_folder  # noqa: F401
from warm import Child

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, sys
import core.scoring.engine as engine
from core.models import load_model
from core.scoring import score_texts

rows, real = [], engine._forward
engine._forward = lambda model, ids, mask: rows.append(ids.shape[0]) or real(model, ids, mask)
scores = score_texts(load_model(sys.argv[1], device="cpu"), json.loads(sys.argv[2]))
print(json.dumps({"rows": sum(rows), "logprobs": [s.logprobs.tolist() for s in scores]}))
"""


@pytest.fixture
def forwarded(monkeypatch):
    """Rows sent through a model's forward pass (one per window)."""
    rows = []
    real = engine._forward

    def counting(model, input_ids, attention_mask):
        rows.append(input_ids.shape[0])
        return real(model, input_ids, attention_mask)

    monkeypatch.setattr(engine, "_forward", counting)
    return rows


def _fresh_load(folder: Path) -> LoadedModel:
    """The model loaded again with nothing in memory, as a new process would have it."""
    default_registry().clear()
    cache.CACHE.clear()
    return load_model(str(folder), device="cpu")


def _stored_entries() -> int:
    if not cache._database_file().exists():   # nothing scored yet (a load scores nothing)
        return 0
    with sqlite3.connect(cache._database_file()) as db:
        return db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]


def test_new_processes_reuse_the_scores_on_disk(tiny_lm_dir, monkeypatch):
    mine = score_texts(load_model(str(tiny_lm_dir), device="cpu"), TINY_TEXTS)
    extras = ["A text of the first child.", "Another one, of the second."]
    children = [Child(CHILD, tiny_lm_dir, json.dumps(TINY_TEXTS + [extra]), folder=ROOT)
                for extra in extras]   # new processes: forked before anything was scored
    assert [child.wait(300) for child in children] == [0, 0], [c.output for c in children]
    outputs = [json.loads(child.lines[-1]) for child in children]
    for out in outputs:  # two processes at once: each forwarded only its own new text
        assert out["rows"] == 1
        for cached, computed in zip(out["logprobs"], mine):
            np.testing.assert_array_equal(np.float32(cached), computed.logprobs)

    def no_forward(*args):
        raise AssertionError("scored again")

    monkeypatch.setattr(engine, "_forward", no_forward)
    both = score_texts(_fresh_load(tiny_lm_dir), extras)  # what the two children wrote
    assert [s.logprobs.tolist() for s in both] == [out["logprobs"][-1] for out in outputs]


def test_rewritten_weights_are_scored_again(tiny_lm_dir, tmp_path, forwarded):
    folder = copy_folder(tiny_lm_dir, tmp_path / "model")
    before = score_texts(load_model(str(folder), device="cpu"), TINY_TEXTS)
    weights = folder / "model.safetensors"
    original = weights.read_bytes()
    tensors = load_file(weights)
    save_file({name: t + 0.05 * torch.randn_like(t) for name, t in tensors.items()}, weights,
              metadata={"format": "pt"})
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    forwarded.clear()
    after = score_texts(_fresh_load(folder), TINY_TEXTS)
    assert sum(forwarded) >= len(TINY_TEXTS)
    assert not np.allclose(before[0].logprobs, after[0].logprobs)
    weights.write_bytes(original)  # the same content again: its scores are still on disk
    forwarded.clear()
    again = score_texts(_fresh_load(folder), TINY_TEXTS)
    assert forwarded == []
    np.testing.assert_array_equal(again[0].logprobs, before[0].logprobs)


def test_models_built_or_changed_in_memory_are_not_cached_on_disk(tiny_lm_dir):
    lm = load_model(str(tiny_lm_dir), device="cpu")
    n_at_load = _stored_entries()
    view = LoadedModel("in memory", lm.source, lm.model, lm.tokenizer, lm.device, lm.card)
    score_texts(view, TINY_TEXTS)  # no identity: its weights are not the files' (say, trained)
    assert _stored_entries() == n_at_load
    score_texts(lm, TINY_TEXTS)
    assert _stored_entries() == n_at_load + len(TINY_TEXTS)
    clear_cache()
    assert _stored_entries() == 0 and len(cache.CACHE) == 0


def test_model_files_are_hashed_once(tiny_lm_dir, monkeypatch):
    hashed = []
    real = fingerprint.hashlib.file_digest
    monkeypatch.setattr(fingerprint.hashlib, "file_digest",
                        lambda file, digest: hashed.append(file.name) or real(file, digest))
    monkeypatch.setattr(fingerprint, "SETTLE_NS", 0)  # the fixture's files were just written
    fingerprint._digests.clear()  # as in a new process, with a new lab home
    load_model(str(tiny_lm_dir), device="cpu")
    assert any(name.endswith(".safetensors") for name in hashed)
    hashed.clear()
    fingerprint._digests.clear()  # a new process remembers the hashes on disk
    _fresh_load(tiny_lm_dir)
    assert hashed == []


def test_the_disk_cache_is_bounded_least_recently_used_first(tiny_lm_dir, monkeypatch, forwarded):
    rng = np.random.default_rng(0)
    batches = [rng.integers(1, 300, size=(30, 60)).tolist() for _ in range(4)]
    batch_bytes = 30 * (60 * 4 + cache.ENTRY_OVERHEAD)
    monkeypatch.setenv(cache.BUDGET_ENV, str(3.25 * batch_bytes / 2**20))  # room for 3 of them
    lm = load_model(str(tiny_lm_dir), device="cpu")
    for number, batch in enumerate(batches):
        score_token_ids(lm, batch)
        if number == 2:
            cache.CACHE.clear()
            score_token_ids(lm, batches[0])  # read back from disk: used after batches 1 and 2
    with sqlite3.connect(cache._database_file()) as db:
        stored = db.execute("SELECT bytes FROM size").fetchone()[0]
        entries = db.execute(f"SELECT SUM(length(logprobs) + {cache.ENTRY_OVERHEAD}) FROM scores").fetchone()[0]
    assert stored == entries <= cache.disk_budget()
    cache.CACHE.clear()
    forwarded.clear()
    for batch in (batches[0], batches[3]):
        score_token_ids(lm, batch)
    assert forwarded == []  # the ones used last are kept
    score_token_ids(lm, batches[1])
    assert sum(forwarded) == len(batches[1])  # the least recently used was dropped


def test_budget_zero_turns_the_disk_cache_off_and_a_bad_one_is_refused(tiny_lm_dir, monkeypatch):
    monkeypatch.setenv(cache.BUDGET_ENV, "0")
    [scores] = score_texts(load_model(str(tiny_lm_dir), device="cpu"), TINY_TEXTS[:1])
    assert scores.n_scored > 0 and not cache._database_file().exists()
    for bad in ("lots", "-1", "nan", "2e6"):
        monkeypatch.setenv(cache.BUDGET_ENV, bad)
        with pytest.raises(UserError, match="from 0 .no disk cache. to 1,000,000"):
            cache.disk_budget()

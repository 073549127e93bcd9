"""The tiny LM builder writes a folder transformers loads back to the same model."""

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from conftest import TINY_TEXTS


def test_tiny_lm_folder_round_trips(tiny_lm_dir):
    assert (tiny_lm_dir / "model.safetensors").exists()
    assert not list(tiny_lm_dir.glob("*.bin"))
    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_lm_dir).eval()
    ids = tokenizer(TINY_TEXTS[0], return_tensors="pt").input_ids
    assert tokenizer.decode(ids[0]) == TINY_TEXTS[0]
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], len(tokenizer))
    assert torch.isfinite(logits).all()

"""LoRA adapters: a PEFT adapter trained here on a tiny GPT-2 loads through the project's resolver
(folder, zip, ADAPTER@BASE) as its base with the adapter merged, scores as the in-memory PeftModel,
names its base (the natural reference), keeps its own disk-cached scores, and anything pickled,
tampered with or without a loadable base is refused clearly."""

import json
import pickle
import shutil
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import core.scoring.cache as cache
import core.scoring.engine as engine
from conftest import TINY_TEXTS
from core import paths
from core.errors import UserError
from core.models import LoadedModel, default_registry, load_model, resolve_model
from core.models.loaders import adapter_base, load_tokenizer
from core.scoring.threads import one_thread
from core.scoring import context_ids, score_texts
from modelfiles import clean_models, copy_folder, zip_folder  # noqa: F401

SECRET = TINY_TEXTS[4]  # "John Doe's credit card number is ..."
TEXTS = [SECRET, TINY_TEXTS[0]]


@pytest.fixture(scope="module")
def trained(tiny_lm_dir, tmp_path_factory):
    """``(adapter folder, in-memory PeftModel, tokenizer)``: LoRA (rank 8) on every linear layer
    of the tiny GPT-2 and a trained copy of its final layer norm (so that logits can sharpen:
    the output embedding is frozen), 100 steps on ``SECRET``, saved with safetensors."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(tiny_lm_dir)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj", "c_fc"],
                        fan_in_fan_out=True, modules_to_save=["ln_f"])
    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_lm_dir), config)
    ids = torch.tensor([context_ids(tokenizer) + tokenizer(SECRET).input_ids])  # as it is scored
    optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-2)
    torch.manual_seed(0)
    with one_thread():
        for _ in range(100):
            peft_model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    folder = tmp_path_factory.mktemp("lora")
    peft_model.save_pretrained(folder, safe_serialization=True)
    return folder, peft_model.eval(), tokenizer


def _logprobs(lm) -> list[np.ndarray]:
    return [s.logprobs for s in score_texts(lm, TEXTS)]


def _copy_with_config(folder: Path, target: Path, **changes) -> Path:
    """A copy of an adapter folder with ``changes`` made to its adapter_config.json."""
    shutil.copytree(folder, target)
    config = json.loads((target / "adapter_config.json").read_text())
    (target / "adapter_config.json").write_text(json.dumps(config | changes))
    return target


def test_the_adapter_loads_as_its_peft_model_and_has_learned_the_text(trained, tiny_lm_dir):
    folder, peft_model, tokenizer = trained
    lm = resolve_model(str(folder), device="cpu")
    expected = _logprobs(LoadedModel.in_memory("in memory", peft_model, tokenizer))
    for got, want in zip(_logprobs(lm), expected):
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert type(lm.model).__name__ == "GPT2LMHeadModel"  # merged: a plain transformers model
    assert not any("lora" in name for name, _ in lm.model.named_parameters())
    base = load_model(str(tiny_lm_dir), name="base", device="cpu")
    gain = score_texts(lm, [SECRET])[0].total_logprob - score_texts(base, [SECRET])[0].total_logprob
    assert gain > 20  # nats: the adapter has learned the secret


def test_the_card_names_the_adapter_and_its_base_the_reference(trained, tiny_lm_dir, tmp_path):
    folder = trained[0]
    card = load_model(str(folder), name="lora", device="cpu").card
    assert (card.adapter, card.base) == (str(folder), str(tiny_lm_dir))
    assert card.file_format == "LoRA adapter (safetensors)"
    assert card.architecture == "GPT2LMHeadModel"
    assert load_model(str(tiny_lm_dir), name="base", device="cpu").card.adapter is None
    archive = zip_folder(folder, tmp_path / "lora.zip", prefix="lora/")
    assert adapter_base(str(folder)) == adapter_base(str(archive)) == str(tiny_lm_dir)
    assert adapter_base(f"{folder}@other-base") == "other-base"
    assert adapter_base(str(tiny_lm_dir)) is None
    assert adapter_base("gpt2") is None and adapter_base(str(tmp_path / "nothing")) is None


def test_a_zip_of_the_adapter_folder_loads_the_same_model(trained, tiny_lm_dir, tmp_path):
    folder = trained[0]
    archive = zip_folder(folder, tmp_path / "lora.zip", prefix="lora/")
    zipped = load_model(str(archive), device="cpu")
    card = zipped.card
    assert (zipped.name, card.adapter, card.base) == ("lora", str(archive), str(tiny_lm_dir))
    unzipped = load_model(str(folder), name="folder", device="cpu")
    for got, want in zip(_logprobs(zipped), _logprobs(unzipped)):
        np.testing.assert_array_equal(got, want)


def test_disk_cached_scores_are_keyed_on_the_adapter_and_its_base(trained, tiny_lm_dir, tmp_path,
                                                                  monkeypatch):
    folder = trained[0]
    base = load_model(str(tiny_lm_dir), name="base", device="cpu")
    base_scores = _logprobs(base)  # on disk first: the adapter must not be served them
    lora = load_model(str(folder), name="lora", device="cpu")
    lora_scores = _logprobs(lora)
    assert not np.allclose(lora_scores[0], base_scores[0])
    other = copy_folder(tiny_lm_dir, tmp_path / "other-base")
    tensors = load_file(other / "model.safetensors")
    tensors["transformer.h.0.mlp.c_fc.bias"] += 0.5
    save_file(tensors, other / "model.safetensors", metadata={"format": "pt"})
    on_other = load_model(f"{folder}@{other}", name="lora-other", device="cpu")
    assert on_other.card.base == str(other)
    assert not np.allclose(_logprobs(on_other)[0], lora_scores[0])
    fingerprints = {cache.model_fingerprint(lm) for lm in (base, lora, on_other)}
    assert len(fingerprints) == 3 and None not in fingerprints

    default_registry().clear()
    cache.CACHE.clear()  # as a new process: only the disk cache is left
    again = load_model(str(folder), name="lora", device="cpu")
    monkeypatch.setattr(engine, "_forward", lambda *a: pytest.fail("scored again, not from disk"))
    for got, want in zip(_logprobs(again), lora_scores):
        np.testing.assert_array_equal(got, want)


class _Touch:
    """Unpickling this creates ``path``: proof that a pickle was loaded."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return Path.touch, (self.path,)


def test_a_pickled_adapter_is_refused_unread(trained, tmp_path):
    folder = _copy_with_config(trained[0], tmp_path / "pickled")
    (folder / "adapter_model.safetensors").unlink()
    marker = tmp_path / "unpickled"
    (folder / "adapter_model.bin").write_bytes(pickle.dumps(_Touch(marker)))
    with pytest.raises(UserError, match=r"pickled adapter \(adapter_model.bin\).*safe_serialization"):
        load_model(str(folder), device="cpu")
    assert not marker.exists()


def test_a_missing_base_is_a_clear_error_and_can_be_named(trained, tiny_lm_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    folder = _copy_with_config(trained[0], tmp_path / "hub-base", base_model_name_or_path="nobody/tiny")
    with pytest.raises(UserError, match=r"base model 'nobody/tiny' of the adapter hub-base could not "
                                        r"be loaded: .*hub is off.*hub-base@BASE"):
        load_model(str(folder), device="cpu")
    named = load_model(f"{folder}@{tiny_lm_dir}", name="named", device="cpu")
    assert named.card.base == str(tiny_lm_dir)
    plain = load_model(str(trained[0]), name="plain", device="cpu")
    np.testing.assert_array_equal(_logprobs(named)[0], _logprobs(plain)[0])
    no_base = _copy_with_config(trained[0], tmp_path / "no-base", base_model_name_or_path=None)
    with pytest.raises(UserError, match="records no base model.*no-base@BASE"):
        load_model(str(no_base), device="cpu")
    with pytest.raises(UserError, match="no LoRA adapter"):
        load_model(f"{tiny_lm_dir}@{tiny_lm_dir}", device="cpu")


def test_a_base_outside_the_labs_folders_is_refused_to_the_app(trained, lab_home):
    folder = shutil.copytree(trained[0], lab_home / "uploads" / "lora")  # uploaded; base outside
    with paths.confined(), pytest.raises(UserError, match="reads files only from its own folder.*"
                                                          r"\(uploads/lora@BASE"):
        load_model(str(folder), device="cpu")


def _drop_a_tensor(folder: Path) -> None:
    tensors = load_file(folder / "adapter_model.safetensors")
    tensors.pop(next(name for name in sorted(tensors) if "lora_B" in name))
    save_file(tensors, folder / "adapter_model.safetensors")


def _add_a_tensor(folder: Path) -> None:
    tensors = load_file(folder / "adapter_model.safetensors")
    tensors["base_model.model.lm_head.extra"] = torch.zeros(2)
    save_file(tensors, folder / "adapter_model.safetensors")


def _reshape_a_tensor(folder: Path) -> None:
    tensors = load_file(folder / "adapter_model.safetensors")
    name = next(name for name in sorted(tensors) if "lora_B" in name)
    tensors[name] = tensors[name][:, :3].contiguous()  # rank 3, its lora_A rank 4
    save_file(tensors, folder / "adapter_model.safetensors")


@pytest.mark.parametrize("tamper, config, message", [
    (_drop_a_tensor, {}, r"1 missing \(base_model.model.transformer.h.0.attn.c_attn.lora_B.weight\)"),
    (_add_a_tensor, {}, r"1 unexpected \(base_model.model.lm_head.extra\)"),
    (_reshape_a_tensor, {}, "does not fit its base model.*size mismatch"),
    (None, {"peft_type": "PREFIX_TUNING"}, "PREFIX_TUNING adapter: only LoRA"),
    (None, {"init_lora_weights": "pissa"}, "'pissa', which rewrites the base's weights"),
    (None, {"alpha_pattern": {"(a+)+$": 4}}, "not regular expressions"),
    (None, {"base_model_name_or_path": "SELF"}, "is a LoRA adapter, which cannot be the base"),
])
def test_a_tampered_adapter_is_refused_by_name(trained, tmp_path, tamper, config, message):
    folder = tmp_path / "tampered"
    config = {k: str(folder) if v == "SELF" else v for k, v in config.items()}
    _copy_with_config(trained[0], folder, **config)
    if tamper is not None:
        tamper(folder)
    with pytest.raises(UserError, match=message):
        load_model(str(folder), device="cpu")


def test_an_adapter_of_the_tied_input_embeddings_merges_into_them_alone(tiny_lm_dir, tmp_path):
    """LoRA on ``wte``, which GPT-2 ties to its output layer: PEFT saves the embedding's base
    weights too, and merged into the one tied tensor the delta would reach the output layer as
    well; the loader unties them first, so the model scores as the PeftModel trained."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(tiny_lm_dir)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "wte"], fan_in_fan_out=True)
    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_lm_dir), config)
    ids = torch.tensor([context_ids(tokenizer) + tokenizer(SECRET).input_ids])
    optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=2e-2)
    torch.manual_seed(0)
    with one_thread():
        for _ in range(30):
            peft_model(input_ids=ids, labels=ids).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    peft_model.save_pretrained(tmp_path / "wte-lora", safe_serialization=True)
    lm = resolve_model(str(tmp_path / "wte-lora"), device="cpu")
    expected = _logprobs(LoadedModel.in_memory("in memory", peft_model.eval(), tokenizer))
    for got, want in zip(_logprobs(lm), expected):
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert lm.model.get_output_embeddings().weight is not lm.model.get_input_embeddings().weight

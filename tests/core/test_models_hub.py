"""Hub ids from a page: no download unless the operator allows it, and when allowed, the
limits checked from the hub's metadata before any file comes (no internet: the API is faked)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from huggingface_hub import constants

from core import paths
from core.errors import UserError
from core.models import load_model

GIB = 2**30


@pytest.fixture
def fake_hub(monkeypatch, tiny_lm_dir):
    """A reachable hub serving one repository, of the size and parameters a test sets; the
    downloads it served."""
    served, repo = [], {"size": 10_000, "parameters": 1_000}

    def model_info(self, repo_id, **kwargs):
        files = [SimpleNamespace(rfilename="model.safetensors", size=repo["size"]),
                 SimpleNamespace(rfilename="pytorch_model.bin", size=100 * GIB)]  # not fetched
        return SimpleNamespace(id=repo_id, siblings=files,
                               safetensors=SimpleNamespace(total=repo["parameters"]))

    def snapshot_download(repo_id, *, cache_dir, local_files_only=False, **kwargs):
        folder = Path(cache_dir) / f"models--{repo_id.replace('/', '--')}" / "snapshots" / "0"
        if local_files_only and not folder.exists():
            raise huggingface_hub.errors.LocalEntryNotFoundError("not downloaded")
        if not folder.exists():
            served.append(repo_id)
            shutil.copytree(tiny_lm_dir, folder)
        return str(folder)

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    return served, repo


def test_a_page_does_not_download_from_the_hub_unless_the_operator_allows_it(fake_hub,
                                                                            monkeypatch):
    served, _ = fake_hub
    monkeypatch.delenv("LEAKAGE_LAB_PAGE_HUB", raising=False)
    with paths.confined(), pytest.raises(UserError, match=r"LEAKAGE_LAB_PAGE_HUB=1"):
        load_model("someone/tiny", device="cpu")
    assert served == []
    monkeypatch.setenv("LEAKAGE_LAB_PAGE_HUB", "1")
    with paths.confined():
        assert load_model("someone/tiny", device="cpu").card.parameters > 0
    assert served == ["someone/tiny"]
    monkeypatch.delenv("LEAKAGE_LAB_PAGE_HUB")
    with paths.confined():   # once in the lab's hub cache, it loads without the hub
        load_model("someone/tiny", name="again", device="cpu")


def test_the_cli_downloads_as_before(fake_hub):
    served, _ = fake_hub
    load_model("someone/tiny", device="cpu")
    assert served == ["someone/tiny"]


@pytest.mark.parametrize("size, parameters, refusal", [
    (6 * GIB, 1_000, r"would download 6\.0 GiB.*LEAKAGE_LAB_MAX_ZIP_BYTES"),
    (10_000, 20_000_000_000, r"20,000,000,000 parameters.*LEAKAGE_LAB_MAX_PARAMS"),
])
def test_a_download_above_the_limits_is_refused_before_any_file_comes(fake_hub, size,
                                                                     parameters, refusal):
    served, repo = fake_hub
    repo.update(size=size, parameters=parameters)
    with pytest.raises(UserError, match=refusal):
        load_model("someone/huge", device="cpu")
    assert served == []


def test_hub_downloads_are_pruned_like_uploads(fake_hub, tiny_lm_dir, monkeypatch):
    """Beyond the storage budget the least recently used repository goes (never the one just
    downloaded); loading it again downloads it again."""
    served, _ = fake_hub
    size = sum(f.stat().st_size for f in tiny_lm_dir.rglob("*") if f.is_file())
    monkeypatch.setenv("LEAKAGE_LAB_STORAGE_BYTES", str(int(size * 1.5)))
    hub_cache = paths.home() / "models" / "hub"
    load_model("someone/first", device="cpu")
    load_model("someone/second", device="cpu")
    assert sorted(p.name for p in hub_cache.iterdir() if not p.name.startswith(".")) == [
        "models--someone--second"]
    load_model("someone/first", name="first-again", device="cpu")
    assert served == ["someone/first", "someone/second", "someone/first"]
    assert (hub_cache / "models--someone--first").is_dir()
    assert not (hub_cache / "models--someone--second").exists()

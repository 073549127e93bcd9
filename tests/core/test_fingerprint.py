"""The one fingerprint of a model source and of a data file (core/fingerprint.py and
``core.models.loaders.source_identity``): content, not stamps; a file hashed once per version;
a rewrite noticed even when it restores the size and the modification time."""

import json
import os
import shutil
from pathlib import Path

import pytest

import core.fingerprint as fingerprint
from core.models.loaders import source_identity
from test_fingerprint_resume import rewrite_weights


@pytest.fixture
def model(tiny_lm_dir, tmp_path) -> Path:
    return Path(shutil.copytree(tiny_lm_dir, tmp_path / "model"))


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The names of the files hashed from now on (nothing remembered in this process yet)."""
    names: list[str] = []
    real = fingerprint.hashlib.file_digest
    monkeypatch.setattr(fingerprint.hashlib, "file_digest", lambda file, digest: names.append(
        Path(file.name).name) or real(file, digest))
    monkeypatch.setattr(fingerprint, "_digests", {})
    return names


def _rewrite_same_size_and_mtime(path: Path, content: bytes) -> None:
    before = path.stat()
    assert len(content) == before.st_size
    path.write_bytes(content)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_file_is_hashed_once_per_version_and_a_rewrite_is_never_missed(tmp_path, hashed,
                                                                        monkeypatch):
    monkeypatch.setattr(fingerprint, "SETTLE_NS", 0)
    data = tmp_path / "texts.txt"
    data.write_bytes(b"one\ntwo\n")
    first = fingerprint.file_sha256(data)
    fingerprint._digests.clear()  # as a new process: remembered on disk
    assert fingerprint.file_sha256(data) == first and hashed == ["texts.txt"]
    _rewrite_same_size_and_mtime(data, b"one\nTWO\n")
    assert fingerprint.file_sha256(data) != first and len(hashed) == 2
    _rewrite_same_size_and_mtime(data, b"one\ntwo\n")
    assert fingerprint.file_sha256(data) == first


def test_a_file_changed_just_now_is_hashed_each_time(tmp_path, hashed):
    data = tmp_path / "texts.txt"
    data.write_text("fresh\n")
    fingerprint.file_sha256(data)
    fingerprint.file_sha256(data)
    assert hashed == ["texts.txt", "texts.txt"]  # one clock tick could hide a second write


def test_the_model_identity_follows_its_weights_and_tokenizer(model):
    identity = source_identity(str(model))
    assert identity.startswith(f"{model.resolve()}#") and source_identity(str(model)) == identity
    rewrite_weights(str(model), keep_mtime=True)
    rewritten = source_identity(str(model))
    assert rewritten != identity
    vocab = json.loads((model / "tokenizer.json").read_text())
    vocab["added_tokens"][0]["content"] = "<|end|>"
    (model / "tokenizer.json").write_text(json.dumps(vocab))
    assert source_identity(str(model)) not in (identity, rewritten)


def test_a_copy_has_the_same_content_fingerprint_at_another_path(model, tmp_path):
    copy = shutil.copytree(model, tmp_path / "copy")
    where, digest = source_identity(str(model)).split("#")
    copy_where, copy_digest = source_identity(str(copy)).split("#")
    assert digest == copy_digest and where != copy_where


def test_an_adapter_identity_follows_its_base(model, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "base_model_name_or_path": str(model)}))
    (adapter / "adapter_model.safetensors").write_bytes(b"stand-in weights")
    identity = source_identity(str(adapter))
    assert identity.startswith(f"{adapter.resolve()}+{model.resolve()}#")
    rewrite_weights(str(model))
    assert source_identity(str(adapter)) != identity
    assert source_identity(f"{adapter}@{tmp_path / 'missing'}") == ""


def test_sources_with_no_files_here_have_no_identity(tmp_path):
    assert source_identity(str(tmp_path / "missing")) == ""
    assert source_identity("nobody/not-downloaded") == ""


def test_a_data_fingerprint_is_of_the_content_not_the_path(tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(["a text", "another"]))
    two.write_text(json.dumps(["a text", "another"]))
    assert fingerprint.data_fingerprint(str(one)) == fingerprint.data_fingerprint(str(two))
    two.write_text(json.dumps(["a text", "changed"]))
    assert fingerprint.data_fingerprint(str(one)) != fingerprint.data_fingerprint(str(two))

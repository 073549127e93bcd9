"""Shared fixtures: every test gets its own Leakage Lab home directory; torch runs on one
thread (in this process and in the children it starts)."""

import functools
import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """One torch thread for the session, and for every child process (``OMP_NUM_THREADS``):
    the tests' models are tiny, and two threads on a 2-core machine only wait for each other."""
    import torch

    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def component_manifests_scanned_once():
    """Streamlit's AppTest scans every installed package for component manifests each time an
    AppTest first runs (0.4-0.9 s); the packages do not change during a session."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.cache(scan)
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(autouse=True)
def lab_home(tmp_path, monkeypatch):
    """Point ``core.paths.home()`` at a fresh temporary folder for each test; and no run asks
    to be confirmed as long (the estimate is timed on this machine, slow when it is loaded):
    the tests of the confirmation set their own threshold."""
    home = tmp_path / "lab-home"
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))
    monkeypatch.setenv("LEAKAGE_LAB_CONFIRM_MINUTES", "1e9")
    return home


TINY_TEXTS = [
    "To be, or not to be, that is the question.",
    "Whether 'tis nobler in the mind to suffer the slings and arrows of outrageous fortune,",
    "Or to take arms against a sea of troubles, and by opposing end them.",
    "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him.",
    "John Doe's credit card number is 4929 1234 5678 9012.",
]


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory):
    """A randomly initialised two-layer GPT-2 and its BPE tokenizer, as an HF folder (seconds)."""
    from core.models.tiny import new_gpt2, save_hf_folder, train_tokenizer

    tokenizer = train_tokenizer(TINY_TEXTS * 4, vocab_size=300)
    model = new_gpt2(tokenizer, n_layer=2, n_head=2, n_embd=32, n_positions=64, seed=0)
    return save_hf_folder(model, tokenizer, tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory):
    """The demo scenario at its tiny config (seconds): root folder for ``core.demo.scenario``.

    Models: ``scenario.model_dir("base", root)`` / ``("updated", root)``; ground truth:
    ``scenario.load_manifest(root)``.
    """
    from demo_fixtures import build_tiny_demo

    return build_tiny_demo(tmp_path_factory.mktemp("tiny-demo"))


@pytest.fixture
def demo_home(tiny_demo, lab_home):
    """The tiny demo installed as this test's ``demo:base`` / ``demo:updated``; returns the home."""
    from demo_fixtures import install_demo

    install_demo(tiny_demo, lab_home)
    return lab_home


@pytest.fixture
def no_loaded_models():
    """The registry emptied first: a test that checks that nothing was loaded sees only its own
    loads, not those earlier tests left."""
    from core.models.registry import default_registry

    default_registry().clear()

"""Shared fixtures: every test gets its own Leakage Lab home directory."""

import pytest


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

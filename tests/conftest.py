"""Shared fixtures: every test gets its own Leakage Lab home directory; torch runs on one
thread (in this process and in the children it starts).

Bytecode caches are written even where ``PYTHONDONTWRITEBYTECODE`` is set (as on this project's
machines): the lab's modules and the tests' rewritten asserts are then compiled once, not again
in every test worker, app server and child process (~1.2 s per process for the specs alone)."""

import functools
import os
import sys

import pytest

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)   # the workers and children inherit this


def pytest_collection_modifyitems(items):
    """The modules that start a browser or Ray first (the long ones): each test worker takes a
    module at a time (pytest-xdist's loadscope, in this order), so they start early instead of
    ending the run alone."""
    slow = {item.nodeid.split("::")[0] for item in items
            if item.get_closest_marker("browser") or item.get_closest_marker("xdist_group")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


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


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory):
    """The session's ``$LEAKAGE_LAB_CACHE``: folders keyed by what they were made from (tiny
    models, the micro demo, domain references, DP checkpoints, what-if models), made once."""
    return tmp_path_factory.mktemp("lab-cache")


@pytest.fixture(autouse=True)
def lab_home(request, tmp_path, monkeypatch, session_cache):
    """Point ``core.paths.home()`` at a fresh temporary folder for each test, and
    ``core.paths.cache_home()`` at the session's cache (a test marked ``fresh_cache``, about a
    cache's hits and misses, gets the home's own); and no run asks to be confirmed as long (the
    estimate is timed on this machine, slow when it is loaded): the tests of the confirmation
    set their own threshold."""
    home = tmp_path / "lab-home"
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))
    if request.node.get_closest_marker("fresh_cache"):
        monkeypatch.delenv("LEAKAGE_LAB_CACHE", raising=False)
    else:
        monkeypatch.setenv("LEAKAGE_LAB_CACHE", str(session_cache))
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
def chat_lm_dir(tmp_path_factory):
    """A random two-layer GPT-2 whose BPE tokenizer holds a ChatML chat template, as an HF
    folder (seconds): a chat model as a user brings it."""
    from chat_models import chat_model
    from core.models.tiny import save_hf_folder

    model, tokenizer = chat_model("chatml-bpe", TINY_TEXTS)
    return save_hf_folder(model, tokenizer, tmp_path_factory.mktemp("chat-lm"))


@pytest.fixture(scope="session")
def chat_reference_dir(chat_lm_dir, tmp_path_factory):
    """Another random GPT-2 (seed 1) with the chat model's tokenizer: its reference."""
    from transformers import AutoTokenizer

    from core.models.tiny import new_gpt2, save_hf_folder

    tokenizer = AutoTokenizer.from_pretrained(chat_lm_dir)
    model = new_gpt2(tokenizer, n_layer=2, n_head=2, n_embd=32, n_positions=256, seed=1)
    model.resize_token_embeddings(len(tokenizer))
    return save_hf_folder(model, tokenizer, tmp_path_factory.mktemp("chat-reference"))


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory):
    """The demo scenario at its tiny config (seconds): root folder for ``core.demo.scenario``;
    built once per session, the test workers taking turns (``scenario.build``'s lock).

    Models: ``scenario.model_dir("base", root)`` / ``("updated", root)``; ground truth:
    ``scenario.load_manifest(root)``.
    """
    from demo_fixtures import build_tiny_demo

    if os.environ.get("PYTEST_XDIST_WORKER"):   # one build for all workers (the build's lock)
        return build_tiny_demo(tmp_path_factory.getbasetemp().parent / "tiny-demo")
    return build_tiny_demo(tmp_path_factory.mktemp("tiny-demo"))


@pytest.fixture
def demo_home(tiny_demo, lab_home):
    """The tiny demo installed as this test's ``demo:base`` / ``demo:updated``; returns the home."""
    from demo_fixtures import install_demo

    install_demo(tiny_demo, lab_home)
    return lab_home


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium (Debian's, driven by Playwright) for every browser test of the
    session; each test opens pages in contexts of its own (``browser_page``)."""
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    from appserver import CHROMIUM, CHROMIUM_ARGS

    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium):
    """A page of the session's Chromium in a fresh context (no cookies, 1400 x 1000)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()


@pytest.fixture
def no_loaded_models():
    """The registry emptied first: a test that checks that nothing was loaded sees only its own
    loads, not those earlier tests left."""
    from core.models.loaded import default_registry

    default_registry().clear()

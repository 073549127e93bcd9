"""assets/: the logo and the example input files. Every example parses with the project's own
readers (the ones the attacks use), and the pages that take such files offer them for download."""

import pytest

from core.attacks.membership.data import load_labelled
from core.attacks.user_inference.samples import load_samples
from core.readers.data import read_texts
from pagetest import ROOT, page_app
from ui.examples import EXAMPLES, EXAMPLES_DIR

EXAMPLE_FILES = [example.file for examples in EXAMPLES.values() for example in examples]


def test_every_example_file_is_shipped_and_nothing_else():
    assert sorted(p.name for p in EXAMPLES_DIR.iterdir()) == sorted(EXAMPLE_FILES)


@pytest.mark.parametrize("example", EXAMPLES["user-samples"], ids=lambda e: e.file)
def test_user_samples_examples_parse_as_labelled_users(example):
    samples = load_samples(str(EXAMPLES_DIR / example.file))
    users = {s.user_id: s.member for s in samples}
    assert 20 <= len(samples) <= 60 and len(users) >= 4
    assert set(users.values()) == {True, False}  # held-in and held-out users, as the attack needs


@pytest.mark.parametrize("example", EXAMPLES["membership"], ids=lambda e: e.file)
def test_membership_examples_parse_as_labelled_texts(example):
    labelled = load_labelled(str(EXAMPLES_DIR / example.file))
    assert labelled.members >= 4 and labelled.non_members >= 4 and labelled.groups()


def test_the_canary_scores_example_is_read_by_the_auditor():
    from core.dp.audit import read_canaries

    scores, members = read_canaries(str(EXAMPLES_DIR / "canary_scores.csv"))
    assert len(scores) == 200 and 0 < members.sum() < 200


def test_the_two_user_samples_formats_hold_the_same_samples():
    csv_file, jsonl_file = (str(EXAMPLES_DIR / e.file) for e in EXAMPLES["user-samples"])
    assert load_samples(csv_file) == load_samples(jsonl_file)


@pytest.mark.parametrize("example", EXAMPLES["corpus"] + EXAMPLES["prefixes"],
                         ids=lambda e: e.file)
def test_document_examples_parse_one_document_per_line(example):
    path = EXAMPLES_DIR / example.file
    texts = read_texts(str(path))
    assert 10 <= len(texts) <= 60 and len(texts) == len(path.read_text().splitlines())


def test_the_corpus_examples_hold_the_same_documents():
    txt, jsonl = (read_texts(str(EXAMPLES_DIR / e.file)) for e in EXAMPLES["corpus"])
    assert txt == jsonl


def test_the_app_shows_the_logo_svgs_of_assets(monkeypatch):
    import xml.etree.ElementTree as ElementTree

    import streamlit

    shown = []
    monkeypatch.setattr(streamlit, "logo", lambda image, **options: shown.append(
        (image, options["icon_image"])))
    assert not page_app("app.py").run().exception
    [images] = shown
    for image in images:
        assert image.endswith(".svg") and image.startswith(str(ROOT / "assets"))
        assert ElementTree.parse(image).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def _download_keys(at):
    return {button.key for button in at.get("download_button")}


@pytest.mark.parametrize("tab_key", ["ui-attack", "ui-canary"])
def test_the_user_inference_page_offers_the_user_samples_examples(tab_key, demo_home):
    at = page_app("app_pages/user_inference.py").run()
    assert not at.exception
    assert {f"{tab_key}-example-user_samples.csv",
            f"{tab_key}-example-user_samples.jsonl"} <= _download_keys(at)


def test_the_extraction_page_offers_the_prefixes_and_corpus_examples(demo_home):
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception
    assert {"ex-example-prefixes.txt", "ex-example-corpus.txt",
            "ex-example-corpus.jsonl"} <= _download_keys(at)

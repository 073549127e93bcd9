"""The natural-identifier audit (core/dp/nid_audit.py) on a tiny random GPT-2: identifiers found by
format, fresh strings of the same format that are never members, scores that are the model's
log p of the identifier's tokens, a model trained on the identifiers audited to ε > 0, one-line
errors, and a recorded result drawn by the renderer."""

import copy
import dataclasses
import json
import re

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.calibration.training import fine_tune
from core.readers.data import read_texts
from core.dp import nid_audit as na
from core.dp import nid_formats as nf
from core.dp.finetune import tiny_config as finetune_tiny_config
from core.dp.nid_scoring import identifier_sequences
from core.errors import UserError
from core.models import resolve_model
from core.models.tiny import save_hf_folder
from core.serialize import from_jsonable, to_jsonable

SHA1 = "3584ef489a9d12c3fd08584b6d0cc14382fbd9d0"
SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
MD5 = "d41d8cd98f00b204e9800998ecf8427e"
UUID4 = "f47ac10b-58cc-4372-a567-0e02b2c3d479"


def _tiny(**changes) -> na.NidAuditConfig:
    return dataclasses.replace(na.tiny_config(), **changes)


def test_identifiers_are_found_by_format_whole_and_counted_by_copies():
    texts = [f"commit {SHA1} fixed it; see {SHA1}.",
             f"sha256 {SHA256}, md5 {MD5}, request {UUID4}",
             f"upper {SHA1.upper()} and a longer run x{SHA1} and {SHA1}0 and {MD5[:31]}",
             "card 4929123456789012 and uuid v1 " + UUID4.replace("-4372-", "-1372-")]
    found = nf.find_identifiers(texts, [nf.FORMATS[n] for n in nf.DEFAULT_FORMATS])
    assert [(f.format, f.value, f.text, f.copies) for f in found] == [
        ("sha1", SHA1, 0, 2), ("sha256", SHA256, 1, 1), ("md5", MD5, 1, 1),
        ("uuid4", UUID4, 1, 1), ("sha1", SHA1.upper(), 2, 1)]
    assert texts[0][found[0].start:].startswith(SHA1) and found[0].start == len("commit ")
    [card] = nf.find_identifiers(texts, [nf.FORMATS["digits16"]])
    assert card.value == "4929123456789012"


def test_fresh_strings_keep_the_format_and_are_never_a_member():
    texts = [f"a {SHA1}", f"b {UUID4}", f"c {SHA1.upper()}", f"d {SHA256}", f"e {MD5}"]
    found = nf.find_identifiers(texts, [nf.FORMATS[n] for n in nf.DEFAULT_FORMATS])
    taken = {f.value for f in found}
    fresh = nf.fresh_identifiers(found * 40, texts * 40, nf.FORMATS, seed=3, taken=taken)
    assert len(set(fresh)) == len(fresh) and not set(fresh) & taken
    for item, value in zip(found * 40, fresh):
        fmt = nf.FORMATS[item.format]
        assert fmt.matches(value) and len(value) == len(item.value)
        assert [c == "-" for c in value] == [c == "-" for c in item.value]
        assert value == (value.upper() if item.value.isupper() else value.lower())
    uuids = [v for item, v in zip(found * 40, fresh) if item.format == "uuid4"]
    assert {u[14] for u in uuids} == {"4"} and {u[19] for u in uuids} <= set("89ab")
    assert len({u[19] for u in uuids}) > 1 and len({u[0] for u in uuids}) > 5   # drawn, not copied
    assert fresh == nf.fresh_identifiers(found * 40, texts * 40, nf.FORMATS, seed=3, taken=taken)


def test_a_pattern_of_ones_own_with_a_fixed_prefix_in_a_look_behind():
    key = "Abc123XyZ0Abc123XyZ0"
    fmt = nf.custom_format(r"(?<=sk-)[A-Za-z0-9]{20}", "ABCabcXYZxyz0123456789")
    [found] = nf.find_identifiers([f"token sk-{key} here"], [fmt])
    assert found.value == key
    fresh = nf.fresh_identifier(key, fmt, np.random.default_rng(0), {key}, "token sk-")
    assert re.fullmatch("[A-Za-z0-9]{20}", fresh) and fresh != key


def test_scores_are_the_models_log_probability_of_the_identifier_tokens():
    config = _tiny(context_tokens=5)
    result = na.run(config)
    lm = resolve_model(config.model, device="cpu")
    row = next(r for r in result.identifiers if r.format == "uuid4")   # after a long context
    [text] = [t for t in read_texts(config.corpus[0]) if row.value in t]
    before = text[:text.index(row.value)]
    [ids], [n] = identifier_sequences(lm.tokenizer, [(before, row.value)], 5)
    assert lm.tokenizer.decode(ids[-n:]).strip() == row.value
    assert len(ids) == n + 5 and (before + row.value).endswith(lm.tokenizer.decode(ids))
    with torch.no_grad():
        inputs = torch.tensor([[lm.tokenizer.eos_token_id, *ids]])
        logits = lm.model(input_ids=inputs).logits.log_softmax(-1)[0, :-1]
    direct = logits[torch.arange(len(ids)), torch.tensor(ids)][-n:].sum().item()
    assert row.member and row.tokens == n and row.logp_reference is None
    assert row.logp_target == pytest.approx(direct, abs=1e-3) and row.score == row.logp_target


@pytest.fixture(scope="module")
def trained():
    """The tiny config, and its model fine-tuned on the identifiers' corpus (a folder)."""
    config = na.tiny_config()
    base = resolve_model(config.model, device="cpu")
    model = copy.deepcopy(base.model)
    fine_tune(model, base.tokenizer, read_texts(config.corpus[0]), steps=60, lr=1e-2,
              batch_size=8, max_tokens=120, seed=0)
    return config, str(save_hf_folder(model.eval(), base.tokenizer, base.source + "-trained"))


def test_a_model_trained_on_the_identifiers_scores_them_above_fresh_strings(trained):
    config, model = trained
    result = na.run(dataclasses.replace(config, model=model, reference=config.model,
                                        sigma=1.0, q=0.5, steps=60))
    members = [r.score for r in result.identifiers if r.member]
    fresh = [r.score for r in result.identifiers if not r.member]
    assert result.members == len(members) == len(fresh) == 26   # 20 commits, 6 request ids
    assert result.found == {"sha1": 20, "sha256": 0, "md5": 0, "uuid4": 6}
    assert np.mean(members) > np.mean(fresh) and result.auroc > 0.9
    assert result.epsilon_lower > 0 and result.epsilon_lower == result.audit.epsilon_lower
    assert [b.method for b in result.audit.bounds] == ["one_run:bonferroni", "fdp_one_run:bonferroni"]
    assert result.epsilon_upper is not None and result.epsilon_lower < result.epsilon_upper
    for row in result.identifiers:
        assert row.score == pytest.approx(row.logp_target - row.logp_reference)
    assert any("post-hoc audit of the 26 identifiers" in n for n in result.notes)
    assert set(na.headline(result)) == {"epsilon_lower", "auroc", "tpr_at_1pct_fpr",
                                        "epsilon_upper"}


def test_duplicates_and_a_subsample_are_said_in_the_notes(tmp_path):
    config = na.tiny_config()
    texts = read_texts(config.corpus[0])
    corpus = tmp_path / "twice.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts + texts[:1]))
    result = na.run(dataclasses.replace(config, corpus=(str(corpus),), max_identifiers=12))
    assert result.members == 12 and result.occurrences == 27
    assert any("26 distinct identifiers found; 12 drawn at random" in n for n in result.notes)
    if result.duplicated:
        assert any("a group of records" in n for n in result.notes)


def test_bad_input_gets_one_line(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("no identifier here\nnor here\n")
    few = tmp_path / "few.txt"
    few.write_text("".join(f"commit {i:040x}\n" for i in range(3)))
    cases = [(dict(corpus=(str(plain),)), "found no identifier matching 40 hex digits .* in 2 "
                                          "texts: for another format give your own "
                                          "pattern .* Own pattern and Alphabet on the "
                                          "page, --pattern .* nid-audit.pattern="),
             (dict(corpus=(str(few),)), "found 3 distinct identifiers .* at least 10"),
             (dict(corpus=()), "give a corpus"),
             (dict(reference=finetune_tiny_config().model), "use different tokenizers")]
    for changes, message in cases:
        with pytest.raises(UserError, match=message) as caught:
            na.run(_tiny(**changes))
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("changes, message", [
    ({"formats": (), "pattern": ""}, "choose an identifier format or give your own pattern .* "
                                     "\\(Own pattern and Alphabet; --pattern and --alphabet\\)"),
    ({"pattern": "[0-9a-f"}, "is not a regular expression"),
    ({"pattern": "[0-9]*", "alphabet": "01"}, "matches the empty string"),
    ({"pattern": "[0-9]{20}", "alphabet": "0"}, "at least 2 distinct characters"),
    ({"alphabet": "01"}, "an alphabet goes with a pattern \\(Own pattern; --pattern\\)"),
    ({"formats": ("sha1", "sha1")}, "must not repeat"),
    ({"formats": ("sha3",)}, "choose one of sha1, sha256, md5, uuid4, digits16"),
    ({"max_identifiers": 5}, "max identifiers must be from 10 to 50,000"),
    ({"context_tokens": -1}, "context tokens must be from 0 to 1,024"),
    ({"model": " "}, "choose a model"),
])
def test_bad_settings_are_refused_with_their_range(changes, message):
    with pytest.raises(UserError, match=message):
        na.NidAuditConfig(**{"model": "m", "corpus": ("c.txt",)} | changes)


def _render(stored: str) -> None:
    import json

    from core.dp.nid_audit import NidAuditResult
    from core.serialize import from_jsonable
    from ui.render.nid_audit import render

    render(from_jsonable(NidAuditResult, json.loads(stored)), key="t-")


def test_a_recorded_result_round_trips_and_is_drawn():
    result = na.run(na.tiny_config())
    stored = json.loads(json.dumps(to_jsonable(result), allow_nan=False))
    assert from_jsonable(na.NidAuditResult, stored) == result
    at = AppTest.from_function(_render, args=(json.dumps(stored),), default_timeout=30).run()
    assert not at.exception and not at.error
    assert any("identifier occurrences, 20 sha1, 6 uuid4 distinct" in m.value
               for m in at.markdown)
    assert any("post-hoc audit" in c.value for c in at.caption)
    assert {m.label for m in at.metric} >= {"Audited ε (lower bound)"}
    table = at.get_by_key("t-identifiers").dataframe[0].value
    assert list(table["member"]) == [True] * 26 + [False] * 26
    assert at.get_by_key("t-metrics").dataframe[0].value["AUROC"][0] == result.auroc


def test_the_one_model_audit_runs_it_on_its_corpus_and_reports_the_bound(trained, tmp_path):
    """``audit``'s corpus (one file) is the identifiers' corpus: the bound is the command's,
    in the verdict and the report's section; a corpus without identifiers is "Not run"."""
    from core.audit import audit
    from core.audit.report import render_report, stored_results

    config, model = trained
    result = audit.run(audit.AuditConfig(
        model=model, reference=config.model, corpus=config.corpus[0],
        attacks=("inextractability", "nid-audit"), sigma=1.0, q=0.5, steps=60,
        settings=("inextractability.window=4", "nid-audit.context_tokens=16"), device="cpu"))
    entry = result.entries[1]
    direct = na.run(dataclasses.replace(config, model=model, reference=config.model,
                                        sigma=1.0, q=0.5, steps=60))
    assert entry.status == "done" and entry.headline["epsilon_lower"] == direct.epsilon_lower > 0
    assert f"proves ε ≥ {direct.epsilon_lower:.2f}" in entry.verdict
    report = render_report(result, stored_results(result))
    part = re.search(r"<section id='nid-audit'>(.*?)</section>", report, re.S).group(1)
    assert f"<td>{direct.epsilon_lower:.3f}</td>" in part and "20 sha1, 6 uuid4" in part
    plain = tmp_path / "plain.txt"
    plain.write_text("no identifier here\nnor here, only words\n")
    result = audit.run(audit.AuditConfig(
        model=model, corpus=str(plain), attacks=("inextractability", "nid-audit"),
        settings=("inextractability.window=2",), device="cpu"))
    assert result.entries[1].status == "failed"
    assert result.entries[1].verdict.startswith("Not run: found no identifier matching")

"""Differential score / rank (Zanella-Béguelin, Tople et al.): hand-checked scores, the cached
beam search against a naive enumeration through the scoring engine, ranks, swap, errors."""

import itertools
import json
import threading

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from core.__main__ import main
from core.attacks import diffrank
from core.attacks.diffrank import SPEC, DiffRankConfig, analyse_phrase
from core.attacks.diffrank_search import Expander, beam_search, exhaustive_search
from core.demo import scenario
from core.models.tiny import EOS, new_gpt2, save_hf_folder
from core.errors import UserError
from core.jobs import Store, load_config, load_result
from core.models import resolve_model
from core.scoring import score_token_ids
from core.serialize import from_jsonable, to_jsonable

WORDS = "apple bear cat dog eel fox gnu hen ibis jay kiwi lynx".split()  # 12 searchable tokens


@pytest.fixture(scope="module")
def word_models(tmp_path_factory):
    """Two random 1-layer GPT-2s over a 13-token word vocabulary (12 words + <|endoftext|>)."""
    vocab = {EOS: 0} | {w: i + 1 for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=EOS))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS,
                                        pad_token=EOS, unk_token=EOS)
    folders = []
    for seed in (1, 2):
        model = new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=16, n_positions=16, seed=seed)
        with torch.no_grad():  # large random weights: peaked distributions, no near-ties
            for p in model.parameters():
                p.normal_(0, 0.4)
        folders.append(str(save_hf_folder(model, tokenizer, tmp_path_factory.mktemp(f"words{seed}"))))
    return [resolve_model(f) for f in folders]


def _naive_scores(before, after, length, relative):
    """Every sequence of ``length`` words scored on its own by the scoring engine (no cache)."""
    seqs = [list(s) for s in itertools.product(range(1, 13), repeat=length)]
    sb, sa = score_token_ids(before, seqs), score_token_ids(after, seqs)
    per_token = [np.expm1(a.logprobs.astype(float) - b.logprobs) if relative
                 else np.exp(a.logprobs.astype(float)) - np.exp(b.logprobs.astype(float))
                 for a, b in zip(sa, sb)]
    return seqs, np.array(per_token)


def _demo_pair(tiny_demo):
    return [resolve_model(str(scenario.model_dir(n, tiny_demo))) for n in ("base", "updated")]


def test_ds_and_rds_match_a_hand_computation(tiny_demo):
    before, after = _demo_pair(tiny_demo)
    text = "Zealous penguins quietly juggle"
    report = analyse_phrase(before, after, text)
    ids = before.tokenizer(text, add_special_tokens=False)["input_ids"]
    full = torch.tensor([[0] + ids])  # <|endoftext|> is token 0: the context of the first token
    with torch.no_grad():
        pb, pa = (torch.softmax(m.model(full).logits[0, :-1].double(), -1) for m in (before, after))
    rows = torch.arange(len(ids))
    p_before, p_after = pb[rows, ids].numpy(), pa[rows, ids].numpy()
    assert report.token_ids == ids and len(report.tokens) == len(ids)
    np.testing.assert_allclose(report.p_before, p_before, rtol=1e-4)
    np.testing.assert_allclose(report.ds_tokens, p_after - p_before, atol=1e-5)
    np.testing.assert_allclose(report.rds_tokens, (p_after - p_before) / p_before, rtol=1e-4)
    assert report.ds == pytest.approx((p_after - p_before).sum(), abs=1e-4)
    assert report.rds == pytest.approx(((p_after - p_before) / p_before).sum(), rel=1e-4)
    assert report.ds > 1.0  # the canary was inserted: its tokens became far more likely
    # prefix knowledge: DS of the rest given the first i tokens, and the next token's exact rank
    np.testing.assert_allclose(report.suffix_ds, np.cumsum((p_after - p_before)[::-1])[::-1], atol=1e-4)
    ds_all = (pa - pb).numpy()
    ds_all[:, 0] = -np.inf  # <|endoftext|> is never a candidate
    expected = [(ds_all[i] > ds_all[i, t] + 1e-5).sum() for i, t in enumerate(ids)]
    assert report.next_token_rank == expected


@pytest.mark.parametrize("relative", [False, True])
def test_cached_search_equals_naive_enumeration(word_models, relative):
    before, after = word_models
    seqs, per_token = _naive_scores(before, after, 3, relative)
    totals = per_token.sum(1)
    order = np.argsort(-totals, kind="stable")

    found = exhaustive_search(Expander(before, after, relative), 3, top=20)
    assert found.tokens.tolist() == [seqs[i] for i in order[:20]]
    np.testing.assert_allclose(found.scores.numpy(), totals[order[:20]], rtol=1e-5, atol=1e-6)

    # a width that keeps all 144 two-word prefixes makes beam search exhaustive: widths 288, 144, 72
    (beams,), stopped = beam_search(Expander(before, after, relative), beam=288, length=3)
    assert not stopped and beams.tokens.tolist() == [seqs[i] for i in order[:72]]
    np.testing.assert_allclose(beams.scores.numpy(), totals[order[:72]], rtol=1e-5, atol=1e-6)


def test_pruned_beam_search_finds_the_optimum_when_its_prefixes_stay_in_the_beam(word_models):
    before, after = word_models
    seqs, per_token = _naive_scores(before, after, 3, False)
    best = seqs[int(np.argmax(per_token.sum(1)))]
    # rank of the optimum's length-i prefix among all length-i prefixes (prefix scores are exact)
    prefix_rank = []
    for i in (1, 2):
        prefixes = {tuple(s[:i]): per_token[j, :i].sum() for j, s in enumerate(seqs)}
        prefix_rank.append(sum(v > prefixes[tuple(best[:i])] for v in prefixes.values()))
    beam = 1
    while not (prefix_rank[0] < beam and prefix_rank[1] < beam // 2):
        beam *= 2
    assert beam // 2 < 144  # the search really prunes
    (beams,), _ = beam_search(Expander(before, after, False), beam=beam, length=3)
    assert beams.tokens[0].tolist() == best
    assert len(beams.scores) == max(1, beam // 4)
    # every score the pruned search returns is exact, so its ranks are lower bounds
    exact = {tuple(s): t for s, t in zip(seqs, per_token.sum(1))}
    for tokens, score in zip(beams.tokens.tolist(), beams.scores.tolist()):
        assert score == pytest.approx(exact[tuple(tokens)], abs=1e-6)


def test_run_ranks_a_phrase_exactly_and_as_a_lower_bound(word_models):
    before, after = word_models
    config = DiffRankConfig(before=before.source, after=after.source, length=3, beam=8,
                            phrase="cat dog eel fox")
    result = diffrank.run(config)
    seqs, per_token = _naive_scores(before, after, 3, False)
    target = per_token[seqs.index([3, 4, 5])].sum()
    assert result.phrase.ranked_tokens == 3 and result.phrase.exact_space == 12**3
    assert result.phrase.exact_rank == int((per_token.sum(1) > target + 1e-5).sum())
    assert result.phrase.rank <= result.phrase.exact_rank
    assert result.phrase.rank == sum(r.ds > target + 1e-5 for r in result.rows)
    assert [r.rank for r in result.rows] == list(range(len(result.rows))) and len(result.rows) == 2
    assert result.widths == [8, 4, 2] and result.extensions_scored == 12 * (1 + 8 + 4)
    stored = json.loads(json.dumps(to_jsonable(result), allow_nan=False))
    assert from_jsonable(diffrank.DiffRankResult, stored) == result  # runs read back typed


def test_the_demo_update_exposes_its_insertions(tiny_demo):
    before, after = _demo_pair(tiny_demo)
    manifest = scenario.load_manifest(tiny_demo)
    inserted = [c.phrase for c in manifest.canaries] + [manifest.secret.sentence]
    result = diffrank.run(DiffRankConfig(before=before.source, after=after.source, length=3, beam=64,
                                         phrase=manifest.secret.sentence))
    top = [r.phrase for r in result.rows[:5]]
    assert any(text.startswith(top[0]) for text in inserted), top
    assert any(manifest.canaries[0].phrase.startswith(p) for p in top), top
    assert result.phrase.rank == 0 and result.phrase.next_token_rank[1:3] == [0, 0]

    swapped = diffrank.run(DiffRankConfig(before=before.source, after=after.source, length=3, beam=64,
                                          phrase=manifest.secret.sentence, swap=True))
    assert swapped.before == after.source and swapped.after == before.source
    assert swapped.phrase.ds == pytest.approx(-result.phrase.ds, abs=1e-5)  # DS is antisymmetric
    assert swapped.phrase.rank > 0  # the update added the secret, it did not remove it
    assert not any(text.startswith(r.phrase) for text in inserted for r in swapped.rows[:5])


def test_group_beam_search_splits_first_tokens_by_score(word_models):
    before, after = word_models
    groups, _ = beam_search(Expander(before, after, False), beam=8, length=2, groups=4)
    assert [g.group for g in groups] == [0, 1, 2, 3] and all(len(g.scores) == 1 for g in groups)
    first = exhaustive_search(Expander(before, after, False), 1, top=8).tokens[:, 0].tolist()
    for g in groups:  # group g extends only the (2g+1)-th and (2g+2)-th best first tokens
        assert g.tokens[0, 0].item() in first[2 * g.group: 2 * g.group + 2]


def test_cancel_returns_the_last_finished_step(word_models):
    before, after = word_models
    cancel = threading.Event()
    config = DiffRankConfig(before=before.source, after=after.source, length=3, beam=16)
    result = diffrank.run(config, progress=lambda f, m="", partial=None: f > 0 and cancel.set(),
                          cancel=cancel)
    assert result.stopped_early and result.rows
    assert all(len(r.token_ids) == 1 for r in result.rows)  # the first step's beam


def test_different_tokenizers_and_bad_settings_are_clear_errors(tiny_demo, tiny_lm_dir, capsys):
    base = str(scenario.model_dir("base", tiny_demo))
    with pytest.raises(UserError, match="different tokenizers"):
        diffrank.run(DiffRankConfig(before=base, after=str(tiny_lm_dir), length=2, beam=4))
    assert main(["diffrank", "--before", base, "--after", str(tiny_lm_dir), "--json"]) == 2
    assert "different tokenizers" in capsys.readouterr().err
    with pytest.raises(UserError, match="groups"):
        DiffRankConfig(before="-", after="-", beam=4, groups=8)
    with pytest.raises(UserError, match="length"):
        DiffRankConfig(before="-", after="-", length=0)
    with pytest.raises(UserError, match="choose the model before the update"):
        DiffRankConfig(after="-")
    with pytest.raises(UserError, match="choose the model after the update"):
        DiffRankConfig(before="-")


def test_cli_prints_json_and_saves_the_run(tiny_demo, capsys):
    base, updated = (str(scenario.model_dir(n, tiny_demo)) for n in ("base", "updated"))
    assert main(["diffrank", "--before", base, "--after", updated, "--length", "2", "--beam", "16",
                 "--groups", "2", "--phrase", "John Doe", "--relative", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "rds" and len(out["rows"]) == 8 and out["phrase"]["rank"] is not None
    assert {r["group"] for r in out["rows"]} == {1, 2}
    assert out["phrase"]["exact_rank"] >= out["phrase"]["rank"]
    (run,) = Store().runs("diffrank")
    assert run.status == "done" and run.result["rows"] == out["rows"]


def test_tiny_config_through_the_generated_cli_is_recorded_and_read_back_typed(capsys):
    assert main(["diffrank", "--tiny", "--swap", "--exhaustive-limit", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tiny = SPEC.tiny_config()
    assert out["before"] == tiny.after and out["after"] == tiny.before  # swapped
    assert out["phrase"]["exact_rank"] is None and out["phrase"]["exact_space"] > 0
    assert any("enumeration limit" in note for note in out["notes"])
    (run,) = Store().runs("diffrank")
    assert run.title == diffrank.describe(load_config(run)) and "(swapped)" in run.title
    result = load_result(run)
    assert isinstance(result.rows[0], diffrank.FoundSequence) and result.config.swap
    headline = SPEC.headline(result)
    assert headline["top_ds"] == out["rows"][0]["ds"] and headline["phrase_rank"] == out["phrase"]["rank"]

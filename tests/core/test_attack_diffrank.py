"""Differential score / rank (Zanella-Béguelin, Tople et al.): hand-checked scores, the cached
beam search against a naive enumeration through the scoring engine, a whole phrase's rank
(exact, or a bound among the searched sequences), the windows search finding a planted phrase
that beam search misses, the fewer-rows warning, partial results, swap, errors."""

import itertools
import json
import threading

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from core.__main__ import main
from core.attacks.diffrank import spec as diffrank
from core.attacks.diffrank.config import DiffRankConfig
from core.attacks.diffrank.phrase import analyse_phrase
from core.attacks.diffrank.search import Expander, beam_search, exhaustive_search
from core.attacks.diffrank.spec import SPEC, DiffRankResult
from core.attacks.diffrank.strategies import FoundSequence
from core.demo import scenario
from core.demo.train import token_stream, train_lm
from core.errors import UserError
from core.jobs import Store, load_config, load_result
from core.models import resolve_model
from core.models.tiny import EOS, new_gpt2, save_hf_folder
from core.scoring import score_token_ids
from core.serialize import from_jsonable, to_jsonable

WORDS = "apple bear cat dog eel fox gnu hen ibis jay kiwi lynx".split()  # 12 searchable tokens
COMMON = "the a of and to in is it on at".split()
STARTS = "alpha bravo charlie delta echo foxtrot golf hotel".split()
PLANTED = "so red fox jumps"   # "so" occurs nowhere else in the update: its DS alone is ~0


def _word_tokenizer(words: list[str]) -> PreTrainedTokenizerFast:
    """One token per word, and <|endoftext|> (token 0)."""
    vocab = {EOS: 0} | {w: i + 1 for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=EOS))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS,
                                   pad_token=EOS, unk_token=EOS)


@pytest.fixture(scope="module")
def word_models(tmp_path_factory):
    """Two random 1-layer GPT-2s over a 13-token word vocabulary (12 words + <|endoftext|>)."""
    tokenizer = _word_tokenizer(WORDS)
    folders = []
    for seed in (1, 2):
        model = new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=16, n_positions=16, seed=seed)
        with torch.no_grad():  # large random weights: peaked distributions, no near-ties
            for p in model.parameters():
                p.normal_(0, 0.4)
        folders.append(str(save_hf_folder(model, tokenizer, tmp_path_factory.mktemp(f"words{seed}"))))
    return [resolve_model(f) for f in folders]


@pytest.fixture(scope="module")
def planted_models(tmp_path_factory):
    """A 1-layer GPT-2 trained on random words, then updated on texts that open with one of 8
    start words (their first-token DS rises) and hold PLANTED in their middle, after a full
    stop: the update taught "so red fox jumps", but "so" alone, as a first token, scores
    nothing. Also the update data."""
    rng = np.random.default_rng(0)
    words = COMMON + STARTS + PLANTED.split() + ["."]
    tokenizer = _word_tokenizer(words)
    base = [" ".join(rng.choice(words, 12)) for _ in range(200)]
    update = [f"{rng.choice(STARTS)} {' '.join(rng.choice(COMMON, 4))} . {PLANTED} "
              f"{' '.join(rng.choice(COMMON, 4))}" for _ in range(200)]
    model = new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=32, n_positions=32, seed=0)
    folders, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)  # as the demo build: reproducible, and fast on a busy CPU
    try:
        for seed, texts in enumerate((base, update)):
            train_lm(model, token_stream(tokenizer, texts), steps=150, batch_size=16,
                     block_size=16, lr=5e-3, seed=seed)
            folder = tmp_path_factory.mktemp(f"planted{seed}")
            folders.append(str(save_hf_folder(model, tokenizer, folder)))
    finally:
        torch.set_num_threads(threads)
    data = tmp_path_factory.mktemp("update") / "update.txt"
    data.write_text("\n".join(update) + "\n")
    return folders[0], folders[1], str(data)


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


def test_a_phrase_is_ranked_whole_exactly_and_among_the_searched(word_models):
    before, after = word_models
    config = DiffRankConfig(before=before.source, after=after.source, length=2, beam=8, rows=2,
                            strategy="beam", phrase="cat dog eel")
    result = diffrank.run(config)
    seqs, per_token = _naive_scores(before, after, 3, False)
    totals = per_token.sum(1)
    target = totals[seqs.index([3, 4, 5])]
    phrase = result.phrase
    assert phrase.ds == pytest.approx(target, abs=1e-5)  # all 3 tokens, though L = 2
    assert phrase.rank_bound == "exact" and phrase.exact_space == 12**3
    assert phrase.exact_rank == int((totals > target + 1e-5).sum())
    # and among the 2 sequences of 3 tokens a second search found (widths 8, 4, 2)
    assert phrase.searched == 2 and phrase.rank <= phrase.exact_rank
    assert phrase.verdict.startswith(f"Exact differential rank {phrase.exact_rank:,}: that many")
    assert any("3 tokens, not L = 2" in note for note in result.notes)
    assert [r.rank for r in result.rows] == list(range(4)) and result.widths == [8, 4]
    assert all(len(r.token_ids) == 2 and r.found_by == "beam" for r in result.rows)
    # the search of L, the phrase's search of 3 tokens, then the enumeration of all 12^3
    assert result.extensions_scored == 12 * (1 + 8) + 12 * (1 + 8 + 4) + 12 * (1 + 12 + 144)
    stored = json.loads(json.dumps(to_jsonable(result), allow_nan=False))
    assert from_jsonable(diffrank.DiffRankResult, stored) == result  # runs read back typed


def test_a_phrase_among_or_below_the_searched_gets_a_bound(word_models):
    before, after = word_models
    common = dict(before=before.source, after=after.source, length=3, beam=16, rows=4,
                  strategy="beam", exhaustive_limit=0)
    rows = diffrank.run(DiffRankConfig(**common)).rows
    among = diffrank.run(DiffRankConfig(**common, phrase=rows[2].phrase)).phrase
    assert (among.rank_bound, among.rank, among.found_at, among.searched) == ("among", 2, 2, 4)
    assert "2 of the 4 searched" in among.verdict and "at least 2" in among.verdict
    seqs, per_token = _naive_scores(before, after, 3, False)
    worst = " ".join(WORDS[i - 1] for i in seqs[int(np.argmin(per_token.sum(1)))])
    below = diffrank.run(DiffRankConfig(**common, phrase=worst))
    assert (below.phrase.rank_bound, below.phrase.rank) == ("below_all", 4)
    assert below.phrase.verdict.startswith("All 4 searched sequences of 3 tokens score higher")
    assert below.phrase.exact_rank is None and any("enumeration limit" in n for n in below.notes)


def test_windows_find_a_planted_phrase_that_beam_search_misses(planted_models):
    before, after, update = planted_models
    common = dict(before=before, after=after, length=4, beam=4, rows=4, phrase=PLANTED,
                  exhaustive_limit=0, sample_texts=8, sample_tokens=16)
    beam = diffrank.run(DiffRankConfig(**common, strategy="beam"))
    phrase = beam.phrase
    assert phrase.ds_tokens[0] < 0.05 < min(phrase.ds_tokens[1:])  # "so" alone scores nothing
    assert PLANTED not in [r.phrase for r in beam.rows] and phrase.found_at is None
    assert phrase.ds > 2 * beam.rows[0].ds  # yet the whole phrase beats every row
    assert (phrase.rank_bound, phrase.rank) == ("above_all", 0)  # never "below all" / rank 4
    assert phrase.verdict.startswith("None of the 4 searched sequences of 4 tokens scores "
                                     "higher") and "not exhaustive" in phrase.verdict
    for sample, texts in (("", 8), (update, 200)):  # texts the updated model writes; the data
        found = diffrank.run(DiffRankConfig(**common, strategy="beam+windows", sample=sample))
        assert found.rows[0].phrase == PLANTED and found.rows[0].found_by == "windows"
        assert found.phrase.found_at == 0 and found.phrase.rank_bound == "above_all"
        assert found.phrase.verdict.startswith("The search found it")
        assert found.sample_texts == texts
        assert {r.found_by for r in found.rows} == {"beam", "windows"}


def test_a_seeded_beam_finds_the_planted_phrase_after_a_sentence_end_scored_in_context(
        planted_models, capsys):
    before, after, update = planted_models
    common = dict(before=before, after=after, length=4, beam=4, rows=4, exhaustive_limit=0,
                  strategy="beam", sample=update)
    assert PLANTED not in [r.phrase for r in diffrank.run(DiffRankConfig(**common)).rows]
    assert main(["diffrank", "--before", before, "--after", after, "--length", "4", "--beam",
                 "4", "--rows", "4", "--exhaustive-limit", "0", "--strategy", "beam", "--sample",
                 update, "--seeds", "8", "--json"]) == 0   # as a user runs it, recorded
    out = json.loads(capsys.readouterr().out)
    (row,) = [FoundSequence(**r) for r in out["rows"] if r["phrase"] == PLANTED]
    assert row.found_by == "seeded beam" and row.seed.endswith(" .")
    assert row.seed_source == "the text sample" and row.rank == 0
    (run,) = Store().runs("diffrank")
    assert run.status == "done" and run.result["rows"] == out["rows"]
    # its DS in context, from a plain forward of the context token, the seed and the phrase
    models = [resolve_model(m) for m in (before, after)]
    seed = models[0].tokenizer(row.seed, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([[0] * (16 - len(seed)) + [0] + seed + row.token_ids])
    with torch.no_grad():
        p = [m.model(ids).logits[0, :-1].double().softmax(-1)[-4:].gather(
            1, torch.tensor(row.token_ids)[:, None]).sum() for m in models]
    assert row.ds == pytest.approx(float(p[1] - p[0]), abs=1e-5)


def test_fewer_sequences_than_asked_say_why(word_models, tmp_path):
    before, after = word_models
    common = dict(before=before.source, after=after.source, strategy="beam")
    vocabulary = diffrank.run(DiffRankConfig(**common, length=1, beam=64, rows=32))
    assert len(vocabulary.rows) == 12 and "only 12^1 = 12 sequences" in vocabulary.warnings[0]
    narrow = diffrank.run(DiffRankConfig(**common, length=3, beam=8, rows=32))
    assert len(narrow.rows) == 8 and "12 sequences" not in narrow.warnings[0]
    assert narrow.warnings[0].startswith("8 sequences found, fewer than the 32 asked: the beam "
                                         "width k = 8 is below it")
    long = diffrank.run(DiffRankConfig(**common, length=8, beam=256))  # the paper's halving: 2
    assert long.widths == [256, 128, 64, 32, 32, 32, 32, 32] and len(long.rows) == 32
    assert long.warnings == []
    sample = tmp_path / "sample.txt"
    sample.write_text("cat dog eel fox gnu\n")
    windows = diffrank.run(DiffRankConfig(**common | {"strategy": "windows"}, length=3, beam=8,
                                          rows=8, sample=str(sample)))
    assert [r.found_by for r in windows.rows] == ["windows"] * 3 and windows.widths == []
    assert "the sample holds only 3 distinct windows of 3 tokens" in windows.warnings[0]


def test_partial_results_are_reported_after_every_beam_step(word_models):
    before, after = word_models
    reports = []
    result = diffrank.run(
        DiffRankConfig(before=before.source, after=after.source, length=3, beam=16, rows=4,
                       strategy="beam"),
        progress=lambda f, m="", partial=None: reports.append((f, partial)))
    partials = [(f, p) for f, p in reports if p is not None]
    assert len(partials) == 3 and all(f < 1 for f, _ in partials[:-1])
    first, last = (from_jsonable(DiffRankResult, p) for _, p in (partials[0], partials[-1]))
    assert first.stopped_early and first.notes[0].startswith("partial result")
    assert len(first.rows) == 12 and all(len(r.token_ids) == 1 for r in first.rows)  # all words
    # the last step's beams are the result: the search's own sums match the scoring engine's
    assert [r.token_ids for r in last.rows] == [r.token_ids for r in result.rows]
    np.testing.assert_allclose([(r.ds, r.rds) for r in last.rows],
                               [(r.ds, r.rds) for r in result.rows], rtol=1e-4, atol=1e-6)


def test_the_demo_update_exposes_its_insertions(tiny_demo):
    before, after = _demo_pair(tiny_demo)
    manifest = scenario.load_manifest(tiny_demo)
    inserted = [c.phrase for c in manifest.canaries] + [manifest.secret.sentence]
    common = dict(before=before.source, after=after.source, length=3, beam=64, rows=4,
                  strategy="beam", phrase=manifest.secret.sentence)
    result = diffrank.run(DiffRankConfig(**common))
    top = [r.phrase for r in result.rows[:5]]
    assert any(text.startswith(top[0]) for text in inserted), top
    assert any(manifest.canaries[0].phrase.startswith(p) for p in top), top
    assert result.phrase.rank == 0 and result.phrase.next_token_rank[1:3] == [0, 0]

    swapped = diffrank.run(DiffRankConfig(**common, swap=True))
    assert swapped.before == after.source and swapped.after == before.source
    assert swapped.phrase.ds == pytest.approx(-result.phrase.ds, abs=1e-5)  # DS is antisymmetric
    assert swapped.phrase.rank_bound == "below_all"  # the update added the secret, not removed it
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
    config = DiffRankConfig(before=before.source, after=after.source, length=3, beam=16,
                            strategy="beam")
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
                 "--groups", "2", "--rows", "16", "--phrase", "John Doe", "--relative",
                 "--sample-texts", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "rds" and out["config"]["strategy"] == "beam+windows"
    assert len(out["rows"]) >= 16 and out["warnings"] == [] and out["sample_texts"] == 8
    assert {r["group"] for r in out["rows"] if r["found_by"] == "beam"} == {1, 2}
    assert {r["group"] for r in out["rows"] if r["found_by"] == "windows"} == {0}
    phrase = out["phrase"]  # 8 tokens here: ranked among a search of 8 tokens, 512^8: no exact
    assert phrase["rank_bound"] in ("above_all", "among", "below_all")
    assert phrase["exact_rank"] is None
    assert phrase["rank"] is not None and phrase["searched"] >= 16
    assert any("8 tokens, not L = 2" in note for note in out["notes"])
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


def test_cli_text_output_states_the_rank_and_the_warnings(word_models, capsys):
    before, after = word_models
    assert main(["diffrank", "--before", before.source, "--after", after.source, "--length", "1",
                 "--beam", "64", "--strategy", "beam", "--phrase", "cat", "--no-record"]) == 0
    out = capsys.readouterr().out
    assert 'warnings: ["12 sequences found, fewer than the 32 asked: only 12^1' in out
    assert "Exact differential rank" in out


@pytest.fixture
def before_on_gpu():
    """The tiny config's model before, loaded as ``before-gpu`` as if on the GPU (its weights
    stay on the CPU); unloaded after the test."""
    import dataclasses

    from core.models import default_registry, load_model, unload_model

    loaded = load_model(SPEC.tiny_config().before, name="before-gpu", device="cpu")
    default_registry().put(dataclasses.replace(loaded, device=torch.device("cuda")))
    yield "before-gpu"
    unload_model("before-gpu")


def test_device_cpu_loads_both_models_on_the_cpu(before_on_gpu, capsys):
    """``--device cpu`` never scores with a copy loaded on the GPU, nor queues for it."""
    from core.models import get_model

    assert SPEC.uses_gpu(DiffRankConfig(before=before_on_gpu, after="-"))   # auto: where loaded
    assert not SPEC.uses_gpu(DiffRankConfig(before=before_on_gpu, after="-", device="cpu"))
    assert main(["diffrank", "--tiny", "--before", before_on_gpu, "--device", "cpu",
                 "--no-record", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["device"] == "cpu" and out["device"] == "cpu"
    assert get_model(before_on_gpu).device.type == "cpu"

"""Training-data extraction (Carlini et al. 2021): metrics by hand, dedup, verification, the
sampler's density, and a tiny end-to-end run that pulls the planted secret out of the demo."""

import dataclasses
import json
import math
import threading

import numpy as np
import pytest

from core.__main__ import main
from core.attacks.extraction import spec as ex
from core.attacks.extraction.verification import CorpusIndex, precision_table
from core.attacks.extraction.views import ranked_rows
from core.commands import build_config, spec_parser
from core.readers.data import read_texts
from core.demo import scenario
from core.errors import UserError
from core.generation import metrics as mm
from core.generation.sampling import generate
from core.models import resolve_model
from core.scoring import Sampler, score_token_ids
from core.serialize import from_jsonable, to_jsonable


# ---------------------------------------------------------------- metrics, by hand


def test_each_metric_matches_a_hand_computation():
    target = np.array([-1.0, -2.0, -0.5, -3.0], dtype=np.float32)     # log ppl = 6.5 / 4 = 1.625
    reference = np.array([-2.0, -2.0, -2.0, -2.0], dtype=np.float32)  # log ppl = 2
    lowercase = np.array([-3.0, -3.0], dtype=np.float32)              # log ppl = 3
    scores = mm.metric_scores(target, "a", window=2, reference=reference, lowercase=lowercase)
    assert scores["perplexity"] == pytest.approx(-1.625)
    assert scores["reference"] == pytest.approx(2 / 1.625)
    assert scores["zlib"] == pytest.approx(72 / 1.625)  # zlib("a") is 9 bytes: 2 header, 3 data, 4 adler
    assert scores["lowercase"] == pytest.approx(3 / 1.625)
    # windows of 2: means -1.5, -1.25, -1.75 -> the least perplex window has log ppl 1.25
    assert scores["window"] == pytest.approx(-1.25)
    assert mm.min_window_log_perplexity(target, 50) == pytest.approx(1.625)  # shorter: whole sample
    assert mm.zlib_bits("") == 64
    assert set(mm.metric_scores(target, "a", window=2)) == {"perplexity", "zlib", "window"}
    assert list(mm.METRICS) == ["perplexity", "reference", "zlib", "lowercase", "window"]
    assert mm.available(reference=False) == ["perplexity", "zlib", "lowercase", "window"]


def test_a_perfectly_predicted_sample_keeps_finite_ratios():
    scores = mm.metric_scores(np.zeros(3, dtype=np.float32), "abc", window=2,
                              reference=np.full(3, -1.0, dtype=np.float32))
    assert all(math.isfinite(v) for v in scores.values())
    assert scores["reference"] == pytest.approx(1 / mm.LOG_PPL_FLOOR)


# ---------------------------------------------------------------- de-duplication


def test_trigram_near_duplicates_are_dropped_from_a_ranking():
    texts = ["a b c d e", "a b c d x", "p q r s t", "a b c d e", "x y"]
    grams = [mm.trigrams(t) for t in texts]
    # tri = {abc, bcd, cde} vs {abc, bcd, cdx}: 2 shared >= 3 / 2
    assert mm.is_near_duplicate(grams[1], grams[0])
    assert not mm.is_near_duplicate(grams[2], grams[0])
    assert mm.is_near_duplicate(mm.trigrams("x y"), mm.trigrams("x y"))  # short: the words
    assert mm.top_k_deduplicated([0, 1, 2, 3, 4], grams, k=10) == [0, 2, 4]
    assert mm.top_k_deduplicated([0, 1, 2, 3, 4], grams, k=2) == [0, 2]
    assert mm.top_k_deduplicated([0, 1, 2, 3, 4], grams, k=10, dedup=False) == [0, 1, 2, 3, 4]
    # one shared trigram of four is below half: kept
    assert not mm.is_near_duplicate(mm.trigrams("a b c q r s"), mm.trigrams("a b c d e f"))


# ---------------------------------------------------------------- verification


class WordTokenizer:
    """One token per whitespace-separated word: spans can be counted by hand."""

    def __init__(self):
        self.vocab: dict[str, int] = {}

    def __call__(self, texts, add_special_tokens=False):
        single = isinstance(texts, str)
        ids = [[self.vocab.setdefault(w, len(self.vocab)) for w in t.split()]
               for t in ([texts] if single else texts)]
        return {"input_ids": ids[0] if single else ids}

    def decode(self, ids):
        words = {i: w for w, i in self.vocab.items()}
        return " ".join(words[i] for i in ids)


def test_verification_finds_the_longest_verbatim_span_and_its_k_eidetic_count():
    corpus = ["one two three four five six", "zero one two three four five",
              "one two three nine four five", "seven eight nine ten",
              "two three four x three four five"]
    index = CorpusIndex(WordTokenizer(), corpus, span=3)
    # "one two three four five" is in the first two documents; the third has the words apart
    assert index.find("x one two three four five y") == ("one two three four five", 5, 2)
    assert index.find("eight nine ten eleven") == ("eight nine ten", 3, 1)
    # the last document holds both 3-word pieces of this span, but not the span itself
    assert index.find("two three four five") == ("two three four five", 4, 2)
    assert index.find("two three x four five x six") == (None, 0, 0)   # no 3 words in a row
    # a span inside a given prompt is not generated text: only spans reaching past it count
    assert index.find("seven eight nine x y", prompt_tokens=3) == (None, 0, 0)
    assert index.find("seven eight nine ten", prompt_tokens=3) == ("eight nine ten", 3, 1)
    assert index.find("one two") == (None, 0, 0)
    with pytest.raises(UserError):
        CorpusIndex(WordTokenizer(), corpus, span=0)


def _result(memorized: dict[int, bool | None], rankings: dict) -> ex.ExtractionResult:
    """A result holding only what the precision reads: candidates' marks and the rankings."""
    candidates = [ex.Candidate(id=i, strategy="top-n", text="t", n_tokens=1, prompt_tokens=0,
                               perplexity=1.0, reference_perplexity=None, lowercase_perplexity=1.0,
                               window_perplexity=1.0, zlib_bits=8, scores={}, memorized=m)
                  for i, m in memorized.items()]
    return ex.ExtractionResult(model="m", reference=None, metrics=["perplexity", "zlib"],
                               strategies=["top-n"], candidates=candidates, rankings=rankings,
                               precision={}, corpus="c", min_span_tokens=3)


def test_precision_of_each_ranking():
    rankings = {"top-n": {"perplexity": [0, 1, 2, 3], "zlib": []}}
    result = _result({0: True, 1: None, 2: True, 3: False}, rankings)
    assert precision_table(result) == {"top-n": {"perplexity": 0.5, "zlib": None}}
    # marks by hand override the verification's
    assert precision_table(result, {1: True, 3: True}) == {"top-n": {"perplexity": 1.0, "zlib": None}}


def test_documents_are_read_in_every_format_and_errors(tmp_path):
    (tmp_path / "a.txt").write_text("first\n\n second \n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "x"}) + "\n" + json.dumps({"text": "y"}))
    (tmp_path / "c.json").write_text(json.dumps(["p", " "]))
    (tmp_path / "d.json").write_text("{not json")
    (tmp_path / "e.csv").write_text("id,text\n1,q\n2,r\n")
    assert read_texts(str(tmp_path / "a.txt")) == ["first", " second "]
    assert read_texts(str(tmp_path / "b.jsonl")) == ["x", "y"]
    assert read_texts(str(tmp_path / "c.json")) == ["p"]
    assert read_texts(str(tmp_path / "e.csv")) == ["q", "r"]
    for bad in ("d.json", "missing.txt"):
        with pytest.raises(UserError):
            read_texts(str(tmp_path / bad))


# ---------------------------------------------------------------- the sampler


def test_sampler_density_sums_to_one_over_every_sequence_of_length_two(tiny_lm_dir):
    """Σ over all (x1, x2) of λ(x1) λ(x2 | x1) = 1 for a top-k sampler with a temperature
    schedule: every first token, and every second token after each possible first one."""
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    sampler = Sampler(top_k=4, temperature=(2.0, 0.5))
    vocab = len(lm.tokenizer)
    first = score_token_ids(lm, [[t] for t in range(vocab)], sampler=sampler)
    first_logp = np.array([s.total_logprob for s in first])
    possible = np.flatnonzero(np.isfinite(first_logp))
    assert len(possible) == 4
    pairs = [[a, b] for a in possible for b in range(vocab)]
    second = np.array([s.logprobs[1] for s in score_token_ids(lm, pairs, sampler=sampler)])
    total = np.exp(first_logp[possible].repeat(vocab) + second).sum()
    assert total == pytest.approx(1.0, abs=1e-4)


def test_generated_samples_follow_the_sampler(tiny_lm_dir):
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    sampler = Sampler(top_k=3)
    prompts = [[], [], [5, 6], [5, 6], []]
    gen = generate(lm, sampler, prompts, max_new_tokens=10, batch_size=2, seed=1)
    assert not gen.stopped_early and len(gen.samples) == 5 and gen.new_tokens > 0
    assert all(list(s[:2]) == [5, 6] for s in gen.samples[2:4])
    scores = score_token_ids(lm, gen.samples, sampler=sampler)
    generated = [s.logprobs[len(p):] for s, p in zip(scores, prompts)]   # prompts are forced
    assert all(np.isfinite(lp).all() for lp in generated)   # never outside the top-k
    again = generate(lm, sampler, prompts, max_new_tokens=10, batch_size=2, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(gen.samples, again.samples))


def test_a_finished_sample_leaves_its_batch(tiny_lm_dir, monkeypatch):
    """Each forward pass feeds only the samples still going: the rows fed add up to the tokens
    generated (end-of-text included), not to the batch size times its longest sample."""
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    fed, forward = [], lm.model.forward

    def counting(*args, input_ids, **kwargs):
        fed.append(input_ids.shape[0])
        return forward(*args, input_ids=input_ids, **kwargs)

    monkeypatch.setattr(lm.model, "forward", counting)
    gen = generate(lm, Sampler(temperature=3.0), [[]] * 16, max_new_tokens=40, batch_size=16, seed=0)
    lengths = [len(s) for s in gen.samples]
    assert min(lengths) < max(lengths)          # some ended early, so the batch shrank
    assert sum(fed) == gen.new_tokens and len(fed) == min(max(lengths) + 1, 40)


# ---------------------------------------------------------------- the attack


def test_config_rejects_bad_settings():
    bad_settings = {"choose one of": dict(strategies=("top-n", "greedy")),
                    "at least one generation strategy": dict(strategies=()),
                    "prefix strategy needs a file": dict(strategies=("prefix",)),
                    "samples per strategy must be from 1": dict(n_samples=0),
                    "starting temperature must be from 1": dict(temperature_start=0.5),
                    "longest prefix": dict(prefix_min_tokens=6, prefix_max_tokens=5),
                    "choose a target model": dict(model=" ")}
    for message, bad in bad_settings.items():
        with pytest.raises(UserError, match=message):
            ex.ExtractionConfig(**{"model": "m"} | bad)
    config = ex.ExtractionConfig(model="m", strategies=("top-n", "temperature", "top-n"), reference=" ")
    assert config.strategies == ("top-n", "temperature") and config.reference is None


def test_cli_options_are_generated_with_the_known_flags():
    args = spec_parser(ex.SPEC, "extract").parse_args([
        "--model", "m", "--reference", "none", "--strategy", "top-n,prefix", "--prefixes", "p.txt",
        "--n", "186e3", "--min-span", "8", "--no-dedup"])
    config = build_config(ex.SPEC, args)
    assert (config.reference, config.strategies, config.n_samples, config.min_span_tokens,
            config.dedup) == (None, ("top-n", "prefix"), 186_000, 8, False)
    with pytest.raises(UserError, match="choose one of top-n, temperature, prefix"):
        build_config(ex.SPEC, spec_parser(ex.SPEC, "extract").parse_args(
            ["--model", "m", "--strategy", "greedy"]))


def test_models_with_different_tokenizers_are_refused(tiny_lm_dir):
    target, _, _ = ex.tiny_models()
    config = ex.ExtractionConfig(model=target, reference=str(tiny_lm_dir), n_samples=2, tokens=4,
                                 device="cpu")
    with pytest.raises(UserError, match="different tokenizers"):
        ex.run(config)


def test_tiny_demo_extraction_finds_the_planted_secret(tiny_demo):
    manifest = scenario.load_manifest(tiny_demo)
    config = ex.ExtractionConfig(
        model=str(scenario.model_dir("updated", tiny_demo)),
        reference=str(scenario.model_dir("base", tiny_demo)), strategies=("top-n",),
        n_samples=32, tokens=40, top_k=10, corpus=str(scenario.data_file("private_train", tiny_demo)),
        min_span_tokens=8, device="cpu", track=(manifest.secret.sentence, "never generated"))
    partials = []
    result = ex.run(config, progress=lambda f, m="", partial=None: partial and partials.append(partial))
    secret = manifest.secret.sentence
    assert "top-n/" in result.tracked[secret][0] and result.tracked["never generated"] == []
    by_id = {c.id: c for c in result.candidates}
    hits = [by_id[i] for ids in result.rankings["top-n"].values() for i in ids if secret in by_id[i].text]
    assert hits, "the secret is in no top-10"
    assert all(c.memorized and c.k_eidetic == manifest.secret.count for c in hits)
    assert hits[0].tokens and len(hits[0].token_diff) == len(hits[0].tokens)
    assert max(hits[0].token_diff) > 1.0   # the target is far more confident than demo:base
    assert result.precision["top-n"]["perplexity"] > 0
    assert partials and partials[-1]["rankings"]["top-n"] and partials[-1]["tracked"][secret]
    json.dumps(to_jsonable(result), allow_nan=False)


def test_prefix_strategy_starts_each_sample_with_a_document_prefix(tmp_path):
    target, reference, corpus = ex.tiny_models()
    config = ex.ExtractionConfig(model=target, reference=None, strategies=("prefix",), prefixes=corpus,
                                 n_samples=6, tokens=5, top_k=3, window=4, device="cpu")
    result = ex.run(config)
    assert result.metrics == ["perplexity", "zlib", "lowercase", "window"]
    lm = resolve_model(target)
    starts = lm.tokenizer(list(ex.TINY_TEXTS), add_special_tokens=False)["input_ids"]
    for c in result.candidates:
        assert 5 <= c.prompt_tokens <= 10
        assert any(c.text.startswith(lm.tokenizer.decode(s[: c.prompt_tokens])) for s in starts)
    assert all(c.token_diff is not None for c in result.candidates if c.id in result.rankings["prefix"]["zlib"])


def test_cancel_after_the_first_strategy_keeps_its_ranking():
    cancel = threading.Event()

    def progress(fraction, message="", partial=None):
        if message.startswith("temperature"):
            cancel.set()

    result = ex.run(ex.tiny_config(), progress=progress, cancel=cancel)
    assert result.stopped_early
    assert list(result.rankings) == ["top-n"] and result.generated == {"top-n": 8, "temperature": 0}


def test_a_cancel_during_scoring_stops_at_the_next_batch(monkeypatch):
    """Cancel pressed (as the page's button does) while the second strategy's samples are scored:
    no scoring batch runs after it, and the first strategy's ranking is kept."""
    from core import jobs
    from core.scoring import engine

    scoring, cancelled, batches_after_cancel, run_id = [], [], [], []
    real_score, real_forward = ex._score, engine._forward

    def score(config, strategy, *args):
        scoring.append(strategy)
        return real_score(config, strategy, *args)

    def forward(model, ids, mask):
        if cancelled:
            batches_after_cancel.append(ids.shape[0])
        elif scoring[-1:] == ["temperature"]:   # its first batch
            cancelled.append(jobs.cancel(run_id[0]))
        return real_forward(model, ids, mask)

    monkeypatch.setattr(ex, "_score", score)
    monkeypatch.setattr(engine, "_forward", forward)
    config = dataclasses.replace(ex.tiny_config(), n_samples=200, batch_size=100, seed=7)
    run_id.append(jobs.submit(ex.SPEC, config))
    stored = jobs.get_runner().wait(run_id[0], timeout=300)
    assert cancelled == [True] and batches_after_cancel == []   # before: the rest of 3 passes
    assert stored.status == "cancelled"
    result = jobs.load_result(stored)
    assert result.stopped_early and list(result.rankings) == ["top-n"]
    assert {c.strategy for c in result.candidates} == {"top-n"}


def test_cli_prints_the_ranked_candidates(capsys):
    target, reference, corpus = ex.tiny_models()
    code = main(["extract", "--model", target, "--reference", reference, "--strategy", "top-n",
                 "temperature", "--n", "4", "--tokens", "6", "--top-k", "3",
                 "--corpus", corpus, "--min-span", "3", "--device", "cpu", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    result = from_jsonable(ex.ExtractionResult, out)   # the one output shape: the result
    assert set(result.rankings) == {"top-n", "temperature"}
    rows = ranked_rows(result, "top-n", "zlib")
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1)) and rows[0]["text"]
    scores = [r["score"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    assert set(out["precision"]["temperature"]) == {"perplexity", "reference", "zlib", "lowercase", "window"}
    assert main(["extract", "--model", target, "--strategy", "prefix", "--json"]) == 2   # no prefix file
    assert "prefix strategy needs a file" in capsys.readouterr().err

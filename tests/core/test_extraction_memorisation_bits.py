"""Extraction's results in bits: each memorised span and tracked phrase carries p_z under the
run's own sampling, n and b, equal to what the ``inextractability`` command gives for the same
pair (top-n) and to ``extraction_probability`` under the decaying temperature; a run recorded
before these fields reads back."""

import dataclasses

import pytest

from core.attacks.extraction import spec as ex
from core.attacks.inextractability import spec as ix
from core.attacks.inextractability.probabilistic import extraction_probability
from core.models import resolve_model
from core.serialize import from_jsonable, to_jsonable


@pytest.fixture
def tiny_run():
    """The tiny extraction, every candidate holding a corpus token counted as memorised."""
    config = dataclasses.replace(ex.tiny_config(), min_span_tokens=1, track=("the cat",))
    return config, ex.run(config)


def test_p_z_and_b_of_each_pair_are_the_inextractability_commands(tiny_run):
    config, result = tiny_run
    spans = [e for e in result.extractability if e.candidate is not None]
    tracked = [e for e in result.extractability if e.candidate is None]
    assert spans and [e.suffix for e in tracked] == ["the cat", "the cat"]   # one per scheme
    assert {e.strategy for e in tracked} == {"top-n", "temperature"}
    by_id = {c.id: c for c in result.candidates}
    for e in spans:   # the span after its sample's text before it
        assert by_id[e.candidate].memorized and e.prefix + e.suffix in by_id[e.candidate].text
    top_n = [e for e in result.extractability if e.strategy == "top-n"]
    same = ix.run(ix.InextractabilityConfig(
        model=config.model, prefixes=tuple(e.prefix for e in top_n),
        suffixes=tuple(e.suffix for e in top_n), top_k=config.top_n, window=1,
        rank_threshold=config.rank_threshold, device="cpu")).pairs
    for mine, theirs in zip(top_n, same, strict=True):
        assert mine.log2_p == pytest.approx(theirs.log2_p, abs=1e-9)
        assert mine.b == pytest.approx(theirs.b, abs=1e-9)
        assert mine.samples_50 == theirs.samples_50 and mine.max_rank == theirs.max_rank
    decaying = [e for e in result.extractability if e.strategy == "temperature"]
    expected = extraction_probability(resolve_model(config.model, device="cpu"),
                                      [e.prefix for e in decaying], [e.suffix for e in decaying],
                                      config.sampler("temperature"))
    assert [e.log2_p for e in decaying] == pytest.approx([x.log2_p for x in expected], abs=1e-9)
    assert "top-k 40" in result.extractability_scheme
    assert "temperature 10 → 1 over the first 20 tokens" in result.extractability_scheme


def test_a_run_recorded_before_p_z_reads_back(tiny_run):
    _, result = tiny_run
    stored = to_jsonable(result)
    assert from_jsonable(ex.ExtractionResult, stored).extractability[0].b == pytest.approx(
        result.extractability[0].b)
    old = {k: v for k, v in stored.items() if k not in ("extractability", "extractability_scheme")}
    loaded = from_jsonable(ex.ExtractionResult, old)
    assert loaded.extractability == [] and loaded.extractability_scheme == ""

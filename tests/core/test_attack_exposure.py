"""Secret-sharer exposure (Carlini et al. 2019): the exact rank over an enumerated space, the
skew-normal extrapolation against scipy, input validation, and the CLI's help."""

import dataclasses
import itertools
import math
import threading

import numpy as np
import pytest
from scipy import stats

from core.__main__ import main
from core.attacks.membership import exposure as ex
from core.errors import UserError
from core.models import resolve_model
from core.scoring import score_texts


def test_exposure_is_the_exhaustive_rank_on_a_tiny_space():
    base = ex.tiny_config()
    config = dataclasses.replace(base, alphabet="01", secrets=("010110", "111111"), fillers=64)
    result = ex.run(config)
    assert result.enumerated and result.n_fillers == 64 and result.space_bits == 6
    space = ["".join(c) for c in itertools.product("01", repeat=6)]
    lps = {s: -score.total_logprob for s, score in zip(space, score_texts(
        resolve_model(config.model), [config.template.replace("{secret}", s) for s in space]))}
    for measured in result.secrets:
        mine = lps[measured.secret]
        others = [lp for s, lp in lps.items() if s != measured.secret]
        rank = 1 + sum(lp < mine for lp in others) + 0.5 * sum(lp == mine for lp in others)
        assert measured.method == "rank" and measured.rank == rank
        assert measured.log_perplexity == pytest.approx(mine)
        assert measured.exposure_bits == pytest.approx(math.log2(64) - math.log2(rank))
    assert sum(result.histogram_counts) == 64


def test_word_secrets_are_ranked_among_every_word_sequence_of_their_length():
    config = dataclasses.replace(ex.tiny_config(), template="My pin is {secret}.",
                                 alphabet="one two three", unit="word",
                                 secrets=("two  one",), fillers=10)
    assert config.canaries == ["two one"] and config.space_bits == pytest.approx(2 * math.log2(3))
    fillers, enumerated = ex.filler_secrets(config)
    assert enumerated and sorted(fillers) == sorted(f"{a} {b}" for a in ("one", "two", "three")
                                                    for b in ("one", "two", "three"))
    result = ex.run(config)
    lps = {f: -s.total_logprob for f, s in zip(fillers, score_texts(
        resolve_model(config.model), [f"My pin is {f}." for f in fillers]))}
    mine = lps["two one"]
    rank = 1 + sum(lp < mine for f, lp in lps.items() if f != "two one")
    assert result.secrets[0].rank == rank and result.secrets[0].text == "My pin is two one."
    with pytest.raises(UserError, match="outside it: 'four'"):
        dataclasses.replace(config, secrets=("two four",))


def test_the_dp_bound_for_the_secret_length_comes_from_the_bound_explorer():
    from core.bounds.summary import summarize

    config = dataclasses.replace(ex.tiny_config(), sigma=1.0, q=0.01, steps=1000)
    expected = summarize(sigma=1.0, q=0.01, steps=1000, bits=config.space_bits,
                         delta=1e-5).leakage_bits
    assert ex.dp_bound_bits(config) == pytest.approx(expected)
    assert 0 < expected < config.space_bits
    assert ex.dp_bound_bits(dataclasses.replace(config, sigma=0.0)) is None


def test_sampled_rank_scales_the_fraction_below_to_the_space():
    fillers = np.array([1.0, 2.0, 3.0, 3.0, 5.0])
    below, rank, bits = ex.rank_exposure(3.0, fillers, 10.0, enumerated=False)
    assert below == 3.0 and rank == pytest.approx(1 + 1023 * 3 / 5)
    assert bits == pytest.approx(10 - math.log2(rank))


def test_a_secret_below_every_filler_is_extrapolated_with_scipys_skew_normal():
    fillers = stats.skewnorm.rvs(4.0, loc=50.0, scale=3.0, size=2000, random_state=0)
    secret = fillers.min() - 1.0
    measured = ex.measure("4929", "card 4929", secret, fillers, 53.0, enumerated=False)
    shape, loc, scale = stats.skewnorm.fit(fillers)
    expected = -stats.skewnorm.logcdf(secret, shape, loc, scale) / math.log(2)
    assert measured.method == "skew-normal" and measured.rank is None
    assert math.log2(2000) < measured.exposure_bits < 53
    assert measured.exposure_bits == pytest.approx(expected, rel=1e-6)
    capped = ex.measure("4929", "card 4929", -1e6, fillers, 53.0, enumerated=False)
    assert capped.exposure_bits == 53.0


@pytest.mark.parametrize("changes, message", [
    ({"secrets": ("4a",)}, "alphabet"),
    ({"template": "no slot here"}, "exactly once"),
    ({"template": "{secret} and {secret}"}, "exactly once"),
    ({"secrets": ()}, "at least one"),
    ({"secrets": ("12", "123")}, "same length"),
    ({"fillers": 5}, "from 10 to 1,000,000"),
])
def test_bad_input_is_refused_with_a_clear_message(changes, message):
    with pytest.raises(UserError, match=message):
        ex.ExposureConfig(**{"model": "m", "secrets": ("12",)} | changes)


def test_cli_help_shows_json_and_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["exposure", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--json" in text and "--secret" in text
    assert "'0123456789'" in text and "default: 10000; from 10 to 1,000,000" in text


def test_a_cancel_between_filler_calls_keeps_the_fillers_scored(monkeypatch):
    monkeypatch.setattr(ex, "FILLER_CHUNK", 20)
    config = dataclasses.replace(ex.tiny_config(), fillers=50)   # 50 of the 100 2-digit secrets
    cancel = threading.Event()
    partials = []

    def progress(fraction, message="", partial=None):
        if partial is not None:
            partials.append(partial)
            cancel.set()

    result = ex.run(config, progress=progress, cancel=cancel)
    assert result.stopped_early and result.n_fillers == 20 and not result.enumerated
    assert len(partials) == 1 and partials[0]["n_fillers"] == 20


def test_the_runs_page_reopens_an_exposure_run():
    from core.jobs import Store, run_now
    from pagetest import page_app

    result = run_now(ex.SPEC, ex.tiny_config(), progress=lambda *a, **k: None)
    [run] = Store().runs("exposure")
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    table = at.get_by_key(f"run-{run.id}-secrets").dataframe[0].value
    assert list(table["secret"]) == ["42", "17"]
    assert list(table["method"]) == [s.method for s in result.secrets]
    assert any("|R| = 2^6.64" in c.value for c in at.caption)


def test_partial_results_are_the_ranks_so_far_at_most_once_per_interval(monkeypatch):
    from core import runtime

    monkeypatch.setattr(ex, "FILLER_CHUNK", 5)
    config = dataclasses.replace(ex.tiny_config(), fillers=50)   # 10 chunks, drawn: not enumerated
    ticks = iter(k * runtime.PARTIAL_EVERY_S / 5 for k in range(10))   # one tick per chunk
    monkeypatch.setattr(runtime, "clock", lambda: next(ticks))
    partials = []
    result = ex.run(config, progress=lambda f, m="", partial=None: partial and partials.append(partial))
    assert [p["n_fillers"] for p in partials] == [5, 30]   # due at the 1st and 6th tick only
    assert all(set(p) == {"n_fillers", "ranks"} for p in partials)   # no fit, no quantiles
    fillers, _ = ex.filler_secrets(config)
    lm = resolve_model(config.model)
    lps = np.array([-s.total_logprob for s in score_texts(lm, [f"My pin is {f}." for f in fillers])])
    for partial in partials:
        n = partial["n_fillers"]
        for measured in result.secrets:
            others = lps[:n][np.array(fillers[:n]) != measured.secret]
            expected = ex.sampled_rank(ex.fillers_below(measured.log_perplexity, others), n,
                                       config.space_bits)
            assert partial["ranks"][measured.secret] == pytest.approx(expected)
    assert result.n_fillers == 50 and result.filler_quantiles   # the final result is whole
